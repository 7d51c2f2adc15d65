"""MGCG (issue 31): the ILU(0)/IC(0) kernel by its definition, the SpMV formats against scipy,
the agglomeration of a ParCSR onto fewer ranks (matrix, vectors) against scipy and the
original, CGA and hCGA against no aggregation (a partition-independent smoother gives the same
CG iterations and residuals; IC(0), a per-rank smoother, is allowed to differ by a few), the
MGCG preconditioner against scipy's CG, and the ``commsolve mgcg`` command."""

import json
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from mpi4py import MPI

import commsolve as cs
from commsolve import _core, gallery
from commsolve.amg.agglomerate import parse_stages
from commsolve.mg import cga_stages
from commsolve.mg.analysis import analyze_mgcg
from commsolve.launch import mpi_env


def _ilu0(A):
    A = sp.csr_matrix(A)
    A.sort_indices()
    lu = A.data.copy()
    bad = _core.ilu0_factor(A.indptr.astype(np.int32), A.indices.astype(np.int32), lu)
    return bad, sp.csr_matrix((lu, A.indices, A.indptr), shape=A.shape)


@pytest.mark.parametrize("spec", ["groundwater3d:6,contrast=1e6", "convdiff2d:9", "poisson3d27:5"])
def test_ilu0_reproduces_a_on_its_pattern(spec):
    A = sp.csr_matrix(gallery.from_spec(spec))
    bad, F = _ilu0(A)
    assert bad == -1
    L, U = sp.tril(F, -1) + sp.eye(A.shape[0]), sp.triu(F)
    M = (L @ U).tocsr()
    mask = A.copy()
    mask.data[:] = 1.0
    # ILU(0)'s definition: (L U)_ij = a_ij wherever A has an entry (and the factors stay on A's pattern)
    assert abs(M.multiply(mask) - A).max() <= 1e-13 * abs(A).max()
    if "convdiff" not in spec:  # symmetric: IC(0), U = D L^T
        assert abs(U - sp.diags(U.diagonal()) @ (L - sp.eye(A.shape[0])).T - sp.diags(U.diagonal())).max() \
            <= 1e-13 * abs(U).max()
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    x = np.empty_like(b)
    _core.ilu0_solve(A.indptr.astype(np.int32), A.indices.astype(np.int32), F.data, b, x)
    assert np.linalg.norm(M @ x - b) <= 1e-12 * np.linalg.norm(b)


def test_ilu0_zero_pivot_and_bad_pattern():
    bad, _ = _ilu0(np.array([[1.0, 1.0], [1.0, 1.0]]))  # pivot of row 1: 1 - 1 = 0
    assert bad == 1
    with pytest.raises(ValueError, match="sorted, distinct column indices"):
        _core.ilu0_factor(np.array([0, 2], dtype=np.int32), np.array([1, 0], dtype=np.int32), np.ones(2))
    from commsolve.amg.cycle import Smoother

    A = cs.ParCSR.from_global(np.array([[1.0, 1, 0], [1, 1, 1], [0, 1, 1]]), MPI.COMM_SELF)  # nonsingular
    with pytest.raises(cs.CollectiveError, match="zero or non-finite pivot in row 1"):
        Smoother(A, "ilu0")


@pytest.mark.parametrize("fmt", ["ell", "sliced-ell", "sell", "sell-4-16", "sell-1-1", "dia"])
def test_every_format_gives_scipys_product(fmt):
    for spec in ("groundwater3d:7", "aniso2d:15", "random:rows=200,nnz_per_row=11,seed=3"):
        if fmt == "dia" and spec.startswith("random"):
            continue  # not banded: refused (test_dia_refuses_what_is_not_banded)
        M = sp.csr_matrix(gallery.from_spec(spec))
        P = cs.ParCSR.from_global(M, MPI.COMM_SELF).set_format(fmt)
        assert P.format == fmt
        v = np.random.default_rng(1).standard_normal(M.shape[0])
        np.testing.assert_allclose(P.matvec(v), M @ v, rtol=1e-13, atol=1e-13 * abs(M @ v).max())


