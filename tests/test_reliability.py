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


pytestmark = pytest.mark.serial  # timings, timeouts, /tmp seen whole: run alone (pyproject.toml)


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
    assert r["tiny_pivots_replaced"] >= 1 and len(r["warnings"]) >= 1 and r["singular"] is True
    assert any("numerically singular" in w for w in r["warnings"])
    assert "commsolve: singular: the matrix is numerically singular" in p.stderr
    ok = cli("sptrsv", "--matrix", str(path), "-np", "2", "--replace-tiny", "--tol", "1e-7", "--repeat", "1",
             "--allow-singular")
    assert ok.returncode == 0, ok.stderr
    assert "WARNING" in ok.stdout and "numerically singular" in ok.stdout


def test_replaced_pivots_that_refinement_repairs_are_a_warning_not_singular(tmp_path):
    """A permutation matrix without the row permutation: its first pivot is zero and replaced, and
    refinement still reaches x exactly (A is orthogonal). It used to exit 3, "singular"."""
    path = tmp_path / "swap.mtx"
    cs.io.mmwrite(path, sp.csr_matrix(np.array([[0.0, 1.0], [1.0, 0.0]])))
    p = cli("sptrsv", "--matrix", str(path), "-np", "1", "--row-perm", "none", "--replace-tiny", "--repeat", "1",
            "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["tiny_pivots_replaced"] >= 1 and r["singular"] is False and r["rel_residual"] <= 1e-15
    assert len(r["warnings"]) == 1 and "--row-perm mc64" in r["warnings"][0]


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


def test_amg_cli_gmres_bicgstab_and_the_warning():
    for accel in ("gmres", "bicgstab"):
        p = cli("amg", "--gen", "convdiff2d:30,pe=5", "-np", "2", "--accel", accel, "--json")
        assert p.returncode == 0, p.stderr
        r = json.loads(p.stdout)
        assert r["converged"] and r["warnings"] == [] and r["rel_residual_vs_scipy"] <= 1e-7, accel
        assert r["accel"] == accel
    p = cli("amg", "--gen", "convdiff2d:30,pe=5", "-np", "2", "--maxiter", "300")
    assert "WARNING     A is not symmetric" in p.stdout and "--accel gmres" in p.stdout


def test_amg_on_a_singular_laplacian_gives_advice_that_applies():
    """It recommended --replace-tiny, an option of sptrsv that amg does not have."""
    with pytest.raises(ValueError) as e:
        cs.amg.solver(graph_laplacian(16), MPI.COMM_SELF, max_coarse=40)
    assert "null space" in str(e.value) and "A + sigma I" in str(e.value)
    assert "replace" not in str(e.value)


# ---- API papercuts ---------------------------------------------------------------------------

def test_factor_takes_any_scipy_format():
    """A COO matrix was refused with "'coo_matrix' object is not subscriptable"."""
    A = cs.gallery.poisson2d(8).tocoo()
    solver = cs.direct.factor(A, MPI.COMM_SELF, distribution=cs.Distribution.contiguous(64, 1))
    x = solver.solve(np.ones(64))
    assert np.linalg.norm(A @ x - 1) <= 1e-12 * np.linalg.norm(np.ones(64))


def test_factor_of_a_parcsr_on_another_communicator_says_so(tmp_path):
    """A ParCSR of 2 ranks factored with comm=COMM_SELF was diagnosed as "the matrix must be
    given on the root rank"."""
    from conftest import mpirun

    script = tmp_path / "factor_comm.py"
    script.write_text(
        "from mpi4py import MPI\nimport commsolve as cs\ncomm = MPI.COMM_WORLD\nassert comm.size == 2\n"
        "A = cs.ParCSR.from_spec('poisson2d:8', comm)\n"
        "try:\n    cs.direct.factor(A, MPI.COMM_SELF)\n    print('no error', flush=True)\n"
        "except ValueError as e:\n    print(f'rank {comm.rank}: {e}', flush=True)\n"
        "s = cs.direct.factor(A)  # comm left out: A's own\nprint(f'rank {comm.rank} grid {s.grid}', flush=True)\n")
    out = mpirun(2, str(script), timeout=120).stdout
    for r in (0, 1):
        assert f"rank {r}: A is a ParCSR on a communicator of 2 rank(s), factor was given another (1 rank(s))" in out
        assert f"rank {r} grid (1, 2, 1)" in out


def test_amg_solves_with_a_rank_that_holds_no_rows(tmp_path):
    """CG's BLAS axpy refused the empty vectors of a rank without rows, aborting the job."""
    from conftest import mpirun

    script = tmp_path / "amg_empty_rank.py"
    script.write_text(
        "import numpy as np\nfrom mpi4py import MPI\nimport commsolve as cs\ncomm = MPI.COMM_WORLD\n"
        "assert comm.size == 2\nG = cs.gallery.poisson2d(20).tocsr()\n"
        "A = cs.ParCSR.from_local_rows(G if comm.rank == 0 else G[:0], comm)\n"
        "for options in ({}, {'aggressive': 1, 'coarsening': 'hmis'}):\n"
        "    x, info = cs.amg.solver(A, **options).solve(np.ones(A.local_rows), tol=1e-8)\n"
        "    xg = A.gather(x)\n"
        "    if comm.rank == 0:\n"
        "        print(f'info {info} residual {np.linalg.norm(1 - G @ xg) / 20:.3e}', flush=True)\n")
    out = mpirun(2, str(script), timeout=120).stdout
    lines = [line.split() for line in out.splitlines() if line.startswith("info")]
    assert len(lines) == 2
    for _, info, _, residual in lines:
        assert info == "0" and float(residual) <= 1e-8


def test_matrix_market_papercuts(tmp_path):
    path = tmp_path / "a.mtx"
    cs.io.mmwrite(path, cs.gallery.poisson2d(4))
    assert repr(cs.mminfo(path)) == "MMHeader(16 x 16, 64 entries stored, field 'real', symmetry 'general')"
    with pytest.raises(ValueError, match=f"{tmp_path} is a folder, not a Matrix Market file"):
        cs.mmread(tmp_path)


def test_machine_info_has_no_nul_byte():
    from commsolve.runs.spmv import machine_info

    info = machine_info()
    assert "\x00" not in info["mpi"] and info["mpi"]


@pytest.mark.parametrize("change,message", [
    ("rate = 1e10 }", "rate = inf }"),
    ("gamma = 0.0", "gama = 0.0"),
    ("[compute]\nflop_rate", "[compute]\nflops_rate"),
])
def test_a_profile_with_inf_or_a_misspelled_key_is_refused(tmp_path, change, message):
    text = ('name = "p"\nshort_max = 512\neager_max = 8192\ngamma = 0.0\ndelta = 0.0\n[intra_node]\n'
            + "".join(f"{p} = {{ alpha = 1e-6, rate = 1e10 }}\n" for p in ("short", "eager", "rend"))
            + "[inter_node]\n" + "".join(f"{p} = {{ alpha = 2e-6, rate = 1e9 }}\n" for p in ("short", "eager", "rend"))
            + "[compute]\nflop_rate = 1e9\nbandwidth = 1e10\ncall_overhead = 0.0\ncopy_rate = 1e10\n")
    good = tmp_path / "good.toml"
    good.write_text(text)
    cs.model.load_profile(str(good))  # the unchanged profile loads
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace(change, message, 1))
    expected = {"rate = inf }": "must be a number, and finite: got inf", "gama = 0.0": "unknown field 'gama' (did you mean "
                "'gamma'?)", "[compute]\nflops_rate": "unknown field 'compute.flops_rate' (did you mean "
                "'compute.flop_rate'?)"}[message]
    with pytest.raises(cs.model.ProfileError, match=__import__("re").escape(expected)):
        cs.model.load_profile(str(bad))


