"""The distributed 2D triangular solves under mpiexec: grids 1x1, 1x2, 2x1, 2x2, 2x3 and
1x4, every gallery family, every tree shape (flat, binary, shifted-binary, need-ordered,
node-aware, auto), nrhs 1 and 3. Residual <= 1e-10; the same
solution (to rounding) as the serial solve with the same factors, hence across grids and
shapes; the solution on every rank; recorded CommStats equal to the plan on every rank,
and every rank's plan equal to the virtual world's (commsolve.workloads.sptrsv_collectives)."""

import pytest
from conftest import json_lines, mpirun

from commsolve.trees import SHAPES

GRIDS = [(1, 1), (1, 2), (2, 1), (2, 2), (2, 3), (1, 4)]
FAMILIES = ["poisson2d", "poisson2d9", "poisson3d", "poisson3d27", "aniso2d", "random"]
TREES = [s for s in SHAPES if s not in ("binomial", "rectangular")]  # as sptrsv_cases.py runs them
_cache = {}


def results(px, py):
    if (px, py) not in _cache:
        out = mpirun(px * py, "sptrsv_cases.py", px * py, f"{px}x{py}").stdout
        _cache[px, py] = {(r["family"], r.get("tree"), r.get("nrhs")): r for r in json_lines(out)}
    return _cache[px, py]


@pytest.mark.parametrize("px,py", GRIDS, ids=[f"{px}x{py}" for px, py in GRIDS])
@pytest.mark.parametrize("family", FAMILIES)
def test_every_tree_and_nrhs(px, py, family):
    res = results(px, py)
    for tree in TREES:
        for nrhs in (1, 3):
            r = res[family, tree, nrhs]
            where = f"{family} {px}x{py} {tree} nrhs={nrhs}"
            assert r["resid"] <= 1e-10, where
            assert r["diff"] <= 1e-12, where  # the serial solve of the same factors
            assert r["stats_ok"], where
            assert r["virtual_ok"], where
            assert r["same_everywhere"], where
            assert r["shape"] == ([r["shape"][0]] if nrhs == 1 else [r["shape"][0], 3]), where


@pytest.mark.parametrize("px,py", GRIDS, ids=[f"{px}x{py}" for px, py in GRIDS])
def test_factor_a_row_distributed_parcsr(px, py):
    r = results(px, py)["parcsr", None, None]
    assert r["resid"] <= 1e-10 and r["diff"] <= 1e-12
    assert r["diff_rows"] <= 1e-12  # b and x distributed as the ParCSR's rows


@pytest.mark.parametrize("px,py", GRIDS[1:], ids=[f"{px}x{py}" for px, py in GRIDS[1:]])
def test_messages_flow_on_more_than_one_rank(px, py):
    assert all(r["messages"] > 0 for r in results(px, py).values() if r["family"] != "parcsr")


def test_one_rank_sends_nothing():
    assert all(r["messages"] == 0 for r in results(1, 1).values() if r["family"] != "parcsr")
