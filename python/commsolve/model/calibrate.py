"""Calibration: measure this machine under MPI and fit a MachineProfile.

Measurements (collective, :func:`measure`): ping-pong across message sizes between an
on-node and an off-node pair of ranks (nodes as the Topology says, so virtual nodes work);
with several ranks per node and at least two nodes, an injection test with every rank of
one node sending to a partner on another at once; the thesis' HighVolumePingPong
(Algorithm 3.1) with matched and with reversed tags; for the simulator, the CPU time of
posting a send (LogGP's o), what a message costs more through the any-source message
engine, and the solve's block kernel timed on every rank at once, in cache, streaming
from memory and over growing working sets (where the last-level cache ends). Fits (pure
functions, testable on synthetic data): alpha and R_b per protocol range by least squares
on relative error, R_N from the injection test, gamma from the reversed-minus-matched
times (eq. 3.1), the compute model's call overhead, flop rate, bandwidth and cache
(:func:`fit_compute`).
"""

from __future__ import annotations

import time

import numpy as np

from .profile import PROTOCOLS, MachineProfile

__all__ = ["measure", "fit_postal", "choose_thresholds", "fit_injection", "fit_gamma", "fit_cache", "fit_compute",
           "fit_profile", "plot_calibration"]

SIZES = [1 << k for k in range(0, 23)]  # 1 B .. 4 MiB; protocol switches then refined (_refine)
REFINE_STEPS = 5  # bisections of the gap around each protocol switch (to 1/32 of it)
QUICK_SIZES = [1 << k for k in range(0, 21, 2)]
HVPP_COUNTS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
HVPP_BYTES = 8
# The solve's panel products (m, w) timed for the compute model, one right-hand side.
CACHE_SHAPES = [(32, 8), (64, 16), (128, 32)]  # a working set of 256 KiB: in cache
STREAM_SHAPES = [(64, 16), (128, 32), (512, 64)]  # a working set of 512 MiB: from memory
CACHE_BYTES, STREAM_BYTES = 1 << 18, 1 << 29
# The last-level cache: the panel product over working sets of 1 MiB .. 512 MiB (steps of
# sqrt 2, quick: 2); where its rate falls to the memory's is the rank's share of the cache.
SWEEP_SHAPE = (64, 16)
TRIANGULAR_WIDTHS = (16, 32, 64)  # diagonal blocks solved by dtrsm (the per-block kernels), in cache
SWEEP_BYTES = [int(2 ** (20 + k / 2)) for k in range(19)]
QUICK_SWEEP_BYTES = SWEEP_BYTES[::2]
CACHE_RATIO = 1.5  # working sets read at least this times faster than memory come from a cache
CACHE_KEEP = 0.9  # the cache ends at the largest working set still read at this fraction of its rate
PACK_SIZES = [256, 4096]  # doubles gathered through an index array (a message's pack), in cache


