"""Distributed SpMV and its transpose against scipy, for every generator, partition and
construction path, under mpiexec -n k; recorded CommStats equal planned ones on every rank,
and every rank's pattern and plan equal the virtual world's."""

import pytest
from cases import RANKS, all_cases, case_id

CASES = [(k, case_id(*c)) for k in RANKS for c in all_cases()]


@pytest.fixture
def result(mpi_cache, request):
    k, cid = request.param
    found = {r["case"]: r for r in mpi_cache("spmv_cases.py", k)}
    assert cid in found, f"case {cid} produced no result with {k} ranks"
    return found[cid]


@pytest.mark.parametrize("result", CASES, ids=[f"np{k}-{c}" for k, c in CASES], indirect=True)
def test_matvec_matches_scipy(result):
    assert result["matvec_err"] <= 1e-12


@pytest.mark.parametrize("result", CASES, ids=[f"np{k}-{c}" for k, c in CASES], indirect=True)
def test_rmatvec_matches_scipy(result):
    assert result["rmatvec_err"] <= 1e-12


@pytest.mark.parametrize("result", CASES, ids=[f"np{k}-{c}" for k, c in CASES], indirect=True)
def test_recorded_stats_equal_planned(result):
    assert result["stats_ok"]
    assert result["runs"] == [3, 3]


@pytest.mark.parametrize("result", CASES, ids=[f"np{k}-{c}" for k, c in CASES], indirect=True)
def test_plans_equal_virtual_world(result):
    assert result["virtual_ok"]
