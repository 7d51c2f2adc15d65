"""The distributed triangular solves at virtual scale (``commsolve trees sptrsv3d``): every rank's solve plan for each algorithm, built in one process from the
symbolic structure alone (no MPI, no numeric factorization), and what it moves.

For each algorithm: per-rank messages and bytes sent inside the grids (XY) and between them
(Z), max and mean over ranks; the inter-grid synchronisation points of the slowest grid's
program; the floating-point work per grid and its replication over the serial solve.
``2d`` is priced on the squarest 2D grid with the same number of ranks. Also the 3D
factorization's messages and factor memory per rank on the same grid (``factorization``).
"""

from __future__ import annotations

import numpy as np

from .. import _core
from ..direct import ALGORITHMS, make_layout, parse_grid, symbolic
from ..direct.factor3d import XY_FACTOR_STEPS, Z_FACTOR_STEPS
from ..topology import blocked_topology
from ..trees import tree_shape
from ..workloads import sptrsv3d_summary

__all__ = ["analyse_sptrsv3d", "format_sptrsv3d", "plot_sptrsv3d", "MAX_VIRTUAL_RANKS", "MAX_LAYERS"]

MAX_VIRTUAL_RANKS = 1 << 22  # per-rank statistics of 4M ranks: a few GB
MAX_LAYERS = 1024            # the SC'23 paper goes to 32; every layer scans every supernode


def analyse_sptrsv3d(A, grid, algorithms, tree=None, ppn=16, partition="nd", allreduce=None, nrhs=1,
                     structure=None, progress=None, seed=None, flat_threshold=None, **lu_options):
    """``grid``: (px, py, pz) or "PxQxR"; ``algorithms``: names from
    :data:`commsolve.direct.ALGORITHMS`; ``structure``: the symbolic structure if already
    computed (``A`` may then be None), else :func:`commsolve.direct.symbolic` of ``A`` with
    ``lu_options``."""
    px, py, pz = parse_grid(grid, None, MAX_VIRTUAL_RANKS, "the virtual world")
    if pz > MAX_LAYERS:
        raise ValueError(f"Pz = {pz}: at most {MAX_LAYERS} layers (every layer scans every supernode)")
    if not algorithms:
        raise ValueError("no algorithm given (known: " + ", ".join(ALGORITHMS) + ")")
    P = px * py * pz
    S = symbolic(A, pz, **lu_options) if structure is None else structure
    layout = make_layout(S, (px, py, pz), partition=partition)
    forests = np.asarray(layout.forests)
    topo = blocked_topology(P, ppn)
    widths = np.diff(S.sn_start)
    out = {"rows": int(S.n), "grid": [px, py, pz], "nranks": P, "ppn": ppn, "partition": partition,
           "supernodes": int(S.nsuper), "nnz_L": int(S.nnz_L),
           "forest_columns": np.bincount(forests, weights=widths, minlength=2 * pz - 1).astype(int).tolist(),
           "algorithms": {}}
    out["factorization"] = factor3d_summary(layout, topo, tree, seed, flat_threshold)
    # an algorithm that does not run on the grid (2d on a 3D one) runs on the squarest 2D grid of as many ranks
    here = {a: _core.algorithm_runs_on(a, pz) for a in algorithms}
    flat = None if all(here.values()) else make_layout(S, parse_grid(None, P))
    for a in algorithms:
        out["algorithms"][a] = sptrsv3d_summary(layout if here[a] else flat, a, tree, topo, nrhs=nrhs,
                                                allreduce=allreduce if here[a] else None, seed=seed,
                                                flat_threshold=flat_threshold)
        if progress is not None:
            progress(a)
    return out


