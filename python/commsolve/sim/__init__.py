"""Predicting solves at scale: a discrete-event simulator (C++ ``sim/simulator``) that
replays the schedules the MPI code runs, built for every rank of a virtual world, with a
machine profile's network (LogGP-style: overhead o per message end, latency and rate per
locality and protocol, the node's injection limit) and compute (flop rate, memory bandwidth,
call overhead) models.

``simulate(schedule, topology, profile)`` runs one schedule; :func:`solve_schedule` builds
the schedule of a 2D or 3D triangular solve, :func:`halo_schedule` that of an SpMV's halo
exchange (each strategy); a :class:`CollectivesSchedule` holds restricted collectives and
their tree shape; :func:`selinv_schedule` that of parallel selected inversion.
"""

from .collectives import CollectivesSchedule, simulate_collectives
from .dense import replication_study, simulate_dense
from .goal import write_goal
from .halo import HaloSchedule, halo_schedule, simulate_halo
from .models import compute_model, network_model, simulation_profile
from .result import SimResult
from .selinv import SelinvSchedule, selinv_schedule, simulate_selinv
from .solve import CATEGORIES, SolveSchedule, schedule_of, simulate_solve, solve_schedule

__all__ = ["simulate", "simulate_dense", "replication_study", "simulate_solve", "simulate_halo", "simulate_collectives", "solve_schedule", "schedule_of",
           "halo_schedule", "SolveSchedule", "HaloSchedule", "CollectivesSchedule", "SimResult", "CATEGORIES",
           "write_goal", "network_model", "compute_model", "simulation_profile", "SelinvSchedule", "selinv_schedule",
           "simulate_selinv"]


def simulate(schedule, topology, profile, timeline=False, trace=False):
    """Simulates ``schedule`` on ``topology`` with ``profile``, by the function of its type
    (:func:`simulate_solve`, :func:`simulate_halo`, :func:`simulate_collectives` or
    :func:`simulate_selinv`).

    Parameters
    ----------
    schedule : SolveSchedule, HaloSchedule, CollectivesSchedule or SelinvSchedule
        What to replay (:func:`solve_schedule`, :func:`halo_schedule`, a
        :class:`CollectivesSchedule`, :func:`selinv_schedule`).
    topology : Topology
        The virtual world's nodes (:func:`commsolve.topology.make_topology`).
    profile : str, path or MachineProfile
        A bundled profile's name, a TOML path or a MachineProfile.
    timeline : bool
        Record every rank's (rank, category, begin, end) rows in ``SimResult.timeline``.
    trace : bool
        Record every rank's operations in ``SimResult.trace``, for :func:`write_goal`.

    Returns
    -------
    SimResult
        Predicted time, per-rank breakdown, critical path, recorded statistics; with
        ``trace``, every rank's operations for :func:`write_goal`.

    Raises
    ------
    TypeError
        When ``schedule`` is none of the four schedules.
    ValueError
        When the function of its type refuses it (a topology of another size than the
        schedule's, for a solve or a halo exchange), or a
        :class:`~commsolve.model.ProfileError` when ``profile`` lacks the simulator's fields
        (:func:`simulation_profile`).
    """
    if isinstance(schedule, SolveSchedule):
        return simulate_solve(schedule, topology, profile, timeline=timeline, trace=trace)
    if isinstance(schedule, HaloSchedule):
        return simulate_halo(schedule, topology, profile, timeline=timeline, trace=trace)
    if isinstance(schedule, CollectivesSchedule):
        return simulate_collectives(schedule, topology, profile, timeline=timeline, trace=trace)
    if isinstance(schedule, SelinvSchedule):
        return simulate_selinv(schedule, topology, profile, timeline=timeline, trace=trace)
    raise TypeError(f"cannot simulate a {type(schedule).__name__}: expected a SolveSchedule "
                    f"(commsolve.sim.solve_schedule), a HaloSchedule (commsolve.sim.halo_schedule), a "
                    f"CollectivesSchedule or a SelinvSchedule (commsolve.sim.selinv_schedule)")
