"""The AMG setup phase, distributed: level by level, strength, C/F splitting, interpolation
and the Galerkin product P^T A P (:func:`commsolve.galerkin`), each level's halo and product
exchanges run with the strategy chosen for that level (thesis Chapter 7's hybrid approach:
the coarse levels, with fewer rows and denser rows per rank, are where node-aware
communication pays)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .. import products
from .._collective import agree
from ..parcsr import ParCSR, check_strategy
from . import aggregation, classical
from . import sparsify as sparsifying
from .spectrum import spectral_radius_dinv_a

__all__ = ["Level", "build_hierarchy", "METHODS", "INTERPOLATIONS", "SETUP_DEFAULTS"]

METHODS = ("classical", "sa", "geometric")
INTERPOLATIONS = ("ext+i", "direct")
# hypre BoomerAMG's recommended parallel settings: PMIS-like coarsening with extended+i
# interpolation truncated to 4 entries per row (and those tied with the 4th); direct
# interpolation is pyamg's and hypre's simplest (no truncation by default).
SETUP_DEFAULTS = {"theta": None, "max_levels": 25, "max_coarse": 10, "coarsening": None, "interpolation": None,
                  "trunc": 0.0, "pmax": None, "prolongator_omega": 4.0 / 3.0, "seed": 0, "grid": None,
                  "aggressive": 0}
THETA = {"classical": 0.25, "sa": 0.0}  # hypre's and pyamg's defaults for each method
COARSEST_LIMIT = 20_000  # rows the coarsest level may have: it is gathered and factored on every rank


@dataclass
class Level:
    """One level of the hierarchy (plain data): its operator, the interpolation to it from
    the next coarser level (None on the coarsest), and what its communication costs."""

    A: object                      # ParCSR
    P: object = None               # ParCSR, rows as A's, columns the next level's
    strategy: str = "standard"     # the operator's halo-exchange strategy (SpMV, smoothing)
    product_strategy: str = ""     # the strategies of the exchanges that built the next operator (A P, P^T A P)
    exchanges: list = field(default_factory=list)  # the Galerkin product's two, then (aggressive) the
    #                                second split's and multipass's products, with recorded statistics
    ids: np.ndarray = None         # each of this rank's points' fine-grid index (its random weights' seed)
    c_points: np.ndarray = None    # this level's global indices of the rank's coarse points (classical)
    #                                or aggregate roots (sa), in coarse order
    candidate: np.ndarray = None   # sa: the near-null-space vector P0 fits (this rank's entries)
    rho: float = None              # sa: the estimated spectral radius of D^-1 A (also Chebyshev's)
    setup_s: float = 0.0
    setup_parts: dict = None       # this rank's seconds per step of the level built in one C++ call
    #                                (classical extended+i: strength, graphs, split, interpolation, galerkin)
    A_hat: object = None           # sparse/hybrid Galerkin: the sparsified copy of A that smoothing and
    #                                residuals use (A stays the Galerkin operator); None: A itself
    minimal: object = None         # sparse Galerkin: the minimal pattern's half A_hat was made with (scipy CSR)
    sparsified: dict = None        # what sparsification did to this level's operator (gamma, nnz and halo
    #                                statistics before and after), None if it was not sparsified
    coarse: np.ndarray = None      # mask over this level's rows: its coarse points (not on the coarsest)
    grid: object = None            # geometric: the structured grid of this level's rows, (nx, ny, nz) or a BoxGrid
    agglomerated: bool = False     # the last level, moved whole onto fewer ranks (the hierarchy goes on there)

    @property
    def solve_A(self):
        """The operator the V-cycle smooths with and takes residuals of."""
        return self.A if self.A_hat is None else self.A_hat

    @property
    def rows(self):
        """The operator's global rows."""
        return self.A.shape[0]

    def nnz(self):
        """Collective. The global nonzeros of the operator the cycle applies (:attr:`solve_A`).

        Returns
        -------
        int
            The global nonzeros.
        """
        return self.solve_A.global_nnz()

    def halo_stats(self):
        """Collective. One halo exchange of the operator the cycle applies, as planned (the
        MPI runs record exactly this, see the tests).

        Returns
        -------
        dict
            Max and mean over ranks (:func:`~commsolve.stats.summarize`).
        """
        return sparsifying.halo_summary(self.solve_A)


def _check_level(A, k):
    """Collective. Every rank's diagonal entries nonzero and every value finite, or a
    CollectiveError naming the level and the global row (a coarse level of an indefinite
    matrix can have a zero diagonal)."""
    zero, finite = A._core.check_diagonal()
    error = None
    if not finite:
        error = f"level {k}: the operator holds non-finite values"
    elif zero >= 0:
        error = (f"level {k}: row {int(A.owned_rows()[zero])} has a zero diagonal entry; AMG needs nonzero "
                 "diagonals (for CG, a symmetric positive definite matrix)")
    agree(A.comm, error, where="AMG setup")


