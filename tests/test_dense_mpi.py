"""The 2.5D multiply and LU under mpiexec (issue 33): grids 1x1x1 .. 2x2x2, 1x4x1, 3x1x2, 3x3x1 (9
ranks oversubscribed), every c the rank count allows, square and rectangular shapes, sizes
not multiples of the block, six tree shapes (rectangular on the nodes' ring, need-ordered). C
equals numpy's A @ B and the LU without pivoting a numpy Doolittle elimination (both to
rounding); with tournament pivoting P A = L U (numpy, from the gathered factors and pivots),
the pivots and factors scipy's where the panel has one process row, the row swaps each rank
received equal a count made here from the pivots; recorded CommStats equal the plan on every
rank (the swaps aside) and every rank's plan the virtual world's; the words of panels each
rank received equal a count made here from the algorithm's definition (which rank owns which
panel); a zero pivot, or a singular matrix with pivoting, stops the job with the column that
met it."""

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
    assert len(rows) == 30
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
    assert len(rows) == 30
    for r in rows:
        where = f"{grid} n={r['shape'][0]} nb={r['nb']} {r['tree']}"
        assert r["err"] <= 1e-13 and r["residual"] <= 1e-14, where
        assert 0.9 <= r["growth"] <= 1.1, where  # diagonally dominant: no growth
        assert r["stats_ok"] and r["virtual_ok"] and r["seconds_ok"], where
        n = r["shape"][0]
        assert abs(r["flops"] - 2 * n**3 / 3) <= n**2, where  # 2n^3/3 + O(n^2)
        if int(np.prod(grid)) > 1 and n > r["nb"]:
            assert r["words"] > 0, where


def interchanges(n, nb, ipiv, k):
    """Step k's row interchanges as {position: the position its row came from} (moved rows only)."""
    content = list(range(n))
    for t in range(k * nb, min(n, (k + 1) * nb)):
        content[t], content[ipiv[t]] = content[ipiv[t]], content[t]
    return {q: s for q, s in enumerate(content) if s != q}


def hand_swap_received(n, nb, grid, ipiv):
    """Per rank: [messages, words] of row swaps received, counted from the pivots: at step k
    every layer moves the rows of its columns right of block k (layer k mod c: from block k),
    one message per pair of process rows in a process column; at the end layer 0 moves the rows
    of each block column j of L as the later steps' interchanges took them."""
    pr, pc, c = grid
    nblocks = -(-n // nb)
    width = [min(nb, n - b * nb) for b in range(nblocks)]
    owner = [(q // nb) % pr for q in range(n)]
    got = {}  # (receiver, source) -> words, per step or phase

    def add(moves, cols_of, z):
        pairs = {}
        for q, s in moves:
            if owner[q] != owner[s]:
                pairs.setdefault((owner[q], owner[s]), []).append(q)
        for y in range(pc):
            words = cols_of(y)
            for (xq, xs), qs in pairs.items():
                if words(len(qs)) > 0:
                    got.setdefault(z * pr * pc + xq * pc + y, []).append(words(len(qs)))

    for k in range(nblocks):
        moves = interchanges(n, nb, ipiv, k).items()
        for z in range(c):
            first = k if z == k % c else k + 1
            add(moves, lambda y, first=first: (lambda rows: rows * sum(width[b] for b in range(first, nblocks)
                                                                       if b % pc == y)), z)
    src = list(range(n))  # the steps after j, composed
    last = {}  # layer 0's final phase: one message per pair of process rows, all block columns together
    for j in range(nblocks - 1, -1, -1):
        for q in range((j + 1) * nb, n):
            if src[q] != q and owner[q] != owner[src[q]]:
                key = (owner[q] * pc + j % pc, owner[src[q]])
                last[key] = last.get(key, 0) + width[j]
        step = interchanges(n, nb, ipiv, j)
        inv = {s: q for q, s in enumerate(src)}
        for p, before in [(p, step[p]) for p in step]:
            src[inv[p]] = before
    for (r, _), words in last.items():
        got.setdefault(r, []).append(words)
    out = [[0, 0] for _ in range(pr * pc * c)]
    for r, words in got.items():
        out[r] = [len(words), sum(words)]
    return out


@pytest.mark.parametrize("grid", GRIDS, ids=["x".join(map(str, g)) for g in GRIDS])
def test_lu_with_tournament_pivoting_factors_pa(grid):
    rows = [r for r in results(grid) if r["kind"] == "lu_tournament"]
    assert len(rows) == 30
    for r in rows:
        n, nb = r["shape"][0], r["nb"]
        where = f"{grid} n={n} nb={nb} {r['tree']}"
        assert r["err"] <= 1e-13 and r["residual"] <= 1e-14, where  # P A = L U (numpy; the 2.5D multiply)
        assert 1 <= r["growth"] <= max(2.0, n / 2), where  # random matrices: modest growth, as partial pivoting's
        assert all(i <= p < n for i, p in enumerate(r["ipiv"])), where  # LAPACK's convention
        if grid[0] == 1:  # one process row: the tournament is partial pivoting
            assert r["lapack_same_pivots"] and r["lapack_err"] <= 1e-12, where
        assert r["stats_ok"] and r["virtual_ok"] and r["seconds_ok"], where
        assert r["swap_received"] == hand_swap_received(n, nb, grid, r["ipiv"]), where
    ties = [r for r in results(grid) if r["kind"] == "lu_ties"]
    assert len(ties) == 2 and all(r["err"] <= 1e-14 for r in ties), (grid, ties)


@pytest.mark.parametrize("grid", GRIDS, ids=["x".join(map(str, g)) for g in GRIDS])
def test_moves_in_pieces_give_the_same_results(grid):
    rows = [r for r in results(grid) if r["kind"] == "pieces"]
    assert len(rows) == 6
    for r in rows:
        assert r["err"] <= 1e-13 and r["lu_err"] <= 1e-13 and r["piv_err"] <= 1e-13 and r["stats_ok"], (grid, r)
        if int(np.prod(grid)) > 1:
            assert r["messages"] > 0


def test_a_zero_pivot_stops_the_job_naming_its_column():
    proc = mpirun(2, "dense_errors.py", 2, "zero-pivot", check=False, timeout=60)
    assert proc.returncode != 0
    assert "zero pivot at column 0" in proc.stderr and "needs pivoting" in proc.stderr, proc.stderr[-2000:]


def test_a_singular_matrix_stops_the_pivoted_lu_naming_its_column():
    proc = mpirun(2, "dense_errors.py", 2, "singular", check=False, timeout=60)
    assert proc.returncode != 0
    assert "the matrix is singular (no nonzero pivot in column 2)" in proc.stderr, proc.stderr[-2000:]
