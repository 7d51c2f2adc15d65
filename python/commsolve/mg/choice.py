"""Coarse-grid aggregation's switch levels chosen by the cost model (``MGCG(cga="auto",
profile=...)``).

With the hierarchy set up on every rank (no move), every level's halo and interpolation
plans travel to rank 0, which prices one V-cycle for each way of placing the coarse levels:

- ``none``: every level on every rank, the coarsest gathered whole on each (an allgather);
- ``flat`` at level s (CGA): level s gathered onto one rank, which does the coarser levels;
- ``hierarchical`` at levels s1 < s2 (hCGA): level s1 onto one rank per group of
  ``hcga_group`` consecutive ranks (the leaders), which do levels s1 .. s2 - 1, then level s2
  onto one rank;
- ``subset`` at level s1: onto the leaders as hCGA, which keep the rest (the coarsest
  gathered whole on each leader).

A level on every rank costs its plans (:meth:`CostModel.price_tables`, halo exchanges twice,
the interpolation both ways) plus the busiest rank's local work at the memory bandwidth this
machine measures (STREAM triad on rank 0). A level on the leaders costs the same plans with
every group's messages merged: messages within a group vanish, messages between two groups
become one carrying their bytes (an upper bound: a value two members both need travels
once), and the busiest leader does its group's work. A move costs its messages, one from
each rank holding rows to its receiver, there and back. A level on one rank costs its work
alone. The cheapest placement wins; the best of each kind is kept for the report."""

from __future__ import annotations

import numpy as np

from .._collective import agree
from ..model.pricing import message_table
from .analysis import allgather_seconds, work_seconds
from .stages import HCGA_GROUP, hcga_leaders, placement_stages, placements

__all__ = ["choose_cga", "merged_tables"]


def _bandwidth(comm):
    from .. import _core

    bw = float(np.median(_core.stream_triad_bandwidth(4_000_000, 5))) if comm.rank == 0 else None
    return comm.bcast(bw, root=0)


def merged_tables(tables, leader):
    """Local. The message tables of an exchange after every rank's rows moved to
    ``leader[rank]``.

    Parameters
    ----------
    tables : list of dict
        The exchange's message tables (:func:`commsolve.model.pricing.message_table`, one
        per rank).
    leader : array_like of int
        Each rank's leader.

    Returns
    -------
    list of dict
        One table per leader, with one message per (step, leader pair) that any of the two
        groups' members exchanged, carrying their bytes summed; messages within a group are
        gone.
    """
    leader = np.asarray(leader)
    cat = {k: np.concatenate([t[k] for t in tables]) for k in ("rank", "step", "peer", "nbytes")}
    src, dst = leader[cat["rank"].astype(int)], leader[cat["peer"].astype(int)]
    keep = src != dst
    src, dst, step, nbytes = src[keep], dst[keep], cat["step"][keep].astype(int), cat["nbytes"][keep]
    nsteps = max((t["nrecv"].size for t in tables), default=0)
    P = len(tables)
    key = (src * max(nsteps, 1) + step) * P + dst
    uniq, inv = np.unique(key, return_inverse=True)
    sums = np.zeros(uniq.size)
    np.add.at(sums, inv, nbytes)
    u_src, u_step, u_dst = uniq // (max(nsteps, 1) * P), (uniq // P) % max(nsteps, 1), uniq % P
    out = []
    for r in np.unique(leader):
        mine = u_src == r
        nrecv = np.bincount(u_step[u_dst == r], minlength=nsteps).astype(float)
        out.append({"owner": int(r), "rank": u_src[mine], "step": u_step[mine], "peer": u_dst[mine],
                    "nbytes": sums[mine], "nrecv": nrecv})
    return out


def _move_seconds(cost, topology, rows, leader):
    """One move there and back: every rank holding rows (``rows[r]`` of them) that is not its
    own ``leader[r]`` sends them to it in one message."""
    rows, leader = np.asarray(rows), np.asarray(leader)
    senders = np.flatnonzero((rows > 0) & (leader != np.arange(rows.size)))
    if senders.size == 0:
        return 0.0
    nrecv = np.bincount(leader[senders], minlength=rows.size).astype(float)[:, None]
    zeros = np.zeros(senders.size, np.int64)
    return 2 * cost.price_messages(topology, 1, senders, zeros, leader[senders], 8.0 * rows[senders], nrecv).time


