"""MPI script: the distributed 3D triangular solves on one Px x Py x Pz grid.

Usage: mpiexec -n K python -m mpi4py tests/mpi/sptrsv3d_cases.py K PxQxR
For three gallery families (one nonsymmetric), both forest partitions, both 3D algorithms,
both inter-grid packings, two tree shapes and nrhs in {1, 3}, rank 0 prints one JSON line:
the distance of x to the serial solve with the same factors, the residual, whether every
rank's recorded CommStats equal its plan and its plan the virtual world's, and the messages
sent inside the grids (XY) and between them (Z). b and x are distributed by rows, strided
over the ranks (not contiguous blocks).
"""

import json
import sys

import numpy as np
from mpi4py import MPI

from commsolve import direct, gallery, workloads
from commsolve.partition import partition

FAMILIES = ["poisson2d9:20", "poisson3d:8", "random:rows=400,nnz_per_row=6"]  # the last is nonsymmetric
OPTIONS = dict(max_supernode=8, levels=3)  # small supernodes: many blocks, many messages

comm = MPI.COMM_WORLD
expected, grid = int(sys.argv[1]), sys.argv[2]
assert comm.size == expected, f"launched with {comm.size} ranks, expected {expected}"

for spec in FAMILIES:
    A = gallery.from_spec(spec) if comm.rank == 0 else None
    n = comm.bcast(None if A is None else A.shape[0])
    dist = partition(n, comm.size, "strided")
    B = np.random.default_rng(7).standard_normal((n, 3))
    for part in ("nd", "greedy"):
        solver = direct.factor(A, comm, grid=grid, partition=part, distribution=dist, topology=2, **OPTIONS)
        ref = direct.SparseLU(A, **OPTIONS).solve(B) if comm.rank == 0 else None
        for algorithm in ("3d-baseline", "3d-baseline-async", "3d"):
            for allreduce in ("packed", "per-supernode"):
                for tree in ("binary", "flat"):
                    solver.set_options(algorithm=algorithm, allreduce=allreduce, tree=tree)
                    for nrhs in (1, 3):
                        b = B[dist.owned(comm.rank), :nrhs]
                        x = solver.solve(b[:, 0] if nrhs == 1 else b)
                        stats_ok = comm.allreduce(solver.stats() == solver.planned_stats(nrhs), op=MPI.LAND)
                        planned = comm.gather(solver.planned_stats(nrhs).array, root=0)
                        pieces = comm.gather(x.reshape(-1, nrhs), root=0)
                        if comm.rank != 0:
                            continue
                        X = np.empty((n, nrhs))
                        for r, piece in enumerate(pieces):
                            X[dist.owned(r)] = piece
                        virtual = workloads.sptrsv3d_stats(solver.structure, solver.grid, algorithm, tree,
                                                           solver.topology, forests=solver.forests, nrhs=nrhs,
                                                           allreduce=allreduce, distribution=dist,
                                                           row_order=solver.row_order,
                                                           col_order=solver.col_order)
                        P = np.stack(planned)
                        print(json.dumps(dict(
                            family=spec.split(":")[0], partition=part, algorithm=algorithm, allreduce=allreduce,
                            tree=tree, nrhs=nrhs, shape=list(x.shape),
                            diff=float(np.linalg.norm(X - ref[:, :nrhs]) / np.linalg.norm(ref[:, :nrhs])),
                            resid=float(np.linalg.norm(A @ X - B[:, :nrhs]) / np.linalg.norm(B[:, :nrhs])),
                            stats_ok=bool(stats_ok),
                            virtual_ok=all(np.array_equal(p, v.array) for p, v in zip(planned, virtual)),
                            xy_msgs=int(P[:, 0:4, 0:2].sum()), z_msgs=int(P[:, 4:6, 0:2].sum()),
                            z_bytes=int(P[:, 4:6, 2:4].sum()), bx_msgs=int(P[:, 6:8, 0:2].sum()))), flush=True)
