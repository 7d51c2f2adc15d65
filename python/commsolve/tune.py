"""Tuning above the solvers: a grid, algorithm and tree shape chosen by simulation.

``grid="auto"`` is not the solver's business: :func:`commsolve.direct.factor` takes explicit
options, and when asked for ``"auto"`` it calls the tuner registered here (this module sits
above both :mod:`commsolve.direct` and :mod:`commsolve.sim` and imports them; neither
imports it). After the root's symbolic analysis, every candidate grid of the ranks
(:func:`candidate_grids`), every algorithm that runs on it and every tree shape compared is
simulated with the machine profile (:func:`rank_grids`), and the fastest is factored.
``commsolve simulate sptrsv --grid auto`` prints the same ranking.
"""

from __future__ import annotations

import numpy as np

from . import _core, direct
from .direct import ALGORITHMS, make_layout, parse_grid, solve_options
from .direct.options import check_choice
from .sim.models import simulation_profile
from .sim.solve import SolveSchedule, contiguous_rhs, simulate_solve
from .sim.study import check_ranks
from .trees import check_shape

__all__ = ["AUTO_TREES", "MAX_AUTO_PZ", "ASPECT", "candidate_grids", "rank_grids", "format_ranking", "auto_max_pz",
           "SimulatedTuner"]

MAX_AUTO_PZ = 32  # the most layers grid="auto" tries: the SC'23 paper's range (its best was near 16)
ASPECT = 4  # candidate 2D grids: Px <= Py <= ASPECT Px (or the squarest)
AUTO_TREES = ("binary", "flat")  # the tree shapes grid="auto" compares by default


def auto_max_pz(nranks, max_pz=MAX_AUTO_PZ):
    """The most layers grid='auto' tries: the largest power of two up to min(nranks, max_pz).

    Parameters
    ----------
    nranks : int
        The number of ranks.
    max_pz : int
        The most layers allowed.

    Returns
    -------
    int

    Examples
    --------
    >>> from commsolve import tune
    >>> tune.auto_max_pz(12), tune.auto_max_pz(100)
    (8, 32)
    """
    return 1 << (min(int(nranks), int(max_pz)).bit_length() - 1)


