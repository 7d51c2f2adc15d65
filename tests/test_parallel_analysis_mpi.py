"""The analysis of a distributed matrix without gathering it (issue 35, item 3;
direct/parallel_analysis.py): factor() with a parallel ordering at 1-4 ranks (3 and 4
oversubscribed) gathers A only for the large-diagonal matching; its static pivoting, ||B||_1
and symmetry flag equal the scipy path's on the gathered matrix, and its solves are backward
stable with b and x distributed unlike A's rows. The structure's equality with the serial
one is in test_ordering_mpi."""

import pytest
from conftest import json_lines, mpirun

RANKS = [1, 2, 3, 4]
_cache = {}


def results(nprocs):
    if nprocs not in _cache:
        _cache[nprocs] = json_lines(mpirun(nprocs, "parallel_analysis_cases.py", nprocs).stdout)
    return _cache[nprocs]


@pytest.mark.parametrize("nprocs", RANKS)
def test_gathers_only_for_the_matching(nprocs):
    rows = results(nprocs)
    assert len(rows) == 28  # 7 families x 2 orderings x 2 row permutations
    for r in rows:
        what = f"{r['family']} {r['ordering']} row_perm={r['row_perm']} on {nprocs} ranks"
        expected = {"none": "none", "mc64": "mc64", "auto": "none" if r["dominant"] else "mc64"}[r["row_perm"]]
        assert r["used"] == expected, what
        assert r["gathered"] == (r["used"] == "mc64"), what
    assert any(not r["gathered"] for r in rows) and any(r["gathered"] for r in rows)


@pytest.mark.parametrize("nprocs", RANKS)
def test_pivoting_norm_and_symmetry_equal_scipy(nprocs):
    rows = results(nprocs)
    for r in rows:
        what = f"{r['family']} {r['ordering']} row_perm={r['row_perm']} on {nprocs} ranks"
        assert r["scales_equal"], what
        assert r["equed"][0] == r["equed"][1], what
        assert r["anorm_rel"] <= 1e-14, what  # summed in another order than scipy's: rounding only
        assert r["symmetric"][0] == r["symmetric"][1], what
        assert r["untested"] == (r["used"] == "none" and r["equed"][0] == "N"), what
    # the cases cover both answers, also where the analysis left the test to selected
    # inversion (a symmetric and a nonsymmetric matrix), and a scaling without matching
    assert {tuple(r["symmetric"]) for r in rows} == {(True, True), (False, False)}
    assert {r["symmetric"][1] for r in rows if r["untested"]} == {True, False}
    assert any(r["used"] == "none" and r["equed"][0] != "N" for r in rows)


@pytest.mark.parametrize("nprocs", RANKS)
def test_solves_are_backward_stable(nprocs):
    for r in results(nprocs):
        what = f"{r['family']} {r['ordering']} row_perm={r['row_perm']} on {nprocs} ranks"
        assert r["berr"] <= 1e-14, what  # NaN fails too
        assert r["err"] <= 1e-10 * r["x_scale"], what


@pytest.mark.parametrize("nprocs", [1, 3])  # the grids with Pz = 1
def test_selected_inversion_tests_symmetry_itself(nprocs):
    """Where the analysis left A's symmetry untested, selected inversion tests it and uses
    the symmetric form exactly when A = A^T; its entries match numpy's inverse."""
    runs = [r for r in results(nprocs) if r["selinv"] is not None]
    assert len(runs) == 6  # poisson2d, unsym and convdiff2d, two row permutations each
    for r in runs:
        what = f"{r['family']} row_perm={r['row_perm']} on {nprocs} ranks"
        assert r["selinv"]["symmetric"] == r["symmetric"][1], what
        assert r["selinv"]["err"] <= 1e-12, what
    assert {r["selinv"]["symmetric"] for r in runs} == {True, False}
