"""The distributed factorization's Python side (the numeric work is C++'s
``direct/factor3d.hpp`` and ``direct/factor_grid.hpp``): A's entries go from the ranks that
own its rows straight to the rank that factors their block (on the lowest grid sharing the
block's supernode, block (I, J) on layer rank (I mod px, J mod py)), then every rank of every
grid factors: right-looking supernodal LU inside each grid, pending updates reduced between
grids level by level, factored ancestors broadcast back. The factors never pass through
one rank; each rank ends holding its blocks as the solve reads them."""

from __future__ import annotations

import time

import numpy as np

from .. import _core
from .._collective import agree, mpi
from ..stats import CommStats

__all__ = ["FACTOR_STEPS", "XY_FACTOR_STEPS", "Z_FACTOR_STEPS", "entries_to_grids", "factor_on_grids",
           "planned_factor_stats"]

# The steps of the factorization's CommStats (C++ FactorStep): A's entries to the ranks that
# factor them, the broadcasts inside the grids (L panels along process rows, U rows down
# process columns, the diagonal owner's with its inverse triangle), the inter-grid reduction
# of ancestor updates, the ancestor broadcast.
FACTOR_STEPS = ("entries to grids", "XY L panels", "XY U rows", "Z reduce (updates)", "ancestor broadcast")
XY_FACTOR_STEPS, Z_FACTOR_STEPS = (1, 2), (3, 4)
_ENTRY = np.dtype([("i", np.int32), ("j", np.int32), ("v", np.float64)])


def _lowest_grid(forest, pz):
    """The lowest grid sharing each forest (heap index f at depth d = floor(log2(f + 1))):
    ((f + 1) << (log2 pz - d)) - pz, as ForestPartition::lowest_grid."""
    f = np.asarray(forest, dtype=np.int64) + 1
    depth = np.frexp(f.astype(np.float64))[1].astype(np.int64) - 1  # exact for integers
    return (f << (int(pz).bit_length() - 1 - depth)) - pz


def _destinations(ki, kj, structure, forests, grid):
    """The rank that factors entry (ki, kj) of the permuted matrix: in the layer of the lowest
    grid sharing the forest of supernode min(I, J), the owner (I mod px, J mod py) of its
    block (I, J), I and J the supernodes of row ki and column kj."""
    px, py, pz = grid
    si, sj = structure.sn_of[ki], structure.sn_of[kj]
    layer = _lowest_grid(np.asarray(forests), pz)[np.minimum(si, sj)]
    return layer * (px * py) + (si % px) * py + sj % py


def _inverse(order):
    inv = np.empty(len(order), dtype=np.int64)
    inv[np.asarray(order)] = np.arange(len(order))
    return inv


def _stats_row(counts_to, counts_from, rank, topo, entry_bytes):
    """(8,) counts of one step: messages to and from every other rank with entries."""
    row = np.zeros(8, dtype=np.int64)
    for peer, (out, inn) in enumerate(zip(counts_to, counts_from)):
        if peer == rank:
            continue
        where = 0 if topo.same_node(rank, peer) else 1
        if out:
            row[where] += 1
            row[2 + where] += entry_bytes * int(out)
        if inn:
            row[4 + where] += 1
            row[6 + where] += entry_bytes * int(inn)
    return row


def planned_factor_stats(A_global, row_owner, pivoting, row_order, col_order, structure, forests, grid, topo,
                         tree=("binary", 0, 8)):
    """Every rank's planned CommStats of the factorization (:data:`FACTOR_STEPS`), from the
    whole matrix (on one rank) and the owner of each of its rows: the entries' step from
    the pattern, the others from the structure (C++ factor_3d_planned) with the broadcast
    trees ``tree`` = (shape, seed, flat_threshold)."""
    px, py, pz = grid
    coo = A_global.tocoo()
    nonzero = coo.data != 0  # stored zeros do not travel (the symbolic pattern may lack them)
    rows, cols = coo.row[nonzero], coo.col[nonzero]
    dest = _destinations(_inverse(row_order)[rows], _inverse(col_order)[cols], structure, forests, grid)
    size = px * py * pz
    counts = np.bincount(np.asarray(row_owner)[rows] * size + dest, minlength=size * size).reshape(size, size)
    out = np.asarray(_core.factor_3d_planned(*structure.core_arrays(), np.asarray(forests, dtype=np.int32), px, py,
                                             pz, topo, *tree)).copy()
    for r in range(size):
        out[r, 0] = _stats_row(counts[r], counts[:, r], r, topo, _ENTRY.itemsize)
    return [CommStats(a) for a in out]


