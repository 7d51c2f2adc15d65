"""Studies with the simulator (``commsolve simulate``): the 2D and 3D triangular solves of one
matrix at a virtual scale with a machine profile, side by side (as ``commsolve trees
sptrsv3d`` counts them), with the per-rank load balance (the SC'23 paper's Figures 7-8) and
a timeline; the SpMV's halo exchange per strategy; selected inversion's restricted
collectives per tree shape. Choosing a grid by simulation is :mod:`commsolve.tune`'s."""

from __future__ import annotations

import numpy as np

from .._plotting import finish, pyplot
from .. import _core
from ..direct import ALGORITHMS, make_layout, parse_grid, solve_options, symbolic
from ..topology import blocked_topology
from .collectives import CollectivesSchedule, simulate_collectives
from .halo import halo_schedule, simulate_halo
from .models import simulation_profile
from .solve import CATEGORIES, SolveSchedule, contiguous_rhs, simulate_solve

__all__ = ["simulate_algorithms", "simulate_strategies", "simulate_shapes", "format_halo", "format_shapes",
           "format_simulation", "plot_balance", "plot_timeline", "MAX_SIM_RANKS", "MAX_TIMELINE_RANKS", "check_ranks"]

MAX_SIM_RANKS = 1 << 17      # every rank's schedule is held at once
MAX_TIMELINE_RANKS = 256     # a Gantt chart of more ranks is unreadable


def check_ranks(P):
    """Refuses more ranks than the simulator holds at once.

    Parameters
    ----------
    P : int
        The number of ranks to simulate.

    Raises
    ------
    ValueError
        When ``P`` is more than ``MAX_SIM_RANKS`` (every rank's schedule is held at once).
    """
    if P > MAX_SIM_RANKS:
        raise ValueError(f"{P:,} ranks: the simulator holds every rank's schedule at once, at most {MAX_SIM_RANKS:,}")


def simulate_algorithms(A, grid, algorithms, profile, ppn=None, tree=None, partition="nd", allreduce=None,
                        nrhs=1, structure=None, seed=None, flat_threshold=None, timeline=False, trace=False,
                        distribute_rhs=True, progress=None, kernels=None, leaf_sync=None, **lu_options):
    """Simulates each of ``algorithms`` on ``grid`` for ``A`` (or its symbolic
    ``structure``), side by side.

    Parameters
    ----------
    A : scipy sparse matrix
        The matrix (not read when ``structure`` is given).
    grid : str or tuple of int
        "PxQxR" or a triple; ``2d`` runs on the squarest 2D grid with as many ranks.
    algorithms : sequence of str
        Names of :data:`commsolve.direct.ALGORITHMS`.
    profile : str, path or MachineProfile
        The machine profile (:func:`~commsolve.sim.simulation_profile`).
    ppn : int, optional
        Ranks per node (default: the profile's).
    tree, allreduce, seed, flat_threshold, kernels, leaf_sync : optional
        As :func:`commsolve.direct.options.solve_options`.
    partition : str
        The forest partition, ``"nd"`` or ``"greedy"`` (:func:`solve_schedule`).
    nrhs : int
        Right-hand sides.
    structure : SupernodalStructure, optional
        A's symbolic structure, instead of :func:`commsolve.direct.symbolic` on the grid's pz.
    timeline, trace : bool
        As :func:`simulate_solve`.
    distribute_rhs : bool
        As :func:`solve_schedule`.
    progress : callable, optional
        ``progress(algorithm)`` after each algorithm.
    **lu_options
        :func:`commsolve.direct.symbolic`'s options (ordering, ...), when ``structure`` is
        None.

    Returns
    -------
    summary : dict
        The matrix's ``rows``, ``supernodes`` and ``nnz_L``, ``grid``, ``nranks``, ``ppn``,
        ``profile``, ``partition``, ``algorithms`` (per algorithm its
        :meth:`~commsolve.sim.SimResult.to_dict`), ``fastest`` and ``speedup_of_fastest``
        (per algorithm its time over the fastest's).
    results : dict
        ``{algorithm: SimResult}``.

    Raises
    ------
    ValueError
        For no algorithm, more than ``MAX_SIM_RANKS`` ranks (:func:`check_ranks`),
        ``ppn`` below 1, a bad grid or an unknown name; a
        :class:`~commsolve.model.ProfileError` when ``profile`` lacks the simulator's fields.
    """
    prof = simulation_profile(profile)
    px, py, pz = parse_grid(grid, None)
    P = px * py * pz
    check_ranks(P)
    if not algorithms:
        raise ValueError("no algorithm given (known: " + ", ".join(ALGORITHMS) + ")")
    # an algorithm that does not run on the grid (2d on a 3D one) runs on the squarest 2D grid of as many ranks
    grids = {a: (px, py, pz) if _core.algorithm_runs_on(a, pz) else parse_grid(None, P) for a in algorithms}
    options = {a: solve_options(grids[a][2], a, tree, seed, flat_threshold, allreduce, kernels, leaf_sync)
               for a in algorithms}
    ppn = int(ppn or prof.ppn)
    if ppn < 1:
        raise ValueError(f"ppn must be at least 1, got {ppn}")
    S = symbolic(A, pz, **lu_options) if structure is None else structure
    topo = blocked_topology(P, ppn)
    layouts = {}  # 2d runs on the squarest 2D grid with as many ranks; the 3D algorithms share theirs
    out = {"rows": int(S.n), "supernodes": int(S.nsuper), "nnz_L": int(S.nnz_L), "grid": [px, py, pz],
           "nranks": P, "ppn": topo.max_ppn, "profile": prof.name, "partition": partition, "algorithms": {}}
    results = {}
    for a in algorithms:
        g = grids[a]
        if g not in layouts:
            layouts[g] = make_layout(S, g, partition=partition)
        sched = SolveSchedule(layouts[g], options[a], int(nrhs), contiguous_rhs(S, P) if distribute_rhs else None)
        results[a] = r = simulate_solve(sched, topo, prof, timeline=timeline, trace=trace)
        out["algorithms"][a] = r.to_dict()
        if progress is not None:
            progress(a)
    times = {a: r["predicted_s"] for a, r in out["algorithms"].items()}
    best = min(times, key=times.get)
    out["fastest"] = best
    out["speedup_of_fastest"] = {a: t / times[best] for a, t in times.items()}
    return out, results


