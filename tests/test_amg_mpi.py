"""Distributed classical AMG-PCG (issue 13) under mpiexec -n k, k = 1..4 (ppn 2 at k = 4,
where the coarse levels choose node-aware strategies): every level's coarse operator equals
scipy's P^T A P of the same P; every halo and product exchange recorded exactly what the
plans (and the virtual world) say; the hierarchy is the same on any number of ranks, and
so are the iterations; the solution's true residual (scipy) meets the tolerance. On one
rank the hierarchy and iterations agree with pyamg's for the same options
(tests/mpi/amg_cases.py)."""

import numpy as np
import pyamg
import pytest
import scipy.sparse as sp

import commsolve as cs

LAYOUTS = ((1, 1), (2, 1), (3, 1), (4, 2))
CASES = ("poisson2d:40", "poisson3d:10", "aniso2d:40,eps=0.01,theta=30")
IDS = [f"np{k}-ppn{p}" for k, p in LAYOUTS]


def result(mpi_cache, k, ppn, case):
    found = {r["case"]: r for r in mpi_cache("amg_cases.py", k, ppn)}
    return found[case]


@pytest.mark.parametrize("k,ppn", LAYOUTS, ids=IDS)
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("method", ["hybrid-gs", "sa"])
def test_galerkin_and_statistics(mpi_cache, k, ppn, case, method):
    r = result(mpi_cache, k, ppn, case)[method]
    assert len(r["rows"]) >= 3 and r["rows"][-1] <= 10
    assert r["galerkin_err"] <= 1e-13
    assert r["stats_ok"]
    if method == "sa":  # each coarse level's candidate, smoothed by P, is the finer one's smoothed
        assert r["candidate_err"] <= 1e-12


@pytest.mark.parametrize("k,ppn", LAYOUTS, ids=IDS)
@pytest.mark.parametrize("case", CASES)
def test_solution_and_rank_independence(mpi_cache, k, ppn, case):
    r, one = result(mpi_cache, k, ppn, case), result(mpi_cache, 1, 1, case)
    for smoother, s in r["solves"].items():
        assert s["info"] == 0 and s["residual"] <= 1e-8, smoother
    # PMIS and MIS-2 weights hash global indices, so the hierarchy does not depend on the
    # partition; Jacobi and Chebyshev smoothing neither (the Chebyshev interval's Lanczos start
    # vector is hashed from global indices too), so the iterations are those of one rank.
    for method in ("hybrid-gs", "sa"):
        assert r[method]["rows"] == one[method]["rows"] and r[method]["nnz"] == one[method]["nnz"], method
    for smoother in ("jacobi", "chebyshev", "chebyshev-4"):
        assert r["solves"][smoother]["iterations"] == one["solves"][smoother]["iterations"], smoother
    # two sweeps a side, or two coarse visits, converge no slower than one forward and one backward sweep
    for name in ("symmetric-gs", "w-cycle"):
        assert r["solves"][name]["iterations"] <= r["solves"]["hybrid-gs"]["iterations"], name
    # Hybrid Gauss-Seidel is Jacobi across ranks: a different smoother on each partition.
    for name in ("hybrid-gs", "direct", "sa"):
        assert abs(r["solves"][name]["iterations"] - one["solves"][name]["iterations"]) <= 2, name


@pytest.mark.parametrize("k,ppn", LAYOUTS[1:], ids=IDS[1:])
@pytest.mark.parametrize("case", CASES)
def test_other_partition_same_first_coarse_grid(mpi_cache, k, ppn, case):
    """Rows dealt out round-robin: PMIS and MIS-2 weights follow the fine-grid identities, so
    the first coarse grid is one rank's; deeper grids may differ where truncation breaks ties
    by the (rank-ordered) coarse numbering, and the iterations by at most 2."""
    r, one = result(mpi_cache, k, ppn, case), result(mpi_cache, 1, 1, case)
    for name in ("strided-jacobi", "strided-sa"):
        assert r[name]["info"] == 0
        assert r[name]["rows"][:2] == one[name]["rows"][:2], name
        assert abs(r[name]["iterations"] - one[name]["iterations"]) <= 2, name


def test_auto_goes_node_aware_on_coarse_levels(mpi_cache):
    strategies = result(mpi_cache, 4, 2, "poisson3d:10")["hybrid-gs"]["strategies"]
    assert strategies[0] == "standard"
    assert "node-aware-2step" in strategies[1:] or "node-aware" in strategies[1:]


