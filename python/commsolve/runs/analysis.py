"""Analysis at virtual scale: every rank's plan for each strategy, built in one process,
summarized per strategy (DESIGN.md rule 2), with optional volume heat maps."""

from __future__ import annotations

import time

import numpy as np

from .. import _core, gallery, virtual
from ..io import mmread
from ..model import CostModel
from ..partition import partition
from ..stats import summarize
from ..topology import make_topology

__all__ = ["analyze", "volume_matrix", "SUMMARY_FIELDS"]

# Sent side, per rank (received totals are the same numbers seen from the other end).
SUMMARY_FIELDS = ("msgs_sent_inter", "bytes_sent_inter", "msgs_sent_intra", "bytes_sent_intra")


def volume_matrix(plans, topology, level="node"):
    """Bytes sent from every node (or rank) to every other, summed over plan steps."""
    size = topology.num_nodes if level == "node" else topology.size
    where = topology.node_of_rank if level == "node" else np.arange(topology.size)
    M = np.zeros((size, size))
    for plan in plans:
        src = where[plan.rank]
        for st in plan.steps:
            np.add.at(M, (src, where[st.send_peers]), 8.0 * np.diff(st.send_ptr))
    return M


CONCRETE = ("standard", "node-aware-2step", "node-aware")
MAX_VIRTUAL_RANKS = 1 << 22  # per-rank patterns and plans of 4M ranks: several GB
MAX_HEATMAP = 8192           # a dense ranks x ranks matrix of 512 MB


def analyze(nprocs, ppn, strategies, *, gen=None, matrix=None, partition_method="contiguous",
            layout="smp", seed=0, heatmap_level=None, profile=None, progress=None):
    """Plans of ``nprocs`` virtual ranks (``ppn`` per node) for each strategy.

    Returns ``{"matrix", "rows", "nnz", "nprocs", "ppn", "nodes", "strategies": {name:
    {"steps", "chosen", "build_s", "max", "mean"}}}``; with ``heatmap_level`` (``"node"``
    or ``"rank"``) also ``"volumes": {name: matrix}``. With ``profile`` (a MachineProfile,
    bundled name or TOML path) each strategy also gets ``"model"``, its predicted exchange
    time and breakdown, and ``auto`` picks the strategy with the lowest predicted time.
    ``progress(stage, done, total)`` is called while patterns are built and after each
    strategy.
    """
    if (gen is None) == (matrix is None):
        raise ValueError("give exactly one of a generator spec or a matrix file")
    if not 1 <= nprocs <= MAX_VIRTUAL_RANKS:
        raise ValueError(f"{nprocs:,} virtual ranks: the virtual world handles 1 to {MAX_VIRTUAL_RANKS:,} here")
    if heatmap_level == "rank" and nprocs > MAX_HEATMAP:
        raise ValueError(f"a rank-level heat map of {nprocs:,} ranks ({nprocs:,} x {nprocs:,} cells) is too large; "
                         f"at most {MAX_HEATMAP:,} ranks, or --heatmap-level node")
    names = list(_core.strategy_names())
    for s in strategies:
        if s not in names:
            raise ValueError(f"unknown communication strategy '{s}' (known: {', '.join(names)})")
    topo = make_topology(size=nprocs, ppn=ppn, layout=layout)
    cost = CostModel(profile) if profile is not None else None
    t0 = time.perf_counter()
    A = gallery.from_spec(gen, nprocs=nprocs) if gen is not None else mmread(matrix)
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"matrix must be square, got {A.shape[0]} x {A.shape[1]}")
    dist = partition(A, nprocs, partition_method, seed)
    rows, nnz = A.shape[0], A.nnz
    tick = (lambda k: progress("patterns", k, nprocs)) if progress else None
    patterns = virtual.halo_patterns(A, dist, progress=tick)
    del A  # only the patterns are needed from here on
    out = {"matrix": gen if gen is not None else str(matrix), "rows": rows, "nnz": int(nnz),
           "nprocs": nprocs, "ppn": ppn, "nodes": topo.num_nodes, "layout": layout,
           "partition": partition_method, "setup_s": time.perf_counter() - t0, "strategies": {}}
    if heatmap_level:
        out["volumes"] = {}
    for i, s in enumerate(strategies):
        t = time.perf_counter()
        if s == "auto" and cost is not None:
            plans = min((_core.build_plans_virtual(patterns, topo, dist, c) for c in CONCRETE),
                        key=lambda cand: cost.price(cand, topo).time)
        else:
            plans = _core.build_plans_virtual(patterns, topo, dist, s)
        build = time.perf_counter() - t
        summary = summarize(virtual.plan_stats(plans, topo))
        out["strategies"][s] = {
            "chosen": plans[0].strategy,
            "steps": len(plans[0].steps),
            "build_s": build,
            "max": {f: summary["max"][f] for f in SUMMARY_FIELDS},
            "mean": {f: summary["mean"][f] for f in SUMMARY_FIELDS},
        }
        if cost is not None:
            out["strategies"][s]["model"] = cost.price(plans, topo).to_dict()
            out["profile"] = cost.profile.name
        if heatmap_level:
            out["volumes"][s] = volume_matrix(plans, topo, heatmap_level)
        del plans
        if progress:
            progress("strategies", i + 1, len(strategies))
    return out


def format_analysis(result):
    """Text table of :func:`analyze`'s result."""
    head = (f"{result['matrix']}: {result['rows']:,} rows, {result['nnz']:,} nonzeros on {result['nprocs']:,} "
            f"virtual ranks, {result['ppn']} per node ({result['nodes']:,} nodes), {result['partition']} partition")
    cols = ["strategy", "steps", "inter msgs max", "mean", "inter bytes max", "mean",
            "intra msgs max", "intra bytes max"]
    modelled = any("model" in r for r in result["strategies"].values())
    if modelled:
        cols.append("model us")
        head += f"; modelled with profile {result['profile']}"
    lines = []
    for name, r in result["strategies"].items():
        label = name if r["chosen"] == name else f"{name}->{r['chosen']}"
        mx, mn = r["max"], r["mean"]
        vals = [label, r["steps"], mx["msgs_sent_inter"], f"{mn['msgs_sent_inter']:.1f}", mx["bytes_sent_inter"],
                f"{mn['bytes_sent_inter']:.0f}", mx["msgs_sent_intra"], mx["bytes_sent_intra"]]
        if modelled:
            vals.append(f"{r['model']['time_s'] * 1e6:.1f}")
        lines.append("".join(f"{v:>16}" if not isinstance(v, int) else f"{v:>16,}" for v in vals))
    return "\n".join([head, "".join(f"{c:>16}" for c in cols)] + lines)
