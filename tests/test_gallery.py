"""Gallery generators against independently built references."""

import numpy as np
import pytest
import scipy.sparse as sp

from commsolve import gallery


def lap1d(n):
    return sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))


def test_poisson2d_is_kron_sum():
    n = 7
    I = sp.identity(n)
    ref = sp.kron(I, lap1d(n)) + sp.kron(lap1d(n), I)
    assert abs(gallery.poisson2d(n) - ref).max() == 0


def test_poisson3d_is_kron_sum():
    n = 5
    I = sp.identity(n)
    T = lap1d(n)
    ref = sp.kron(sp.kron(I, I), T) + sp.kron(sp.kron(I, T), I) + sp.kron(sp.kron(T, I), I)
    assert abs(gallery.poisson3d(n) - ref).max() == 0


@pytest.mark.parametrize("fn,dim,points", [(gallery.poisson2d9, 2, 9), (gallery.poisson3d27, 3, 27)])
def test_box_stencils(fn, dim, points):
    n = 5
    A = fn(n)
    B = sp.csr_matrix(np.ones((1, 1)))
    tri = sp.diags([1.0, 1.0, 1.0], [-1, 0, 1], shape=(n, n))
    for _ in range(dim):
        B = sp.kron(B, tri)
    ref = points * sp.identity(n**dim) - B  # -1 on every neighbour in the box, points-1 on the diagonal
    assert abs(A - ref).max() == 0
    assert A.getnnz(axis=1).max() == points


@pytest.mark.parametrize("theta", [0.0, 30.0, 45.0, 90.0])
def test_aniso2d_symmetric_and_consistent(theta):
    eps = 0.01
    A = gallery.aniso2d(9, eps=eps, theta=theta)
    assert abs(A - A.T).max() < 1e-15
    # The stencil annihilates linear functions away from the boundary (consistency).
    n = 9
    x, y = np.meshgrid(np.arange(n), np.arange(n), indexing="xy")
    u = (2 * x + 3 * y).ravel().astype(float)
    interior = ((x > 0) & (x < n - 1) & (y > 0) & (y < n - 1)).ravel()
    assert np.abs((A @ u)[interior]).max() < 1e-12
    # and reproduces the second derivative of a quadratic: -(a*2) for u = x^2
    t = np.radians(theta)
    a = np.cos(t) ** 2 + eps * np.sin(t) ** 2
    assert np.allclose((A @ (x.ravel() ** 2.0))[interior], -2 * a)


def test_aniso2d_positive_definite():
    A = gallery.aniso2d(8, eps=0.001, theta=60).toarray()
    assert np.linalg.eigvalsh(A).min() > 0


@pytest.mark.parametrize("spec", ["poisson2d:9", "poisson3d27:4", "aniso2d:7,theta=20", "random:rows=3000,nnz_per_row=6",
                                  "elasticity3d:3", "dg3d:3,dofs=4"])