def candidate_grids(nranks, max_pz=MAX_AUTO_PZ):
    """The grids ``--grid auto`` compares for ``nranks`` ranks: Pz every power of two up to
    ``max_pz``; for each, the Px x Py with Px <= Py <= 4 Px (the squarest when none is).

    Parameters
    ----------
    nranks : int
        The number of ranks.
    max_pz : int
        The most layers (Pz only where it divides ``nranks``).

    Returns
    -------
    list of tuple of int
        (Px, Py, Pz) each, by Pz, then Px.

    Examples
    --------
    >>> from commsolve import tune
    >>> tune.candidate_grids(8)
    [(2, 4, 1), (1, 4, 2), (2, 2, 2), (1, 2, 4), (1, 1, 8)]
    """
    out = []
    pz = 1
    while pz <= min(int(nranks), int(max_pz)):
        if nranks % pz == 0:
            q = nranks // pz
            pairs = [(a, q // a) for a in range(1, int(np.sqrt(q)) + 1) if q % a == 0 and q // a <= ASPECT * a]
            out += [(px, py, pz) for px, py in (pairs or [parse_grid(None, q)[:2]])]
        pz *= 2
    return out


# What grid="auto" chooses among: every algorithm but the SC'23 ablation's reference baseline
# (3d-baseline-pdgstrs, SuperLU_DIST's costs reproduced on purpose), which stays nameable.
CANDIDATE_ALGORITHMS = tuple(a for a in ALGORITHMS if a != "3d-baseline-pdgstrs")


def rank_grids(structure, topology, profile, algorithms=CANDIDATE_ALGORITHMS, trees=AUTO_TREES, partition="nd",
               allreduce=None, nrhs=1, max_pz=MAX_AUTO_PZ, seed=None, flat_threshold=None, progress=None):
    """Every candidate grid (:func:`candidate_grids`) of ``topology.size`` ranks, every
    algorithm that runs on it (the algorithm/Pz rule) and every tree shape of ``trees``,
    simulated with ``profile`` on ``topology``.

    Parameters
    ----------
    structure : SupernodalStructure
        The factor's supernodal structure (the root's symbolic analysis).
    topology : Topology
        The ranks and their nodes.
    profile : MachineProfile, str or path
        The machine profile (an object, a bundled name or a path), with what the simulator
        needs.
    algorithms : sequence of str
        The solve algorithms compared (default: all but ``3d-baseline-pdgstrs``, the SC'23
        ablation's reference baseline).
    trees : str or sequence of str
        The tree shapes compared (a name or a sequence).
    partition : str
        The forest partition (:data:`commsolve.direct.FOREST_PARTITIONS`).
    allreduce : str, optional
        As :func:`commsolve.direct.solve_options` takes it.
    nrhs : int
        Right-hand sides.
    max_pz : int
        The most layers (:func:`candidate_grids`).
    seed, flat_threshold : int, optional
        The tree shape's.
    progress : callable, optional
        ``progress(grid)`` after each candidate grid.

    Returns
    -------
    list of dict
        ``{grid, algorithm, tree, predicted_s, breakdown}`` each, fastest first.

    Raises
    ------
    ValueError
        For an unknown tree shape or algorithm, no algorithm, more ranks than the simulator
        holds, or no grid that runs any of the algorithms.
    ProfileError
        When the profile cannot be loaded or lacks what the simulator needs
        (:class:`~commsolve.model.ProfileError`, a ValueError).
    """
    trees = [trees] if isinstance(trees, str) else list(trees)
    for shape in trees:
        check_shape(shape)
    check_ranks(topology.size)
    if not algorithms:
        raise ValueError("no algorithm given (known: " + ", ".join(ALGORITHMS) + ")")
    for a in algorithms:
        check_choice(a, ALGORITHMS, "solve algorithm")
    prof = simulation_profile(profile)
    P = topology.size
    rhs = contiguous_rhs(structure, P)
    runs = []
    for g in candidate_grids(P, max_pz):
        runs_here = [a for a in algorithms if _core.algorithm_runs_on(a, g[2])]
        layout = make_layout(structure, g, partition=partition) if runs_here else None
        for a in runs_here:
            for tree in trees:
                options = solve_options(g[2], a, tree, seed, flat_threshold, allreduce)
                r = simulate_solve(SolveSchedule(layout, options, int(nrhs), rhs), topology, prof)
                runs.append({"grid": list(g), "algorithm": a, "tree": tree, "predicted_s": r.predicted_s,
                             "breakdown": r.breakdown()})
        if progress is not None:
            progress(g)
    if not runs:
        raise ValueError(f"no grid of {P} ranks runs any of {', '.join(algorithms)}")
    return sorted(runs, key=lambda r: r["predicted_s"])


def format_ranking(ranking, top=10):
    """The ranking as the table ``commsolve simulate sptrsv --grid auto`` prints: per
    configuration its grid, algorithm, tree, predicted milliseconds, ratio to the best and
    the breakdown (floating point, XY and Z communication, b/x redistribution).

    Parameters
    ----------
    ranking : list of dict
        :func:`rank_grids`'s, fastest first.
    top : int
        The most configurations listed (a last line counts the others).

    Returns
    -------
    str
    """
    best = ranking[0]["predicted_s"]
    wide = max([len("algorithm")] + [len(r["algorithm"]) for r in ranking[:top]]) + 2  # 3d-baseline-async: 17
    lines = [f"{'rank':>4}  {'grid':>10}  {'algorithm':<{wide}}{'tree':<15}{'predicted ms':>13}{'vs best':>9}{'fp':>9}"
             f"{'XY comm':>9}{'Z comm':>9}{'b/x':>8}"]
    for i, r in enumerate(ranking[:top]):
        b = r["breakdown"]
        lines.append(f"{i + 1:>4}  {'x'.join(map(str, r['grid'])):>10}  {r['algorithm']:<{wide}}{r['tree']:<15}"
                     f"{r['predicted_s'] * 1e3:>13.3f}{r['predicted_s'] / best:>8.2f}x"
                     f"{b['fp_s'] * 1e3:>9.3f}{b['xy_comm_s'] * 1e3:>9.3f}{b['z_comm_s'] * 1e3:>9.3f}"
                     f"{b['redistribute_s'] * 1e3:>8.3f}")
    if len(ranking) > top:
        lines.append(f"      ... {len(ranking) - top} more")
    return "\n".join(lines)


class SimulatedTuner:
    """What :func:`commsolve.direct.factor` calls for ``grid="auto"`` (registered on import):
    the simulator's ranking of every grid, algorithm and tree shape."""

    @staticmethod
    def check(profile, algorithm, trees):
        """The request's own checks, on every rank: a profile that carries what the simulator
        needs, and known tree shapes.

        Parameters
        ----------
        profile : MachineProfile, str, path or None
            The machine profile.
        algorithm : str or None
            The algorithm asked for (not checked here: :func:`commsolve.direct.factor` checks
            it).
        trees : sequence of str
            The tree shapes to compare.

        Raises
        ------
        ValueError
            When no profile is given or a tree shape is unknown.
        ProfileError
            When the profile cannot be loaded or lacks what the simulator needs
            (:class:`~commsolve.model.ProfileError`, a ValueError).
        """
        if profile is None:
            raise ValueError("grid='auto' needs a machine profile (profile=...; 'commsolve calibrate' writes "
                             "one for this machine)")
        simulation_profile(profile)
        for shape in trees:
            check_shape(shape)

    @staticmethod
    def max_pz(nranks):
        """The most layers it tries (:func:`auto_max_pz`): the analysis keeps that many
        separator-tree levels.

        Parameters
        ----------
        nranks : int
            The number of ranks.

        Returns
        -------
        int
        """
        return auto_max_pz(nranks)

    @staticmethod
    def rank(structure, topology, profile, request):
        """The configurations tried, fastest first (:func:`rank_grids` with the request's
        algorithm, or every candidate, and its tree shapes, or :data:`AUTO_TREES`).

        Parameters
        ----------
        structure : SupernodalStructure
            The factor's supernodal structure.
        topology : Topology
            The ranks and their nodes.
        profile : MachineProfile, str or path
            The machine profile.
        request : FactorRequest
            :func:`commsolve.direct.factor`'s agreed request (algorithm, trees, partition,
            allreduce, seed, flat_threshold, max_pz).

        Returns
        -------
        list of dict
            As :func:`rank_grids`'s.
        """
        return rank_grids(structure, topology, profile,
                          [request.algorithm] if request.algorithm else CANDIDATE_ALGORITHMS,
                          trees=request.trees or AUTO_TREES, partition=request.partition,
                          allreduce=request.allreduce, seed=request.seed, flat_threshold=request.flat_threshold,
                          max_pz=request.max_pz)


direct.register_tuner(SimulatedTuner())
