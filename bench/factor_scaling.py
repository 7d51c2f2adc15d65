"""Strong scaling of the distributed factorization and the triangular solves on one machine
with many cores (the device machine lent to some sessions: 16 cores), 1 to 16 ranks, one
thread per rank.

Per matrix and grid, one run of ``commsolve sptrsv --gen SPEC -np P --grid G --repeat R
--row-perm none --json``: the factorization's phases (``numeric`` is every rank factoring
its blocks with the panel broadcasts and the inter-grid steps; ``ordering`` is serial on
rank 0, as SuperLU_DIST's default), the factor memory per rank (max, mean) against the
whole factor's, the median solve, the backward error, and whether every rank's recorded
messages equal its plan. Speedups are against the 1x1 run of the same matrix in the same
invocation. Grids: the squarest 2D grid per P and, for 3D, Px x Py x Pz with Pz = 2 and 4.

    python bench/factor_scaling.py [--matrices poisson2d9:1000,poisson3d:60]
                                   [--grids 1x1,1x2,2x2,2x4,4x4,1x1x2,2x2x2,2x2x4] [--repeat 5]
                                   [--out bench/results/factor_scaling.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from spmv_local import machine, write_results  # noqa: E402
from superlu_peer import run  # noqa: E402


def one(spec, grid, repeat):
    nranks = 1
    for g in grid.split("x"):
        nranks *= int(g)
    argv = [sys.executable, "-m", "commsolve", "sptrsv", "--gen", spec, "-np", str(nranks), "--grid", grid,
            "--repeat", str(repeat), "--row-perm", "none", "--json"]
    text, rss = run(None, argv)
    r = json.loads(text[text.index("{"):])
    return {"matrix": spec, "grid": grid, "nranks": nranks, "algorithm": r["algorithm"], "factor_s": r["factor_s"],
            "nnz_LU": r["nnz_LU"], "memory_per_rank": r["memory_per_rank"], "solve_s": r["solve_s"],
            "backward_error": r["backward_error"], "factor_recorded_equal_planned":
                r["factor_stats_recorded_equal_planned"], "solve_recorded_equal_planned":
                r["stats_recorded_equal_planned"], "peak_rss_bytes_of_largest_process": rss}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--matrices", default="poisson2d9:1000,poisson3d:60")
    ap.add_argument("--grids", default="1x1,1x2,2x2,2x4,4x4,1x1x2,2x2x2,2x2x4")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "factor_scaling.json"))
    args = ap.parse_args()
    results = []
    for spec in args.matrices.split(","):
        base = None
        for grid in args.grids.split(","):
            print(f"{spec} {grid}", file=sys.stderr, flush=True)
            rec = one(spec, grid, args.repeat)
            if grid == "1x1":
                base = rec
            if base is not None:
                rec["numeric_speedup"] = base["factor_s"]["numeric"] / rec["factor_s"]["numeric"]
                rec["setup_speedup"] = base["factor_s"]["total"] / rec["factor_s"]["total"]
                rec["solve_speedup"] = base["solve_s"] / rec["solve_s"]
            rec["factor_bytes_max_over_whole"] = rec["memory_per_rank"]["factor_bytes"]["max"] / (8 * rec["nnz_LU"])
            results.append(rec)
            print(json.dumps({k: rec.get(k) for k in ("matrix", "grid", "numeric_speedup", "solve_speedup",
                                                      "factor_bytes_max_over_whole")}), flush=True)
    doc = {"benchmark": "factor_scaling", "machine": dict(machine(), usable_cores=len(os.sched_getaffinity(0))),
           "results": results}
    write_results(args.out, doc)


if __name__ == "__main__":
    main()
