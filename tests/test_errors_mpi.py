"""Bad input under MPI: every rank raises the same clear error, or the job aborts; never a hang."""

import re

import pytest
from conftest import mpirun


pytestmark = pytest.mark.serial  # timings, timeouts, /tmp seen whole: run alone (pyproject.toml)


ERROR_CASES = [
    (2, "bad-line", "bad.mtx:203: expected a real value"),
    (3, "bad-line", "bad.mtx:203: expected a real value"),
    (2, "truncated", "header declares 201 entries but the file holds 200 (truncated?)"),
    (3, "both-triangles", "bad.mtx:203: symmetric file stores an entry above the diagonal after one below it (line 3)"),
    (3, "ppn", "ppn 2 does not divide the world size 3"),
    (2, "nonsquare", "matrix must be square, got 10 x 12"),
    (2, "more-ranks-than-rows", "cannot partition 1 rows over 2 ranks (more ranks than rows)"),
    (2, "strategy", "unknown communication strategy 'carrier-pigeon'"),
    (3, "grid", "a 2x2 grid needs 4 ranks, the communicator has 3"),
    (2, "tree", "unknown tree shape 'oak'"),
    (2, "zero-pivot", "zero pivot at permuted column 0"),
    (2, "no-matrix", "the matrix must be given on the root rank (0)"),
    (2, "rhs-shape", "b must have shape (36,) or (36, nrhs), got (35,)"),
    (2, "rhs-rows", "[rank 1] b on rank 1 (its rows) must have shape (18,) or (18, nrhs), got (19,)"),
    (2, "rhs-columns", "b has 1, 2 columns on ranks 0, 1: every rank must give the same number"),
    (2, "tree-on-one-rank", "DistributedLU.set_options: the ranks passed different options ("),
    (3, "pz", "Pz must be a power of two, got 1x1x3"),
    (2, "options-differ", "direct.factor: the ranks passed different algorithm ('3d' on rank 0"),
    (2, "grids-differ", "direct.factor: the ranks passed different grid ((1, 1, 2) on rank 0"),
    (2, "rhs-strings", "[rank 1] b on rank 1 (its rows) holds values that are not numbers"),
    (2, "set-options-vs-solve", "the ranks are in different collective calls"),
    (2, "algorithm", "the 2d algorithm needs Pz = 1, the grid has Pz = 2"),
    (2, "strategy-differs",
     "ParCSR.from_global: the ranks passed different strategy ('standard' on rank 0, 'node-aware' on rank 1)"),
    (2, "matrix-on-one-rank", "[rank 1] A must be a sparse matrix or a 2D array on every rank"),
    (2, "matrix-differs", "ParCSR.from_global: the ranks passed different A ('csr_matrix 64x64 #"),
    (2, "smoother-differs", "amg.solver: the ranks passed different smoother ('hybrid-gs' on rank 0, 'jacobi' on rank 1)"),
    (2, "tol-differs", "MultilevelSolver.solve: the ranks passed different tol (1e-08 on rank 0, 0.0001 on rank 1)"),
    (2, "refine-differs", "DistributedLU.solve: the ranks passed different refine (True on rank 0, False on rank 1)"),
    (2, "spgemm-strategy-differs", "spgemm: the ranks passed different strategy ('standard' on rank 0, 'node-aware'"),
    (2, "option-type", "max_supernode must be a whole number, got 2.5"),
    (2, "option-misspelt", "unknown option(s) row_prem (known: max_supernode, ordering"),
    (2, "zero-pivot-nan", "zero_pivot must be finite and >= 0, got nan"),
    (2, "rhs-nan", "[rank 1] b on rank 1 (its rows) holds non-finite values (NaN or Inf), first in row 3 (1 row(s)"),
    (2, "nd-partition-without-tree", "a grid of Pz = 2 layers with partition 'nd' splits the separator tree, which "
                                     "ordering 'nd' does not keep: use partition 'greedy' (--partition greedy)"),
    (2, "distribution-type", "distribution must be a commsolve Distribution (e.g. Distribution.from_offsets) or None"),
]


@pytest.mark.parametrize("nprocs,case,expected", ERROR_CASES)
def test_every_rank_raises_the_same_clear_error(mpi_cache, nprocs, case, expected):
    # the cases of one rank count run one after the other in one job (errors.py)
    cases = ",".join(c for n, c, _ in ERROR_CASES if n == nprocs)
    out = [r for r in mpi_cache("errors.py", nprocs, cases) if r["case"] == case]
    assert sorted(r["rank"] for r in out) == list(range(nprocs))
    for r in out:
        assert r["error"] is not None and expected in r["error"], r


