"""The virtual world (DESIGN.md rule 2): every rank's pattern, plan and statistics built in
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
    ``col_dist``, default the same). ``progress(k)`` is called after each rank."""
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
    """The CommPlan of every rank (list indexed by rank) for ``strategy`` (``standard``,
    ``node-aware``, ``node-aware-2step`` or ``auto``). ``topology`` (default: one rank per
    node) places the ranks on nodes; node-aware strategies depend on it."""
    col_dist = row_dist if col_dist is None else col_dist
    if topology is None:
        topology = _core.Topology.regular(row_dist.nranks, 1)
    if topology.size != row_dist.nranks:
        raise ValueError(f"topology has {topology.size} ranks, the distribution {row_dist.nranks}")
    patterns = halo_patterns(A, row_dist, col_dist, progress)
    return _core.build_plans_virtual(patterns, topology, col_dist, strategy)


def plan_stats(plan_list, topology):
    """Planned CommStats of every rank's plan."""
    if topology.size != len(plan_list):
        raise ValueError(f"topology has {topology.size} ranks, there are {len(plan_list)} plans")
    return [CommStats(p.stats_array(topology)) for p in plan_list]


ROW_ENTRY_BYTES = 16  # one (int64 column, float64 value) pair of a sparse row


def record_stats(plan_list, topology, lengths, unit_bytes=ROW_ENTRY_BYTES, reverse=False):
    """Planned CommStats of every rank moving variable-length records along its plan: forward
    from ``lengths[r]``, the record length (in units of ``unit_bytes``) of each entry rank r
    owns; reverse from the length of each of its halo entries. For the rows of B in a product
    A B, ``lengths[r]`` is the number of nonzeros of each of B's rows on rank r."""
    if topology.size != len(plan_list):
        raise ValueError(f"topology has {topology.size} ranks, there are {len(plan_list)} plans")
    lengths = [np.ascontiguousarray(v, dtype=np.int64) for v in lengths]
    arr = _core.record_stats_virtual(list(plan_list), topology, lengths, int(unit_bytes), bool(reverse))
    return [CommStats(a) for a in arr]


def spgemm_record_stats(A, B, row_dist, b_row_dist, topology, strategy):
    """Planned CommStats, per rank, of fetching B's rows for the product A B (A's rows by
    ``row_dist``, B's by ``b_row_dist``): every rank's plan for A's halo, each of B's rows
    a record of its nonzeros."""
    A, B = sp.csr_matrix(A), sp.csr_matrix(B)
    plan_list = plans(A, row_dist, b_row_dist, strategy=strategy, topology=topology)
    lengths = [B[b_row_dist.owned(r)].getnnz(axis=1) for r in range(topology.size)]
    return record_stats(plan_list, topology, lengths)


def galerkin_record_stats(A, P, row_dist, coarse_dist, topology, strategy, rap_strategy=None):
    """Planned CommStats, per rank, of the two exchanges of the Galerkin product P^T A P:
    (the rows of P fetched for A P, the partial rows of P^T (A P) sent back to the owners of
    their coarse rows, the latter with ``rap_strategy`` if given). The lengths of the partial
    rows are counted structurally, |P_r|^T |A P|_r on each rank r's rows: the distributed
    product keeps entries of A P that cancel to zero, so which rows travel does not hang on
    rounding."""
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
    along the plan for A's halo in reverse."""
    A = sp.csr_matrix(A)
    patterns = halo_patterns(A, row_dist, col_dist)
    lengths = [A[row_dist.owned(r)].getnnz(axis=0)[patterns[r].halo_globals] for r in range(topology.size)]
    plan_list = _core.build_plans_virtual(patterns, topology, col_dist, strategy)
    return record_stats(plan_list, topology, lengths, reverse=True)