def simulate_strategies(A, nranks, strategies, profile, ppn=None, partition="contiguous", block=1, timeline=False,
                        trace=False):
    """The halo exchange of ``A``'s SpMV on ``nranks`` ranks per strategy.

    Parameters
    ----------
    A : scipy sparse matrix
        The matrix.
    nranks : int
        The number of ranks.
    strategies : sequence of str
        The halo strategies (:func:`halo_schedule`).
    profile : str, path or MachineProfile
        The machine profile (:func:`~commsolve.sim.simulation_profile`).
    ppn : int, optional
        Ranks per node (default the profile's).
    partition, block : optional
        As :func:`halo_schedule`.
    timeline, trace : bool
        As :func:`simulate_halo`.

    Returns
    -------
    summary : dict
        ``rows``, ``nnz``, ``nranks``, ``ppn``, ``profile``, ``partition``, ``block``,
        ``strategies`` (per strategy its :meth:`~commsolve.sim.SimResult.to_dict` and
        ``inter_node_msgs_max``, the most inter-node messages one rank sent) and ``fastest``.
    results : dict
        ``{strategy: SimResult}``.

    Raises
    ------
    ValueError
        For no strategy, more than ``MAX_SIM_RANKS`` ranks, or as :func:`halo_schedule`; a
        :class:`~commsolve.model.ProfileError` when ``profile`` lacks the simulator's fields.
    """
    prof = simulation_profile(profile)
    if not strategies:
        raise ValueError("no strategy given")
    P = int(nranks)
    check_ranks(P)
    ppn = int(ppn or prof.ppn)
    topo = blocked_topology(P, ppn)
    out = {"rows": int(A.shape[0]), "nnz": int(A.nnz), "nranks": P, "ppn": topo.max_ppn, "profile": prof.name,
           "partition": partition, "block": int(block), "strategies": {}}
    results = {}
    for s in strategies:
        results[s] = r = simulate_halo(halo_schedule(A, P, topo, s, partition, block), topo, prof, timeline=timeline,
                                       trace=trace)
        d = r.to_dict()
        d["inter_node_msgs_max"] = int(max((st.array[:, 1].sum() for st in r.recorded), default=0))
        out["strategies"][s] = d
    times = {s: r["predicted_s"] for s, r in out["strategies"].items()}
    out["fastest"] = min(times, key=times.get)
    return out, results


