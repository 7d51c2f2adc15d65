"""``commsolve amg`` and ``commsolve analyze --workload amg``: JSON and text reports, the
plot, and clear errors for bad input (zero diagonal, matrices CG cannot solve, bad options)."""

import json
import subprocess
import sys

import pytest
import scipy.sparse as sp

import commsolve as cs
from commsolve import gallery, mmwrite
from commsolve.launch import mpi_env
from commsolve.stats import summarize


def cli(*args, timeout=240):
    return subprocess.run([sys.executable, "-m", "commsolve", *args], capture_output=True, text=True,
                          timeout=timeout, env=mpi_env(4))


def test_amg_json_reports_hierarchy_and_solve():
    p = cli("amg", "--gen", "poisson3d:12", "-np", "4", "--ppn", "2", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    lv = r["levels"]
    assert (r["nranks"], r["nodes"], r["rows"]) == (4, 2, 12 ** 3)
    assert lv[0]["nnz"] == gallery.poisson3d(12).nnz
    assert all(a["rows"] > b["rows"] for a, b in zip(lv, lv[1:])) and lv[-1]["rows"] <= 10
    assert r["operator_complexity"] == pytest.approx(sum(v["nnz"] for v in lv) / lv[0]["nnz"])
    assert r["converged"] and r["info"] == 0 and 0 < r["iterations"] < 30
    assert r["rel_residual_vs_scipy"] <= 1e-7 and r["stats_recorded_equal_planned"]
    assert r["residuals"][-1] <= 1e-8 * r["residuals"][0] * 1.0001
    assert {v["strategy"] for v in lv} <= {"standard", "node-aware", "node-aware-2step"}
    assert r["setup_s"] > 0 and r["solve_s"] > 0
    # every level but the coarsest built in one C++ call, timed step by step (rank 0's seconds)
    steps = ["strength", "graphs", "split", "interpolation", "galerkin"]
    assert all(list(v["setup_parts"]) == steps for v in lv[:-1]) and lv[-1]["setup_parts"] is None
    assert list(r["setup_steps_s"]) == steps and 0 < sum(r["setup_steps_s"].values()) <= r["setup_s"]


def test_amg_hmis_coarsening():
    """On the 5-point Laplacian on one rank HMIS's Ruge-Stueben pass splits red-black: the
    first coarse grid is half the grid (an odd side: the larger colour)."""
    p = cli("amg", "--gen", "poisson2d:21", "--coarsening", "hmis", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["coarsening"] == "hmis" and r["converged"] and r["rel_residual_vs_scipy"] <= 1e-7
    assert r["levels"][1]["rows"] == (21 * 21 + 1) // 2


def test_amg_aggressive_coarsening():
    """One aggressive level on two ranks: the first coarse grid is about a tenth of the
    grid (a second split over PMIS's), and the text names it."""
    p = cli("amg", "--gen", "poisson2d:40", "-np", "2", "--aggressive", "1", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["aggressive"] == 1 and r["converged"] and r["rel_residual_vs_scipy"] <= 1e-7
    assert r["stats_recorded_equal_planned"] and r["levels"][1]["rows"] < 1600 / 6
    p = cli("amg", "--gen", "poisson2d:40", "--aggressive", "1")
    assert p.returncode == 0 and "(pmis, 1 aggressive level(s), multipass)" in p.stdout, p.stdout + p.stderr


def test_amg_text_and_plot(tmp_path):
    png = tmp_path / "levels.png"
    p = cli("amg", "--gen", "poisson2d:30", "-np", "2", "--smoother", "jacobi", "--plot", str(png))
    assert p.returncode == 0, p.stderr
    assert "operator complexity" in p.stdout and "converged to 1e-08" in p.stdout
    assert "recorded == planned on every level: yes" in p.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_amg_smoothed_aggregation():
    p = cli("amg", "--gen", "poisson3d:12", "-np", "2", "--method", "sa", "--smoother", "chebyshev", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["method"] == "sa" and r["smoother"] == "chebyshev"
    assert r["converged"] and r["rel_residual_vs_scipy"] <= 1e-7
    assert 1 < r["operator_complexity"] < 2 and len(r["levels"]) >= 3


def test_amg_w_cycle_with_l1_symmetric_gauss_seidel():
    p = cli("amg", "--gen", "poisson3d:12", "-np", "2", "--smoother", "l1-symmetric-gs", "--sweeps", "2", "--cycle",
            "W", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["cycle"] == "W" and r["sweeps"] == 2 and r["smoother"] == "l1-symmetric-gs"
    assert r["converged"] and r["rel_residual_vs_scipy"] <= 1e-7


def test_amg_from_matrix_market_file(tmp_path):
    path = tmp_path / "aniso.mtx"
    mmwrite(path, gallery.aniso2d(30, eps=0.01, theta=30))
    p = cli("amg", "--matrix", str(path), "-np", "2", "--strategy", "node-aware", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["converged"]


def test_zero_diagonal_is_a_clear_error(tmp_path):
    A = sp.lil_matrix(gallery.poisson2d(6))
    A[3, 3] = 0.0
    path = tmp_path / "zd.mtx"
    mmwrite(path, sp.csr_matrix(A))
    p = cli("amg", "--matrix", str(path), "-np", "2")
    assert p.returncode != 0
    assert "level 0: row 3 has a zero diagonal entry" in p.stderr and "Traceback" not in p.stderr


def test_indefinite_matrix_is_reported_not_returned(tmp_path):
    path = tmp_path / "indef.mtx"
    mmwrite(path, sp.csr_matrix(gallery.poisson2d(10) - 0.5 * sp.identity(100)))
    p = cli("amg", "--matrix", str(path), "-np", "2")
    assert p.returncode != 0
    assert "CG broke down" in p.stderr or "did not converge" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_zero_diagonal_on_a_coarse_level_names_it(tmp_path):
    path = tmp_path / "shifted.mtx"
    mmwrite(path, sp.csr_matrix(gallery.poisson2d(10) - 2.0 * sp.identity(100)))
    p = cli("amg", "--matrix", str(path), "-np", "2")
    assert p.returncode != 0
    assert "has a zero diagonal entry" in p.stderr and "level " in p.stderr, p.stderr
    assert p.stderr.count("error") == 1 and "Traceback" not in p.stderr


@pytest.mark.parametrize("args,message", [
    (["amg", "--gen", "poisson2d:8", "--theta", "1.5"], "must lie in (0, 1)"),
    (["amg", "--gen", "poisson2d:8", "--theta", "0"], "must lie in (0, 1)"),
    (["amg", "--gen", "poisson2d:8", "--method", "sa", "--interpolation", "direct"],
     "--interpolation is an option of --method classical"),
    (["amg", "--gen", "poisson2d:8", "--method", "sa", "--coarsening", "hmis"],
     "--coarsening is an option of --method classical"),
    (["amg", "--gen", "poisson2d:8", "--coarsening", "rs"], "Invalid value for '--coarsening'"),
    (["amg", "--gen", "poisson2d:8", "--method", "sa", "--aggressive", "1"],
     "--aggressive is an option of --method classical"),
    (["amg", "--gen", "poisson2d:8", "--aggressive", "-1"], "Invalid value for '--aggressive'"),
    (["amg", "--gen", "poisson2d:8", "--smoother", "sor"], "Invalid value for '--smoother'"),
    (["amg", "--gen", "poisson2d:8", "--degree", "3"], "--degree is the Chebyshev smoother's"),
    (["amg", "--gen", "poisson2d:8", "--cycle", "F"], "Invalid value for '--cycle'"),
    (["amg", "--gen", "poisson2d:8", "--matrix", "x.mtx"], "exactly one of --gen SPEC or --matrix FILE"),
    (["amg", "--gen", "poisson2d:8", "--tol", "2"], "must lie in (0, 1)"),
    (["analyze", "--workload", "amg", "--gen", "poisson2d:8", "--procs", "4", "--ppn", "2", "--heatmap", "h.png"],
     "--heatmap, --layout and --partition are for --workload spmv"),
])
def test_clear_errors(args, message):
    p = cli(*args)
    assert p.returncode != 0
    assert message in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_analyze_amg_per_level(tmp_path):
    png = tmp_path / "amg.png"
    p = cli("analyze", "--workload", "amg", "--gen", "poisson3d:16", "--procs", "64", "--ppn", "8", "--json",
            "--plot", str(png))
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    levels = r["levels"]
    assert len(levels) >= 4 and levels[0]["rows"] == 16 ** 3
    # Level 0 is the matrix itself on 64 contiguous ranks: its SpMV statistics are analyze's.
    A = gallery.poisson3d(16)
    topo = cs.make_topology(size=64, ppn=8)
    dist = cs.partition.partition(A.shape[0], 64)
    for s in ("standard", "node-aware", "node-aware-2step"):
        want = summarize(cs.virtual.plan_stats(cs.virtual.plans(A, dist, strategy=s, topology=topo), topo))
        assert levels[0]["spmv"][s]["msgs_sent_inter"]["max"] == want["max"]["msgs_sent_inter"]
        assert levels[0]["spmv"][s]["bytes_sent_inter"]["max"] == want["max"]["bytes_sent_inter"]
    # Thesis Chapter 7: node-aware cuts the busiest rank's inter-node messages, most on the
    # coarse levels, where auto turns to it.
    inter = [(lv["spmv"]["standard"]["msgs_sent_inter"]["max"], lv["spmv"]["node-aware"]["msgs_sent_inter"]["max"])
             for lv in levels]
    assert all(na <= st for st, na in inter)
    saved = [st - na for st, na in inter]
    assert max(saved[1:]) > saved[0]
    assert any(lv["auto"] == "node-aware" for lv in levels[1:])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_stalled_coarsening_is_a_clear_error(tmp_path):
    """No negative couplings: no strong connections, no coarse grid. The 25,600-row level
    would be gathered and factored whole on every rank: refused, saying why."""
    path = tmp_path / "abs.mtx"
    mmwrite(path, sp.csr_matrix(abs(gallery.poisson2d(160)) + sp.identity(160 ** 2)))
    p = cli("amg", "--matrix", str(path), "-np", "2")
    assert p.returncode != 0
    assert "coarsening stalled" in p.stderr and "25,600 rows" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_sa_leaves_unconnected_points_out_of_aggregates(tmp_path):
    """300 decoupled rows (Dirichlet-like) beside a Laplacian: as pyamg, they join no
    aggregate (zero rows of the tentative prolongator) instead of becoming 300 singletons on
    every level."""
    G = sp.block_diag([gallery.poisson2d(30), sp.identity(300)], format="csr")
    path = tmp_path / "dirichlet.mtx"
    mmwrite(path, G)
    p = cli("amg", "--matrix", str(path), "-np", "2", "--method", "sa", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["converged"] and r["levels"][1]["rows"] < 300 and r["levels"][-1]["rows"] <= 10


def test_amg_sparsified_json_and_text():
    """--sparsify hybrid: the table and JSON gain each sparsified level's gamma and its
    operator before (nonzeros, messages); the solve converges, checked by scipy."""
    p = cli("amg", "--gen", "poisson3d27:20", "-np", "4", "--ppn", "1", "--sparsify", "hybrid", "--gamma", "0,1",
            "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["sparsify"]["method"] == "hybrid" and r["sparsify"]["gamma"] == [0.0, 1.0]
    done = [lv for lv in r["levels"] if lv["sparsified"]]
    assert done and all(lv["sparsified"]["gamma"] == 1.0 for lv in done) and r["levels"][1]["sparsified"] is None
    assert all(lv["sparsified"]["nnz_after"] == lv["nnz"] < lv["sparsified"]["nnz_before"] for lv in done)
    assert any(lv["sparsified"]["after"]["inter_bytes_max"] < lv["sparsified"]["before"]["inter_bytes_max"]
               for lv in done)  # few ranks: as many messages before as after, fewer values in them
    assert r["converged"] and r["rel_residual_vs_scipy"] <= 1e-7 and r["stats_recorded_equal_planned"]
    assert r["operator_complexity"] < r["sparsify"]["galerkin_complexity"]
    text = cli("amg", "--gen", "poisson3d27:14", "--sparsify", "sparse", "--gamma", "1")
    assert text.returncode == 0, text.stderr
    assert "sparsified  sparse, diagonal lumping, gamma 1" in text.stdout and "nnz before" in text.stdout


def test_analyze_amg_sparsified_counts_what_a_run_sends():
    """The virtual world's count of each sparsified level's SpMV on 2 ranks (one per node) is
    what the MPI run's plans send (7-point Laplacian: the same hierarchy on 1 and 2 ranks)."""
    args = ["--gen", "poisson3d:14", "--sparsify", "hybrid", "--gamma", "0,1", "--json"]
    a = cli("analyze", "amg", "--procs", "2", "--ppn", "1", "--strategy", "standard", *args)
    run = cli("amg", "-np", "2", "--ppn", "1", "--strategy", "standard", *args)
    assert a.returncode == 0 and run.returncode == 0, a.stderr + run.stderr
    virt, real = json.loads(a.stdout)["levels"], json.loads(run.stdout)["levels"]
    assert [lv["nnz"] for lv in virt] == [lv["nnz"] for lv in real]
    assert any(lv["sparsified"] for lv in virt)
    for v, m in zip(virt, real):
        assert v["spmv"]["standard"]["msgs_sent_inter"]["max"] == m["inter_msgs_max"]
        assert v["spmv"]["standard"]["bytes_sent_inter"]["max"] == m["inter_bytes_max"]
        if v["sparsified"]:
            assert v["sparsified"]["nnz_before"] == m["sparsified"]["nnz_before"]
            assert v["sparsified"]["spmv_before"]["standard"]["msgs_sent_inter"]["max"] == \
                m["sparsified"]["before"]["inter_msgs_max"]
            assert v["spmv"]["standard"]["thesis_model_s"] <= v["sparsified"]["spmv_before"]["standard"][
                "thesis_model_s"]


def test_simulate_amg_compares_plain_and_sparsified():
    p = cli("simulate", "amg", "--gen", "poisson3d27:20", "--procs", "512", "--ppn", "16", "--sparsify", "hybrid",
            "--gamma", "0,0.1", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    g, s = r["runs"]["galerkin"], r["runs"]["sparsified"]
    assert g["levels"][0]["exchanges"] == 3 and all(lv["exchanges"] == 2 for lv in g["levels"][1:-1])
    assert g["levels"][-1]["exchanges"] == 0  # the coarsest level: the gathered direct solve
    assert g["total_s"] == pytest.approx(sum(lv["iteration_s"] for lv in g["levels"]))
    assert s["total_s"] < g["total_s"] and r["iteration_ratio"] == pytest.approx(s["total_s"] / g["total_s"])
    assert g["converged"] and s["converged"]


@pytest.mark.parametrize("args,message", [
    (["amg", "--gen", "poisson2d:8", "--gamma", "0.1"], "--gamma and --lumping are options of a sparsification"),
    (["amg", "--gen", "poisson2d:8", "--sparsify", "hybrid"], "--sparsify hybrid needs its drop tolerances"),
    (["amg", "--gen", "poisson2d:8", "--sparsify", "hybrid", "--gamma", "0,2"], "must lie in [0, 1], got 2.0"),
    (["amg", "--gen", "poisson2d:8", "--sparsify", "hybrid", "--gamma", "a"], "comma-separated numbers"),
    (["amg", "--gen", "poisson2d:8", "--sparsify", "non-galerkin", "--gamma", "1", "--adaptive", "k=3,s=1"],
     "--adaptive puts entries back into a Galerkin hierarchy kept whole"),
    (["amg", "--gen", "poisson2d:8", "--sparsify", "sparse", "--gamma", "1", "--adaptive", "k=3"],
     "adaptive needs k and s"),
    (["amg", "--gen", "poisson2d:8", "--sparsify", "sparse", "--gamma", "1", "--adaptive", "k=3,s=1", "--accel",
      "gmres"], "--adaptive restarts CG"),
    (["simulate", "amg", "--gen", "poisson2d:8", "--procs", "4"], "give --sparsify and --gamma"),
    (["analyze", "amg", "--gen", "poisson2d:8", "--procs", "4", "--ppn", "2", "--sparsify", "sparse"],
     "needs its drop tolerances"),
])
def test_sparsify_option_errors(args, message):
    p = cli(*args)
    assert p.returncode != 0 and message in p.stderr, p.stderr
    assert "Traceback" not in p.stderr
