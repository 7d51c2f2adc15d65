"""MPI part of bench/sc23_ablation_measured.py: on the ranks it is started with, factor one
matrix once on one grid and time every step of the SC'23 ablation chain on it
(bench/sc23_ablation.py's CHAIN: 3d-baseline-pdgstrs, then one change at a time, to 3d;
then 3d with flat trees).

    mpiexec -n P python -m mpi4py bench/sc23_ablation_mpi.py SPEC REPEAT GRID

Each step runs a warm-up and REPEAT solves with one right-hand side (distributed by rows,
contiguous blocks; no iterative refinement, the backward error measured). Rank 0 prints one
JSON line per step: the slowest rank's parts of the run of median total, the parts SuperLU_DIST's
SOLVE time covers (L + Z + U: pdgssvx3d starts its clock after moving b and stops it before
gathering x), whether every rank recorded what it planned, and the relative residual.
"""

import json
import os
import sys

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(__file__))
from sc23_ablation import CHAIN  # noqa: E402

from commsolve import direct, gallery  # noqa: E402

comm = MPI.COMM_WORLD
spec, repeat, layout = sys.argv[1], int(sys.argv[2]), sys.argv[3]
A = gallery.from_spec(spec) if comm.rank == 0 else None
n = comm.bcast(None if A is None else A.shape[0])
B = np.sin(0.37 * np.arange(n)) + 0.5
grid = direct.parse_grid(layout, comm.size)
solver = direct.factor(A, comm, grid=grid, algorithm="3d")
b = B[solver.distribution.owned(comm.rank)]
PLAIN = dict(tree="binary", kernels="inverted", leaf_sync=False, allreduce="packed")
# and the new solve with flat trees, beside SuperLU_DIST's NEW3DSOLVE=1 NEW3DSOLVETREECOMM=0
for step, _, options in CHAIN + [("3d, flat trees", "", dict(algorithm="3d", tree="flat"))]:
    solver.set_options(**dict(PLAIN, **options))
    solver.solve(b, refine=False)  # warm-up: communicators, buffers
    times = []
    for _ in range(repeat):
        x = solver.solve(b, refine=False)
        times.append(solver.solve_seconds)
    ok = comm.allreduce(int(solver.stats() == solver.planned_stats()), op=MPI.MIN) == 1
    pieces = comm.gather(x, root=0)
    if comm.rank != 0:
        continue
    X = np.empty(n)
    for r, p in enumerate(pieces):
        X[solver.distribution.owned(r)] = p
    lzu = [t["l_solve"] + t["z_comm"] + t["u_solve"] for t in times]
    median = times[int(np.argsort([t["total"] for t in times])[repeat // 2])]
    print(json.dumps({
        "matrix": spec, "nranks": comm.size, "grid": list(grid), "step": step, "options": options,
        "repeat": repeat, "nnz_LU": int(solver.nnz_LU), "factor_s": solver.factor_seconds,
        "median_s": {k: v for k, v in median.items() if k != "max"},
        "median_l_z_u_s": float(np.median(lzu)), "runs_total_s": [t["total"] for t in times],
        "berr": [float(v) for v in solver.berr], "stats_recorded_equal_planned": bool(ok),
        "rel_residual": float(np.linalg.norm(A @ X - B) / np.linalg.norm(B))}), flush=True)
