"""Row partitions: which rank owns each row (and the matching vector entry).

``contiguous`` (balanced blocks, the default), ``strided`` (row r on rank r mod P) and
``metis`` (k-way graph partition of A + A^T with METIS).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from . import _core
from ._core import Distribution

__all__ = ["Distribution", "METHODS", "partition", "owners", "adjacency_graph"]

METHODS = ("contiguous", "strided", "metis")


def _check(n, nranks):
    if nranks < 1:
        raise ValueError(f"number of ranks must be at least 1, got {nranks}")
    if nranks > n:
        raise ValueError(f"cannot partition {n} rows over {nranks} ranks (more ranks than rows)")


def adjacency_graph(A):
    """The symmetric adjacency graph of a square matrix: the pattern of ``A + A^T`` without
    the diagonal, as CSR with sorted int32 indices (what METIS takes).

    Parameters
    ----------
    A : scipy sparse matrix or 2-D array
        The square matrix.

    Returns
    -------
    scipy.sparse.csr_matrix
        The graph (only its pattern matters), ``indptr`` and ``indices`` int32.

    Raises
    ------
    ValueError
        When ``A`` is not square.
    """
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"matrix must be square, got {A.shape[0]} x {A.shape[1]}")
    A = sp.csr_matrix(A)
    G = sp.csr_matrix((np.ones(A.nnz), A.indices, A.indptr), shape=A.shape)
    G = (G + G.T).tocsr()
    G.setdiag(0)
    G.eliminate_zeros()
    G.sort_indices()
    return sp.csr_matrix((G.data, G.indices.astype(np.int32), G.indptr.astype(np.int32)), shape=G.shape)


def owners(A, nranks, method="contiguous", seed=0):
    """Owner rank of every row of the square matrix ``A``.

    Parameters
    ----------
    A : scipy sparse matrix or int
        The matrix; ``contiguous`` and ``strided`` need only the row count (``A`` may be an
        integer).
    nranks : int
        Number of ranks.
    method : {"contiguous", "strided", "metis"}, default "contiguous"
        Balanced blocks, row r on rank r mod ``nranks``, or METIS's k-way partition of the
        graph of :func:`adjacency_graph`.
    seed : int, default 0
        The seed of the METIS partition (the other methods do not use it).

    Returns
    -------
    ndarray of int32
        The owner of each of the n rows.

    Raises
    ------
    ValueError
        For ``nranks`` below 1 or above the row count, an unknown ``method``, or ``"metis"``
        on a matrix that is not square.
    """
    n = A if isinstance(A, (int, np.integer)) else A.shape[0]
    _check(n, nranks)
    if method == "contiguous":
        d = Distribution.contiguous(n, nranks)
        return np.repeat(np.arange(nranks, dtype=np.int32), np.diff(d.offsets))
    if method == "strided":
        return (np.arange(n) % nranks).astype(np.int32)
    if method == "metis":
        if A.shape[0] != A.shape[1]:
            raise ValueError(f"metis partitioning needs a square matrix, got {A.shape[0]} x {A.shape[1]}")
        G = adjacency_graph(A)
        return _core.metis_kway(G.indptr, G.indices, int(nranks), int(seed))
    raise ValueError(f"unknown partition method '{method}' (known: {', '.join(METHODS)})")


def partition(A, nranks, method="contiguous", seed=0):
    """The :class:`Distribution` of ``A``'s rows over ``nranks`` ranks by ``method``.

    Parameters
    ----------
    A : scipy sparse matrix or int
        The matrix. ``contiguous`` needs only ``A.shape[0]`` (``A`` may be an integer row
        count); so does ``strided`` (see :func:`owners`).
    nranks : int
        Number of ranks.
    method : {"contiguous", "strided", "metis"}, default "contiguous"
        As for :func:`owners`.
    seed : int, default 0
        As for :func:`owners`.

    Returns
    -------
    Distribution

    Raises
    ------
    ValueError
        As :func:`owners`.
    """
    if method == "contiguous":  # block offsets, no owner array
        n = A if isinstance(A, (int, np.integer)) else A.shape[0]
        _check(n, nranks)
        return Distribution.contiguous(int(n), int(nranks))
    return Distribution.from_owners(owners(A, nranks, method, seed), int(nranks))