def factor3d_summary(layout, topo, tree=None, seed=None, flat_threshold=None):
    """The distributed factorization on ``layout`` (planned from the structure: panels
    broadcast inside the grids by ``tree``, ancestor updates reduced between grids, factored
    ancestors broadcast back): per rank sent, max and mean messages and bytes inside the
    grids (XY) and between them (Z), and the factor entries per rank (max and mean)."""
    steps = np.asarray(_core.factor_3d_planned(layout, topo, tree_shape(tree, seed, flat_threshold)))
    out = {}
    for name, idx in (("xy", XY_FACTOR_STEPS), ("z", Z_FACTOR_STEPS)):
        sent = steps[:, list(idx), :].sum(axis=1)
        msgs, nbytes = sent[:, 0] + sent[:, 1], sent[:, 2] + sent[:, 3]
        out[name] = {"max_msgs": int(msgs.max()), "mean_msgs": float(msgs.mean()), "max_bytes": int(nbytes.max()),
                     "mean_bytes": float(nbytes.mean())}
    entries = _core.factor_entries_per_rank(layout)
    out.update(rank_entries_max=int(entries.max()), rank_entries_mean=float(entries.mean()))
    return out


def format_sptrsv3d(r, matrix):
    cols = r["forest_columns"]
    shown = ", ".join(f"{c:,}" for c in cols[:15]) + (f", ... ({len(cols)} forests)" if len(cols) > 15 else "")
    lines = [f"{matrix}: {r['rows']:,} rows, {r['supernodes']:,} supernodes, nnz(L) {r['nnz_L']:,}; "
             f"{r['nranks']:,} ranks, {r['ppn']} per node",
             f"forests ({r['partition']} partition): the columns each of the {len(cols)} forests holds, the top "
             f"(the separators every layer shares) first, then each level's, leaves last: {shown}",
             "", "per rank, sent (max / mean); syncs: inter-grid synchronisation points of the longest program; "
             "replication: the work of every layer's solve over the serial solve's (layers solve the ancestors they "
             "share)",
             f"{'algorithm':<13}{'grid':>10}{'XY msgs':>19}{'XY MB':>17}{'Z msgs':>15}{'Z MB':>15}{'syncs':>7}"
             f"{'flops/grid max':>16}{'replication':>13}"]
    for a, s in r["algorithms"].items():
        xy, z = s["xy"], s["z"]
        grid = "x".join(map(str, s["grid"]))
        lines.append(f"{a:<13}{grid:>10}{xy['max_msgs']:>10,} / {xy['mean_msgs']:>6,.0f}"
                     f"{xy['max_bytes'] / 1e6:>8.2f} / {xy['mean_bytes'] / 1e6:>6.2f}"
                     f"{z['max_msgs']:>7,} / {z['mean_msgs']:>5.1f}{z['max_bytes'] / 1e6:>8.3f} / {z['mean_bytes'] / 1e6:>4.2f}"
                     f"{s['sync_points']:>7}{max(s['flops_per_grid']):>16.3e}{s['replication']:>13.3f}")
    f = r.get("factorization")
    if f:
        lines += ["", "factorization (per rank sent, max / mean): " + "; ".join(
            f"{label} {f[k]['max_msgs']:,} / {f[k]['mean_msgs']:,.1f} messages, {f[k]['max_bytes'] / 1e6:,.2f} / "
            f"{f[k]['mean_bytes'] / 1e6:,.2f} MB" for k, label in (("xy", "XY"), ("z", "Z"))),
            f"factor entries per rank max / mean {f['rank_entries_max']:,} / {f['rank_entries_mean']:,.0f}"]
    return "\n".join(lines)


def plot_sptrsv3d(r, path, matrix):
    """PNG: per algorithm, the messages every rank sends inside the grids and between them
    (ranks sorted by XY messages), and the work per grid."""
    from .._plotting import finish, pyplot

    plt = pyplot()

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for a, s in r["algorithms"].items():
        xy, z = np.asarray(s["xy"]["per_rank_msgs"]), np.asarray(s["z"]["per_rank_msgs"])
        order = np.argsort(-xy)
        ax1.plot(xy[order], label=f"{a} XY")
        if z.any():
            ax1.plot(z[order], ls=":", label=f"{a} Z")
        ax2.plot(s["flops_per_grid"], marker="o", label=a)
    ax1.set(xlabel="ranks, by XY messages", ylabel="messages sent per solve", yscale="symlog",
            title=f"{matrix} on {r['nranks']:,} ranks")
    ax2.set(xlabel="grid (layer) z", ylabel="flops per solve (1 rhs)", title="work per grid")
    for ax in (ax1, ax2):
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return finish(fig, path)
