"""The command line: -np relaunch, running under mpiexec directly, JSON output, clear errors."""

import json
import os
import subprocess
import sys

import pytest

from commsolve import gallery, mmwrite
from commsolve.launch import mpi_env, mpiexec_command
from commsolve.direct import SOLVE_STEPS


def cli(*args, timeout=180):
    return subprocess.run([sys.executable, "-m", "commsolve", *args], capture_output=True, text=True,
                          timeout=timeout, env=mpi_env(4))


def test_spmv_relaunches_with_np_and_reports_json():
    p = cli("spmv", "--gen", "poisson2d:40", "-np", "2", "--ppn", "1", "--repeat", "5", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert (r["nranks"], r["nodes"], r["rows"], r["nnz"]) == (2, 2, 1600, gallery.poisson2d(40).nnz)
    assert r["rel_error_vs_scipy"] <= 1e-12
    assert r["stats_recorded_equal_planned"]
    assert r["comm"]["max"]["msgs_sent_inter"] == 1 and r["comm"]["max"]["bytes_sent_inter"] == 40 * 8
    assert r["spmv_median_s"] > 0 and r["gflops"] > 0


def test_spmv_under_mpiexec_directly(tmp_path):
    path = tmp_path / "m.mtx"
    mmwrite(path, gallery.aniso2d(30, eps=0.1, theta=20))
    cmd = mpiexec_command(3, ["-m", "commsolve", "spmv", "--matrix", str(path), "--partition", "metis",
                              "--repeat", "3", "-np", "3"])
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=mpi_env(3))
    assert p.returncode == 0, p.stderr
    assert "|| |A| |x| || = " in p.stdout and "recorded == planned: yes" in p.stdout
    assert p.stdout.count("matrix ") == 1  # printed once, by rank 0


def test_bad_matrix_file_names_file_and_line(tmp_path):
    path = tmp_path / "broken.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1\n2 two 1\n")
    p = cli("spmv", "--matrix", str(path), "-np", "2")
    assert p.returncode == 1
    assert f"{path}:4: expected an integer column index" in p.stderr
    assert p.stderr.count("error") == 1  # reported once, not once per rank


@pytest.mark.parametrize("args,message", [
    (["spmv", "--gen", "poisson2d:8", "-np", "3", "--ppn", "2"], "ppn 2 does not divide the world size 3"),
    (["spmv", "--gen", "nosuch:8"], "unknown generator 'nosuch'"),
    (["spmv", "--gen", "poisson2d:8", "--matrix", "x.mtx"], "exactly one of --gen SPEC or --matrix FILE"),
    (["spmv", "--matrix", "/nonexistent/a.mtx", "-np", "2"], "cannot open file"),
    (["sptrsv", "--gen", "poisson2d:8", "-np", "3", "--grid", "2x2"],
     "a 2x2 grid needs 4 ranks, the communicator has 3"),
    (["sptrsv", "--gen", "poisson2d:8", "--grid", "2by2"], "grid must look like 2x3 or 2x2x2, got '2by2'"),
    (["sptrsv", "--gen", "poisson2d:8", "-np", "3", "--grid", "1x1x3"], "Pz must be a power of two, got 1x1x3"),
    (["sptrsv", "--gen", "poisson2d:8", "-np", "2", "--grid", "1x1x2", "--algorithm", "2d"],
     "the 2d algorithm needs Pz = 1"),
    (["sptrsv", "--gen", "poisson2d:8", "--algorithm", "4d"], "Invalid value for '--algorithm'"),
    (["sptrsv", "--gen", "poisson2d:8", "--tree", "oak"], "Invalid value for '--tree'"),
    (["sptrsv", "--matrix", "/nonexistent/a.mtx", "-np", "2"], "cannot open file"),
])
def test_clear_errors(args, message):
    p = cli(*args)
    assert p.returncode != 0
    assert message in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize("command,grid", [(c, g) for c in ("sptrsv", "selinv") for g in ("2by2", "0x2", "1x1x3")]
                         + [("selinv", "1x1x2")])  # selected inversion: one layer
def test_a_grid_that_breaks_the_grid_rule_is_a_usage_error(command, grid):
    p = cli(command, "--gen", "poisson2d:8", "-np", "2", "--grid", grid)
    assert p.returncode == 2 and "Invalid value for '--grid'" in p.stderr and "Traceback" not in p.stderr, p.stderr


@pytest.mark.parametrize("nprocs", ["1", "2"])
def test_json_says_a_failure_before_the_result_as_json(tmp_path, nprocs):
    path = tmp_path / "broken.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 two 1\n")
    p = cli("sptrsv", "--matrix", str(path), "-np", nprocs, "--json")
    assert p.returncode == 1
    said = json.loads(p.stdout)  # on 2 ranks the message names the rank that parsed the line
    assert said.pop("error").endswith(f"{path}:4: expected an integer column index")
    assert said == {"kind": "error", "exit_status": 1}
    assert f"{path}:4: expected an integer column index" in p.stderr  # and on stderr, as without --json


