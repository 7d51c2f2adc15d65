"""The parallel ordering (issue 35): PT-Scotch's separators on the row-distributed matrix
(direct/parallel_ordering.hpp), each leaf ordered on a rank of its own by Scotch ("ptscotch")
or by METIS ("ptscotch-metis"), on every gallery family at 1-4 ranks (3 and 4 oversubscribed): a
permutation, the same on every rank, a separator tree of log2 of the ordering ranks' levels
whose separators separate (checked in numpy from the matrix), fill against serial METIS
nested dissection, the symbolic structure computed in parallel equal to the serial one, and
factor() with it solving to a backward error of at most 1e-14; and the default's choice of
the leaves' ordering by the mesh's dimension."""

import math

import pytest
from conftest import json_lines, mpirun

from commsolve import _core

RANKS = [1, 2, 3, 4]
_cache = {}


def all_lines(nprocs):
    if nprocs not in _cache:
        _cache[nprocs] = json_lines(mpirun(nprocs, "ordering_cases.py", nprocs).stdout)
    return _cache[nprocs]


def results(nprocs):
    return [r for r in all_lines(nprocs) if "many_leaves" not in r and "auto_leaves" not in r]


@pytest.mark.parametrize("nprocs", RANKS)
def test_every_family_orders_and_solves(nprocs):
    rows = results(nprocs)
    assert len(rows) == 24  # 12 families x 2 orderings
    for r in rows:
        what = f"{r['family']} {r['ordering']} on {nprocs} ranks"
        assert r["permutation"] and r["same_on_every_rank"], what
        assert r["separated"], what
        # the largest power of two of ranks orders (SuperLU_DIST's rule for ParMETIS), fewer for tiny n
        assert r["levels"] == int(math.log2(_core.ordering_ranks(nprocs, r["n"]))), what
        assert r["nodes"] == 2 ** (r["levels"] + 1) - 1, what
        assert r["berr"] <= 1e-14, what  # NaN fails too
        assert r["err"] <= 1e-11 * r["x_scale"], what
        # MC64 (the default) gathers A for the matching only; the symbolic analysis runs by leaves
        parts = {"gather", "pivoting", "ordering_graph", "nested_dissection", "ordering_gather", "leaf_ordering",
                 "symbolic_exchange", "symbolic_leaves", "symbolic_separators", "symbolic_assemble"} | (
            {"ordering_dimension"} if r["ordering"] == "ptscotch" else set())  # Scotch's leaves: by dimension
        assert set(r["ordering_parts"]) == parts, what


def assert_shares_equal(r, nprocs):
    """Every rank's share computed in parallel (no rank holding the whole) equals the share
    of the whole structure, on every layer grid of up to 3 x 3 dividing the ranks."""
    grids = {f"{px}x{py}" for px in range(1, 4) for py in range(1, 4) if nprocs % (px * py) == 0}
    assert r["share_differs"] == {g: [] for g in grids}, f"{r['family']} {r.get('ordering')} on {nprocs} ranks"


@pytest.mark.parametrize("nprocs", RANKS)
def test_structure_in_parallel_equals_serial(nprocs):
    """The symbolic factorization computed by leaves of the separator tree on their ranks
    (direct/parallel_symbolic.hpp) equals the serial one on the gathered matrix for the same
    ordering, supernode by supernode (every array of the structure), with the default
    relaxation and without it; so do the shares of it computed in parallel."""
    rows = results(nprocs)
    assert len(rows) == 24
    for r in rows:
        assert r["structure_differs"] == [[], []], f"{r['family']} {r['ordering']} on {nprocs} ranks"
        assert_shares_equal(r, nprocs)
    # METIS's 3-level tree: 8 leaves, several a rank, the separators on the last rank
    many = [r for r in all_lines(nprocs) if "many_leaves" in r]
    assert len(many) == 4
    for r in many:
        assert r["structure_differs"] == [], f"{r['family']} on {nprocs} ranks"
        assert_shares_equal(r, nprocs)
    assert any(r["many_leaves"] > nprocs for r in many)  # dg3d:2 splits into 4 leaves only


@pytest.mark.parametrize("nprocs", RANKS)
def test_fill_against_serial_metis(nprocs):
    """METIS on the leaves keeps METIS's fill (within 1.3x, the issue's bound); Scotch's leaf
    orderings leave 1.0-1.7x METIS's fill on these small matrices (on larger meshes, with the
    default supernodes: test_default_orders_leaves_by_dimension): bounded here so a broken
    ordering fails."""
    for r in results(nprocs):
        ratio = r["nnz_L"] / r["nnz_L_metis"]
        bound = 1.3 if r["ordering"] == "ptscotch-metis" else 2.0
        assert 0.5 <= ratio <= bound, f"{r['family']} {r['ordering']} on {nprocs} ranks: fill {ratio:.2f}x METIS's"


@pytest.mark.parametrize("nprocs", RANKS)
def test_default_orders_leaves_by_dimension(nprocs):
    """The default ordering of a distributed matrix orders the leaves by METIS on 3D meshes
    (whose shells grow as r^2) and by Scotch on 2D ones (as r), with a dense row too (which
    the shells go round), and by Scotch on a path; leaving at most 1.3x serial METIS's fill
    (the issue's bound) on every one; and factor() reports the ordering it used."""
    lines = [r for r in all_lines(nprocs) if "auto_leaves" in r]
    assert len(lines) == 16
    for r in lines:
        family = r["auto_leaves"].split(":")[0]
        expected = "ptscotch-metis" if family.endswith("3d") or family in ("poisson3d27", "hpcg") else "ptscotch"
        assert r["chosen"] == expected and r["timed"], f"{r['auto_leaves']} on {nprocs} ranks: {r['chosen']}"
        assert r["reported"] in (None, expected), f"{r['auto_leaves']} on {nprocs} ranks: {r['reported']}"
        ratio = r["nnz_L"] / r["nnz_L_metis"]
        assert 0.5 <= ratio <= 1.3, f"{r['auto_leaves']} on {nprocs} ranks: fill {ratio:.2f}x METIS's"
    assert sum(r["reported"] is not None for r in lines) == 2
