"""``commsolve selinv``: parallel selected inversion (PSelInv) on a 2D process grid, under MPI."""

from __future__ import annotations

import click

from ..direct import ROW_PERMS
from ..runs.selinv import format_selinv, run_selinv, selinv_grid
from .common import (TREE_CHOICE, as_json_text, fail, grid_spelling, guarded, input_checks, json_option,
                     launch_options, matrix_options, max_supernode_option, need_one_source, ppn_option, progress,
                     relaunch_or_check, report, tolerance)


@click.command()
@matrix_options("poisson2d9:200", "Matrix Market file (read in parallel).")
@launch_options()
@click.option("--grid", default=None, callback=grid_spelling(selinv_grid),
              help="Process grid PxQ with all ranks (default: the squarest, P <= Q).")
@click.option("--tree", type=TREE_CHOICE, default=None,
              help="Shape of every broadcast and reduction tree (Col-Bcast, Row-Reduce, ...) [default: binary].")
@click.option("--form", type=click.Choice(["auto", "symmetric", "unsymmetric"]), default="auto", show_default=True,
              help="symmetric: for A = A^T, half the products (factored with rows and columns ordered and scaled "
              "alike: no row permutation, no equilibration, unless given); auto: symmetric where the "
              "factorization allows it.")
@click.option("--repeat", type=click.IntRange(1), default=3, show_default=True, help="Timed selected inversions.")
@max_supernode_option
@ppn_option()
@click.option("--equil/--no-equil", default=None,
              help="Equilibrate (row and column scaling) where the matrix is badly scaled [default: no with --form "
              "symmetric, yes otherwise].")
@click.option("--row-perm", type=click.Choice(ROW_PERMS), default=None,
              help=f"Row permutation for a large diagonal (MC64's job, with its scaling), or none [default: none "
              f"with --form symmetric, {ROW_PERMS[0]} otherwise].")
@click.option("--columns", type=click.IntRange(1), default=8, show_default=True,
              help="Above 3,000 rows: columns of A^-1 the check computes by scipy's splu.")
@click.option("--tol", type=float, default=1e-8, show_default=True, callback=lambda ctx, p, v: tolerance(v),
              help="Largest error of the selected entries (relative to the largest entry compared) accepted "
              "(exit 1 above).")
@json_option()
def selinv(gen, matrix, nprocs, oversubscribe, timeout, grid, tree, form, repeat, max_supernode, ppn, equil,
           row_perm, columns, tol, as_json):
    """Parallel selected inversion: the entries of A^-1 in the pattern of the LU factors,
    computed on a 2D process grid with restricted-collective trees (Col-Bcast of L^ blocks,
    Row-Reduce of products): time, flops, communication per rank and per role (min, max,
    median, std), and a check against numpy's dense inverse or scipy's splu."""
    need_one_source(gen, matrix)
    relaunch_or_check(nprocs, oversubscribe, timeout, before_launch=lambda n: input_checks(n, matrix, ppn, solve=True))
    from mpi4py import MPI

    result = guarded(run_selinv, MPI.COMM_WORLD, gen=gen, matrix=matrix, grid=grid, tree=tree, form=form,
                     repeat=repeat, ppn=ppn, max_supernode=max_supernode, equil=equil, row_perm=row_perm,
                     columns=columns, progress=progress(not as_json, desc="selinv"))
    if result is None:
        return
    report(as_json_text(result) if as_json else format_selinv(result))
    if not result["check_error"] <= tol:  # NaN fails too
        fail(f"selected entries off by {result['check_error']:.2e} (relative), above --tol {tol:.0e}", True)
    if not result["stats_recorded_equal_planned"]:
        fail("recorded communication statistics differ from the plan's", True)