def test_dia_refuses_what_is_not_banded():
    R = cs.ParCSR.from_spec("random:rows=300,nnz_per_row=9", MPI.COMM_SELF)
    with pytest.raises(ValueError, match="distinct diagonals, more than 64"):
        R.set_format("dia")
    arrow = sp.csr_matrix(sp.eye(50) + sp.coo_matrix(([1.0] * 4, ([0, 1, 2, 3], [49, 48, 47, 46])), shape=(50, 50)))
    with pytest.raises(ValueError, match="would store 250 values for 54 entries"):
        cs.ParCSR.from_global(arrow, MPI.COMM_SELF).set_format("dia")
    assert R.format == "csr"


def _hand_sweep(A, b, x, forward, divisors=None):
    """One Gauss-Seidel sweep by its definition, row by row in Python: x_i += (b_i - (A x)_i)
    / d_i, d_i = a_ii unless ``divisors`` (l1 Gauss-Seidel's a_ii + l_i) are given."""
    A = sp.csr_matrix(A)
    d = A.diagonal() if divisors is None else divisors
    x = x.copy()
    for i in (range(A.shape[0]) if forward else range(A.shape[0] - 1, -1, -1)):
        row = A.getrow(i)
        x[i] += (b[i] - sum(v * x[j] for j, v in zip(row.indices, row.data))) / d[i]
    return x