def test_json_keeps_the_result_as_its_one_document_when_a_check_of_it_fails():
    p = cli("sptrsv", "--gen", "poisson2d:8", "-np", "2", "--repeat", "1", "--tol", "1e-300", "--json")
    assert p.returncode == 1 and "above --tol" in p.stderr
    assert json.loads(p.stdout)["rows"] == 64  # one JSON document: the result, not an error object after it


@pytest.mark.parametrize("args,message", [
    (["spmv", "--gen", "poisson2d:8", "-np", "3", "--ppn", "2"], "ppn 2 does not divide the world size 3"),
    (["amg", "--matrix", "/nonexistent/a.mtx", "-np", "2"], "cannot open file"),
    (["sptrsv", "--gen", "poisson2d:8", "-np", "3", "--grid", "2x2"], "a 2x2 grid needs 4 ranks, the communicator has 3"),
    (["sptrsv", "--gen", "poisson2d:8", "-np", "2", "--grid", "1x1x2", "--algorithm", "2d"],
     "the 2d algorithm needs Pz = 1"),
])
def test_what_the_ranks_would_refuse_is_said_before_mpiexec_starts(tmp_path, args, message):
    """With -np, the launching process makes the ranks' first checks itself: a stand-in mpiexec
    first on PATH leaves a mark if it is started, and a good command line does start it."""
    mark = tmp_path / "started"
    fake = tmp_path / "mpiexec"
    fake.write_text(f"#!/bin/sh\ntouch {mark}\nexit 99\n")
    fake.chmod(0o755)
    env = dict(mpi_env(4), PATH=f"{tmp_path}:{os.environ['PATH']}")
    run = lambda argv: subprocess.run([sys.executable, "-m", "commsolve", *argv], capture_output=True,  # noqa: E731
                                      text=True, timeout=60, env=env)
    p = run(args)
    assert p.returncode == 1 and message in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert not mark.exists()
    p = run(["spmv", "--gen", "poisson2d:8", "-np", "2"])
    assert p.returncode != 0 and mark.exists()


def test_demo_checks_pass():
    p = cli("demo", "-np", "2", "--json", timeout=300)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["ok"] and len(out["runs"]) == 4
    assert out["virtual"]["stats"]["nranks"] == 1024
    flagship = out["flagship"]
    assert [r["algorithm"] for r in flagship["runs"]] == ["2d", "3d-baseline", "3d"]
    for r in flagship["runs"]:  # each solution checked against scipy, statistics against the plan
        assert r["rel_error_vs_scipy"] <= 1e-10 and r["stats_recorded_equal_planned"]
        assert (r["z_msgs"] > 0) == (r["grid"][2] > 1)
    assert flagship["virtual"]["nranks"] == 2048
    syncs = {a: v["sync_points"] for a, v in flagship["virtual"]["algorithms"].items()}
    assert syncs == {"2d": 0, "3d-baseline": 6, "3d": 1}  # 2 log2(8) against one


