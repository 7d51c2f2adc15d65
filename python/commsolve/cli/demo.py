"""``commsolve demo``: the main job, under MPI."""

from __future__ import annotations

import click

from ..launch import under_mpiexec
from .common import as_json_text, fail, guarded, json_option, launch_options, relaunch_or_check, report


@click.command()
@launch_options(help="Number of MPI ranks [default: 4, or the ranks mpiexec started].")
@json_option("Print the results as JSON.")
def demo(nprocs, oversubscribe, timeout, as_json):
    """The main job: distributed SpMV on built-in problems, checked against scipy, with the
    communication each partition causes, plans built for 1,024 virtual ranks; then the
    flagship: the 2D and both 3D triangular solves on the same ranks, checked against scipy,
    and counted at 2,048 virtual ranks."""
    relaunch_or_check(4 if nprocs is None and not under_mpiexec() else nprocs, oversubscribe, timeout)
    from mpi4py import MPI

    from ..runs.demo import run_demo

    out = guarded(run_demo, MPI.COMM_WORLD, echo=None if as_json else click.echo)
    if as_json and out is not None:
        report(as_json_text(out))
    if out is not None and not out["ok"]:
        fail("demo checks failed (see above)", True)
