"""Pricing plans: predicted time of a halo exchange per rank, with its breakdown.

Every message a plan sends costs its sender the node-aware max-rate time of its locality and
protocol (latency and bandwidth parts); every rank pays the queue-search penalty for the
messages it receives in a step; inter-node steps pay the contention penalty. Plan steps run
one after another (a step's messages may need the previous step's), so an exchange costs
the sum over steps of the slowest rank's step time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .formulas import contention, queue_search
from .profile import LEVELS, PROTOCOLS, load_profile

__all__ = ["CostModel", "Prediction", "COMPONENTS", "message_table"]

COMPONENTS = ("latency", "bandwidth", "queue", "contention")


@dataclass
class Prediction:
    """The predicted cost of an exchange (:class:`CostModel`'s prices).

    Parameters
    ----------
    time : float
        The exchange: sum over steps of the max over ranks (seconds).
    step_times : ndarray
        ``(steps,)``: each step's slowest rank.
    per_rank : ndarray
        ``(ranks,)``: each rank's own sum over steps.
    breakdown : dict
        Component (:data:`COMPONENTS`) -> ``(ranks,)`` seconds summed over steps.
    """

    time: float  # the exchange: sum over steps of the max over ranks
    step_times: np.ndarray  # (steps,)
    per_rank: np.ndarray  # (ranks,) each rank's own sum over steps
    breakdown: dict  # component -> (ranks,) seconds summed over steps

    def to_dict(self):
        """A summary for reports and JSON.

        Returns
        -------
        dict
            ``time_s``, ``step_times_s``, ``max_rank_s``, ``slowest_rank`` (the rank of the
            largest sum over steps) and ``breakdown_slowest_rank_s`` (that rank's seconds per
            component).
        """
        slowest = int(np.argmax(self.per_rank)) if self.per_rank.size else 0
        return {"time_s": float(self.time), "step_times_s": [float(t) for t in self.step_times],
                "max_rank_s": float(self.per_rank.max(initial=0.0)), "slowest_rank": slowest,
                "breakdown_slowest_rank_s": {c: float(v[slowest]) if v.size else 0.0
                                             for c, v in self.breakdown.items()}}


def _cube_hops(src_node, dst_node, nnodes):
    """Torus distance between nodes laid out in a c x c x c cube, c = ceil(N^(1/3))."""
    c = max(1, int(np.ceil(round(nnodes ** (1.0 / 3.0), 9))))
    a = np.stack([src_node % c, (src_node // c) % c, src_node // (c * c)])
    b = np.stack([dst_node % c, (dst_node // c) % c, dst_node // (c * c)])
    d = np.abs(a - b)
    return np.minimum(d, c - d).sum(axis=0)


def message_table(plan):
    """One rank's messages as arrays.

    Parameters
    ----------
    plan : CommPlan
        One rank's plan.

    Returns
    -------
    dict
        ``owner`` (this rank), and arrays: ``rank``, ``step``, ``peer``, ``nbytes`` per
        message sent (8 bytes a value); ``nrecv`` per step (the messages ``owner``, this rank,
        receives).
    """
    steps = plan.steps
    counts = [st.send_peers.size for st in steps]
    return {"owner": plan.rank, "rank": np.full(sum(counts), plan.rank),
            "step": np.repeat(np.arange(len(steps)), counts),
            "peer": np.concatenate([st.send_peers for st in steps]) if steps else np.zeros(0, int),
            "nbytes": np.concatenate([8.0 * np.diff(st.send_ptr) for st in steps]) if steps else np.zeros(0),
            "nrecv": np.array([st.recv_peers.size for st in steps], float)}


class CostModel:
    """Prices plans with a MachineProfile.

    Parameters
    ----------
    profile : MachineProfile, str or path
        A profile object, a bundled name or a TOML path (:func:`load_profile`).
    """

    def __init__(self, profile):
        self.profile = load_profile(profile)
        p = self.profile
        self._alpha = np.array([[p.alpha.get((lv, pr), np.nan) for pr in PROTOCOLS] for lv in LEVELS])
        self._rate = np.array([[p.rate.get((lv, pr), np.nan) for pr in PROTOCOLS] for lv in LEVELS])
        self._inj = np.array([p.injection.get(pr, np.inf) for pr in PROTOCOLS])

    def _level(self, topology, ranks, peers):
        """0 intra-socket, 1 intra-node, 2 inter-node for each (rank, peer)."""
        nodes = topology.node_of_rank
        same_node = nodes[ranks] == nodes[peers]
        level = np.where(same_node, 1, 2)
        p = self.profile
        if p.has_level("intra_socket") and p.sockets_per_node > 1:
            local = np.array([topology.local_rank(r) for r in range(topology.size)])
            per_socket = max(1, topology.max_ppn // p.sockets_per_node)
            same_socket = same_node & (local[ranks] // per_socket == local[peers] // per_socket)
            level = np.where(same_socket, 0, level)
        return level

    def price_messages(self, topology, nsteps, rank, step, peer, nbytes, nrecv):
        """Prices explicit messages.

        Parameters
        ----------
        topology : Topology
            The ranks' nodes.
        nsteps : int
            The exchange's steps.
        rank : ndarray of int
            One entry per message sent: its sender.
        step : ndarray of int
            Its step.
        peer : ndarray of int
            Its receiver.
        nbytes : ndarray of float
            Its size (bytes).
        nrecv : ndarray
            ``(ranks, steps)``: messages received.

        Returns
        -------
        Prediction
        """
        P = topology.size
        level = self._level(topology, rank, peer)
        proto = self.profile.protocol(nbytes)
        alpha = self._alpha[level, proto]
        rate = self._rate[level, proto]
        inter = level == 2
        nodes = topology.node_of_rank
        # Processes of a node sending off-node in the same step share its injection bandwidth.
        active = np.zeros((topology.num_nodes, nsteps))
        senders = np.unique(np.stack([rank[inter], step[inter]]), axis=1) if inter.any() else np.zeros((2, 0), int)
        np.add.at(active, (nodes[senders[0]], senders[1]), 1)
        ppn = np.where(inter, active[nodes[rank], step], 1.0)
        inj = np.where(inter, self._inj[proto], np.inf)
        bandwidth = ppn * nbytes / np.minimum(inj, ppn * rate)
        t = {c: np.zeros((P, nsteps)) for c in COMPONENTS}
        np.add.at(t["latency"], (rank, step), alpha)
        np.add.at(t["bandwidth"], (rank, step), bandwidth)
        t["queue"] = queue_search(self.profile.gamma, nrecv)
        for s in range(nsteps):
            sel = inter & (step == s)
            if not sel.any() or self.profile.delta == 0:
                continue
            hops = _cube_hops(nodes[rank[sel]], nodes[peer[sel]], topology.num_nodes)
            h = float(np.average(hops, weights=nbytes[sel])) if nbytes[sel].sum() > 0 else 0.0
            b = nbytes[sel].sum() / P
            busy = np.unique(rank[sel])
            t["contention"][busy, s] = contention(self.profile.delta, h, b, topology.max_ppn)
        total = sum(t.values())
        step_times = total.max(axis=0) if P else np.zeros(nsteps)
        return Prediction(time=float(step_times.sum()), step_times=step_times, per_rank=total.sum(axis=1),
                          breakdown={c: v.sum(axis=1) for c, v in t.items()})

    def price(self, plans, topology):
        """Predicted cost of running every rank's plan once.

        Parameters
        ----------
        plans : list of CommPlan
            Every rank's plan, indexed by rank (:func:`commsolve.virtual.plans`).
        topology : Topology
            The ranks' nodes, one per plan.

        Returns
        -------
        Prediction

        Raises
        ------
        ValueError
            When there are not as many plans as ``topology`` has ranks.
        """
        if len(plans) != topology.size:
            raise ValueError(f"{len(plans)} plans for a topology of {topology.size} ranks")
        return self.price_tables([message_table(p) for p in plans], topology)

    def price_mpi(self, comm, plan, topology):
        """Collective. The exchange time of every rank running its ``plan`` once, on all ranks:
        the message lists travel to rank 0, which prices them.

        Parameters
        ----------
        comm : mpi4py.MPI.Comm
            The ranks whose plans these are.
        plan : CommPlan
            This rank's plan.
        topology : Topology
            The ranks' nodes.

        Returns
        -------
        float
            The predicted exchange time (seconds), the same on every rank.
        """
        tables = comm.gather(message_table(plan), root=0)
        t = self.price_tables(tables, topology).time if comm.rank == 0 else None
        return comm.bcast(t, root=0)

    def price_tables(self, tables, topology):
        """Prices message tables as one exchange.

        Parameters
        ----------
        tables : list of dict
            :func:`message_table`'s, any number of them, ranks of ``topology``.
        topology : Topology
            The ranks' nodes.

        Returns
        -------
        Prediction
        """
        nsteps = max((t["nrecv"].size for t in tables), default=0)
        nrecv = np.zeros((topology.size, nsteps))
        for t in tables:
            nrecv[t["owner"], : t["nrecv"].size] = t["nrecv"]
        arr = {k: np.concatenate([t[k] for t in tables]) for k in ("rank", "step", "peer", "nbytes")}
        return self.price_messages(topology, nsteps, arr["rank"].astype(int), arr["step"].astype(int),
                                   arr["peer"].astype(int), arr["nbytes"], nrecv)

    def price_stats(self, stats, topology):
        """Approximate cost from CommStats alone (no message list): each rank's messages of a
        step and locality are taken to have that step's average size, and go to a peer
        ``topology.size // 2`` ranks away for hop counts.

        Parameters
        ----------
        stats : list of CommStats
            Every rank's, indexed by rank.
        topology : Topology
            The ranks' nodes.

        Returns
        -------
        Prediction
        """
        P = topology.size
        nsteps = max((s.nsteps for s in stats), default=0)
        rank, step, peer, nbytes = [], [], [], []
        nrecv = np.zeros((P, nsteps))
        nodes = topology.node_of_rank
        for r, s in enumerate(stats):
            for k, row in enumerate(s.array):
                nrecv[r, k] = row[4] + row[5]
                for msgs, byts, inter in ((row[0], row[2], False), (row[1], row[3], True)):
                    if msgs == 0:
                        continue
                    # a stand-in peer of the right locality
                    if inter:
                        q = next(q for q in ((r + P // 2) % P, *range(P)) if nodes[q] != nodes[r])
                    else:
                        q = next(q for q in topology.ranks_on_node(int(nodes[r])) if q != r)
                    rank += [r] * int(msgs)
                    step += [k] * int(msgs)
                    peer += [q] * int(msgs)
                    nbytes += [byts / msgs] * int(msgs)
        return self.price_messages(topology, nsteps, np.array(rank, int), np.array(step, int),
                                   np.array(peer, int), np.array(nbytes, float), nrecv)