@pytest.mark.parametrize("strategy", ["node-aware", "node-aware-2step", "auto"])
def test_spmv_with_node_aware_strategies(strategy):
    p = cli("spmv", "--gen", "random:rows=2000,nnz_per_row=12", "-np", "4", "--ppn", "2", "--strategy", strategy,
            "--repeat", "5", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["rel_error_vs_scipy"] <= 1e-12 and r["stats_recorded_equal_planned"]
    assert r["comm"]["steps"] == {"node-aware": 3, "node-aware-2step": 2}.get(strategy, r["comm"]["steps"])


def test_sptrsv_reports_times_residual_and_comm_per_rank():
    p = cli("sptrsv", "--gen", "poisson2d9:40", "-np", "4", "--grid", "2x2", "--tree", "binary", "--nrhs", "3",
            "--ppn", "2", "--repeat", "2", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert (r["rows"], r["grid"], r["nrhs"], r["tree"], r["algorithm"]) == (1600, [2, 2, 1], 3, "binary", "2d")
    assert r["rel_residual"] <= 1e-10 and r["backward_error"] <= 1e-14 and r["stats_recorded_equal_planned"]
    assert r["nnz_LU"] > gallery.poisson2d9(40).nnz and len(r["local_entries"]) == 4
    assert min(r["local_entries"]) > 0
    assert r["l_solve_s"] > 0 and r["u_solve_s"] > 0 and r["redistribute_s"] > 0 and r["z_comm_s"] == 0
    assert r["solve_s"] >= r["l_solve_s"] + r["u_solve_s"] + r["redistribute_s"]
    assert set(r["factor_s"]) == {"ordering", "redistribute", "allocate", "numeric", "distribute", "total"}
    # the default ordering on 4 ranks: PT-Scotch's (its own leaves on this 2D mesh), the
    # analysis by every rank from its rows
    assert r["ordering"] == "ptscotch"
    # where the ordering's seconds went, on the root: parts of it, each timed apart (A gathered for MC64 only)
    parts = r["ordering_parts_s"]
    assert set(parts) == {"gather", "pivoting", "ordering_graph", "ordering_dimension", "nested_dissection",
                          "ordering_gather", "leaf_ordering", "symbolic_exchange", "symbolic_leaves",
                          "symbolic_separators", "symbolic_assemble"}
    assert all(v >= 0 for v in parts.values()) and parts["nested_dissection"] > 0
    assert sum(parts.values()) <= r["factor_s"]["ordering"]
    assert r["factor_stats_recorded_equal_planned"] is True
    per_rank = r["comm_per_rank"]
    assert len(per_rank) == 4 and all(len(s["steps"]) == len(SOLVE_STEPS) == 9 for s in per_rank)
    split = r["comm_split_per_rank"]
    assert all(sum(s["z"].values()) == 0 for s in split)  # one grid: nothing between grids
    assert all(s["xy"]["msgs_sent_intra"] + s["xy"]["msgs_sent_inter"] > 0 for s in split)
    # ppn 2: ranks 0,1 on one node; the 2x2 grid's columns cross nodes, its rows do not.
    assert sum(s["total"]["msgs_sent_inter"] for s in per_rank) > 0
    assert sum(s["total"]["msgs_sent_intra"] for s in per_rank) > 0


def test_sptrsv_text_output_and_matrix_file(tmp_path):
    path = tmp_path / "a.mtx"
    mmwrite(path, gallery.aniso2d(30, eps=0.01, theta=30))
    p = cli("sptrsv", "--matrix", str(path), "-np", "2", "--tree", "flat", "--repeat", "1")
    assert p.returncode == 0, p.stderr
    for line in ("grid 1x2x1, algorithm 2d, tree flat", "L-solve", "U-solve", "nnz(L+U)", "residual",
                 "backward error", "recorded == planned: yes"):
        assert line in p.stdout, p.stdout
    assert p.stdout.count("matrix ") == 1



@pytest.mark.parametrize("algorithm", ["3d-baseline", "3d-baseline-async", "3d"])
def test_sptrsv_3d_reports_xy_and_z_traffic(algorithm):
    p = cli("sptrsv", "--gen", "poisson2d9:40", "-np", "4", "--grid", "1x2x2", "--algorithm", algorithm,
            "--nrhs", "2", "--repeat", "2", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert (r["grid"], r["algorithm"], r["partition"], r["allreduce"]) == ([1, 2, 2], algorithm, "nd", "packed")
    assert r["rel_residual"] <= 1e-10 and r["backward_error"] <= 1e-14 and r["stats_recorded_equal_planned"]
    assert r["z_comm_s"] > 0 and r["solve_s"] >= r["l_solve_s"] + r["z_comm_s"] + r["u_solve_s"]
    split = r["comm_split_per_rank"]
    # Pz = 2: the diagonal owners of the shared forest talk across the grids (ranks 0-1 with 2-3).
    assert sum(s["z"]["msgs_sent_intra"] + s["z"]["msgs_sent_inter"] for s in split) > 0
    assert r["comm_steps"][4:6] == ["Z reduce", "Z broadcast"]


@pytest.mark.parametrize("kernel, flags, expected", [
    ("Prescott", ["sse3", "avx2", "avx512f"], "OPENBLAS_CORETYPE=SkylakeX"),
    ("Nehalem", ["sse4_2", "avx2"], "OPENBLAS_CORETYPE=Haswell"),
    ("Prescott", ["sse3"], None),            # an old CPU: generic kernels are right
    ("SkylakeX", ["avx2", "avx512f"], None),  # the right kernels
])
def test_blas_advice_names_the_kernels_to_select(kernel, flags, expected):
    from commsolve.runs.spmv import blas_advice

    advice = blas_advice(kernel, flags)
    assert (advice is None) if expected is None else (expected in advice and kernel in advice)


def test_lu_with_tournament_pivoting_reports_json():
    p = cli("lu", "--n", "300", "--nb", "32", "-np", "2", "--grid", "2x1x1", "--pivoting", "tournament", "--repeat",
            "2", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["pivoting"] == "tournament" and r["grid"] == "2x1x1" and r["nranks"] == 2
    assert r["check_error"] <= 1e-12 and "P A x" in r["check"]  # L U x against the rows of A x as pivoted
    assert r["stats_recorded_equal_planned"]
    assert r["words_received_per_role_max"]["swap"] > 0 and r["words_received_per_role_max"]["tournament"] > 0
    assert 1 < r["growth"] < 300


def test_simulated_lu_with_tournament_pivoting():
    p = cli("simulate", "lu", "--n", "2048", "--procs", "64", "--c", "1,4", "--nb", "64", "--pivoting", "tournament",
            "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["pivoting"] == "tournament" and set(r["runs"]) == {"1", "4"}
    assert all(v["predicted_s"] > 0 for v in r["runs"].values())
    q = cli("simulate", "gemm", "--n", "256", "--procs", "4", "--pivoting", "tournament")
    assert q.returncode != 0 and "No such option '--pivoting'" in q.stderr
