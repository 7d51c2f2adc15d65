"""The communication of whole AMG hierarchies at virtual scale (thesis Chapter 7): per level,
the busiest rank's inter-node messages of one SpMV and of the Galerkin product for each
strategy, and what ``auto`` picks, at 4,096 ranks with 16 per node. The hierarchy is set up
once in this process (it does not depend on the number of ranks); every level is then
distributed over the virtual ranks as a run would distribute it.

    python bench/amg_virtual.py [--procs 4096] [--ppn 16] [--out bench/results/amg_virtual.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from spmv_local import machine  # noqa: E402

from commsolve.amg.analysis import analyze_amg, format_amg_analysis  # noqa: E402
from commsolve.runs.plots import plot_amg_levels  # noqa: E402

CASES = (("poisson3d:64", "classical"), ("poisson3d:64", "sa"), ("poisson3d27:40", "classical"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--procs", type=int, default=4096)
    ap.add_argument("--ppn", type=int, default=16)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "amg_virtual.json"))
    args = ap.parse_args()
    results = []
    for gen, method in CASES:
        t0 = time.perf_counter()
        r = analyze_amg(args.procs, args.ppn, gen=gen, method=method)
        r["method"] = method
        r["seconds"] = time.perf_counter() - t0
        inter = [(lv["spmv"]["standard"]["msgs_sent_inter"]["max"], lv["spmv"]["node-aware"]["msgs_sent_inter"]["max"])
                 for lv in r["levels"]]
        r["standard_over_node_aware"] = [s / max(n, 1) for s, n in inter]
        results.append(r)
        print(f"{gen} ({method}), {r['seconds']:.1f} s\n{format_amg_analysis(r)}\n", flush=True)
        plot_amg_levels(r, args.out.replace(".json", f"_{gen.split(':')[0]}_{method}.png"))
    with open(args.out, "w") as f:
        json.dump({"benchmark": "amg_virtual", "machine": machine(), "procs": args.procs, "ppn": args.ppn,
                   "results": results}, f, indent=2)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
