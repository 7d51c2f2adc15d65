"""The ``commsolve`` command line: thin commands over the library, one module per command or
group of workloads.

Every command that runs under MPI takes ``-np N``: without mpiexec around it, the command
relaunches itself as ``mpiexec -n N python -m mpi4py -m commsolve ...``; started by
mpiexec, it checks that the world has N ranks. Errors found on all ranks print once and
exit with status 1; an error on one rank aborts the whole job (no hang). The commands that
study a workload at virtual scale are groups with a subcommand per workload
(``commsolve simulate sptrsv``); their former ``--workload NAME`` spelling still works, with
a deprecation notice, for one release.
"""

from __future__ import annotations

import click

from .amg import amg_cmd
from .analyze import analyze
from .calibrate import calibrate
from .demo import demo
from .mgcg import mgcg
from .dense import gemm, lu
from .selinv import selinv
from .simulate import simulate
from .spmv import spmv
from .sptrsv import sptrsv
from .trees import trees

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="commsolve")
def main():
    """commsolve: communication-optimized distributed sparse linear algebra on MPI."""


for command in (spmv, sptrsv, selinv, gemm, lu, amg_cmd, mgcg, analyze, trees, simulate, calibrate, demo):
    main.add_command(command)
