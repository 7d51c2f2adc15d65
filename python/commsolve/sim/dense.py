"""The 2.5D multiply and LU (:mod:`commsolve.dense`) replayed in the simulator (C++
``sim/dense_sim``): every rank's tree plan run by the same machines the MPI run drives, its
GEMMs, triangular solves, copies and sums priced by the profile's compute model, its messages
by the network model. :func:`replication_study` compares the replication factors c of one
rank count (sqrt(p/c) x sqrt(p/c) x c grids), as Solomonik and Demmel's strong-scaling
figures do."""

from __future__ import annotations

import math
import time

import numpy as np

from .. import _core
from ..dense import ROLES, words_leading_term
from ..dense.algorithms import PANEL, PIECE, check_pivoting
from ..dense.matrix import DEFAULT_NB
from ..topology import Topology
from ..trees import tree_shape
from .models import compute_model, network_model, simulation_profile
from .result import SimResult

__all__ = ["simulate_dense", "square_grids", "replication_study", "format_replication_study"]

KINDS = ("matmul", "lu")


PLACEMENTS = ("ranks", "layers")


def grid_nodes(grid, ppn, placement):
    """The node of each rank of ``grid`` (pr, pc, c), ``ppn`` per node: "ranks" in rank order
    (layer 0's ranks first: a layer spans nodes), "layers" in (x, y, z) order with z fastest (a
    rank's copies on the other layers share its node or the next ones: the sums and copies
    along z stay inside nodes or between neighbours)."""
    pr, pc, c = grid
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)}, got {placement!r}")
    r = np.arange(pr * pc * c)
    if placement == "ranks":
        return r // ppn
    z, xy = r // (pr * pc), r % (pr * pc)
    return (xy * c + z) // ppn


