"""Parallel selected inversion (:mod:`commsolve.direct.selinv`) replayed in the simulator
(C++ ``sim/selinv_sim``): every rank's plans of both phases run by the same
``SelinvMachine`` the MPI run drives, its dense products, copies and sums priced by the
profile's compute model, its messages by the network model."""

from __future__ import annotations

import time
from dataclasses import dataclass

from .. import _core
from ..direct.options import make_layout
from ..direct.selinv import role_volumes
from .collectives import TreeChoice
from .models import compute_model, network_model, simulation_profile
from .result import SimResult

__all__ = ["SelinvSchedule", "selinv_schedule", "simulate_selinv", "comm_compute_ratio", "shape_study",
           "format_shape_study"]


@dataclass
class SelinvSchedule(TreeChoice):
    """Selected inversion on ``layout`` in the ``symmetric`` or unsymmetric form, every
    collective carried by the tree shape ``shape``.

    Parameters
    ----------
    layout : SolveLayout
        The factor's layout on a 2D grid.
    symmetric : bool
        The symmetric form (else the unsymmetric one).
    shape : str, optional
        The tree shape (C++'s default where None).
    seed, flat_threshold : int, optional
        The tree shape's (C++'s defaults where None).
    """

    layout: object
    symmetric: bool = True
    shape: str | None = None
    seed: int | None = None
    flat_threshold: int | None = None


def selinv_schedule(structure, grid, symmetric=True, shape=None, seed=None, flat_threshold=None):
    """The :class:`SelinvSchedule` of ``structure`` on a ``(Pr, Pc)`` grid.

    Parameters
    ----------
    structure : SupernodalStructure
        A supernodal structure (:func:`commsolve.direct.symbolic`).
    grid : tuple of int
        ``(Pr, Pc)``.
    symmetric : bool
        The symmetric form (else the unsymmetric one).
    shape : str, optional
        The tree shape of every collective (C++'s default where None).
    seed, flat_threshold : int, optional
        The tree shape's (C++'s defaults where None).

    Returns
    -------
    SelinvSchedule
    """
    pr, pc = (int(g) for g in grid)
    return SelinvSchedule(make_layout(structure, (pr, pc, 1)), bool(symmetric), shape, seed, flat_threshold)


def simulate_selinv(schedule, topology, profile, timeline=False, trace=False):
    """Replays ``schedule`` on ``topology`` with ``profile``'s models.

    Parameters
    ----------
    schedule : SelinvSchedule
        The selected inversion (:func:`selinv_schedule`).
    topology : Topology
        The virtual world.
    profile : str, path or MachineProfile
        The machine profile (:func:`~commsolve.sim.simulation_profile`).
    timeline : bool
        Record every rank's (rank, category, begin, end) rows.
    trace : bool
        Record every rank's operations (for :func:`~commsolve.sim.write_goal`).

    Returns
    -------
    SimResult
        A :class:`~commsolve.sim.SimResult` (categories compute, comm, idle; statistics
        steps as :data:`commsolve.direct.selinv.ROLES`).

    Raises
    ------
    ValueError
        For an unknown tree shape; a :class:`~commsolve.model.ProfileError` when ``profile``
        lacks the simulator's fields.
    """
    s = schedule
    prof = simulation_profile(profile)
    t0 = time.perf_counter()
    d = _core.simulate_selinv(s.layout, s.tree, bool(s.symmetric), topology, network_model(prof, topology.max_ppn),
                              compute_model(prof), bool(timeline), bool(trace))
    info = {"workload": "selinv", "shape": s.tree.name, "symmetric": bool(s.symmetric), "profile": prof.name,
            "wall_s": time.perf_counter() - t0}
    return SimResult.from_core(d, info)


