"""The virtual world: every rank's pattern, plan and statistics built in
one process, without MPI, from the global matrix and a topology."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from . import _core
from .stats import CommStats

__all__ = ["halo_patterns", "plans", "plan_stats", "record_stats", "spgemm_record_stats", "galerkin_record_stats",
           "transpose_record_stats"]


def halo_patterns(A, row_dist, col_dist=None, progress=None):
    """Halo pattern of every rank of ``A`` distributed by ``row_dist`` (columns by
    ``col_dist``, default the same).

    Parameters
    ----------
    A : scipy sparse matrix or 2-D array
        The global matrix.
    row_dist : Distribution
        Which rank owns each row.
    col_dist : Distribution, optional
        Which rank owns each column; default ``row_dist``.
    progress : callable, optional
        ``progress(k)`` is called after each rank (``k``: the ranks done so far).

    Returns
    -------
    list of HaloPattern
        Indexed by rank.

    Raises
    ------
    ValueError
        When ``col_dist`` covers another number of columns than ``A`` has.
    """
    A = sp.csr_matrix(A)
    col_dist = row_dist if col_dist is None else col_dist
    if A.shape[1] != col_dist.global_size:
        raise ValueError(f"matrix has {A.shape[1]} columns, column distribution covers {col_dist.global_size}")
    idx = np.int32 if A.indptr.dtype == np.int32 and A.indices.dtype == np.int32 else np.int64
    return _core.virtual_halo_patterns(
        np.ascontiguousarray(A.indptr, dtype=idx), np.ascontiguousarray(A.indices, dtype=idx),
        row_dist, col_dist, progress,
    )


def plans(A, row_dist, col_dist=None, strategy="standard", topology=None, progress=None):
    """The CommPlan of every rank for ``strategy``.

    Parameters
    ----------
    A : scipy sparse matrix or 2-D array
        The global matrix.
    row_dist : Distribution
        Which rank owns each row.
    col_dist : Distribution, optional
        Which rank owns each column; default ``row_dist``.
    strategy : str, default "standard"
        ``standard``, ``node-aware``, ``node-aware-2step`` or ``auto``.
    topology : Topology, optional
        Places the ranks on nodes (default: one rank per node); node-aware strategies
        depend on it.
    progress : callable, optional
        As for :func:`halo_patterns`.

    Returns
    -------
    list of CommPlan
        Indexed by rank.

    Raises
    ------
    ValueError
        When ``topology`` has another number of ranks than ``row_dist``, or as
        :func:`halo_patterns`.
    """
    col_dist = row_dist if col_dist is None else col_dist
    if topology is None:
        topology = _core.Topology.regular(row_dist.nranks, 1)
    if topology.size != row_dist.nranks:
        raise ValueError(f"topology has {topology.size} ranks, the distribution {row_dist.nranks}")
    patterns = halo_patterns(A, row_dist, col_dist, progress)
    return _core.build_plans_virtual(patterns, topology, col_dist, strategy)


def plan_stats(plan_list, topology):
    """Planned CommStats of every rank's plan.

    Parameters
    ----------
    plan_list : list of CommPlan
        Every rank's plan, indexed by rank (as :func:`plans` returns them).
    topology : Topology
        The ranks' node layout (intra-node or inter-node counts).

    Returns
    -------
    list of CommStats
        Indexed by rank.

    Raises
    ------
    ValueError
        When ``topology`` has another number of ranks than there are plans.
    """
    if topology.size != len(plan_list):
        raise ValueError(f"topology has {topology.size} ranks, there are {len(plan_list)} plans")
    return [CommStats(p.stats_array(topology)) for p in plan_list]


ROW_ENTRY_BYTES = 16  # one (int64 column, float64 value) pair of a sparse row


def record_stats(plan_list, topology, lengths, unit_bytes=ROW_ENTRY_BYTES, reverse=False):
    """Planned CommStats of every rank moving variable-length records along its plan.

    Parameters
    ----------
    plan_list : list of CommPlan
        Every rank's plan, indexed by rank.
    topology : Topology
        The ranks' node layout.
    lengths : sequence of array_like of int
        ``lengths[r]``: forward, the record length (in units of ``unit_bytes``) of each
        entry rank r owns; reverse, the length of each of its halo entries. For the rows of
        B in a product A B, ``lengths[r]`` is the number of nonzeros of each of B's rows on
        rank r.
    unit_bytes : int, default 16
        Bytes per unit of length (:data:`ROW_ENTRY_BYTES`: one int64 column and float64
        value pair of a sparse row).
    reverse : bool, default False
        Move the records along the plans in reverse (halo entries to their owners).

    Returns
    -------
    list of CommStats
        Indexed by rank.

    Raises
    ------
    ValueError
        When ``topology`` has another number of ranks than there are plans.
    """
    if topology.size != len(plan_list):
        raise ValueError(f"topology has {topology.size} ranks, there are {len(plan_list)} plans")
    lengths = [np.ascontiguousarray(v, dtype=np.int64) for v in lengths]
    arr = _core.record_stats_virtual(list(plan_list), topology, lengths, int(unit_bytes), bool(reverse))
    return [CommStats(a) for a in arr]


def spgemm_record_stats(A, B, row_dist, b_row_dist, topology, strategy):
    """Planned CommStats, per rank, of fetching B's rows for the product A B: every rank's
    plan for A's halo, each of B's rows a record of its nonzeros.

    Parameters
    ----------
    A, B : scipy sparse matrix or 2-D array
        The global factors.
    row_dist : Distribution
        A's rows.
    b_row_dist : Distribution
        B's rows (and A's columns).
    topology : Topology
        The ranks' node layout.
    strategy : str
        The plans' strategy, as for :func:`plans`.

    Returns
    -------
    list of CommStats
        Indexed by rank.
    """
    A, B = sp.csr_matrix(A), sp.csr_matrix(B)
    plan_list = plans(A, row_dist, b_row_dist, strategy=strategy, topology=topology)
    lengths = [B[b_row_dist.owned(r)].getnnz(axis=1) for r in range(topology.size)]
    return record_stats(plan_list, topology, lengths)


def galerkin_record_stats(A, P, row_dist, coarse_dist, topology, strategy, rap_strategy=None):
    """Planned CommStats, per rank, of the two exchanges of the Galerkin product P^T A P.

    The lengths of the partial rows are counted structurally, ``|P_r|^T |A P|_r`` on each
    rank r's rows: the distributed product keeps entries of A P that cancel to zero, so
    which rows travel does not hang on rounding.

    Parameters
    ----------
    A, P : scipy sparse matrix or 2-D array
        The global operator and interpolation.
    row_dist : Distribution
        A's rows and columns, and P's rows.
    coarse_dist : Distribution
        P's columns (the coarse rows).
    topology : Topology
        The ranks' node layout.
    strategy : str
        The plans' strategy, as for :func:`plans`.
    rap_strategy : str, optional
        The strategy of the second exchange, if given (default: ``strategy``).

    Returns
    -------
    ap, rap : list of CommStats
        Indexed by rank: the rows of P fetched for A P, and the partial rows of P^T (A P)
        sent back to the owners of their coarse rows.
    """
    A, P = sp.csr_matrix(A), sp.csr_matrix(P)
    ap = spgemm_record_stats(A, P, row_dist, row_dist, topology, strategy)
    APs = abs(A) @ abs(P)
    patterns = halo_patterns(P, row_dist, coarse_dist)
    lengths = []
    for r in range(topology.size):
        rows = row_dist.owned(r)
        partial = abs(P[rows]).T.tocsr() @ APs[rows]
        lengths.append(partial.getnnz(axis=1)[patterns[r].halo_globals])
    plan_list = _core.build_plans_virtual(patterns, topology, coarse_dist, rap_strategy or strategy)
    return ap, record_stats(plan_list, topology, lengths, reverse=True)


def transpose_record_stats(A, row_dist, col_dist, topology, strategy):
    """Planned CommStats, per rank, of forming A^T's rows (:func:`commsolve.products.transpose_rows`):
    each rank's entries in each halo column travel as one record to the column's owner,
    along the plan for A's halo in reverse.

    Parameters
    ----------
    A : scipy sparse matrix or 2-D array
        The global matrix.
    row_dist, col_dist : Distribution
        A's rows and columns.
    topology : Topology
        The ranks' node layout.
    strategy : str
        The plans' strategy, as for :func:`plans`.

    Returns
    -------
    list of CommStats
        Indexed by rank.
    """
    A = sp.csr_matrix(A)
    patterns = halo_patterns(A, row_dist, col_dist)
    lengths = [A[row_dist.owned(r)].getnnz(axis=0)[patterns[r].halo_globals] for r in range(topology.size)]
    plan_list = _core.build_plans_virtual(patterns, topology, col_dist, strategy)
    return record_stats(plan_list, topology, lengths, reverse=True)
