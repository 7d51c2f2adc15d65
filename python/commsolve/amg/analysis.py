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
from ..model import CostModel
from ..stats import CommStats, summarize
from ..topology import make_topology

__all__ = ["analyze_amg", "format_amg_analysis", "CONCRETE"]

CONCRETE = ("standard", "node-aware-2step", "node-aware")
FIELDS = ("msgs_sent_inter", "bytes_sent_inter", "msgs_sent_intra")


def _level_distributions(ml, nprocs):
    """Row Distribution of every level over nprocs ranks, as a run on nprocs ranks makes them."""
    dists = [Distribution.contiguous(ml.levels[0].rows, nprocs)]
    for lvl in ml.levels[:-1]:
        owners = np.asarray(dists[-1].owners_of(np.asarray(lvl.c_points, dtype=np.int64)))
        counts = np.bincount(owners, minlength=nprocs)
        dists.append(Distribution.from_offsets(np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)))
    return dists


def analyze_amg(nprocs, ppn, *, gen=None, matrix=None, strategies=CONCRETE, profile=None, progress=None, **setup):
    """Per level of the AMG hierarchy of the matrix on ``nprocs`` virtual ranks (``ppn`` per
    node): rows, nonzeros, and for each strategy the busiest and mean rank's messages of one
    SpMV halo exchange and of the Galerkin product's exchanges; ``auto``'s choice per level
    (fewest inter-node messages on the busiest rank, or the cheapest priced by ``profile``).
    ``setup`` options as :func:`commsolve.amg.solver`'s."""
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
    dists = _level_distributions(ml, nprocs)
    ops = [lvl.A.local_matrix() for lvl in ml.levels]
    interp = [lvl.P.local_matrix() for lvl in ml.levels[:-1]]
    out = {"matrix": gen if gen is not None else str(matrix), "nprocs": nprocs, "ppn": ppn, "nodes": topo.num_nodes,
           "setup_s": setup_s, "operator_complexity": ml.operator_complexity, "levels": []}
    for k, Ak in enumerate(ops):
        level = {"level": k, "rows": int(Ak.shape[0]), "nnz": int(Ak.nnz),
                 "active_ranks": int(np.count_nonzero(np.diff(dists[k].offsets))), "spmv": {}, "galerkin": {}}
        priced = {}
        for s in strategies:
            plans = virtual.plans(Ak, dists[k], strategy=s, topology=topo)
            summary = summarize(virtual.plan_stats(plans, topo))
            level["spmv"][s] = {f: {"max": summary["max"][f], "mean": summary["mean"][f]} for f in FIELDS}
            if cost is not None:
                priced[s] = cost.price(plans, topo).time
                level["spmv"][s]["model_s"] = priced[s]
            if k < len(interp):
                ap, rap = virtual.galerkin_record_stats(Ak, interp[k], dists[k], dists[k + 1], topo, s)
                both = summarize([CommStats(np.vstack([a.array, b.array])) for a, b in zip(ap, rap)])
                level["galerkin"][s] = {f: {"max": both["max"][f], "mean": both["mean"][f]} for f in FIELDS}
        inter = {s: level["spmv"][s]["msgs_sent_inter"]["max"] for s in strategies}
        level["auto"] = min(strategies, key=lambda s: (priced[s], s != "standard") if cost is not None
                            else (inter[s], CONCRETE.index(s)))
        out["levels"].append(level)
        if progress:
            progress(k + 1, len(ops))
    return out


def format_amg_analysis(r):
    strategies = list(r["levels"][0]["spmv"])
    head = (f"{r['matrix']}: AMG hierarchy on {r['nprocs']:,} virtual ranks, {r['ppn']} per node "
            f"({r['nodes']:,} nodes); operator complexity {r['operator_complexity']:.3f}\n"
            "busiest rank's inter-node messages per level: one SpMV halo exchange | the Galerkin product's exchanges")
    cols = f"{'level':>5}{'rows':>12}{'nnz':>13}{'ranks':>7}" + "".join(f"{s[:16]:>18}" for s in strategies) + "   auto"
    lines = [head, cols]
    for lv in r["levels"]:
        cells = []
        for s in strategies:
            g = lv["galerkin"].get(s)
            cells.append(f"{lv['spmv'][s]['msgs_sent_inter']['max']:>8} | {g['msgs_sent_inter']['max'] if g else '-':>6}")
        lines.append(f"{lv['level']:>5}{lv['rows']:>12,}{lv['nnz']:>13,}{lv['active_ranks']:>7}"
                     + "".join(f"{c:>18}" for c in cells) + f"   {lv['auto']}")
    return "\n".join(lines)
