"""What a simulation gives back, whatever the workload (C++ ``sim::SimResult``): predicted
time, per-rank time by the workload's categories, messages, recorded statistics, critical
path, and on request a timeline and every rank's trace."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..stats import CommStats

__all__ = ["SimResult"]


@dataclass
class SimResult:
    """A simulated run of any workload. ``categories``: what its time goes to, as the
    workload names it (a solve: fp, xy_comm, z_comm, redistribute; a halo exchange: comm;
    restricted collectives: compute, comm), then the engine's ``idle``; ``times``: per rank,
    seconds by category (idle only as counted while running) and its finish; ``calls``: per rank, kernel calls (each paying
    the compute model's call overhead); ``recorded``: per rank, what it sent and received
    through the simulated network (CommStats, steps as the MPI run's); ``critical_path``:
    (rank, time) hops back from the slowest rank's finish along the messages it waited for;
    ``in_cache``: per rank, whether its factor fits its share of the last-level cache (read
    at the cache's rate); ``timeline``: (rank, category, begin, end) rows; ``trace``: (rank,
    kind 0 calc / 1 send / 2 recv, peer, bytes, tag, seconds) rows, each rank's in order
    (both when asked for)."""

    predicted_s: float
    categories: tuple
    times: np.ndarray
    messages: np.ndarray
    calls: np.ndarray
    in_cache: np.ndarray
    recorded: list
    critical_path: list
    timeline: np.ndarray
    trace: np.ndarray
    events: int
    build_s: float
    run_s: float
    info: dict = field(default_factory=dict)

    @classmethod
    def from_core(cls, d, info=None):
        return cls(predicted_s=float(d["predicted"]), categories=tuple(d["categories"]), times=np.asarray(d["times"]),
                   messages=np.asarray(d["messages"]).reshape(-1, 2), calls=np.asarray(d["calls"]),
                   in_cache=np.asarray(d["in_cache"]).astype(bool),
                   recorded=[CommStats(a) for a in np.asarray(d["recorded"])],
                   critical_path=[(int(r), float(t)) for r, t in np.asarray(d["critical_path"]).reshape(-1, 2)],
                   timeline=np.asarray(d["timeline"]).reshape(-1, 4),
                   trace=np.asarray(d["trace"]).reshape(-1, 6), events=int(d["events"]),
                   build_s=float(d["build_seconds"]), run_s=float(d["run_seconds"]), info=dict(info or {}))

    @property
    def nranks(self):
        return self.times.shape[0]

    def per_rank(self):
        """Seconds per rank by category, idle including the wait for the slowest rank."""
        out = {c: self.times[:, i].copy() for i, c in enumerate(self.categories)}
        out["idle"] += self.predicted_s - self.finish
        return out

    @property
    def finish(self):
        """Per rank, when it finished its program (seconds)."""
        return self.times[:, len(self.categories)]

    @property
    def slowest_rank(self):
        return int(np.argmax(self.times[:, len(self.categories)])) if self.nranks else 0

    def breakdown(self, rank=None):
        """``{<category>_s}`` of ``rank`` (default: the slowest), e.g. fp_s, xy_comm_s,
        z_comm_s, redistribute_s, idle_s for a solve; they add up to the predicted time."""
        r = self.slowest_rank if rank is None else int(rank)
        per = self.per_rank()
        return {f"{c}_s": float(per[c][r]) for c in self.categories}

    def to_dict(self):
        per = self.per_rank()
        path_ranks = np.array([r for r, _ in self.critical_path], dtype=int)
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
