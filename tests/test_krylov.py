"""Krylov methods and scipy interop (issue 34), on one rank against scipy.sparse.linalg: the
same preconditioner (an AMG cycle, ``ml.aspreconditioner()``) gives scipy's CG the
iterations of ``ml.solve(accel="cg")``; commsolve's GMRES (left and right preconditioned),
BiCGStab and CG follow scipy's iterates or residual histories to rounding on a
nonsymmetric convection-diffusion matrix; ``ParCSR.aslinearoperator()`` and
``DistributedLU.aslinearoperator()`` are the matrix and its inverse; bad arguments are
clear errors. The same methods on 2 and 3 ranks: tests/mpi/krylov_cases.py."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from mpi4py import MPI

import commsolve as cs
from commsolve.krylov import DistributedOperator

COMM = MPI.COMM_WORLD


@pytest.fixture(scope="module")
def convdiff():
    """A convection-diffusion matrix (nonsymmetric), its ParCSR, an AMG cycle and b."""
    A = cs.ParCSR.from_spec("convdiff2d:40,pe=50", COMM)
    G = A.to_global()
    ml = cs.amg.solver(A)
    b = np.cos(np.arange(A.local_rows) * 0.37) + 1.0
    return A, G, ml, b


@pytest.mark.parametrize("spec,method", [("poisson2d:48", "classical"), ("poisson3d:14", "classical"),
                                         ("poisson2d:48", "sa")])
def test_scipy_cg_with_the_amg_preconditioner_takes_our_iterations(spec, method):
    A = cs.ParCSR.from_spec(spec, COMM)
    ml = cs.amg.solver(A, method=method)
    b = np.sin(np.arange(A.local_rows) * 0.1) + 0.5
    _, info = ml.solve(b, tol=1e-8, accel="cg")
    assert info == 0
    ours = ml.last_solve["iterations"]
    count = []
    x, info = spla.cg(A.to_global(), b, rtol=1e-8, M=ml.aspreconditioner(), callback=lambda xk: count.append(1))
    assert info == 0 and abs(len(count) - ours) <= 1, (len(count), ours)
    assert np.linalg.norm(b - A.to_global() @ x) <= 1.0001e-8 * np.linalg.norm(b)
    assert 3 <= ours <= 30


def test_mgcg_as_a_preconditioner():
    """The geometric multigrid of MGCG as scipy's M takes MGCG's own CG iterations (± 1)."""
    mg = cs.mg.MGCG("poisson3d:16", COMM)
    _, info = mg.solve(tol=1e-8)
    count = []
    G = mg.A.to_global()
    x, info_s = spla.cg(G, np.ones(G.shape[0]), rtol=1e-8, M=mg.aspreconditioner(), callback=lambda xk: count.append(1))
    assert info == info_s == 0 and abs(len(count) - mg.last_solve["iterations"]) <= 1, (len(count), mg.last_solve)
    assert np.linalg.norm(np.ones(G.shape[0]) - G @ x) <= 1.0001e-8 * np.sqrt(G.shape[0])


def history_gap(a, b):
    """The largest difference of two residual histories relative to the first residual:
    rounding is relative to it, so late entries near the tolerance differ relatively more."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and np.all(np.isfinite(a)) and np.all(np.isfinite(b)), (a, b)
    return float(np.max(np.abs(a - b)) / abs(b[0]))


def test_left_gmres_is_scipys_gmres(convdiff):
    """Left preconditioning minimizes ||M r||, as scipy's gmres: the estimates inside the
    cycle are scipy's pr_norm values (times ||b||) to rounding."""
    A, G, ml, b = convdiff
    assert abs(G - G.T).max() > 1e-3  # nonsymmetric
    M = ml.aspreconditioner()
    scipy_pr = []
    xs, info_s = spla.gmres(G, b, rtol=1e-10, restart=60, M=M, callback=scipy_pr.append, callback_type="pr_norm")
    ours = []
    x, info = cs.krylov.gmres(A, b, rtol=1e-10, restart=60, M=M, side="left", residuals=ours)
    assert info == 0 and info_s == 0
    bnorm = np.linalg.norm(b)
    # ours: ||M r0||, the estimates, then the true ||M r|| of the final x (scipy's last is an estimate);
    # the estimates agree to rounding relative to the first (entry by entry, to 1e-15 relative
    # until the last two, which lie near 1e-8 relative: there the rounding of MGS shows)
    assert len(ours) == len(scipy_pr) + 1 and 5 <= len(scipy_pr) <= 40
    assert history_gap(np.array(ours[1:-1]) / bnorm, scipy_pr[:-1]) <= 1e-14
    assert abs(ours[-1] / bnorm - scipy_pr[-1]) <= 1e-3 * scipy_pr[-1]
    assert np.linalg.norm(x - xs) <= 1e-8 * np.linalg.norm(xs)
    assert np.linalg.norm(b - G @ x) <= 1e-10 * bnorm


