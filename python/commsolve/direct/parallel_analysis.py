"""The analysis of a distributed matrix without gathering it (issue 35): static pivoting
from each rank's own rows, PT-Scotch's nested dissection, the symbolic factorization by
leaves of the separator tree (C++ ``direct/parallel_symbolic.hpp``), ||B||_1 and the test for
symmetry (run by selected inversion, the one reader of it). Every step is collective on the
ParCSR's communicator and leaves its result on every rank.

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

__all__ = ["LEAVES", "rows_of_B", "parallel_ordering", "parallel_symbolic", "pivoting_in_parallel", "pivoting_gathered",
           "one_norm", "is_symmetric"]


# How each parallel ordering orders the leaves of PT-Scotch's separator tree (the ``leaves``
# of :func:`parallel_ordering`, which the default "auto" chooses by the graph).
LEAVES = {"ptscotch": "scotch", "ptscotch-metis": "metis"}


def rows_of_B(source, row_of_col, local=None):
    """Local. This rank's rows of ``B = A[row_of_col]`` (A itself where ``row_of_col`` is None)
    as the C++ functions take them.

    Parameters
    ----------
    source : ParCSR
        The matrix A.
    row_of_col : ndarray of int or None
        The row of A matched to every column (:class:`~commsolve.direct.pivoting.StaticPivoting`'s);
        None: no row permutation.
    local : scipy.sparse.csr_matrix, optional
        The rows as ``source.local_matrix()`` gives them, if the caller holds them.

    Returns
    -------
    indptr : ndarray of int64
    indices : ndarray of int32
        Global columns.
    data : ndarray of float64
        The values.
    rows : ndarray of int64
        Each row's index in B.
    """
    M = source.local_matrix() if local is None else local
    rows = np.asarray(source.owned_rows(), dtype=np.int64)
    if row_of_col is not None:
        new_of_old = np.empty(source.shape[0], dtype=np.int64)
        new_of_old[np.asarray(row_of_col)] = np.arange(source.shape[0], dtype=np.int64)
        rows = new_of_old[rows]
    return (np.asarray(M.indptr, dtype=np.int64), np.asarray(M.indices, dtype=np.int32),
            np.asarray(M.data, dtype=np.float64), rows)


def parallel_ordering(source, row_of_col, times=None, leaves="scotch", rows=None):
    """Collective on ``source.comm``. PT-Scotch's nested dissection of the pattern of
    ``B + B^T``, ``B = A[row_of_col]`` (A itself when ``row_of_col`` is None), computed from the
    ParCSR ``source``'s own rows on the largest power of two of its ranks, each leaf then
    ordered on a rank of its own (C++ ``direct/parallel_ordering.hpp``).

    Parameters
    ----------
    source : ParCSR
        The matrix A.
    row_of_col : ndarray of int or None
        As :func:`rows_of_B`'s.
    times : dict, optional
        Receives ``ordering_graph``, ``ordering_dimension`` (unless ``leaves="metis"``),
        ``nested_dissection`` (PT-Scotch's top levels), ``ordering_gather`` and
        ``leaf_ordering``, seconds.
    leaves : {"scotch", "metis", "auto"}
        How the leaf subdomains are ordered, each on one rank (:data:`LEAVES`): by Scotch, by
        METIS, or by METIS on a 3D mesh and by Scotch otherwise (the default ordering's
        choice, C++ ``mesh_dimension``).
    rows : tuple of ndarray, optional
        :func:`rows_of_B`'s, if the caller holds them.

    Returns
    -------
    tree : SeparatorTree
        With ``perm``; the same on every rank.
    ordering : str
        The ordering this was: ``"ptscotch"`` or ``"ptscotch-metis"`` (METIS's leaves).
    """
    rows = rows_of_B(source, row_of_col) if rows is None else rows
    tree, used = _core.ptscotch_ordering(source.comm.py2f(), source.shape[0], 0, *rows, leaves, 0, times)
    return tree, next(name for name, how in LEAVES.items() if how == used)


def parallel_symbolic(source, row_of_col, ordered, options, root=0, times=None, rows=None, share=None):
    """Collective on ``source.comm``. The supernodal structure of ``B + B^T`` (B as for
    :func:`parallel_ordering`) for the ordering ``ordered``, computed by leaves of the tree on
    their ranks and the separators on ``root``, no rank gathering B.

    Stored zeros are not part of the pattern (as for the ordering and the factorization's
    entries).

    Parameters
    ----------
    source : ParCSR
        The matrix A.
    row_of_col : ndarray of int or None
        As :func:`rows_of_B`'s.
    ordered : SeparatorTree
        The ordering (its SeparatorTree, as :func:`parallel_ordering` returns it).
    options : dict
        :data:`~commsolve.direct.symbolic.LU_DEFAULTS`' keys (the ordering's name and levels
        are not read).
    root : int
        The rank that computes the separators.
    times : dict, optional
        Receives ``symbolic_exchange``, ``symbolic_leaves``, ``symbolic_separators``,
        ``symbolic_assemble``, seconds.
    rows : tuple of ndarray, optional
        As :func:`parallel_ordering`'s.
    share : tuple of int, optional
        ``(px, py)``: each rank receives only its share of the structure on layers of
        ``px x py`` ranks (C++ ``direct/structure_share.hpp``), no rank the whole.

    Returns
    -------
    SupernodalStructure
        The same on every rank, and equal to :func:`~commsolve.direct.symbolic.symbolic` with
        ``ordered=`` on the gathered B; with ``share``, this rank's share of it.
    """
    opts = SymbolicOptions(**{k: v for k, v in options.items() if k in ("max_supernode", "relax", "relax_subtree")})
    rows = rows_of_B(source, row_of_col) if rows is None else rows
    return _core.parallel_symbolic(source.comm.py2f(), source.shape[0], *rows, ordered, opts, root, times,
                                   None if share is None else tuple(share))


def _local_checked(source, local=None):
    """This rank's rows (``local``, or read from ``source`` with duplicates summed) as CSR
    (global columns), with a clear ValueError on every rank for a non-square shape or a
    non-finite entry (named by its global row and column)."""
    def check():
        M = local
        if M is None:
            M = source.local_matrix()
            M.sum_duplicates()
        if source.shape[0] != source.shape[1]:
            raise ValueError(f"the matrix must be square, got {source.shape[0]} x {source.shape[1]}")
        if np.iscomplexobj(M.data):
            raise ValueError("the matrix is complex; commsolve's factorizations are real")
        bad = np.nonzero(~np.isfinite(M.data))[0]
        if bad.size:
            row = int(np.searchsorted(M.indptr, bad[0], side="right") - 1)
            raise ValueError(f"the matrix has a non-finite entry {M.data[bad[0]]} at "
                             f"({int(source.owned_rows()[row])}, {int(M.indices[bad[0]])}) (counting from 0)")
        return M
    return run_agreed(source.comm, check)


def _summed(comm, v):
    out = np.empty_like(v)
    comm.Allreduce(v, out, op=mpi().SUM)
    return out


def _diagonally_dominant(comm, M, local, magnitudes, rows, n):
    """:func:`~commsolve.direct.pivoting.diagonally_dominant` of the whole matrix from every
    rank's rows (``local``: each entry's local row; ``magnitudes``: |entries|); the column
    test, which needs the diagonal and the column sums summed over the ranks, only where the
    row test fails."""
    MPI = mpi()
    on_diag = M.indices == rows[local]
    d_mine = np.abs(np.bincount(local[on_diag], weights=M.data[on_diag], minlength=M.shape[0]))
    by_rows = np.bincount(local, weights=magnitudes, minlength=M.shape[0])
    if not comm.allreduce(bool(np.all(d_mine > 0)), op=MPI.LAND):
        return False
    if comm.allreduce(bool(np.all(2 * d_mine >= by_rows)), op=MPI.LAND):
        return True
    d = np.zeros(n)
    d[rows] = d_mine  # each row on one rank
    by_cols = _summed(comm, np.bincount(M.indices, weights=magnitudes, minlength=n))
    return bool(np.all(2 * _summed(comm, d) >= by_cols))


def pivoting_in_parallel(source, equil, row_perm, local=None):
    """Collective on ``source.comm``. The static pivoting of the ParCSR ``source`` computed
    from every rank's own rows, or None where it needs the matching.

    Parameters
    ----------
    source : ParCSR
        The matrix A.
    equil : bool
        Equilibrate (as :func:`~commsolve.direct.pivoting.static_pivoting`).
    row_perm : {"mc64", "none", "auto"}
        The row permutation asked for.
    local : scipy.sparse.csr_matrix, optional
        This rank's rows, duplicates summed, if the caller holds them.

    Returns
    -------
    StaticPivoting or None
        The equilibration scales (``equil``) and no row permutation, as a StaticPivoting on
        every rank; None where it needs the matching (``row_perm="mc64"``, or ``"auto"`` on
        a matrix that is not diagonally dominant).

    Raises
    ------
    CollectiveError
        A ValueError on every rank for a non-finite entry, an unknown ``row_perm`` or
        (equilibrating) a zero row or column (also for a matrix that is not square or is
        complex).
    """
    comm, n = source.comm, source.shape[0]
    run_agreed(comm, check_row_perm, row_perm)
    M = _local_checked(source, local)
    rows = np.asarray(source.owned_rows(), dtype=np.int64)
    local = np.repeat(np.arange(M.shape[0], dtype=np.int32), np.diff(M.indptr))
    magnitudes = np.abs(M.data)
    if row_perm == "mc64" or (row_perm == "auto" and not _diagonally_dominant(comm, M, local, magnitudes, rows, n)):
        return None
    if not equil:
        return StaticPivoting(np.ones(n), np.ones(n), None, "N", "none")
    row_max = np.zeros(M.shape[0])
    np.maximum.at(row_max, local, magnitudes)
    row_max_all = np.zeros(n)
    row_max_all[rows] = row_max  # each row on one rank
    row_max_all = _summed(comm, row_max_all)
    col_max = np.zeros(n)  # of |r_i a_ij|, r_i = 1 / row_max (as the scipy path scales)
    np.maximum.at(col_max, M.indices, magnitudes * (1.0 / np.where(row_max > 0, row_max, 1.0))[local])
    col_max_all = np.empty(n)
    comm.Allreduce(col_max, col_max_all, op=mpi().MAX)
    r, c, equed = run_agreed(comm, equilibration_scales, row_max_all, col_max_all)
    return StaticPivoting(r, c, None, equed, "none")


def pivoting_gathered(source, equil, row_perm, root, times):
    """Collective on ``source.comm``. The static pivoting computed on ``root`` from A gathered
    there (the large-diagonal matching is serial, as SuperLU_DIST's is), given to every rank.

    Parameters
    ----------
    source : ParCSR
        The matrix A.
    equil : bool
        Equilibrate (as :func:`~commsolve.direct.pivoting.static_pivoting`).
    row_perm : {"mc64", "none", "auto"}
        As :func:`~commsolve.direct.pivoting.static_pivoting`'s.
    root : int
        The rank A is gathered on.
    times : dict
        Receives ``gather``, seconds.

    Returns
    -------
    StaticPivoting
        The same on every rank.

    Raises
    ------
    CollectiveError
        On every rank, a ValueError where :func:`~commsolve.direct.serial.pivoted` raises one
        on ``root``.
    """
    comm = source.comm
    t0 = time.perf_counter()
    A = source.to_global(root)
    times["gather"] = time.perf_counter() - t0
    pivoting = run_agreed(comm, lambda: pivoted(A, equil, row_perm)[2] if comm.rank == root else None)
    del A
    return comm.bcast(pivoting, root=root)


def one_norm(source, pivoting, local=None):
    """Collective. ``||B||_1`` of the scaled matrix ``B = (diag(r) A diag(c))[row_of_col]``: the
    largest column sum of magnitudes (a row permutation leaves them), from every rank's rows.

    Parameters
    ----------
    source : ParCSR
        The matrix A.
    pivoting : StaticPivoting
        Its static pivoting (the scales r and c).
    local : scipy.sparse.csr_matrix, optional
        As :func:`pivoting_in_parallel`'s.

    Returns
    -------
    float
        ``||B||_1``, the same on every rank.
    """
    if local is None:
        local = source.local_matrix()
        local.sum_duplicates()
    M = local
    weights = np.abs(M.data) * np.repeat(pivoting.row_scale[np.asarray(source.owned_rows())], np.diff(M.indptr))
    sums = _summed(source.comm, np.bincount(M.indices, weights=weights, minlength=source.shape[0]))
    return float((sums * pivoting.col_scale).max())


def is_symmetric(source):
    """Collective. Whether ``A = A^T`` exactly (stored zeros count as absent): every rank sends
    its entries, transposed, to the owners of their columns' rows (one all-to-all of keys
    and one of values) and compares them with its own.

    Parameters
    ----------
    source : ParCSR
        The matrix A.

    Returns
    -------
    bool
        The same on every rank.
    """
    comm, n, MPI = source.comm, source.shape[0], mpi()
    M = source.local_matrix()
    M.sum_duplicates()
    keep = M.data != 0
    i = np.repeat(np.asarray(source.owned_rows(), dtype=np.int64), np.diff(M.indptr))[keep]
    j, v = M.indices[keep].astype(np.int64), M.data[keep]
    del M, keep
    owner = np.asarray(source.row_dist.owners_of(j), dtype=np.int64)
    order = np.argsort(owner, kind="stable")
    send_counts = np.bincount(owner, minlength=comm.size).astype(np.int64)
    del owner
    recv_counts = np.empty_like(send_counts)
    comm.Alltoall(send_counts, recv_counts)
    send_disp = np.concatenate([[0], np.cumsum(send_counts)[:-1]])
    recv_disp = np.concatenate([[0], np.cumsum(recv_counts)[:-1]])
    their_keys = np.empty(int(recv_counts.sum()), dtype=np.int64)
    comm.Alltoallv([(j * n + i)[order], (send_counts, send_disp), MPI.INT64_T],
                   [their_keys, (recv_counts, recv_disp), MPI.INT64_T])
    their_vals = np.empty(their_keys.size)
    comm.Alltoallv([v[order], (send_counts, send_disp), MPI.DOUBLE], [their_vals, (recv_counts, recv_disp), MPI.DOUBLE])
    del order
    mine = i * n + j
    del i, j
    a, b = np.argsort(mine, kind="stable"), np.argsort(their_keys, kind="stable")
    same = bool(mine.size == their_keys.size and np.array_equal(mine[a], their_keys[b])
                and np.array_equal(v[a], their_vals[b]))
    return comm.allreduce(same, op=MPI.LAND)
