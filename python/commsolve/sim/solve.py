"""Distributed triangular solves replayed in the simulator (C++ ``sim/solve_sim``): the
schedules the MPI solve builds on every rank, built for every rank of a virtual world and
run as a discrete-event simulation with a machine profile's network and compute models."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .. import _core
from ..direct.options import make_layout, parse_grid, solve_options
from .models import compute_model, network_model, simulation_profile
from .result import SimResult

__all__ = ["SolveSchedule", "CATEGORIES", "solve_schedule", "schedule_of", "contiguous_rhs", "simulate_solve"]

# What a solve's time goes to (C++ sim::SolveCategory, then the engine's idle, which also
# takes the time between a rank's finish and the slowest rank's).
CATEGORIES = (*_core.solve_categories(), "idle")


@dataclass
class SolveSchedule:
    """One distributed solve as the simulator replays it.

    Parameters
    ----------
    layout : SolveLayout
        Structure, grid, forests.
    options : SolveOptions
        Algorithm, tree shape, allreduce, kernels, leaf synchronization.
    nrhs : int
        Right-hand sides.
    rhs : RhsMap or None
        b and x distributed by rows, row ``row_order[k]`` of b to factor row k,
        ``col_order[k]`` of x from factor column k; or None when b and x sit on the diagonal
        owners already.
    """

    layout: object
    options: object
    nrhs: int = 1
    rhs: object = None

    structure = property(lambda self: self.layout.structure, doc="The layout's symbolic structure.")
    grid = property(lambda self: tuple(self.layout.grid), doc="The layout's grid, ``(px, py, pz)``.")
    forests = property(lambda self: self.layout.forests, doc="The layout's forest of each supernode.")
    algorithm = property(lambda self: self.options.algorithm, doc="The solve algorithm's name.")
    distribution = property(lambda self: None if self.rhs is None else self.rhs.distribution,
                            doc="The Distribution of b and x by rows, or None (no ``rhs``).")

    @property
    def nranks(self):
        """The number of ranks of the grid."""
        return self.layout.grid.size


def solve_schedule(structure, grid, algorithm="3d", partition="nd", forests=None, tree=None, allreduce=None,
                   nrhs=1, seed=None, flat_threshold=None, distribute_rhs=True, kernels=None, leaf_sync=None):
    """The schedule of ``algorithm`` on ``grid`` for a symbolic ``structure``, with the
    forests given or those of ``partition``.

    The rules are :func:`~commsolve.direct.factor`'s: what it refuses, this refuses.

    Parameters
    ----------
    structure : SupernodalStructure
        The symbolic structure (:func:`commsolve.direct.symbolic`).
    grid : tuple of int or str
        ``(px, py, pz)`` or ``"PxQxR"``.
    algorithm : str
        One of :data:`commsolve.direct.ALGORITHMS`.
    partition : str
        How the elimination tree is split into forests when ``forests`` is None: ``"nd"`` or
        ``"greedy"`` (as :func:`~commsolve.direct.factor`).
    forests : array_like of int, optional
        One forest index per supernode.
    tree : str or TreeShape, optional
        The broadcast and reduction tree shape, with ``seed`` and ``flat_threshold`` (C++'s
        default where None).
    allreduce : str, optional
        Inter-grid messages: ``"packed"`` or ``"per-supernode"`` (C++'s default where None).
    nrhs : int
        Right-hand sides.
    seed, flat_threshold : int, optional
        The tree shape's (C++'s defaults where None).
    distribute_rhs : bool
        b and x distributed by contiguous row blocks (as a ParCSR matrix's rows by default,
        :func:`contiguous_rhs`) and moved as the MPI solve moves them; else they sit on the
        diagonal owners already.
    kernels : str, optional
        One of :data:`commsolve.direct.KERNELS` (C++'s default where None).
    leaf_sync : bool, optional
        The leaf forests' counter allreduce and barrier, as pdgstrs3d (C++'s default where
        None).

    Returns
    -------
    SolveSchedule

    Raises
    ------
    ValueError
        For a bad grid, an unknown name, or an algorithm that does not run on the grid's pz
        layers (:func:`commsolve.direct.options.solve_options`).
    """
    options = solve_options(parse_grid(grid, None)[2], algorithm, tree, seed, flat_threshold, allreduce, kernels,
                            leaf_sync)
    layout = make_layout(structure, grid, forests, partition)
    return SolveSchedule(layout, options, int(nrhs), contiguous_rhs(structure, layout.grid.size) if distribute_rhs
                         else None)


def contiguous_rhs(structure, nranks):
    """b and x in contiguous blocks of rows over ``nranks`` ranks (as a ParCSR's rows by
    default), in the structure's own order (no row permutation).

    Parameters
    ----------
    structure : SupernodalStructure
        The symbolic structure (its size and ordering ``perm``).
    nranks : int
        The number of ranks.

    Returns
    -------
    RhsMap
        For :class:`SolveSchedule`'s ``rhs``.
    """
    perm = np.asarray(structure.perm, np.int32)
    return _core.RhsMap(_core.Distribution.contiguous(int(structure.n), int(nranks)), perm, perm)


def schedule_of(solver, nrhs=1):
    """The schedule a :class:`commsolve.direct.DistributedLU` runs with its current options:
    its layout, options, and the distribution and orders of b and x.

    Parameters
    ----------
    solver : DistributedLU
        The factored solver.
    nrhs : int
        Right-hand sides.

    Returns
    -------
    SolveSchedule
    """
    rhs = _core.RhsMap(solver.distribution, np.asarray(solver.row_order, np.int32),
                       np.asarray(solver.col_order, np.int32))
    return SolveSchedule(solver.layout, solver.options, int(nrhs), rhs)


def simulate_solve(schedule, topology, profile, timeline=False, trace=False):
    """Replays ``schedule`` on ``topology`` with ``profile``'s network and compute models.

    Parameters
    ----------
    schedule : SolveSchedule
        The solve (:func:`solve_schedule`, :func:`schedule_of`).
    topology : Topology
        The virtual world, of as many ranks as the schedule's grid.
    profile : str, path or MachineProfile
        The machine profile (:func:`~commsolve.sim.simulation_profile`).
    timeline : bool
        Record every rank's (rank, category, begin, end) rows.
    trace : bool
        Record every rank's operations in order, for :func:`commsolve.sim.goal.write_goal`.

    Returns
    -------
    SimResult
        Categories :data:`CATEGORIES`; ``info`` holds the options as the solve runs them.

    Raises
    ------
    ValueError
        When the topology's size is not the grid's; a
        :class:`~commsolve.model.ProfileError` when ``profile`` lacks the simulator's fields.
    """
    s = schedule
    if topology.size != s.nranks:
        raise ValueError(f"the topology has {topology.size} ranks, the {'x'.join(map(str, s.grid))} grid "
                         f"{s.nranks}")
    prof = simulation_profile(profile)
    net = network_model(prof, topology.max_ppn)
    cpu = compute_model(prof)
    t0 = time.perf_counter()
    d = _core.simulate_solve(s.layout, s.options, s.nrhs, s.rhs, topology, net, cpu, bool(timeline), bool(trace))
    run = s.options.effective()  # as the solve runs them (3d-baseline-pdgstrs's switches)
    info = {"algorithm": s.algorithm, "grid": list(s.grid), "tree": run.tree.name, "allreduce": run.allreduce,
            "kernels": run.kernels, "leaf_sync": run.leaf_sync, "nrhs": s.nrhs, "profile": prof.name,
            "wall_s": time.perf_counter() - t0}
    return SimResult.from_core(d, info)
