"""Smoothed aggregation, distributed (Vanek, Mandel, Brezina 1996; the parallel MIS-2
aggregation of Bell, Dalton, Olson 2012 / Tuminaro's ML): symmetric strength of
connection, aggregates grown around the points of a distance-2 maximal independent set and
of the points it leaves (MueLu's phase 2a), the tentative prolongator fitted to the level's
near-null-space candidate (the constant on the finest level), and one damped-Jacobi
smoothing step P = (I - omega / rho D^-1 A) P0 through the distributed SpGEMM.

As in the classical module, every decision depends only on global indices and values (the
MIS-2 weights and the spectral-radius start vector are hashed from global indices), so the
hierarchy is the same on any number of ranks.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .. import _core, products
from .._collective import mpi
from ..boxes import BoxGrid
from .classical import C, _rows, coarse_numbering, hash_uniform, strength_graphs

__all__ = ["symmetric_strength", "mis2_aggregates", "tentative_prolongator", "smoothed_prolongator"]


def symmetric_strength(A, L, theta):
    """Collective (the halo's diagonal travels). The symmetric strength of connection.

    ``a_ij`` (``i != j``) is strong when ``|a_ij| >= theta sqrt(|a_ii a_jj|)`` (pyamg's
    'symmetric' measure; theta = 0: every off-diagonal nonzero).

    Parameters
    ----------
    A : ParCSR
        The level's operator (its halo exchange brings the neighbours' diagonal).
    L : scipy.sparse.csr_matrix
        A's local block (:meth:`~commsolve.ParCSR.local_block`).
    theta : float
        The strength threshold.

    Returns
    -------
    ndarray of bool
        A mask over the entries of the local block ``L``: its strong entries.
    """
    n = L.shape[0]
    d = np.abs(L.diagonal()[:n])
    dfull = np.concatenate([d, A.exchange(d)])
    rows = _rows(L)
    off = L.indices != rows
    return off & (np.abs(L.data) >= theta * np.sqrt(d[rows] * dfull[L.indices])) & (L.data != 0)


# A point left out of the first aggregates starts one of its own when at least this many of
# its neighbours are also left out (MueLu's phase 2a). The distance-2 independent set alone,
# chosen in random order, leaves too few roots: coarse levels coarsen 15-25x where pyamg's
# natural-order greedy aggregation coarsens about 9x. Measured on one rank (b = 1, CG to
# 1e-8, hybrid Gauss-Seidel), iterations and operator complexity without the phase / with
# 4 / with 3 / with 2: poisson2d:1000 35, 1.33 / 23, 1.36 / 23, 1.44 / 21, 1.56;
# poisson3d:60 16, 1.43 / 11, 1.68 / 11, 1.81 / 11, 1.99; the rotated anisotropic
# aniso2d:400 182, 1.11 / 132, 1.20 / 126, 1.23 / 119, 1.27.
MIN_LEFT_NEIGHBOURS = 4


def mis2_aggregates(A, L, strong, ids, seed=0, strategy="standard"):
    """Collective. Aggregates of the rank's points.

    Roots: a distance-2 maximal independent set of the strength graph S + S^T, chosen in
    rounds (an undecided point whose weight is the largest among the undecided points within
    distance 2 becomes a root; every point within distance 2 of a root leaves the race).
    A point next to roots joins the heaviest of them. Among the points left, those with at
    least ``MIN_LEFT_NEIGHBOURS`` neighbours left become roots of their own aggregates, in
    rounds: a candidate heavier than every candidate within distance 2 through left-over
    points becomes a root and takes its left-over neighbours (so the new aggregates are
    disjoint); the rest stay candidates while they keep enough left-over neighbours.
    A point still left joins the aggregate of its heaviest neighbour that has joined one.
    Points without strong neighbours join none (their rows of P0 are zero, as pyamg's).
    Weights are hashed from the points' identities ``ids`` (the fine-grid indices they
    descend from).

    Parameters
    ----------
    A : ParCSR
        The level's operator.
    L : scipy.sparse.csr_matrix
        A's local block (:meth:`~commsolve.ParCSR.local_block`).
    strong : ndarray of bool
        The strong entries of ``L`` (:func:`symmetric_strength`).
    ids : ndarray of int
        The points' identities (the fine-grid indices they descend from).
    seed : int
        Seed of the hashed weights.
    strategy : str
        The halo plans' strategy of the strength graphs.

    Returns
    -------
    agg : ndarray of int
        Each owned point's global coarse index (the numbering of the aggregates' roots), -1
        for a point in no aggregate.
    coarse : Distribution
        The coarse Distribution.
    roots : ndarray of bool
        Which owned points are roots.

    Raises
    ------
    RuntimeError
        If aggregation left a connected point without an aggregate (distance-2 maximality
        violated: a bug, not a bad input).
    """
    _, G, _ = strength_graphs(A, L, strong, strategy)
    Gl = G.local_block()
    grow, gcol = _rows(Gl), Gl.indices
    n = L.shape[0]
    w = hash_uniform(ids, seed)
    isolated = np.diff(Gl.indptr) == 0
    kind = _core.aggregate_roots(G._core, w, MIN_LEFT_NEIGHBOURS, A.comm.py2f())  # the rounds, in C++
    first, roots = kind == _core.FIRST_ROOT, kind != _core.NOT_ROOT
    cfull, coarse = coarse_numbering(A, np.where(roots, 1.0, -1.0))
    # Pass 1: the heaviest root among the neighbours (first roots before later ones);
    # pass 2: the heaviest assigned neighbour.
    agg = np.where(roots, cfull[:n], -1).astype(np.int64)
    wfull = np.concatenate([w + first, G.exchange(w + first)])
    for _ in range(2):
        afull = np.concatenate([agg, G.exchange(agg.astype(float)).astype(np.int64)])
        cand = (agg[grow] < 0) & (afull[gcol] >= 0)
        best = np.full(n, -1.0)
        np.maximum.at(best, grow[cand], wfull[gcol[cand]])
        pick = cand & (wfull[gcol] == best[grow])
        agg[grow[pick]] = afull[gcol[pick]]
    if np.any((agg < 0) & ~isolated):
        raise RuntimeError("aggregation left connected points without an aggregate (distance-2 maximality "
                           "violated)")
    return agg, coarse, roots


def geometric_aggregates(A, grid):
    """Collective. Cell-centred 2 x 2 x 2 aggregation of a structured ``grid``.

    The roots must be numbered in the coarse grid's own order on every rank.

    Parameters
    ----------
    A : ParCSR
        The level's operator, one row per cell.
    grid : tuple of int or BoxGrid
        ``(nx, ny, nz)`` with rows numbered x fastest (as :mod:`commsolve.gallery` numbers
        cells) and split contiguously, or a :class:`commsolve.boxes.BoxGrid` (rows numbered
        box by box).

    Returns
    -------
    agg : ndarray of int
        Each owned cell's aggregate (its coarse global index, in the coarse grid's own
        numbering).
    coarse : Distribution
        The coarse Distribution.
    roots : ndarray of bool
        Which owned cells are roots (the aggregate's first cell: x, y, z even).
    coarse_grid : tuple of int or BoxGrid
        The coarse grid (extents halved, rounded up; a dimension of 1 stays 1; a BoxGrid's
        cuts halved with them, so each aggregate stays in its first cell's box).

    Raises
    ------
    ValueError
        When the grid's cells are not the matrix's rows, a BoxGrid's rows per rank differ
        from the matrix's, or the roots are not numbered in the coarse grid's order
        (lexicographic rows split other than contiguously).
    """
    boxed = isinstance(grid, BoxGrid)
    nx, ny, nz = (int(v) for v in (grid.extents if boxed else grid))
    if nx * ny * nz != A.shape[0] or min(nx, ny, nz) < 1:
        raise ValueError(f"geometric aggregation: a {nx} x {ny} x {nz} grid has {nx * ny * nz} cells, the matrix "
                         f"{A.shape[0]} rows")
    if boxed and not (A.row_dist.is_contiguous and np.array_equal(grid.offsets(), np.asarray(A.row_dist.offsets))):
        raise ValueError(f"geometric aggregation: the {grid!r}'s rows per rank differ from the matrix's")
    g = A.owned_rows()
    if boxed:
        x, y, z = grid.coords(g)
        coarse_grid = grid.coarser()
        agg = coarse_grid.index(x // 2, y // 2, z // 2)
    else:
        coarse_grid = tuple(-(-v // 2) for v in (nx, ny, nz))
        cx, cy, _ = coarse_grid
        x, y, z = g % nx, (g // nx) % ny, g // (nx * ny)
        agg = (x // 2 + (y // 2) * cx + (z // 2) * cx * cy).astype(np.int64)
    roots = (x % 2 == 0) & (y % 2 == 0) & (z % 2 == 0)
    cfull, coarse = coarse_numbering(A, np.where(roots, C, -1))
    ordered = (boxed or not np.any(np.diff(g) != 1)) and np.array_equal(cfull[: g.size][roots], agg[roots])
    if not A.comm.allreduce(ordered, op=mpi().MIN):
        raise ValueError("geometric aggregation needs each rank's rows consecutive, in rank order "
                         "(partition='contiguous'), or a BoxGrid")
    return agg, coarse, roots, coarse_grid


def tentative_prolongator(A, agg, coarse, candidate):
    """Collective. The tentative prolongator P0 and the coarse level's candidate.

    The near-null-space vector ``candidate`` (B) restricted to each aggregate and
    normalised, ``P0[i, agg(i)] = B_i / ||B on agg(i)||``, and the coarse candidate
    ``||B on the aggregate||`` per coarse point this rank owns (pyamg's fit_candidates with
    one candidate: ``P0 B_c = B``, so the coarse level's near-null space is ``B_c``, not the
    constant); zero rows for points in no aggregate (``agg < 0``).

    Parameters
    ----------
    A : ParCSR
        The level's operator (its distributions, communicator and topology).
    agg : ndarray of int
        Each owned point's aggregate (global coarse index; -1: none), as
        :func:`mis2_aggregates` returns it.
    coarse : Distribution
        The coarse Distribution.
    candidate : ndarray
        The near-null-space vector, this rank's entries (the constant on the finest level).

    Returns
    -------
    P0 : scipy.sparse.csr_matrix
        This rank's rows of P0, global coarse columns.
    norms : ndarray
        The coarse candidate: this rank's entries.
    """
    from ..parcsr import ParCSR

    n = agg.size
    member = np.flatnonzero(agg >= 0)
    ones = sp.csr_matrix((np.ones(member.size), (member, agg[member])), shape=(n, coarse.global_size))
    P1 = ParCSR.from_local_rows(ones, A.comm, row_dist=A.row_dist, col_dist=coarse, topology=A.topology)
    norms = np.sqrt(P1.rmatvec(candidate * candidate))  # at the roots' owners
    nfull = np.concatenate([norms, P1.exchange(norms)])
    Lb = P1.local_block()
    # One entry per member row, in row order: B_i over its aggregate's norm, owned or halo.
    P0 = sp.csr_matrix((candidate[member] / nfull[Lb.indices], agg[member], Lb.indptr), shape=ones.shape)
    return P0, norms


def smoothed_prolongator(A, L, P0, coarse, rho, omega=4.0 / 3.0, strategy="standard"):
    """Collective. The smoothed prolongator ``P = (I - omega / rho D^-1 A) P0``, with
    ``A P0`` by the distributed SpGEMM.

    Parameters
    ----------
    A : ParCSR
        The level's operator.
    L : scipy.sparse.csr_matrix
        A's local block (:meth:`~commsolve.ParCSR.local_block`): its diagonal is D.
    P0 : scipy.sparse.csr_matrix
        This rank's rows of the tentative prolongator, global coarse columns
        (:func:`tentative_prolongator`).
    coarse : Distribution
        The coarse Distribution.
    rho : float
        The spectral radius of ``D^-1 A``
        (:func:`~commsolve.amg.spectrum.spectral_radius_dinv_a`).
    omega : float
        The Jacobi weight of the smoothing times ``rho`` (the step is ``omega / rho``).
    strategy : str
        The exchange strategy of the product ``A P0``.

    Returns
    -------
    scipy.sparse.csr_matrix
        This rank's rows of P, global coarse columns.
    """
    from ..parcsr import ParCSR

    P0p = ParCSR.from_local_rows(P0, A.comm, row_dist=A.row_dist, col_dist=coarse, topology=A.topology)
    d = L.diagonal()[: A.local_rows]
    AP0 = products.spgemm(A, P0p, strategy=strategy).local_matrix()
    return sp.csr_matrix(P0 - sp.diags((omega / rho) / d) @ AP0)
