"""Distributed triangular solves replayed in the simulator (C++ ``sim/solve_sim``): the
schedules the MPI solve builds on every rank, built for every rank of a virtual world and
run as a discrete-event simulation with a machine profile's network and compute models."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .. import _core
from ..direct import ALGORITHMS, ALLREDUCE, parse_grid
from ..stats import CommStats
from ..workloads import forest_partition
from .models import compute_model, network_model, simulation_profile

__all__ = ["SolveSchedule", "SimResult", "CATEGORIES", "solve_schedule", "schedule_of", "simulate_solve"]

# What a rank's time goes to (C++ sim::Category); "idle" also takes the time between a
# rank's finish and the slowest rank's.
CATEGORIES = ("fp", "xy_comm", "z_comm", "redistribute", "idle")


@dataclass
class SolveSchedule:
    """One distributed solve as the simulator replays it: the symbolic structure, the grid,
    the forests, the algorithm and its options; b and x distributed by ``distribution``
    (row ``row_order[k]`` of b to factor row k, ``col_order[k]`` of x from factor column k),
    or already on the diagonal owners when ``distribution`` is None."""

    structure: object
    grid: tuple
    forests: np.ndarray
    algorithm: str = "3d"
    tree: str = "binary"
    allreduce: str = "packed"
    nrhs: int = 1
    seed: int = 0
    flat_threshold: int = 8
    distribution: object = None
    row_order: np.ndarray | None = None
    col_order: np.ndarray | None = None

    @property
    def nranks(self):
        return int(np.prod(self.grid))


def check_algorithm(algorithm):
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown solve algorithm {algorithm!r} (known: {', '.join(ALGORITHMS)})")


def solve_schedule(structure, grid, algorithm="3d", partition="nd", forests=None, tree="binary", allreduce="packed",
                   nrhs=1, seed=0, flat_threshold=8, distribute_rhs=True):
    """The schedule of ``algorithm`` on ``grid`` ((px, py, pz) or "PxQxR") for a symbolic
    ``structure`` (:func:`commsolve.direct.symbolic`); with ``distribute_rhs``, b and x are
    distributed by contiguous row blocks (as a ParCSR matrix's rows by default) and moved as
    the MPI solve moves them."""
    check_algorithm(algorithm)
    if allreduce not in ALLREDUCE:
        raise ValueError(f"allreduce must be 'packed' or 'per-supernode', got {allreduce!r}")
    px, py, pz = parse_grid(grid, None)
    if algorithm == "2d" and pz != 1:
        raise ValueError(f"the 2d solve runs on a Px x Py x 1 grid, got {px}x{py}x{pz}")
    if forests is None:
        forests = np.zeros(structure.nsuper, np.int32) if pz == 1 else forest_partition(structure, pz, partition)
    dist, orders = None, (None, None)
    if distribute_rhs:
        dist = _core.Distribution.contiguous(int(structure.sn_start[-1]), px * py * pz)
        orders = (np.asarray(structure.perm, np.int32),) * 2
    return SolveSchedule(structure, (px, py, pz), np.asarray(forests, np.int32), algorithm, tree, allreduce, int(nrhs),
                         int(seed), int(flat_threshold), dist, *orders)


def schedule_of(solver, nrhs=1):
    """The schedule a :class:`commsolve.direct.DistributedLU` runs with its current options:
    its structure, grid, forests, row and column orders and distribution of b and x."""
    o = solver._options
    return SolveSchedule(solver.structure, tuple(solver.grid), np.asarray(solver.forests, np.int32), o["algorithm"],
                         o["tree"], o["allreduce"], int(nrhs), int(o["seed"]), int(o["flat_threshold"]),
                         solver.distribution, np.asarray(solver.row_order, np.int32),
                         np.asarray(solver.col_order, np.int32))


@dataclass
class SimResult:
    """A simulated run. ``times``: per rank, seconds by category (CATEGORIES, idle only as
    counted while running) and its finish; ``calls``: per rank, kernel calls (each paying
    the compute model's call overhead); ``recorded``: per rank, what it sent and received
    through the simulated network (CommStats, steps as the MPI run's); ``critical_path``:
    (rank, time) hops back from the slowest rank's finish along the messages it waited for;
    ``in_cache``: per rank, whether its factor fits its share of the last-level cache (read
    at the cache's rate); ``timeline``: (rank, category, begin, end) rows; ``trace``: (rank,
    kind 0 calc / 1 send / 2 recv, peer, bytes, tag, seconds) rows, each rank's in order
    (both when asked for)."""

    predicted_s: float
    times: np.ndarray
    messages: np.ndarray
    calls: np.ndarray
    in_cache: np.ndarray
    recorded: list
    critical_path: np.ndarray
    timeline: np.ndarray
    trace: np.ndarray
    events: int
    build_s: float
    run_s: float
    info: dict = field(default_factory=dict)

    @classmethod
    def from_core(cls, d, info=None):
        return cls(predicted_s=float(d["predicted"]), times=np.asarray(d["times"]),
                   messages=np.asarray(d["messages"]).reshape(-1, 2), calls=np.asarray(d["calls"]),
                   in_cache=np.asarray(d["in_cache"]).astype(bool),
                   recorded=[CommStats(a) for a in np.asarray(d["recorded"])],
                   critical_path=np.asarray(d["critical_path"]).reshape(-1, 2),
                   timeline=np.asarray(d["timeline"]).reshape(-1, 4),
                   trace=np.asarray(d["trace"]).reshape(-1, 6), events=int(d["events"]),
                   build_s=float(d["build_seconds"]), run_s=float(d["run_seconds"]), info=dict(info or {}))

    @property
    def nranks(self):
        return self.times.shape[0]

    def per_rank(self):
        """Seconds per rank by category, idle including the wait for the slowest rank."""
        out = {c: self.times[:, i].copy() for i, c in enumerate(CATEGORIES)}
        out["idle"] += self.predicted_s - self.times[:, len(CATEGORIES)]
        return out

    @property
    def slowest_rank(self):
        return int(np.argmax(self.times[:, len(CATEGORIES)])) if self.nranks else 0

    def breakdown(self, rank=None):
        """``{fp_s, xy_comm_s, z_comm_s, redistribute_s, idle_s}`` of ``rank`` (default: the
        slowest); they add up to the predicted time."""
        r = self.slowest_rank if rank is None else int(rank)
        per = self.per_rank()
        return {f"{c}_s": float(per[c][r]) for c in CATEGORIES}

    def to_dict(self):
        per = self.per_rank()
        path_ranks = self.critical_path[:, 0].astype(int) if self.critical_path.size else np.zeros(0, int)
        return {**self.info, "predicted_s": self.predicted_s, "slowest_rank": self.slowest_rank,
                "breakdown": self.breakdown(),
                "per_rank_max_s": {c: float(v.max(initial=0.0)) for c, v in per.items()},
                "per_rank_mean_s": {c: float(v.mean()) if v.size else 0.0 for c, v in per.items()},
                "messages": int(self.messages[:, 0].sum()), "ranks_in_cache": int(self.in_cache.sum()),
                "bytes": int(sum(s.array[:, [2, 3]].sum() for s in self.recorded)),
                "critical_path": {"hops": int(max(len(path_ranks) - 1, 0)),
                                  "ranks": len(set(path_ranks.tolist())),
                                  "start_rank": int(path_ranks[-1]) if path_ranks.size else 0},
                "events": self.events, "simulate_s": self.run_s, "build_s": self.build_s,
                "events_per_s": self.events / self.run_s if self.run_s > 0 else None}


def simulate_solve(schedule, topology, profile, timeline=False, trace=False):
    """Replays ``schedule`` (a :class:`SolveSchedule`) on ``topology`` with ``profile``'s
    network and compute models; returns a :class:`SimResult` (with ``trace``, every rank's
    operations in order, for :func:`commsolve.sim.goal.write_goal`)."""
    s = schedule
    if topology.size != s.nranks:
        raise ValueError(f"the topology has {topology.size} ranks, the {'x'.join(map(str, s.grid))} grid "
                         f"{s.nranks}")
    prof = simulation_profile(profile)
    net = network_model(prof, topology.max_ppn)
    cpu = compute_model(prof)
    t0 = time.perf_counter()
    d = _core.simulate_solve(*s.structure.core_arrays(), s.forests, *s.grid, s.algorithm, s.tree, s.seed,
                             s.flat_threshold, topology, s.nrhs, s.allreduce == "packed", s.distribution,
                             s.row_order, s.col_order, net, cpu, bool(timeline), bool(trace))
    info = {"algorithm": s.algorithm, "grid": list(s.grid), "tree": s.tree, "allreduce": s.allreduce,
            "nrhs": s.nrhs, "profile": prof.name, "wall_s": time.perf_counter() - t0}
    return SimResult.from_core(d, info)
