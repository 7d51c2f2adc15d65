"""MPI script: distributed solves of matrices that need static pivoting, with iterative
refinement, on one grid; the factor's root is the last rank.

Usage: mpiexec -n K python -m mpi4py tests/mpi/pivoting_cases.py K GRID
For a KKT matrix (zero (2,2) block), a convection-dominated one and a matrix with fewer
rows than ranks, rank 0 prints one JSON line: the componentwise backward error the solver
reports and the one computed here from the gathered x, the refinement steps, the distance
to the serial solve, whether the row permutation moved rows, and whether the statistics
equal the plan and the plan its virtual twin.
"""

import json
import sys

import numpy as np
from mpi4py import MPI

from commsolve import direct, gallery, workloads
from commsolve.partition import partition

comm = MPI.COMM_WORLD
expected, grid = int(sys.argv[1]), sys.argv[2]
assert comm.size == expected, f"launched with {comm.size} ranks, expected {expected}"
root = comm.size - 1
OPTIONS = dict(max_supernode=8, levels=3)

for spec in ("kkt3d:4", "convdiff2d:24,pe=3000", "poisson2d:2"):
    A = gallery.from_spec(spec) if comm.rank == root else None
    n = comm.bcast(None if A is None else A.shape[0], root=root)
    dist = partition(n, comm.size, "strided") if n >= comm.size else None
    solver = direct.factor(A, comm, grid=grid, root=root, distribution=dist, **OPTIONS)
    dist = solver.distribution
    B = np.random.default_rng(5).standard_normal((n, 2))
    x = solver.solve(B[dist.owned(comm.rank)])
    steps, berr = solver.refine_steps.tolist(), solver.berr.tolist()
    x_plain = solver.solve(B[dist.owned(comm.rank)], refine=False)
    plain_steps = solver.refine_steps.tolist()
    stats_ok = comm.allreduce(solver.stats() == solver.planned_stats(2), op=MPI.LAND)
    planned = comm.gather(solver.planned_stats(2).array, root=0)
    pieces = comm.gather(x, root=0)
    A0 = comm.bcast(A, root=root)
    if comm.rank != 0:
        continue
    X = np.empty((n, 2))
    for r, p in enumerate(pieces):
        X[dist.owned(r)] = p
    ref = direct.SparseLU(A0, **OPTIONS).solve(B)
    here = np.max(np.abs(B - A0 @ X) / (abs(A0) @ np.abs(X) + np.abs(B)), axis=0)
    virtual = workloads.sptrsv3d_stats(solver.structure, solver.grid, solver.algorithm, solver.tree, solver.topology,
                                       forests=solver.forests, nrhs=2, distribution=dist,
                                       row_order=solver.row_order, col_order=solver.col_order)
    print(json.dumps(dict(
        family=spec.split(":")[0], n=int(n), berr=berr, berr_here=here.tolist(), steps=steps, plain_steps=plain_steps,
        diff=float(np.linalg.norm(X - ref) / np.linalg.norm(ref)),
        rows_moved=bool(not np.array_equal(solver.row_order, solver.col_order)), stats_ok=bool(stats_ok),
        virtual_ok=all(np.array_equal(p, v.array) for p, v in zip(planned, virtual)))), flush=True)
