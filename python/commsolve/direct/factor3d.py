"""The distributed factorization's Python side (the work is C++'s ``direct/factor3d.hpp``,
``direct/entry_move.hpp`` and ``direct/factor_grid.hpp``): each rank's entries of the
permuted, scaled matrix go by a plan straight to the rank that factors their block (on the
lowest grid sharing the block's supernode, block (I, J) on layer rank (I mod px, J mod py)),
then every rank of every grid factors: right-looking supernodal LU inside each grid, pending
updates reduced between grids level by level, factored ancestors broadcast back. The
factors never pass through one rank; each rank ends holding its blocks as the solve reads
them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _core
from .._collective import mpi
from ..stats import CommStats
from ..trees import tree_shape

__all__ = ["FACTOR_STEPS", "XY_FACTOR_STEPS", "Z_FACTOR_STEPS", "GridFactorization", "local_entries",
           "factor_on_grids", "planned_factor_stats", "planned_factor_stats_here"]

# The steps of the factorization's CommStats (C++ FactorStep): A's entries to the ranks that
# factor them, the broadcasts inside the grids (L panels along process rows, U rows down
# process columns, the diagonal owner's with its inverse triangle), the inter-grid reduction
# of ancestor updates, the ancestor broadcast.
FACTOR_STEPS = ("entries to grids", "XY L panels", "XY U rows", "Z reduce (updates)", "ancestor broadcast")
XY_FACTOR_STEPS, Z_FACTOR_STEPS = (1, 2), (3, 4)
ENTRY_BYTES = _core.entry_bytes  # an entry travels as two values: its row and column packed into one, and its value


@dataclass
class GridFactorization:
    """What the factorization on the grids reports on one rank: its ``recorded`` CommStats
    (steps :data:`FACTOR_STEPS`, counted as MPI moved them), the ``seconds`` of
    ``redistribute`` (entries to the ranks and added into their blocks), ``allocate`` and
    ``numeric`` (slowest rank each), and the tiny pivots ``replaced`` and floating-point
    operations ``flops`` summed over the ranks.

    Each parameter is kept as the attribute of the same name.

    Parameters
    ----------
    recorded : CommStats
        This rank's, steps :data:`FACTOR_STEPS`, counted as MPI moved them.
    seconds : dict
        ``redistribute`` (entries to the ranks and added into their blocks), ``allocate`` and
        ``numeric``, the slowest rank's each.
    replaced : int
        Tiny pivots replaced, summed over the ranks.
    flops : float
        Floating-point operations, summed over the ranks.
    """

    recorded: CommStats
    seconds: dict
    replaced: int
    flops: float


def _inverse(order):
    inv = np.empty(len(order), dtype=np.int64)
    inv[np.asarray(order)] = np.arange(len(order))
    return inv


def local_entries(A, pivoting, row_order, col_order):
    """Local. This rank's entries of the permuted, scaled matrix (stored zeros left out: the
    symbolic pattern may lack them).

    Parameters
    ----------
    A : ParCSR
        The matrix.
    pivoting : StaticPivoting
        Its static pivoting (the scales are applied here).
    row_order, col_order : ndarray of int
        The factor's orders: factor row k reads A's row ``row_order[k]``, factor column k is
        A's column ``col_order[k]``.

    Returns
    -------
    rows, cols : ndarray of int32
        Each entry's row and column in the factored matrix.
    vals : ndarray of float64
        Each entry's scaled value.
    """
    M = A.local_matrix()
    return _core.permuted_entries(A.shape[0], M.indptr.astype(np.int64), M.indices.astype(np.int32, copy=False),
                                  M.data.astype(np.float64, copy=False),
                                  np.asarray(A.owned_rows(), dtype=np.int64), np.asarray(row_order, dtype=np.int32),
                                  np.asarray(col_order, dtype=np.int32),
                                  np.asarray(pivoting.row_scale, dtype=np.float64),
                                  np.asarray(pivoting.col_scale, dtype=np.float64))


def _stats_row(counts_to, counts_from, rank, topo):
    """(8,) counts of one step: messages to and from every other rank with entries."""
    row = np.zeros(8, dtype=np.int64)
    for peer, (out, inn) in enumerate(zip(counts_to, counts_from)):
        if peer == rank:
            continue
        where = 0 if topo.same_node(rank, peer) else 1
        if out:
            row[where] += 1
            row[2 + where] += ENTRY_BYTES * int(out)
        if inn:
            row[4 + where] += 1
            row[6 + where] += ENTRY_BYTES * int(inn)
    return row


def planned_factor_stats(A_global, row_owner, pivoting, row_order, col_order, layout, topo, tree=None):
    """Local. Every rank's planned CommStats of the factorization on ``layout``, steps
    :data:`FACTOR_STEPS`, counted from the whole matrix (on one rank) and the owner of each of
    its rows: the entries' step from the pattern (each entry to
    ``_core.entry_destinations``), the others from the structure (C++ ``factor_3d_planned``).

    Parameters
    ----------
    A_global : scipy sparse matrix
        The whole matrix (stored zeros are not counted).
    row_owner : array_like of int
        The rank that owns each of its rows.
    pivoting : StaticPivoting
        Its static pivoting (not read: the counts need only the pattern and the orders).
    row_order, col_order : ndarray of int
        The factor's orders, as for :func:`local_entries`.
    layout : SolveLayout
        The layout factored on.
    topo : Topology
        Which ranks share a node.
    tree : TreeShape or str, optional
        The broadcast trees (a TreeShape or a shape name; default: C++'s).

    Returns
    -------
    list of CommStats
        Every rank's, in rank order.
    """
    coo = A_global.tocoo()
    nonzero = coo.data != 0
    rows, cols = coo.row[nonzero], coo.col[nonzero]
    dest = np.asarray(_core.entry_destinations(layout, _inverse(row_order)[rows].astype(np.int32),
                                               _inverse(col_order)[cols].astype(np.int32)), dtype=np.int64)
    size = layout.grid.size
    counts = np.bincount(np.asarray(row_owner)[rows] * size + dest, minlength=size * size).reshape(size, size)
    out = np.asarray(_core.factor_3d_planned(layout, topo, tree_shape(tree))).copy()
    for r in range(size):
        out[r, 0] = _stats_row(counts[r], counts[:, r], r, topo)
    return [CommStats(a) for a in out]


def planned_factor_stats_here(comm, entries, layout, topo, tree=None):
    """Collective on ``comm``. This rank's planned CommStats of the factorization, as
    :func:`planned_factor_stats` counts them for every rank, but from this rank's own
    ``entries`` (the receive counts by one all-to-all of counts) and its own schedules: no
    rank needs the whole matrix, and the layout may hold this rank's share of the structure.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        The communicator of the grid's ranks.
    entries : tuple of ndarray
        What :func:`local_entries` returns.
    layout : SolveLayout
        The layout factored on.
    topo : Topology
        Which ranks share a node.
    tree : TreeShape or str, optional
        The broadcast trees, as for :func:`planned_factor_stats`.

    Returns
    -------
    CommStats
        This rank's, steps :data:`FACTOR_STEPS`.
    """
    rows, cols, _ = entries
    size = layout.grid.size
    to = np.bincount(np.asarray(_core.entry_destinations(layout, rows, cols), dtype=np.int64), minlength=size)
    came = np.asarray(comm.alltoall([int(c) for c in to]), dtype=np.int64)
    mine = np.asarray(_core.factor_3d_planned_rank(layout, topo, tree_shape(tree), comm.rank)).copy()
    mine[0] = _stats_row(to, came, comm.rank, topo)
    return CommStats(mine)


def factor_on_grids(A, pivoting, row_order, col_order, layout, topo, anorm, zero_pivot, replace_tiny, tree=None,
                    send_window=0, entries=None):
    """Collective on ``A.comm``. This rank's entries (:func:`local_entries`) moved by their
    plan and factored on ``layout`` by C++.

    Parameters
    ----------
    A : ParCSR
        The matrix.
    pivoting : StaticPivoting
        Its static pivoting.
    row_order, col_order : ndarray of int
        The factor's orders, as for :func:`local_entries`.
    layout : SolveLayout
        The layout to factor on.
    topo : Topology
        Which ranks share a node.
    anorm : float
        ``||B||_1`` of the scaled, permuted matrix: the pivot thresholds' scale.
    zero_pivot : float
        As :class:`~commsolve.direct.SparseLU`'s.
    replace_tiny : bool
        As :class:`~commsolve.direct.SparseLU`'s.
    tree : TreeShape or str, optional
        The broadcast trees (default: C++'s).
    send_window : int
        At most this many messages per rank handed to MPI at once (0: the default).
    entries : tuple of ndarray, optional
        :func:`local_entries`'s result, if already at hand.

    Returns
    -------
    store : _core.BlockStore
        This rank's blocks, for ``_core.TriSolve``.
    report : GridFactorization
        What the factorization reports.

    Raises
    ------
    ValueError
        A zero pivot anywhere, on every rank, with the message of the rank where it happened.
    """
    MPI = mpi()
    comm = A.comm
    if entries is None:
        entries = local_entries(A, pivoting, row_order, col_order)
    store, info = _core.factor_3d(comm.py2f(), topo, layout, *entries,
                                  float(anorm), float(zero_pivot), bool(replace_tiny), tree_shape(tree),
                                  int(send_window))
    if comm.allreduce(0 if info["ok"] else 1, op=MPI.MAX):
        # the rank where it started has the message; the others only know that one failed
        errors = [e for e in comm.allgather(info["error"]) if e]
        raise ValueError(errors[0] if errors else "the distributed factorization failed on another rank")
    seconds = {k: comm.allreduce(v, op=MPI.MAX) for k, v in
               (("redistribute", info["move_seconds"] + info["arrange_seconds"]),
                ("allocate", info["allocate_seconds"]), ("numeric", info["numeric_seconds"]))}
    return store, GridFactorization(CommStats(np.asarray(info["recorded"]).copy()), seconds,
                                    comm.allreduce(int(info["replaced"]), op=MPI.SUM),
                                    comm.allreduce(float(info["flops"]), op=MPI.SUM))
