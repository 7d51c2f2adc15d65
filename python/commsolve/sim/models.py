"""The simulator's models from a machine profile (:mod:`commsolve.model.profile`): the
network (alpha and rate per locality and protocol, the node's injection limit, the CPU
overhead o per message end, the queue search gamma) and the compute (flop rate, memory
bandwidth, call overhead, the rate of copies and packs of message data, per rank, and the
last-level cache where the profile gives one)."""

from __future__ import annotations

import math

from .. import _core
from ..model.profile import LEVELS, PROTOCOLS, ProfileError, load_profile

__all__ = ["network_model", "compute_model", "simulation_profile"]


def simulation_profile(profile):
    """The profile, checked to carry what the simulator needs beyond the cost models'
    fields.

    Parameters
    ----------
    profile : str, path or MachineProfile
        A bundled profile's name, a TOML path or a MachineProfile
        (:func:`~commsolve.model.load_profile`).

    Returns
    -------
    MachineProfile
        The loaded profile (``profile`` itself when it is one).

    Raises
    ------
    ProfileError
        When the profile has no ``overhead`` or no ``[compute]`` table (the message says to
        run ``commsolve calibrate`` again, which measures them, or to use a bundled profile
        such as cori-haswell), or cannot be loaded.
    """
    prof = load_profile(profile)
    missing = [f for f, v in (("overhead", prof.overhead), ("[compute]", prof.compute)) if v is None]
    if missing:
        raise ProfileError(f"profile '{prof.name}' has no {' and no '.join(missing)}, which the simulator needs "
                           f"(run 'commsolve calibrate' again, which measures them, or use a bundled profile "
                           f"such as cori-haswell)")
    return prof


def network_model(profile, ppn):
    """The simulator's network model for ``ppn`` ranks per node.

    On-node messages between ranks of one socket (``sockets_per_node`` sockets of ppn /
    sockets ranks each) use the intra-socket figures where the profile has them, the others
    intra-node; off-node ones inter-node. A profile with a ``[torus]`` gives the links' rate
    and per-hop latency: on a topology with a torus (:meth:`Topology.torus`) off-node
    messages then share the links of their routes.

    Parameters
    ----------
    profile : str, path or MachineProfile
        The machine profile (:func:`simulation_profile`).
    ppn : int
        Ranks per node (for the socket split).

    Returns
    -------
    NetworkModel
        The C++ ``NetworkModel``: alpha and rate per locality and protocol, the node's
        injection limit (0, no limit, where the profile gives none), the protocol
        thresholds, the overhead o, the any-source and engine overheads, the queue search
        gamma and the torus's link rate and hop latency (0 without a ``[torus]``).

    Raises
    ------
    ProfileError
        As :func:`simulation_profile`.
    """
    prof = simulation_profile(profile)
    alpha, rate = [], []
    for level in LEVELS:
        src = level if prof.has_level(level) else "intra_node"
        alpha += [prof.alpha[src, p] for p in PROTOCOLS]
        rate += [prof.rate[src, p] for p in PROTOCOLS]
    injection = [prof.injection.get(p, math.inf) for p in PROTOCOLS]
    injection = [0.0 if not math.isfinite(v) else float(v) for v in injection]
    socket = 0
    if prof.has_level("intra_socket") and prof.sockets_per_node > 1:
        socket = max(1, int(ppn) // prof.sockets_per_node)
    torus = prof.torus or {}
    return _core.NetworkModel(alpha, rate, injection, int(prof.short_max), int(prof.eager_max), float(prof.overhead),
                              socket, float(prof.any_source), float(prof.engine_overhead), float(prof.gamma),
                              float(torus.get("link_rate", 0.0)), float(torus.get("hop_latency", 0.0)))


def compute_model(profile):
    """The simulator's compute model: the profile's ``[compute]`` table (flop rate, memory
    bandwidth, call overhead, the rate of copies and packs of message data, per rank, and
    the last-level cache where the profile gives one).

    Parameters
    ----------
    profile : str, path or MachineProfile
        The machine profile (:func:`simulation_profile`).

    Returns
    -------
    ComputeModel
        The C++ ``ComputeModel``; the cache's size and rate are 0 (no cache) and
        ``triangular_rate`` 0 (the flop rate then prices triangular solves) where the profile
        gives none.

    Raises
    ------
    ProfileError
        As :func:`simulation_profile`.
    """
    prof = simulation_profile(profile)
    c = prof.compute
    return _core.ComputeModel(float(c["flop_rate"]), float(c["bandwidth"]), float(c["call_overhead"]),
                              float(c["copy_rate"]), float(c.get("cache_bytes", 0.0)),
                              float(c.get("cache_bandwidth", 0.0)), float(c.get("triangular_rate", 0.0)))