def build_hierarchy(A, *, method="classical", strategy="auto", profile=None, progress=None, on_level=None,
                    sparsify=None, ids=None, candidate=None, agglomerate_below=None, **options):
    """Collective. The levels of a multigrid hierarchy for the ParCSR ``A``.

    Parameters
    ----------
    A : ParCSR
        The finest operator: square, its rows and columns distributed alike.
    method : {"classical", "sa", "geometric"}
        "classical" or "sa" (algebraic), or "geometric" (the cell-centred 2 x 2 x 2
        aggregation of the structured ``grid`` the matrix lives on ((nx, ny, nz) or a
        BoxGrid), piecewise-constant interpolation, Galerkin coarse operators: the geometric
        multigrid of Nakajima's MGCG; rows in global order across the ranks).
    strategy : str or list of str
        One name for every level, or a list (one per level, the last repeated).
    profile : MachineProfile, str or path, optional
        The machine profile that prices the strategy "auto".
    progress : callable, optional
        ``progress(k, rows)`` once coarse level ``k`` is formed, with its global rows.
    on_level : callable, optional
        ``on_level(level, L)`` is called once a level other than the coarsest is complete,
        with its operator's local block (collective if it is).
    sparsify : Sparsification, optional
        A :class:`~commsolve.amg.sparsify.Sparsification` (None: the plain Galerkin
        hierarchy).
    ids : ndarray of int, optional
        This rank's points' fine-grid indices; with ``candidate``, continues a hierarchy
        moved onto fewer ranks (by default those of a finest level: A's global rows).
    candidate : ndarray, optional
        Smoothed aggregation's near-null space, this rank's entries (by default that of a
        finest level: the constant).
    agglomerate_below : float, optional
        The hierarchy stops at the first level with fewer rows per rank than this, marked
        ``agglomerated`` (the caller moves it onto fewer ranks and goes on there,
        :mod:`commsolve.redistribute`).
    **options
        Options (``SETUP_DEFAULTS``): ``max_levels``, ``max_coarse`` (stop when a level has
        at most this many rows), ``seed`` (PMIS or MIS-2 weights), ``theta`` (strength
        threshold: classical 0.25, sa 0.0 by default); classical only: ``coarsening``
        ("pmis", the default: the same hierarchy on any partition, or "hmis": a
        Ruge-Stueben pass within each rank first, hypre's default), ``interpolation``
        ("ext+i", the default, or "direct"), ``trunc`` (truncation factor of P), ``pmax``
        (most entries per row of P, more only where entries tie at the limit; default 4 for
        ext+i, no limit for direct; 0: no limit), ``aggressive`` (how many of the finest
        levels are coarsened aggressively, :func:`commsolve.amg.classical.classical_level`:
        a second split and multipass interpolation there, whatever ``interpolation`` says,
        untruncated; default 0); sa only: ``prolongator_omega`` (the Jacobi weight of the
        prolongator smoothing times ``rho(D^-1 A)``: 4/3); geometric only: ``grid``.

    Returns
    -------
    list of Level
        The levels, finest first.

    Raises
    ------
    ValueError
        For an unknown method, option, coarsening or interpolation, an option of another
        method, a value out of range (``theta``, ``trunc``, ``pmax``, ``aggressive``,
        ``prolongator_omega``), a non-square A, or a coarsest level with more rows than can
        be gathered and factored whole on every rank (``max_levels`` reached, or coarsening
        stalled).
    CollectiveError
        On every rank, for an unknown strategy, rows and columns distributed differently, or
        a level with a zero diagonal entry or non-finite values.
    """
    if method not in METHODS:
        raise ValueError(f"unknown AMG method '{method}' (known: {', '.join(METHODS)})")
    unknown = set(options) - set(SETUP_DEFAULTS)
    if unknown:
        raise ValueError(f"unknown AMG option(s) {', '.join(sorted(unknown))} (known: {', '.join(SETUP_DEFAULTS)})")
    o = {**SETUP_DEFAULTS, **options}
    if (method == "geometric") != (o["grid"] is not None):
        raise ValueError("grid=(nx, ny, nz) is what geometric multigrid needs, and only it")
    if method != "classical" and (o["coarsening"] is not None or o["interpolation"] is not None or o["pmax"] is not None
                                  or o["trunc"] != 0 or o["aggressive"]):
        raise ValueError("coarsening, interpolation, pmax, trunc and aggressive are options of classical AMG; "
                         "smoothed aggregation smooths its tentative prolongator (prolongator_omega)")
    if isinstance(o["aggressive"], bool) or not isinstance(o["aggressive"], (int, np.integer)) or o["aggressive"] < 0:
        raise ValueError(f"aggressive (how many of the finest levels are coarsened aggressively) must be an "
                         f"integer >= 0, got {o['aggressive']!r}")
    if method != "sa" and o["prolongator_omega"] != SETUP_DEFAULTS["prolongator_omega"]:
        raise ValueError("prolongator_omega is an option of smoothed aggregation (method='sa')")
    o["interpolation"] = o["interpolation"] or "ext+i"
    o["coarsening"] = o["coarsening"] or "pmis"
    classical.check_coarsening(o["coarsening"])
    if o["interpolation"] not in INTERPOLATIONS:
        raise ValueError(f"unknown interpolation '{o['interpolation']}' (known: {', '.join(INTERPOLATIONS)})")
    pmax = (4 if o["interpolation"] == "ext+i" else 0) if o["pmax"] is None else int(o["pmax"])
    if pmax < 0 or not 0 <= o["trunc"] < 1:
        raise ValueError(f"pmax must be >= 0 and trunc in [0, 1), got {o['pmax']} and {o['trunc']}")
    if method == "geometric":
        if o["theta"] is not None:
            raise ValueError("theta (the strength of connection) is an option of the algebraic methods, not "
                             "geometric multigrid's")
    else:
        o["theta"] = THETA[method] if o["theta"] is None else o["theta"]
        if not (0 < o["theta"] < 1 or (method == "sa" and o["theta"] == 0)):
            raise ValueError(f"theta must lie in {'[0, 1)' if method == 'sa' else '(0, 1)'} for {method} AMG, "
                             f"got {o['theta']}")
    if not 0 < o["prolongator_omega"] < 2:
        raise ValueError(f"prolongator_omega must lie in (0, 2), got {o['prolongator_omega']}")
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"AMG needs a square matrix, got {A.shape[0]} x {A.shape[1]}")
    products._same_distribution(A.comm, A.row_dist, A.col_dist,
                                "AMG needs the matrix's rows and columns distributed alike (each rank's "
                                "diagonal block square)")
    per_level = list(strategy) if isinstance(strategy, (list, tuple)) else [strategy]
    for s in per_level:
        check_strategy(A.comm, s)

    levels = []
    current = A
    ids = A.owned_rows() if ids is None else ids
    candidate = np.ones(A.local_rows) if candidate is None else candidate  # sa's near-null space, this level's
    pending = {}  # what sparsifying the next level's operator made, for its Level
    strength_theta = o["theta"] if method == "classical" else THETA["classical"]  # strong-neighbour lumping's
    while True:
        t0 = time.perf_counter()
        k = len(levels)
        strat = per_level[min(k, len(per_level) - 1)]
        if k == 0 and strat != A.plan.strategy:  # coarse levels are built with their own strategy
            current = current.with_strategy(strat, profile)
        level = Level(current, strategy=current.plan.strategy, ids=ids,
                      candidate=candidate if method == "sa" else None, grid=o["grid"], **pending)
        pending = {}
        levels.append(level)
        last = current.shape[0] <= o["max_coarse"] or k + 1 >= o["max_levels"]
        if not last and agglomerate_below is not None and current.shape[0] < agglomerate_below * current.comm.size:
            level.agglomerated = last = True
        if last:
            _check_level(current, k)
            level.setup_s = time.perf_counter() - t0
            break
        _check_level(current, k)
        pipeline = method == "classical"  # a classical level is built in one C++ call
        L = None if pipeline else current.local_block()
        if level.A_hat is not None:
            _check_level(level.A_hat, k)
            L_hat = level.A_hat.local_block()
        setup_exchanges = []  # an aggressive level's products, beside the Galerkin product's
        if pipeline:
            state, coarse, P, Ac, exchanges, level.setup_parts = classical.classical_level(
                current, ids, theta=o["theta"], coarsening=o["coarsening"], seed=o["seed"], trunc=o["trunc"],
                pmax=pmax, strategy=level.strategy, product_strategy=strat,
                spmv_strategy=per_level[min(k + 1, len(per_level) - 1)], interpolation=o["interpolation"],
                aggressive=k < o["aggressive"], profile=profile)
            if exchanges is not None:
                exchanges, setup_exchanges = exchanges[:2], exchanges[2:]
            kept = state == classical.C
        elif method == "sa":
            strong = aggregation.symmetric_strength(current, L, o["theta"])
            agg, coarse, kept = aggregation.mis2_aggregates(current, L, strong, ids, seed=o["seed"],
                                                            strategy=level.strategy)
        else:
            agg, coarse, kept, o["grid"] = aggregation.geometric_aggregates(current, o["grid"])
        nc = coarse.global_size
        if nc == 0 or nc >= current.shape[0]:  # no coarsening possible: this is the coarsest level
            if level.A_hat is not None:  # sparse/hybrid: the coarsest is solved with the Galerkin A itself
                level.A_hat = level.minimal = level.sparsified = None
            level.setup_s = time.perf_counter() - t0
            break
        if not pipeline:  # smoothed aggregation and geometric: P's rows (scipy), then the Galerkin product
            if method == "sa":
                level.rho = spectral_radius_dinv_a(current, L.diagonal()[: current.local_rows], ids)
                P0, candidate = aggregation.tentative_prolongator(current, agg, coarse, candidate)
                Ploc = aggregation.smoothed_prolongator(current, L, P0, coarse, level.rho, o["prolongator_omega"],
                                                        strategy=strat)
            else:  # geometric, piecewise constant: each cell takes its aggregate's value
                Ploc = sp.csr_matrix((np.ones(agg.size), agg, np.arange(agg.size + 1)), shape=(agg.size, nc))
            P = ParCSR.from_local_rows(Ploc, current.comm, row_dist=current.row_dist, col_dist=coarse,
                                       topology=current.topology, strategy=level.strategy)
            Ac, info = products.galerkin(current, P, strategy=strat, return_info=True, profile=profile,
                                         spmv_strategy=per_level[min(k + 1, len(per_level) - 1)])
            exchanges = info["exchanges"]
        level.P, level.coarse = P, kept
        if sparsify is not None and sparsify.level_gamma(k + 1) > 0 and (
                not sparsify.keeps_galerkin or Ac.shape[0] > o["max_coarse"] and k + 2 < o["max_levels"]):
            Ac, pending = _sparsified_level(Ac, level, sparsify, sparsify.level_gamma(k + 1), strength_theta,
                                            per_level[min(k + 1, len(per_level) - 1)], profile)
        level.c_points = current.owned_rows()[kept]
        ids = ids[kept]  # coarse points are numbered in local order
        level.product_strategy = "/".join(e["strategy"] for e in exchanges)
        level.exchanges = exchanges + setup_exchanges
        level.setup_s = time.perf_counter() - t0
        if on_level:
            on_level(level, L if level.A_hat is None else L_hat)
        if progress:
            progress(k + 1, nc)
        current = Ac
    last = levels[-1]
    if not last.agglomerated and last.rows > max(o["max_coarse"], COARSEST_LIMIT):
        why = ("max_levels reached" if len(levels) >= o["max_levels"] else
               "coarsening stalled (too few strong connections: try another theta, or the other method)")
        raise ValueError(f"AMG setup: the coarsest level (level {len(levels) - 1}) has {last.rows:,} rows, more than "
                         f"the {COARSEST_LIMIT:,} that are gathered and factored whole on every rank: {why}")
    return levels



