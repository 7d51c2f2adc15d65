"""CGA's switch level chosen by the cost model (``MGCG(cga="auto", profile=...)``): with the
hierarchy set up on every rank, each level's halo and interpolation plans are priced by the
machine profile (:meth:`CostModel.price_mpi`), each level's local work at the memory
bandwidth this machine measures (STREAM triad on rank 0), and for every candidate level s
the V-cycle that gathers level s onto one rank (the gather and the scatter back priced from
their messages, the coarser levels' work then done on that rank alone) is compared with the
V-cycle that keeps every level on every rank (the coarsest gathered whole on each). The
cheapest wins; its prediction and every candidate's are kept for the report."""

from __future__ import annotations

import numpy as np

from .._collective import mpi
from .analysis import allgather_seconds, work_seconds

__all__ = ["choose_cga"]


def _bandwidth(comm):
    from .. import _core

    bw = float(np.median(_core.stream_triad_bandwidth(4_000_000, 5))) if comm.rank == 0 else None
    return comm.bcast(bw, root=0)


def _gather_seconds(cost, lvl):
    """Collective. Moving level ``lvl``'s rows onto rank 0 and back: every other rank holding
    rows sends them in one message (priced on rank 0, the result on all)."""
    comm = lvl.A.comm
    rows = np.array(comm.allgather(lvl.A.local_rows))
    t = None
    if comm.rank == 0:
        senders = np.flatnonzero(rows[1:]) + 1
        nrecv = np.zeros((comm.size, 1))
        nrecv[0, 0] = senders.size
        t = 0.0 if senders.size == 0 else 2 * cost.price_messages(
            lvl.A.topology, 1, senders, np.zeros(senders.size, np.int64), np.zeros(senders.size, np.int64),
            8.0 * rows[senders], nrecv).time
    return comm.bcast(t, root=0)


def choose_cga(ml, profile, bandwidth=None):
    """Collective. For the multilevel solver ``ml`` (no agglomeration), the agglomeration
    stages the cost model finds cheapest ([] or one move onto one rank) and the table of
    predictions: one row per choice (``"none"``, or the level moved: any but the coarsest,
    which is solved where it is) with its seconds per V-cycle."""
    from ..model import CostModel

    comm = ml.comm
    cost = CostModel(profile)
    bandwidth = _bandwidth(comm) if bandwidth is None else float(bandwidth)
    levels = ml.levels
    parallel = []  # per level on every rank: 2 halo exchanges, interpolation both ways, the busiest rank's work
    for lvl in levels:
        halo = cost.price_mpi(comm, lvl.A.plan, lvl.A.topology)
        interp = cost.price_mpi(comm, lvl.P.plan, lvl.P.topology) if lvl.P is not None else 0.0
        work = comm.allreduce(work_seconds(lvl.A.local_nnz, bandwidth), op=mpi().MAX)
        parallel.append(2 * halo + 2 * interp + work)
    serial = [work_seconds(lvl.A.global_nnz(), bandwidth) for lvl in levels]  # the level on one rank
    table = [{"choice": "none", "cycle_s": sum(parallel) + allgather_seconds(cost.profile, comm.size,
                                                                              8.0 * levels[-1].rows)}]
    for s in range(len(levels) - 1):  # the coarsest is solved where it is, never moved
        t = sum(parallel[:s]) + _gather_seconds(cost, levels[s]) + sum(serial[s:])
        table.append({"choice": s, "rows": levels[s].rows, "cycle_s": t})
    best = min(table, key=lambda r: r["cycle_s"])
    stages = [] if best["choice"] == "none" else [((best["rows"] + 0.5) / comm.size, 1)]
    return stages, {"profile": cost.profile.name, "bandwidth": bandwidth, "candidates": table,
                    "chosen": best["choice"]}
