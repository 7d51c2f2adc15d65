"""The communication of a whole AMG hierarchy at virtual scale (thesis Chapter 7, Figures
7.x): the hierarchy is set up once in this process (PMIS and everything after it do not
depend on the partition, so it is the hierarchy P ranks would build), then every level is
distributed over P virtual ranks as a real run would distribute it (contiguous fine rows;
each rank's coarse points stay with it), and each strategy's plans are built and counted
for the level's SpMV and for its Galerkin product's two row exchanges."""

from __future__ import annotations

import time

import numpy as np

from .. import gallery, virtual
from .._core import Distribution
from ..io import mmread
import scipy.sparse as sp

from ..model import CostModel
from ..model.formulas import sparsified_spmv_comm
from ..stats import CommStats, summarize
from ..topology import make_topology

__all__ = ["analyze_amg", "format_amg_analysis", "level_distributions", "CONCRETE"]

CONCRETE = ("standard", "node-aware-2step", "node-aware")
FIELDS = ("msgs_sent_inter", "bytes_sent_inter", "msgs_sent_intra")


def level_distributions(ml, nprocs, agglomerate=None):
    """Local. Row Distribution of every level over nprocs ranks, as a run on nprocs ranks
    makes them.

    Parameters
    ----------
    ml : MultilevelSolver
        A hierarchy set up in this process (on one rank).
    nprocs : int
        The ranks a run would distribute it over.
    agglomerate : list of (float, int), optional
        Agglomeration stages (:func:`commsolve.amg.solver`'s): a moved level's rows are on
        its group leaders from that level on.

    Returns
    -------
    list of Distribution or (list of Distribution, dict)
        The list, or with stages (list, {level: distribution before its move}).
    """
    from ..redistribute import _target_distributions, group_size
    from .agglomerate import parse_stages

    stages = parse_stages(agglomerate, nprocs)
    dists, moved, group = [Distribution.contiguous(ml.levels[0].rows, nprocs)], {}, 1
    for k, lvl in enumerate(ml.levels):
        if k > 0:
            above = ml.levels[k - 1]
            owners = np.asarray(dists[-1].owners_of(np.asarray(above.c_points, dtype=np.int64)))
            counts = np.bincount(owners, minlength=nprocs)
            dists.append(Distribution.from_offsets(np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)))
        alive = -(-nprocs // group)
        if stages and stages[0][1] < alive and lvl.rows < stages[0][0] * alive:
            group *= group_size(alive, stages.pop(0)[1])
            moved[k] = dists[k]
            dists[k] = _target_distributions(dists[k], group)[0]
    return dists if agglomerate is None else (dists, moved)


def _before_sparsification(ml, k):
    """Level k's operator before sparsification, as scipy (global), or None: the Galerkin
    operator sparse and hybrid keep; for non-Galerkin the product of the level above's
    operators again (the setup keeps only what it sparsified it into)."""
    lvl = ml.levels[k]
    if lvl.sparsified is None:
        return None
    if lvl.A_hat is not None:
        return lvl.A.local_matrix()
    above = ml.levels[k - 1]
    P = above.P.local_matrix()
    return sp.csr_matrix(P.T @ above.A.local_matrix() @ P)


def _spmv_counts(A, dist, strategies, topo, cost):
    """Per strategy: max and mean over ranks of one halo exchange of A, the busiest rank's
    messages and bytes (inter- and intra-node together), the thesis' eq. 4.5 communication
    time (Blue Waters' alpha and beta) and, with a cost model, its price; and the prices
    (for auto's choice)."""
    out, priced = {}, {}
    for s in strategies:
        plans = virtual.plans(A, dist, strategy=s, topology=topo)
        per_rank = virtual.plan_stats(plans, topo)
        summary = summarize(per_rank)
        out[s] = {f: {"max": summary["max"][f], "mean": summary["mean"][f]} for f in FIELDS}
        sent = np.array([st.array.sum(axis=0)[:4] for st in per_rank]).reshape(-1, 4)
        msgs, nbytes = sent[:, 0] + sent[:, 1], sent[:, 2] + sent[:, 3]
        out[s]["msgs_max"], out[s]["bytes_max"] = int(msgs.max(initial=0)), int(nbytes.max(initial=0))
        out[s]["thesis_model_s"] = sparsified_spmv_comm(msgs, nbytes)
        if cost is not None:
            priced[s] = cost.price(plans, topo).time
            out[s]["model_s"] = priced[s]
    return out, priced


def _move_counts(n, before, after, topo, cost):
    """A level's move onto its group leaders (the identity from ``before`` to ``after``,
    :mod:`commsolve.redistribute`'s R): the busiest receiver's messages and bytes."""
    plans = virtual.plans(sp.identity(n, format="csr"), after, before, topology=topo)
    got = np.array([[s.total()[f] for f in ("msgs_recv_intra", "msgs_recv_inter", "bytes_recv_intra",
                                             "bytes_recv_inter")] for s in virtual.plan_stats(plans, topo)])
    ranks = lambda d: int(np.count_nonzero(np.diff(d.offsets)))  # noqa: E731
    out = {"ranks_from": ranks(before), "ranks_to": ranks(after), "recv_msgs_max": int((got[:, 0] + got[:, 1]).max()),
           "recv_bytes_max": int((got[:, 2] + got[:, 3]).max())}
    if cost is not None:
        out["model_s"] = cost.price(plans, topo).time
    return out


def analyze_amg(nprocs, ppn, *, gen=None, matrix=None, strategies=CONCRETE, profile=None, progress=None,
                agglomerate=None, **setup):
    """Local. The communication of an AMG hierarchy's levels on ``nprocs`` virtual ranks,
    the hierarchy set up once in this process.

    Parameters
    ----------
    nprocs : int
        The virtual ranks.
    ppn : int
        Virtual ranks per node.
    gen : str, optional
        A gallery spec of the matrix (``"poisson3d:32"``...); exactly one of ``gen`` and
        ``matrix``.
    matrix : str or path, optional
        A Matrix Market file of the matrix.
    strategies : sequence of str
        The strategies counted, among :data:`CONCRETE`.
    profile : MachineProfile, str or path, optional
        The machine profile that prices each strategy's plans (and each move).
    progress : callable, optional
        ``progress(k, levels)`` once ``k`` of the ``levels`` levels are counted.
    agglomerate : list of (float, int), optional
        Agglomeration stages (:func:`commsolve.amg.solver`'s): the levels below a move live
        on the group leaders.
    **setup
        The setup options of :func:`commsolve.amg.solver` (the strategy aside), a
        sparsification among them.

    Returns
    -------
    dict
        Per level of the AMG hierarchy of the matrix (``"levels"``): rows, nonzeros, and
        for each strategy the busiest and mean rank's messages of one SpMV halo exchange
        (with thesis eq. 4.5's communication time, and ``profile``'s price when given) and
        of the Galerkin product's exchanges; ``auto``'s choice per level (fewest inter-node
        messages on the busiest rank, or the cheapest priced by ``profile``). With a
        sparsification among the ``setup`` options, a sparsified level's SpMV is that of the
        operator the cycle applies, and ``"sparsified"`` holds gamma, the nonzeros and the
        SpMV counts before. With ``agglomerate`` stages, the moved level has ``"move"``: the
        ranks before and after and the busiest receiver's messages and bytes of the gather
        (standard plan; priced with ``profile``, the scatter back the same).

    Raises
    ------
    ValueError
        Unless exactly one of ``gen`` and ``matrix`` is given, for a strategy not in
        :data:`CONCRETE`, and for bad setup options (as :func:`commsolve.amg.solver`).
    """
    from mpi4py import MPI

    from . import solver

    if (gen is None) == (matrix is None):
        raise ValueError("give exactly one of a generator spec or a matrix file")
    for s in strategies:
        if s not in CONCRETE:
            raise ValueError(f"unknown strategy '{s}' for the AMG analysis (known: {', '.join(CONCRETE)})")
    t0 = time.perf_counter()
    A = gallery.from_spec(gen, nprocs=nprocs) if gen is not None else mmread(matrix)
    ml = solver(A, MPI.COMM_SELF, strategy="standard", **setup)
    setup_s = time.perf_counter() - t0
    topo = make_topology(size=nprocs, ppn=ppn)
    cost = CostModel(profile) if profile is not None else None
    dists, moved = level_distributions(ml, nprocs, agglomerate or [])
    out = {"matrix": gen if gen is not None else str(matrix), "nprocs": nprocs, "ppn": ppn, "nodes": topo.num_nodes,
           "setup_s": setup_s, "operator_complexity": ml.operator_complexity,
           "sparsify": None if ml.sparsification is None else {
               "method": ml.sparsification.method, "lumping": ml.sparsification.lumping,
               "gamma": list(ml.sparsification.gamma), "galerkin_complexity": ml.galerkin_complexity},
           "levels": []}
    for k, lvl in enumerate(ml.levels):
        Ak = lvl.solve_A.local_matrix()
        level = {"level": k, "rows": int(Ak.shape[0]), "nnz": int(Ak.nnz),
                 "active_ranks": int(np.count_nonzero(np.diff(dists[k].offsets))), "galerkin": {}, "sparsified": None}
        if k in moved:
            level["move"] = _move_counts(Ak.shape[0], moved[k], dists[k], topo, cost)
        level["spmv"], priced = _spmv_counts(Ak, dists[k], strategies, topo, cost)
        before = _before_sparsification(ml, k)
        if before is not None:
            level["sparsified"] = {"gamma": lvl.sparsified["gamma"], "nnz_before": int(before.nnz),
                                   "spmv_before": _spmv_counts(before, dists[k], strategies, topo, cost)[0]}
        if lvl.P is not None:  # the product that made the next level: of the level's own operator
            Ag, Pk = lvl.A.local_matrix(), lvl.P.local_matrix()
            for s in strategies:
                ap, rap = virtual.galerkin_record_stats(Ag, Pk, dists[k], dists[k + 1], topo, s)
                both = summarize([CommStats(np.vstack([a.array, b.array])) for a, b in zip(ap, rap)])
                level["galerkin"][s] = {f: {"max": both["max"][f], "mean": both["mean"][f]} for f in FIELDS}
        inter = {s: level["spmv"][s]["msgs_sent_inter"]["max"] for s in strategies}
        level["auto"] = min(strategies, key=lambda s: (priced[s], s != "standard") if cost is not None
                            else (inter[s], CONCRETE.index(s)))
        out["levels"].append(level)
        if progress:
            progress(k + 1, len(ml.levels))
    return out


def format_amg_analysis(r):
    """Local. Text table of :func:`analyze_amg`'s result.

    Parameters
    ----------
    r : dict
        :func:`analyze_amg`'s result.

    Returns
    -------
    str
        A line per level: rows, nonzeros, active ranks, and per strategy the busiest rank's
        inter-node messages of one SpMV halo exchange and of the Galerkin product's
        exchanges, then ``auto``'s choice; a moved level's move above it; for a sparsified
        hierarchy, a second table of each sparsified level before and after (nonzeros, the
        busiest rank's messages, thesis eq. 4.5's communication time).
    """
    strategies = list(r["levels"][0]["spmv"])
    head = (f"{r['matrix']}: AMG hierarchy on {r['nprocs']:,} virtual ranks, {r['ppn']} per node "
            f"({r['nodes']:,} nodes); operator complexity {r['operator_complexity']:.3f}\n"
            "busiest rank's inter-node messages per level: one SpMV halo exchange | the Galerkin product's exchanges")
    cols = f"{'level':>5}{'rows':>12}{'nnz':>13}{'ranks':>7}" + "".join(f"{s[:16]:>18}" for s in strategies) + "   auto"
    lines = [head, cols]
    for lv in r["levels"]:
        if lv.get("move"):
            m = lv["move"]
            lines.append(f"{'':>5}  moved from {m['ranks_from']:,} to {m['ranks_to']:,} ranks: the busiest receiver gets "
                         f"{m['recv_msgs_max']:,} messages, {m['recv_bytes_max']:,} bytes"
                         + (f" ({m['model_s'] * 1e6:.1f} us)" if "model_s" in m else ""))
        cells = []
        for s in strategies:
            g = lv["galerkin"].get(s)
            cells.append(f"{lv['spmv'][s]['msgs_sent_inter']['max']:>8} | {g['msgs_sent_inter']['max'] if g else '-':>6}")
        lines.append(f"{lv['level']:>5}{lv['rows']:>12,}{lv['nnz']:>13,}{lv['active_ranks']:>7}"
                     + "".join(f"{c:>18}" for c in cells) + f"   {lv['auto']}")
    spars = r.get("sparsify")
    if spars:
        s0 = strategies[0]
        lines += [f"sparsified ({spars['method']}, {spars['lumping']} lumping, gamma "
                  f"{','.join(f'{g:g}' for g in spars['gamma'])}): one SpMV of each level before -> after, "
                  f"{s0} strategy; the busiest rank's messages (inter + intra node), and thesis eq. 4.5's "
                  "communication time (alpha 1.8e-6 s, beta 1.8e-9 s/byte)",
                  f"{'level':>5}{'gamma':>7}{'nnz':>24}{'messages':>16}{'eq. 4.5 time (us)':>24}"]
        for lv in r["levels"]:
            done = lv["sparsified"]
            if not done:
                continue
            b, a = done["spmv_before"][s0], lv["spmv"][s0]
            lines.append(f"{lv['level']:>5}{done['gamma']:>7g}{done['nnz_before']:>12,} -> {lv['nnz']:<9,}"
                         f"{b['msgs_max']:>7} -> {a['msgs_max']:<6}{b['thesis_model_s'] * 1e6:>11.1f} -> "
                         f"{a['thesis_model_s'] * 1e6:<10.1f}")
    return "\n".join(lines)
