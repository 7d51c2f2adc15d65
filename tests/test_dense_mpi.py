"""The 2.5D multiply and LU under mpiexec (issue 33): grids 1x1x1 .. 2x2x2, 1x4x1, 3x1x2, 3x3x1 (9 ranks
oversubscribed), every c the rank count allows, square and rectangular shapes, sizes not
multiples of the block, five tree shapes (rectangular on the nodes' ring). C equals numpy's A @ B and the LU factors a numpy
Doolittle elimination (both to rounding); recorded CommStats equal the plan on every rank and
every rank's plan the virtual world's; the words of panels each rank received equal a count
made here from the algorithm's definition (which rank owns which panel); a zero pivot stops
the job with the column that met it."""

import numpy as np
import pytest
from conftest import json_lines, mpirun

GRIDS = [(1, 1, 1), (1, 2, 1), (2, 1, 1), (1, 1, 2), (2, 2, 1), (1, 2, 2), (2, 1, 2), (1, 1, 4), (1, 4, 1), (3, 1, 2),
         (2, 2, 2), (3, 3, 1)]
_cache = {}


def results(grid):
    if grid not in _cache:
        p = int(np.prod(grid))
        _cache[grid] = json_lines(mpirun(p, "dense_cases.py", p, "x".join(map(str, grid))).stdout)
    return _cache[grid]


def held(n, nb, p, proc):
    """Indices process `proc` of `p` holds of n in blocks of nb, block-cyclic (counted here)."""
    return sum(min(nb, n - b * nb) for b in range(proc, -(-n // nb), p))


def hand_panel_words(m, n, k, nb, grid):
    """Per rank: words of A and B panels it receives in SUMMA, from who owns each panel."""
    pr, pc, c = grid
    out = []
    for r in range(pr * pc * c):
        z, x, y = r // (pr * pc), (r % (pr * pc)) // pc, r % pc
        words = 0
        for kap in range(-(-k // nb)):
            if kap % c != z:
                continue
            w = min(nb, k - kap * nb)
            words += (kap % pc != y) * held(m, nb, pr, x) * w + (kap % pr != x) * w * held(n, nb, pc, y)
        out.append(words)
    return out


@pytest.mark.parametrize("grid", GRIDS, ids=["x".join(map(str, g)) for g in GRIDS])
def test_multiply_equals_numpy_and_moves_what_the_plan_says(grid):
    rows = [r for r in results(grid) if r["kind"] == "matmul"]
    assert len(rows) == 25
    for r in rows:
        where = f"{grid} {r['shape']} nb={r['nb']} {r['tree']}"
        assert r["err"] <= 1e-13, where  # NaN fails
        assert r["stats_ok"] and r["virtual_ok"] and r["seconds_ok"], where
        m, n, k = r["shape"]
        assert r["flops"] == 2 * m * n * k, where
        assert r["panel_words"] == hand_panel_words(m, n, k, r["nb"], grid), where
    (d,) = [r for r in results(grid) if r["kind"] == "distributed"]
    assert d["err"] <= 1e-13 and d["random_ok"] and d["type"] == "DistributedDense"
    (s,) = [r for r in results(grid) if r["kind"] == "scatter"]
    assert s["ok"] and s["same_as_from_global"]


@pytest.mark.parametrize("grid", GRIDS, ids=["x".join(map(str, g)) for g in GRIDS])
def test_lu_without_pivoting_equals_numpy_elimination(grid):
    rows = [r for r in results(grid) if r["kind"] == "lu"]
    assert len(rows) == 25
    for r in rows:
        where = f"{grid} n={r['shape'][0]} nb={r['nb']} {r['tree']}"
        assert r["err"] <= 1e-13 and r["residual"] <= 1e-14, where
        assert 0.9 <= r["growth"] <= 1.1, where  # diagonally dominant: no growth
        assert r["stats_ok"] and r["virtual_ok"] and r["seconds_ok"], where
        n = r["shape"][0]
        assert abs(r["flops"] - 2 * n**3 / 3) <= n**2, where  # 2n^3/3 + O(n^2)
        if int(np.prod(grid)) > 1 and n > r["nb"]:
            assert r["words"] > 0, where


@pytest.mark.parametrize("grid", GRIDS, ids=["x".join(map(str, g)) for g in GRIDS])
def test_moves_in_pieces_give_the_same_results(grid):
    rows = [r for r in results(grid) if r["kind"] == "pieces"]
    assert len(rows) == 5
    for r in rows:
        assert r["err"] <= 1e-13 and r["lu_err"] <= 1e-13 and r["stats_ok"], (grid, r)
        if int(np.prod(grid)) > 1:
            assert r["messages"] > 0


def test_a_zero_pivot_stops_the_job_naming_its_column():
    proc = mpirun(2, "dense_errors.py", 2, check=False, timeout=60)
    assert proc.returncode != 0
    assert "zero pivot at column 0" in proc.stderr and "needs pivoting" in proc.stderr, proc.stderr[-2000:]
