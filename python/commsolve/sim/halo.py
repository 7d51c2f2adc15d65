"""Halo exchanges (the SpMV's communication) replayed in the simulator (C++
``sim/halo_sim``): every rank's plan, built in the virtual world as the MPI ranks build it,
run step by step as the MPI executor runs it."""

from __future__ import annotations

import time
from dataclasses import dataclass

from .. import _core, virtual
from ..partition import partition as partition_rows
from .models import compute_model, network_model, simulation_profile
from .result import SimResult

__all__ = ["HaloSchedule", "halo_schedule", "simulate_halo", "STRATEGIES"]

STRATEGIES = tuple(s for s in _core.strategy_names() if s != "auto")  # a plan runs one concrete strategy


@dataclass
class HaloSchedule:
    """Every rank's halo-exchange plan (:func:`commsolve.virtual.plans`), ``block`` values
    per entry, ``repeat`` exchanges back to back."""

    plans: list
    strategy: str
    block: int = 1
    repeat: int = 1

    @property
    def nranks(self):
        """The number of ranks: one plan each."""
        return len(self.plans)


def halo_schedule(A, nranks, topology, strategy="standard", partition="contiguous", block=1, repeat=1):
    """The halo exchange of ``A``'s SpMV with rows split over ``nranks`` ranks by
    ``partition`` (:func:`commsolve.partition.partition`) on ``topology``.

    Parameters
    ----------
    A : scipy sparse matrix
        The matrix.
    nranks : int
        The number of virtual ranks.
    topology : Topology
        The virtual world of ``nranks`` ranks the plans are built for (the node-aware
        strategies depend on its nodes).
    strategy : str
        ``"standard"``, ``"node-aware"`` or ``"node-aware-2step"`` (``STRATEGIES``: a plan
        runs one concrete strategy, not ``"auto"``).
    partition : str
        How rows are split: a method of :func:`commsolve.partition.partition`.
    block : int
        Values per entry (at least 1).
    repeat : int
        Exchanges back to back (at least 1).

    Returns
    -------
    HaloSchedule
        Every rank's plan (:func:`commsolve.virtual.plans`).

    Raises
    ------
    ValueError
        For an unknown strategy, ``block`` or ``repeat`` below 1, or a topology of another
        size than ``nranks``.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown halo strategy {strategy!r} (known: {', '.join(STRATEGIES)})")
    if int(block) < 1 or int(repeat) < 1:
        raise ValueError(f"block and repeat must be at least 1, got {block} and {repeat}")
    dist = partition_rows(A, int(nranks), partition)
    return HaloSchedule(virtual.plans(A, dist, strategy=strategy, topology=topology), strategy, int(block),
                        int(repeat))


def simulate_halo(schedule, topology, profile, timeline=False, trace=False):
    """Replays ``schedule`` on ``topology`` with ``profile``'s models.

    Parameters
    ----------
    schedule : HaloSchedule
        Every rank's plan (:func:`halo_schedule`).
    topology : Topology
        The virtual world, of ``schedule.nranks`` ranks.
    profile : str, path or MachineProfile
        The machine profile (:func:`~commsolve.sim.simulation_profile`).
    timeline : bool
        Record every rank's (rank, category, begin, end) rows.
    trace : bool
        Record every rank's operations (for :func:`~commsolve.sim.write_goal`).

    Returns
    -------
    SimResult
        A :class:`~commsolve.sim.SimResult` of all ``repeat`` exchanges (time per exchange:
        ``predicted_s / repeat``).

    Raises
    ------
    ValueError
        When the topology's size is not the schedule's number of ranks; a
        :class:`~commsolve.model.ProfileError` when ``profile`` lacks the simulator's fields.
    """
    s = schedule
    if topology.size != s.nranks:
        raise ValueError(f"the topology has {topology.size} ranks, the schedule {s.nranks}")
    prof = simulation_profile(profile)
    t0 = time.perf_counter()
    d = _core.simulate_halo(s.plans, topology, s.block, s.repeat, network_model(prof, topology.max_ppn),
                            compute_model(prof), bool(timeline), bool(trace))
    info = {"workload": "halo", "strategy": s.strategy, "block": s.block, "repeat": s.repeat, "profile": prof.name,
            "wall_s": time.perf_counter() - t0}
    return SimResult.from_core(d, info)
