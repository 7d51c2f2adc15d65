"""The analysis of a distributed matrix without gathering it (issue 35): static pivoting
from each rank's own rows, PT-Scotch's nested dissection, the symbolic factorization by
leaves of the separator tree (C++ ``direct/parallel_symbolic.hpp``), ||B||_1 and the test for
symmetry. Every step is collective on the ParCSR's communicator and leaves its result on
every rank.

Only the large-diagonal matching (``row_perm="mc64"``, or ``"auto"`` on a matrix that is not
diagonally dominant) still gathers A on one rank, as SuperLU_DIST's ``LargeDiag_MC64`` does:
:func:`pivoting_gathered` there, :func:`pivoting_in_parallel` everywhere else. Both give the
:class:`~commsolve.direct.pivoting.StaticPivoting` that the scipy path
(:func:`~commsolve.direct.pivoting.static_pivoting`) gives for the same matrix.
"""

from __future__ import annotations

import time

import numpy as np

from .. import _core
from .._collective import mpi, run_agreed
from .pivoting import StaticPivoting, check_row_perm, equilibration_scales
from .serial import pivoted
from .symbolic import SymbolicOptions

__all__ = ["parallel_ordering", "parallel_symbolic", "pivoting_in_parallel", "pivoting_gathered", "one_norm",
           "is_symmetric"]


def _new_rows(source, row_of_col):
    """This rank's rows' indices in B = A[row_of_col] (A's own where ``row_of_col`` is None)."""
    rows = np.asarray(source.owned_rows(), dtype=np.int64)
    if row_of_col is None:
        return rows
    new_of_old = np.empty(source.shape[0], dtype=np.int64)
    new_of_old[np.asarray(row_of_col)] = np.arange(source.shape[0], dtype=np.int64)
    return new_of_old[rows]


def parallel_ordering(source, row_of_col, times=None, metis_leaves=False):
    """Collective on ``source.comm``. PT-Scotch's nested dissection of the pattern of B + B^T,
    B = A[row_of_col] (A itself when ``row_of_col`` is None), computed from the ParCSR
    ``source``'s own rows on the largest power of two of its ranks (C++
    ``direct/parallel_ordering.hpp``): the SeparatorTree (with ``perm``), the same on every
    rank; with ``metis_leaves`` each leaf subdomain is then reordered by METIS on one rank.
    ``times`` receives ``ordering_graph``, ``nested_dissection``, ``ordering_gather`` (and
    ``metis_leaves``)."""
    M = source.local_matrix()
    return _core.ptscotch_ordering(source.comm.py2f(), source.shape[0], 0, M.indptr.astype(np.int64),
                                   M.indices.astype(np.int64), np.asarray(M.data, dtype=np.float64),
                                   _new_rows(source, row_of_col), metis_leaves, 0, times)


def parallel_symbolic(source, row_of_col, ordered, options, root=0, times=None):
    """Collective on ``source.comm``. The supernodal structure of B + B^T (B as for
    :func:`parallel_ordering`) for the ordering ``ordered`` (its SeparatorTree), computed by
    leaves of the tree on their ranks and the separators on ``root``, no rank gathering B;
    the same on every rank, and equal to :func:`~commsolve.direct.symbolic.symbolic` with
    ``ordered=`` on the gathered B. ``options``: :data:`~commsolve.direct.symbolic.LU_DEFAULTS`'
    keys (the ordering's name and levels are not read). ``times`` receives
    ``symbolic_exchange``, ``symbolic_leaves``, ``symbolic_separators``,
    ``symbolic_assemble``."""
    M = source.local_matrix()
    opts = SymbolicOptions(**{k: v for k, v in options.items() if k in ("max_supernode", "relax", "relax_subtree")})
    return _core.parallel_symbolic(source.comm.py2f(), source.shape[0], M.indptr.astype(np.int64),
                                   M.indices.astype(np.int64), np.asarray(M.data, dtype=np.float64),
                                   _new_rows(source, row_of_col), ordered, opts, root, times)


def _local_checked(source):
    """This rank's rows as CSR (global columns), with a clear ValueError on every rank for a
    non-square shape or a non-finite entry (named by its global row and column)."""
    def check():
        M = source.local_matrix()
        if source.shape[0] != source.shape[1]:
            raise ValueError(f"the matrix must be square, got {source.shape[0]} x {source.shape[1]}")
        if np.iscomplexobj(M.data):
            raise ValueError("the matrix is complex; commsolve's factorizations are real")
        bad = np.nonzero(~np.isfinite(M.data))[0]
        if bad.size:
            local = int(np.searchsorted(M.indptr, bad[0], side="right") - 1)
            raise ValueError(f"the matrix has a non-finite entry {M.data[bad[0]]} at "
                             f"({int(source.owned_rows()[local])}, {int(M.indices[bad[0]])})")
        return M
    return run_agreed(source.comm, check)


def _summed(comm, v):
    out = np.empty_like(v)
    comm.Allreduce(v, out, op=mpi().SUM)
    return out


def _column_sums(M, n, row_weights=None):
    """Column sums of |diag(row_weights) M| over this rank's rows (length n)."""
    w = np.abs(M.data) if row_weights is None else np.abs(M.data) * np.repeat(row_weights, np.diff(M.indptr))
    return np.bincount(M.indices, weights=w, minlength=n).astype(np.float64)


