"""Parallel selected inversion under mpiexec (issue 32): grids 1x1, 1x2, 2x1, 2x2 and 2x3, every
gallery family, the symmetric form (where the factorization is symmetric) and the
unsymmetric one, every tree shape. The selected entries equal numpy's dense inverse (to
rounding) and hold the pattern of A^T and the diagonal; every rank's own entries make up the
gathered matrix; recorded CommStats equal the plan on every rank, and every rank's plan the
virtual world's (no MPI); Pz > 1 is refused on every rank with the reason."""

import pytest
from conftest import json_lines, mpirun

from commsolve.trees import SHAPES

SHAPES = [s for s in SHAPES if s not in ("binomial", "rectangular")]  # as selinv_cases.py runs them

GRIDS = [(1, 1), (1, 2), (2, 1), (2, 2), (2, 3)]
FAMILIES = {"poisson2d": 2, "poisson2d9": 2, "poisson3d": 2, "poisson3d27": 2, "aniso2d": 2, "convdiff2d": 1,
            "kkt3d": 1, "random": 1}  # family: forms (symmetric ones have both)
_cache = {}


def results(px, py):
    if (px, py) not in _cache:
        out = mpirun(px * py, "selinv_cases.py", px * py, f"{px}x{py}").stdout
        _cache[px, py] = json_lines(out)
    return _cache[px, py]


@pytest.mark.parametrize("px,py", GRIDS, ids=[f"{px}x{py}" for px, py in GRIDS])
@pytest.mark.parametrize("family", FAMILIES)
def test_selected_entries_on_the_grid_equal_the_dense_inverse(px, py, family):
    rows = [r for r in results(px, py) if r["family"] == family]
    assert len(rows) == FAMILIES[family] * len(SHAPES)
    assert {r["form"] for r in rows} == ({"symmetric", "unsymmetric"} if FAMILIES[family] == 2 else {"unsymmetric"})
    for r in rows:
        where = f"{family} {px}x{py} {r['form']} {r['tree']}"
        assert r["err"] <= 1e-12, where  # NaN fails
        assert r["pattern_ok"] and r["pieces_ok"], where
        assert r["stats_ok"] and r["virtual_ok"], where
        assert r["symmetric"] == (r["form"] == "symmetric"), where
        assert r["seconds_ok"], where
        assert (r["messages"] > 0) == (px * py > 1), where
    # the forms agree entry for entry in count (same pattern); trees change the messages only
    assert len({r["nnz"] for r in rows}) == 1


@pytest.mark.parametrize("px,py", GRIDS, ids=[f"{px}x{py}" for px, py in GRIDS])
def test_products_in_several_pieces_give_the_dense_inverse(px, py):
    rows = [r for r in results(px, py) if r["family"] == "pieces"]
    assert {r["form"] for r in rows} == {"symmetric", "unsymmetric"}
    assert all(r["rows"] == 14 ** 3 and r["err"] <= 1e-12 for r in rows), rows
    assert sum(r["split_supernodes"] for r in rows) > 0  # the case the test is for did happen


@pytest.mark.parametrize("px,py", GRIDS, ids=[f"{px}x{py}" for px, py in GRIDS])
def test_a_solver_holding_shares_of_the_structure_gives_the_dense_inverse(px, py):
    """The default ordering on a grid of px, py > 1: each rank holds its share of the structure
    (issue 35), which selected inversion makes whole while it runs."""
    (r,) = [r for r in results(px, py) if r["family"] == "shares"]
    assert r["shares"] == [min(px, py) > 1] * (px * py)
    assert r["err"] <= 1e-12 and r["pattern_ok"] and r["stats_ok"], r


@pytest.mark.parametrize("px,py", GRIDS, ids=[f"{px}x{py}" for px, py in GRIDS])
def test_the_form_chosen_by_default_and_the_warning_of_replaced_pivots(px, py):
    (r,) = [r for r in results(px, py) if r["family"] == "auto"]
    assert r["chosen"] == {"alike": True, "defaults": False}  # MC64's scaling makes rows and columns differ
    assert r["replaced"] > 0 and len(r["warnings"]) == 1 and "nearby matrix" in r["warnings"][0]


@pytest.mark.parametrize("px,py", GRIDS[1:], ids=[f"{px}x{py}" for px, py in GRIDS[1:]])
def test_three_d_grids_are_refused_on_every_rank(px, py):
    (r,) = [r for r in results(px, py) if r["family"] == "3d-refused"]
    assert len(r["errors"]) == px * py
    assert all(e is not None and "2D grid (Pz = 1)" in e and "1x" in e for e in r["errors"])



def _cli(*args, timeout=180):
    import subprocess
    import sys

    from commsolve.launch import mpi_env

    return subprocess.run([sys.executable, "-m", "commsolve", *args], capture_output=True, text=True,
                          timeout=timeout, env=mpi_env(4))


def test_cli_selinv_on_two_ranks_reports_json_and_checks_against_scipy():
    import json

    p = _cli("selinv", "--gen", "poisson2d9:70", "-np", "2", "--grid", "1x2", "--tree", "shifted-binary",
             "--repeat", "2", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert (r["nranks"], r["grid"], r["tree"], r["rows"]) == (2, [1, 2], "shifted-binary", 4900)
    assert r["check"].endswith("scipy's splu") and r["check_error"] <= 1e-12  # above 3,000 rows: sampled columns
    assert r["stats_recorded_equal_planned"] and len(r["runs_s"]) == 2
    assert r["selected_entries"] == r["nnz_LU"] and r["flops"] > 0
    # a 1x2 grid: process rows only, so the row roles move data and the column ones nothing
    assert r["per_role"]["row_reduce"]["messages"] > 0 and r["per_role"]["col_bcast"]["messages"] == 0
    assert r["sent_per_rank_bytes"]["max"] >= r["sent_per_rank_bytes"]["median"] > 0


def test_cli_selinv_symmetric_form_and_its_refusal():
    p = _cli("selinv", "--gen", "poisson3d:8", "-np", "2", "--form", "symmetric")  # no matching, no scaling then
    assert p.returncode == 0, p.stderr
    assert "symmetric form" in p.stdout and "dense inverse (numpy)" in p.stdout and "recorded == planned: yes" in p.stdout
    p = _cli("selinv", "--gen", "convdiff2d:20", "-np", "1", "--form", "symmetric")
    assert p.returncode == 1 and "symmetric factorization" in p.stderr and "Traceback" not in p.stderr
    p = _cli("selinv", "--gen", "poisson2d:10", "-np", "2", "--grid", "1x1x2")  # a usage error: exit 2
    assert p.returncode == 2 and "2D grid" in p.stderr and "Traceback" not in p.stderr


def test_cli_simulate_selinv_per_tree_shape():
    import json

    p = _cli("simulate", "selinv", "--gen", "elasticity3d:6", "--grid", "6x6", "--profile", "edison", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["nranks"] == 36 and r["ppn"] == 24 and set(r["shapes"]) == {"flat", "binary", "shifted-binary"}
    assert r["shapes"]["flat"]["speedup_over_flat"] == 1.0
    for v in r["shapes"].values():
        assert v["predicted_s"] > 0 and v["comm_compute_ratio"] > 0 and v["messages"] > 0
        assert v["col_bcast_sent_bytes"]["max"] >= v["col_bcast_sent_bytes"]["median"] >= v["col_bcast_sent_bytes"]["min"]
    p = _cli("simulate", "selinv", "--gen", "poisson3d:6", "--grid", "2x2", "--tree", "oak")
    assert p.returncode != 0 and "oak" in p.stderr and "Traceback" not in p.stderr
