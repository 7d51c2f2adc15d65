"""The LU factorization against SuperLU_DIST 8.1.2 (Debian's pddrive and pddrive3d), same
matrix, same process count and grid.

Per matrix and grid, runs alternate (commsolve, SuperLU_DIST, commsolve, ...) ``--runs``
times; medians are reported. commsolve: ``commsolve sptrsv --json --repeat 1 --row-perm
none`` (pddrive's MC64 is stripped from the Debian build; equilibration on, as pddrive's).
The matrix is a ParCSR (built distributed by rows), factored on the grids. Its phases:
``ordering`` (rows gathered on rank 0, equilibration, nested dissection, symbolic, the
message plan), ``redistribute`` (A's entries from their row owners to the ranks that factor
their blocks, added in there), ``allocate`` (the factors' memory obtained and touched),
``numeric`` (every rank of every grid factoring its blocks, the panel broadcasts inside the
grids and the inter-grid messages; the diagonal blocks' inverses the solve applies are
computed here) and ``distribute`` (the solve's schedules and the moves of b and x: no factor
moves any more, each rank already holds its blocks). SuperLU_DIST's: COLPERM, SYMBFACT,
DISTRIBUTE (which allocates L and U and fills them with A) and FACTOR. Compared: numeric vs
FACTOR, and the setup to the first solve (the sums). Memory: the peak resident set of the
largest process of the run (from wait4), both sides with their launcher, matrix input and
everything else a user's run holds; and commsolve's factor bytes per rank (max, mean).

    python bench/factor_vs_superlu.py [--matrices poisson2d9:1000,convdiff2d:1000]
                                      [--grids 1x1,1x2,2x1,1x1x2] [--runs 3]
                                      [--out bench/results/factor_vs_superlu.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from spmv_local import machine, write_results  # noqa: E402
from superlu_peer import PDDRIVE, PDDRIVE3D, run, summarize, superlu_run  # noqa: E402

from commsolve import gallery, io  # noqa: E402

PHASES = ("ordering", "redistribute", "allocate", "numeric", "distribute", "total")


def ours_run(spec, grid):
    argv = [sys.executable, "-m", "commsolve", "sptrsv", "--gen", spec, "-np", str(_ranks(grid)), "--grid",
            "x".join(map(str, grid)), "--repeat", "1", "--row-perm", "none", "--json"]
    text, rss = run(None, argv)
    r = json.loads(text[text.index("{"):])
    return {"factor_s": r["factor_s"], "nnz_LU": r["nnz_LU"], "peak_rss_bytes": rss,
            "memory_per_rank": r["memory_per_rank"], "backward_error": r["backward_error"],
            "rel_residual": r["rel_residual"]}


def _ranks(grid):
    out = 1
    for g in grid:
        out *= g
    return out


def ours_summary(runs):
    return {"runs": runs, "factor_s": {k: statistics.median(r["factor_s"][k] for r in runs) for k in PHASES},
            "peak_rss_bytes": statistics.median(r["peak_rss_bytes"] for r in runs), "nnz_LU": runs[0]["nnz_LU"],
            "memory_per_rank": runs[0]["memory_per_rank"],
            "backward_error": max(r["backward_error"] for r in runs)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--matrices", default="poisson2d9:1000,convdiff2d:1000,poisson3d:60")
    ap.add_argument("--grids", default="1x1,1x2,2x1,1x1x2", help="PxQ (pddrive) or PxQxZ (pddrive3d)")
    ap.add_argument("--runs", type=int, default=3, help="runs per side (median)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "factor_vs_superlu.json"))
    args = ap.parse_args()
    if not os.path.exists(PDDRIVE):
        sys.exit(f"{PDDRIVE} not found: apt-get install libsuperlu-dist-dev")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.matrices.split(","):
            path = os.path.join(tmp, "matrix.mtx")
            A = gallery.from_spec(spec)
            io.mmwrite(path, A)
            for g in args.grids.split(","):
                grid = tuple(int(v) for v in g.split("x"))
                driver = PDDRIVE3D if len(grid) == 3 else PDDRIVE
                mine, theirs = [], []
                for k in range(args.runs):
                    print(f"{spec} grid {g}: run {k + 1}/{args.runs}", file=sys.stderr, flush=True)
                    mine.append(ours_run(spec, grid))
                    theirs.append(superlu_run(path, grid, driver))
                m, t = ours_summary(mine), summarize(theirs)
                rec = {"matrix": spec, "rows": int(A.shape[0]), "nnz": int(A.nnz), "grid": g,
                       "nranks": _ranks(grid), "superlu_driver": os.path.basename(driver), "commsolve": m,
                       "superlu_dist": t,
                       "numeric_over_factor": m["factor_s"]["numeric"] / t["factor_s"],
                       "setup_ratio": m["factor_s"]["total"] / t["setup_s"],
                       "peak_rss_ratio": m["peak_rss_bytes"] / t["peak_rss_bytes"],
                       "nnz_ratio": m["nnz_LU"] / t["nnz_LU"]}
                results.append(rec)
                print(json.dumps({k: rec[k] for k in ("matrix", "grid", "numeric_over_factor", "setup_ratio",
                                                      "peak_rss_ratio", "nnz_ratio")}), flush=True)
    doc = {"benchmark": "factor_vs_superlu", "machine": machine(),
           "superlu_dist": "8.1.2 (Debian libsuperlu-dist-dev), pddrive/pddrive3d defaults",
           "note": "both codes factor on every rank of every grid; commsolve's numeric phase includes the "
                   "inverted diagonal blocks its solve applies",
           "results": results}
    write_results(args.out, doc)


if __name__ == "__main__":
    main()
