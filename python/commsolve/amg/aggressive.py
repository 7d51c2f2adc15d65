"""Aggressive coarsening for classical AMG (hypre BoomerAMG's ``agg_num_levels``; Stueben
2001, section A.7): a level's coarse grid is chosen twice. A first PMIS or HMIS split of the
strength graph S gives the points C1; a second split over C1 alone, on the graph of
distance-two strength (i in C1 depends on j in C1 when S has a path of length one or two
from i to j: hypre's second strength with one path), keeps the coarse points C2, about a
quarter of C1 in 2D. Interpolation onto C2 is multipass (hypre's ``agg_interp_type`` 4, its
default): points that strongly depend on a C2 point interpolate directly from those (pass
1); points that strongly depend on a pass-1 point interpolate through the interpolation
rows of those (pass 2), and so on, each pass one distributed product with the rows
assigned so far.

Every step is collective and built on the library's distributed pieces: the distance-two
graph is S (S Inj) + S Inj (two products with the injection onto C1), the second split is
:func:`commsolve.amg.classical.pmis` on that graph, each multipass pass a product
:func:`commsolve.products.spgemm`. With PMIS both splits hash the points' fine-grid
identities, so the coarse grid does not depend on the partition; HMIS makes it depend on it.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .. import products
from .._collective import mpi
from . import classical

__all__ = ["second_split", "multipass_interpolation", "MAX_PASSES"]

MAX_PASSES = 10  # hypre's: points not reached within 10 passes keep an empty interpolation row


def _parcsr(local, A, row_dist, col_dist, strategy):
    """Collective. The ParCSR of this rank's rows ``local`` (global columns), on A's
    communicator and topology."""
    from ..parcsr import ParCSR

    return ParCSR.from_local_rows(local, A.comm, row_dist=row_dist, col_dist=col_dist, topology=A.topology,
                                  strategy=strategy)


def _injection(A, cfull, coarse, strategy):
    """Collective. The ParCSR that picks each coarse point's value: row i holds 1 in column
    cfull[i] (A's rows; columns ``coarse``'s)."""
    n = A.local_rows
    rows = np.flatnonzero(cfull[:n] >= 0)
    local = sp.csr_matrix((np.ones(rows.size), (rows, cfull[:n][rows])), shape=(n, coarse.global_size))
    return _parcsr(local, A, A.row_dist, coarse, strategy)


def second_split(A, graphs, state, cfull, coarse, ids, *, seed, strategy, coarsening, exchanges):
    """Collective. The second split over the first split's coarse points: the state of the
    rank's rows, +1 (coarse) only where both splits chose the point, -1 elsewhere.

    ``graphs``: A's strength graphs (:func:`classical.strength_graphs`: S has ones where a
    row strongly depends on a column); ``state``, ``cfull``, ``coarse``: the first split
    (:func:`classical.pmis`) and its numbering (:func:`classical.coarse_numbering`);
    ``ids``: the rank's points' fine-grid identities. The products' exchanges are appended
    to ``exchanges``."""
    S = graphs[0]
    inj = _injection(A, cfull, coarse, strategy)
    one, info1 = products.spgemm(S, inj, strategy=strategy, return_info=True)  # paths of length 1 into C1
    two, info2 = products.spgemm(S, one, strategy=strategy, return_info=True)  # and of length 2
    exchanges += info1["exchanges"] + info2["exchanges"]
    kept = state == classical.C
    G = (one.local_matrix() + two.local_matrix()).tocsr()[kept].tocoo()
    own = cfull[: A.local_rows][kept]
    path = G.col != own[G.row]  # a path back to the point itself is no dependency
    # the graph as a matrix with a unit diagonal and every off-diagonal entry strong
    nk = int(kept.sum())
    M = sp.csr_matrix((np.concatenate([np.ones(nk), np.full(int(path.sum()), -1.0)]),
                       (np.concatenate([np.arange(nk), G.row[path]]), np.concatenate([own, G.col[path]]))),
                      shape=(nk, coarse.global_size))
    M = _parcsr(M, A, coarse, coarse, strategy)
    L = M.local_block()
    strong = np.repeat(np.arange(L.shape[0]), np.diff(L.indptr)) != L.indices
    second = classical.pmis(M, L, strong, ids[kept], seed=seed, strategy=strategy, coarsening=coarsening)
    final = np.full(A.local_rows, classical.F)
    final[np.flatnonzero(kept)[second == classical.C]] = classical.C
    return final


def passes(A, L, strong, state):
    """Collective. Each of the rank's rows' multipass pass: 0 for coarse points, k for a
    point that strongly depends on a point of pass k - 1 and on none of an earlier pass, -1
    for a point no pass reaches (within :data:`MAX_PASSES`)."""
    n = L.shape[0]
    rows, cols = np.repeat(np.arange(n), np.diff(L.indptr)), L.indices
    edges = strong & (rows != cols)
    which = np.where(state == classical.C, 0.0, -1.0)
    for k in range(1, MAX_PASSES + 1):
        full = np.concatenate([which, A.exchange(which)])
        reached = np.zeros(n, dtype=bool)
        reached[rows[edges & (full[cols] == k - 1)]] = True
        reached &= which == -1
        which[reached] = k
        if A.comm.allreduce(int(reached.sum()), op=mpi().SUM) == 0:
            break
    return which.astype(np.int64)


def multipass_interpolation(A, L, strong, state, cfull, coarse, *, strategy, exchanges):
    """Collective. The rank's rows of the multipass interpolation onto the coarse points
    of ``state`` (numbered ``cfull``, distributed ``coarse``), as scipy CSR over global
    coarse columns.

    A coarse point interpolates from itself. A point of pass k (:func:`passes`) gathers
    w_i = sum_j a_ij P_j over its strong neighbours j of pass k - 1 (P_j the unit row of a
    coarse point in pass 1), then scales it so P's row sum is what the whole row of A asks:
    P_i = -(sum_{j != i} a_ij) / (a_ii sum_c w_ic) w_i (Stueben's multipass; hypre's). Rows
    no pass reaches, or whose weights sum to zero, stay empty. The products' exchanges are
    appended to ``exchanges``."""
    n = L.shape[0]
    rows, cols = np.repeat(np.arange(n), np.diff(L.indptr)), L.indices
    off = rows != cols
    diag = L.diagonal()[:n]
    outside = np.bincount(rows[off], weights=L.data[off], minlength=n)  # sum_{j != i} a_ij
    which = passes(A, L, strong, state)
    full = np.concatenate([which, A.exchange(which.astype(np.float64)).astype(np.int64)])
    gcols = A.global_columns()
    P = _injection(A, cfull, coarse, strategy).local_matrix()
    for k in range(1, int(A.comm.allreduce(int(which.max(initial=0)), op=mpi().MAX)) + 1):
        take = strong & off & (which[rows] == k) & (full[cols] == k - 1)
        M = sp.csr_matrix((L.data[take], (rows[take], gcols[cols[take]])), shape=(n, A.shape[1]))
        W, info = products.spgemm(_parcsr(M, A, A.row_dist, A.col_dist, strategy),
                                  _parcsr(P, A, A.row_dist, coarse, strategy),
                                  strategy=strategy, return_info=True)
        exchanges += info["exchanges"]
        W = W.local_matrix()
        total = np.asarray(W.sum(axis=1)).ravel()
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where((which == k) & (total != 0), -outside / (diag * total), 0.0)
        P = (P + sp.diags(scale) @ W).tocsr()
    P.eliminate_zeros()
    return P