# ---- fitting ------------------------------------------------------------------------
def _weighted_line(x, y):
    """alpha, beta minimizing sum(((alpha + beta x - y) / y)^2), alpha >= 0, beta > 0."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    w = 1.0 / y
    A = np.stack([w, x * w], axis=1)
    (alpha, beta), *_ = np.linalg.lstsq(A, np.ones_like(y), rcond=None)
    if alpha < 0:  # latency cannot be negative: fit through the origin
        alpha, beta = 0.0, float(np.sum(x * w * w * y) / np.sum((x * w) ** 2))
    if beta <= 0:  # flat times (latency-bound range): keep the latency, rate effectively infinite
        alpha, beta = float(np.average(y, weights=w * w)), 1e-15
    return float(alpha), float(beta)


def _rel_error(model, measured):
    model, measured = np.asarray(model, float), np.asarray(measured, float)
    return float(np.sqrt(np.mean(((model - measured) / measured) ** 2)))


def fit_postal(sizes, times, short_max, eager_max):
    """The postal model's alpha and rate per protocol from one-way times of messages of
    ``sizes`` bytes (least squares on relative error). A range with fewer than two sizes
    borrows the fit of its neighbour.

    Parameters
    ----------
    sizes : array_like
        Message sizes (bytes).
    times : array_like
        One-way seconds, one per size.
    short_max : int
        The protocol threshold: the largest size of the short range.
    eager_max : int
        The largest size of the eager range.

    Returns
    -------
    dict
        Per protocol: ``{"short": {"alpha", "rate", "rel_error", "points"}, ...}``; a
        borrowed fit has ``points`` 0 and ``borrowed_from`` (the protocol it was taken from).

    Raises
    ------
    ValueError
        When no protocol range has two sizes.
    """
    sizes, times = np.asarray(sizes, float), np.asarray(times, float)
    ranges = {"short": sizes <= short_max, "eager": (sizes > short_max) & (sizes <= eager_max),
              "rend": sizes > eager_max}
    fits = {}
    for proto, sel in ranges.items():
        if sel.sum() >= 2:
            a, b = _weighted_line(sizes[sel], times[sel])
            fits[proto] = {"alpha": a, "rate": 1.0 / b, "points": int(sel.sum()),
                           "rel_error": _rel_error(a + b * sizes[sel], times[sel])}
    if not fits:
        raise ValueError("calibration needs at least two message sizes in some protocol range")
    for i, proto in enumerate(PROTOCOLS):
        if proto not in fits:
            near = min(fits, key=lambda p: abs(PROTOCOLS.index(p) - i))
            fits[proto] = {**fits[near], "points": 0, "borrowed_from": near}
    return fits


def choose_thresholds(sizes, times):
    """The split of the measured sizes into three ranges, each of at least two sizes, whose
    postal fits have the smallest total squared relative error: the protocol switches of
    the MPI in use, read off its own timings.

    Parameters
    ----------
    sizes : array_like
        Message sizes (bytes), ascending.
    times : array_like
        One-way seconds, one per size.

    Returns
    -------
    short_max, eager_max : int
        The last size of the first and of the second range.

    Raises
    ------
    ValueError
        With fewer than 6 sizes.
    """
    sizes, times = np.asarray(sizes, float), np.asarray(times, float)
    n = sizes.size
    if n < 6:
        raise ValueError("finding protocol thresholds needs at least 6 message sizes")

    def cost(lo, hi):
        a, b = _weighted_line(sizes[lo:hi], times[lo:hi])
        return float(np.sum(((a + b * sizes[lo:hi] - times[lo:hi]) / times[lo:hi]) ** 2))

    best = min(((cost(0, i) + cost(i, j) + cost(j, n), i, j) for i in range(2, n - 3) for j in range(i + 2, n - 1)))
    _, i, j = best
    return int(sizes[i - 1]), int(sizes[j - 1])


def fit_injection(ppn, sizes, times, alpha, rate):
    """R_N from the times for ``ppn`` concurrent senders: the slope of ``(T - alpha)``
    against ``ppn s`` is ``1 / min(R_N, ppn R_b)``.

    Parameters
    ----------
    ppn : int
        The concurrent senders of one node.
    sizes : array_like
        The bytes ``s`` each sends.
    times : array_like
        The seconds ``T``, one per size.
    alpha : float
        The inter-node start-up cost (s).
    rate : float
        One sender's rate ``R_b`` (bytes/s).

    Returns
    -------
    float
        R_N (bytes/s); inf when the node's injection does not limit below ``ppn R_b``
        (within 5 %).
    """
    x = ppn * np.asarray(sizes, float)
    y = np.asarray(times, float) - alpha
    slope = float(np.sum(x * y) / np.sum(x * x))
    effective = 1.0 / slope if slope > 0 else np.inf
    return effective if effective < 0.95 * ppn * rate else np.inf


def fit_gamma(counts, t_matched, t_reversed):
    """gamma from HighVolumePingPong (eq. 3.1): the extra time of reversed-order matching,
    ``t_reversed - t_matched = gamma n^2``, fitted through the origin.

    Parameters
    ----------
    counts : array_like
        The messages ``n`` of each round.
    t_matched : array_like
        Seconds per round with matched tags, one per count.
    t_reversed : array_like
        Seconds per round with reversed tags, one per count.

    Returns
    -------
    float
        gamma (seconds per queue search step); never negative.
    """
    n2 = np.asarray(counts, float) ** 2
    extra = np.asarray(t_reversed, float) - np.asarray(t_matched, float)
    return max(0.0, float(np.sum(extra * n2) / np.sum(n2 * n2)))


def fit_cache(sweep, bandwidth, sharing):
    """The last-level cache from the panel product's rates over growing working sets.

    The working sets read at least ``CACHE_RATIO`` times faster than the memory
    ``bandwidth`` come from a cache; the cache's rate is their median rate, and a rank's
    share of it the largest working set still read at ``CACHE_KEEP`` of that rate (the cliff
    is sharp: a solve sweeping a little more than the cache misses throughout), so the
    node's cache is that share times ``sharing``.

    Parameters
    ----------
    sweep : list of (int, float)
        ``[(bytes, bytes/s)]``: working sets and their rates.
    bandwidth : float
        The memory bandwidth (bytes/s).
    sharing : int
        The ranks of one node that timed the sweep at once.

    Returns
    -------
    tuple of float or None
        ``(cache_bytes, cache_bandwidth)``; None when no working set is that much faster
        (no cache level to model).
    """
    fast = [(b, r) for b, r in sweep if r >= CACHE_RATIO * bandwidth]
    if not fast:
        return None
    rate = float(np.median([r for _, r in fast]))
    share = max(b for b, r in fast if r >= CACHE_KEEP * rate)
    return float(share * sharing), rate


def fit_compute(kernels):
    """The simulator's compute model from kernel timings: ``call_overhead`` is the 1 x 1
    call, ``flop_rate`` the median in-cache rate ``2 m w / (t - c)``, ``bandwidth`` the
    median streaming rate ``8 (m w + m + w) / (t - c)``, ``copy_rate`` the median rate of
    packs, 16 bytes (read and write) per value, ``triangular_rate`` the median rate
    ``w^2 / (t - c)`` of the triangular solves (where timed), and the cache
    (:func:`fit_cache`) where the sweep finds one.

    Parameters
    ----------
    kernels : dict
        :func:`measure`'s ``kernels``: seconds per call of a 1 x 1 product (``unit``), of the
        in-cache and streaming shapes (``cache``, ``stream``: ``(m, w, t)``), of the packs
        (``pack``: ``(values, t)``), of the triangular solves (``triangular``: ``(w, t)``,
        optional) and of the working-set sweep (``sweep``: ``(bytes, t)``, optional, with
        ``sharing``).

    Returns
    -------
    dict
        The ``[compute]`` table of a profile.

    Raises
    ------
    ValueError
        When the kernel timings are no slower than an empty call, or give a model that is
        not finite and positive.
    """
    c = float(kernels["unit"])

    def rate(m, w, t, work):
        return work(m, w) / (t - c) if t > c else None

    def rates(rows, work):
        vals = [v for m, w, t in rows if (v := rate(m, w, t, work)) is not None]
        if not vals:
            raise ValueError("kernel timings no slower than an empty call: cannot fit the compute model")
        return float(np.median(vals))

    def streamed(m, w):
        return 8.0 * (m * w + m + w)

    fit = {"flop_rate": rates(kernels["cache"], lambda m, w: 2.0 * m * w),
           "bandwidth": rates(kernels["stream"], streamed), "call_overhead": c,
           "copy_rate": float(np.median([16.0 * n / t for n, t in kernels["pack"]]))}
    if "triangular" in kernels:
        fit["triangular_rate"] = rates([(w, w, t) for w, t in kernels["triangular"]], lambda m, w: float(w * w))
    if "sweep" in kernels:
        m, w = SWEEP_SHAPE
        sweep = [(b, v) for b, t in kernels["sweep"] if (v := rate(m, w, t, streamed)) is not None]
        cache = fit_cache(sweep, fit["bandwidth"], kernels["sharing"])
        if cache is not None:
            fit["cache_bytes"], fit["cache_bandwidth"] = cache
    if not all(np.isfinite(v) and v >= 0 for v in fit.values()):  # NaN fails too
        raise ValueError(f"kernel timings give a compute model that is not finite and positive: {fit}")
    return fit


def fit_profile(meas, name, short_max=None, eager_max=None):
    """A MachineProfile and a report of every fit from :func:`measure`'s result.

    Parameters
    ----------
    meas : dict
        :func:`measure`'s result.
    name : str
        The profile's name.
    short_max, eager_max : int, optional
        The protocol thresholds (the largest message of the short and of the eager
        protocol); those not given are found from the timings (:func:`choose_thresholds`).

    Returns
    -------
    profile : MachineProfile
        The fitted profile (``delta`` 0: contention is not measurable on one machine).
    report : dict
        Every fit: ``thresholds``, :func:`fit_postal`'s per level (``intra_node``,
        ``inter_node``: one copied from the other when the layout has no such pair),
        ``injection`` (where measured), ``gamma``, ``compute`` and ``overhead`` (where
        measured) and ``any_source``.

    Raises
    ------
    ValueError
        Without ping-pong measurements, or as :func:`choose_thresholds`,
        :func:`fit_postal` and :func:`fit_compute`.
    """
    report, alpha, rate, injection = {}, {}, {}, {}
    levels = {k: v for k, v in (("intra_node", meas.get("intra")), ("inter_node", meas.get("inter"))) if v}
    if not levels:
        raise ValueError("no ping-pong measurements to fit")
    if short_max is None or eager_max is None:
        pp = next(iter(levels.values()))
        found = choose_thresholds(pp["sizes"], pp["times"])
        short_max = found[0] if short_max is None else short_max
        eager_max = max(found[1], short_max) if eager_max is None else eager_max
    report["thresholds"] = {"short_max": short_max, "eager_max": eager_max}
    for level, pp in levels.items():
        report[level] = fit_postal(pp["sizes"], pp["times"], short_max, eager_max)
    notes = []
    for level, other in (("intra_node", "inter_node"), ("inter_node", "intra_node")):
        if level not in report:
            report[level] = report[other]
            notes.append(f"{level} copied from {other} (no such pair in this layout)")
    for level in ("intra_node", "inter_node"):
        for proto in PROTOCOLS:
            alpha[level, proto] = report[level][proto]["alpha"]
            rate[level, proto] = report[level][proto]["rate"]
    inj = meas.get("injection")
    if inj:
        r = fit_injection(inj["ppn"], inj["sizes"], inj["times"], alpha["inter_node", "rend"],
                          rate["inter_node", "rend"])
        report["injection"] = {"rate": r, "ppn": inj["ppn"]}
        if np.isfinite(r):
            injection["rend"] = r
    else:
        notes.append("no injection test (needs 2+ ranks per node and 2+ nodes): R_N unlimited")
    hv = meas.get("hvpp")
    gamma = fit_gamma(hv["counts"], hv["matched"], hv["reversed"]) if hv else 0.0
    report["gamma"] = gamma
    notes.append("delta (contention) not measurable on one machine: 0")
    overhead = meas.get("overhead")
    compute = fit_compute(meas["kernels"]) if "kernels" in meas else None
    if compute is not None:
        report["compute"] = compute
    if overhead is not None:
        report["overhead"] = overhead
    report["any_source"] = float(meas.get("any_source", 0.0))
    desc = f"calibrated {time.strftime('%Y-%m-%d')} on {meas.get('host', '?')}, {meas['nranks']} ranks, " \
           f"{meas['ppn']} per node; " + "; ".join(notes)
    prof = MachineProfile(name=name, alpha=alpha, rate=rate, injection=injection, short_max=short_max,
                          eager_max=eager_max, gamma=gamma, delta=0.0, ppn=meas["ppn"], description=desc,
                          overhead=overhead, any_source=report["any_source"], compute=compute)
    return prof, report


# ---- measuring (collective) ------------------------------------------------------------
ENGINE_POSTED = 64  # any-source receives the solves' message engine keeps posted (trees/engine.hpp)


def _pingpong(comm, me, partner, first, size, reps, posted=0):
    """One-way time of a ``size``-byte message between ranks ``first`` and ``partner``,
    timed in C++ (mpi4py would add about a microsecond a message): MPI_Send and MPI_Recv,
    or with ``posted`` > 0 as commsolve's message engine sends and receives (MPI_Isend;
    that many any-source receives completed by MPI_Waitany)."""
    from .. import _core

    return _core.time_pingpong(comm.py2f(), partner, me == first, size, reps, posted)


def _mpi():
    from .._collective import mpi

    return mpi()


def _series(comm, a, b, sizes, samples, tick, spreads=None):
    """Median one-way times between ranks a and b for every size; other ranks idle. With a
    list ``spreads``, appends each size's spread over its samples, (max - min) / median: the
    noise a loaded machine shows."""
    out = []
    for s in sizes:
        reps = 40 if s <= 65536 else 8
        vals = []
        for _ in range(samples):
            comm.Barrier()
            if comm.rank in (a, b):
                vals.append(_pingpong(comm, comm.rank, b if comm.rank == a else a, a, s, reps))
        med = float(np.median(vals)) if vals else 0.0
        spread = (max(vals) - min(vals)) / med if vals and med > 0 else 0.0
        med, spread = comm.bcast((med, spread), root=a)
        out.append(med)
        if spreads is not None:
            spreads.append(spread)
        tick()
    return out


def _refine(comm, pair, sizes, times, samples):
    """Collective. The sizes and times with more points where the protocol switches: between
    the last size of a range and the first of the next (a factor of two apart), midpoints
    are timed and each joins the side whose fit predicts it better, REFINE_STEPS times (Open
    MPI's 4 KB shared-memory eager limit, which counts its header, falls between 2 and 4 KB
    otherwise). The thresholds are chosen again from all points by :func:`fit_profile`."""
    a = pair[0]
    sizes, times = list(sizes), list(times)
    if len(sizes) < 6:
        return sizes, times
    thresholds = comm.bcast(choose_thresholds(sizes, times) if comm.rank == a else None, root=a)
    for k, t in enumerate(thresholds):
        i = sizes.index(t)
        if i + 1 >= len(sizes):
            continue
        lo, hi = sizes[i], sizes[i + 1]
        for _ in range(REFINE_STEPS):
            mid = (lo + hi) // 2
            if mid in (lo, hi):
                break
            tm = _series(comm, *pair, [mid], samples, lambda: None)[0]
            below = sizes.index(lo) + 1
            fits = fit_postal(sizes, times, *thresholds)
            under, over = fits[PROTOCOLS[k]], fits[PROTOCOLS[k + 1]]
            err = [abs(f["alpha"] + mid / f["rate"] - tm) for f in (under, over)]
            sizes.insert(below, mid)
            times.insert(below, tm)
            if err[0] <= err[1]:
                lo = mid
                thresholds = tuple(mid if j == k else v for j, v in enumerate(thresholds))
            else:
                hi = mid
    return sizes, times


def _hvpp(comm, a, b, counts, reversed_tags, samples):
    """Algorithm 3.1 between a and b: n messages one way, then n back; time per round."""
    res = []
    for n in counts:
        bufs = [np.zeros(HVPP_BYTES // 8) for _ in range(n)]
        send_tags = list(range(n))
        recv_tags = send_tags[::-1] if reversed_tags else send_tags
        vals = []
        for _ in range(samples):
            comm.Barrier()
            if comm.rank not in (a, b):
                continue
            other = b if comm.rank == a else a
            t = time.perf_counter()
            for phase in (0, 1):
                sending = (comm.rank == a) == (phase == 0)
                if sending:
                    reqs = [comm.Isend(bufs[i], dest=other, tag=send_tags[i]) for i in range(n)]
                else:
                    reqs = [comm.Irecv(bufs[i], source=other, tag=recv_tags[i]) for i in range(n)]
                _mpi().Request.Waitall(reqs)
            vals.append(time.perf_counter() - t)
        res.append(comm.bcast(float(np.median(vals)) if vals else 0.0, root=a))
    return res


def _kernels(comm, quick):
    """Every rank times the solve's panel product at once (the memory bandwidth and the
    share of the cache a rank gets while its node's other ranks stream too); the mean over
    ranks of each timing, and how many ranks shared this host (``sharing``)."""
    from .. import _core
    from ..topology import make_topology

    host = make_topology(comm=comm)  # the real node layout: the ranks that share this cache
    least = 0.02 if quick else 0.1

    def timed(m, w, working_set):
        comm.Barrier()
        t = _core.time_panel_products(m, w, 1, max(1, working_set // (8 * m * w)), least)
        return comm.allreduce(t) / comm.size

    def packed(n):
        comm.Barrier()
        return comm.allreduce(_core.time_pack(n, least)) / comm.size

    def triangular(w):
        comm.Barrier()
        return comm.allreduce(_core.time_triangular_solves(w, 1, max(1, CACHE_BYTES // (8 * w * w)), least)) / comm.size

    return {"unit": timed(1, 1, 1 << 12), "cache": [(m, w, timed(m, w, CACHE_BYTES)) for m, w in CACHE_SHAPES],
            "stream": [(m, w, timed(m, w, STREAM_BYTES)) for m, w in STREAM_SHAPES],
            "sweep": [(b, timed(*SWEEP_SHAPE, b)) for b in (QUICK_SWEEP_BYTES if quick else SWEEP_BYTES)],
            "sharing": len(host.ranks_on_node(host.node_of(comm.rank))),
            "pack": [(n, packed(n)) for n in PACK_SIZES],
            "triangular": [(w, triangular(w)) for w in TRIANGULAR_WIDTHS]}


def _any_source(comm, a, b, samples):
    """Seconds an 8-byte message takes more through the message engine (any-source receives,
    MPI_Waitany) than through MPI_Send/MPI_Recv: the median over samples of the difference."""
    vals = []
    for _ in range(samples):
        comm.Barrier()
        if comm.rank in (a, b):
            other = b if comm.rank == a else a
            vals.append(_pingpong(comm, comm.rank, other, a, 8, 400, ENGINE_POSTED)
                        - _pingpong(comm, comm.rank, other, a, 8, 400))
    return comm.bcast(max(0.0, float(np.median(vals))) if vals else 0.0, root=a)


def measure(comm, topology, quick=False, progress=None):
    """Collective. Runs every calibration measurement. Needs two ranks at least: it times
    messages between them.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        The ranks measured.
    topology : Topology
        ``comm``'s ranks on nodes (virtual nodes work): which pairs are on-node and
        off-node.
    quick : bool
        Fewer message sizes, samples and HighVolumePingPong counts, shorter kernel timings
        and a coarser working-set sweep.
    progress : callable, optional
        ``progress(done, total)`` as measurements end.

    Returns
    -------
    dict
        The same on all ranks: ``nranks``, ``ppn``, ``host``, ``sizes``, the ping-pongs
        ``intra`` and ``inter`` (where such a pair exists), ``noise``, ``hvpp``,
        ``overhead``, ``any_source``, ``kernels`` and ``injection`` (where measured), for
        :func:`fit_profile`.

    Raises
    ------
    ValueError
        When ``comm`` has fewer than 2 ranks.
    """
    import platform

    if comm.size < 2:
        raise ValueError(f"calibration times messages between ranks: it needs 2 ranks at least, got {comm.size}")

    nodes = topology.node_of_rank
    intra = next(((0, r) for r in range(1, comm.size) if nodes[r] == nodes[0]), None)
    inter = next(((0, r) for r in range(1, comm.size) if nodes[r] != nodes[0]), None)
    sizes = QUICK_SIZES if quick else SIZES
    samples = 3 if quick else 7
    counts = HVPP_COUNTS[:8] if quick else HVPP_COUNTS
    ppn = topology.max_ppn
    inj_ok = inter is not None and ppn >= 2
    inj_sizes = [1 << k for k in range(14, 23, 2)]
    total = len(sizes) * ((intra is not None) + (inter is not None)) + 4 + (len(inj_sizes) if inj_ok else 0)
    done = [0]

    def tick():
        done[0] += 1
        if progress:
            progress(done[0], total)

    meas = {"nranks": comm.size, "ppn": ppn, "host": platform.node(), "sizes": sizes}
    spreads = []
    for key, pair in (("intra", intra), ("inter", inter)):
        if pair is not None:
            times = _series(comm, *pair, sizes, samples, tick, spreads)
            meas[key] = dict(zip(("sizes", "times"), _refine(comm, pair, sizes, times, samples)), pair=pair)
    meas["noise"] = float(np.median(spreads)) if spreads else 0.0  # typical spread of repeated ping-pongs
    a, b = intra or inter
    meas["hvpp"] = {"pair": [a, b], "counts": counts, "bytes": HVPP_BYTES,
                    "matched": _hvpp(comm, a, b, counts, False, samples)}
    tick()
    meas["hvpp"]["reversed"] = _hvpp(comm, a, b, counts, True, samples)
    tick()
    from .. import _core

    meas["overhead"] = _core.time_send_overhead(comm.py2f(), a, b, 64, 8, samples)
    meas["any_source"] = _any_source(comm, a, b, samples)
    tick()
    meas["kernels"] = _kernels(comm, quick)
    tick()
    if inj_ok:
        src_node, dst_node = nodes[0], nodes[inter[1]]
        senders = topology.ranks_on_node(int(src_node))
        receivers = topology.ranks_on_node(int(dst_node))
        k = min(len(senders), len(receivers))
        times = []
        for s in inj_sizes:
            buf = np.zeros(s, dtype=np.uint8)
            vals = []
            for _ in range(samples):
                comm.Barrier()
                t = time.perf_counter()
                if comm.rank in senders[:k]:
                    comm.Send(buf, dest=receivers[senders.index(comm.rank)], tag=2)
                elif comm.rank in receivers[:k]:
                    comm.Recv(buf, source=senders[receivers.index(comm.rank)], tag=2)
                vals.append(time.perf_counter() - t)
            local = float(np.median(vals)) if comm.rank in receivers[:k] else 0.0
            times.append(comm.allreduce(local, op=_mpi().MAX))
            tick()
        meas["injection"] = {"ppn": k, "sizes": inj_sizes, "times": times}
    return meas


def plot_calibration(meas, profile, path):
    """Measured (dots) versus modelled (lines) times, and the HighVolumePingPong curves.

    Parameters
    ----------
    meas : dict
        :func:`measure`'s result.
    profile : MachineProfile
        The profile fitted to it.
    path : str, path or None
        The image file; None to get the figure back.

    Returns
    -------
    matplotlib.figure.Figure or None
        The figure when ``path`` is None, else None (saved and closed).
    """
    from .._plotting import finish, pyplot

    plt = pyplot()

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2))
    for key, level, color in (("intra", "intra_node", "C0"), ("inter", "inter_node", "C1")):
        if key not in meas:
            continue
        s = np.asarray(meas[key]["sizes"], float)
        proto = profile.protocol(s)
        model = [profile.alpha[level, PROTOCOLS[p]] + x / profile.rate[level, PROTOCOLS[p]] for x, p in zip(s, proto)]
        ax.loglog(s, meas[key]["times"], "o", color=color, label=f"{key}-node measured")
        ax.loglog(s, model, "-", color=color, label=f"{key}-node model")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("one-way time (s)")
    ax.set_title("ping-pong")
    ax.legend(fontsize=8)
    hv = meas["hvpp"]
    bx.loglog(hv["counts"], hv["matched"], "o-", label="matched tags")
    bx.loglog(hv["counts"], hv["reversed"], "s-", label="reversed tags")
    n = np.asarray(hv["counts"], float)
    bx.loglog(n, np.asarray(hv["matched"]) + profile.gamma * n * n, "--", label=f"matched + gamma n^2 (gamma={profile.gamma:.2e})")
    bx.set_xlabel("messages")
    bx.set_ylabel("time (s)")
    bx.set_title("HighVolumePingPong")
    bx.legend(fontsize=8)
    fig.tight_layout()
    return finish(fig, path)
