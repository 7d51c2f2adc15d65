"""Parallel selected inversion under mpiexec (issue 32): grids 1x1, 1x2, 2x1 and 2x2, every
gallery family, the symmetric form (where the factorization is symmetric) and the
unsymmetric one, every tree shape. The selected entries equal numpy's dense inverse (to
rounding) and hold the pattern of A^T and the diagonal; every rank's own entries make up the
gathered matrix; recorded CommStats equal the plan on every rank, and every rank's plan the
virtual world's (no MPI); Pz > 1 is refused on every rank with the reason."""

import pytest
from conftest import json_lines, mpirun

from commsolve.trees import SHAPES

GRIDS = [(1, 1), (1, 2), (2, 1), (2, 2)]
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


@pytest.mark.parametrize("px,py", GRIDS[1:], ids=[f"{px}x{py}" for px, py in GRIDS[1:]])
def test_three_d_grids_are_refused_on_every_rank(px, py):
    (r,) = [r for r in results(px, py) if r["family"] == "3d-refused"]
    assert len(r["errors"]) == px * py
    assert all(e is not None and "2D grid (Pz = 1)" in e and "1x" in e for e in r["errors"])

