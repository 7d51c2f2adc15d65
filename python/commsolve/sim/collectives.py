"""Restricted collectives (:mod:`commsolve.trees`) replayed in the simulator (C++
``sim/trees_sim``): every rank's tree plan run by the same message-driven logic the MPI
engine runs, all collectives in flight at once."""

from __future__ import annotations

import time
from dataclasses import dataclass

from .. import _core, trees
from .models import compute_model, network_model, simulation_profile
from .result import SimResult

__all__ = ["CollectivesSchedule", "TreeChoice", "simulate_collectives"]


class TreeChoice:
    """Mixin of the schedules run on trees: their ``shape``, ``seed`` and ``flat_threshold``
    fields make ``tree``, a TreeShape (C++'s defaults where None)."""

    @property
    def tree(self):
        """The TreeShape of ``shape``, ``seed`` and ``flat_threshold``
        (:func:`commsolve.trees.tree_shape`; C++'s defaults where None)."""
        return trees.tree_shape(self.shape, self.seed, self.flat_threshold)


@dataclass
class CollectivesSchedule(TreeChoice):
    """A set of restricted collectives (:class:`commsolve.trees.Collectives`) and the tree
    shape that carries them (a name, with ``seed`` and ``flat_threshold``; C++'s defaults
    where None)."""

    collectives: object
    shape: str | None = None
    seed: int | None = None
    flat_threshold: int | None = None


def simulate_collectives(schedule, topology, profile, timeline=False, trace=False):
    """Replays ``schedule`` on ``topology`` with ``profile``'s models.

    Parameters
    ----------
    schedule : CollectivesSchedule
        The collectives and their tree shape.
    topology : Topology
        The virtual world; its size must cover every rank the collectives name.
    profile : str, path or MachineProfile
        The machine profile (:func:`~commsolve.sim.simulation_profile`).
    timeline : bool
        Record every rank's (rank, category, begin, end) rows.
    trace : bool
        Record every rank's operations (for :func:`~commsolve.sim.write_goal`).

    Returns
    -------
    SimResult
        A :class:`~commsolve.sim.SimResult` (statistics steps: 0 broadcasts, 1 reductions).

    Raises
    ------
    ValueError
        When the collectives do not fit ``topology`` (``validate``), or the shape is unknown;
        a :class:`~commsolve.model.ProfileError` when ``profile`` lacks the simulator's fields.
    """
    s = schedule
    tree = s.tree
    s.collectives.core.validate(topology.size)
    prof = simulation_profile(profile)
    t0 = time.perf_counter()
    d = _core.simulate_collectives(s.collectives.core, tree, topology, network_model(prof, topology.max_ppn),
                                   compute_model(prof), bool(timeline), bool(trace))
    info = {"workload": "trees", "shape": tree.name, "profile": prof.name, "wall_s": time.perf_counter() - t0}
    return SimResult.from_core(d, info)