def simulate_dense(kind, n, grid, profile, nb=DEFAULT_NB, ppn=None, tree="binary", m=None, k=None, panel=PANEL,
                   piece=PIECE, timeline=False, trace=False, torus=None, pivoting="none", placement="ranks"):
    """Replays the 2.5D multiply or LU on ``grid`` with ``profile``'s models.

    Parameters
    ----------
    kind : {"matmul", "lu"}
        "matmul": A m x k times B k x n; "lu": n x n.
    n : int
        The size (the multiply's n).
    grid : tuple of int
        (pr, pc, c).
    profile : str, path or MachineProfile
        The machine profile (:func:`~commsolve.sim.simulation_profile`).
    nb : int
        The block size.
    ppn : int, optional
        Ranks per node (default the profile's).
    tree : str
        The shape of every broadcast and reduction.
    m, k : int, optional
        The multiply's other shapes (default n).
    panel : int
        The widest SUMMA panel (as :class:`commsolve.dense.algorithms.MatmulPlan`'s).
    piece : int
        Moves go in pieces of at most this many values.
    timeline : bool
        Record every rank's (rank, category, begin, end) rows.
    trace : bool
        Record every rank's operations (for :func:`~commsolve.sim.write_goal`).
    torus : sequence of int, optional
        Node extents whose product is the node count: the nodes make that torus and
        messages share the links of their routes (the profile's ``[torus]`` rates).
    pivoting : {"none", "tournament"}
        LU's: "tournament" models the pivots as a random matrix's, each step's pivot rows
        drawn uniformly from the rows left.
    placement : {"ranks", "layers"}
        How the ranks are put on the nodes (:func:`grid_nodes`).

    Returns
    -------
    SimResult
        A :class:`~commsolve.sim.SimResult` (categories compute, comm, idle; statistics steps
        :data:`commsolve.dense.ROLES`).

    Raises
    ------
    ValueError
        When ``kind``, ``pivoting``, ``placement`` or the tree shape is unknown, pivoting is
        asked of a multiply, or the torus does not hold the grid's ranks; a
        :class:`~commsolve.model.ProfileError` when ``profile`` lacks the simulator's fields.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    tournament = check_pivoting(pivoting) == "tournament"
    if tournament and kind != "lu":
        raise ValueError("pivoting is for kind 'lu'")
    prof = simulation_profile(profile)
    pr, pc, c = (int(v) for v in grid)
    p = pr * pc * c
    ppn = int(ppn or prof.ppn or 1)
    if torus is not None:
        if int(np.prod(torus)) * ppn != p:
            raise ValueError(f"a {'x'.join(map(str, torus))} torus of {ppn} ranks per node holds "
                             f"{int(np.prod(torus)) * ppn} ranks, the grid {p}")
        topo = Topology.torus_placed(list(torus), grid_nodes((pr, pc, c), ppn, placement).tolist())
    else:
        topo = Topology.from_node_list(grid_nodes((pr, pc, c), ppn, placement).tolist())
    m = n if m is None else m
    k = n if k is None else k
    t0 = time.perf_counter()
    d = _core.simulate_dense(kind, int(m), int(n), int(k), int(nb), (pr, pc, c), int(panel), int(piece), tree_shape(tree), topo,
                             network_model(prof, topo.max_ppn), compute_model(prof), bool(timeline), bool(trace),
                             tournament)
    info = {"workload": kind, "grid": f"{pr}x{pc}x{c}", "n": int(n), "nb": int(nb), "tree": str(tree),
            "pivoting": pivoting if kind == "lu" else None, "placement": placement,
            "piece": int(piece), "torus": list(torus) if torus is not None else None, "placement": placement,
            "profile": prof.name, "ppn": ppn,
            "wall_s": time.perf_counter() - t0}
    return SimResult.from_core(d, info)


def square_grids(p, replications):
    """The (q, q, c) grids of p ranks for each c in ``replications`` with p / c a perfect square
    (the others skipped).

    Parameters
    ----------
    p : int
        The number of ranks.
    replications : iterable of int
        The replication factors c.

    Returns
    -------
    list of tuple of int
        The ``(q, q, c)`` grids, in the order of ``replications``.

    Examples
    --------
    >>> from commsolve.sim.dense import square_grids
    >>> square_grids(64, (1, 4, 8, 16))
    [(8, 8, 1), (4, 4, 4), (2, 2, 16)]
    """
    out = []
    for c in replications:
        q = math.isqrt(p // c) if p % c == 0 else 0
        if q > 0 and q * q * c == p:
            out.append((q, q, int(c)))
    return out


def replication_study(kind, n, p, profile, replications=(1, 4, 16), nb=DEFAULT_NB, ppn=None, tree="binary",
                      panel=PANEL, piece=PIECE, torus=None, progress=None, pivoting="none", placement="ranks"):
    """``kind`` of size n on p ranks for each replication factor c (grids of
    :func:`square_grids`).

    Parameters
    ----------
    kind : {"matmul", "lu"}
        The multiply or LU, as :func:`simulate_dense`.
    n : int
        The size.
    p : int
        The number of ranks.
    profile : str, path or MachineProfile
        The machine profile (:func:`~commsolve.sim.simulation_profile`).
    replications : iterable of int
        The replication factors c (those with p / c not a perfect square are skipped).
    nb, ppn, tree, panel, piece, torus, pivoting, placement
        See :func:`simulate_dense`.
    progress : callable, optional
        ``progress(grids)`` gives the iterable of grids the study runs over (a progress
        bar's).

    Returns
    -------
    dict
        The study's parameters and ``runs``, keyed by ``str(c)``: per c the grid, the
        predicted seconds, the speedup over the smallest c, the share of the profile's flop
        rate reached, the slowest rank's breakdown, and the words each rank received (max,
        counted by the simulator) beside the formula's leading term.

    Raises
    ------
    ValueError
        When no replication factor makes p / c a perfect square, when n in blocks of nb
        leaves some process rows or columns of a grid without blocks (idle ranks make any
        comparison meaningless), or as :func:`simulate_dense`.
    """
    prof = simulation_profile(profile)
    grids = square_grids(p, replications)
    if not grids:
        raise ValueError(f"no replication factor in {list(replications)} makes p/c = {p}/c a perfect square")
    for g in grids:
        if -(-n // nb) < max(g[0], g[1]):
            raise ValueError(f"n = {n} in blocks of {nb} is {-(-n // nb)} blocks per dimension: on the "
                             f"{'x'.join(map(str, g))} grid some process rows or columns would hold none (idle "
                             f"ranks make any comparison meaningless); use nb <= {n // max(g[0], g[1])}")
    flops = 2.0 * n ** 3 if kind == "matmul" else 2.0 * n ** 3 / 3
    out = {"workload": kind, "n": n, "nranks": p, "profile": prof.name, "nb": nb, "tree": str(tree), "piece": piece,
           "pivoting": pivoting if kind == "lu" else None, "placement": placement,
           "torus": list(torus) if torus is not None else None, "runs": {}}
    base = None
    for g in (grids if progress is None else progress(grids)):
        r = simulate_dense(kind, n, g, prof, nb=nb, ppn=ppn, tree=tree, panel=panel, piece=piece, torus=torus,
                           pivoting=pivoting, placement=placement)
        panels = [i for i, role in enumerate(ROLES[kind]) if role.startswith("panel")]
        words = np.array([s.words_received(panels) for s in r.recorded], dtype=float)
        base = r.predicted_s if base is None else base
        out["runs"][str(g[2])] = {
            "grid": "x".join(map(str, g)), "predicted_s": r.predicted_s, "speedup": base / r.predicted_s,
            "flop_rate_share": flops / r.predicted_s / p / prof.compute["flop_rate"],
            "breakdown": r.breakdown(), "words_max": float(words.max()), "words_mean": float(words.mean()),
            "all_words_max": float(max(s.words_received() for s in r.recorded)),
            "words_formula": words_leading_term(kind, n, n, n, g), "messages": int(r.messages[:, 0].sum()),
            "simulate_s": r.run_s, "roles": list(ROLES[kind])}
    return out


def format_replication_study(s):
    """The text report of a :func:`replication_study`: one line per replication factor.

    Parameters
    ----------
    s : dict
        :func:`replication_study`'s result.

    Returns
    -------
    str
    """
    piv = f", {s['pivoting']} pivoting" if s.get("pivoting") else ""
    lines = [f"{s['workload']} of n = {s['n']:,} on {s['nranks']:,} simulated ranks ({s['profile']}, blocks of "
             f"{s['nb']}, {s['tree']} trees{piv})",
             f"  {'c':>4} {'grid':>12} {'predicted s':>12} {'speedup':>8} {'of F':>6} {'words/rank':>12} "
             f"{'formula':>12}"]
    for c, r in s["runs"].items():
        lines.append(f"  {c:>4} {r['grid']:>12} {r['predicted_s']:>12.4f} {r['speedup']:>8.2f} "
                     f"{100 * r['flop_rate_share']:>5.0f}% {r['words_max']:>12,.0f} {r['words_formula']:>12,.0f}")
    return "\n".join(lines)
