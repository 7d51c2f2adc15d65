"""MPI script: geometric multigrid (cell-centred 2 x 2 x 2 aggregation) on groundwater3d:12 over
K ranks (tests/test_geometric_mg.py). Rank 0 prints one JSON line: every level's operator
against scipy's P^T A P built here from the aggregation's definition, the MGCG solve's
iterations and true residual (scipy), and the error a non-contiguous partition gets."""

import json
import sys

import numpy as np
import scipy.sparse as sp
from mpi4py import MPI

from commsolve import ParCSR, amg, gallery

comm = MPI.COMM_WORLD
assert comm.size == int(sys.argv[1])
n = 12
A = sp.csr_matrix(gallery.from_spec(f"groundwater3d:{n}"))
ml = amg.solver(A, comm, method="geometric", grid=(n, n, n), max_coarse=8)
errs, ref, dims = [], A, (n, n, n)
for lvl in ml.levels[1:]:
    nx, ny, nz = dims
    g = np.arange(nx * ny * nz)
    cx, cy, cz = -(-nx // 2), -(-ny // 2), -(-nz // 2)
    agg = (g % nx) // 2 + ((g // nx) % ny) // 2 * cx + (g // (nx * ny)) // 2 * cx * cy
    P = sp.csr_matrix((np.ones(g.size), (g, agg)), shape=(g.size, cx * cy * cz))
    ref = sp.csr_matrix(P.T @ ref @ P)
    got = lvl.A.to_global(root=None)
    errs.append(float(abs(got - ref).max() / abs(ref).max()))
    dims = (cx, cy, cz)
b = np.random.default_rng(0).standard_normal(A.shape[0])
rows = ml.A.owned_rows()
x, info = ml.solve(b[rows], tol=1e-8, accel="cg")
xg = np.zeros(A.shape[0])
xg[rows] = x
xg = comm.allreduce(xg)
try:
    amg.solver(ParCSR.from_global(A, comm, partition="metis"), method="geometric", grid=(n, n, n))
    partition_error = None
except ValueError as e:
    partition_error = str(e)
if comm.rank == 0:
    print(json.dumps({"levels": [lvl.rows for lvl in ml.levels], "operator_errors": errs, "info": info,
                      "iterations": ml.last_solve["iterations"],
                      "residual": float(np.linalg.norm(b - A @ xg) / np.linalg.norm(b)),
                      "partition_error": partition_error}), flush=True)