@pytest.mark.parametrize("restart", [3, 7])
def test_restarted_left_gmres_has_scipys_iterates(convdiff, restart):
    """With restarts too: scipy adapts each cycle's goal (gh-8400) and so does side="left";
    the iterate at the end of every cycle is scipy's."""
    A, G, ml, b = convdiff
    M = ml.aspreconditioner()
    mine, scipys = [], []
    x, info = cs.krylov.gmres(A, b, rtol=1e-10, restart=restart, M=M, side="left",
                              callback=lambda xk: mine.append(xk.copy()))
    xs, info_s = spla.gmres(G, b, rtol=1e-10, restart=restart, M=M, callback=lambda xk: scipys.append(xk.copy()),
                            callback_type="x")
    assert info == 0 and info_s == 0 and len(mine) == len(scipys) >= 2, (len(mine), len(scipys))
    for k, (u, v) in enumerate(zip(mine, scipys)):
        assert np.linalg.norm(u - v) <= 1e-9 * np.linalg.norm(v), k


def test_right_gmres_is_scipys_gmres_on_a_times_m(convdiff):
    """Right preconditioning is GMRES on A M (x = M y): scipy's gmres on the operator A M,
    unpreconditioned, has the same residual history (the true residual's)."""
    A, G, ml, b = convdiff
    M = ml.aspreconditioner()
    AM = spla.LinearOperator(G.shape, matvec=lambda v: G @ M.matvec(v), dtype=np.float64)
    scipy_pr = []
    y, _ = spla.gmres(AM, b, rtol=1e-10, restart=60, callback=scipy_pr.append, callback_type="pr_norm")
    ours = []
    x, info = cs.krylov.gmres(A, b, rtol=1e-10, restart=60, M=M, residuals=ours)
    assert info == 0 and len(ours) == len(scipy_pr) + 1
    bnorm = np.linalg.norm(b)
    assert history_gap(np.array(ours[1:-1]) / bnorm, scipy_pr[:-1]) <= 1e-14
    assert abs(ours[-1] - np.linalg.norm(b - G @ x)) <= 1e-15 * bnorm  # the last entry: the true residual
    assert np.linalg.norm(x - M.matvec(y)) <= 1e-8 * np.linalg.norm(x)


def test_restarted_gmres_reaches_the_tolerance(convdiff):
    A, G, ml, b = convdiff
    for side in ("right", "left"):
        x, info = cs.krylov.gmres(A, b, rtol=1e-9, restart=4, M=ml.aspreconditioner(), side=side)
        assert info == 0 and np.linalg.norm(b - G @ x) <= 1e-9 * np.linalg.norm(b), side
    # restarting without a preconditioner on this 1,600-row problem: 30 vectors are not enough in 40
    x, info = cs.krylov.gmres(A, b, rtol=1e-9, restart=30, maxiter=40)
    assert info == 40 and np.linalg.norm(b - G @ x) > 1e-9 * np.linalg.norm(b)


@pytest.mark.parametrize("ours,theirs", [(cs.krylov.bicgstab, spla.bicgstab), (cs.krylov.cg, spla.cg)],
                         ids=["bicgstab", "cg"])
def test_iterates_are_scipys(ours, theirs, convdiff):
    """BiCGStab on the nonsymmetric matrix, CG on a symmetric one: every iterate equals
    scipy's with the same preconditioner, to rounding."""
    A, G, ml, b = convdiff
    if ours is cs.krylov.cg:
        A = cs.ParCSR.from_spec("poisson2d:40", COMM)
        G, ml = A.to_global(), cs.amg.solver(A)
    M = ml.aspreconditioner()
    mine, scipys, residuals = [], [], []
    x, info = ours(A, b, rtol=1e-10, M=M, callback=lambda xk: mine.append(xk.copy()), residuals=residuals)
    xs, info_s = theirs(G, b, rtol=1e-10, M=M, callback=lambda xk: scipys.append(xk.copy()))
    assert info == 0 and info_s == 0
    assert len(mine) == len(scipys) == len(residuals) - 1 and 3 <= len(mine) <= 30
    for k, (u, v) in enumerate(zip(mine, scipys)):
        assert np.linalg.norm(u - v) <= 1e-9 * np.linalg.norm(v), k
    # the residuals it reports are those of its iterates (recurrences, so to rounding)
    for xk, rk in zip(mine, residuals[1:]):
        assert abs(np.linalg.norm(b - G @ xk) - rk) <= 1e-9 * np.linalg.norm(b)
    assert np.linalg.norm(b - G @ x) <= 1.001e-10 * np.linalg.norm(b)