def comm_compute_ratio(result):
    """The PSelInv paper's communication/computation ratio: the ranks' time in
    communication (messages, packing and the waits for data) over their time computing,
    summed over the ranks.

    Parameters
    ----------
    result : SimResult
        A selected inversion's (:func:`simulate_selinv`: categories compute, comm, idle).

    Returns
    -------
    float
        ``(comm + idle) / compute`` over all ranks; inf when nothing was computed.
    """
    per = result.per_rank()
    compute = float(per["compute"].sum())
    return float((per["comm"].sum() + per["idle"].sum()) / compute) if compute > 0 else float("inf")


def shape_study(schedule, topology, shapes, profile, timeline=False, trace=False):
    """``schedule`` replayed once per tree shape.

    Parameters
    ----------
    schedule : SelinvSchedule
        The selected inversion; its ``shape`` is replaced by each of ``shapes``.
    topology : Topology
        The virtual world.
    shapes : iterable of str
        The tree shapes.
    profile : str, path or MachineProfile
        The machine profile (:func:`~commsolve.sim.simulation_profile`).
    timeline, trace : bool
        As :func:`simulate_selinv`.

    Returns
    -------
    summary : dict
        ``nranks``, ``ppn``, ``profile``, ``form`` and ``shapes``: per shape
        (:meth:`~commsolve.sim.SimResult.to_dict`'s entries and more) the predicted time, the speedup over
        flat trees (where flat is among them, else None), the communication/computation ratio
        (:func:`comm_compute_ratio`), the slowest rank's breakdown and the Col-Bcast (sent)
        and Row-Reduce (received) volumes per rank (min, max, median, std).
    results : dict
        ``{shape: SimResult}``.
    """
    prof = simulation_profile(profile)
    out = {"nranks": topology.size, "ppn": topology.max_ppn, "profile": prof.name,
           "form": "symmetric" if schedule.symmetric else "unsymmetric", "shapes": {}}
    results = {}
    for shape in shapes:
        s = SelinvSchedule(schedule.layout, schedule.symmetric, shape, schedule.seed, schedule.flat_threshold)
        results[shape] = r = simulate_selinv(s, topology, prof, timeline=timeline, trace=trace)
        out["shapes"][shape] = {**r.to_dict(), "comm_compute_ratio": comm_compute_ratio(r),
                                "col_bcast_sent_bytes": role_volumes(r.recorded, "col_bcast"),
                                "row_reduce_received_bytes": role_volumes(r.recorded, "row_reduce", received=True)}
    flat = out["shapes"].get("flat")
    for v in out["shapes"].values():
        v["speedup_over_flat"] = flat["predicted_s"] / v["predicted_s"] if flat and v["predicted_s"] > 0 else None
    return out, results


def format_shape_study(out, matrix):
    """The text report of a :func:`shape_study`: one line per tree shape.

    Parameters
    ----------
    out : dict
        :func:`shape_study`'s summary.
    matrix : str
        The matrix's name, for the heading.

    Returns
    -------
    str
    """
    mb = 2.0 ** 20
    lines = [f"{matrix}: parallel selected inversion ({out['form']} form) on {out['nranks']:,} ranks, {out['ppn']} per "
             f"node, profile {out['profile']}",
             f"{'shape':<16}{'predicted ms':>13}{'vs flat':>8}{'comm/comp':>10}{'messages':>11}"
             f"{'Col-Bcast MB max':>17}{'std':>8}{'Row-Reduce MB max':>18}{'std':>8}"]
    for s, r in out["shapes"].items():
        cb, rr = r["col_bcast_sent_bytes"], r["row_reduce_received_bytes"]
        vs = f"{r['speedup_over_flat']:.2f}x" if r["speedup_over_flat"] else "-"
        lines.append(f"{s:<16}{r['predicted_s'] * 1e3:>13.3f}{vs:>8}{r['comm_compute_ratio']:>10.2f}"
                     f"{r['messages']:>11,}{cb['max'] / mb:>17.3f}{cb['std'] / mb:>8.3f}{rr['max'] / mb:>18.3f}"
                     f"{rr['std'] / mb:>8.3f}")
    return "\n".join(lines)
