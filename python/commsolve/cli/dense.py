"""``commsolve gemm`` and ``commsolve lu``: the 2.5D dense multiply and LU under MPI."""

from __future__ import annotations

import click

from ..dense.matrix import DEFAULT_NB
from .common import (TREE_CHOICE, as_json_text, fail, guarded, json_option, launch_options, ppn_option, progress,
                     relaunch_or_check, report, tolerance)


def dense_options(f):
    f = json_option()(f)
    f = click.option("--tol", type=float, default=1e-12, show_default=True, callback=lambda ctx, p, v: tolerance(v),
                     help="Largest relative error of the check accepted (exit 1 above).")(f)
    f = click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random matrices.")(f)
    f = ppn_option()(f)
    f = click.option("--repeat", type=click.IntRange(1), default=3, show_default=True, help="Timed runs.")(f)
    f = click.option("--tree", type=TREE_CHOICE, default="binary", show_default=True,
                     help="Shape of every broadcast and reduction tree.")(f)
    f = click.option("--grid", default=None,
                     help="Process grid PRxPCxC: PR x PC per layer, C layers (default: the squarest PRxPCx1).")(f)
    f = click.option("--nb", type=click.IntRange(1), default=DEFAULT_NB, show_default=True, help="Block size.")(f)
    return launch_options()(f)


def _run(kind, tol, as_json, **kw):
    from mpi4py import MPI

    from ..runs.dense import format_dense, run_dense

    result = guarded(run_dense, MPI.COMM_WORLD, kind, progress=progress(not as_json, desc=kind), **kw)
    if result is None:
        return
    report(as_json_text(result) if as_json else format_dense(result))
    if not result["check_error"] <= tol:  # NaN fails too
        fail(f"check off by {result['check_error']:.2e} (relative), above --tol {tol:.0e}", True)
    if not result["stats_recorded_equal_planned"]:
        fail("recorded communication statistics differ from the plan's", True)


@click.command()
@click.option("--n", type=click.IntRange(1), required=True, help="Columns of B and C (and the size when square).")
@click.option("--m", type=click.IntRange(1), default=None, help="Rows of A and C [default: n].")
@click.option("--k", type=click.IntRange(1), default=None, help="Columns of A, rows of B [default: n].")
@dense_options
def gemm(n, m, k, nprocs, oversubscribe, timeout, nb, grid, tree, repeat, ppn, seed, tol, as_json):
    """The 2.5D matrix multiply C = A B of random matrices (Solomonik and Demmel): A and B
    replicated over the grid's C layers, each layer doing 1/C of the SUMMA panels, C summed
    back. Reports time, GFlop/s, words received per rank (counted, beside the formula's
    leading term (m k / PR + k n / PC) / C) and per role, and Freivalds' check."""
    relaunch_or_check(nprocs, oversubscribe, timeout)
    _run("gemm", tol, as_json, n=n, m=m, k=k, nb=nb, grid=grid, tree=tree, repeat=repeat, ppn=ppn, seed=seed)


@click.command()
@click.option("--n", type=click.IntRange(1), required=True, help="Size of the matrix.")
@click.option("--pivoting", type=click.Choice(["none", "tournament"]), default="none", show_default=True,
              help="none: a random diagonally dominant matrix; tournament: a random matrix, with tournament "
              "pivoting (CALU's).")
@dense_options
def lu(n, pivoting, nprocs, oversubscribe, timeout, nb, grid, tree, repeat, ppn, seed, tol, as_json):
    """2.5D LU of a random matrix: step k eliminated on layer k mod C, the panels summed over
    the layers first; without pivoting (the matrix made diagonally dominant) or with
    tournament pivoting (each panel's pivot rows picked by a reduction of candidate rows over
    its process column). Reports time, GFlop/s, words received per rank (beside
    n^2 (1/PR + 1/PC) / (2C)), the growth max|U|/max|A| and the check
    ||L (U x) - P A x|| / ||P A x||."""
    relaunch_or_check(nprocs, oversubscribe, timeout)
    _run("lu", tol, as_json, n=n, nb=nb, grid=grid, tree=tree, repeat=repeat, ppn=ppn, seed=seed, pivoting=pivoting)
