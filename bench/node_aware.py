"""Node-aware halo exchange: what it saves at scale (virtual world) and what it costs here.

1. Virtual world, ppn 16: the ratio standard / node-aware of the busiest rank's inter-node
   messages and bytes, for the random matrix of the thesis (1,000 rows per rank, 100
   nonzeros per row, weak scaling to 1,024 ranks) and a 3D 27-point Poisson problem
   (strong scaling to 4,096 ranks).
2. Real MPI here: SpMV time with every strategy under mpiexec -n 4 with 2 ranks per
   virtual node, strategies interleaved in one job, medians of many repeats (2 cores,
   oversubscribed: noisy, read as relative).

    python bench/node_aware.py [--quick] [--out bench/results/node_aware.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import commsolve
from commsolve.runs.analysis import analyze
from commsolve.launch import run_mpi

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from spmv_local import machine  # noqa: E402

STRATEGIES = ["standard", "node-aware", "node-aware-2step"]
VIRTUAL = [("random:rows_per_rank=1000,nnz_per_row=100", p) for p in (64, 256, 1024)] + [
    ("poisson3d27:100", p) for p in (256, 1024, 4096)]
VIRTUAL_QUICK = [("random:rows_per_rank=1000,nnz_per_row=100", 64), ("poisson3d27:40", 256)]
MPI_CASES = ["random:rows=40000,nnz_per_row=30", "poisson3d27:40"]


def ratios(result):
    s, out = result["strategies"], {}
    for other in ("node-aware", "node-aware-2step"):
        out[other] = {f: s["standard"]["max"][f] / max(s[other]["max"][f], 1)
                      for f in ("msgs_sent_inter", "bytes_sent_inter")}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=300)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "node_aware.json"))
    args = ap.parse_args()

    virtual = []
    for spec, procs in VIRTUAL_QUICK if args.quick else VIRTUAL:
        t = time.perf_counter()
        r = analyze(procs, 16, STRATEGIES, gen=spec)
        r["ratio_standard_over"] = ratios(r)
        r["wall_s"] = time.perf_counter() - t
        virtual.append(r)
        na = r["ratio_standard_over"]["node-aware"]
        print(f"{spec:<44} P={procs:<5} max inter msgs standard/node-aware {na['msgs_sent_inter']:7.1f}  "
              f"bytes {na['bytes_sent_inter']:5.2f}  ({r['wall_s']:.0f} s)", file=sys.stderr)

    reps = 30 if args.quick else args.repeats
    proc = run_mpi(4, [os.path.join(HERE, "node_aware_mpi.py"), str(reps), *MPI_CASES], timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(f"MPI timing failed:\n{proc.stderr}")
    timings = json.loads(proc.stdout)
    for case in timings:
        print(f"{case['matrix']:<44} np4 ppn2 median SpMV "
              + "  ".join(f"{s} {case['median_ms'][s]:.3f} ms" for s in STRATEGIES), file=sys.stderr)

    out = {"benchmark": "node_aware", "date": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": machine(),
           "commsolve": commsolve.__version__, "virtual_ppn": 16, "virtual": virtual, "mpi_np4_ppn2": timings}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=2)
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
