"""Classical (Ruge-Stueben) coarsening, distributed: strength of connection, PMIS or HMIS
C/F splitting, direct and extended+i interpolation, each on the rank's own rows with halo
exchanges for what neighbours own (hypre BoomerAMG's algorithms; De Sterck, Yang, Heys 2006 for PMIS).

With PMIS every decision depends only on global indices and values, never on the
partition: its random weights are a hash of (seed, global index), so the hierarchy on any
number of ranks is the one on one rank. HMIS starts PMIS from a Ruge-Stueben pass over each
rank's own points, so its split depends on the partition.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .. import _core
from .._collective import agree

__all__ = ["strength", "strength_graphs", "pmis", "check_coarsening", "coarse_numbering",
           "extended_i_interpolation", "classical_level", "truncate", "hash_uniform"]

U, C, F = _core.PMIS_UNDECIDED, _core.PMIS_COARSE, _core.PMIS_FINE  # point states (floats: they travel)
COARSENINGS = ("pmis", "hmis")


def hash_uniform(globals_, seed):
    """Local. A number in [0, 1) per global index, the same on every rank (splitmix64; C++,
    the function the C++ level pipeline draws its weights with).

    Parameters
    ----------
    globals_ : array_like of int
        The global indices.
    seed : int
        The hash's seed.

    Returns
    -------
    ndarray of float64
        One number in [0, 1) per index.
    """
    return _core.hash_uniform(np.ascontiguousarray(globals_, dtype=np.int64), int(seed))


def _rows(L):
    return np.repeat(np.arange(L.shape[0]), np.diff(L.indptr))


def _csr_arrays(L):
    """L's arrays as the C++ kernels take them (int32 indices, float64 values; no copy when
    they already are)."""
    i32 = lambda a: np.ascontiguousarray(a, dtype=np.int32)  # noqa: E731
    return i32(L.indptr), i32(L.indices), np.ascontiguousarray(L.data, dtype=np.float64)


def strength(L, theta):
    """Local. The classical strength of connection, in C++, row by row.

    ``a_ij`` is a strong connection of row i when ``-s a_ij >= theta max_k (-s a_ik)`` over
    ``k != i``, s the sign of ``a_ii`` (hypre's classical measure; pyamg's ``norm='min'``).
    Rows whose largest such value is not positive have no strong connections.

    Parameters
    ----------
    L : scipy.sparse.csr_matrix
        The local block (:meth:`~commsolve.ParCSR.local_block`).
    theta : float
        The strength threshold.

    Returns
    -------
    ndarray of bool
        A mask over the entries of ``L``: the strong connections.
    """
    return _core.classical_strength(*_csr_arrays(L), float(theta)).view(bool)


def strength_graphs(A, L, strong, strategy):
    """Collective. The strength graphs of a level, in C++.

    Parameters
    ----------
    A : ParCSR
        The level's operator.
    L : scipy.sparse.csr_matrix
        A's local block (:meth:`~commsolve.ParCSR.local_block`).
    strong : ndarray of bool
        The strong entries of ``L`` (:func:`strength`).
    strategy : str
        The halo plans' strategy of the two graphs.

    Returns
    -------
    S : ParCSR
        The strength matrix (the entries ``strong`` masks in L, ones), over A's
        distributions.
    G : ParCSR
        The pattern of ``S + S^T`` (a point's neighbours in either direction), over A's
        distributions.
    depends_on_me : ndarray
        ``|S^T_i|``: how many points depend on each of the rank's points (S^T's columns
        travel to their owners).
    """
    from ..parcsr import ParCSR

    S, G, depends_on_me = _core.strength_graphs(A._core, *_csr_arrays(L), np.ascontiguousarray(strong, dtype=np.uint8),
                                                strategy, A.comm.py2f())
    wrap = lambda core: ParCSR(core, A.comm, A.topology, A.row_dist, A.col_dist)  # noqa: E731
    return wrap(S), wrap(G), depends_on_me


def check_coarsening(name):
    """Local. Checks a coarsening's name.

    Parameters
    ----------
    name : str
        The coarsening.

    Raises
    ------
    ValueError
        Unless ``name`` is one of :data:`COARSENINGS`.
    """
    if name not in COARSENINGS:
        raise ValueError(f"unknown coarsening '{name}' (known: {', '.join(COARSENINGS)})")


def pmis(A, L, strong, ids, seed=0, strategy="standard", coarsening="pmis", graphs=None):
    """Collective. PMIS or HMIS C/F splitting of the rank's rows: +1 coarse, -1 fine.

    Weights ``w_i = |S^T_i| + hash(id_i)`` (how many points strongly depend on i, plus a random
    number drawn from the point's identity ``ids``, the fine-grid index it descends from:
    the same whatever the partition). Points nobody depends on start fine. Each round, an
    undecided point whose weight beats every undecided neighbour in S + S^T becomes coarse,
    and undecided points that strongly depend on a coarse point become fine; until none is
    undecided anywhere (the rounds in C++).

    ``coarsening="hmis"`` (De Sterck, Yang, Heys 2006; hypre's default): first a Ruge-Stueben
    first pass over each rank's own points, whose coarse points that depend on no other
    rank's point start the rounds as coarse. It coarsens like Ruge-Stueben inside a rank
    (better interpolation than PMIS's random choice, fewer iterations), but the split then
    depends on the partition.

    Parameters
    ----------
    A : ParCSR
        The level's operator.
    L : scipy.sparse.csr_matrix
        A's local block (:meth:`~commsolve.ParCSR.local_block`).
    strong : ndarray of bool
        The strong entries of ``L`` (:func:`strength`).
    ids : ndarray of int
        The points' identities (the fine-grid indices they descend from).
    seed : int
        Seed of the random part of the weights.
    strategy : str
        The halo plans' strategy of the strength graphs.
    coarsening : {"pmis", "hmis"}
        The splitting.
    graphs : tuple, optional
        :func:`strength_graphs`'s result for these arguments, when the caller has it.

    Returns
    -------
    ndarray
        The state of each of the rank's rows: +1 coarse, -1 fine.

    Raises
    ------
    ValueError
        For an unknown ``coarsening``.
    """
    check_coarsening(coarsening)
    S, G, depends_on_me = strength_graphs(A, L, strong, strategy) if graphs is None else graphs
    return _core.classical_split(G._core, S._core, depends_on_me, np.ascontiguousarray(ids, dtype=np.int64),
                                 int(seed), coarsening == "hmis", A.comm.py2f())


def coarse_numbering(A, state):
    """Collective. The coarse points' global numbering: each rank numbers its coarse points
    in local order after those of lower ranks.

    Parameters
    ----------
    A : ParCSR
        The level's operator.
    state : ndarray
        The split of the rank's rows (+1 coarse, -1 fine).

    Returns
    -------
    cfull : ndarray of int
        Global coarse index of every column-space entry (owned then halo; -1 for fine
        points).
    coarse : Distribution
        The coarse Distribution.
    """
    from ..partition import Distribution

    cfull, offsets = _core.coarse_numbering(A._core, np.ascontiguousarray(state, dtype=np.float64), A.comm.py2f())
    return cfull, Distribution.from_offsets(offsets)


def extended_i_interpolation(A, L, strong, cfull, coarse, trunc=0.0, pmax=0, strategy="standard"):
    """Collective. The extended+i interpolation, truncated as :func:`truncate` does when
    ``trunc`` or ``pmax`` asks (C++ end to end; the rows of A held by off-process strong fine
    neighbours travel along A's halo plan).

    Parameters
    ----------
    A : ParCSR
        The level's operator.
    L : scipy.sparse.csr_matrix
        A's local block (:meth:`~commsolve.ParCSR.local_block`).
    strong : ndarray of bool
        The strong entries of ``L`` (:func:`strength`).
    cfull : ndarray of int
        The coarse numbering over L's columns (:func:`coarse_numbering`).
    coarse : Distribution
        The coarse Distribution.
    trunc : float
        The truncation factor (:func:`truncate`'s ``factor``; 0: none).
    pmax : int
        The most entries per row (:func:`truncate`'s ``max_elements``; 0: no limit).
    strategy : str
        The halo plan's strategy of P.

    Returns
    -------
    ParCSR
        P: rows as A's, columns the coarse Distribution ``coarse``.
    """
    from ..parcsr import ParCSR

    indptr, indices, data = _core.extended_i_interpolation(
        A._core, *_csr_arrays(L), np.ascontiguousarray(strong, dtype=np.uint8), A.global_columns(),
        np.ascontiguousarray(cfull, dtype=np.int64), float(trunc), int(pmax), A.comm.py2f())
    return ParCSR._from_rows(indptr, indices, data, A.comm, row_dist=A.row_dist, col_dist=coarse,
                             topology=A.topology, strategy=strategy)


def classical_level(A, ids, *, theta, coarsening, seed, trunc, pmax, strategy, product_strategy, spmv_strategy,
                    interpolation="ext+i", aggressive=False, profile=None):
    """Collective. One level of the classical setup in one C++ call.

    :func:`strength`, :func:`pmis`, :func:`coarse_numbering`,
    :func:`extended_i_interpolation` and :func:`commsolve.galerkin`, with no level data
    passing through numpy in between; the same hierarchy as those functions called one by
    one. Direct interpolation (pyamg's and hypre's simplest) may replace extended+i: a fine
    point interpolates from its strong coarse neighbours alone, ``P_ij = -alpha a_ij /
    a_ii`` for ``a_ij < 0`` and ``-beta a_ij / a_ii`` for ``a_ij > 0``, alpha and beta
    scaling the strong coarse sums to the whole row's (without positive strong coarse
    entries the positive ones are lumped into the diagonal). An aggressive level (hypre's
    ``agg_num_levels``; Stueben 2001, A.7) splits twice and interpolates by multipass
    instead: a second PMIS or HMIS split over the first split's coarse points, on the graph
    of distance-two strength (one product S_C (I + S) Inj), then the multipass passes (pass
    1 from the strong coarse neighbours, each later pass one product through the rows
    assigned so far; hypre's ``agg_interp_type`` 4, which normalizes the later passes
    differently near Dirichlet boundaries), untruncated, as hypre's default. With PMIS both
    splits hash the fine-grid identities, so the coarse grid does not depend on the
    partition; HMIS makes it depend on it.

    Parameters
    ----------
    A : ParCSR
        The level's operator, its rows and columns distributed alike.
    ids : ndarray of int
        One identity per row (the fine-grid index it descends from): the weights are drawn
        from them.
    theta : float
        The strength threshold (:func:`strength`).
    coarsening : {"pmis", "hmis"}
        The splitting (:func:`pmis`).
    seed : int
        Seed of the weights.
    trunc : float
        P's truncation factor (:func:`truncate`).
    pmax : int
        The most entries per row of P (:func:`truncate`; 0: no limit).
    strategy : str
        The halo plans of the strength graphs and P.
    product_strategy : str
        The Galerkin product's exchanges.
    spmv_strategy : str
        The coarse operator's (``"auto"`` priced with ``profile``).
    interpolation : {"ext+i", "direct"}
        The interpolation of a level that is not aggressive.
    aggressive : bool
        A second split and multipass interpolation (``interpolation``, ``trunc`` and
        ``pmax`` unused).
    profile : MachineProfile, str or path, optional
        The machine profile that prices ``spmv_strategy="auto"``.

    Returns
    -------
    state : ndarray
        The split of the rank's rows (+1 coarse, -1 fine).
    coarse : Distribution
        The coarse Distribution.
    P : ParCSR or None
        The interpolation; None when the split does not coarsen.
    Ac : ParCSR or None
        The coarse operator; None when the split does not coarsen.
    exchanges : list of dict or None
        The Galerkin product's exchanges as :func:`commsolve.galerkin` reports them, then
        (aggressive) the second split's product's and each multipass pass's from the second
        on, as :func:`commsolve.spgemm` reports them; None when the split does not coarsen.
    times : dict
        This rank's seconds per step: strength, graphs, split (both splits), interpolation,
        galerkin.

    Raises
    ------
    ValueError
        For an unknown ``coarsening``.
    CollectiveError
        On every rank, unless every rank has one id per row and its rows and columns are
        distributed alike.
    """
    from .. import products
    from ..parcsr import ParCSR
    from ..partition import Distribution

    check_coarsening(coarsening)
    agree(A.comm, None if len(ids) == A.local_rows == A.local_cols else
          f"classical_level: {len(ids)} ids for {A.local_rows} rows and {A.local_cols} columns on rank "
          f"{A.comm.rank} (one id per row; rows and columns distributed alike)")
    times, state, offsets, P, Ac, plan_ap, stats_ap, plan_rap, stats_rap, setup = _core.classical_level(
        A._core, np.ascontiguousarray(ids, dtype=np.int64), float(theta), coarsening == "hmis", int(seed),
        float(trunc), int(pmax), interpolation == "direct", bool(aggressive), strategy, product_strategy,
        ParCSR._core_strategy(spmv_strategy, profile), A.comm.py2f())
    coarse = Distribution.from_offsets(offsets)
    if P is None:
        return state, coarse, None, None, None, times
    P = ParCSR(P, A.comm, A.topology, A.row_dist, coarse)
    Ac = ParCSR(Ac, A.comm, A.topology, coarse, coarse)._resolved(spmv_strategy, profile)
    exchanges = [products._exchange("A P", plan_ap, stats_ap, A.col_map),
                 products._exchange("P^T (A P)", plan_rap, stats_rap, P.col_map)]
    exchanges += [products._exchange(*exchange) for exchange in setup]
    return state, coarse, P, Ac, exchanges, times


def truncate(P, factor=0.0, max_elements=0):
    """Local. Truncates the rows of an interpolation (hypre's trunc_factor and
    P_max_elmts), in C++, row by row.

    Drops the entries of each row below ``factor`` times its largest magnitude, then all
    but its ``max_elements`` largest and any equal to the last of these, and rescales what
    is kept so the row sum stays. Entries that tie at the limit are kept together, where
    hypre keeps some of them: on the 2D and 3D Laplacians a subset chosen by column order
    makes interpolation lopsided and costs up to half again the iterations.

    Parameters
    ----------
    P : scipy sparse matrix
        The rows to truncate.
    factor : float
        Entries below this times the row's largest magnitude are dropped.
    max_elements : int
        The most entries kept per row, more where entries tie at the limit (0: no limit).

    Returns
    -------
    scipy.sparse.csr_matrix
        The truncated rows, of P's shape.
    """
    P = sp.csr_matrix(P)
    indptr = P.indptr.astype(np.int64)
    indices = P.indices.astype(np.int64)
    data = np.array(P.data, dtype=np.float64)
    nnz = _core.truncate_rows(indptr, indices, data, float(factor), int(max_elements))
    return sp.csr_matrix((data[:nnz], indices[:nnz], indptr), shape=P.shape)
