"""MPI script: the strength graphs of classical AMG (S, the pattern of S + S^T, how many
points depend on each point) on matrices whose pattern is not symmetric, so that some of a
point's dependents lie outside the rank's halo of A and S + S^T needs halo columns A lacks.

Usage: mpiexec -n K python -m mpi4py tests/mpi/strength_cases.py K TMPDIR
For each case rank 0 prints one JSON line: the gathered graphs against pyamg's strength of
the gathered matrix, G's product with a vector against scipy's, and G's halo exchange as
recorded against its plan.
"""

import json
import os
import sys

import numpy as np
import scipy.sparse as sp
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(__file__))
import commsolve as cs  # noqa: E402
from commsolve.amg.classical import strength, strength_graphs  # noqa: E402

comm = MPI.COMM_WORLD
assert comm.size == int(sys.argv[1]), f"launched with {comm.size} ranks, expected {sys.argv[1]}"


def one_way(spec, stride, every):
    """The gallery matrix with strong one-way couplings a_{i, i+stride} = -2 for every
    ``every``-th row (no entry a_{i+stride, i}): a pattern that is not symmetric."""
    A = sp.lil_matrix(cs.gallery.from_spec(spec))
    for i in range(0, A.shape[0] - stride, every):
        A[i, i + stride] = -2.0
    return sp.csr_matrix(A)


CASES = {"poisson2d:16+one-way": lambda: one_way("poisson2d:16", 97, 7),
         "convdiff2d:14,pe=50+one-way": lambda: one_way("convdiff2d:14,pe=50", 61, 5)}
for name, make in CASES.items():
    M = make()
    A = cs.ParCSR.from_global(M, comm)
    L = A.local_block()
    S, G, depends = strength_graphs(A, L, strength(L, 0.25), "standard")
    x = np.sin(np.arange(G.shape[0]) + 1.0)[G.owned_rows()]
    G.reset_recorded()
    y = G.matvec(x)
    recorded_ok = comm.allreduce(G.recorded_stats() == G.planned_stats().scaled(1), op=MPI.LAND)
    Sg, Gg = S.to_global(root=0), G.to_global(root=0)
    yg, dg = G.gather(y), G.gather(depends)
    extra = comm.allreduce(len(set(np.asarray(G.col_map)) - set(np.asarray(A.col_map))))
    if comm.rank == 0:
        import pyamg

        ref = pyamg.strength.classical_strength_of_connection(M, theta=0.25, norm="min").tocsr()
        ref.setdiag(0)
        ref.eliminate_zeros()
        ref = (abs(ref) > 0).astype(float)
        sym = ((ref + ref.T) > 0).astype(float)
        xg = np.sin(np.arange(M.shape[0]) + 1.0)
        print(json.dumps({
            "case": name,
            "S": bool(((abs(Sg) > 0).astype(float) != ref).nnz == 0),
            "G": bool(((abs(Gg) > 0).astype(float) != sym).nnz == 0),
            "depends_on_me": bool(np.array_equal(dg, np.diff(ref.tocsc().indptr))),
            "G_matvec_err": float(np.max(np.abs(yg - sym @ xg))),
            "halo_columns_beyond_A": int(extra),
            "recorded_ok": recorded_ok,
        }), flush=True)
