"""Aggressive coarsening for classical AMG (hypre BoomerAMG's ``agg_num_levels``; Stueben
2001, section A.7): a level's coarse grid is chosen twice. A first PMIS or HMIS split of the
strength graph S gives the points C1; a second split over C1 alone, on the graph of
distance-two strength (i in C1 depends on j in C1 when S has a path of length one or two
from i to j: hypre's second strength with one path), keeps the coarse points C2, about a
quarter of C1 in 2D. Interpolation onto C2 is multipass (Stueben's; hypre's
``agg_interp_type`` 4, its default, normalizes the later passes' rows differently where
the neighbours' rows do not sum to one, near Dirichlet boundaries): points that strongly
depend on a C2 point interpolate directly from those (pass 1); points that strongly depend
on a pass-1 point interpolate through the interpolation rows of those (pass 2), and so on,
each pass one distributed product with the rows assigned so far.

Every step is collective and built on the library's distributed pieces: the distance-two
graph is one product S_C (I + S) Inj (S's rows of C1 times the local (I + S) Inj, Inj the
injection onto C1), the second split is :func:`commsolve.amg.classical.pmis` on that graph
(a C1 point with no neighbour there stays coarse, as in hypre's second stage), each
multipass pass from the second on a product :func:`commsolve.products.spgemm`. With PMIS
both splits hash the points' fine-grid identities, so the coarse grid does not depend on the
partition; HMIS makes it depend on it.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .. import products
from .._collective import mpi
from . import classical

__all__ = ["second_split", "passes", "multipass_interpolation", "MAX_PASSES"]

MAX_PASSES = 10  # hypre's: points not reached within 10 passes keep an empty interpolation row


def _parcsr(local, A, row_dist, col_dist, strategy):
    """Collective. The ParCSR of this rank's rows ``local`` (global columns), on A's
    communicator and topology."""
    from ..parcsr import ParCSR

    return ParCSR.from_local_rows(local, A.comm, row_dist=row_dist, col_dist=col_dist, topology=A.topology,
                                  strategy=strategy)


def _local_columns(L, strong, cfull):
    """Local. L's entries as their rows and column positions, and three masks over them: the
    off-diagonal entries, the strong dependencies (off-diagonal ``strong`` entries), and
    those on coarse points (``cfull >= 0``)."""
    rows, cols = classical._rows(L), L.indices
    off = rows != cols
    edges = strong & off
    return rows, cols, off, edges, edges & (cfull[cols] >= 0)


def second_split(A, L, strong, state, cfull, coarse, ids, *, seed, strategy, coarsening, exchanges):
    """Collective. The second split over the first split's coarse points.

    The dependencies through paths of length one or two are one product,
    ``S_C (I + S) Inj``: ``S_C`` the strength graph's rows of the first coarse points,
    ``Inj`` the injection onto them (so ``(I + S) Inj`` is local: each row's strong coarse
    neighbours, and itself if coarse).

    Parameters
    ----------
    A : ParCSR
        The level's operator.
    L : scipy.sparse.csr_matrix
        A's local block (:meth:`~commsolve.ParCSR.local_block`).
    strong : ndarray of bool
        The strong entries of ``L`` (:func:`~commsolve.amg.classical.strength`).
    state : ndarray
        The first split (:func:`~commsolve.amg.classical.pmis`).
    cfull : ndarray of int
        Its numbering over L's columns (:func:`~commsolve.amg.classical.coarse_numbering`).
    coarse : Distribution
        The first split's coarse Distribution (the same call).
    ids : ndarray of int
        The rank's points' fine-grid identities.
    seed : int
        Seed of the second split's hashed weights.
    strategy : str
        The halo plans' and the product's exchange strategy.
    coarsening : {"pmis", "hmis"}
        The second split's coarsening.
    exchanges : list
        The product's exchange is appended to it.

    Returns
    -------
    ndarray
        The state of the rank's rows: +1 (coarse) only where both splits chose the point,
        -1 elsewhere.
    """
    n = L.shape[0]
    rows, cols, _, edges, to_coarse = _local_columns(L, strong, cfull)
    kept = state == classical.C
    gcols = A.global_columns()
    own = np.flatnonzero(kept)
    near = sp.csr_matrix((np.ones(int(to_coarse.sum()) + own.size),
                          (np.concatenate([rows[to_coarse], own]),
                           np.concatenate([cfull[cols[to_coarse]], cfull[own]]))), shape=(n, coarse.global_size))
    take = edges & kept[rows]
    SC = sp.csr_matrix((np.ones(int(take.sum())), (rows[take], gcols[cols[take]])), shape=(n, A.shape[1]))
    G, info = products.spgemm(_parcsr(SC, A, A.row_dist, A.col_dist, strategy),
                              _parcsr(near, A, A.row_dist, coarse, strategy), strategy=strategy, return_info=True)
    exchanges += info["exchanges"]
    G = G.local_matrix()[kept].tocoo()
    mine = cfull[own]
    path = G.col != mine[G.row]  # a path back to the point itself is no dependency
    # the graph as a matrix with a unit diagonal and every off-diagonal entry strong
    M = sp.csr_matrix((np.concatenate([np.ones(own.size), np.full(int(path.sum()), -1.0)]),
                       (np.concatenate([np.arange(own.size), G.row[path]]), np.concatenate([mine, G.col[path]]))),
                      shape=(own.size, coarse.global_size))
    M = _parcsr(M, A, coarse, coarse, strategy)
    LM = M.local_block()
    strong2 = classical._rows(LM) != LM.indices
    graphs = classical.strength_graphs(M, LM, strong2, strategy)
    second = classical.pmis(M, LM, strong2, ids[kept], seed=seed, strategy=strategy, coarsening=coarsening,
                            graphs=graphs)
    # a first coarse point with no second-split neighbour either way stays coarse (as hypre's
    # second stage): nothing else would interpolate it
    alone = np.diff(graphs[1].local_block().indptr) == 0
    final = np.full(n, classical.F)
    final[own[(second == classical.C) | alone]] = classical.C
    return final


def passes(A, rows, cols, edges, state):
    """Collective. Each of the rank's rows' multipass pass.

    0 for coarse points, k for a point that strongly depends on a point of pass k - 1 and on
    none of an earlier pass, -1 for a point no pass reaches (within :data:`MAX_PASSES`).

    Parameters
    ----------
    A : ParCSR
        The level's operator (its halo exchange brings the neighbours' passes).
    rows, cols : ndarray of int
        A's local block L's entries as their rows and column positions
        (``_local_columns`` gives them).
    edges : ndarray of bool
        The strong dependencies among those entries (off-diagonal strong entries).
    state : ndarray
        The split: +1 coarse, -1 fine.

    Returns
    -------
    which : ndarray of int
        The pass of each of the rank's rows.
    full : ndarray of int
        The same over L's whole column space (owned, then halo).
    """
    which = np.where(state == classical.C, 0.0, -1.0)
    for k in range(1, MAX_PASSES + 2):
        full = np.concatenate([which, A.exchange(which)])
        if k > MAX_PASSES:
            break
        reached = np.zeros(which.size, dtype=bool)
        reached[rows[edges & (full[cols] == k - 1)]] = True
        reached &= which == -1
        which[reached] = k
        if A.comm.allreduce(int(reached.sum()), op=mpi().SUM) == 0:
            break
    return which.astype(np.int64), full.astype(np.int64)


def multipass_interpolation(A, L, strong, state, cfull, coarse, *, strategy, exchanges):
    """Collective. The rank's rows of the multipass interpolation onto the coarse points
    of ``state``.

    A coarse point interpolates from itself. A point i of pass k (:func:`passes`), with J_i
    its strong dependencies of pass k - 1 (the coarse points for pass 1), interpolates
    through their rows: P_i = -(sum_{j != i} a_ij) / (a_ii sum_{j in J_i} a_ij) sum_{j in
    J_i} a_ij P_j (Stueben 2001, A.7: the couplings outside J_i lumped onto J_i in
    proportion). Rows no pass reaches, or whose J_i couplings sum to zero, stay empty.

    Parameters
    ----------
    A : ParCSR
        The level's operator.
    L : scipy.sparse.csr_matrix
        A's local block (:meth:`~commsolve.ParCSR.local_block`).
    strong : ndarray of bool
        The strong entries of ``L`` (:func:`~commsolve.amg.classical.strength`).
    state : ndarray
        The split: +1 coarse, -1 fine.
    cfull : ndarray of int
        The coarse points' numbering over L's columns
        (:func:`~commsolve.amg.classical.coarse_numbering`).
    coarse : Distribution
        The coarse Distribution.
    strategy : str
        The products' exchange strategy.
    exchanges : list
        The products' exchanges are appended to it.

    Returns
    -------
    scipy.sparse.csr_matrix
        The rank's rows of P, over global coarse columns.
    """
    n = L.shape[0]
    rows, cols, off, edges, _ = _local_columns(L, strong, cfull)
    outside = np.bincount(rows[off], weights=L.data[off], minlength=n)  # sum_{j != i} a_ij
    diag = classical._diagonal(L)
    which, full = passes(A, rows, cols, edges, state)
    gcols = A.global_columns()
    own = np.flatnonzero(state == classical.C)
    P = sp.csr_matrix((np.ones(own.size), (own, cfull[own])), shape=(n, coarse.global_size))  # unit rows
    for k in range(1, int(A.comm.allreduce(int(which.max(initial=0)), op=mpi().MAX)) + 1):
        take = edges & (which[rows] == k) & (full[cols] == k - 1)  # a_ij, j in J_i, of the pass-k rows
        if k == 1:  # a_ic over the strong coarse neighbours: local
            W = sp.csr_matrix((L.data[take], (rows[take], cfull[cols[take]])), shape=P.shape)
        else:  # through the rows of P assigned so far: one product
            M = sp.csr_matrix((L.data[take], (rows[take], gcols[cols[take]])), shape=(n, A.shape[1]))
            W, info = products.spgemm(_parcsr(M, A, A.row_dist, A.col_dist, strategy),
                                      _parcsr(P, A, A.row_dist, coarse, strategy),
                                      strategy=strategy, return_info=True)
            exchanges += info["exchanges"]
            W = W.local_matrix()
        total = np.bincount(rows[take], weights=L.data[take], minlength=n)  # sum_{j in J_i} a_ij
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where((which == k) & (total != 0), -outside / (diag * total), 0.0)
        P = (P + sp.diags(scale) @ W).tocsr()
        P.eliminate_zeros()  # the rows the next product fetches: entries only
    return P