def simulate_shapes(collectives, topology, shapes, profile, seed=None, flat_threshold=None, timeline=False,
                    trace=False):
    """Restricted ``collectives`` on ``topology`` per tree shape.

    Parameters
    ----------
    collectives : Collectives
        The restricted collectives (:class:`commsolve.trees.Collectives`).
    topology : Topology
        The virtual world.
    shapes : sequence of str
        The tree shapes.
    profile : str, path or MachineProfile
        The machine profile (:func:`~commsolve.sim.simulation_profile`).
    seed, flat_threshold : int, optional
        The tree shapes' (C++'s defaults where None).
    timeline, trace : bool
        As :func:`simulate_collectives`.

    Returns
    -------
    summary : dict
        ``nranks``, ``ppn``, ``profile``, ``collectives`` (how many), ``shapes`` (per shape
        its :meth:`~commsolve.sim.SimResult.to_dict`) and ``fastest``.
    results : dict
        ``{shape: SimResult}``.

    Raises
    ------
    ValueError
        For no tree shape, more than ``MAX_SIM_RANKS`` ranks, or as
        :func:`simulate_collectives`; a :class:`~commsolve.model.ProfileError` when
        ``profile`` lacks the simulator's fields.
    """
    prof = simulation_profile(profile)
    if not shapes:
        raise ValueError("no tree shape given")
    check_ranks(topology.size)
    out = {"nranks": topology.size, "ppn": topology.max_ppn, "profile": prof.name, "collectives": len(collectives.ids),
           "shapes": {}}
    results = {}
    for s in shapes:
        results[s] = r = simulate_collectives(CollectivesSchedule(collectives, s, seed, flat_threshold), topology,
                                              prof, timeline=timeline, trace=trace)
        out["shapes"][s] = r.to_dict()
    times = {s: r["predicted_s"] for s, r in out["shapes"].items()}
    out["fastest"] = min(times, key=times.get)
    return out, results


def format_shapes(out, matrix):
    """The text report of :func:`simulate_shapes`: one line per tree shape, then the fastest.

    Parameters
    ----------
    out : dict
        :func:`simulate_shapes`'s summary.
    matrix : str
        The matrix's name, for the heading.

    Returns
    -------
    str
    """
    lines = [f"{matrix}: {out['collectives']:,} restricted collectives on {out['nranks']:,} ranks, {out['ppn']} per "
             f"node, profile {out['profile']}, all in flight at once",
             f"{'shape':<16}{'predicted ms':>13}{'messages':>11}{'MB moved':>10}{'critical hops':>15}"]
    for s, r in out["shapes"].items():
        lines.append(f"{s:<16}{r['predicted_s'] * 1e3:>13.3f}{r['messages']:>11,}{r['bytes'] / 1e6:>10.2f}"
                     f"{r['critical_path']['hops']:>15,}")
    lines.append(f"fastest: {out['fastest']}")
    return "\n".join(lines)


def format_halo(out, matrix):
    """The text report of :func:`simulate_strategies`: one line per strategy, then the
    fastest.

    Parameters
    ----------
    out : dict
        :func:`simulate_strategies`'s summary.
    matrix : str
        The matrix's name, for the heading.

    Returns
    -------
    str
    """
    lines = [f"{matrix}: {out['rows']:,} rows, {out['nnz']:,} nonzeros on {out['nranks']:,} ranks, {out['ppn']} per "
             f"node ({out['partition']} rows), profile {out['profile']}",
             f"{'strategy':<18}{'predicted us':>13}{'messages':>11}{'max inter msgs':>16}{'MB moved':>10}"]
    for s, r in out["strategies"].items():
        lines.append(f"{s:<18}{r['predicted_s'] * 1e6:>13.2f}{r['messages']:>11,}{r['inter_node_msgs_max']:>16,}"
                     f"{r['bytes'] / 1e6:>10.3f}")
    lines.append(f"fastest: {out['fastest']}")
    return "\n".join(lines)


