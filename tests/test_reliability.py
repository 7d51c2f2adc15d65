"""Answers that look like passes, limits checked before the work, and what a new user meets
first (issue 27): each case failed before the change that this file tests."""

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import scipy.sparse as sp
from mpi4py import MPI

import commsolve as cs
from commsolve.launch import mpi_env


def cli(*args, timeout=240):
    return subprocess.run([sys.executable, "-m", "commsolve", *args], capture_output=True, text=True,
                          timeout=timeout, env=mpi_env(4))


def graph_laplacian(n):
    """The 5-point graph Laplacian of an n x n grid: rows sum to zero, the constants its null space."""
    A = cs.gallery.poisson2d(n).tocsr()
    return sp.csr_matrix(A - sp.diags(np.asarray(A.sum(axis=1)).ravel()))


# ---- limits, checked before the work ---------------------------------------------------------

def test_a_matrix_too_large_is_refused_from_the_spec_alone():
    """poisson3d:1000 (10^9 rows) was refused only after 19-33 s and a 15.7 GB peak (an index
    array of every row); now the spec's arithmetic refuses it before anything is allocated."""
    code = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
            "print(p.returncode); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
            "sys.stderr.write(p.stderr)")
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-c", code, sys.executable, "-m", "commsolve", "spmv", "--gen",
                        "poisson3d:1000"], capture_output=True, text=True, timeout=120, env=mpi_env(1))
    elapsed = time.monotonic() - t0
    rc, peak_kib = (int(v) for v in p.stdout.split())
    assert rc == 1 and "rows would take about" in p.stderr and "GiB to build" in p.stderr, p.stderr
    assert elapsed < 30 and peak_kib < 1 << 20  # seconds, and well under 1 GiB at its peak


def test_calibration_needs_two_ranks():
    p = cli("calibrate", "-np", "1", "-o", "/tmp/never-written.toml", timeout=60)
    assert p.returncode == 2 and "2 at least, got 1" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize("path,message", [("x.txt", "the format is named by the suffix"),
                                          ("/proc/x.png", "cannot write in folder /proc")])
def test_plot_files_are_checked_before_the_work(tmp_path, path, message):
    target = path if path.startswith("/") else str(tmp_path / path)
    t0 = time.monotonic()
    p = cli("analyze", "spmv", "--gen", "poisson3d:40", "--procs", "64", "--ppn", "8", "--plot", target, timeout=60)
    assert p.returncode == 2 and message in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert time.monotonic() - t0 < 20


# ---- answers that look like passes ------------------------------------------------------------

def test_a_singular_matrix_is_said_so_in_words_json_and_exit_status(tmp_path):
    """A graph Laplacian with --replace-tiny: the backward error is small (x is huge), the
    relative residual is not. It used to exit 0 in silence."""
    path = tmp_path / "laplacian.mtx"
    cs.io.mmwrite(path, graph_laplacian(12))
    p = cli("sptrsv", "--matrix", str(path), "-np", "2", "--replace-tiny", "--tol", "1e-7", "--repeat", "1", "--json")
    assert p.returncode == 3, p.stderr
    r = json.loads(p.stdout)
    assert r["tiny_pivots_replaced"] >= 1 and len(r["warnings"]) >= 1
    assert any("numerically singular" in w for w in r["warnings"])
    assert "commsolve: singular: the matrix is numerically singular" in p.stderr
    ok = cli("sptrsv", "--matrix", str(path), "-np", "2", "--replace-tiny", "--tol", "1e-7", "--repeat", "1",
             "--allow-singular")
    assert ok.returncode == 0, ok.stderr
    assert "WARNING" in ok.stdout and "numerically singular" in ok.stdout


def test_a_nonsingular_solve_carries_no_warning(tmp_path):
    p = cli("sptrsv", "--gen", "poisson2d:20", "-np", "2", "--repeat", "1", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["warnings"] == []


def test_zero_right_hand_side_has_zero_backward_error():
    """x = 0 solves A x = 0 exactly: its componentwise backward error is 0 (it was 1)."""
    A = cs.gallery.poisson2d(10)
    lu = cs.direct.SparseLU(A)
    x = lu.solve(np.zeros(A.shape[0]))
    assert not np.any(x) and np.all(lu.berr == 0)
    solver = cs.direct.factor(A, MPI.COMM_SELF)
    x = solver.solve(np.zeros((A.shape[0], 2)))
    assert not np.any(x) and np.all(solver.berr == 0)
    x = solver.solve(np.column_stack([np.zeros(A.shape[0]), np.ones(A.shape[0])]))  # one zero column of two
    assert solver.berr[0] == 0 and 0 < solver.berr[1] <= 1e-15


def test_amg_on_a_nonsymmetric_matrix_warns_under_cg_and_solves_with_gmres():
    A = cs.gallery.from_spec("convdiff2d:40,pe=5")
    ml = cs.amg.solver(A, MPI.COMM_SELF)
    assert not ml.symmetric and ml.asymmetry > 1e-4
    b = np.ones(A.shape[0])
    ml.solve(b, accel="cg", maxiter=30)
    assert ml.last_solve["warnings"] and "accel='gmres'" in ml.last_solve["warnings"][0]
    x, info = ml.solve(b, accel="gmres", tol=1e-10)
    assert info == 0 and ml.last_solve["warnings"] == []
    assert np.linalg.norm(b - A @ x) <= 1e-9 * np.linalg.norm(b)  # checked by scipy
    sym = cs.amg.solver(cs.gallery.poisson2d(30), MPI.COMM_SELF)
    assert sym.symmetric and sym.asymmetry < 1e-12


def test_amg_cli_gmres_and_its_warning():
    p = cli("amg", "--gen", "convdiff2d:30,pe=5", "-np", "2", "--accel", "gmres", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["converged"] and r["warnings"] == [] and r["rel_residual_vs_scipy"] <= 1e-7
    p = cli("amg", "--gen", "convdiff2d:30,pe=5", "-np", "2", "--maxiter", "300")
    assert "WARNING     A is not symmetric" in p.stdout and "--accel gmres" in p.stdout


def test_amg_on_a_singular_laplacian_gives_advice_that_applies():
    """It recommended --replace-tiny, an option of sptrsv that amg does not have."""
    with pytest.raises(ValueError) as e:
        cs.amg.solver(graph_laplacian(16), MPI.COMM_SELF, max_coarse=40)
    assert "null space" in str(e.value) and "A + sigma I" in str(e.value)
    assert "replace" not in str(e.value)
