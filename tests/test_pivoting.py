"""Static pivoting as SuperLU_DIST's pdgssvx does it (equilibration, a large-diagonal row
permutation with its scaling, tiny-pivot replacement, iterative refinement with the
componentwise backward error), on the matrices that needed it, and bad input refused."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.sparse.csgraph import min_weight_full_bipartite_matching

from commsolve import _core, direct, gallery


def berr_of(A, x, b):
    """Componentwise backward error, computed here from its definition."""
    r = np.abs(b - A @ x)
    d = abs(A) @ np.abs(x) + np.abs(b)
    return float(np.max(r / d))


def matching(A):
    A = sp.csr_matrix(A)
    A.sum_duplicates()
    return _core.large_diagonal_matching(A.indptr.astype(np.int64), A.indices.astype(np.int32), A.data)


@pytest.mark.parametrize("seed", range(8))
def test_matching_is_optimal_and_its_scaling_makes_the_diagonal_one(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 200))
    A = (sp.random(n, n, density=min(1.0, 4.0 / n), random_state=seed) + sp.eye(n) * (rng.random() < 0.5)).tocsr()
    A = A + sp.csr_matrix((rng.standard_normal(n), (np.arange(n), rng.permutation(n))), shape=(n, n))  # full rank
    A.eliminate_zeros()
    A.data *= np.exp(rng.normal(0, 4, A.nnz))
    row_of_col, dr, dc, log_product = matching(A)
    assert sorted(row_of_col) == list(range(n))
    # scipy's maximum-product matching (LAPJVsp) as the referee: the same optimal product
    W = abs(A).tocsr()
    W.data = np.log(np.repeat(abs(A).max(axis=1).toarray().ravel(), np.diff(W.indptr))) - np.log(W.data) + 1.0
    r, c = min_weight_full_bipartite_matching(W)
    assert log_product == pytest.approx(np.log(np.abs(A[r, c])).sum(), abs=1e-9 * max(1.0, abs(log_product)))
    S = abs(sp.diags(dr) @ A @ sp.diags(dc)).tocsr()
    assert S.max() <= 1 + 1e-12
    assert np.allclose([S[row_of_col[j], j] for j in range(n)], 1.0, rtol=1e-12)


def test_structurally_singular_and_non_finite_are_named():
    A = sp.csr_matrix(np.array([[1.0, 2.0, 0.0], [3.0, 4.0, 0.0], [5.0, 6.0, 0.0]]))
    with pytest.raises(ValueError, match=r"structurally singular: column 2 \(counting from 0\) has no nonzero entry"):
        matching(A)
    B = sp.csr_matrix(np.array([[1.0, 0.0, 0.0], [2.0, 0.0, 0.0], [0.0, 1.0, 1.0]]))  # rows 0, 1 share column 0
    with pytest.raises(ValueError, match=r"structurally singular: no perfect matching \(row 1, counting from 0, cannot be matched\)"):
        matching(B)
    with pytest.raises(ValueError, match="structurally singular"):
        direct.SparseLU(B)
    C = sp.csr_matrix(np.array([[1.0, np.nan], [0.0, 1.0]]))
    with pytest.raises(ValueError, match=r"non-finite entry nan at \(0, 1\) \(counting from 0\)"):
        direct.SparseLU(C)


def test_equilibration_scales_only_a_badly_scaled_matrix():
    A = gallery.poisson2d(12)
    assert direct.SparseLU(A, row_perm="none").pivoting.equed == "N"
    rows = sp.diags(10.0 ** np.linspace(-8, 8, A.shape[0]))
    lu = direct.SparseLU(rows @ A, row_perm="none")
    assert lu.pivoting.equed in ("R", "B")
    b = np.ones(A.shape[0])
    assert berr_of(rows @ A, lu.solve(b), b) <= 4 * np.finfo(float).eps


def test_a_tiny_diagonal_no_longer_gives_garbage():
    """Seen before: a 1e-9 diagonal gave a relative residual of 3e+120 without an error."""
    n = 200
    rng = np.random.default_rng(0)
    A = sp.diags(np.full(n, 1e-9)) + sp.random(n, n, density=0.05, random_state=1) + sp.eye(n, k=1) + sp.eye(n, k=-1)
    A = sp.csr_matrix(A)
    b = rng.standard_normal(n)
    lu = direct.SparseLU(A)
    x = lu.solve(b)
    assert berr_of(A, x, b) <= 4 * np.finfo(float).eps and lu.berr[0] == pytest.approx(berr_of(A, x, b))
    ref = spla.spsolve(A.tocsc(), b)
    cond = np.linalg.cond(A.toarray())
    assert np.linalg.norm(x - ref) <= 1e-13 * cond * np.linalg.norm(ref)


@pytest.mark.parametrize("spec", ["kkt3d:6", "kkt3d:5,alpha=1e-4", "convdiff2d:50,pe=3000",
                                  "convdiff2d:40,pe=500,theta=60"])
def test_saddle_point_and_convection_dominated_matrices_solve(spec):
    A = gallery.from_spec(spec)
    b = np.random.default_rng(3).standard_normal((A.shape[0], 2))
    lu = direct.SparseLU(A)
    X = lu.solve(b)
    for c in range(2):
        assert berr_of(A, X[:, c], b[:, c]) <= 4 * np.finfo(float).eps
    assert np.all(lu.berr <= 4 * np.finfo(float).eps)
    assert np.linalg.norm(A @ X - b) <= 1e-9 * np.linalg.norm(b)


def test_kkt_has_a_zero_block_and_the_row_permutation_moves_it():
    m = 4 ** 3
    K = gallery.kkt3d(4)
    assert K.shape == (3 * m, 3 * m) and abs(K - K.T).max() == 0
    assert K[2 * m:, 2 * m:].nnz == 0  # the (lambda, lambda) block
    lu = direct.SparseLU(K)
    row_of_col = lu.pivoting.row_of_col
    assert not np.array_equal(row_of_col, np.arange(3 * m))  # rows really moved
    assert np.all(np.abs(K[row_of_col, np.arange(3 * m)]) > 0)  # onto a nonzero diagonal


def test_replace_tiny_counts_and_refinement_recovers_accuracy():
    A = sp.csr_matrix(np.array([[1e-20, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 3.0]]))
    b = np.array([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"tiny pivot 1e-20 \(at most .* = zero_pivot x \|\|A\|\|_1\)"):
        direct.SparseLU(A, ordering="natural", row_perm="none", equil=False)
    lu = direct.SparseLU(A, ordering="natural", row_perm="none", equil=False, replace_tiny=True)
    assert lu.tiny_pivots_replaced == 1
    x0 = lu.solve(b, refine=False)
    x = lu.solve(b)
    assert lu.refine_steps[0] >= 1
    assert berr_of(A, x, b) < berr_of(A, x0, b) and berr_of(A, x, b) <= 1e-15


def test_refinement_off_still_reports_the_backward_error():
    A = gallery.poisson2d9(20)
    b = np.ones(A.shape[0])
    lu = direct.SparseLU(A)
    x = lu.solve(b, refine=False)
    assert lu.refine_steps[0] == 0 and lu.berr[0] == pytest.approx(berr_of(A, x, b), rel=1e-6)


def test_ill_conditioned_but_backward_stable():
    """A Hilbert matrix: the residual relative to b is poor, the backward error is not."""
    n = 12
    H = sp.csr_matrix(1.0 / (np.arange(n)[:, None] + np.arange(n)[None, :] + 1.0))
    b = np.ones(n)
    lu = direct.SparseLU(H)
    x = lu.solve(b)
    assert np.isfinite(x).all()
    assert lu.berr[0] <= 1e-12


@pytest.mark.parametrize("bad,message", [
    (sp.csr_matrix((0, 0)), "has no rows"),
    (sp.csr_matrix(np.array([[1.0 + 1j, 0.0], [0.0, 1.0]])), "complex"),
    (sp.csr_matrix(np.array([[np.inf, 0.0], [0.0, 1.0]])), r"non-finite entry inf at \(0, 0\)"),
    (sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 0.0]])), r"row 1 \(counting from 0\) is zero"),
])
def test_bad_matrices_are_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        direct.SparseLU(bad)


@pytest.mark.parametrize("b,message", [
    (np.ones(5) * 1j, "complex"),
    (np.array(["a"] * 16), "not numbers"),
    (1.0, r"shape \(16,\) or \(16, nrhs\)"),
    (np.ones((16, 0)), r"shape \(16,\) or \(16, nrhs\)"),
])
def test_bad_right_hand_sides_are_refused(b, message):
    lu = direct.SparseLU(gallery.poisson2d(4))
    with pytest.raises(ValueError, match=message):
        lu.solve(b)


def test_unknown_row_permutation():
    with pytest.raises(ValueError, match="unknown row permutation 'mc65'"):
        direct.SparseLU(gallery.poisson2d(4), row_perm="mc65")


@pytest.mark.parametrize("spec,used", [("poisson2d9:20", "none"), ("convdiff2d:20", "mc64"), ("poisson3d:6", "none"),
                                       ("kkt3d:4", "mc64"), ("random:rows=200,nnz_per_row=5", "none")])
def test_auto_row_permutation_skips_mc64_on_diagonally_dominant_matrices(spec, used):
    """row_perm="auto": no row permutation where every diagonal entry is nonzero and weakly
    dominates its row (or column) — checked here entry by entry — MC64 otherwise; the solve is
    as accurate either way."""
    A = gallery.from_spec(spec).tocsr()
    dense = abs(A.toarray())
    diag = np.diag(dense)
    dominant = bool(np.all(diag > 0) and (np.all(2 * diag >= dense.sum(axis=1)) or np.all(2 * diag >= dense.sum(axis=0))))
    assert dominant == (used == "none")
    lu = direct.SparseLU(A, row_perm="auto")
    assert lu.pivoting.row_perm == used
    b = np.random.default_rng(1).standard_normal(A.shape[0])
    x = lu.solve(b)
    assert berr_of(A, x, b) <= 1e-14