def format_simulation(out, matrix):
    """The text report of :func:`simulate_algorithms`: per algorithm the predicted time and
    the slowest rank's breakdown (ms), the ranks whose factor fits their share of the
    last-level cache (where any does), then the fastest.

    Parameters
    ----------
    out : dict
        :func:`simulate_algorithms`'s summary.
    matrix : str
        The matrix's name, for the heading.

    Returns
    -------
    str
    """
    lines = [f"{matrix}: {out['rows']:,} rows, {out['supernodes']:,} supernodes, nnz(L) {out['nnz_L']:,}; "
             f"{out['nranks']:,} ranks, {out['ppn']} per node, profile {out['profile']}",
             "", "predicted solve time and the slowest rank's breakdown (ms): floating point, communication inside "
             "the grids (XY) and between them (Z), waits included, and the moves of b and x",
             f"{'algorithm':<20}{'grid':>10}{'predicted':>11}{'fp':>9}{'XY comm':>9}{'Z comm':>9}{'b/x move':>9}"
             f"{'messages':>11}{'events/s':>11}"]
    for a, r in out["algorithms"].items():
        b = r["breakdown"]
        eps = r["events_per_s"]
        lines.append(f"{a:<20}{'x'.join(map(str, r['grid'])):>10}{r['predicted_s'] * 1e3:>11.3f}"
                     + "".join(f"{b[c + '_s'] * 1e3:>9.3f}" for c in CATEGORIES if c != "idle")  # 0: the slowest
                     + f"{r['messages']:>11,}{(eps or 0):>11.2e}")
    others = [f"{a} {s:.2f}x its time" for a, s in out["speedup_of_fastest"].items() if a != out["fastest"]]
    if any(r.get("ranks_in_cache") for r in out["algorithms"].values()):
        lines.append("ranks whose factor fits their share of the last-level cache: "
                     + ", ".join(f"{a} {r['ranks_in_cache']:,}" for a, r in out["algorithms"].items()))
    lines.append("")
    lines.append(f"fastest: {out['fastest']}" + ("; " + ", ".join(others) if others else ""))
    return "\n".join(lines)


_COLORS = {"fp": "tab:blue", "compute": "tab:blue", "xy_comm": "tab:orange", "comm": "tab:orange",
           "z_comm": "tab:green", "redistribute": "tab:purple", "idle": "lightgray"}


def plot_balance(results, path, title):
    """PNG: per algorithm, every rank's predicted time stacked by category (the SC'23
    paper's load-balance figures), ranks in order.

    Parameters
    ----------
    results : dict
        ``{algorithm: SimResult}`` (:func:`simulate_algorithms`'s, or any other name).
    path : str, path or None
        The PNG file; None to get the figure back.
    title : str
        The figure's title.

    Returns
    -------
    matplotlib.figure.Figure or None
        The figure when ``path`` is None, else None (saved and closed).
    """
    plt = pyplot()
    fig, axes = plt.subplots(1, len(results), figsize=(4.5 * len(results), 3.8), sharey=True, squeeze=False)
    for ax, (a, r) in zip(axes[0], results.items()):
        per = r.per_rank()
        x = np.arange(r.nranks)
        ax.stackplot(x, *[per[c] * 1e3 for c in r.categories], labels=r.categories,
                     colors=[_COLORS.get(c) for c in r.categories], step="mid")
        where = f" ({'x'.join(map(str, r.info['grid']))})" if "grid" in r.info else ""
        ax.set(title=f"{a}{where}: {r.predicted_s * 1e3:.3g} ms", xlabel="rank")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("predicted time (ms)")
    handles, labels = axes[0][-1].get_legend_handles_labels()  # below the panels: it hid the last ranks
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return finish(fig, path)


def plot_timeline(results, path, title):
    """PNG: a Gantt chart per algorithm (rank against time, coloured by category).

    Parameters
    ----------
    results : dict
        ``{algorithm: SimResult}``, simulated with ``timeline=True``.
    path : str, path or None
        The PNG file; None to get the figure back.
    title : str
        The figure's title.

    Returns
    -------
    matplotlib.figure.Figure or None
        The figure when ``path`` is None, else None (saved and closed).
    """
    from matplotlib.ticker import MaxNLocator

    plt = pyplot()
    fig, axes = plt.subplots(len(results), 1, figsize=(10, 1.2 + 0.25 * max(r.nranks for r in results.values())
                                                        * len(results)), squeeze=False)
    for ax, (a, r) in zip(axes[:, 0], results.items()):
        tl = r.timeline
        for k, c in enumerate(r.categories):
            rows = tl[tl[:, 1] == k]
            for rank in np.unique(rows[:, 0]).astype(int):
                seg = rows[rows[:, 0] == rank]
                ax.broken_barh(list(zip(seg[:, 2] * 1e3, (seg[:, 3] - seg[:, 2]) * 1e3)), (rank - 0.4, 0.8),
                               color=_COLORS.get(c), label=c if rank == rows[0, 0] else None)
        ax.set(ylabel="rank", xlim=(0, r.predicted_s * 1e3), ylim=(r.nranks - 0.5, -0.5),
               title=a + (f" ({'x'.join(map(str, r.info['grid']))})" if "grid" in r.info else ""))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(fontsize=7, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=len(r.categories), frameon=False)
    axes[-1, 0].set_xlabel("time (ms)")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.98))  # the title above the first panel, not on it
    return finish(fig, path)
