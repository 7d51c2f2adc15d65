"""MGCG's coarse levels at the seed's scale (Nakajima: 4,096 nodes x 16 ranks, 64^3 cells per
rank, flat MPI) with and without coarse-grid aggregation, counted and priced in one process
(:func:`commsolve.mg.analysis.analyze_mgcg`) with two bundled profiles: intrepid-bgp (a 3D
torus, as the seed's FX10 is a torus) and bluewaters, each with and without the profiles'
network-contention term (which, under rank-order placement, dominates the fine levels' prices
at this scale: the message counts are the figures to read there). Besides the seed's fixed
modes, ``auto``: the placement of the coarse levels the model itself finds cheapest (none, CGA
or hCGA at any switch levels). Writes the JSON and one PNG per profile and variant.

    python bench/mgcg_analysis.py [--procs 65536] [--ppn 16] [--out bench/results/mgcg_analysis.json]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from spmv_local import machine, write_results  # noqa: E402

from commsolve.mg.analysis import analyze_mgcg, format_mgcg_analysis  # noqa: E402
from commsolve.runs.plots import plot_mgcg_analysis  # noqa: E402

PROFILES = ("intrepid-bgp", "bluewaters")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--procs", type=int, default=65536)
    ap.add_argument("--ppn", type=int, default=16)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "mgcg_analysis.json"))
    args = ap.parse_args()
    doc = {"benchmark": "mgcg_analysis", "date": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": machine(),
           "results": {}}
    for profile in PROFILES:
        for contention in (True, False):
            r = analyze_mgcg(args.procs, args.ppn, profile=profile, contention=contention,
                             modes=("none", "flat", "hierarchical", "auto"))
            name = profile if contention else f"{profile}-no-contention"
            doc["results"][name] = r
            print(format_mgcg_analysis(r), file=sys.stderr)
            plot_mgcg_analysis(r, args.out.replace(".json", f"_{name}.png"))
    write_results(args.out, doc)


if __name__ == "__main__":
    main()