def test_critical_path_is_rank_time_hops():
    sched = cs.sim.solve_schedule(cs.direct.symbolic(cs.gallery.poisson2d9(12)), (1, 2, 1), "2d")
    r = cs.sim.simulate(sched, cs.make_topology(size=2, ppn=2), "cori-haswell")
    assert r.critical_path and all(isinstance(rank, int) and isinstance(t, float) for rank, t in r.critical_path)
    assert r.critical_path[0][1] == pytest.approx(r.predicted_s)


def test_the_build_shows_its_progress():
    """make demo on a fresh machine ran 7-8 minutes silent while pip built the C++ core; the
    Makefile now builds through scripts/build.py, which turns pip's output into a line per
    stage and per compiled file."""
    import importlib.util
    import pathlib

    root = pathlib.Path(__file__).resolve().parent.parent
    assert "$(PYTHON) scripts/build.py" in (root / "Makefile").read_text()
    spec = importlib.util.spec_from_file_location("build", root / "scripts" / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    sample = {
        "  *** Configuring CMake...": "configuring (CMake)",
        "  [12/45] Building CXX object CMakeFiles/commsolve_core.dir/src/commsolve/direct/factor3d.cpp.o":
            "[12/45] direct/factor3d.cpp",
        "  [44/45] Linking CXX static library libcommsolve_core.a": "[44/45] linking libcommsolve_core.a",
        "  *** Building project with Ninja...": "compiling the C++ core",
        "Successfully installed commsolve-0.1.0": "installed",
        "  -- The CXX compiler identification is GNU 12.2.0": None,
    }
    for line, shown in sample.items():
        assert build.progress_line(line) == shown, line


# ---- figures, as a reader sees them ----------------------------------------------------------

def _solve_results(nranks_grid=(4, 4, 2)):
    S = cs.direct.symbolic(cs.gallery.poisson2d9(64), 2)
    _, results = cs.sim.study.simulate_algorithms(None, nranks_grid, ["2d", "3d"], "cori-haswell", ppn=8,
                                                  structure=S, timeline=True)
    return results


def test_the_balance_plot_keeps_its_legend_off_the_ranks():
    """Its legend, inside the last panel, hid ranks 25-31."""
    fig = cs.sim.study.plot_balance(_solve_results(), None, "title")
    assert all(ax.get_legend() is None for ax in fig.axes) and len(fig.legends) == 1
    fig.canvas.draw()
    legend = fig.legends[0].get_window_extent()
    assert all(legend.y1 <= ax.get_window_extent().y0 for ax in fig.axes)  # below every panel


def test_the_gantt_chart_title_does_not_cover_the_first_panel():
    fig = cs.sim.study.plot_timeline(_solve_results((2, 2, 2)), None, "a title")
    fig.canvas.draw()
    title = fig._suptitle.get_window_extent()
    top = fig.axes[0]
    assert title.y0 >= top.title.get_window_extent().y1  # above the first panel's own title
    assert all(float(t).is_integer() for t in top.get_yticks())  # ranks on whole numbers


def test_the_traffic_plot_bars_start_at_zero_with_whole_message_counts():
    """A log axis starting at 1.7e4 made a 10 % difference look 5x; message counts had 0.2
    steps."""
    from commsolve.runs.analysis import analyze
    from commsolve.runs.plots import plot_strategies

    result = analyze(64, 8, ["standard", "node-aware"], gen="poisson3d:24")
    fig = plot_strategies(result, None)
    for ax in fig.axes:
        assert ax.get_yscale() == "linear" and ax.get_ylim()[0] == 0
    assert all(float(t).is_integer() for t in fig.axes[0].get_yticks())


# ---- the demo's words ------------------------------------------------------------------------

def test_the_demo_explains_its_labels_and_why_3d_is_not_fastest():
    """The demo presented 3d as the flagship while 3d-baseline was faster in both tables
    without a word; its labels (columns per forest, replication, err vs scipy, equilibration
    B) went unexplained; its idle column was 0 by construction."""
    from commsolve.runs.flagship import why_3d_is_not_fastest
    from commsolve.runs.sptrsv_analysis import analyse_sptrsv3d, format_sptrsv3d
    from commsolve.sim.study import format_simulation, simulate_algorithms

    S = cs.direct.symbolic(cs.gallery.poisson2d9(48), 2)
    virtual = analyse_sptrsv3d(None, (2, 2, 2), ["2d", "3d-baseline", "3d"], ppn=4, structure=S)
    text = format_sptrsv3d(virtual, "m")
    assert "the columns each of the 3 forests holds" in text and "replication: the work of every layer" in text
    projection, _ = simulate_algorithms(None, (2, 2, 2), ["2d", "3d-baseline", "3d"], "cori-haswell", ppn=4,
                                        structure=S)
    table = format_simulation(projection, "m")
    header = next(line for line in table.splitlines() if line.startswith("algorithm"))
    assert "fp" in header and "idle" not in header  # no column that is 0 by construction
    faster = dict(projection, fastest="3d-baseline")
    note = why_3d_is_not_fastest("3d-baseline", faster, virtual)
    assert note and "replication" in note and "not reproduced" in note
    assert why_3d_is_not_fastest("3d", faster, virtual) is None
    from commsolve.direct.pivoting import EQUED

    assert EQUED["B"] == "rows and columns scaled"


def test_cg_reaching_an_exact_zero_residual_is_not_called_a_breakdown():
    """tol far below rounding: CG ran into r = 0 exactly (M r = 0, p^T A p = 0), or into
    r^T M r underflowing to a subnormal with p^T A p 0, which it used to report as 'not
    symmetric positive definite'."""
    from mpi4py import MPI

    A = cs.ParCSR.from_spec("poisson2d:20", MPI.COMM_SELF)
    ml = cs.amg.solver(A)
    x, info = ml.solve(np.ones(A.local_rows), tol=1e-300, maxiter=400)
    r = np.ones(A.local_rows) - A.matvec(x)
    assert ml.last_solve["converged"] == (info == 0)
    assert np.linalg.norm(r) <= max(1e-300 * np.sqrt(A.local_rows), ml.last_solve["residuals"][-1] * 10 + 1e-12)
