"""MPI script: factor() of a row-distributed ParCSR with a parallel ordering, whose analysis
runs on every rank from its own rows (direct/parallel_analysis.py), against scipy-side
references computed here on the gathered matrix.

Usage: mpiexec -n K python -m mpi4py tests/mpi/parallel_analysis_cases.py K
For each family, ordering and row permutation, rank 0 prints one JSON line: whether A was
gathered (the ``gather`` part on any rank), the row permutation used and whether the scipy
test (pivoting.diagonally_dominant) finds the matrix dominant, whether the scales,
``equed``, ||B||_1 and the symmetry flag (the analysis leaves it untested where rows and
columns are ordered and scaled alike; then the distributed test that selected inversion runs)
equal those of the scipy static pivoting (pivoting.static_pivoting) and of numpy on the
gathered matrix, and the backward error and
error of a solve with b and x distributed unlike A's rows (strided), so the residuals use
A's rows moved to b's owners; on a 2D grid, for two families, the form selected inversion
chose and its entries' error against numpy's inverse.
"""

import json
import sys

import numpy as np
import scipy.sparse as sp
from mpi4py import MPI

from commsolve import gallery
from commsolve.direct import factor
from commsolve.direct.parallel_analysis import is_symmetric
from commsolve.direct.pivoting import checked_matrix, diagonally_dominant, static_pivoting
from commsolve.parcsr import ParCSR
from commsolve.partition import partition

comm = MPI.COMM_WORLD
expected = int(sys.argv[1])
assert comm.size == expected, f"launched with {comm.size} ranks, expected {expected}"
GRIDS = {1: (1, 1, 1), 2: (1, 1, 2), 3: (3, 1, 1), 4: (1, 2, 2)}
# (name, spec, rows scaled, row permutations): diagonally dominant (auto keeps the rows), the
# same with rows scaled over 6 orders of magnitude (equilibration scales them; no matching
# asked), not dominant (auto matches), a zero block
FAMILIES = [("poisson2d", "poisson2d:16", "", ("auto", "mc64")), ("hpcg", "hpcg:5", "", ("auto", "mc64")),
            ("scaled", "poisson2d:16", "rows scaled", ("none", "auto")),
            ("unsym", "poisson2d:16", "upper halved", ("none", "auto")),
            ("dups", "poisson2d:16", "entries split", ("auto", "mc64")),
            ("convdiff2d", "convdiff2d:16", "", ("auto", "mc64")), ("kkt3d", "kkt3d:3", "", ("auto", "mc64"))]


def variant(A, how):
    """The gallery matrix as the case wants it: rows scaled over 6 orders of magnitude
    (equilibration acts), the strict upper triangle halved (still dominant, not symmetric),
    or every entry stored as two halves (duplicates, which every step must sum)."""
    if how == "rows scaled":
        return A.multiply(np.logspace(0, 6, A.shape[0])[:, None]).tocsr()
    if how == "upper halved":
        return (sp.tril(A) + 0.5 * sp.triu(A, 1)).tocsr()
    if how == "entries split":
        return sp.csr_matrix((np.repeat(A.data / 2, 2), np.repeat(A.indices, 2), 2 * A.indptr), shape=A.shape)
    return A


for name, spec, how, row_perms in FAMILIES:
    for ordering in ("ptscotch", "ptscotch-metis"):
        for row_perm in row_perms:
            stored = variant(checked_matrix(gallery.from_spec(spec)), how)
            A_global = checked_matrix(stored)  # duplicates summed: the reference
            n = A_global.shape[0]
            A = ParCSR.from_global(stored, comm)
            dist = partition(n, comm.size, "strided")
            lu = factor(A, grid=GRIDS[comm.size], ordering=ordering, row_perm=row_perm, distribution=dist,
                        max_supernode=16)
            gathered = comm.allreduce("gather" in lu.report.ordering_parts, op=MPI.LOR)
            x_true = np.random.default_rng(3).standard_normal(n)
            mine = dist.owned(comm.rank)
            x = lu.solve((A_global @ x_true)[mine])
            err = comm.allreduce(float(np.abs(x - x_true[mine]).max()), op=MPI.MAX)
            # None: rows and columns alike, A's own symmetry left to selected inversion's test
            untested = lu.analysis.symmetric is None
            ours = is_symmetric(A) if untested else lu.analysis.symmetric
            selinv = None
            if GRIDS[comm.size][2] == 1 and ordering == "ptscotch" and name in ("poisson2d", "unsym", "convdiff2d"):
                # selected inversion decides its form itself where the analysis left A untested
                Z = lu.selected_inverse()
                if comm.rank == 0:
                    exact = np.linalg.inv(A_global.toarray())
                    Z = Z.tocoo()
                    selinv = {"symmetric": bool(lu.selinv.symmetric),
                              "err": float(np.abs(Z.data - exact[Z.row, Z.col]).max() / np.abs(exact).max())}
            if comm.rank == 0:
                used = lu.pivoting.row_perm
                B, ref = static_pivoting(A_global, True, used)
                symmetric = bool((A_global != A_global.T).nnz == 0 and np.array_equal(ref.row_scale, ref.col_scale)
                                 and (ref.row_of_col is None or np.array_equal(ref.row_of_col, np.arange(n))))
                anorm = float(abs(B).sum(axis=0).max())
                print(json.dumps({
                    "family": name, "ordering": ordering, "row_perm": row_perm, "used": used,
                    "dominant": diagonally_dominant(A_global),
                    "gathered": bool(gathered),
                    "scales_equal": bool(np.array_equal(lu.pivoting.row_scale, ref.row_scale)
                                         and np.array_equal(lu.pivoting.col_scale, ref.col_scale)),
                    "equed": [lu.pivoting.equed, ref.equed],
                    "anorm_rel": abs(lu.analysis.anorm - anorm) / anorm,
                    "symmetric": [bool(ours), symmetric], "untested": untested, "selinv": selinv,
                    "berr": float(np.max(lu.berr)), "err": err, "x_scale": float(np.abs(x_true).max())}),
                    flush=True)
