"""``commsolve analyze spmv|amg|mgcg``: every rank's plans at virtual scale, built in one
process (no MPI), per strategy; MGCG's levels with and without coarse-grid aggregation."""

from __future__ import annotations

import click

from ..mg import CGA_MODES
from ..mg.analysis import FX10_BANDWIDTH
from ..parcsr import STRATEGIES
from .common import (WorkloadGroup, agglomerate_option, as_json_text, bar, check_plot_path, check_sparsify, json_option,
                     matrix_options, need_one_source, offline, ppn_option, refuse, row_partition_option,
                     sparsify_options, split_list, workload_hint)
from .mgcg import cga_options

CONCRETE = ",".join(s for s in STRATEGIES if s != "auto")


@click.group(cls=WorkloadGroup, legacy={"spmv": "spmv", "amg": "amg", "mgcg": "mgcg"}, default="spmv")
def analyze():
    """Every rank's communication plans at virtual scale, built in one process (no MPI):
    one matrix's halo exchange (spmv), every level of its AMG hierarchy (amg), or every level
    of MGCG on a structured grid with and without coarse-grid aggregation (mgcg)."""


def _virtual_options(f):
    f = click.option("--strategy", default=CONCRETE, show_default=True, help="Comma-separated strategies to compare.")(f)
    f = ppn_option(required=True, help="Virtual ranks per node.")(f)
    f = click.option("--procs", type=click.IntRange(1), required=True, help="Virtual ranks.")(f)
    return matrix_options("random:rows_per_rank=1000,nnz_per_row=100")(f)


def _profile_option(f):
    return click.option("--profile", help="Machine profile (bundled name such as bluewaters, or a TOML file): adds "
                        "the modelled exchange time and makes auto choose by it.")(f)


@analyze.command(name="spmv")
@_virtual_options
@click.option("--layout", type=click.Choice(["smp", "round-robin"]), default="smp", show_default=True)
@row_partition_option
@click.option("--plot", type=click.Path(dir_okay=False), help="PNG of the strategies' per-rank traffic.")
@click.option("--heatmap", type=click.Path(dir_okay=False), help="PNG of the volume between nodes (or ranks).")
@click.option("--heatmap-level", type=click.Choice(["node", "rank"]), default="node", show_default=True)
@_profile_option
@json_option("Print the result as JSON.")
def analyze_spmv(gen, matrix, procs, ppn, strategy, layout, partition, plot, heatmap, heatmap_level, profile,
                 as_json):
    """One matrix's halo plan for every virtual rank, per strategy."""
    need_one_source(gen, matrix)
    check_plot_path(plot, "--plot")
    check_plot_path(heatmap, "--heatmap")
    from ..runs.analysis import analyze as run_analysis
    from ..runs.analysis import format_analysis

    bars = {}

    def progress(stage, done, total):
        if stage not in bars:
            bars[stage] = bar(total=total, desc=stage, unit="rank" if stage == "patterns" else "strategy")
        bars[stage].update(done - bars[stage].n)

    try:
        result = offline(run_analysis, procs, ppn, split_list(strategy), gen=gen, matrix=matrix,
                         partition_method=partition, layout=layout, heatmap_level=heatmap_level if heatmap else None,
                         profile=profile, progress=progress, oom="try fewer ranks or a smaller matrix")
    finally:
        for b in bars.values():
            b.close()
    if plot:
        from ..runs.plots import plot_strategies

        plot_strategies(result, plot)
    if heatmap:
        from ..runs.plots import plot_volumes

        plot_volumes(result, heatmap)
    result.pop("volumes", None)
    click.echo(as_json_text(result) if as_json else format_analysis(result))


@analyze.command(name="amg")
@_virtual_options
@click.option("--plot", type=click.Path(dir_okay=False), help="PNG of the hierarchy's sizes and messages per level.")
@_profile_option
@sparsify_options
@agglomerate_option
@json_option("Print the result as JSON.")
@refuse("--heatmap", "--layout", "--partition", "--heatmap-level",
        allowed={"--layout": "smp", "--partition": "contiguous", "--heatmap-level": "node"},
        message=lambda ctx, name: "the amg analysis distributes every level as a run does (contiguous rows, SMP "
        f"layout); --heatmap, --layout and --partition are for {workload_hint(ctx, 'analyze', 'spmv', 'spmv')}")
