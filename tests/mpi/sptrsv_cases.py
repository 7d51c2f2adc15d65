"""MPI script: the distributed 2D triangular solves on one process grid, every gallery
family, tree shape and nrhs in {1, 3}, b given whole on the root (replicated=True).

Usage: mpiexec -n K python -m mpi4py tests/mpi/sptrsv_cases.py K PxQ
Rank 0 prints one JSON line per (family, tree, nrhs): the relative residual, the distance
to the serial solve with the same factors, whether every rank's recorded CommStats equal
its plan and its plan the virtual world's, and the messages sent in all.
"""

import json
import sys

import numpy as np
from mpi4py import MPI

import commsolve as cs
from commsolve import direct, gallery, trees, workloads
from commsolve.trees import SHAPES

FAMILIES = ["poisson2d:24", "poisson2d9:20", "poisson3d:8", "poisson3d27:7", "aniso2d:24,eps=0.001,theta=30",
            "random:rows=400,nnz_per_row=6"]
TREES = [s for s in SHAPES if s not in ("binomial", "rectangular")]  # the torus shapes: trees_cases, dense_cases
OPTIONS = dict(max_supernode=8, levels=3)  # small supernodes: many blocks, many messages

comm = MPI.COMM_WORLD
expected, grid = int(sys.argv[1]), sys.argv[2]
assert comm.size == expected, f"launched with {comm.size} ranks, expected {expected}"


for spec in FAMILIES:
    A = gallery.from_spec(spec) if comm.rank == 0 else None
    solver = direct.factor(A, comm, grid=grid, topology=2 if comm.size % 2 == 0 else 1, flat_threshold=2,
                           **OPTIONS)
    n = solver.shape[0]
    B = np.random.default_rng(7).standard_normal((n, 3))
    ref = direct.SparseLU(A, **OPTIONS).solve(B) if comm.rank == 0 else None
    for tree in TREES:
        solver.set_tree(tree, seed=3, flat_threshold=2)
        for nrhs in (1, 3):
            b = B[:, 0] if nrhs == 1 else B
            x = solver.solve(b, replicated=True)
            stats_ok = comm.allreduce(solver.stats() == solver.planned_stats(nrhs), op=MPI.LAND)
            same_everywhere = comm.allreduce(np.array_equal(x, comm.bcast(x)), op=MPI.LAND)
            planned = comm.gather(solver.planned_stats(nrhs).array, root=0)
            sent = comm.allreduce(sum(v for k, v in solver.stats().total().items() if k.startswith("msgs_sent")))
            if comm.rank == 0:
                r = b.reshape(n, -1)
                X = x.reshape(n, -1)
                resid = float(np.linalg.norm(A @ X - r) / np.linalg.norm(r))
                diff = float(np.linalg.norm(X - ref[:, :nrhs]) / np.linalg.norm(ref[:, :nrhs]))
                # Every rank's plan equals its twin in the virtual world (no MPI): the solve's
                # steps, and its first four against the 2D collectives' tree statistics.
                virtual = workloads.sptrsv3d_stats(solver.structure, solver.grid, "2d", tree, solver.topology,
                                                   forests=solver.forests, nrhs=nrhs, seed=3, flat_threshold=2,
                                                   distribution=solver.distribution,
                                                   row_order=solver.row_order, col_order=solver.col_order)
                lu = [trees.virtual_stats(workloads.sptrsv_collectives(solver.structure, solver.grid[:2], upper),
                                          solver.topology, tree, seed=3, flat_threshold=2)
                      for upper in (False, True)]
                virtual_ok = all(np.array_equal(p, v.array) for p, v in zip(planned, virtual))
                if nrhs == 1:
                    virtual_ok &= all(np.array_equal(p[:4], np.vstack([lo.array, up.array]))
                                      for p, lo, up in zip(planned, *lu))
                print(json.dumps(dict(family=spec.split(":")[0], tree=tree, nrhs=nrhs, resid=resid, diff=diff,
                                      stats_ok=bool(stats_ok), same_everywhere=bool(same_everywhere),
                                      virtual_ok=bool(virtual_ok),
                                      messages=int(sent), shape=list(x.shape))), flush=True)

# A row-distributed ParCSR factors the same (its rows are gathered on rank 0).
spec = "poisson3d:8"
D = cs.ParCSR.from_spec(spec, comm, partition="metis")
solver = direct.factor(D, comm, grid=grid, **OPTIONS)
G = gallery.from_spec(spec)
b = np.random.default_rng(7).standard_normal(G.shape[0])
x = solver.solve(b, replicated=True)
# b and x distributed as the ParCSR's rows (METIS owners: not contiguous blocks).
x_local = solver.solve(b[D.owned_rows()])
x_rows = D.gather(x_local)
if comm.rank == 0:
    ref = direct.SparseLU(G, **OPTIONS).solve(b)
    print(json.dumps(dict(family="parcsr", diff=float(np.linalg.norm(x - ref) / np.linalg.norm(ref)),
                          resid=float(np.linalg.norm(G @ x - b) / np.linalg.norm(b)),
                          diff_rows=float(np.linalg.norm(x_rows - ref) / np.linalg.norm(ref)))), flush=True)
