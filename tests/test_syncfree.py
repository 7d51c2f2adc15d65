"""The solve phases on a rank's threads: sync-free on grids 1 x 1 x Pz (SC'23 Algorithm 4 on
CPU threads), message-driven on grids whose layers hold several ranks.

Under mpiexec -n 1, 2, 4 (tests/mpi/syncfree_cases.py; 2 and 4 oversubscribed): three gallery
families (one nonsymmetric), every algorithm the grid runs, nrhs 1, 3, 50, threads 2 to 8
(more threads than cores), some with a deliberately adversarial schedule: x equals the
one-thread (message-driven) solve of the same factors to 1e-12, its backward error measured
with scipy is at rounding level, and recorded CommStats equal the plan. The same on grids
2x1x1, 1x2x1 and 2x1x2 with threads 2 and 3 (tests/mpi/threaded_cases.py), and 3d-baseline
refused there. In process: the threads rule's errors, the OMP_NUM_THREADS default, and the
CLI option."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from mpi4py import MPI

import commsolve as cs
from commsolve.launch import mpi_env

FAMILIES = ("poisson2d9", "poisson3d", "random")


def check_runs(runs, label):
    """Every run used its threads and equals the one-thread solve: x to 1e-12, scipy's
    backward error at rounding level, its messages as planned."""
    for r in runs:
        where = f"{label} {r['family']} {r['algorithm']} nrhs={r['nrhs']} threads={r['threads']} chaos={r.get('chaos')}"
        assert r["used"] == r["threads"], where
        assert r["diff"] <= 1e-12, where  # NaN fails
        assert r["berr"] <= 1e-14, where
        assert r["stats_ok"], where


@pytest.mark.parametrize("k", (1, 2, 4))
def test_threads_equal_the_one_thread_solve(mpi_cache, k):
    rows = mpi_cache("syncfree_cases.py", k)
    per_family = 3 * (5 if k == 1 else 2) * (1 if k == 1 else 3)  # nrhs x threads x algorithms
    assert sorted({r["family"] for r in rows}) == sorted(FAMILIES)
    for family in FAMILIES:
        assert len([r for r in rows if r["family"] == family]) == per_family, family
    check_runs(rows, f"np{k}")
    assert any(r["chaos"] for r in rows) and max(r["threads"] for r in rows) >= (8 if k == 1 else 4)


def test_threads_rule_errors():
    A = cs.gallery.poisson2d(12)
    with pytest.raises(ValueError, match="threads must be at least 1, got 0"):
        cs.direct.factor(A, MPI.COMM_SELF, threads=0)
    with pytest.raises(ValueError, match="threads must be a whole number, got 'two'"):
        cs.direct.factor(A, MPI.COMM_SELF, threads="two")
    solver = cs.direct.factor(A, MPI.COMM_SELF, threads=3)
    assert solver.threads == 3
    x = solver.solve(np.ones(A.shape[0]))
    assert np.abs(A @ x - 1).max() <= 1e-12
    solver.set_options(threads=1)
    assert solver.threads == 1 and np.abs(solver.solve(np.ones(A.shape[0])) - x).max() <= 1e-13
    assert cs.direct.options.solve_threads(2, (2, 1, 1)) == 2  # any grid takes threads


GRIDS = ((2, 1, 1), (1, 2, 1), (2, 1, 2))


@pytest.mark.parametrize("grid", GRIDS, ids=lambda g: "x".join(map(str, g)))
def test_threads_on_grids_of_several_ranks_per_layer(mpi_cache, grid):
    k = grid[0] * grid[1] * grid[2]
    rows = mpi_cache("threaded_cases.py", k, "x".join(map(str, grid)))
    runs = [r for r in rows if "family" in r]
    algorithms = 1 if grid[2] == 1 else 2
    assert len(runs) == 3 * algorithms * 3 * 2  # families x algorithms x nrhs x threads
    check_runs(runs, str(grid))
    refusals = [r for r in rows if "refused" in r]
    if grid[2] > 1:
        assert len(refusals) == 1 and "3d-baseline takes its upper levels one supernode at a time" in \
            (refusals[0]["refused"] or ""), refusals
        assert refusals[0]["threads_after"] == 1  # the refused change left the solver as it was


def test_omp_num_threads_is_the_default_on_one_rank_layers():
    code = ("import commsolve as cs; from mpi4py import MPI;"
            "s = cs.direct.factor(cs.gallery.poisson2d(10), MPI.COMM_SELF); print(s.threads);"
            "print(cs.direct.options.solve_threads(None, (2, 1, 1)))")
    for env, want in (("3", "3\n1"), ("2,1", "2\n1"), ("x", "1\n1")):
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "OMP_NUM_THREADS": env})
        assert p.returncode == 0, p.stderr
        assert p.stdout.strip() == want, env


def test_cli_threads_option():
    def cli(*args):
        return subprocess.run([sys.executable, "-m", "commsolve", "sptrsv", *args], capture_output=True, text=True,
                              timeout=180, env=mpi_env(2))

    p = cli("--gen", "poisson2d9:30", "-np", "2", "--grid", "1x1x2", "--threads", "2", "--repeat", "2", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["threads"] == 2 and r["grid"] == [1, 1, 2]
    assert r["backward_error"] <= 1e-14 and r["stats_recorded_equal_planned"]
    p = cli("--gen", "poisson2d9:30", "-np", "2", "--grid", "2x1x1", "--threads", "2", "--repeat", "2", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["threads"] == 2 and r["grid"] == [2, 1, 1] and r["stats_recorded_equal_planned"]
    assert r["backward_error"] <= 1e-14
    p = cli("--gen", "poisson2d9:20", "--threads", "0")
    assert p.returncode == 2 and "--threads" in p.stderr


def test_ranks_with_threads_are_not_bound_to_one_core():
    from commsolve.launch import mpi_env as env_for

    one, many = env_for(2, base={}), env_for(2, base={}, threads=4)
    assert "OMPI_MCA_hwloc_base_binding_policy" not in one
    assert many["OMPI_MCA_hwloc_base_binding_policy"] == "none"
    assert many["PRTE_MCA_hwloc_default_binding_policy"] == "none"