@pytest.mark.parametrize("case", CASES)
def test_agrees_with_pyamg(mpi_cache, case):
    """Direct interpolation (pyamg has no extended+i), the same options in pyamg: classical strength (theta 0.25, sign-aware: norm='min'), PMIS,
    direct interpolation, forward Gauss-Seidel before and backward after, max_coarse 10.
    PMIS draws different random numbers (pyamg: numpy's generator; ours: a hash of the
    global index) and pyamg's PMIS also makes fine the points a new coarse point depends on,
    so the hierarchies are alike, not equal: stated tolerance, levels within 1, operator
    complexity within 5 %, iterations within max(2, 20 %)."""
    r = result(mpi_cache, 1, 1, case)["solves"]["direct"]
    A = cs.gallery.from_spec(case).tocsr()
    b = np.cos(0.3 * np.arange(A.shape[0]))
    np.random.seed(0)
    ml = pyamg.ruge_stuben_solver(A, strength=("classical", {"theta": 0.25, "norm": "min"}), CF="PMIS",
                                  interpolation="direct", presmoother=("gauss_seidel", {"sweep": "forward"}),
                                  postsmoother=("gauss_seidel", {"sweep": "backward"}), max_coarse=10)
    res = []
    ml.solve(b, tol=1e-8, accel="cg", residuals=res)
    assert abs(len(ml.levels) - r["levels"]) <= 1
    assert abs(ml.operator_complexity() - r["operator_complexity"]) <= 0.05 * ml.operator_complexity()
    its = len(res) - 1
    assert abs(r["iterations"] - its) <= max(2, 0.2 * its)


@pytest.mark.parametrize("k,ppn", LAYOUTS, ids=IDS)
@pytest.mark.parametrize("case", CASES)
def test_hmis_split_and_partition(mpi_cache, k, ppn, case):
    """HMIS (a Ruge-Stueben first pass in each rank, then PMIS's rounds from its interior
    coarse points): every point with a strong dependency (pyamg's strength of the gathered
    matrix) is coarse or strongly depends on a coarse point, on every partition; each rank's
    interior first-pass coarse points stay coarse; the residual is met. The first pass runs within each rank, so the split depends on the
    partition: on these small grids most points lie on a rank boundary, where PMIS decides,
    and the iterations drift from one rank's towards PMIS's (here up to 26 against 19 and
    PMIS's 29). What holds on every partition is HMIS's point: no more iterations than
    PMIS with the same interpolation on the same ranks."""
    r = result(mpi_cache, k, ppn, case)
    assert r["hmis_split"]["uncovered"] == 0 and r["hmis_split"]["keeps_first_pass"]
    assert r["strength_graphs"] == {"symmetric_pattern": True, "depends_on_me": True}  # against pyamg's S
    for name, pmis in (("hmis", "hybrid-gs"), ("hmis-direct", "direct")):
        s = r["solves"][name]
        assert s["info"] == 0 and s["residual"] <= 1e-8, name
        assert s["iterations"] <= r["solves"][pmis]["iterations"], name


@pytest.mark.parametrize("case", CASES)
def test_hmis_on_one_rank_agrees_with_pyamg_ruge_stuben(mpi_cache, case):
    """On one rank HMIS is a Ruge-Stueben first pass (PMIS's rounds find nothing left but
    points with no coarse neighbour): against pyamg's RS splitting (first pass) with direct
    interpolation and the same smoothing, the coarse grid within 5 %, levels within 1,
    operator complexity within 10 %, iterations within max(2, 20 %). pyamg's pass orders its
    buckets otherwise (ours follows hypre's), so the splits are alike, not equal; the exact
    split is checked against a written-out first pass in test_amg_units."""
    one = result(mpi_cache, 1, 1, case)
    r = one["solves"]["hmis-direct"]
    A = cs.gallery.from_spec(case).tocsr()
    b = np.cos(0.3 * np.arange(A.shape[0]))
    ml = pyamg.ruge_stuben_solver(A, strength=("classical", {"theta": 0.25, "norm": "min"}), CF="RS",
                                  interpolation="direct", presmoother=("gauss_seidel", {"sweep": "forward"}),
                                  postsmoother=("gauss_seidel", {"sweep": "backward"}), max_coarse=10)
    res = []
    ml.solve(b, tol=1e-8, accel="cg", residuals=res)
    nc = ml.levels[1].A.shape[0]
    assert abs(one["hmis_split"]["coarse"] - nc) <= 0.05 * nc
    assert abs(len(ml.levels) - r["levels"]) <= 1
    assert abs(ml.operator_complexity() - r["operator_complexity"]) <= 0.1 * ml.operator_complexity()
    its = len(res) - 1
    assert abs(r["iterations"] - its) <= max(2, 0.2 * its)


@pytest.mark.parametrize("case", CASES)
def test_smoothed_aggregation_near_pyamg(mpi_cache, case):
    """Smoothed aggregation beside pyamg's with the same strength (symmetric, theta 0), the
    constant candidate unimproved, omega 4/3 over the Lanczos estimate of rho(D^-1 A) and the
    same Gauss-Seidel sweeps. The aggregates differ: ours grow around a distance-2 maximal
    independent set chosen in random order (parallel, as ML's and Bell-Dalton-Olson's) plus
    aggregates of the points it leaves, pyamg's are greedy in the matrix's natural order.
    Stated tolerance: levels within 1, operator complexity within 10 %, iterations at most
    1.5 times pyamg's (measured: 12 against 10 on poisson2d:40, 8 against 7 on poisson3d:10,
    34 against 28 on the anisotropic case, 45 against 36 on aniso2d:100 rotated 45 degrees)."""
    r = result(mpi_cache, 1, 1, case)["solves"]["sa"]
    A = cs.gallery.from_spec(case).tocsr()
    ml = pyamg.smoothed_aggregation_solver(A, max_coarse=10, improve_candidates=None,
                                           presmoother=("gauss_seidel", {"sweep": "forward"}),
                                           postsmoother=("gauss_seidel", {"sweep": "backward"}))
    res = []
    ml.solve(np.cos(0.3 * np.arange(A.shape[0])), tol=1e-8, accel="cg", residuals=res)
    assert abs(len(ml.levels) - r["levels"]) <= 1
    assert abs(ml.operator_complexity() - r["operator_complexity"]) <= 0.10 * ml.operator_complexity()
    assert r["iterations"] <= 1.5 * (len(res) - 1)


