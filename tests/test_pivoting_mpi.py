"""Static pivoting and iterative refinement in the distributed solver (tests/mpi/pivoting_cases.py):
a KKT matrix, a convection-dominated one and one with fewer rows than ranks, on 2D and 3D
grids up to 8 ranks, the factor's root the last rank, b strided over the ranks."""

import numpy as np
import pytest
from conftest import json_lines, mpirun

GRIDS = [(1, 2, 1), (1, 2, 2), (1, 1, 8)]
_cache = {}


def results(grid):
    if grid not in _cache:
        P = int(np.prod(grid))
        _cache[grid] = {r["family"]: r for r in json_lines(mpirun(P, "pivoting_cases.py", P,
                                                                   "x".join(map(str, grid))).stdout)}
    return _cache[grid]


@pytest.mark.parametrize("grid", GRIDS, ids=lambda g: "x".join(map(str, g)))
@pytest.mark.parametrize("family", ["kkt3d", "convdiff2d", "poisson2d"])
def test_refined_distributed_solve_is_backward_stable(grid, family):
    r = results(grid)[family]
    eps = np.finfo(float).eps
    assert max(r["berr"]) <= 4 * eps, r
    # the reported berr is the real one (residuals this small differ by summation order: 2 eps)
    assert np.allclose(r["berr"], r["berr_here"], rtol=1e-6, atol=2 * eps)
    assert r["diff"] <= 1e-12  # the serial solve with the same static pivoting
    assert r["plain_steps"] == [0, 0]  # refine=False: measured, not refined
    assert r["stats_ok"] and r["virtual_ok"]
    if family == "kkt3d":
        assert r["rows_moved"]  # the zero block needs the row permutation: b and x go apart
    if family == "poisson2d":
        assert r["n"] < int(np.prod(grid)) or grid != (1, 1, 8)