def analyze_amg(gen, matrix, procs, ppn, strategy, plot, profile, sparsify, gamma, lumping, agglomerate, as_json):
    """Every level of the matrix's AMG hierarchy, set up once in-process: per level and
    strategy, the busiest rank's messages of one SpMV and of the Galerkin product; with
    --sparsify, each sparsified level's SpMV before and after (thesis Chapter 4); with
    --agglomerate, the levels below a move on the group leaders, and the move's messages."""
    need_one_source(gen, matrix)
    check_plot_path(plot, "--plot")
    check_sparsify(sparsify, gamma, lumping)
    from ..amg.analysis import analyze_amg as run_analysis
    from ..amg.analysis import format_amg_analysis

    levels = bar(desc="AMG levels", unit="level")
    try:
        result = offline(run_analysis, procs, ppn, gen=gen, matrix=matrix, profile=profile,
                         strategies=split_list(strategy), sparsify=sparsify, gamma=gamma, lumping=lumping,
                         agglomerate=agglomerate,
                         progress=lambda k, n: (setattr(levels, "total", n), levels.update(k - levels.n)),
                         oom="try fewer ranks or a smaller matrix")
    finally:
        levels.close()
    if plot:
        from ..runs.plots import plot_amg_levels

        plot_amg_levels(result, plot)
    click.echo(as_json_text(result) if as_json else format_amg_analysis(result))


@analyze.command(name="mgcg")
@click.option("--procs", type=click.IntRange(1), required=True, help="Virtual ranks.")
@ppn_option(default=16, help="Virtual ranks per node (consecutive ranks, x fastest in the process grid; the seed's "
            "FX10 in flat MPI: 16).")
@click.option("--per-rank", type=click.IntRange(1), default=64, show_default=True,
              help="Cells per rank along each dimension (the seed's 64^3).")
@click.option("--stencil", type=click.Choice(["7", "27"]), default="7", show_default=True,
              help="The operator's stencil (groundwater: 7; HPCG: 27).")
@click.option("--cga", type=click.Choice(["all", *CGA_MODES, "auto"]), default="all", show_default=True,
              help="Coarse-grid aggregation mode(s) to compare: all (with --profile also auto), or one; auto: the "
              "placement the cost model finds cheapest (needs --profile).")
@cga_options
@_profile_option
@click.option("--bandwidth", type=float, default=FX10_BANDWIDTH, show_default=True,
              help="Bytes/s one rank streams its matrix at (the busiest rank's local work; default an FX10 core's "
              "share of its node).")
@click.option("--no-contention", is_flag=True, help="Price without the profile's network-contention term (which "
              "dominates the fine levels at scale under rank-order placement).")
@click.option("--plot", type=click.Path(dir_okay=False), help="PNG of each mode's messages and time per level.")
@json_option("Print the result as JSON.")
def analyze_mgcg(procs, ppn, per_rank, stencil, cga, cga_rows, hcga_rows, hcga_group, profile, bandwidth, no_contention,
                 plot, as_json):
    """MGCG's levels on a structured grid of --per-rank^3 cells per rank at --procs ranks:
    per level and coarse-grid aggregation mode, the busiest rank's messages in one V-cycle
    (halo exchanges, interpolation, moves onto fewer ranks), priced with --profile."""
    check_plot_path(plot, "--plot")
    if not bandwidth > 0:
        raise click.BadParameter(f"must be > 0, got {bandwidth}", param_hint="--bandwidth")
    from ..mg.analysis import analyze_mgcg as run_analysis
    from ..mg.analysis import format_mgcg_analysis

    if cga == "auto" and profile is None:
        raise click.UsageError("--cga auto is the cost model's choice: give --profile")
    modes = (*CGA_MODES, *(("auto",) if profile else ())) if cga == "all" else (cga,)
    result = offline(run_analysis, procs, ppn, per_rank=per_rank, stencil=int(stencil), modes=modes,
                     cga_rows=cga_rows, hcga_rows=hcga_rows, hcga_group=hcga_group, profile=profile,
                     bandwidth=bandwidth, contention=not no_contention, oom="try fewer ranks")
    if plot:
        from ..runs.plots import plot_mgcg_analysis

        plot_mgcg_analysis(result, plot)
    click.echo(as_json_text(result) if as_json else format_mgcg_analysis(result))