def _level_facts(ml):
    """Collective. Per level: every rank's message tables (operator, interpolation) and
    rows and local entries, on rank 0 (None elsewhere)."""
    comm = ml.comm
    mine = [(message_table(lvl.A.plan), message_table(lvl.P.plan) if lvl.P is not None else None,
             lvl.A.local_rows, lvl.A.local_nnz) for lvl in ml.levels]
    return comm.gather(mine, root=0)


def choose_cga(ml, profile, hcga_group=HCGA_GROUP, bandwidth=None):
    """Collective. The agglomeration stages the cost model finds cheapest for a hierarchy.

    The coarsest level is solved where it is, never moved.

    Parameters
    ----------
    ml : MultilevelSolver
        The multilevel solver (no agglomeration).
    profile : MachineProfile, str or path
        The machine profile the cost model prices with.
    hcga_group : int
        hCGA's group of consecutive ranks (the leaders' groups).
    bandwidth : float, optional
        The memory bandwidth the local work is priced at, bytes/s (default: measured, STREAM
        triad on rank 0).

    Returns
    -------
    stages : list of (float, int)
        The agglomeration stages (:mod:`commsolve.amg.agglomerate`) the cost model finds
        cheapest.
    choice : dict
        The predictions: ``candidates``, every placement priced (``mode``, ``levels`` where
        it switches, ``ranks`` it moves onto, ``cycle_s`` per V-cycle), ``best`` the cheapest
        of each mode, and ``chosen``; with the profile's name, the bandwidth and the group
        size (``profile``, ``bandwidth``, ``hcga_group``).

    Raises
    ------
    CollectiveError
        On every rank, when the pricing on rank 0 fails.
    """
    from ..model import CostModel

    comm = ml.comm
    cost = CostModel(profile)
    bandwidth = _bandwidth(comm) if bandwidth is None else float(bandwidth)
    facts = _level_facts(ml)
    choice, error = None, None
    if comm.rank == 0:  # the pricing runs on rank 0; its failure is every rank's
        try:
            choice = _price_placements(cost, ml.A.topology, facts, bandwidth, int(hcga_group))
        except Exception as e:  # noqa: BLE001
            error = f"cga='auto': pricing the placements failed ({type(e).__name__}: {e})"
    choice, error = comm.bcast((choice, error), root=0)
    agree(comm, error, where="mg.choose_cga")
    return placement_stages(choice["chosen"], [lvl.rows for lvl in ml.levels], comm.size), choice


def _price_placements(cost, topology, facts, bandwidth, hcga_group):
    """Rank 0's half of :func:`choose_cga`: ``facts[rank][level]`` = (operator table,
    interpolation table or None, rows, entries)."""
    P, nlev = len(facts), len(facts[0])

    def exchange_seconds(k, leader):
        tables = [[f[k][0] for f in facts]] + ([[f[k][1] for f in facts]] if facts[0][k][1] is not None else [])
        if leader is not None:
            tables = [merged_tables(t, leader) for t in tables]
        return 2 * sum(cost.price_tables(t, topology).time for t in tables)  # both ways, or twice a cycle

    rows = np.array([[f[k][2] for f in facts] for k in range(nlev)])
    nnz = np.array([[f[k][3] for f in facts] for k in range(nlev)])
    to_rank0 = np.zeros(P, int)
    coarsest_bytes = 8.0 * rows[-1].sum()
    priced = {"on_all": [exchange_seconds(k, None) + work_seconds(nnz[k].max(), bandwidth) for k in range(nlev)],
              "on_one": [work_seconds(nnz[k].sum(), bandwidth) for k in range(nlev)],
              "to_one": [_move_seconds(cost, topology, rows[k], to_rank0) for k in range(nlev)],
              "allgather_all": allgather_seconds(cost.profile, P, coarsest_bytes)}
    g, m = hcga_leaders(P, hcga_group)
    if 1 < m < P:
        leader = np.arange(P) // g * g
        priced.update(
            leaders=m, allgather_leaders=allgather_seconds(cost.profile, m, coarsest_bytes),
            on_leaders=[exchange_seconds(k, leader) + work_seconds(np.bincount(leader, nnz[k]).max(), bandwidth)
                        for k in range(nlev)],
            to_leaders=[_move_seconds(cost, topology, rows[k], leader) for k in range(nlev)],
            # level k's rows as the leaders hold them, onto rank 0
            leaders_to_one=[_move_seconds(cost, topology, np.bincount(leader, rows[k], minlength=P), to_rank0)
                            for k in range(nlev)])
    return {"profile": cost.profile.name, "bandwidth": bandwidth, "hcga_group": g, **placements(**priced)}