@pytest.mark.parametrize("fmt", ["csr", "dia", "sliced-ell", "sell-4-1", "ell"])
def test_gauss_seidel_sweeps_in_every_format_are_the_definitions(fmt):
    A = sp.csr_matrix(gallery.from_spec("groundwater3d:5,contrast=1e3"))
    n = A.shape[0]
    P = cs.ParCSR.from_global(A, MPI.COMM_SELF).set_format(fmt)
    d = A.diagonal()
    rng = np.random.default_rng(4)
    b, x0 = rng.standard_normal(n), rng.standard_normal(n)
    l1 = d + rng.uniform(0, 1, n) * d  # l1 Gauss-Seidel's larger divisors: still x_i += residual_i / divisor_i
    for divisors in (d, l1):
        for forward in (True, False):
            x = x0.copy()
            P._core.gauss_seidel(1.0 / divisors, b, None, x, forward, False, np.empty(n))
            np.testing.assert_allclose(x, _hand_sweep(A, b, x0, forward, divisors), rtol=1e-12, atol=1e-12)
    zero = np.zeros(n)  # from x = 0: the lower-part shortcut gives the full sweep's answer
    P._core.gauss_seidel(1.0 / d, b, None, zero, True, True, np.empty(n))
    np.testing.assert_allclose(zero, _hand_sweep(A, b, np.zeros(n), True), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fmt", ["csr", "dia", "sell"])
@pytest.mark.parametrize("spec", ["hpcg:6", "groundwater3d:6,contrast=1e3", "poisson2d:9"])
def test_pre_smoothing_residual_is_b_minus_a_x(fmt, spec):
    # symmetric Gauss-Seidel from 0, then r = b - A x: CSR and DIA take r from the lower half alone (the
    # backward sweep's own equation), SELL by a product
    from commsolve.amg.cycle import Smoother

    A = sp.csr_matrix(gallery.from_spec(spec))
    n = A.shape[0]
    P = cs.ParCSR.from_global(A, MPI.COMM_SELF).set_format(fmt)
    b = np.random.default_rng(5).standard_normal(n)
    x, r = np.zeros(n), np.full(n, np.nan)
    Smoother(P, "symmetric-gs").pre_residual(b, x, r)
    if fmt != "sell":  # SELL sweeps its rows in storage order
        hand = _hand_sweep(A, b, _hand_sweep(A, b, np.zeros(n), True), False)
        np.testing.assert_allclose(x, hand, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(r, b - A @ x, rtol=0, atol=1e-12 * np.abs(b).max())


@pytest.mark.parametrize("name", ["tridiagonal", "poisson2d:7", "aniso2d:7", "poisson3d:5", "poisson3d27:4",
                                  "banded"])
def test_dia_kernels_on_every_stencil_shape(name):
    # 5, 9, 7 and 27 points run the unrolled kernels; a tridiagonal and an irregular band the general one
    if name == "tridiagonal":
        A = sp.diags([-1.0, 2.5, -1.2], [-1, 0, 1], shape=(40, 40), format="csr")
    elif name == "banded":
        A = sp.diags([0.3, -1.0, 4.0, -1.0, 0.5, 0.2], [-7, -1, 0, 1, 3, 11], shape=(60, 60), format="csr")
    else:
        A = sp.csr_matrix(gallery.from_spec(name))
    n = A.shape[0]
    P = cs.ParCSR.from_global(A, MPI.COMM_SELF).set_format("dia")
    v = np.random.default_rng(2).standard_normal(n)
    np.testing.assert_allclose(P.matvec(v), A @ v, rtol=1e-13, atol=1e-13 * abs(A @ v).max())
    d = A.diagonal()
    b = np.random.default_rng(3).standard_normal(n)
    for forward, zero in ((True, False), (False, False), (True, True)):
        x0 = np.zeros(n) if zero else v
        x = x0.copy()
        P._core.gauss_seidel(1.0 / d, b, None, x, forward, zero, np.empty(n))
        np.testing.assert_allclose(x, _hand_sweep(A, b, x0, forward), rtol=1e-12, atol=1e-12)


def test_sell_sweep_order_keeps_symmetric_gauss_seidel_symmetric():
    # sigma > 1 sorts rows inside windows: another Gauss-Seidel ordering, its backward sweep the exact reverse
    A = sp.csr_matrix(gallery.from_spec("poisson2d:9"))
    A = A + sp.diags((np.arange(A.shape[0]) % 3).astype(float))  # rows of one length, values differ
    n = A.shape[0]
    P = cs.ParCSR.from_global(A, MPI.COMM_SELF).set_format("sell-4-16")
    d = A.diagonal()

    def symgs(r):
        x = np.zeros(n)
        for forward in (True, False):
            P._core.gauss_seidel(1.0 / d, r, None, x, forward, False, np.empty(n))
        return x

    u, v = np.random.default_rng(5).standard_normal((2, n))
    assert abs(u @ symgs(v) - v @ symgs(u)) <= 1e-12 * abs(u @ symgs(u))


def test_unknown_format_is_refused():
    P = cs.ParCSR.from_spec("poisson2d:4", MPI.COMM_SELF)
    for bad in ("coo", "sell-0-4", "sell-8", "sell-8-2x"):
        with pytest.raises(ValueError, match="unknown matrix format"):
            P.set_format(bad)
    assert P.format == "csr"


def test_cga_stages_and_their_checks():
    assert cga_stages("none", 64) == []
    assert cga_stages("flat", 64) == [(8.0, 1)]
    assert cga_stages("hierarchical", 64) == [(64.0, 4), (8.0, 1)]
    assert cga_stages("hierarchical", 64, hcga_group=64) == [(8.0, 1)]  # one group: it is CGA
    assert cga_stages("flat", 1) == []
    with pytest.raises(ValueError, match="unknown coarse-grid aggregation 'tree'"):
        cga_stages("tree", 4)
    with pytest.raises(ValueError, match="hcga_group a whole number >= 2"):
        cga_stages("hierarchical", 4, hcga_group=1)
    assert parse_stages([(64, 4), (8, 1)], 16) == [(64.0, 4), (8.0, 1)]
    assert parse_stages([(64, 4), (8, 1)], 4) == [(8.0, 1)]  # a stage onto as many ranks moves nothing
    with pytest.raises(ValueError, match="fewer and fewer ranks"):
        parse_stages([(64, 2), (8, 2)], 8)
    with pytest.raises(ValueError, match="rows per rank must be > 0"):
        parse_stages([(0, 1)], 8)
    with pytest.raises(ValueError, match="list of \\(rows_per_rank, nranks\\) stages"):
        parse_stages([64], 8)


def test_hpcg_problem_is_the_27_point_operator_per_rank():
    assert gallery.grid_shape("hpcg:4", 3) == (4, 4, 12) and gallery.grid_shape("groundwater3d:5") == (5, 5, 5)
    assert gallery.grid_shape("poisson2d:5") is None
    A = sp.csr_matrix(gallery.from_spec("hpcg:4", nprocs=2))
    assert A.shape == (128, 128) and np.all(A.diagonal() == 26)
    assert abs(A - gallery.stencil_matrix((4, 4, 8), [o for o in np.ndindex(3, 3, 3)] - np.ones(3, int),
                                          [26.0 if o == (1, 1, 1) else -1.0 for o in np.ndindex(3, 3, 3)])).max() == 0
    assert np.array_equal(np.diff(A.indptr)[[0, 21]], [8, 27])  # a corner point, an interior point


@pytest.mark.parametrize("fmt,smoother", [("sell", "ic0"), ("csr", "symmetric-gs"), ("sliced-ell", "chebyshev")])
def test_mgcg_preconditioner_is_spd_and_matches_scipys_cg(fmt, smoother):
    s = cs.mg.MGCG("groundwater3d:14,contrast=1e6", MPI.COMM_SELF, format=fmt, smoother=smoother)
    A = s.A.to_global(root=None)
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    x, info = s.solve(b, tol=1e-8)
    assert info == 0 and np.linalg.norm(b - A @ x) <= 1.01e-8 * np.linalg.norm(b)  # NaN fails
    M = spla.LinearOperator(A.shape, matvec=lambda r: s.ml.cycle(np.asarray(r).ravel()))
    count = []
    xs, flag = spla.cg(A, b, M=M, rtol=1e-8, maxiter=300, callback=lambda _: count.append(1))
    assert flag == 0 and abs(len(count) - s.last_solve["iterations"]) <= 2
    v, w = np.random.default_rng(1).standard_normal((2, A.shape[0]))
    assert abs(v @ s.ml.cycle(w) - w @ s.ml.cycle(v)) <= 1e-10 * abs(v @ s.ml.cycle(v))
    levels = s.last_solve["levels"]
    assert [lv["rows"] for lv in levels] == [2744, 343, 64, 8, 1] and all(lv["time_s"] > 0 for lv in levels)
    assert levels[0]["msgs"] == 0  # one rank: nothing travels


def test_mgcg_refuses_what_it_cannot_solve():
    with pytest.raises(ValueError, match="not a 3D structured grid"):
        cs.mg.MGCG("poisson2d:8", MPI.COMM_SELF)
    with pytest.raises(ValueError, match="needs the structured grid"):
        cs.mg.MGCG(sp.eye(8).tocsr(), MPI.COMM_SELF)
    with pytest.raises(ValueError, match="unknown matrix format 'diag'"):
        cs.mg.MGCG("poisson3d:4", MPI.COMM_SELF, format="diag")
    s = cs.mg.MGCG("poisson3d:4", MPI.COMM_SELF)
    with pytest.raises(cs.CollectiveError, match="non-finite"):
        s.solve(np.full(64, np.nan))


@pytest.fixture(scope="module")
def three_ranks(mpi_cache):
    (r,) = mpi_cache("mgcg_cases.py", 3, 3)
    return r


def test_agglomeration_moves_rows_and_vectors_exactly(three_ranks):
    moves = three_ranks["moves"]
    assert len(moves) == 6
    for m in moves:
        assert m["round_trip"] and m["matrix"] and m["gather"], m
        assert m["leaders"] == {1: 1, 2: 2, 3: 3}[m["m"]]  # groups of ceil(3 / m) ranks


def test_cga_and_hcga_keep_the_iterations(three_ranks):
    runs = three_ranks["agglomerated"]
    for smoother in ("jacobi", "ic0"):
        flat, hier, none = (runs[f"{smoother}/{m}"] for m in ("flat", "hierarchical", "none"))
        for r in (flat, hier, none):
            assert r["info"] == 0 and r["residual"] <= 1.01e-9 and r["rows"] == [1728, 216, 27, 8, 1]
        assert none["ranks"] == [3] * 5 and flat["ranks"] == [3, 3, 1, 1, 1] and hier["ranks"] == [3, 2, 1, 1, 1]
        assert flat["report_ranks"] == flat["ranks"] and hier["report_ranks"] == hier["ranks"]
        if smoother == "jacobi":  # independent of the partition: the same CG, to rounding
            for r in (flat, hier):
                assert r["iterations"] == none["iterations"]
                np.testing.assert_allclose(r["residuals"], none["residuals"], rtol=1e-6)
        else:  # IC(0) per rank: fewer, larger blocks on the moved levels (the documented difference)
            assert max(abs(r["iterations"] - none["iterations"]) for r in (flat, hier)) <= 3
    # By hand: 12^3 cells in z-slabs of 4 planes; level 2 (3^3) has 9 rows per rank, under 20: CGA gathers two
    # messages of 9 values onto rank 0. hCGA: level 1 (6^3, 72 per rank, under 200) goes onto ranks 0 and 2
    # (groups of 2: rank 0 receives rank 1's 72), then level 2 (18 + 9 rows on 2 ranks, under 20 each) onto one.
    assert runs["jacobi/flat"]["moved"] == [[{"ranks_from": 3, "recv_msgs_max": 2, "recv_bytes_max": 2 * 9 * 8}]]
    assert runs["jacobi/hierarchical"]["moved"] == [[{"ranks_from": 3, "recv_msgs_max": 1, "recv_bytes_max": 72 * 8}],
                                                    [{"ranks_from": 2, "recv_msgs_max": 1, "recv_bytes_max": 9 * 8}]]


def test_cga_auto_takes_the_cheapest_prediction(three_ranks):
    a = three_ranks["auto"]
    table = a["choice"]["candidates"]
    # 5 levels: none; CGA at any but the coarsest (4); groups of 2 (leaders 0 and 2): the leaders alone from any
    # level but the coarsest (4), hCGA at any two of them (6)
    modes = [c["mode"] for c in table]
    assert [modes.count(m) for m in ("none", "flat", "subset", "hierarchical")] == [1, 4, 4, 6]
    assert all(np.isfinite(c["cycle_s"]) and c["cycle_s"] > 0 for c in table)
    best = min(table, key=lambda c: c["cycle_s"])
    assert a["choice"]["chosen"] == best and a["info"] == 0
    for mode, c in a["choice"]["best"].items():
        assert c == min((d for d in table if d["mode"] == mode), key=lambda d: d["cycle_s"])
    expected = [3] * 5
    for s, m in zip(best["levels"], best["ranks"]):
        expected[s:] = [m] * (5 - s)
    assert a["ranks"] == expected


def test_hcga_placements_land_where_priced_and_merged_messages_are_the_leaders_real_ones(three_ranks):
    placements = three_ranks["placements"]
    assert len(placements) == 6
    for p in placements:
        (s1, s2), (m, _) = p["levels"], p["ranks"]
        assert p["level_ranks"] == [3] * s1 + [m] * (s2 - s1) + [1] * (5 - s2)
        assert len(p["real"]) == len(p["merged"]) == s2 - s1
        for real, merged in zip(p["real"], p["merged"]):
            assert [(a, b) for a, b, _ in real] == [(a, b) for a, b, _ in merged]  # the same leader pairs
            assert all(0 < r <= mb for (_, _, r), (_, _, mb) in zip(real, merged))  # shared values travel once
    assert any(p["real"][0] for p in placements)  # some level on the leaders exchanges at all


def test_moves_count_against_max_levels_and_two_moves_at_once_are_both_reported(three_ranks):
    assert three_ranks["max_levels"] == [3, 1, 1]  # 3 levels in all, 2 of them on one rank
    twice = three_ranks["twice"]
    # level 0 has 576 rows per rank, under 1000: onto 2 ranks, and at once (864 per rank) onto 1
    assert twice[0][0] == 1 and [m["ranks_from"] for m in twice[0][1]] == [3, 2]
    assert all(m["recv_msgs_max"] == 1 for m in twice[0][1])


def test_dia_falls_back_to_csr_where_a_coarse_level_cannot_take_it():
    s = cs.mg.MGCG("poisson3d27:12", MPI.COMM_SELF, format="dia", smoother="symmetric-gs")
    x, info = s.solve(tol=1e-8)
    formats = [lv["format"] for lv in s.last_solve["levels"]]
    assert info == 0 and formats[0] == "dia" and "csr" in formats  # the 3 x 3 x 3 level: 27 diagonals, 2x padding
    proc = _cli("mgcg", "--gen", "poisson3d27:12", "-np", "2", "--format", "dia", "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]  # every rank agrees on the fallback: no hang
    assert "csr" in [lv["format"] for lv in json.loads(proc.stdout)["levels"]]


def test_cga_auto_needs_a_profile_and_sound_switches():
    with pytest.raises(ValueError, match="pass profile="):
        cs.mg.MGCG("poisson3d:4", MPI.COMM_SELF, cga="auto")
    for group in (0, 1, 2.5):  # auto prices hCGA with these groups: checked before anything runs
        with pytest.raises(ValueError, match="hcga_group a whole number >= 2"):
            cs.mg.MGCG("poisson3d:4", MPI.COMM_SELF, cga="auto", profile="bluewaters", hcga_group=group)
    with pytest.raises(ValueError, match="hcga_group a whole number >= 2"):
        analyze_mgcg(64, 4, per_rank=4, modes=("auto",), profile="bluewaters", hcga_group=0)


def test_amg_agglomerate_keeps_the_hierarchy_and_iterations(three_ranks):
    plain, moved = three_ranks["amg"]["None"], three_ranks["amg"]["[(150, 1)]"]
    assert moved["level_ranks"][0] == 3 and moved["level_ranks"][-1] == 1 and plain["level_ranks"][-1] == 3
    assert moved["complexity"] == pytest.approx(plain["complexity"], rel=1e-12)  # PMIS: the same hierarchy
    assert moved["iterations"] == plain["iterations"]
    np.testing.assert_allclose(moved["residuals"], plain["residuals"], rtol=1e-6)


def test_distributed_formats_match_scipy(three_ranks):
    for spec, errs in three_ranks["formats"].items():
        stencil = {"dia", "csr/residual", "dia/residual", "sell/residual"} if "random" not in spec else set()
        assert set(errs) == {"csr", "ell", "sliced-ell", "sell", "sell-4-16"} | stencil
        assert all(e <= (1e-12 if "residual" in k else 1e-14) for k, e in errs.items()), (spec, errs)  # NaN fails


def _cli(*args, timeout=240):
    return subprocess.run([sys.executable, "-m", "commsolve", *args], capture_output=True, text=True,
                          timeout=timeout, env=mpi_env(2))


def test_cli_mgcg_reports_levels_and_checks_itself():
    proc = _cli("mgcg", "--gen", "groundwater3d:16", "-np", "2", "--format", "sell", "--cga", "flat",
                "--cga-rows", "40", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    r = json.loads(proc.stdout)
    assert r["converged"] and r["rel_residual_vs_scipy"] <= 1e-7 and r["stats_recorded_equal_planned"]
    assert [lv["ranks"] for lv in r["levels"]] == [2, 2, 1, 1, 1] and r["levels"][2]["moves"][0]["from"] == 2
    assert r["levels"][2]["moves"][0]["msgs"] > 0 and r["levels"][0]["msgs"] > 0
    assert r["levels"][2]["moves"][0]["time_s"] > 0 and [lv["format"] for lv in r["levels"]] == ["sell"] * 5
    assert r["per_iteration_s"] > 0 and r["format"] == "sell" and r["stages"] == [[40.0, 1]]


def test_cli_amg_agglomerate():
    proc = _cli("amg", "--gen", "poisson3d:16", "-np", "2", "--agglomerate", "300:1", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    r = json.loads(proc.stdout)
    ranks = [lv["ranks"] for lv in r["levels"]]
    assert ranks[0] == 2 and ranks[-1] == 1 and r["converged"] and r["stats_recorded_equal_planned"]
    moved = [lv for lv in r["levels"] if "moved" in lv]
    assert len(moved) == 1 and moved[0]["moved"][0]["recv_msgs_max"] == 1 and moved[0]["rows"] < 300 * 2
    text = _cli("amg", "--gen", "poisson3d:12", "-np", "2", "--agglomerate", "300:1")
    assert text.returncode == 0 and "moved from 2 ranks" in text.stdout, text.stderr[-1500:]
    for bad, message in (("5", "stages ROWS:RANKS"), ("64:2,8:2", "fewer and fewer ranks")):
        proc = _cli("amg", "--gen", "poisson3d:8", "--agglomerate", bad)
        assert proc.returncode != 0 and message in proc.stderr, proc.stderr[-1500:]


@pytest.mark.parametrize("args,message", [
    (["--matrix", "x.mtx"], "--matrix needs --grid"),
    (["--gen", "groundwater3d:8", "--grid", "8,8"], "three positive extents"),
    (["--gen", "groundwater3d:8", "--format", "coo"], "one of csr, ell, sliced-ell, sell, dia or sell-C-SIGMA"),
    (["--gen", "groundwater3d:8", "--format", "sell-0-3"], "unknown matrix format 'sell-0-3'"),
    (["--gen", "groundwater3d:8", "--correction", "2.5"], "must lie in \\(0, 2\\)"),
    (["--gen", "poisson2d:8"], "not a 3D structured grid"),
    (["--gen", "groundwater3d:8", "--cga", "auto"], "give both --cga auto and --profile"),
    (["--gen", "groundwater3d:8", "--process-grid", "1,1,2"], "--process-grid is the boxes of --decomposition"),
    (["--gen", "groundwater3d:8", "--decomposition", "blocks", "--process-grid", "2,2,2"], "whose product is the 1"),
    (["--gen", "groundwater3d:2", "-np", "2", "--decomposition", "blocks", "--process-grid", "1,1,3"],
     "whose product is the 2"),
    (["--gen", "groundwater3d:2", "-np", "4", "--oversubscribe", "--decomposition", "blocks", "--process-grid",
      "4,1,1"], "more boxes than cells"),
])
def test_cli_mgcg_bad_input(args, message):
    import re

    proc = _cli("mgcg", *args)
    assert proc.returncode != 0 and re.search(message, proc.stderr + proc.stdout), proc.stderr[-1500:]


@pytest.fixture(scope="module")
def four_ranks_blocks(mpi_cache):
    (r,) = mpi_cache("mgcg_blocks.py", 4, 4)
    return r


def test_blocks_renumber_the_operator_box_by_box(four_ranks_blocks):
    m = four_ranks_blocks["matrix"]
    assert m["process_grid"] == [2, 2, 1]  # 12^3 on 4 ranks: boxes of 6 x 6 x 12 have the least surface
    assert m["cells_permutation"] and m["equal"]  # P G P^T exactly, P from the cells each rank owns


def test_blocks_give_the_slabs_iterations_with_a_partition_free_smoother(four_ranks_blocks):
    runs = four_ranks_blocks["runs"]
    for cga in ("none", "flat", "hierarchical"):
        slabs, blocks = runs[f"slabs/{cga}"], runs[f"blocks/{cga}"]
        assert blocks["info"] == 0 and blocks["residual"] < 1e-8  # scipy's residual, in lexicographic order
        assert blocks["iterations"] == slabs["iterations"] and blocks["ranks"] == slabs["ranks"]
        np.testing.assert_allclose(blocks["residuals"], slabs["residuals"], rtol=1e-6)


def test_blocks_halo_messages_are_the_analysis_models(four_ranks_blocks):
    # 27-point levels on 2 x 2 x 1 boxes: faces, edges and corners; the virtual-scale analysis counts them
    # from one owner map per dimension, the real plans from the matrix
    assert four_ranks_blocks["hpcg"]["info"] == 0
    halo = four_ranks_blocks["halo"]
    assert len(halo) == 6 and [h["extents"] for h in halo][:3] == [[6, 6, 24], [3, 3, 12], [2, 2, 6]]
    for h in halo:
        assert h["real"] == h["model"], h["extents"]
    assert sorted(len(m) for m in halo[0]["real"]) == [3, 3, 3, 3]  # every box: 2 faces and a corner edge


def test_blocks_from_a_matrix_market_file(tmp_path):
    path = tmp_path / "gw.mtx"
    cs.mmwrite(str(path), sp.csr_matrix(gallery.from_spec("groundwater3d:6")))
    proc = _cli("mgcg", "--matrix", str(path), "--grid", "6,6,6", "-np", "2", "--decomposition", "blocks", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    r = json.loads(proc.stdout)
    assert r["process_grid"] == [2, 1, 1] and r["converged"] and r["rel_residual_vs_scipy"] < 1e-7


def test_blocks_on_the_cli_and_a_grid_that_does_not_match():
    proc = _cli("mgcg", "--gen", "hpcg:8", "-np", "2", "--decomposition", "blocks", "--process-grid", "2,1,1",
                "--smoother", "symmetric-gs", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    r = json.loads(proc.stdout)
    assert r["process_grid"] == [2, 1, 1] and r["converged"] and r["rel_residual_vs_scipy"] < 1e-7
    from commsolve.boxes import BoxGrid

    A = cs.ParCSR.from_spec("poisson3d:4", MPI.COMM_SELF)
    with pytest.raises(ValueError, match="rows per rank differ|grid has"):
        cs.mg.MGCG(A, grid=BoxGrid.blocks((4, 4, 2), (1, 1, 1)))
    with pytest.raises(ValueError, match="comes with its BoxGrid"):
        cs.mg.MGCG(A, grid=(4, 4, 4), decomposition="blocks")
