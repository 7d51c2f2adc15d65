"""Binomial against rectangular multicasts on a torus (Solomonik, Bhatele and Demmel, SC'11):
one broadcast of m bytes from a node to every node of a torus partition, cut into pieces that
travel as separate collectives (pipelined, and on rectangular trees each piece in another
dimension order), replayed by the simulator with the links of every route shared (contention)
and beside the paper's models::

  binomial     t = log2 P (m / B_n + 2 o + L)
  rectangular  t = m / B_n + 2 (d + 1) o + 3 L + d P^(1/d) (2 o + L)

with B_n the link rate, o the profile's overhead and L its inter-node latency (alpha - 2 o).
The simulator's binomial tree pays what the model leaves out ("we assume no contention"):
its long edges share links."""

from __future__ import annotations

import time

import numpy as np

from .. import _core
from ..model import formulas
from ..topology import Topology
from ..trees import Collectives, tree_shape
from .collectives import CollectivesSchedule, simulate_collectives
from .models import simulation_profile

__all__ = ["multicast_set", "link_loads", "multicast_study", "format_multicast_study"]


def multicast_set(topology, nbytes, piece_bytes, root=0):
    """One broadcast of ``nbytes`` from ``root`` to one rank per node (each node's first),
    as ceil(nbytes / piece_bytes) collectives of consecutive ids (the pieces).

    Parameters
    ----------
    topology : Topology
        The ranks' nodes.
    nbytes : int
        The bytes broadcast (in 8-byte values, at least one).
    piece_bytes : int
        The most bytes of one piece (at least one value).
    root : int
        The rank broadcasting (a participant even if not its node's first).

    Returns
    -------
    Collectives
        One broadcast per piece, ids 0, 1, ...
    """
    leaders = sorted({int(topology.ranks_on_node(n)[0]) for n in range(topology.num_nodes)} | {root})
    values = max(1, int(nbytes) // 8)
    per = max(1, int(piece_bytes) // 8)
    pieces = [min(per, values - s) for s in range(0, values, per)]
    return Collectives(list(range(len(pieces))), ["broadcast"] * len(pieces), [root] * len(pieces),
                       [leaders] * len(pieces), pieces)


def link_loads(collectives, topology, shape):
    """Bytes every torus link carries for ``collectives`` on trees of ``shape`` (each tree edge
    between nodes routed dimension by dimension).

    Parameters
    ----------
    collectives : Collectives
        The collectives (:func:`multicast_set`).
    topology : Topology
        A torus topology (:meth:`Topology.torus`).
    shape : str
        The tree shape.

    Returns
    -------
    ndarray
        Bytes per link id: each tree edge between nodes adds ``8 (count + 1)`` bytes (its
        collective's values and one more) to every link of its route.
    """
    loads = np.zeros(max(1, int(np.prod(topology.torus_dims)) * 2 * len(topology.torus_dims)))
    plans = _core.build_tree_plans_virtual(collectives.core, tree_shape(shape), topology)
    for p in plans:
        parents = p.parents
        for c, parent in zip(p.index, parents):  # each edge once: from the child's side
            a, b = topology.node_of(int(parent)) if parent >= 0 else -1, topology.node_of(p.rank)
            if parent >= 0 and a != b:
                np.add.at(loads, topology.route(a, b), 8 * (collectives.counts[c] + 1))
    return loads


def multicast_study(dims, nbytes, profile, piece_bytes=32768, shapes=("binomial", "rectangular"), ppn=1):
    """One multicast of ``nbytes`` to every node of a torus of extents ``dims`` (``ppn`` ranks
    per node, the multicast reaching one per node), simulated per tree shape with ``profile``'s
    models (its ``[torus]`` gives the link rate and per-hop latency), beside the seed's models.

    Parameters
    ----------
    dims : sequence of int
        The torus's extents, in nodes.
    nbytes : int
        The bytes multicast.
    profile : str, path or MachineProfile
        The machine profile; it must have a ``[torus]`` table.
    piece_bytes : int
        The most bytes of one piece (:func:`multicast_set`).
    shapes : iterable of str
        The tree shapes simulated.
    ppn : int
        Ranks per node.

    Returns
    -------
    dict
        The study's parameters, ``models`` (the binomial and rectangular models' seconds,
        :func:`commsolve.model.formulas.binomial_multicast` and
        :func:`~commsolve.model.formulas.rectangular_multicast`) and ``shapes``: per shape
        the predicted seconds, the bandwidth reached (m / t) relative to one link's, the most
        bytes one link carried, and the links used; with both shapes,
        ``rectangular_over_binomial`` (simulated, and in ``models`` by the models).

    Raises
    ------
    ValueError
        When the profile has no ``[torus]`` table.
    """
    prof = simulation_profile(profile)
    if prof.torus is None:
        raise ValueError(f"profile {prof.name} has no [torus] table (link_rate, hop_latency, dims)")
    topo = Topology.torus(list(dims), int(ppn))
    P = topo.num_nodes
    d = len(dims)
    B = prof.torus["link_rate"]
    o = prof.overhead or 0.0
    L = max(0.0, prof.alpha["inter_node", "rend"] - 2 * o)
    S = multicast_set(topo, nbytes, piece_bytes)
    out = {"dims": list(dims), "nodes": P, "bytes": int(nbytes), "piece_bytes": int(piece_bytes),
           "pieces": len(S), "profile": prof.name, "link_rate": B, "shapes": {},
           "models": {"binomial_s": float(formulas.binomial_multicast(nbytes, P, B, o, L)),
                      "rectangular_s": float(formulas.rectangular_multicast(nbytes, P, d, B, o, L))}}
    for shape in shapes:
        t = time.perf_counter()
        r = simulate_collectives(CollectivesSchedule(S, shape), topo, prof)
        loads = link_loads(S, topo, shape)
        out["shapes"][shape] = {"predicted_s": r.predicted_s, "link_bandwidths": nbytes / r.predicted_s / B,
                                "max_link_bytes": float(loads.max()), "links_used": int((loads > 0).sum()),
                                "wall_s": time.perf_counter() - t}
    sh = out["shapes"]
    if "binomial" in sh and "rectangular" in sh:
        out["rectangular_over_binomial"] = sh["binomial"]["predicted_s"] / sh["rectangular"]["predicted_s"]
        out["models"]["rectangular_over_binomial"] = out["models"]["binomial_s"] / out["models"]["rectangular_s"]
    return out


def format_multicast_study(s):
    """The text report of a :func:`multicast_study`: one line per tree shape, simulated
    beside the model.

    Parameters
    ----------
    s : dict
        :func:`multicast_study`'s result.

    Returns
    -------
    str
    """
    lines = [f"multicast of {s['bytes']:,} bytes to {s['nodes']:,} nodes of a {'x'.join(map(str, s['dims']))} torus "
             f"({s['profile']}, link {s['link_rate'] / 1e6:.0f} MB/s, {s['pieces']} pieces of {s['piece_bytes']:,} B)",
             f"  {'tree':<12}{'simulated s':>12}{'x link bw':>10}{'model s':>10}{'max link MB':>12}"]
    for shape, r in s["shapes"].items():
        model = s["models"].get(f"{shape}_s")
        lines.append(f"  {shape:<12}{r['predicted_s']:>12.5f}{r['link_bandwidths']:>10.2f}"
                     f"{model if model is not None else float('nan'):>10.5f}{r['max_link_bytes'] / 1e6:>12.2f}")
    if "rectangular_over_binomial" in s:
        lines.append(f"  rectangular over binomial: {s['rectangular_over_binomial']:.1f}x simulated, "
                     f"{s['models']['rectangular_over_binomial']:.1f}x by the models")
    return "\n".join(lines)
