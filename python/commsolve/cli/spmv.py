"""``commsolve spmv``: the distributed SpMV under MPI, timed and checked."""

from __future__ import annotations

import click

from .common import (as_json_text, fail, guarded, input_checks, json_option, matrix_options, need_one_source,
                     launch_options, ppn_option, progress, relaunch_or_check, report, row_partition_option,
                     strategy_option)


@click.command()
@matrix_options("poisson2d:512, random:rows=10000,nnz_per_row=7")
@launch_options()
@ppn_option()
@row_partition_option
@strategy_option()
@click.option("--repeat", default=50, show_default=True, type=click.IntRange(0), help="Timed SpMVs.")
@json_option()
@click.option("--no-check", is_flag=True, help="Skip the comparison with scipy.")
@click.option("--profile", help="Machine profile for --strategy auto (bundled name or TOML file).")
def spmv(gen, matrix, nprocs, oversubscribe, timeout, ppn, partition, strategy, repeat, as_json, no_check, profile):
    """Distributed sparse matrix-vector product: time, rate and communication statistics."""
    need_one_source(gen, matrix)
    relaunch_or_check(nprocs, oversubscribe, timeout, before_launch=lambda n: input_checks(n, matrix, ppn))
    from mpi4py import MPI

    from ..runs.spmv import format_spmv, run_spmv

    result = guarded(run_spmv, MPI.COMM_WORLD, gen=gen, matrix=matrix, partition=partition, ppn=ppn,
                     strategy=strategy, repeat=repeat, check=not no_check, progress=progress(not as_json),
                     profile=profile)
    if result is None:
        return
    report(as_json_text(result) if as_json else format_spmv(result))
    if result["rel_error_vs_scipy"] is not None and not result["rel_error_vs_scipy"] <= 1e-12:  # NaN fails
        fail(f"result differs from scipy (relative error {result['rel_error_vs_scipy']:.2e})", True)
    if not result["stats_recorded_equal_planned"]:
        fail("recorded communication statistics differ from the plan's", True)
