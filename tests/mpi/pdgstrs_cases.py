"""MPI script: the pdgstrs3d-faithful baseline and its ablation switches on one Px x Py x Pz grid.

Usage: mpiexec -n K python -m mpi4py tests/mpi/pdgstrs_cases.py K PxQxR
For two gallery families (one nonsymmetric), 3d-baseline-pdgstrs and 3d-baseline with each
of pdgstrs3d's costs switched on alone (flat trees, per-block kernels, the leaf forests'
counter allreduce and barrier, one inter-grid message per supernode), nrhs in {1, 3}, rank 0
prints one JSON line: the distance of x to the serial solve with the same factors, the
residual, whether every rank's recorded CommStats equal its plan and its plan the virtual
world's, and the messages per step (summed over ranks).
"""

import json
import sys

import numpy as np
from mpi4py import MPI

from commsolve import direct, gallery, workloads
from commsolve.partition import partition

FAMILIES = ["poisson2d9:20", "random:rows=400,nnz_per_row=6"]  # the last is nonsymmetric
OPTIONS = dict(max_supernode=8, levels=3)  # small supernodes: many blocks, many messages
VARIANTS = [dict(algorithm="3d-baseline-pdgstrs"), dict(algorithm="3d-baseline", tree="flat"),
            dict(algorithm="3d-baseline", kernels="per-block"), dict(algorithm="3d-baseline", leaf_sync=True),
            dict(algorithm="3d-baseline", allreduce="per-supernode")]
PLAIN = dict(algorithm="3d-baseline", tree="binary", kernels="inverted", leaf_sync=False, allreduce="packed")

comm = MPI.COMM_WORLD
expected, grid = int(sys.argv[1]), sys.argv[2]
assert comm.size == expected, f"launched with {comm.size} ranks, expected {expected}"

for spec in FAMILIES:
    A = gallery.from_spec(spec) if comm.rank == 0 else None
    n = comm.bcast(None if A is None else A.shape[0])
    dist = partition(n, comm.size, "strided")
    B = np.random.default_rng(7).standard_normal((n, 3))
    solver = direct.factor(A, comm, grid=grid, distribution=dist, topology=2, **OPTIONS)
    ref = direct.SparseLU(A, **OPTIONS).solve(B) if comm.rank == 0 else None
    for variant in [{}] + VARIANTS:
        options = dict(PLAIN, **variant)
        solver.set_options(**options)
        for nrhs in (1, 3):
            b = B[dist.owned(comm.rank), :nrhs]
            x = solver.solve(b[:, 0] if nrhs == 1 else b, refine=False)
            stats_ok = comm.allreduce(solver.stats() == solver.planned_stats(nrhs), op=MPI.LAND)
            planned = comm.gather(solver.planned_stats(nrhs).array, root=0)
            pieces = comm.gather(x.reshape(-1, nrhs), root=0)
            if comm.rank != 0:
                continue
            X = np.empty((n, nrhs))
            for r, piece in enumerate(pieces):
                X[dist.owned(r)] = piece
            virtual = workloads.sptrsv3d_stats(solver.structure, solver.grid, options["algorithm"], options["tree"],
                                               solver.topology, forests=solver.forests, nrhs=nrhs,
                                               allreduce=options["allreduce"], kernels=options["kernels"],
                                               leaf_sync=options["leaf_sync"], distribution=dist,
                                               row_order=solver.row_order, col_order=solver.col_order)
            P = np.stack(planned)
            print(json.dumps(dict(
                family=spec.split(":")[0], variant=variant, nrhs=nrhs,
                diff=float(np.linalg.norm(X - ref[:, :nrhs]) / np.linalg.norm(ref[:, :nrhs])),
                resid=float(np.linalg.norm(A @ X - B[:, :nrhs]) / np.linalg.norm(B[:, :nrhs])),
                stats_ok=bool(stats_ok),
                virtual_ok=all(np.array_equal(p, v.array) for p, v in zip(planned, virtual)),
                msgs=P[:, :, 0:2].sum(axis=(0, 2)).astype(int).tolist(),
                bytes=P[:, :, 2:4].sum(axis=(0, 2)).astype(int).tolist())), flush=True)
