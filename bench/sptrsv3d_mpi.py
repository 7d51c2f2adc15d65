"""MPI part of bench/sptrsv3d.py: on the ranks it is started with, factor one matrix once
per layout and time every solve algorithm on it.

    mpiexec -n P python -m mpi4py bench/sptrsv3d_mpi.py SPEC REPEAT NRHS LAYOUT [LAYOUT ...]

LAYOUT is PxQxR; on each, the algorithms that fit (2d when R = 1; 3d-baseline and 3d, each
with packed and per-supernode inter-grid messages, otherwise) run REPEAT solves with NRHS
right-hand sides (distributed by rows, contiguous blocks; no iterative refinement, the
backward error measured). Rank 0 prints one JSON line per run: the parts of the run of
median total (slowest rank), the largest per-rank message counts
inside the grids (XY) and between them (Z), whether every rank recorded what it planned,
and the relative residual.
"""

import json
import sys

import numpy as np
from mpi4py import MPI

from commsolve import direct, gallery
from commsolve.direct import XY_STEPS, Z_STEPS

comm = MPI.COMM_WORLD
spec, repeat, nrhs, layouts = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
A = gallery.from_spec(spec) if comm.rank == 0 else None
n = comm.bcast(None if A is None else A.shape[0])
B = np.sin(0.37 * np.arange(n * nrhs)).reshape(n, nrhs) + 0.5

for layout in layouts:
    grid = direct.parse_grid(layout, comm.size)
    variants = [("2d", "packed")] if grid[2] == 1 else [(a, p) for a in ("3d-baseline", "3d")
                                                       for p in ("packed", "per-supernode")]
    solver = direct.factor(A, comm, grid=grid, algorithm=variants[0][0])
    b = B[solver.distribution.owned(comm.rank)]
    for algorithm, allreduce in variants:
        solver.set_options(algorithm=algorithm, allreduce=allreduce)
        solver.solve(b, refine=False)  # warm-up: communicators, buffers
        times = []
        for _ in range(repeat):
            x = solver.solve(b, refine=False)  # the triangular solve; berr measured, not refined
            times.append(solver.solve_seconds)
        stats = solver.stats()
        ok = comm.allreduce(int(stats == solver.planned_stats()), op=MPI.MIN) == 1
        sent = np.stack(comm.gather(stats.array, root=0) or [np.zeros((8, 8), np.int64)])
        pieces = comm.gather(x, root=0)
        if comm.rank != 0:
            continue
        X = np.empty((n, nrhs))
        for r, p in enumerate(pieces):
            X[solver.distribution.owned(r)] = p
        per_rank = lambda steps, cols: sent[:, list(steps)][:, :, cols].sum(axis=(1, 2))  # noqa: E731
        print(json.dumps({
            "matrix": spec, "nranks": comm.size, "grid": list(grid), "algorithm": algorithm, "allreduce": allreduce,
            "nrhs": nrhs, "repeat": repeat, "nnz_LU": int(solver.nnz_LU), "factor_s": solver.factor_seconds,
            # the run of median total, its slowest rank's parts (they add up to at most the total)
            "median_s": {k: v for k, v in times[int(np.argsort([t["total"] for t in times])[repeat // 2])].items()
                         if k != "max"},
            "berr": [float(v) for v in solver.berr],
            "runs_total_s": [t["total"] for t in times],
            "xy_max_msgs": int(per_rank(XY_STEPS, [0, 1]).max()), "xy_max_bytes": int(per_rank(XY_STEPS, [2, 3]).max()),
            "z_max_msgs": int(per_rank(Z_STEPS, [0, 1]).max()), "z_max_bytes": int(per_rank(Z_STEPS, [2, 3]).max()),
            "stats_recorded_equal_planned": bool(ok),
            "rel_residual": float(np.linalg.norm(A @ X - B) / np.linalg.norm(B))}), flush=True)
