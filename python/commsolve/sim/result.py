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
    """A simulated run of any workload, as the simulations return it (built by
    :meth:`from_core`).

    Parameters
    ----------
    predicted_s : float
        The predicted time: the slowest rank's finish (seconds).
    categories : tuple of str
        What its time goes to, as the workload names it (a solve: fp, xy_comm, z_comm,
        redistribute; a halo exchange: comm; restricted collectives: compute, comm), then the
        engine's ``idle``.
    times : ndarray
        Per rank (rows), seconds by category (idle only as counted while running) and its
        finish (the last column).
    messages : ndarray
        Per rank (rows), messages sent and received (two columns).
    calls : ndarray
        Per rank, kernel calls (each paying the compute model's call overhead).
    in_cache : ndarray of bool
        Per rank, whether its factor fits its share of the last-level cache (read at the
        cache's rate).
    recorded : list of CommStats
        Per rank, what it sent and received through the simulated network (steps as the MPI
        run's).
    critical_path : list of (int, float)
        (rank, time) hops back from the slowest rank's finish along the messages it waited
        for.
    timeline : ndarray
        (rank, category, begin, end) rows (when asked for).
    trace : ndarray
        (rank, kind 0 calc / 1 send / 2 recv, peer, bytes, tag, seconds) rows, each rank's in
        order (when asked for).
    events : int
        The simulator's events.
    build_s : float
        Wall seconds this process took to build the ranks' programs.
    run_s : float
        Wall seconds this process took to run the simulation.
    info : dict, optional
        What the workload was (as the simulation function describes it: algorithm or
        strategy, profile, ``wall_s``, ...).
    """

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
        """The result of the C++ simulator's dict.

        Parameters
        ----------
        d : dict
            The core's result (``predicted``, ``categories``, ``times``, ``messages``,
            ``calls``, ``in_cache``, ``recorded``, ``critical_path``, ``timeline``,
            ``trace``, ``events``, ``build_seconds``, ``run_seconds``).
        info : dict, optional
            Kept (copied) as :attr:`info`.

        Returns
        -------
        SimResult
        """
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
        """The number of simulated ranks."""
        return self.times.shape[0]

    def per_rank(self):
        """Seconds per rank by category, idle including the wait for the slowest rank.

        Returns
        -------
        dict
            ``{category: ndarray}``, one value per rank; a rank's values add up to the
            predicted time.
        """
        out = {c: self.times[:, i].copy() for i, c in enumerate(self.categories)}
        out["idle"] += self.predicted_s - self.finish
        return out

    @property
    def finish(self):
        """Per rank, when it finished its program (seconds)."""
        return self.times[:, len(self.categories)]

    @property
    def slowest_rank(self):
        """The rank that finished last (0 when there are no ranks)."""
        return int(np.argmax(self.times[:, len(self.categories)])) if self.nranks else 0

    def breakdown(self, rank=None):
        """One rank's seconds by category.

        Parameters
        ----------
        rank : int, optional
            The rank (default: the slowest).

        Returns
        -------
        dict
            ``{<category>_s: float}``, e.g. ``fp_s``, ``xy_comm_s``, ``z_comm_s``,
            ``redistribute_s``, ``idle_s`` for a solve; they add up to the predicted time.
        """
        r = self.slowest_rank if rank is None else int(rank)
        per = self.per_rank()
        return {f"{c}_s": float(per[c][r]) for c in self.categories}

    def to_dict(self):
        """A summary for reports and JSON.

        Returns
        -------
        dict
            :attr:`info`'s entries, then ``predicted_s``, ``slowest_rank``, ``breakdown``
            (the slowest rank's, :meth:`breakdown`), ``per_rank_max_s`` and
            ``per_rank_mean_s`` (per category, over the ranks), ``messages`` and ``bytes``
            (sent, all ranks; bytes as recorded), ``ranks_in_cache``,
            ``critical_path`` (``hops``, distinct ``ranks``, ``start_rank``), ``events``,
            ``simulate_s``, ``build_s`` and ``events_per_s`` (None when the run took no
            time).
        """
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
