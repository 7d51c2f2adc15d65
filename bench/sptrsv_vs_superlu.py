"""The 2D triangular solve against SuperLU_DIST 8.1.2 (Debian's pddrive), same matrix, same
process count and grid.

For each problem and grid: ``commsolve sptrsv --json`` (its solve time is the run of median
total of ``--repeat`` solves, slowest rank: b distributed by rows moved to the diagonal
owners, the L- and U-solves, x moved back — the same work as pdgstrs, which also
redistributes B and X; iterative refinement is timed apart on both sides; L + U alone is
reported too) and pddrive run ``--runs`` times (its "SOLVE time": pdgstrs, one right-hand
side; median over runs). Both run with one thread per rank (OPENBLAS_NUM_THREADS=1,
OMP_NUM_THREADS=1) and Open MPI's default binding of one rank per core (at 1 or 2 ranks). Also nnz(L+U) of both, and the solve's effective
bandwidth, 8 bytes per stored entry of L and U over the solve time, against a STREAM triad
measured in the same run (before and after); and the time to the first solve (setup: for
pddrive COLPERM + SYMBFACT + DISTRIBUTE + FACTOR, for commsolve ordering + numeric +
distribution). pddrive's options are its defaults here:
METIS on A'+A, no row permutation (MC64 is stripped from the Debian build), inverted
diagonal blocks, iterative refinement (timed apart, not in SOLVE). commsolve runs with
``--row-perm none`` to match (equilibration on, as pddrive's).

    python bench/sptrsv_vs_superlu.py [--sizes 1000,500] [--grids 1x1,1x2,2x1] [--runs 3]
                                      [--out bench/results/sptrsv_vs_superlu.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from spmv_local import machine, triad, write_results  # noqa: E402

from superlu_peer import PDDRIVE, run, superlu  # noqa: E402

from commsolve import gallery, io  # noqa: E402


def ours(spec, px, py, repeat):
    text, _ = run(None, [sys.executable, "-m", "commsolve", "sptrsv", "--gen", spec, "-np", str(px * py), "--grid",
                         f"{px}x{py}", "--tree", "binary", "--repeat", str(repeat), "--row-perm", "none", "--json"])
    r = json.loads(text[text.index("{"):])
    return {"solve_s": r["solve_s"], "l_plus_u_s": r["l_solve_s"] + r["u_solve_s"],
            "redistribute_s": r["redistribute_s"], "refine_s": r["refine_s"],
            "l_solve_s": r["l_solve_s"], "u_solve_s": r["u_solve_s"], "factor_s": r["factor_s"],
            "setup_s": r["factor_s"]["total"],
            "nnz_LU": r["nnz_LU"], "rel_residual": r["rel_residual"], "backward_error": r["backward_error"],
            "factor_bytes": r["factor_bytes"],
            "stats_recorded_equal_planned": r["stats_recorded_equal_planned"], "comm": r["comm"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,500", help="poisson2d9 grid sizes N (N^2 unknowns)")
    ap.add_argument("--grids", default="1x1,1x2,2x1")
    ap.add_argument("--runs", type=int, default=3, help="pddrive runs per grid (median)")
    ap.add_argument("--repeat", type=int, default=7, help="commsolve solves per grid (median)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "sptrsv_vs_superlu.json"))
    args = ap.parse_args()
    if not os.path.exists(PDDRIVE):
        sys.exit(f"{PDDRIVE} not found: apt-get install libsuperlu-dist-dev")
    triad_before = triad()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            spec = f"poisson2d9:{n}"
            path = os.path.join(tmp, f"p9_{n}.mtx")
            io.mmwrite(path, gallery.from_spec(spec))
            for grid in args.grids.split(","):
                px, py = (int(v) for v in grid.split("x"))
                print(f"{spec} grid {grid}: commsolve", file=sys.stderr, flush=True)
                mine = ours(spec, px, py, args.repeat)
                print(f"{spec} grid {grid}: SuperLU_DIST", file=sys.stderr, flush=True)
                theirs = superlu(path, (px, py), args.runs)
                for r in (mine, theirs):
                    r["bandwidth_gbs"] = 8 * r["nnz_LU"] / r["solve_s"] / 1e9
                rec = {"matrix": spec, "grid": grid, "nranks": px * py, "commsolve": mine, "superlu_dist": theirs,
                       "solve_time_ratio": mine["solve_s"] / theirs["solve_s"],
                       "setup_time_ratio": mine["setup_s"] / theirs["setup_s"],
                       "nnz_ratio": mine["nnz_LU"] / theirs["nnz_LU"]}
                results.append(rec)
                print(json.dumps({k: rec[k] for k in ("matrix", "grid", "solve_time_ratio", "nnz_ratio", "setup_time_ratio")}),
                      flush=True)
    triad_gbs = statistics.median(triad_before + triad()) / 1e9
    for rec in results:
        for who in ("commsolve", "superlu_dist"):
            rec[who]["of_triad"] = rec[who]["bandwidth_gbs"] / triad_gbs
    doc = {"benchmark": "sptrsv_vs_superlu", "machine": machine(), "stream_triad_gbs": triad_gbs,
           "superlu_dist": "8.1.2 (Debian libsuperlu-dist-dev), pddrive defaults", "results": results}
    write_results(args.out, doc)


if __name__ == "__main__":
    main()
