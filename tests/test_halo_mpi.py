"""Distributed SpMV and its transpose under mpiexec -n k, checked against scipy, for every
generator, partition and construction path (standard strategy, k = 1..4), and for the
node-aware strategies on every (k, ppn) with k in {2, 4, 6, 8} and ppn | k. Recorded
CommStats equal planned ones on every rank, and every rank's pattern and plan equal the
virtual world's."""

import pytest
from cases import CONSTRUCTION_RANKS, STRATEGY_LAYOUTS, case_id, construction_ppn, suite

CASES = [("construction", k, construction_ppn(k) or "real", case_id(*c))
         for k in CONSTRUCTION_RANKS for c in suite("construction")]
CASES += [("strategies", k, ppn, case_id(*c)) for k, ppn in STRATEGY_LAYOUTS for c in suite("strategies")]
IDS = [f"np{k}-ppn{ppn}-{cid}" for _, k, ppn, cid in CASES]
# One job per rank count runs the strategies suite for each of its layouts
LAYOUTS = {k: ",".join(str(p) for kk, p in STRATEGY_LAYOUTS if kk == k) for k, _ in STRATEGY_LAYOUTS}


@pytest.fixture
def result(mpi_cache, request):
    name, k, ppn, cid = request.param
    found = {(r["ppn"], r["case"]): r for r in mpi_cache("halo_cases.py", k, name,
                                                         LAYOUTS[k] if name == "strategies" else str(ppn))}
    assert (str(ppn), cid) in found, f"case {cid} produced no result with {k} ranks, ppn {ppn}"
    return found[str(ppn), cid]


@pytest.mark.parametrize("result", CASES, ids=IDS, indirect=True)
def test_matvec_matches_scipy(result):
    assert result["matvec_err"] <= 1e-12


@pytest.mark.parametrize("result", CASES, ids=IDS, indirect=True)
def test_strategies_agree_with_standard(result):
    assert result["vs_standard_err"] <= 1e-13


@pytest.mark.parametrize("result", CASES, ids=IDS, indirect=True)
def test_with_strategy_replans_without_rebuilding(result):
    """ParCSR.with_strategy on the standard matrix: the plan of building it with the
    strategy, the same product, its exchange recorded as planned."""
    assert result["with_strategy_ok"]


@pytest.mark.parametrize("result", CASES, ids=IDS, indirect=True)
def test_rmatvec_matches_scipy(result):
    assert result["rmatvec_err"] <= 1e-12


@pytest.mark.parametrize("result", CASES, ids=IDS, indirect=True)
def test_recorded_stats_equal_planned(result):
    assert result["stats_ok"]
    assert result["runs"] == [3, 3]


@pytest.mark.parametrize("result", CASES, ids=IDS, indirect=True)
def test_plans_equal_virtual_world(result):
    assert result["virtual_ok"]


@pytest.mark.parametrize("result", [c for c in CASES if c[0] == "strategies"],
                         ids=[i for c, i in zip(CASES, IDS) if c[0] == "strategies"], indirect=True)
def test_strategy_shape(result):
    requested = result["case"].split("|")[3]
    steps = {"standard": 1, "node-aware-2step": 2, "node-aware": 3}
    if requested == "auto":
        assert result["plan_strategy"] in steps
    else:
        assert result["plan_strategy"] == requested
    assert result["steps"] == steps[result["plan_strategy"]]
