"""Distributed SpGEMM (A B), the Galerkin product P^T A P and the variable-length record
exchange under them, under mpiexec -n k with virtual nodes of ppn ranks, for every halo
strategy: products equal scipy's to rounding (same nonzero count), records arrive exactly,
and the statistics every rank recorded from MPI equal the virtual world's planned ones
(tests/mpi/product_cases.py)."""

import pytest

LAYOUTS = ((1, 1), (2, 2), (3, 1), (4, 2), (4, 4))
STRATEGIES = ("standard", "node-aware", "node-aware-2step")
PRODUCT_CASES = [f"{g}|{p}|{s}" for s in STRATEGIES for g, p in (
    ("poisson2d:16", "contiguous"), ("poisson3d:6", "strided"), ("random:rows=300,nnz_per_row=6,seed=5", "contiguous"))]
RECORD_CASES = [f"records|{g}|{s}" for s in STRATEGIES for g in ("poisson2d:12", "random:rows=200,nnz_per_row=5,seed=2")]


def results(mpi_cache, k, ppn):
    return {r["case"]: r for r in mpi_cache("product_cases.py", k, ppn)}


@pytest.mark.parametrize("k,ppn", LAYOUTS, ids=[f"np{k}-ppn{p}" for k, p in LAYOUTS])
@pytest.mark.parametrize("case", PRODUCT_CASES)
def test_products_match_scipy(mpi_cache, k, ppn, case):
    r = results(mpi_cache, k, ppn)[case]
    for name in ("AP", "AA"):
        assert r[f"{name}_err"] <= 1e-14, name
        assert r[f"{name}_nnz"][0] == r[f"{name}_nnz"][1], name
        assert r[f"{name}_stats_ok"], name
    assert r["AT_exact"] and r["PT_exact"]  # transposes, bit for bit
    assert r["AT_stats_ok"] and r["PT_stats_ok"]
    assert r["RAP_err"] <= 1e-13
    assert r["RAP_rows_ok"] and r["RAP_stats_ok"]
    if not case.startswith("random"):  # symmetric A: so is P^T A P, to rounding
        assert r["RAP_symmetric_err"] <= 1e-13


@pytest.mark.parametrize("k,ppn", LAYOUTS, ids=[f"np{k}-ppn{p}" for k, p in LAYOUTS])
@pytest.mark.parametrize("case", RECORD_CASES)
def test_record_exchange(mpi_cache, k, ppn, case):
    r = results(mpi_cache, k, ppn)[case]
    assert r["forward_ok"] and r["reverse_ok"] and r["stats_ok"]


@pytest.mark.parametrize("k,ppn", LAYOUTS, ids=[f"np{k}-ppn{p}" for k, p in LAYOUTS])
def test_one_inner_communicator(mpi_cache, k, ppn):
    """25 matrices on one communicator share one duplicate of it, which outlives them, so
    ranks may release objects at different times."""
    r = results(mpi_cache, k, ppn)["inner-comm"]
    assert r["duplicates"] == 1 and r["duplicates_after"] == 1
    assert r["uneven_release_ok"]


@pytest.mark.parametrize("k,ppn", [(2, 2), (3, 1)], ids=["np2-ppn2", "np3-ppn1"])
def test_galerkin_refuses_unlike_distributions(mpi_cache, k, ppn):
    """Rows contiguous, columns strided: P^T A P would pair the wrong rows, so it is refused;
    and a plan reused for a matrix with another halo of the same size."""
    galerkin, amg, reuse = results(mpi_cache, k, ppn)["distribution-checks"]["messages"]
    assert galerkin and "rows and columns must be distributed alike" in galerkin
    assert amg and "rows and columns distributed alike" in amg
    assert reuse and "earlier product with the same matrices' structure" in reuse