def resparsify(levels, k, sparsify, gamma, strength_theta=THETA["classical"], profile=None):
    """Collective. Level k's sparsified copy made again from its Galerkin operator with drop
    tolerance ``gamma`` (the adaptive solve puts entries back this way): its minimal pattern
    as the method makes it (sparse: from the Galerkin operator above, kept from the setup;
    hybrid: from the level above's sparsified copy as it is now)."""
    level, above = levels[k], levels[k - 1]
    minimal = level.minimal if sparsify.method == "sparse" else None
    if minimal is None and gamma > 0:
        minimal = sparsifying.minimal_pattern(above.solve_A, above.P, above.coarse, level.strategy)
    A_hat, info = sparsifying.sparsify(level.A, minimal, gamma, sparsify.lumping, theta=strength_theta,
                                       strategy=level.strategy, profile=profile)
    _check_level(A_hat, k)
    level.A_hat = None if A_hat is level.A else A_hat
    level.sparsified = _record(level.sparsified["before"], A_hat, info)


def _record(before, A_hat, info):
    return {**info, "before": before, "after": sparsifying.halo_summary(A_hat)}


def _sparsified_level(Ac, level, sparsify, gamma, strength_theta, strategy, profile):
    """Collective. Sparsifies the coarse operator Ac just formed from ``level`` (its P and
    coarse points): (the operator the next level is built on, the next Level's fields)."""
    source = level.solve_A if sparsify.method == "hybrid" else level.A
    minimal = sparsifying.minimal_pattern(source, level.P, level.coarse, strategy)
    before = sparsifying.halo_summary(Ac)
    A_hat, info = sparsifying.sparsify(Ac, minimal, gamma, sparsify.lumping, theta=strength_theta,
                                       strategy=Ac.plan.strategy, profile=profile)
    record = _record(before, A_hat, info)
    if not sparsify.keeps_galerkin:  # non-Galerkin: the sparsified operator is the level
        return A_hat, {"sparsified": record}
    return Ac, {"A_hat": A_hat, "sparsified": record, "minimal": minimal if sparsify.method == "sparse" else None}
