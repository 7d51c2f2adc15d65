"""The LU factorization against SuperLU_DIST (Debian's 8.1.2, or 9.2.1 built from
../shared/peers with ``--peer 9.2.1``; pddrive and pddrive3d), same matrix, same process
count and grid, the same row permutation on both sides (``--row-perm``).

Per matrix and grid, runs alternate (commsolve, SuperLU_DIST, commsolve, ...) ``--runs``
times; medians are reported. commsolve: ``commsolve sptrsv --json --repeat 1 --row-perm
ROW_PERM --ordering ORDERING`` (equilibration on, as pddrive's; pddrive gets ``-p 1`` or
``-p 0`` with 9.2.1, Debian's 8.1.2 is built without MC64).
The matrix is a ParCSR (built distributed by rows), factored on the grids. Its phases:
``ordering`` (static pivoting, nested dissection, symbolic, the message plan: with ``tree``
from rows gathered on rank 0; with ``ptscotch``/``ptscotch-metis`` by every rank from its
own rows, A gathered only for MC64), ``redistribute`` (A's entries from their row owners to the ranks that factor
their blocks, added in there), ``allocate`` (the factors' memory obtained and touched),
``numeric`` (every rank of every grid factoring its blocks, the panel broadcasts inside the
grids and the inter-grid messages; the diagonal blocks' inverses the solve applies are
computed here) and ``distribute`` (the solve's schedules and the moves of b and x: no factor
moves any more, each rank already holds its blocks). SuperLU_DIST's: EQUIL and ROWPERM
(where printed: 9.2.1), COLPERM, SYMBFACT, DISTRIBUTE (which allocates L and U and fills
them with A) and FACTOR; commsolve's row permutation follows the peer's (MC64 with 9.2.1,
none with Debian's 8.1.2, which is built without it). Compared: numeric vs
FACTOR, and the setup to the first solve (the sums). Memory: the peak resident set of the
largest process of the run (from wait4), both sides with their launcher, matrix input and
everything else a user's run holds; and commsolve's factor bytes per rank (max, mean).

With ``--orderings tree,ptscotch`` each of commsolve's orderings is run in the alternation
(``tree``: METIS separators on rank 0, each leaf ordered by METIS on its own rank, the
bench's default; ``ptscotch``: PT-Scotch on the distributed matrix; ``ptscotch-metis``: its
separators with METIS leaves); each one's setup
is compared with SuperLU_DIST's, phase by phase (its COLPERM is serial METIS on A^T + A, the
pddrive default).

    python bench/factor_vs_superlu.py [--matrices poisson2d9:1000,convdiff2d:1000]
                                      [--grids 1x1,1x2,2x1,1x1x2] [--runs 3]
                                      [--orderings tree,ptscotch] [--peer 8.1.2|9.2.1]
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
from superlu_peer import PDDRIVE, PDDRIVE3D, SETUP, run, summarize, superlu9, superlu_run  # noqa: E402

from commsolve import gallery, io  # noqa: E402

PHASES = ("ordering", "redistribute", "allocate", "numeric", "distribute", "total")


def ours_run(spec, grid, ordering="tree", row_perm="none"):
    argv = [sys.executable, "-m", "commsolve", "sptrsv", "--gen", spec, "-np", str(_ranks(grid)), "--grid",
            "x".join(map(str, grid)), "--repeat", "1", "--row-perm", row_perm, "--ordering", ordering, "--json",
            *(["--oversubscribe"] if _ranks(grid) > (os.cpu_count() or 1) else [])]
    text, rss = run(None, argv)
    r = json.loads(text[text.index("{"):])
    return {"factor_s": r["factor_s"], "ordering_parts_s": r["ordering_parts_s"], "nnz_LU": r["nnz_LU"],
            "ordering_used": r["ordering"],
            "peak_rss_bytes": rss,
            "memory_per_rank": r["memory_per_rank"], "backward_error": r["backward_error"],
            "rel_residual": r["rel_residual"]}


def _ranks(grid):
    out = 1
    for g in grid:
        out *= g
    return out


def ours_summary(runs):
    return {"runs": runs, "factor_s": {k: statistics.median(r["factor_s"][k] for r in runs) for k in PHASES},
            "ordering_parts_s": {k: statistics.median(r["ordering_parts_s"][k] for r in runs)
                                 for k in runs[0]["ordering_parts_s"]},
            "peak_rss_bytes": statistics.median(r["peak_rss_bytes"] for r in runs), "nnz_LU": runs[0]["nnz_LU"],
            "ordering_used": runs[0]["ordering_used"],
            "memory_per_rank": runs[0]["memory_per_rank"],
            "backward_error": max(r["backward_error"] for r in runs)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--matrices", default="poisson2d9:1000,convdiff2d:1000,poisson3d:60")
    ap.add_argument("--grids", default="1x1,1x2,2x1,1x1x2", help="PxQ (pddrive) or PxQxZ (pddrive3d)")
    ap.add_argument("--runs", type=int, default=3, help="runs per side (median)")
    ap.add_argument("--orderings", default="tree", help="commsolve's orderings to run, comma-separated")
    ap.add_argument("--peer", choices=("8.1.2", "9.2.1"), default="8.1.2",
                    help="SuperLU_DIST: Debian's 8.1.2 or 9.2.1 built by ../shared/peers/build-superlu-dist.sh")
    ap.add_argument("--row-perm", choices=("mc64", "none"), default=None,
                    help="both sides' row permutation (default: mc64 with 9.2.1, none with Debian's 8.1.2, which "
                         "is built without MC64); with none commsolve's parallel orderings gather nothing")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "factor_vs_superlu.json"))
    args = ap.parse_args()
    if args.peer == "9.2.1":
        folder = superlu9()
        drivers = (os.path.join(folder, "pddrive"), os.path.join(folder, "pddrive3d"))
    else:
        drivers = (PDDRIVE, PDDRIVE3D)
    if not os.path.exists(drivers[0]):
        sys.exit(f"{drivers[0]} not found: apt-get install libsuperlu-dist-dev")
    orderings = args.orderings.split(",")
    row_perm = args.row_perm or ("mc64" if args.peer == "9.2.1" else "none")
    if row_perm == "mc64" and args.peer != "9.2.1":
        sys.exit("Debian's SuperLU_DIST 8.1.2 is built without MC64: --row-perm none, or --peer 9.2.1")
    # pddrive's -p: 1 LargeDiag_MC64 (9.2.1's default), 0 NOROWPERM (8.1.2 runs none either way)
    peer_options = ("-p", "1" if row_perm == "mc64" else "0") if args.peer == "9.2.1" else ()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.matrices.split(","):
            path = os.path.join(tmp, "matrix.mtx")
            A = gallery.from_spec(spec)
            io.mmwrite(path, A)
            for g in args.grids.split(","):
                grid = tuple(int(v) for v in g.split("x"))
                driver = drivers[1] if len(grid) == 3 else drivers[0]
                mine, theirs = {o: [] for o in orderings}, []
                for k in range(args.runs):
                    print(f"{spec} grid {g}: run {k + 1}/{args.runs}", file=sys.stderr, flush=True)
                    for o in orderings:
                        mine[o].append(ours_run(spec, grid, o, row_perm))
                    theirs.append(superlu_run(path, grid, driver, options=peer_options))
                t = summarize(theirs)
                t["phases_s"] = {k: statistics.median(r[k] for r in theirs) for k in SETUP}
                for o in orderings:
                    m = ours_summary(mine[o])
                    rec = {"matrix": spec, "rows": int(A.shape[0]), "nnz": int(A.nnz), "grid": g,
                           "nranks": _ranks(grid), "oversubscribed": _ranks(grid) > (os.cpu_count() or 1),
                           "ordering": o, "row_perm": row_perm, "superlu_driver": os.path.basename(driver),
                           "commsolve": m,
                           "superlu_dist": t,
                           "numeric_over_factor": m["factor_s"]["numeric"] / t["factor_s"],
                           "setup_ratio": m["factor_s"]["total"] / t["setup_s"],
                           "ordering_over_colperm": m["factor_s"]["ordering"] / t["phases_s"]["colperm_s"],
                           "peak_rss_ratio": m["peak_rss_bytes"] / t["peak_rss_bytes"],
                           "nnz_ratio": None if t["nnz_LU"] is None else m["nnz_LU"] / t["nnz_LU"]}
                    results.append(rec)
                    print(json.dumps({"used": m["ordering_used"], **{
                        k: rec[k] for k in ("matrix", "grid", "ordering", "numeric_over_factor", "setup_ratio",
                                            "ordering_over_colperm", "peak_rss_ratio", "nnz_ratio")}}), flush=True)
    doc = {"benchmark": "factor_vs_superlu", "machine": machine(),
           "superlu_dist": (f"{args.peer} ("
                            + ("Debian libsuperlu-dist-dev" if args.peer == "8.1.2" else "built from ../shared/peers")
                            + "), "
                            "pddrive/pddrive3d defaults (COLPERM: serial METIS on A^T + A)"),
           "note": "both codes factor on every rank of every grid; commsolve's numeric phase includes the "
                   "inverted diagonal blocks its solve applies",
           "results": results}
    write_results(args.out, doc)


if __name__ == "__main__":
    main()
