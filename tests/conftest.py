import json
import os
import sys

import pytest

from commsolve.launch import run_mpi

HERE = os.path.dirname(__file__)
MPI_DIR = os.path.join(HERE, "mpi")
sys.path.insert(0, MPI_DIR)

MPI_TIMEOUT = 240  # seconds for one mpiexec job; a deadlock fails instead of hanging CI


def mpirun(nprocs, script, *args, timeout=MPI_TIMEOUT, check=True):
    """Run tests/mpi/<script> on ``nprocs`` ranks; returns the CompletedProcess."""
    proc = run_mpi(nprocs, [os.path.join(MPI_DIR, script), *map(str, args)], timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"mpiexec -n {nprocs} {script} exited {proc.returncode}\n"
            f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}"
        )
    return proc


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


@pytest.fixture(scope="session")
def mpi_cache(tmp_path_factory):
    """Runs each MPI script once per rank count and keeps its JSON lines."""
    store = {}

    def get(script, nprocs, *args):
        key = (script, nprocs, args)
        if key not in store:
            tmp = tmp_path_factory.mktemp(f"{os.path.splitext(script)[0]}{nprocs}")
            store[key] = json_lines(mpirun(nprocs, script, nprocs, tmp, *args).stdout)
        return store[key]

    return get
