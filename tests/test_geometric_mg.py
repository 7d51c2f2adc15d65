"""Geometric multigrid (issue 31, Nakajima's MGCG): cell-centred 2 x 2 x 2 aggregation on the
groundwater problem, checked by hand and against scipy: the coarse grids and operators are
P^T A P with P piecewise constant, the V-cycle is a symmetric positive definite
preconditioner (scipy's CG with it converges as ours does), and the answer solves A x = b."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from mpi4py import MPI

from commsolve import ParCSR, amg, gallery
from commsolve.amg.aggregation import geometric_aggregates


def test_aggregates_and_coarse_operators_by_hand():
    n = (5, 4, 3)  # odd extents: the last aggregates are thinner
    A = sp.csr_matrix(gallery.stencil_matrix(n, [(0, 0, 0), (1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1),
                                                 (0, 0, -1)], [6.5, -1, -1, -1, -1, -1, -1]))
    P = ParCSR.from_global(A, MPI.COMM_SELF)
    agg, coarse, roots, dims = geometric_aggregates(P, n)
    assert dims == (3, 2, 2) and coarse.global_size == 12 and roots.sum() == 12
    g = np.arange(60)
    x, y, z = g % 5, (g // 5) % 4, g // 20
    assert np.array_equal(agg, x // 2 + 3 * (y // 2) + 6 * (z // 2))
    ml = amg.solver(P, method="geometric", grid=n, max_coarse=1)
    Pm = sp.csr_matrix((np.ones(60), (g, agg)), shape=(60, 12))
    coarse_A = ml.levels[1].A.to_global(root=None)
    np.testing.assert_allclose(coarse_A.toarray(), (Pm.T @ A @ Pm).toarray(), rtol=1e-14, atol=1e-14)
    assert [lvl.rows for lvl in ml.levels] == [60, 12, 2, 1]


@pytest.mark.parametrize("spec", ["groundwater3d:16", "groundwater3d:12,contrast=1e4,seed=3"])
def test_mgcg_preconditioner_is_spd_and_solves(spec):
    A = sp.csr_matrix(gallery.from_spec(spec))
    n = round(A.shape[0] ** (1 / 3))
    ml = amg.solver(A, MPI.COMM_SELF, method="geometric", grid=(n, n, n), smoother="hybrid-gs", max_coarse=8)
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    x, info = ml.solve(b, tol=1e-8, accel="cg")
    assert info == 0 and np.linalg.norm(b - A @ x) <= 1.01e-8 * np.linalg.norm(b)  # NaN fails
    ours = ml.last_solve["iterations"]
    # the same V-cycle as scipy's preconditioner: SPD (CG converges) in about as many iterations
    M = spla.LinearOperator(A.shape, matvec=lambda r: ml.cycle(np.asarray(r).ravel()))
    count = []
    xs, flag = spla.cg(A, b, M=M, rtol=1e-8, maxiter=200, callback=lambda _: count.append(1))
    assert flag == 0 and np.linalg.norm(b - A @ xs) <= 1.01e-8 * np.linalg.norm(b)
    assert abs(len(count) - ours) <= 2 and ours < 60, (len(count), ours)
    v = np.random.default_rng(1).standard_normal(A.shape[0])
    w = np.random.default_rng(2).standard_normal(A.shape[0])
    assert abs(v @ ml.cycle(w) - w @ ml.cycle(v)) <= 1e-10 * abs(v @ ml.cycle(v))  # symmetric
    assert v @ ml.cycle(v) > 0


def test_geometric_needs_its_grid_and_a_contiguous_partition():
    A = sp.csr_matrix(gallery.from_spec("groundwater3d:6"))
    with pytest.raises(ValueError, match="grid=\\(nx, ny, nz\\) is what geometric multigrid needs"):
        amg.solver(A, MPI.COMM_SELF, method="geometric")
    with pytest.raises(ValueError, match="a 5 x 6 x 6 grid has 180 cells, the matrix 216 rows"):
        amg.solver(A, MPI.COMM_SELF, method="geometric", grid=(5, 6, 6))


@pytest.mark.parametrize("k", [2, 3])
def test_distributed_hierarchy_is_the_serial_one_and_solves(k):
    from conftest import json_lines, mpirun

    (r,) = json_lines(mpirun(k, "geometric_mg.py", k).stdout)
    assert r["levels"] == [1728, 216, 27, 8]
    assert max(r["operator_errors"]) <= 1e-13  # P^T A P of the aggregation's definition
    assert r["info"] == 0 and r["residual"] <= 1.01e-8 and r["iterations"] < 40
    assert "needs each rank's rows consecutive" in (r["partition_error"] or "")  # metis: out of global order


def test_over_correction_keeps_the_cycle_symmetric_and_cuts_iterations():
    A = sp.csr_matrix(gallery.from_spec("groundwater3d:32"))
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    v, w = np.random.default_rng(1).standard_normal((2, A.shape[0]))
    its = {}
    for corr in (1.0, 1.8):
        ml = amg.solver(A, MPI.COMM_SELF, method="geometric", grid=(32, 32, 32), max_coarse=8, correction=corr)
        x, info = ml.solve(b, tol=1e-8)
        assert info == 0 and np.linalg.norm(b - A @ x) <= 1.01e-8 * np.linalg.norm(b)
        assert abs(v @ ml.cycle(w) - w @ ml.cycle(v)) <= 1e-10 * abs(v @ ml.cycle(v))
        its[corr] = ml.last_solve["iterations"]
    assert its[1.8] < its[1.0], its
    with pytest.raises(ValueError, match="must lie in \\(0, 2\\), got 2"):
        amg.solver(A, MPI.COMM_SELF, method="geometric", grid=(32, 32, 32), correction=2)