def test_row_subsets_equal_rows_of_whole(spec):
    A = gallery.from_spec(spec)
    rows = np.random.default_rng(1).choice(A.shape[0], size=A.shape[0] // 3, replace=False)
    sub = gallery.from_spec(spec, rows=rows)
    assert sub.shape == (rows.size, A.shape[1])
    assert abs(sub - A[rows]).max() == 0
    assert sub.has_sorted_indices


@pytest.mark.parametrize("n,k", [(50, 50), (3000, 7), (100, 1)])
def test_random_fixed_nnz(n, k):
    A = gallery.random_fixed_nnz(n, k, seed=5)
    assert np.all(A.getnnz(axis=1) == k)
    assert np.all(A.diagonal() > np.abs(A - sp.diags(A.diagonal())).sum(axis=1).A1)  # dominant
    assert abs(A - gallery.random_fixed_nnz(n, k, seed=5)).max() == 0
    if k > 1:
        assert abs(A - gallery.random_fixed_nnz(n, k, seed=6)).max() > 0


def test_spec_parsing():
    assert gallery.parse_spec("s2D9pt64").family == "poisson2d9"
    assert gallery.parse_spec("random:rows_per_rank=10,nnz_per_row=3").global_rows(8) == 80
    assert gallery.from_spec("poisson3d:3").shape == (27, 27)


@pytest.mark.parametrize("bad,msg", [
    ("laplace:5", "unknown generator"),
    ("poisson2d", "grid size"),
    ("poisson2d:0", "positive"),
    ("poisson2d:abc", "abc"),
    ("random:rows=10", "nnz_per_row"),
    ("random:rows=10,nnz_per_row=20", "exceeds"),
    ("aniso2d:5,foo=1", "unknown parameter"),
    ("elasticity3d:3,dofs=0", "dofs must be positive"),
    ("dg3d:3,dofs=x", "dofs must be a whole number"),
])
def test_bad_specs(bad, msg):
    with pytest.raises(ValueError, match=msg):
        gallery.from_spec(bad)


@pytest.mark.parametrize("spec,points,dofs", [("elasticity3d:4", gallery.poisson3d27, 3),
                                              ("elasticity3d:3,dofs=2", gallery.poisson3d27, 2),
                                              ("dg3d:3,dofs=5", gallery.poisson3d, 5), ("dg3d:2", gallery.poisson3d, 16)])
def test_block_coupled_surrogates_are_the_point_matrix_kronecker_a_dense_spd_block(spec, points, dofs):
    """elasticity3d / dg3d: the point matrix (27-point, 7-point) Kronecker B = I/2 + J/(2 dofs),
    checked against scipy's kron; SPD (smallest eigenvalue positive), dofs x the point rows."""
    A = gallery.from_spec(spec)
    n = round((A.shape[0] / dofs) ** (1 / 3))
    B = 0.5 * np.eye(dofs) + 0.5 / dofs
    ref = sp.kron(points(n), B).tocsr()
    assert A.shape == ref.shape == (dofs * n ** 3,) * 2
    assert abs(A - ref).max() == 0
    assert np.linalg.eigvalsh(A.toarray()).min() > 0


def test_groundwater3d_is_spd_symmetric_and_spans_its_contrast():
    from commsolve.gallery import conductivity_field, groundwater3d

    A = gallery.from_spec("groundwater3d:10")
    assert A.shape == (1000, 1000) and abs(A - A.T).max() == 0
    np.linalg.cholesky(A.toarray())  # SPD: fails otherwise
    d = A.diagonal()
    off = abs(A).sum(axis=1).A1 - d
    top = np.arange(1000) // 100 == 9
    assert (d[~top] >= off[~top] * (1 - 1e-12)).all() and (d[top] > off[top]).all()  # the fixed head on top
    # each rank can build its own rows alone
    rows = np.arange(137, 611)
    assert abs(gallery.from_spec("groundwater3d:10", rows=rows) - A[rows]).max() == 0
    # log10 K within [-L, L], L = log10(contrast) / 2, covering most of it on a large grid
    g = conductivity_field(np.arange(48 ** 3), 48, contrast=1e10)
    assert g.min() >= -5 and g.max() <= 5 and np.quantile(g, 0.02) < -3 and np.quantile(g, 0.98) > 3
    # the field repeats every `tile` cells; seeds differ
    cells = np.arange(0, 20 ** 3, 7)
    x = cells % 20
    same = x + 8 < 20
    assert np.allclose(conductivity_field(cells[same], 20, tile=8), conductivity_field(cells[same] + 8, 20, tile=8),
                       rtol=0, atol=1e-9)
    assert not np.array_equal(conductivity_field(cells, 20, seed=1), conductivity_field(cells, 20, seed=2))
    # one face: the transmissibility is the harmonic mean of the two cells' conductivities
    K = 10.0 ** conductivity_field(np.array([0, 1]), 10)
    assert A[0, 1] == pytest.approx(-2 * K[0] * K[1] / (K[0] + K[1]), rel=1e-14)
    with pytest.raises(ValueError, match="contrast >= 1"):
        groundwater3d(4, contrast=0.5)
    with pytest.raises(ValueError, match="unknown parameter 'sigma' for groundwater3d"):
        gallery.from_spec("groundwater3d:8,sigma=2")