def test_amg_solve_with_bicgstab(convdiff):
    A, G, ml, b = convdiff
    x, info = ml.solve(b, tol=1e-8, accel="bicgstab")
    assert info == 0 and np.linalg.norm(b - G @ x) <= 1e-8 * np.linalg.norm(b)
    history = ml.last_solve["residuals"]
    assert len(history) == ml.last_solve["iterations"] + 1 >= 3 and history[-1] <= 1e-8 * np.linalg.norm(b)
    assert ml.last_solve["accel"] == "bicgstab" and not ml.last_solve["warnings"]


def test_parcsr_as_a_linear_operator():
    A = cs.ParCSR.from_spec("convdiff2d:12", COMM)
    G = A.to_global()
    op = A.aslinearoperator()
    assert isinstance(op, spla.LinearOperator) and op.shape == G.shape and op.comm is COMM
    v = np.arange(G.shape[0], dtype=float) % 7 - 3
    assert np.linalg.norm(op @ v - G @ v) <= 1e-14 * np.linalg.norm(G @ v)
    assert np.linalg.norm(op.rmatvec(v) - G.T @ v) <= 1e-14 * np.linalg.norm(G.T @ v)
    x, info = spla.gmres(op, v, rtol=1e-10, restart=200)  # scipy runs on it as on the matrix
    assert info == 0 and np.linalg.norm(v - G @ x) <= 1e-10 * np.linalg.norm(v)
    assert "144 x 144 on 1 rank(s)" in repr(op)


def test_lu_as_the_inverse():
    G = cs.gallery.convdiff2d(14, pe=200.0)
    lu = cs.direct.factor(G, COMM)
    Minv = lu.aslinearoperator()
    b = np.linspace(1.0, 2.0, G.shape[0])
    assert np.linalg.norm(Minv @ b - spla.spsolve(G.tocsc(), b)) <= 1e-12 * np.linalg.norm(spla.spsolve(G.tocsc(), b))
    count = []
    x, info = spla.gmres(G, b, rtol=1e-12, M=Minv, callback=count.append, callback_type="pr_norm")
    assert info == 0 and len(count) <= 2  # an exact preconditioner: one step, perhaps one for rounding
    x, info = cs.krylov.bicgstab(G, b, rtol=1e-12, M=Minv)
    assert info == 0 and np.linalg.norm(b - G @ x) <= 1e-12 * np.linalg.norm(b)
    with pytest.raises(NotImplementedError, match="no transpose"):
        Minv.rmatvec(b)


def test_scipy_objects_and_callables_on_one_rank():
    G = cs.gallery.poisson2d(20)
    b = np.ones(G.shape[0])
    d = G.diagonal()
    for M in (sp.diags(1.0 / d), lambda r: r / d, spla.aslinearoperator(sp.diags(1.0 / d))):
        x, info = cs.krylov.cg(G, b, rtol=1e-10, M=M)
        assert info == 0 and np.linalg.norm(b - G @ x) <= 1e-10 * np.linalg.norm(b)
    x, info = cs.krylov.cg(G, np.zeros_like(b))
    assert info == 0 and not x.any()


