"""Threads against ranks for the triangular solve: commsolve's sync-free solve on one rank's
T threads against the same solve on T ranks of one thread (grid 1x1xT, algorithm 3d, and
the squarest 2D grid) and, with T >= 4, 2 ranks of T/2 threads (2x1x1: the message-driven
phases on threads; 1x1x2: sync-free); and SuperLU_DIST 8.1.2's pddrive (Debian's, built with
OpenMP; where installed) on one rank with T OpenMP threads against T ranks. Same matrix, same
machine, alternated run by run; medians of --runs runs, each run the median of its own
repeated solves.

Times: ``solve_s`` is the whole solve of one right-hand side as each code reports it (b
moved to the ranks that solve, L and U, x moved back: commsolve's ``solve_s``, pddrive's
"SOLVE time"), the quantity compared; ``phases_s`` (commsolve only) is L + inter-grid + U.
commsolve runs with ``--row-perm none`` to match pddrive's defaults (as
bench/sptrsv_vs_superlu.py). On this 2-core VM T = 2; on a 16-core machine pass --threads 16.

    python bench/sptrsv_threads.py [--problems poisson2d9:500,poisson3d:30] [--threads 2]
        [--runs 3] [--repeat 7] [--out bench/results/sptrsv_threads.json]
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

from superlu_peer import PDDRIVE, run, superlu_run  # noqa: E402

from commsolve import gallery, io  # noqa: E402


def ours(spec, nranks, grid, threads, repeat):
    text, _ = run(None, [sys.executable, "-m", "commsolve", "sptrsv", "--gen", spec, "-np", str(nranks), "--grid", grid,
                         "--threads", str(threads), "--repeat", str(repeat), "--row-perm", "none", "--json"])
    r = json.loads(text[text.index("{"):])
    assert r["threads"] == threads and r["backward_error"] <= 1e-14, r["backward_error"]
    return {"solve_s": r["solve_s"], "phases_s": r["l_solve_s"] + r["z_comm_s"] + r["u_solve_s"],
            "backward_error": r["backward_error"], "nnz_LU": r["nnz_LU"]}


def configurations(T):
    """(name, who, ranks, grid, threads per rank)."""
    hybrid = [(f"commsolve 2 ranks x {T // 2} threads (2x1x1, 2d)", "commsolve", 2, "2x1x1", T // 2),
              (f"commsolve 2 ranks x {T // 2} threads (1x1x2, 3d)", "commsolve", 2, "1x1x2", T // 2)] if T >= 4 else []
    return [("commsolve 1 rank x 1 thread", "commsolve", 1, "1x1x1", 1),
            (f"commsolve 1 rank x {T} threads", "commsolve", 1, "1x1x1", T),
            (f"commsolve {T} ranks (1x1x{T}, 3d)", "commsolve", T, f"1x1x{T}", 1),
            (f"commsolve {T} ranks (1x{T}, 2d)", "commsolve", T, f"1x{T}", 1), *hybrid,
            ("SuperLU_DIST 1 rank x 1 thread", "superlu", 1, (1, 1), 1),
            (f"SuperLU_DIST 1 rank x {T} threads", "superlu", 1, (1, 1), T),
            (f"SuperLU_DIST {T} ranks (1x{T})", "superlu", T, (1, T), 1)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", default="poisson2d9:500,poisson3d:30")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=7, help="commsolve solves per run (median)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "sptrsv_threads.json"))
    args = ap.parse_args()
    have_superlu = os.path.exists(PDDRIVE)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.problems.split(","):
            path = os.path.join(tmp, "a.mtx")
            io.mmwrite(path, gallery.from_spec(spec))
            configs = [c for c in configurations(args.threads) if have_superlu or c[1] != "superlu"]
            runs = {c[0]: [] for c in configs}
            for k in range(args.runs):
                for name, who, nranks, grid, threads in configs:
                    print(f"{spec} run {k + 1}: {name}", file=sys.stderr, flush=True)
                    runs[name].append(ours(spec, nranks, grid, threads, args.repeat) if who == "commsolve"
                                      else superlu_run(path, grid, threads=threads))
            rec = {"matrix": spec, "threads": args.threads, "configurations": {}}
            for name, *_ in configs:
                rs = runs[name]
                rec["configurations"][name] = {"solve_s": statistics.median(r["solve_s"] for r in rs),
                                               "runs_solve_s": [r["solve_s"] for r in rs]}
                if "phases_s" in rs[0]:
                    rec["configurations"][name]["phases_s"] = statistics.median(r["phases_s"] for r in rs)
            base = rec["configurations"]["commsolve 1 rank x 1 thread"]["solve_s"]
            for c in rec["configurations"].values():
                # (pddrive prints whole milliseconds: a tiny problem can read 0)
                c["speedup_vs_commsolve_1"] = base / c["solve_s"] if c["solve_s"] > 0 else None
            results.append(rec)
            print(json.dumps({"matrix": spec, **{k: round(v["solve_s"] * 1e3, 3)
                                                 for k, v in rec["configurations"].items()}}), flush=True)
    doc = {"benchmark": "sptrsv_threads", "machine": machine(), "superlu_dist": "8.1.2 (Debian), pddrive, OpenMP build"
           if have_superlu else None, "results": results}
    write_results(args.out, doc)


if __name__ == "__main__":
    main()