def extended_i_reference(A, c_points, theta=0.25):
    """Extended+i interpolation written out from De Sterck, Falgout, Nolting and Yang (2008),
    row by row with Python sets: the test's own, independent of the library's C++."""
    A = sp.csr_matrix(A)
    n = A.shape[0]
    coarse = {g: k for k, g in enumerate(c_points)}
    row = lambda i: dict(zip(A.indices[A.indptr[i]:A.indptr[i + 1]], A.data[A.indptr[i]:A.indptr[i + 1]]))  # noqa: E731
    rows = [row(i) for i in range(n)]

    def strong(i):
        s = np.sign(rows[i][i])
        m = max((-s * v for j, v in rows[i].items() if j != i), default=0.0)
        return {j for j, v in rows[i].items() if j != i and m > 0 and -s * v >= theta * m}

    S = [strong(i) for i in range(n)]
    P = sp.lil_matrix((n, len(c_points)))
    for i in range(n):
        if i in coarse:
            P[i, coarse[i]] = 1.0
            continue
        Fs = [k for k in S[i] if k not in coarse]
        hat = {j for j in S[i] if j in coarse} | {j for k in Fs for j in S[k] if j in coarse}
        diag = rows[i][i] + sum(v for j, v in rows[i].items() if j != i and j not in S[i] and j not in hat)
        w = {j: rows[i].get(j, 0.0) for j in hat}
        for k in Fs:
            bar = {l: v for l, v in rows[k].items() if v * rows[k][k] < 0}
            den = sum(v for l, v in bar.items() if l in hat or l == i)
            if den == 0:
                diag += rows[i][k]
                continue
            diag += rows[i][k] * bar.get(i, 0.0) / den
            for j in hat:
                w[j] += rows[i][k] * bar.get(j, 0.0) / den
        for j, v in w.items():
            if v != 0:
                P[i, coarse[j]] = -v / diag
    return sp.csr_matrix(P)


@pytest.mark.parametrize("k,ppn", LAYOUTS, ids=IDS)
@pytest.mark.parametrize("case", CASES)
def test_extended_i_matches_reference(mpi_cache, k, ppn, case):
    r = result(mpi_cache, k, ppn, case)["P0"]
    P = sp.csr_matrix((r["data"], r["indices"], r["indptr"]), shape=tuple(r["shape"]))
    R = extended_i_reference(cs.gallery.from_spec(case), r["c_points"])
    assert P.shape == R.shape
    assert abs(P - R).max() <= 1e-13 * abs(R).max()


@pytest.mark.parametrize("k", (1, 3))
def test_strength_graphs_on_a_pattern_that_is_not_symmetric(mpi_cache, k):
    """S, S + S^T and each point's dependents against pyamg's strength of the gathered
    matrix, where one-way couplings put some dependents outside the rank's halo of A (at 3
    ranks G must add halo columns A lacks, and does); G's product against scipy's, its
    exchange recorded as planned."""
    for r in mpi_cache("strength_cases.py", k):
        assert r["S"] and r["G"] and r["depends_on_me"] and r["recorded_ok"], r
        assert r["G_matvec_err"] <= 1e-14, r
        assert (r["halo_columns_beyond_A"] > 0) == (k > 1), r


@pytest.mark.parametrize("k", (1, 2, 3))
def test_level_pipeline_is_the_steps_one_by_one(mpi_cache, k):
    """The level the hierarchy builds in one C++ call equals the Python steps' (split, P, P^T A
    P, entry for entry) on contiguous and strided partitions and with a rank without rows,
    PMIS and HMIS, including a pattern that is not symmetric; its coarse operator is scipy's
    P^T A P (tests/mpi/level_pipeline_cases.py)."""
    results = mpi_cache("level_pipeline_cases.py", k)
    assert len(results) == (18 if k > 1 else 12)
    for r in results:
        assert r["same_state"] and r["same_P"] and r["same_Ac"], r
        assert r["Ac_vs_scipy"] <= 1e-14 and 0 < r["coarse"], r
        assert r["steps"] == ["strength", "graphs", "split", "interpolation", "galerkin"], r
        assert r["exchanges"] == ["A P", "P^T (A P)"], r
    assert any(0 in r["rows"] for r in results) == (k > 1)
