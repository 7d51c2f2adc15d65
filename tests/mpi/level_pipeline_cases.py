"""MPI script: one classical AMG level built in one C++ call (classical.classical_level, what
the hierarchy uses) against the same level built by the Python steps one by one (pmis,
coarse_numbering, extended_i_interpolation, galerkin), on several partitions: contiguous,
strided, a rank without rows; PMIS and HMIS (whose first pass keeps only coarse points with
no strong connection to another rank); a matrix whose pattern is not symmetric, so S + S^T
needs entries that arrive from other ranks. The coarse operator is also checked against
scipy's P^T A P of the gathered P.

Usage: mpiexec -n K python -m mpi4py tests/mpi/level_pipeline_cases.py K TMPDIR
Rank 0 prints one JSON line per case.
"""

import json
import sys

import numpy as np
import scipy.sparse as sp
from mpi4py import MPI

import commsolve as cs
from commsolve.amg import classical
from commsolve.partition import Distribution

comm = MPI.COMM_WORLD
assert comm.size == int(sys.argv[1]), f"launched with {comm.size} ranks, expected {sys.argv[1]}"


def one_way(n, seed):
    """An M-matrix with a random pattern that is not symmetric (diagonally dominant)."""
    M = -abs(sp.random(n, n, density=0.06, random_state=seed, format="csr"))
    M.setdiag(0)
    M.eliminate_zeros()
    return sp.csr_matrix(M + sp.diags(np.asarray(abs(M).sum(axis=1)).ravel() + 1.0))


def partitions(n):
    out = {"contiguous": "contiguous", "strided": "strided"}
    if comm.size > 1:  # rank 0 without rows, the others share them
        out["first rank empty"] = Distribution.from_offsets(np.concatenate([[0], np.linspace(0, n, comm.size)])
                                                            .astype(np.int64))
    return out


MATRICES = {"poisson2d:14": lambda: cs.gallery.from_spec("poisson2d:14"),
            "convdiff2d:12,pe=50": lambda: cs.gallery.from_spec("convdiff2d:12,pe=50"),
            "one-way random 90": lambda: one_way(90, 1)}
for name, make in MATRICES.items():
    G = sp.csr_matrix(make())
    for part, dist in partitions(G.shape[0]).items():
        A = cs.ParCSR.from_global(G, comm, partition=dist)
        for coarsening in ("pmis", "hmis"):
            ids = A.owned_rows()
            state, coarse, P, Ac, exchanges, times = classical.classical_level(
                A, ids, theta=0.25, coarsening=coarsening, seed=5, trunc=0.0, pmax=3, strategy="standard",
                product_strategy="standard", spmv_strategy="standard")
            L = A.local_block()
            strong = classical.strength(L, 0.25)
            steps = classical.pmis(A, L, strong, ids, seed=5, coarsening=coarsening)
            cfull, coarse_steps = classical.coarse_numbering(A, steps)
            P_steps = classical.extended_i_interpolation(A, L, strong, cfull, coarse_steps, 0.0, 3)
            Ac_steps = cs.galerkin(A, P_steps)
            same_state = comm.allreduce(int(np.array_equal(state, steps)), op=MPI.MIN) == 1
            rows = comm.gather(A.local_rows, root=0)
            Pg, Psg = P.to_global(root=0), P_steps.to_global(root=0)
            Acg, Acsg, Ag = Ac.to_global(root=0), Ac_steps.to_global(root=0), A.to_global(root=0)
            if comm.rank == 0:
                ref = (Pg.T @ Ag @ Pg).tocsr()
                print(json.dumps({
                    "case": f"{name} / {part} / {coarsening}", "rows": rows, "coarse": int(coarse.global_size),
                    "same_state": same_state, "same_P": (Pg != Psg).nnz == 0 and Pg.nnz > 0,
                    "same_Ac": (Acg != Acsg).nnz == 0 and Acg.nnz > 0,
                    "Ac_vs_scipy": float(abs(Acg - ref).max() / abs(ref).max()),
                    "steps": list(times), "exchanges": [e["kernel"] for e in exchanges]}), flush=True)
