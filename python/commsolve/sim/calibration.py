"""The simulator's compute model fitted to the solves themselves (``commsolve calibrate``).

The kernel micro-benchmarks (:func:`commsolve.model.calibrate.fit_compute`) time one block
product in a tight loop; a solve also pays for what surrounds each block (its metadata, the
gathers and scatters of x and the partial sums, blocks spread over memory) and reaches less
of the memory bandwidth. So every rank, at the same time (the memory traffic of a node's
ranks together), factors small training matrices on its own (``MPI_COMM_SELF``) and times
their 1-rank solves; the call overhead c and the bandwidth B are then the values for which
the simulator predicts those times best (least squares on the logarithms, over a grid), the
flop rate and the copy rate stay the micro-benchmarks'. The training matrices are not the
ones the validation bench checks against. Where the micro-benchmarks found a last-level
cache, the fit scales its rate with the memory's, keeping their ratio and the cache's size.

With two ranks or more, the message engine's own cost per message (buffers, keys, counters,
MPI progress: what a message costs the solve beyond the overhead o of posting it) is fitted
the same way, as ``engine_overhead``, to a 2D solve on two ranks
(:func:`fit_engine_overhead`), the compute model already fitted.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..direct import factor
from ..gallery import from_spec
from .models import simulation_profile
from .solve import schedule_of, simulate_solve

__all__ = ["TRAINING", "QUICK_TRAINING", "ENGINE_TRAINING", "measure_solves", "fit_solve_compute",
           "measure_engine_solve", "fit_engine_overhead", "assess", "NOISY_SPREAD", "FIT_ERROR", "RATE_DROP"]

# Factors that fit a rank's share of this machine's last-level cache and factors well beyond it.
TRAINING = ("poisson2d9:120", "poisson2d9:280", "poisson3d:20", "poisson3d:32")
QUICK_TRAINING = ("poisson2d9:120", "poisson3d:32")
ENGINE_TRAINING = "poisson2d9:160"  # a 2D solve on 1 x 2 ranks: a message for every few block products


def _check_measured(solves):
    for spec, t, _, _ in solves:
        if not (np.isfinite(t) and t > 0):  # NaN fails too
            raise ValueError(f"training solve {spec}: measured {t} s, not a positive time")


def measure_solves(comm, specs=TRAINING, repeat=9):
    """Collective. Every rank factors and solves each matrix alone (on ``MPI_COMM_SELF``),
    all at once.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        The ranks that time the solves together.
    specs : sequence of str
        The training matrices, as gallery specs (:func:`commsolve.gallery.from_spec`).
    repeat : int
        Timed solves per matrix and rank (after one warm-up).

    Returns
    -------
    list of tuple or None
        On rank 0 ``[(spec, median seconds over ranks and repeats, schedule, topology)]``
        (the 1-rank solve's :class:`~commsolve.sim.SolveSchedule` and Topology), None
        elsewhere.
    """
    from .._collective import mpi

    self_comm = mpi().COMM_SELF
    out = []
    for spec in specs:
        A = from_spec(spec)
        solver = factor(A, self_comm, grid=(1, 1, 1))
        b = np.sin(0.37 * np.arange(A.shape[0])) + 0.5
        solver.solve(b, refine=False)  # warm-up
        times = []
        comm.Barrier()
        for _ in range(repeat):
            solver.solve(b, refine=False)
            times.append(solver.solve_seconds["total"])
        every = comm.gather(times, root=0)
        if comm.rank == 0:
            out.append((spec, float(np.median(np.concatenate(every))), schedule_of(solver), solver.topology))
    return out if comm.rank == 0 else None


def _scaled(compute, c, scale):
    """``compute`` with call overhead ``c`` and both bandwidths (memory, cache) times ``scale``."""
    out = dict(compute, call_overhead=float(c), bandwidth=float(compute["bandwidth"] * scale))
    if "cache_bandwidth" in out:
        out["cache_bandwidth"] = float(compute["cache_bandwidth"] * scale)
    return out


def fit_solve_compute(profile, solves, sharing=1, points=24):
    """The profile's compute model with the call overhead and the scale of its bandwidths
    (memory and cache alike: the micro-benchmarks' ratio and cache size are kept) that make
    the simulator's 1-rank predictions of ``solves`` closest to the measured times (log
    least squares over a grid).

    Parameters
    ----------
    profile : str, path or MachineProfile
        The profile with the micro-benchmarks' ``[compute]`` (left as it was: the fit works
        on a copy).
    solves : list of tuple
        :func:`measure_solves`'s result on rank 0.
    sharing : int
        The ranks of a node that timed the solves at once (so each had that share of the
        cache).
    points : int
        Grid points per parameter: the call overhead 0 and ``points`` values from 1e-9 to
        2e-6 s, the bandwidth scale ``points`` values from 1/16 to 2 (geometric).

    Returns
    -------
    compute : dict
        The fitted ``[compute]`` table.
    report : dict
        ``micro_benchmarks`` and ``fitted`` (the tables before and after),
        ``bandwidth_scale``, ``sharing``, ``solves`` (per matrix the measured and predicted
        seconds, their ratio and whether the factor was in cache), ``rms_log_error`` and
        ``at_bound`` (the parameters the fit left at the end of their search range).

    Raises
    ------
    ValueError
        When a training solve's measured time is not positive; a
        :class:`~commsolve.model.ProfileError` when ``profile`` lacks the simulator's fields.
    """
    _check_measured(solves)
    prof = dataclasses.replace(simulation_profile(profile))  # a copy: the caller's stays as it was
    base = dict(prof.compute)
    shared = dict(base, cache_bytes=base["cache_bytes"] / sharing) if "cache_bytes" in base else base
    cs = np.concatenate([[0.0], np.geomspace(1e-9, 2e-6, points)])
    scales = np.geomspace(1 / 16, 2, points)
    measured = np.log([t for _, t, _, _ in solves])

    def simulate(c, scale):
        prof.compute = _scaled(shared, c, scale)
        return [simulate_solve(s, topo, prof) for _, _, s, topo in solves]

    best = None
    for c in cs:
        for scale in scales:
            runs = simulate(c, scale)
            err = float(np.sum((np.log([r.predicted_s for r in runs]) - measured) ** 2))
            if best is None or err < best[0]:
                best = (err, c, scale, runs)
    err, c, scale, runs = best
    fitted = _scaled(base, c, scale)
    report = {"micro_benchmarks": base, "fitted": fitted, "bandwidth_scale": float(scale), "sharing": int(sharing),
              "solves": [{"matrix": spec, "measured_s": t, "predicted_s": r.predicted_s, "ratio": r.predicted_s / t,
                          "in_cache": bool(r.in_cache[0])}
                         for (spec, t, _, _), r in zip(solves, runs)],
              "rms_log_error": float(np.sqrt(err / len(solves))),
              "at_bound": [name for name, value, ends in (("call_overhead", c, cs[-1:]),
                                                           ("bandwidth_scale", scale, scales[[0, -1]]))
                           if value in ends]}
    return fitted, report


def measure_engine_solve(comm, spec=ENGINE_TRAINING, repeat=9):
    """Collective. Ranks 0 and 1 factor ``spec`` on a 1 x 2 grid of their own and time its
    2D solve.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        The communicator; every rank calls (the pair is split from it).
    spec : str
        The training matrix, as a gallery spec (:func:`commsolve.gallery.from_spec`).
    repeat : int
        Timed solves (after one warm-up).

    Returns
    -------
    tuple or None
        On rank 0 ``(spec, median seconds, schedule, topology)``, None elsewhere and when
        ``comm`` has one rank.
    """
    if comm.size < 2:
        return None
    pair = comm.Split(0 if comm.rank < 2 else 1, comm.rank)
    try:
        if comm.rank >= 2:
            return None
        A = from_spec(spec)
        solver = factor(A, pair, grid=(1, 2, 1))
        b = (np.sin(0.37 * np.arange(A.shape[0])) + 0.5)[solver.distribution.owned(pair.rank)]
        solver.solve(b, refine=False)  # warm-up
        times = []
        for _ in range(repeat):
            solver.solve(b, refine=False)
            times.append(solver.solve_seconds["total"])
        if pair.rank != 0:
            return None
        return spec, float(np.median(times)), schedule_of(solver), solver.topology
    finally:
        pair.Free()


def fit_engine_overhead(profile, training, hi=2e-5, steps=40):
    """The engine overhead for which the simulator predicts the 2-rank ``training`` solve as
    measured (bisection: the prediction grows with it); 0 when the solve is predicted
    slower than measured without it.

    Parameters
    ----------
    profile : str, path or MachineProfile
        The profile, its compute model already fitted (left as it was: the fit works on a
        copy).
    training : tuple
        :func:`measure_engine_solve`'s result on rank 0.
    hi : float
        The upper end of the search (seconds): returned, ``at_bound``, when the prediction
        with it is still no slower than measured.
    steps : int
        Bisection steps.

    Returns
    -------
    seconds : float
        The engine overhead.
    report : dict
        ``matrix``, ``grid``, ``measured_s``, ``predicted_without_s``, ``predicted_s``
        (with the overhead found), ``engine_overhead``, ``at_bound`` and ``bound`` (``hi``).

    Raises
    ------
    ValueError
        When the measured time is not positive; a :class:`~commsolve.model.ProfileError`
        when ``profile`` lacks the simulator's fields.
    """
    _check_measured([training])
    prof = dataclasses.replace(simulation_profile(profile))
    spec, measured, sched, topo = training

    def predict(h):
        prof.engine_overhead = float(h)
        return simulate_solve(sched, topo, prof).predicted_s

    lo, top = 0.0, hi
    without = predict(0.0)
    at_bound = False
    if without >= measured:
        h = 0.0
    elif predict(top) <= measured:
        h, at_bound = top, True
    else:
        for _ in range(steps):
            mid = 0.5 * (lo + top)
            lo, top = (mid, top) if predict(mid) < measured else (lo, mid)
        h = 0.5 * (lo + top)
    return h, {"matrix": spec, "grid": list(sched.grid), "measured_s": measured, "predicted_without_s": without,
               "predicted_s": predict(h), "engine_overhead": h, "at_bound": at_bound, "bound": hi}


NOISY_SPREAD = 0.5  # ping-pong samples of one size spreading more than this (relative): a loaded machine
FIT_ERROR = 0.25    # a protocol's fit off by more than this on its own points
RATE_DROP = 3.0     # a larger protocol's rate this many times below the smaller one's: not a machine, noise
SOLVE_MISS = 0.4    # the solve fit's rms log error above this: its predictions miss by about 1.5x


def assess(meas, report):
    """What makes a calibration untrustworthy, in words: measurements that vary too much
    between repeats (a loaded machine), fits far off their own points, a protocol's rate far
    below a smaller protocol's, and any parameter the fits left at the end of their search
    range.

    Parameters
    ----------
    meas : dict
        :func:`commsolve.model.calibrate.measure`'s result.
    report : dict
        :func:`commsolve.model.calibrate.fit_profile`'s report, with ``solve_fit``
        (:func:`fit_solve_compute`'s) and ``engine_fit`` (:func:`fit_engine_overhead`'s) where
        those fits ran.

    Returns
    -------
    list of str
        One sentence per problem; an empty list when nothing makes it untrustworthy.
    """
    out = []
    noise = meas.get("noise", 0.0)
    if not noise <= NOISY_SPREAD:  # NaN too
        out.append(f"ping-pongs of one size varied by {noise:.0%} between repeats (median over sizes): the machine "
                   "looks loaded")
    for level in ("intra_node", "inter_node"):
        fits = report.get(level, {})
        for proto in ("short", "eager", "rend"):
            f = fits.get(proto)
            if f and "borrowed_from" not in f and not f["rel_error"] <= FIT_ERROR:
                out.append(f"the {level}.{proto} fit is off by {f['rel_error']:.0%} on its own points")
        for small, large in (("short", "eager"), ("eager", "rend")):
            if small in fits and large in fits and fits[large]["rate"] * RATE_DROP < fits[small]["rate"]:
                out.append(f"{level}: the {large} rate ({fits[large]['rate'] / 1e9:.2f} GB/s) is "
                           f"{fits[small]['rate'] / fits[large]['rate']:.0f}x below the {small} one")
    solve = report.get("solve_fit", {})
    for name in solve.get("at_bound", []):
        out.append(f"the solve fit left {name} at the end of its search range")
    if not solve.get("rms_log_error", 0.0) <= SOLVE_MISS:
        out.append(f"the solve fit misses its training solves (rms log error {solve['rms_log_error']:.2f})")
    engine = report.get("engine_fit", {})
    if engine.get("at_bound"):
        out.append(f"engine_overhead sits at the fit's upper bound ({engine['bound'] * 1e6:.0f} us)")
    return out
