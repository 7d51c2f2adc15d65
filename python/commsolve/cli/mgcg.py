"""``commsolve mgcg``: geometric-multigrid-preconditioned CG on a structured grid (Nakajima's
MGCG, HPCG's solver), with the SpMV format and the coarse-grid aggregation chosen, under
MPI."""

from __future__ import annotations

import click

from ..amg import SMOOTHERS
from ..mg import CGA_MODES, CGA_ROWS, DECOMPOSITIONS, FORMATS, HCGA_GROUP, HCGA_ROWS
from .common import (as_json_text, bar, check_plot_path, fail_unless_solved, guarded, input_checks, json_option,
                     launch_options, matrix_options, need_one_source, ppn_option, relaunch_or_check, report,
                     strategy_option, tolerance)


def _grid(ctx, param, value):
    if value is None:
        return None
    try:
        dims = tuple(int(v) for v in value.lower().replace("x", ",").split(","))
    except ValueError:
        dims = ()
    if len(dims) != 3 or min(dims) < 1:
        raise click.BadParameter(f"three positive extents NX,NY,NZ (x fastest), got {value!r}")
    return dims


def _format(ctx, param, value):
    if value in FORMATS or value.startswith("sell-"):
        return value  # sell-C-SIGMA is checked by the library, with its own message
    raise click.BadParameter(f"one of {', '.join(FORMATS)} or sell-C-SIGMA, got {value!r}")


def cga_options(f):
    """--cga-rows, --hcga-rows, --hcga-group: the coarse-grid aggregation's switches."""
    f = click.option("--hcga-group", type=click.IntRange(2), default=HCGA_GROUP, show_default=True,
                     help="hCGA's first move: onto ceil(P / this) ranks (groups of this many consecutive ranks "
                     "when it divides P).")(f)
    f = click.option("--hcga-rows", type=float, default=HCGA_ROWS, show_default=True, callback=_positive,
                     help="hCGA's first move: the first level with fewer rows per rank than this.")(f)
    return click.option("--cga-rows", type=float, default=CGA_ROWS, show_default=True, callback=_positive,
                        help="CGA moves the first level with fewer rows per rank than this onto one rank.")(f)


def _positive(ctx, param, value):
    if not value > 0:  # NaN fails
        raise click.BadParameter(f"must be > 0, got {value}")
    return value


@click.command(name="mgcg")
@matrix_options("groundwater3d:64", "Matrix Market file of a 3D structured grid (with --grid).")
@click.option("--grid", callback=_grid, metavar="NX,NY,NZ",
              help="The grid the rows number, x fastest (default: the --gen spec's).")
@click.option("--decomposition", type=click.Choice(list(DECOMPOSITIONS)), default="slabs", show_default=True,
              help="slabs: the rows split contiguously (z-planes); blocks: a box of cells per rank, 3D, as "
              "Nakajima's pGW3D-FVM and HPCG decompose (the rows renumbered box by box).")
@click.option("--process-grid", "procs", callback=_grid, metavar="PX,PY,PZ",
              help="The boxes per dimension with --decomposition blocks (default: the least surface).")
@launch_options()
@ppn_option()
@click.option("--format", "fmt", default="csr", show_default=True, callback=_format,
              help=f"Storage of every level's operator, which its SpMV, residuals and Gauss-Seidel sweeps run on: "
              f"{', '.join(FORMATS)} or sell-C-SIGMA.")
@click.option("--cga", type=click.Choice([*CGA_MODES, "auto"]), default="none", show_default=True,
              help="Coarse-grid aggregation: flat (CGA: onto one rank), hierarchical (hCGA: first onto fewer ranks, "
              "then onto one), or auto (the mode and its switch levels chosen by the cost model with --profile).")
@click.option("--profile", help="Machine profile (bundled name or TOML file) --cga auto prices with.")
@cga_options
@click.option("--smoother", type=click.Choice(list(SMOOTHERS)), default="ic0", show_default=True)
@click.option("--sweeps", type=click.IntRange(1), default=1, show_default=True)
@click.option("--correction", type=float, default=1.0, show_default=True,
              help="Factor on every coarse correction, in (0, 2).")
@strategy_option(default="standard", with_auto=False)
@click.option("--max-coarse", type=click.IntRange(1), default=1, show_default=True,
              help="Coarsen until a level has at most this many rows.")
@click.option("--tol", type=float, default=1e-8, show_default=True, callback=lambda c, p, v: tolerance(v))
@click.option("--maxiter", type=click.IntRange(1), default=500, show_default=True)
@click.option("--plot", type=click.Path(dir_okay=False), help="PNG of the time and messages per level.")
@json_option()
def mgcg(gen, matrix, grid, decomposition, procs, nprocs, oversubscribe, timeout, ppn, fmt, cga, profile, cga_rows,
         hcga_rows, hcga_group, smoother, sweeps, correction, strategy, max_coarse, tol, maxiter, plot, as_json):
    """Geometric multigrid (2 x 2 x 2 cell aggregation) as the preconditioner of CG: iterations,
    time per iteration, and each level's time and messages, with and without coarse-grid
    aggregation."""
    need_one_source(gen, matrix)
    if matrix is not None and grid is None:
        raise click.UsageError("--matrix needs --grid NX,NY,NZ (the grid its rows number)")
    if procs is not None and decomposition != "blocks":
        raise click.UsageError("--process-grid is the boxes of --decomposition blocks")
    if (cga == "auto") != (profile is not None):
        raise click.UsageError("--cga auto chooses with a machine profile, and only it takes one: give both "
                               "--cga auto and --profile")
    if not 0 < correction < 2:
        raise click.BadParameter(f"must lie in (0, 2), got {correction}", param_hint="--correction")
    check_plot_path(plot, "--plot")
    relaunch_or_check(nprocs, oversubscribe, timeout, before_launch=lambda n: input_checks(n, matrix, ppn, solve=True))
    from mpi4py import MPI

    from ..runs.mgcg import format_mgcg, plot_mgcg, run_mgcg

    levels_bar = None if as_json else bar(desc="MGCG setup", unit="level")
    result = guarded(run_mgcg, MPI.COMM_WORLD, gen=gen, matrix=matrix, grid=grid, ppn=ppn, fmt=fmt, cga=cga,
                     decomposition=decomposition, procs=procs,
                     cga_rows=cga_rows, hcga_rows=hcga_rows, hcga_group=hcga_group, smoother=smoother, sweeps=sweeps,
                     correction=correction, strategy=strategy, max_coarse=max_coarse, tol=tol, maxiter=maxiter,
                     profile=profile,
                     progress=None if levels_bar is None else lambda k, nc: levels_bar.update(1))
    if levels_bar is not None:
        levels_bar.close()
    if result is None:
        return
    if plot:
        plot_mgcg(result, plot)
    report(as_json_text(result) if as_json else format_mgcg(result))
    fail_unless_solved(result, "MGCG", tol, maxiter)
