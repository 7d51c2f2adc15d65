"""``commsolve amg``: algebraic multigrid as the preconditioner of CG, under MPI."""

from __future__ import annotations

import click

from ..amg import CYCLES, METHODS, SMOOTHERS
from ..amg.classical import COARSENINGS
from ..amg.hierarchy import INTERPOLATIONS
from ..amg.sparsify import parse_adaptive
from .common import (agglomerate_option, as_json_text, bar, check_plot_path, check_sparsify, fail_unless_solved, guarded,
                     input_checks, json_option, launch_options, matrix_options, need_one_source, ppn_option,
                     relaunch_or_check, report, row_partition_option, sparsify_options, strategy_option, tolerance)


@click.command(name="amg")
@matrix_options("poisson3d:64", "Matrix Market file (symmetric positive definite).")
@launch_options()
@ppn_option()
@row_partition_option
@click.option("--method", type=click.Choice([m for m in METHODS if m != "geometric"]), default=METHODS[0],
              show_default=True,
              help="classical (PMIS, extended+i) or sa (smoothed aggregation, MIS-2 aggregates).")
@strategy_option(default="auto", help="Exchange strategy of every level (auto: chosen per level).")
@click.option("--profile", help="Machine profile that auto prices the strategies with (default: fewest "
              "inter-node messages).")
@click.option("--smoother", type=click.Choice(list(SMOOTHERS)), default="hybrid-gs", show_default=True)
@click.option("--sweeps", type=click.IntRange(1), default=1, show_default=True,
              help="Smoothing steps before and after each coarse correction.")
@click.option("--degree", type=click.IntRange(1), default=None,
              help="The Chebyshev smoother's polynomial degree (default 2).")
@click.option("--cycle", "cycle_type", type=click.Choice(list(CYCLES)), default="V", show_default=True,
              help="V, or W (each coarser level visited twice).")
@click.option("--theta", type=float, default=None, help="Strength threshold (default: 0.25 classical, 0 sa).")
@click.option("--max-coarse", type=click.IntRange(1), default=10, show_default=True)
@click.option("--coarsening", type=click.Choice(list(COARSENINGS)), default=None,
              help="Classical C/F splitting (default pmis: the same hierarchy on any partition; hmis: "
              "Ruge-Stueben within each rank first, hypre's default).")
@click.option("--interpolation", type=click.Choice(list(INTERPOLATIONS)), default=None,
              help="Classical interpolation (default ext+i, truncated to 4 entries per row and any that tie "
              "the 4th).")
@click.option("--aggressive", type=click.IntRange(0), default=0, show_default=True,
              help="How many of the finest levels are coarsened aggressively (hypre's agg_num_levels): a second "
              "split over the first's coarse points, multipass interpolation; for 3D operator complexity.")
@click.option("--accel", type=click.Choice(["cg", "gmres", "bicgstab", "none"]), default="cg", show_default=True,
              help="CG (symmetric A), restarted GMRES or BiCGStab (nonsymmetric A), or V-cycles alone; each "
              "preconditioned by one cycle.")
@sparsify_options
@click.option("--adaptive", default=None, metavar="k=K,s=S[,rho=R]",
              help="Adaptive solve (sparse/hybrid, CG): every K iterations converging slower than R per iteration "
              "(default 0.5), entries go back into the finest S sparsified levels.")
@agglomerate_option
@click.option("--tol", type=float, default=1e-8, show_default=True, callback=lambda c, p, v: tolerance(v))
@click.option("--maxiter", type=click.IntRange(1), default=200, show_default=True)
@click.option("--plot", type=click.Path(dir_okay=False), help="PNG of the hierarchy's sizes and messages per level.")
@json_option()
def amg_cmd(gen, matrix, nprocs, oversubscribe, timeout, ppn, partition, method, strategy, profile, smoother, sweeps,
            degree, cycle_type, theta, max_coarse,
            coarsening, interpolation, aggressive, accel, sparsify, gamma, lumping, adaptive, agglomerate, tol, maxiter,
            plot, as_json):
    """Algebraic multigrid (classical or smoothed aggregation) as the preconditioner of CG:
    the hierarchy with each level's strategy and messages, iterations, setup and solve time."""
    need_one_source(gen, matrix)
    if theta is not None and not (0 < theta < 1 or (method == "sa" and theta == 0)):
        raise click.BadParameter(f"must lie in (0, 1) ([0, 1) for sa), got {theta}", param_hint="--theta")
    for name, value in (("--coarsening", coarsening), ("--interpolation", interpolation),
                        ("--aggressive", aggressive or None)):
        if value is not None and method != "classical":
            raise click.UsageError(f"{name} is an option of --method classical")
    if degree is not None and smoother != "chebyshev":
        raise click.UsageError("--degree is the Chebyshev smoother's: --smoother chebyshev")
    check_sparsify(sparsify, gamma, lumping)
    try:
        if parse_adaptive(adaptive) is not None and sparsify not in ("sparse", "hybrid"):
            raise click.UsageError("--adaptive puts entries back into a Galerkin hierarchy kept whole: --sparsify "
                                   "sparse or hybrid")
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--adaptive") from None
    if adaptive is not None and accel != "cg":
        raise click.UsageError("--adaptive restarts CG: --accel cg")
    check_plot_path(plot, "--plot")
    relaunch_or_check(nprocs, oversubscribe, timeout, before_launch=lambda n: input_checks(n, matrix, ppn, solve=True))
    from mpi4py import MPI

    from ..runs.amg import format_amg, plot_levels, run_amg

    levels_bar = None if as_json else bar(desc="AMG setup", unit="level")
    result = guarded(run_amg, MPI.COMM_WORLD, gen=gen, matrix=matrix, partition=partition, ppn=ppn, method=method,
                     strategy=strategy, profile=profile, smoother=smoother, sweeps=sweeps, degree=degree,
                     cycle=cycle_type, tol=tol,
                     accel=None if accel == "none" else accel, maxiter=maxiter,
                     progress=None if levels_bar is None else lambda k, nc: levels_bar.update(1), theta=theta,
                     max_coarse=max_coarse, coarsening=coarsening, interpolation=interpolation, aggressive=aggressive,
                     sparsify=sparsify,
                     gamma=gamma, lumping=lumping, adaptive=adaptive, agglomerate=agglomerate)
    if levels_bar is not None:
        levels_bar.close()
    if result is None:
        return
    if plot:
        plot_levels(result, plot)
    report(as_json_text(result) if as_json else format_amg(result))
    fail_unless_solved(result, f"AMG-{accel}", tol, maxiter)
