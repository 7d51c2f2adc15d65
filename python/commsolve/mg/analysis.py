"""MGCG's communication at the seed's scale (Nakajima: 64^3 cells per rank, 4,096 nodes x 16
ranks, flat MPI), level by level, with and without coarse-grid aggregation, counted in one
process and priced by a machine profile.

The grid is split into a 3D process grid of blocks (ranks numbered x fastest, ``ppn``
consecutive ranks a node), each level's cells 2 x 2 x 2 aggregates of the level above, an
aggregate owned by the owner of its first cell (as :func:`commsolve.amg.aggregation.
geometric_aggregates` does). Ownership is then a product of one owner map per dimension, so
every rank's messages follow from three short arrays per level, at any scale: the operator's
halo exchange (a 7- or 27-point stencil: Galerkin aggregation of a 7-point operator keeps 7
points), the interpolation's (coarse values a rank's fine cells need from elsewhere), and a
move's gather of a level onto the group leaders (CGA, hCGA: :mod:`commsolve.redistribute`'s
groups of consecutive ranks, onto their first; the groups must tile the process grid's x
extent, or be all of it). The per-dimension counts are checked against the virtual world's
real plans in the tests.

Prices: each exchange's explicit message list through :meth:`CostModel.price_messages` (the
profile's latency and rates per locality and protocol, the queue-search term for ranks that
receive many messages at once, injection limits); the local work of the busiest rank at
``bandwidth`` bytes per second (a level's matrix passes per V-cycle, 12 bytes a nonzero); a
coarsest level left on every rank is gathered to all of them (an allgather: ceil(log2 P)
inter-node latencies, then its bytes at the inter-node rate), and solved on each.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from .stages import (CGA_MODES, CGA_ROWS, HCGA_GROUP, HCGA_ROWS, cga_stages, check_switches, describe_placement,
                     hcga_leaders, placement_stages, placements)

__all__ = ["analyze_mgcg", "format_mgcg_analysis", "process_grid", "Level", "level_messages", "STENCILS",
           "allgather_seconds", "work_seconds"]

STENCILS = (7, 27)
PASSES = 5  # matrix passes per V-cycle on a level: 2 smoothing steps (IC(0): a triangular pair each,
#             symmetric Gauss-Seidel: 2 sweeps from zero count ~1.5 + 2), the residual, and P both ways (~0.5)
FX10_BANDWIDTH = 85e9 / 16  # bytes/s per rank: an FX10 node's 85 GB/s over its 16 cores


def process_grid(nprocs):
    """Local. A balanced 3D process grid (as MPI_Dims_create).

    Parameters
    ----------
    nprocs : int
        The ranks.

    Returns
    -------
    tuple of int
        (px, py, pz), px >= py >= pz, px py pz = nprocs.

    Examples
    --------
    >>> from commsolve.mg.analysis import process_grid
    >>> process_grid(64), process_grid(12)
    ((4, 4, 4), (3, 2, 2))
    """
    dims = [1, 1, 1]
    n = int(nprocs)
    f = 2
    factors = []
    while f * f <= n:
        while n % f == 0:
            factors.append(f)
            n //= f
        f += 1
    if n > 1:
        factors.append(n)
    for f in sorted(factors, reverse=True):
        dims[int(np.argmin(dims))] *= f
    return tuple(sorted(dims, reverse=True))


@dataclass
class Level:
    """One level: the grid, each dimension's owner map (process coordinate of every cell) and
    the process grid it lives on."""

    grid: tuple
    owners: tuple          # three int arrays: owners[d][c] = process coordinate of cell c along d
    procs: tuple           # the process grid (px, py, pz) of the ranks the level lives on

    @property
    def rows(self):
        """The level's cells: the product of the grid's extents."""
        return int(np.prod(self.grid))

    @property
    def nranks(self):
        """The ranks the level lives on: the product of the process grid's."""
        return int(np.prod(self.procs))

    def counts(self):
        """Local. Cells per process coordinate, per dimension.

        Returns
        -------
        tuple of ndarray
            Three arrays: ``counts[d][p]`` cells along d at process coordinate p.
        """
        return tuple(np.bincount(o, minlength=p) for o, p in zip(self.owners, self.procs))

    def coarser(self):
        """Local. The next coarser level: 2 x 2 x 2 aggregates, each owned by the owner of its
        first cell, on the same process grid.

        Returns
        -------
        Level
            The coarse level (extents halved, rounded up).
        """
        grid = tuple(-(-g // 2) for g in self.grid)
        return Level(grid, tuple(o[::2].copy() for o in self.owners), self.procs)

    def moved(self, group):
        """Local. The level on the leaders of groups of ``group`` consecutive ranks (x
        fastest, each onto its first).

        Parameters
        ----------
        group : int
            Ranks per group: groups that tile x, whole rows of y, or whole planes of z (or
            every rank).

        Returns
        -------
        Level
            The level on the leaders' process grid.

        Raises
        ------
        ValueError
            For groups of another size.
        """
        px, py, pz = self.procs
        zero = np.zeros_like
        if group >= px * py * pz:
            return Level(self.grid, tuple(zero(o) for o in self.owners), (1, 1, 1))
        if px % group == 0:
            return Level(self.grid, (self.owners[0] // group, *self.owners[1:]), (px // group, py, pz))
        if group % px == 0 and py % (group // px) == 0:
            q = group // px
            return Level(self.grid, (zero(self.owners[0]), self.owners[1] // q, self.owners[2]), (1, py // q, pz))
        if group % (px * py) == 0 and pz % (group // (px * py)) == 0:
            q = group // (px * py)
            return Level(self.grid, (zero(self.owners[0]), zero(self.owners[1]), self.owners[2] // q), (1, 1, pz // q))
        raise ValueError(f"groups of {group} consecutive ranks do not tile a {px} x {py} x {pz} process grid")


def _block_owners(extent, parts):
    """Owner coordinate of each of ``extent`` cells split into ``parts`` equal blocks."""
    return (np.arange(extent) // (extent // parts)).astype(np.int64)


def _needs(owners, parts, width):
    """For a dimension: table[a, b] = how many cells owned by b lie within ``width`` of a cell
    owned by a (b != a), as the stencil reaches."""
    n = owners.size
    table = np.zeros((parts, parts), dtype=np.int64)
    for a in range(parts):
        mine = np.flatnonzero(owners == a)
        if mine.size == 0:
            continue
        near = np.unique(np.clip(np.concatenate([mine + s for s in range(-width, width + 1)]), 0, n - 1))
        np.add.at(table[a], owners[near], 1)
        table[a, a] = 0
    return table


def _coarse_needs(fine, coarse, parts_f, parts_c):
    """For a dimension: table[a, b] = how many coarse cells owned by b the fine cells of a
    belong to (aggregates c // 2), b = a included (the caller drops the rank itself)."""
    table = np.zeros((parts_f, parts_c), dtype=np.int64)
    for a in range(parts_f):
        agg = np.unique(np.flatnonzero(fine == a) // 2)
        np.add.at(table[a], coarse[agg], 1)
    return table


def level_messages(level, stencil=7):
    """Local. One halo exchange of the level's operator.

    Parameters
    ----------
    level : Level
        The level.
    stencil : {7, 27}
        The operator's stencil.

    Returns
    -------
    receiver, sender, nbytes : ndarray of int
        One entry per message, ranks numbered x fastest on the level's process grid.
    """
    near = [_needs(o, p, 1) for o, p in zip(level.owners, level.procs)]
    own = [np.diag(c) for c in level.counts()]  # a rank's own cells along a dimension
    if stencil == 27:  # the stencil's box: any combination of dimensions
        return _box_messages([T + D for T, D in zip(near, own)], level.procs)
    parts = [_box_messages([near[e] if e == d else own[e] for e in range(3)], level.procs) for d in range(3)]
    return tuple(np.concatenate(a) for a in zip(*parts))  # 7 points: neighbours differ in one dimension


def _box_messages(tables, procs):
    """Messages of a pattern that is a product over dimensions: receiver a needs from sender b
    tables[0][ax, bx] x tables[1][ay, by] x tables[2][az, bz] values (a rank not from itself)."""
    px, py, _ = procs
    nz = [np.nonzero(T) for T in tables]
    recv, send, nbytes = [], [], []
    for ax, bx in zip(*nz[0]):
        for ay, by in zip(*nz[1]):
            az, bz = nz[2]
            keep = ~((ax == bx) & (ay == by) & (az == bz))
            recv.append(ax + px * (ay + py * az[keep]))
            send.append(bx + px * (by + py * bz[keep]))
            nbytes.append(8 * tables[0][ax, bx] * tables[1][ay, by] * tables[2][az[keep], bz[keep]])
    return _concat(recv, send, nbytes)


def interpolation_messages(fine, coarse):
    """Interpolation's exchange from level ``fine`` to ``coarse`` (same process grid):
    (receiver, sender, bytes), the coarse values a rank's fine cells need from elsewhere."""
    return _box_messages([_coarse_needs(f, c, pf, pc) for f, c, pf, pc in zip(fine.owners, coarse.owners,
                                                                                fine.procs, coarse.procs)],
                         fine.procs)


def move_messages(level, group):
    """A move's gather (receiver, sender, bytes): every member of a group of ``group``
    consecutive ranks holding cells sends them to the group's first rank."""
    counts = level.counts()
    cells = np.einsum("i,j,k->kji", *counts).ravel()  # cells per rank, x fastest
    ranks = np.flatnonzero(cells)
    leaders = (ranks // group) * group
    member = ranks != leaders
    return leaders[member], ranks[member], 8 * cells[ranks[member]]


def _concat(recv, send, nbytes):
    if not recv:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    return (np.concatenate([np.ravel(r) for r in recv]).astype(np.int64),
            np.concatenate([np.ravel(s) for s in send]).astype(np.int64),
            np.concatenate([np.ravel(b) for b in nbytes]).astype(np.int64))


def _summary(msgs, nranks, cost, topology):
    """Busiest rank's sends and receives, totals, and the priced time of one exchange."""
    recv, send, nbytes = msgs
    sent = np.bincount(send, minlength=nranks)
    got = np.bincount(recv, minlength=nranks)
    out = {"msgs": int(send.size), "bytes": int(nbytes.sum()), "send_max": int(sent.max(initial=0)),
           "recv_max": int(got.max(initial=0)), "bytes_max": int(np.bincount(send, nbytes, nranks).max(initial=0))}
    if cost is not None:
        out["model_s"] = _price(cost, topology, msgs, nranks)
    return out


def _price(cost, topology, msgs, nranks):
    recv, send, nbytes = msgs
    if send.size == 0:
        return 0.0
    nrecv = np.bincount(recv, minlength=nranks).astype(float)[:, None]
    return cost.price_messages(topology, 1, send, np.zeros(send.size, np.int64), recv, nbytes.astype(float),
                               nrecv).time


def allgather_seconds(profile, nranks, nbytes):
    """Local. The modelled seconds of an allgather: ``ceil(log2 P)`` inter-node latencies
    (recursive doubling) and the bytes at the inter-node rate.

    Parameters
    ----------
    profile : MachineProfile
        The machine profile (its inter-node short-message latency and rendezvous rate).
    nranks : int
        The ranks P.
    nbytes : float
        The bytes gathered, in all.

    Returns
    -------
    float
        The seconds (0 on one rank).
    """
    if nranks <= 1:
        return 0.0
    alpha = profile.alpha.get(("inter_node", "short"), 0.0)
    rate = profile.rate.get(("inter_node", "rend"), np.inf)
    return math.ceil(math.log2(nranks)) * alpha + nbytes / rate


def work_seconds(nnz, bandwidth):
    """Local. A level's local work per V-cycle: PASSES matrix passes of ``nnz`` entries, 12
    bytes each, at ``bandwidth`` bytes/s.

    Parameters
    ----------
    nnz : int or float
        The entries.
    bandwidth : float
        Memory bandwidth, bytes/s.

    Returns
    -------
    float
        The seconds.
    """
    return PASSES * 12.0 * nnz / bandwidth


def _topology(nranks, ppn, stride=1):
    """Ranks ``0, stride, 2 stride, ...`` of a machine with ``ppn`` consecutive ranks a node,
    renumbered: each keeps its node."""
    from ..topology import make_topology

    nodes = (np.arange(nranks) * stride) // ppn
    _, relabelled = np.unique(nodes, return_inverse=True)
    return make_topology(nodes=relabelled.tolist())


def analyze_mgcg(procs, ppn, *, per_rank=64, grid=None, stencil=7, modes=CGA_MODES, cga_rows=CGA_ROWS,
                 hcga_rows=HCGA_ROWS, hcga_group=HCGA_GROUP, profile=None, bandwidth=FX10_BANDWIDTH, contention=True):
    """Local. MGCG's communication per CGA mode, level by level, counted in this process.

    Parameters
    ----------
    procs : int
        The ranks.
    ppn : int
        Ranks per node.
    per_rank : int
        Cells per rank along each dimension: ``per_rank**3`` cells each.
    grid : tuple of int, optional
        The global grid instead, split over the balanced process grid
        (:func:`process_grid`) into equal blocks.
    stencil : {7, 27}
        The operator's stencil.
    modes : sequence of str
        The CGA modes (:data:`~commsolve.mg.stages.CGA_MODES`), or ``"auto"``: the placement
        the model finds cheapest (:func:`choose_placement`; its candidates under
        ``"auto"``), which needs ``profile``.
    cga_rows, hcga_rows : float
        CGA's and hCGA's rows per rank (:func:`commsolve.mg.stages.cga_stages`).
    hcga_group : int
        hCGA's group of consecutive ranks.
    profile : MachineProfile, str or path, optional
        The machine profile that prices the messages.
    bandwidth : float
        Memory bandwidth per rank, bytes/s (default: an FX10 node's 85 GB/s over its 16
        cores).
    contention : bool
        False prices without the profile's network-contention term (thesis eq. 3.3:
        ``2 h^3 b ppn delta`` with h the hops of a cube partition, which under rank-order
        placement dominates the fine levels' prices at this scale).

    Returns
    -------
    dict
        Per CGA mode (``"modes"``), per level of MGCG's hierarchy: rows, ranks, active
        ranks, and for one V-cycle the busiest rank's messages (halo exchanges,
        interpolation, a move's gather) with, given a ``profile``, their modelled time and
        the busiest rank's local work at ``bandwidth`` bytes/s; totals per mode.

    Raises
    ------
    ValueError
        For an unknown stencil, bad switches, ``"auto"`` without ``profile``, a grid that
        does not split into equal blocks, or groups that do not tile the process grid.
    """
    if stencil not in STENCILS:
        raise ValueError(f"stencil must be one of {STENCILS}, got {stencil}")
    check_switches(cga_rows, hcga_rows, hcga_group)
    if "auto" in modes and profile is None:
        raise ValueError("the 'auto' mode is the cost model's choice of placement: pass profile=")
    dims = process_grid(procs)
    if grid is None:
        grid = tuple(int(per_rank) * p for p in dims)
    grid = tuple(int(g) for g in grid)
    if any(g % p for g, p in zip(grid, dims)):
        raise ValueError(f"a {' x '.join(map(str, grid))} grid does not split into {' x '.join(map(str, dims))} "
                         "equal blocks")
    cost = None
    if profile is not None:
        from ..model import CostModel

        cost = CostModel(profile)
        if not contention:
            cost.profile = dataclasses.replace(cost.profile, delta=0.0)
    fine = Level(grid, tuple(_block_owners(g, p) for g, p in zip(grid, dims)), dims)
    out = {"procs": int(procs), "ppn": int(ppn), "process_grid": list(dims), "grid": list(grid), "stencil": stencil,
           "profile": None if cost is None else cost.profile.name, "contention": bool(contention),
           "bandwidth": bandwidth, "modes": {}}
    for mode in modes:
        if mode == "auto":
            choice = choose_placement(fine, ppn, stencil, cost, bandwidth, hcga_group)
            out["auto"] = {k: choice[k] for k in ("chosen", "best", "candidates")}
            stages = choice["stages"]
        else:
            stages = cga_stages(mode, procs, cga_rows, hcga_rows, hcga_group)
        out["modes"][mode] = _mode(fine, mode, stages, ppn, stencil, cost, bandwidth)
    # The levels the modes differ on: from the first move any of them makes (the finer ones are alike).
    moved = [lv["level"] for m in out["modes"].values() for lv in m["levels"] if "move" in lv]
    out["coarse_from"] = first = min(moved) if moved else None
    for m in out["modes"].values():
        coarse = [lv for lv in m["levels"] if first is not None and lv["level"] >= first]
        m["total"]["coarse_msgs"] = sum(_received(lv) for lv in coarse)
        if cost is not None:
            m["total"]["coarse_comm_s"] = sum(lv["comm_s"] for lv in coarse)
            m["total"]["coarse_work_s"] = sum(lv["work_s"] for lv in coarse)
    return out


def _received(lv):
    """The busiest rank's messages received on a level in one V-cycle (each exchange taken
    twice: two halo exchanges, interpolation and restriction, a move's gather and scatter)."""
    return 2 * (lv["halo"]["recv_max"] + lv.get("interpolation", {}).get("recv_max", 0)
                + lv.get("move", {}).get("recv_max", 0))


def _level_row(level, k, stencil, cost, topo, bandwidth):
    """Level ``level`` (number ``k``) on its ranks: its row of the table (messages, and given a
    ``cost`` model the communication of one V-cycle without the coarsest's allgather or a
    move) and the next coarser level (None for the coarsest)."""
    row = {"level": k, "grid": list(level.grid), "rows": level.rows, "ranks": level.nranks}
    cells = np.einsum("i,j,k->kji", *level.counts()).ravel()
    row["active_ranks"] = int(np.count_nonzero(cells))
    row["rows_max"] = int(cells.max())
    row["halo"] = halo = _summary(level_messages(level, stencil), level.nranks, cost, topo)
    row["work_s"] = work_seconds(stencil * row["rows_max"], bandwidth)
    coarse = level.coarser() if level.rows > 1 else None
    if coarse is not None:
        row["interpolation"] = _summary(interpolation_messages(level, coarse), level.nranks, cost, topo)
    if cost is not None:
        row["comm_s"] = 2 * halo["model_s"] + (2 * row["interpolation"]["model_s"] if coarse is not None else 0.0)
    return row, coarse


def _move_seconds(cost, level, group, topo):
    """A move of ``level`` onto the first of each ``group`` consecutive ranks, there and back."""
    return 2 * _price(cost, topo, move_messages(level, group), level.nranks)


def _mode(fine, mode, stages, ppn, stencil, cost, bandwidth):
    levels, stride = [], 1  # stride: ranks of the original machine between two of this level's ranks
    level, k, stage = fine, 0, 0
    topo = _topology(level.nranks, ppn) if cost is not None else None
    while True:
        move = None
        if stage < len(stages) and level.rows < stages[stage][0] * level.nranks:
            group = -(-level.nranks // stages[stage][1])
            move = {"from": level.nranks, **_summary(move_messages(level, group), level.nranks, cost, topo)}
            if cost is not None:
                move["model_s"] *= 2  # the gather, then the scatter back
            level = level.moved(group)
            stride *= group
            stage += 1
            topo = _topology(level.nranks, ppn, stride) if cost is not None else None
        row, coarse = _level_row(level, k, stencil, cost, topo, bandwidth)
        if move is not None:
            row["move"] = move
        if cost is not None:
            if coarse is None and level.nranks > 1:  # the coarsest, gathered whole on every rank
                row["comm_s"] += allgather_seconds(cost.profile, level.nranks, 8.0 * level.rows)
            row["comm_s"] += row.get("move", {}).get("model_s", 0.0)
        levels.append(row)
        if coarse is None:
            break
        level = coarse
        k += 1
    total = {"busiest_msgs_per_cycle": sum(_received(lv) for lv in levels),
             "work_s": sum(lv["work_s"] for lv in levels)}
    if cost is not None:
        total["comm_s"] = sum(lv["comm_s"] for lv in levels)
        total["cycle_s"] = total["comm_s"] + total["work_s"]
    return {"stages": [list(s) for s in stages], "levels": levels, "total": total}


def choose_placement(fine, ppn, stencil, cost, bandwidth, hcga_group):
    """The cost model's cheapest placement of the coarse levels (:func:`placements`: none,
    CGA at any level, hCGA at any two, the leaders alone) for the hierarchy from level
    ``fine``: each level priced on every rank, on the leaders of groups of ``hcga_group``
    consecutive ranks (a move commutes with coarsening: the leaders' level k is the moved
    level k) and on one rank, and each move from its messages."""
    P = fine.nranks
    g, m = hcga_leaders(P, hcga_group)
    topo, sub_topo = _topology(P, ppn), _topology(m, ppn, g)
    levels = [fine]
    while levels[-1].rows > 1:
        levels.append(levels[-1].coarser())

    def seconds(level, topo):
        row, _ = _level_row(level, 0, stencil, cost, topo, bandwidth)
        return row["comm_s"] + row["work_s"]

    coarsest_bytes = 8.0 * levels[-1].rows
    priced = {"on_all": [seconds(lv, topo) for lv in levels],
              "on_one": [work_seconds(stencil * lv.rows, bandwidth) for lv in levels],
              "to_one": [_move_seconds(cost, lv, P, topo) for lv in levels],
              "allgather_all": allgather_seconds(cost.profile, P, coarsest_bytes)}
    if 1 < m < P:
        subs = [lv.moved(g) for lv in levels]
        priced.update(leaders=m, allgather_leaders=allgather_seconds(cost.profile, m, coarsest_bytes),
                      on_leaders=[seconds(lv, sub_topo) for lv in subs],
                      to_leaders=[_move_seconds(cost, lv, g, topo) for lv in levels],
                      leaders_to_one=[_move_seconds(cost, lv, m, sub_topo) for lv in subs])
    out = placements(**priced)
    out["stages"] = placement_stages(out["chosen"], [lv.rows for lv in levels], P)
    return out


def format_mgcg_analysis(r):
    """Local. Text tables of :func:`analyze_mgcg`'s result.

    Parameters
    ----------
    r : dict
        :func:`analyze_mgcg`'s result.

    Returns
    -------
    str
        One table per mode, and a summary line each.
    """
    lines = [f"MGCG on {r['procs']:,} ranks ({r['ppn']} per node), process grid "
             f"{' x '.join(map(str, r['process_grid']))}, grid {' x '.join(map(str, r['grid']))}, "
             f"{r['stencil']}-point" + (f", priced with {r['profile']}" + ("" if r["contention"] else
                                                                          " (no contention term)")
                                        if r["profile"] else "")]
    priced = r["profile"] is not None
    for mode, m in r["modes"].items():
        stages = ", ".join(f"below {a:g} rows/rank onto {b} rank(s)" for a, b in m["stages"]) or "none"
        lines.append(f"\nCGA {mode} ({stages})")
        if mode == "auto":
            best = ", ".join(f"{describe_placement(c)} {c['cycle_s'] * 1e3:.3f} ms" for c in r["auto"]["best"].values())
            chosen = describe_placement(r["auto"]["chosen"])
            lines.append(f"  the model's cheapest placement: {chosen} (best V-cycle of each "
                         f"kind: {best})")
        lines.append(f"{'level':>5}{'grid':>18}{'ranks':>8}{'active':>8}{'rows max':>10}{'halo recv':>11}"
                     f"{'interp recv':>12}{'move recv':>11}" + (f"{'comm us':>14}{'work us':>12}" if priced else ""))
        for lv in m["levels"]:
            move = lv.get("move", {}).get("recv_max", "")
            text = (f"{lv['level']:>5}{'x'.join(map(str, lv['grid'])):>18}{lv['ranks']:>8,}{lv['active_ranks']:>8,}"
                    f"{lv['rows_max']:>10,}{lv['halo']['recv_max']:>11}"
                    f"{lv.get('interpolation', {}).get('recv_max', ''):>12}{move:>11}")
            if priced:
                text += f"{lv['comm_s'] * 1e6:>14,.1f}{lv['work_s'] * 1e6:>12,.1f}"
            lines.append(text)
        t = m["total"]
        lines.append(f"  one V-cycle: the busiest rank receives {t['busiest_msgs_per_cycle']:,} messages summed over "
                     "levels" + (f"; communication {t['comm_s'] * 1e3:.3f} ms + busiest rank's work "
                                 f"{t['work_s'] * 1e3:.3f} ms = {t['cycle_s'] * 1e3:.3f} ms" if priced else ""))
        if r["coarse_from"] is not None:
            lines.append(f"  levels {r['coarse_from']} and coarser (where the modes differ): {t['coarse_msgs']:,} "
                         "messages" + (f", communication {t['coarse_comm_s'] * 1e3:.3f} ms, work "
                                       f"{t['coarse_work_s'] * 1e3:.3f} ms" if priced else ""))
    lines.append("  (recv: the busiest rank's messages received in one exchange; comm: two halo exchanges, the "
                 "interpolation both ways and a move there and back per V-cycle; work: the busiest rank's "
                 f"{PASSES} matrix passes at the given bandwidth)")
    return "\n".join(lines)