@pytest.mark.parametrize("call,message", [
    (lambda A, b, ml: cs.krylov.cg(A, b[:-1]), "b must hold this rank's 400 rows"),
    (lambda A, b, ml: cs.krylov.cg(A, b * np.nan), "non-finite"),
    (lambda A, b, ml: cs.krylov.gmres(A, b, side="middle"), "side must be one of right, left"),
    (lambda A, b, ml: cs.krylov.gmres(A, b, restart=0), "restart must be an integer >= 1"),
    (lambda A, b, ml: cs.krylov.bicgstab(A, b, rtol=-1.0), "rtol and atol must be finite"),
    (lambda A, b, ml: cs.krylov.cg(A, b, maxiter=2.5), "maxiter must be an integer"),
    (lambda A, b, ml: cs.krylov.cg(A, b, M=ml), "pass ml.aspreconditioner()"),
    (lambda A, b, ml: cs.krylov.cg(A, b, M=sp.eye(3)), r"M must act on this rank's 400 rows"),
    (lambda A, b, ml: cs.krylov.cg(A, b, x0=np.ones(3)), "x0 must hold this rank's 400 rows"),
    (lambda A, b, ml: cs.krylov.cg(sp.random(400, 300, format="csr"), b), "A must be square"),
    (lambda A, b, ml: ml.aspreconditioner(cycle="F"), "unknown cycle 'F'"),
    (lambda A, b, ml: ml.solve(b, accel="qmr"), "'bicgstab'"),
    (lambda A, b, ml: ml.solve(b, x0=np.ones(3)), "x0 must hold this rank's 400 rows"),
    (lambda A, b, ml: ml.solve(b, x0=b * np.inf), "x0 holds non-finite values"),
    (lambda A, b, ml: cs.krylov.cg(A, b + 1j), "b is complex"),
    (lambda A, b, ml: cs.krylov.gmres(A, ["a"] * 400), "could not convert|b must"),
])
def test_bad_arguments_are_clear_errors(call, message):
    A = cs.ParCSR.from_spec("poisson2d:20", COMM)
    ml = cs.amg.solver(A)
    with pytest.raises(ValueError, match=message):
        call(A, np.ones(A.local_rows), ml)


def test_edge_cases_behave_as_scipy():
    G = cs.gallery.convdiff2d(10)
    b = np.ones(G.shape[0])
    for method in (cs.krylov.cg, cs.krylov.gmres, cs.krylov.bicgstab):  # b = 0: x = 0 at once, whatever x0
        x, info = method(G, np.zeros_like(b), x0=np.ones_like(b))
        assert info == 0 and not x.any(), method
    x, info = cs.krylov.gmres(G, b, maxiter=0)  # no iteration allowed, not converged: info is not 0
    assert info != 0 and not x.any()
    # a singular preconditioner (here M = 0) gives no progress and a nonzero info, not a LinAlgError
    x, info = cs.krylov.gmres(G, b, maxiter=6, M=lambda r: 0 * r)
    assert info != 0 and np.isfinite(x).all()


def test_breakdown_and_indefinite_matrices_are_reported():
    G = sp.diags([1.0, -1.0] * 50).tocsr()  # symmetric indefinite: CG breaks down
    with pytest.raises(cs.CollectiveError, match="CG broke down"):
        cs.krylov.cg(G, np.ones(100))
    # a rotation: r~^T A r = 0 for r = e1 + e2 ... BiCGStab's r~^T A M p vanishes at once
    R = sp.csr_matrix(np.array([[0.0, 1.0], [-1.0, 0.0]]))
    with pytest.raises(cs.CollectiveError, match="BiCGStab broke down"):
        cs.krylov.bicgstab(R, np.array([1.0, 1.0]))


def test_distributed_operator_without_a_transpose():
    op = DistributedOperator(COMM, (3, 3), lambda v: 2 * v, name="twice")
    assert np.allclose(op @ np.ones(3), 2.0)
    with pytest.raises(NotImplementedError, match="twice has no transpose product"):
        op.rmatvec(np.ones(3))


@pytest.mark.parametrize("k", [2, 3])
def test_krylov_methods_on_more_ranks(mpi_cache, k):
    """On 2 and 3 ranks, with the AMG cycle of those ranks: each method's residual history is
    scipy's (run redundantly on every rank on the gathered vectors, the distributed A and M
    applied through a gather), and the true residual of x meets the tolerance."""
    results = {r["method"]: r for r in mpi_cache("krylov_cases.py", k)}
    assert set(results) == {"cg", "gmres-left", "gmres-right", "bicgstab", "aslinearoperator", "errors"}
    # bad arguments on one rank are errors on every rank, each naming the rank at fault
    every = results.pop("errors")["caught"]
    assert every == [{"distribution": True, "x0 krylov": True, "x0 amg": True}] * k, every
    for name, r in results.items():
        assert r["ranks"] == k and r["info"] == 0, r
        assert r["true_residual"] <= r["rtol"] * 1.001, r
        if name == "aslinearoperator":  # the LU's inverse as M: exact up to rounding
            assert 1 <= r["iterations"] <= 2, r
        else:
            assert r["history_gap"] <= 1e-7 and 3 <= r["iterations"] <= 60, r