def test_watchdog_aborts_a_rank_waiting_for_one_that_never_calls(tmp_path):
    """Rank 0 calls matvec, rank 1 never does (it ends its program): with COMMSOLVE_TIMEOUT the
    job ends in seconds with exit status 124, and the report says where each rank was (the
    ranks' states shared through COMMSOLVE_WATCHDOG_DIR)."""
    import os
    import shutil
    import subprocess
    import sys
    import time

    from conftest import MPI_DIR

    from commsolve.launch import mpi_env

    folder = tmp_path / "states"
    folder.mkdir()
    env = dict(mpi_env(2), COMMSOLVE_TIMEOUT="3", COMMSOLVE_WATCHDOG_DIR=str(folder))
    cmd = [shutil.which("mpiexec"), "-n", "2", sys.executable, "-m", "mpi4py", os.path.join(MPI_DIR, "hang_one.py")]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 124, proc.stderr
    assert time.monotonic() - t0 < 30
    assert re.search(r"rank 0 has made no progress for \d+\.\d s in ParCSR.matvec", proc.stderr), proc.stderr
    assert "rank 0: in ParCSR.matvec for" in proc.stderr and "last finished ParCSR.from_spec" in proc.stderr
    assert "rank 1: in MPI_Finalize (the end of the program" in proc.stderr
    assert "rank 0 got past" not in proc.stdout


def _watchdog_case(case, timeout, nprocs=2):
    import os
    import shutil
    import subprocess
    import sys

    from conftest import MPI_DIR

    from commsolve.launch import mpi_env

    env = dict(mpi_env(nprocs), COMMSOLVE_TIMEOUT=str(timeout))
    script = os.path.join(MPI_DIR, "watchdog_cases.py")
    cmd = ([shutil.which("mpiexec"), "-n", str(nprocs), sys.executable, "-m", "mpi4py", script] if nprocs > 1 else
           [sys.executable, script])
    return subprocess.run([*cmd, case, str(timeout)], env=env, capture_output=True, text=True, timeout=120)


def test_watchdog_lets_a_long_operation_that_makes_progress_finish():
    """Four timeouts inside one operation, but a step finished every third of one: no abort
    (the watchdog times the wait since the last progress, not the outermost call)."""
    proc = _watchdog_case("progress", 1.5)
    assert proc.returncode == 0, proc.stderr
    assert "rank 0 finished the long setup" in proc.stdout and "rank 1 finished the long setup" in proc.stdout


def test_the_launcher_ends_a_job_whose_rank_waits_outside_any_watched_call():
    """Rank 0 in a plain mpi4py gather rank 1 never makes, rank 1's program over: no watched
    call to time, but the -np launcher reads both states and ends the job after the timeout
    (exit 124) with a report, instead of waiting forever."""
    import os
    import subprocess
    import sys
    import time

    from conftest import MPI_DIR

    script = os.path.join(MPI_DIR, "watchdog_cases.py")
    code = ("import sys; from commsolve.launch import relaunch; "
            f"sys.exit(relaunch(2, [{script!r}, 'unwatched', '2'], timeout=2))")
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ))
    assert proc.returncode == 124 and time.monotonic() - t0 < 60, proc.stderr
    assert "rank 1 ended its program, and no rank has made progress for" in proc.stderr, proc.stderr
    assert "rank 0 must be waiting for a call the others never make" in proc.stderr
    assert "rank 1: in MPI_Finalize" in proc.stderr and "rank 0 got past" not in proc.stdout


def test_watchdog_never_aborts_a_single_process():
    """Nobody to wait for: a watched call longer than the timeout, in one process, finishes."""
    import subprocess
    import sys

    code = ("import time, commsolve; from commsolve import _watchdog\n"
            "_watchdog.watched('a slow call')(time.sleep)(1.5); print('done')")
    proc = subprocess.run([sys.executable, "-c", code], env={**__import__("os").environ, "COMMSOLVE_TIMEOUT": "0.3"},
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "done" in proc.stdout, proc.stderr


def test_failure_on_one_rank_aborts_the_job(tmp_path):
    proc = mpirun(2, "errors.py", 2, tmp_path, "wrong-length", timeout=120, check=False)
    assert proc.returncode != 0
    assert "x must be a 1-D array of this rank's 32 entries, got shape (33,)" in proc.stderr


def test_uncaught_exception_aborts_even_under_plain_mpiexec():
    """Not ``python -m mpi4py``: the hook commsolve installs on import aborts the job."""
    import os
    import shutil
    import subprocess
    import sys

    from conftest import MPI_DIR

    from commsolve.launch import mpi_env

    cmd = [shutil.which("mpiexec"), "-n", "2", sys.executable, os.path.join(MPI_DIR, "raise_one.py")]
    proc = subprocess.run(cmd, env=mpi_env(2), capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "rank 1 fails alone" in proc.stderr and "aborting the job" in proc.stderr
    assert "got past the barrier" not in proc.stdout