def _diagonally_dominant(comm, M, rows, n):
    """:func:`~commsolve.direct.pivoting.diagonally_dominant` of the whole matrix from every
    rank's rows: the diagonal and the column sums summed over the ranks."""
    local_rows = np.repeat(np.arange(M.shape[0]), np.diff(M.indptr))
    on_diag = M.indices == rows[local_rows]
    d_mine = np.zeros(M.shape[0])
    np.add.at(d_mine, local_rows[on_diag], M.data[on_diag])
    d_mine = np.abs(d_mine)
    d = np.zeros(n)
    d[rows] = d_mine
    d = _summed(comm, d)
    by_rows = np.asarray(abs(M).sum(axis=1)).ravel()
    by_cols = _summed(comm, _column_sums(M, n))
    MPI = mpi()
    rows_ok = comm.allreduce(bool(np.all(2 * d_mine >= by_rows)), op=MPI.LAND)
    return bool(np.all(d > 0) and (rows_ok or np.all(2 * d >= by_cols)))


def pivoting_in_parallel(source, equil, row_perm):
    """Collective on ``source.comm``. The static pivoting of the ParCSR ``source`` computed
    from every rank's own rows, or None where it needs the matching (``row_perm="mc64"``, or
    ``"auto"`` on a matrix that is not diagonally dominant): the equilibration scales
    (``equil``) and no row permutation, as a StaticPivoting on every rank; a ValueError on
    every rank for a non-finite entry, a zero row or column, or an unknown ``row_perm``."""
    comm, n = source.comm, source.shape[0]
    run_agreed(comm, check_row_perm, row_perm)
    M = _local_checked(source)
    rows = np.asarray(source.owned_rows(), dtype=np.int64)
    if row_perm == "mc64" or (row_perm == "auto" and not _diagonally_dominant(comm, M, rows, n)):
        return None
    if not equil:
        return StaticPivoting(np.ones(n), np.ones(n), None, "N", "none")
    absM = abs(M)
    row_max = np.asarray(absM.max(axis=1).todense()).ravel() if M.shape[0] else np.zeros(0)
    row_max_all = np.zeros(n)
    row_max_all[rows] = row_max  # each row on one rank
    row_max_all = _summed(comm, row_max_all)
    col_max = np.zeros(n)
    weighted = absM.multiply(1.0 / np.where(row_max > 0, row_max, 1.0)[:, None]).tocsr()
    if weighted.nnz:
        np.maximum.at(col_max, weighted.indices, weighted.data)
    col_max_all = np.empty(n)
    comm.Allreduce(col_max, col_max_all, op=mpi().MAX)
    r, c, equed = run_agreed(comm, equilibration_scales, row_max_all, col_max_all)
    return StaticPivoting(r, c, None, equed, "none")


def pivoting_gathered(source, equil, row_perm, root, times):
    """Collective on ``source.comm``. The static pivoting computed on ``root`` from A gathered
    there (the large-diagonal matching is serial, as SuperLU_DIST's is), given to every rank.
    ``times`` receives ``gather`` and ``pivoting`` (on the root)."""
    comm = source.comm
    t0 = time.perf_counter()
    A = source.to_global(root)
    times["gather"] = time.perf_counter() - t0
    pivoting = run_agreed(comm, lambda: pivoted(A, equil, row_perm, times)[2] if comm.rank == root else None)
    del A
    return comm.bcast(pivoting, root=root)


def one_norm(source, pivoting):
    """Collective. ||B||_1 of the scaled matrix B = (diag(r) A diag(c))[row_of_col]: the
    largest column sum of magnitudes (a row permutation leaves them), from every rank's rows."""
    M = source.local_matrix()
    rows = np.asarray(source.owned_rows(), dtype=np.int64)
    sums = _summed(source.comm, _column_sums(M, source.shape[0], pivoting.row_scale[rows]))
    return float((sums * pivoting.col_scale).max())


def is_symmetric(source):
    """Collective. Whether A = A^T exactly (stored zeros count as absent): every rank sends
    its entries, transposed, to the owners of their columns' rows and compares them with its
    own."""
    comm, n = source.comm, source.shape[0]
    M = source.local_matrix()
    rows = np.asarray(source.owned_rows(), dtype=np.int64)
    i = np.repeat(rows, np.diff(M.indptr))
    j, v = M.indices.astype(np.int64), np.asarray(M.data, dtype=np.float64)
    keep = v != 0
    i, j, v = i[keep], j[keep], v[keep]
    owner = np.asarray(source.row_dist.owners_of(j))
    order = np.argsort(owner, kind="stable")
    cuts = np.searchsorted(owner[order], np.arange(comm.size + 1))
    send = [(j[order[a:b]] * n + i[order[a:b]], v[order[a:b]]) for a, b in zip(cuts[:-1], cuts[1:])]
    got = comm.alltoall(send)
    their_keys = np.concatenate([k for k, _ in got])
    their_vals = np.concatenate([x for _, x in got])
    mine = i * n + j
    a, b = np.argsort(mine, kind="stable"), np.argsort(their_keys, kind="stable")
    same = bool(mine.size == their_keys.size and np.array_equal(mine[a], their_keys[b])
                and np.array_equal(v[a], their_vals[b]))
    return comm.allreduce(same, op=mpi().LAND)

