"""Figures: strategy comparison bars and communication-volume heat maps (PNG)."""

from __future__ import annotations

import numpy as np

from .._plotting import finish, pyplot

__all__ = ["plot_strategies", "plot_volumes", "plot_grid_volumes", "plot_amg_levels"]


def plot_strategies(result, path):
    """Bars of the busiest and the mean rank's inter-node messages and bytes per strategy, on
    axes from zero (so a bar's height is its value: a log axis that starts near the smallest
    bar made a 10 % difference look 5x), each bar labelled with its value; messages on whole
    numbers."""
    from matplotlib.ticker import MaxNLocator

    plt = pyplot()
    names = list(result["strategies"])
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    x = np.arange(len(names))
    for ax, field, label in zip(axes, ("msgs_sent_inter", "bytes_sent_inter"),
                                ("inter-node messages per rank", "inter-node bytes per rank")):
        mx = [result["strategies"][n]["max"][field] for n in names]
        mn = [result["strategies"][n]["mean"][field] for n in names]
        for offset, values, what in ((-0.2, mx, "max over ranks"), (0.2, mn, "mean over ranks")):
            bars = ax.bar(x + offset, values, 0.4, label=what)
            ax.bar_label(bars, labels=[f"{v:,.0f}" if v >= 100 else f"{v:.3g}" for v in values], fontsize=8, padding=2)
        ax.set_xticks(x, names, rotation=15)
        ax.set_title(label)
        ax.set_ylim(0, 1.15 * max(mx + mn + [1]))
        if field.startswith("msgs"):
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(loc="upper right", fontsize=8)
    fig.suptitle(f"{result['matrix']} on {result['nprocs']:,} ranks, {result['ppn']} per node")
    fig.tight_layout()
    return finish(fig, path)


def plot_volumes(result, path):
    """One heat map per strategy of the bytes sent between nodes (or ranks)."""
    plt = pyplot()
    vols = result["volumes"]
    fig, axes = plt.subplots(1, len(vols), figsize=(4.5 * len(vols), 4), squeeze=False)
    vmax = max(v.max() for v in vols.values()) or 1.0
    for ax, (name, M) in zip(axes[0], vols.items()):
        im = ax.imshow(np.where(M > 0, M, np.nan), cmap="viridis", vmin=0, vmax=vmax, interpolation="nearest")
        ax.set_title(name)
        ax.set_xlabel("destination")
        ax.set_ylabel("source")
    fig.colorbar(im, ax=axes[0].tolist(), label="bytes per exchange")
    fig.suptitle("bytes sent between nodes (diagonal: within a node)" if M.shape[0] == result["nodes"]
                 else "bytes sent between ranks")
    return finish(fig, path)


def plot_grid_volumes(volumes, grid, path, title):
    """Per-rank volumes laid out on the Pr x Pc process grid, one panel per tree shape
    (the PSelInv paper's heat maps); ``volumes``: {shape: per-rank bytes}."""
    plt = pyplot()
    Pr, Pc = grid
    fig, axes = plt.subplots(1, len(volumes), figsize=(3.6 * len(volumes), 3.6), squeeze=False)
    vmax = max(float(np.max(v)) for v in volumes.values()) / 2**20 or 1.0
    for ax, (name, v) in zip(axes[0], volumes.items()):
        im = ax.imshow(np.asarray(v, float).reshape(Pr, Pc) / 2**20, cmap="hot", vmin=0, vmax=vmax)
        ax.set_title(name)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(im, ax=axes[0].tolist(), label="MB per rank")
    fig.suptitle(title)
    return finish(fig, path, dpi=110)


def plot_amg_levels(result, path):
    """Per AMG level, the busiest rank's inter-node messages for each strategy: one SpMV halo
    exchange (left) and the Galerkin product's exchanges (right), as thesis Figures 7.x."""
    plt = pyplot()
    levels = result["levels"]
    names = list(levels[0]["spmv"])
    k = np.arange(len(levels))
    width = 0.8 / len(names)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for i, s in enumerate(names):
        spmv = [lv["spmv"][s]["msgs_sent_inter"]["max"] for lv in levels]
        gal = [lv["galerkin"][s]["msgs_sent_inter"]["max"] if s in lv["galerkin"] else 0 for lv in levels]
        axes[0].bar(k + (i - (len(names) - 1) / 2) * width, spmv, width, label=s)
        axes[1].bar(k + (i - (len(names) - 1) / 2) * width, gal, width, label=s)
    for ax, title in zip(axes, ("SpMV halo exchange", "Galerkin product P^T A P")):
        ax.set_title(f"{title}: busiest rank's inter-node messages")
        ax.set_xlabel("level")
        ax.set_xticks(k)
        ax.legend()
    fig.suptitle(f"AMG on {result['matrix']}, {result['nprocs']:,} ranks, {result['ppn']} per node")
    fig.tight_layout()
    return finish(fig, path)


def plot_mgcg_analysis(result, path):
    """Per MGCG level and coarse-grid aggregation mode: the busiest rank's messages received in
    one V-cycle (halo exchanges, interpolation, moves; left) and, when priced, the modelled
    communication time per V-cycle (right, with the busiest rank's local work)."""
    from ..mg.analysis import _received

    plt = pyplot()
    modes = result["modes"]
    priced = result["profile"] is not None
    fig, axes = plt.subplots(1, 2 if priced else 1, figsize=(11 if priced else 6, 4), squeeze=False)
    for mode, m in modes.items():
        k = [lv["level"] for lv in m["levels"]]
        msgs = [_received(lv) for lv in m["levels"]]
        axes[0][0].plot(k, np.maximum(msgs, 0.5), marker="o", label=f"CGA {mode}")
        if priced:
            axes[0][1].plot(k, [lv["comm_s"] * 1e3 for lv in m["levels"]], marker="o", label=f"CGA {mode}")
    axes[0][0].set_yscale("log")
    axes[0][0].set_title("busiest rank's messages received per V-cycle")
    if priced:
        first = next(iter(modes.values()))
        axes[0][1].plot([lv["level"] for lv in first["levels"]], [lv["work_s"] * 1e3 for lv in first["levels"]],
                        "k--", label="local work (CGA none)")
        axes[0][1].set_yscale("log")
        axes[0][1].set_title(f"modelled communication per V-cycle, ms ({result['profile']})")
    for ax in axes[0]:
        ax.set_xlabel("level")
        ax.legend()
    fig.suptitle(f"MGCG on {result['procs']:,} ranks, {' x '.join(map(str, result['grid']))} grid", fontsize=9)
    fig.tight_layout()
    return finish(fig, path)
