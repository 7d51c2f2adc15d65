"""The distributed factorization and triangular solves on shares of the supernodal
structure (issue 35; C++ direct/structure_share.hpp): each rank's layout holds its own share
only, and the factors and solves come out as scipy's, with every message as the whole
structure's plan says (tests/mpi/share_solve.py). Grids up to 9 ranks, oversubscribed."""

import pytest
from conftest import json_lines, mpirun

GRIDS = [(1, 2, 1), (2, 2, 1), (3, 2, 1), (2, 2, 2), (3, 3, 1)]


@pytest.mark.parametrize("grid", GRIDS, ids=lambda g: "x".join(map(str, g)))
def test_factor_and_solves_on_shares_match_scipy_and_the_whole_plan(grid):
    P = grid[0] * grid[1] * grid[2]
    rows = json_lines(mpirun(P, "share_solve.py", P, "x".join(map(str, grid))).stdout)
    assert len(rows) == 5
    for r in rows:
        # every algorithm of the grid, three tree shapes, two right-hand sides
        assert len(r["errors"]) == 3 * (1 if grid[2] == 1 else 4), r
        assert all(e <= 1e-12 for e in r["errors"].values()), r  # NaN fails
        assert r["factor_as_planned"] and r["solves_as_planned"] and r["size_ok"], r
        if grid == (3, 3, 1):  # no rank holds the whole structure
            assert r["share_fraction"] < 0.9, r
