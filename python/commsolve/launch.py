"""Starting MPI jobs: the environment Open MPI needs here (root, oversubscription) and the
mpiexec command line. Used by the CLI's ``-np`` relaunch and by the tests."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys

__all__ = ["mpi_env", "mpiexec_command", "under_mpiexec", "run_mpi"]


def under_mpiexec():
    """True when this process was started by mpiexec/mpirun (Open MPI, MPICH, PMIx)."""
    return any(v in os.environ for v in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"))


def mpi_env(nprocs, base=None):
    """Environment for ``nprocs`` ranks on this machine: Open MPI may run as root, may place
    more ranks than cores, and then yields instead of busy-polling."""
    env = dict(os.environ if base is None else base)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    if nprocs > (os.cpu_count() or 1):
        env.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")
    return env


@functools.lru_cache(maxsize=None)
def _quiet_flags(mpiexec):
    """``["-q"]`` for Open MPI up to 4.x (its quiet option); later ones (PRRTE) and MPICH's
    hydra refuse it."""
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    m = re.search(r"\((?:Open MPI|OpenRTE)\)\s+(\d+)\.", out)  # 4.x says OpenRTE, 5.x Open MPI
    return ("-q",) if m and int(m.group(1)) <= 4 else ()


def mpiexec_command(nprocs, args, python=None):
    """``mpiexec [-q] -n N python -m mpi4py ARGS``: ``-m mpi4py`` makes an uncaught exception
    on any rank abort the whole job instead of leaving the others waiting; ``-q`` (Open MPI
    4) keeps Open MPI's own banners (job exited non-zero, MPI_ABORT was invoked) out of the
    error output, which already says what went wrong."""
    mpiexec = shutil.which("mpiexec") or shutil.which("mpirun")
    if mpiexec is None:
        raise RuntimeError("mpiexec not found: install Open MPI (scripts/install-deps)")
    return [mpiexec, *_quiet_flags(mpiexec), "-n", str(int(nprocs)), python or sys.executable, "-m", "mpi4py", *args]


def run_mpi(nprocs, args, timeout=300, **kwargs):
    """Run ``python -m mpi4py ARGS`` on ``nprocs`` ranks; returns the CompletedProcess.
    A job past ``timeout`` seconds is killed (subprocess.TimeoutExpired)."""
    return subprocess.run(
        mpiexec_command(nprocs, args), env=mpi_env(nprocs), timeout=timeout,
        capture_output=True, text=True, **kwargs,
    )