def entries_to_grids(A, pivoting, row_order, col_order, structure, forests, grid, topo):
    """Collective on ``A.comm`` (``A`` a ParCSR). This rank's entries of the permuted,
    scaled matrix sent to the ranks that factor their blocks (one MPI_Alltoallv of (row,
    column, value) records): ``(entries received as (i, j, v) arrays, the step's recorded
    (8,) counts)``."""
    MPI = mpi()
    comm = A.comm
    local_rows, cols, vals = A.local_triples()
    nonzero = vals != 0  # stored zeros do not travel (the symbolic pattern may lack them)
    local_rows, cols, vals = local_rows[nonzero], cols[nonzero], vals[nonzero]
    rows = np.asarray(A.owned_rows())[local_rows]
    entries = np.empty(rows.size, dtype=_ENTRY)
    entries["i"] = _inverse(row_order)[rows]
    entries["j"] = _inverse(col_order)[cols]
    entries["v"] = pivoting.row_scale[rows] * vals * pivoting.col_scale[cols]
    dest = _destinations(entries["i"], entries["j"], structure, forests, grid)
    send = np.bincount(dest, minlength=comm.size).astype(np.int64)
    targets = np.flatnonzero(send)
    if targets.size > 1:  # grouped by destination
        entries = entries[np.argsort(dest, kind="stable")]
    recv = np.asarray(comm.alltoall(send.tolist()), dtype=np.int64)
    got = np.empty(int(recv.sum()), dtype=_ENTRY)
    # MPI counts and displacements are ints, in records here (16 bytes each)
    limit = np.iinfo(np.int32).max
    agree(comm, None if max(send.sum(), recv.sum()) <= limit else
          f"the 3D factorization: more than {limit} entries to move on one rank (use more ranks)")
    record = MPI.BYTE.Create_contiguous(_ENTRY.itemsize).Commit()
    try:
        comm.Alltoallv([entries.view(np.uint8), send, np.concatenate([[0], np.cumsum(send)[:-1]]), record],
                       [got.view(np.uint8), recv, np.concatenate([[0], np.cumsum(recv)[:-1]]), record])
    finally:
        record.Free()
    triples = tuple(np.ascontiguousarray(got[k]) for k in ("i", "j", "v"))
    return triples, _stats_row(send, recv, comm.rank, topo, _ENTRY.itemsize)


def factor_on_grids(A, pivoting, row_order, col_order, structure, forests, grid, topo, anorm, zero_pivot,
                    replace_tiny, tree=("binary", 0, 8), send_window=0):
    """Collective on ``A.comm`` (``A`` a ParCSR): :func:`entries_to_grids`, then the C++
    factorization with broadcast trees ``tree`` = (shape, seed, flat_threshold) and at most
    ``send_window`` messages per rank handed to MPI at once (0: the default). Returns
    ``(store, recorded, seconds, replaced, flops)``: this rank's blocks (a
    ``_core.BlockStore``, for ``_core.TriSolve``), its recorded CommStats, the seconds of
    ``redistribute`` (entries to the ranks and added into their blocks), ``allocate`` (the
    factors' memory) and ``numeric`` (factoring and the grids' messages; slowest rank each),
    and the tiny pivots replaced and floating-point operations summed over the ranks. A zero
    pivot anywhere is a ValueError on every rank, with the message of the rank where it
    happened."""
    MPI = mpi()
    comm = A.comm
    px, py, pz = grid
    t0 = time.perf_counter()
    triples, entries_row = entries_to_grids(A, pivoting, row_order, col_order, structure, forests, grid, topo)
    redistribute_s = time.perf_counter() - t0
    store, info = _core.factor_3d(
        comm.py2f(), topo, px, py, pz, *structure.core_arrays(), np.asarray(forests, dtype=np.int32), *triples,
        float(anorm), float(zero_pivot), bool(replace_tiny), *tree, int(send_window))
    del triples
    if comm.allreduce(0 if info["ok"] else 1, op=MPI.MAX):
        # the rank where it started has the message; the others only know that one failed
        errors = [e for e in comm.allgather(info["error"]) if e]
        raise ValueError(errors[0] if errors else "the distributed factorization failed on another rank")
    recorded = np.asarray(info["recorded"]).copy()
    recorded[0] = entries_row
    seconds = {k: comm.allreduce(v, op=MPI.MAX) for k, v in
               (("redistribute", redistribute_s + info["arrange_seconds"]), ("allocate", info["allocate_seconds"]),
                ("numeric", info["numeric_seconds"]))}
    replaced = comm.allreduce(int(info["replaced"]), op=MPI.SUM)
    flops = comm.allreduce(float(info["flops"]), op=MPI.SUM)
    return store, CommStats(recorded), seconds, replaced, flops
