"""Krylov methods on distributed vectors, and the operators they take.

Each rank holds its rows of the vectors; a dot product is one ``MPI_Allreduce``, and the
methods fuse the products that the algorithm computes from the same vectors into one (per
iteration: CG three reductions, BiCGStab four, GMRES one per Krylov vector so far, plus one).

- :func:`cg` (preconditioned conjugate gradients, symmetric positive definite A),
  :func:`gmres` (restarted GMRES, right or left preconditioned) and :func:`bicgstab`
  (van der Vorst's BiCGStab) for nonsymmetric A. Their signatures are scipy's
  (``x, info = cg(A, b, x0, rtol=, atol=, maxiter=, M=, callback=)``, stopping at
  ``||b - A x|| <= max(rtol ||b||, atol)``) with two differences: GMRES's ``maxiter`` counts
  Krylov vectors, not restart cycles, and its default is right preconditioning (the true
  residual is the one minimized; ``side="left"`` is scipy's). ``residuals=[]`` collects the
  residual norm of every iterate.
- ``A`` and ``M``: a :class:`~commsolve.ParCSR`, a :class:`DistributedOperator` (what
  ``ParCSR.aslinearoperator()``, ``MultilevelSolver.aspreconditioner()`` and
  ``DistributedLU.aslinearoperator()`` return), or, on one rank, anything scipy takes (a
  sparse matrix, an array, a ``LinearOperator``, a callable for ``M``). A
  :class:`DistributedOperator` is a scipy ``LinearOperator`` on this rank's part of the
  vectors, so on one rank ``scipy.sparse.linalg.cg(A, b, M=ml.aspreconditioner())`` runs
  as it does with pyamg; on more ranks scipy's dot products would be local, and these
  functions are the ones to call.

The iteration kernels (:func:`pcg_iterate`, :func:`gmres_iterate`, :func:`bicgstab_iterate`)
work in place on x with a ``precondition(r, out)`` function; the AMG and MGCG solvers call
them directly.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse.linalg as spla

from ._collective import CollectiveError, agree, agree_args, mpi

__all__ = ["cg", "gmres", "bicgstab", "DistributedOperator", "dot", "dots", "local_vector", "pcg_iterate",
           "gmres_iterate", "bicgstab_iterate", "GMRES_SIDES"]

GMRES_SIDES = ("right", "left")
GMRES_RESTART = 20  # scipy's default


def dot(comm, u, v):
    """Collective. The global dot product of two distributed vectors.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm or None
        The communicator (None: this process alone).
    u, v : ndarray
        This rank's parts of the two vectors.

    Returns
    -------
    float
        ``u^T v`` over all ranks (one ``MPI_Allreduce``).
    """
    return float(dots(comm, (u, v))[0])


def dots(comm, *pairs):
    """Collective. The global dot products of several pairs of distributed vectors in one
    reduction: ``dots(comm, (r, r), (rt, r))`` gives an array of two.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm or None
        The communicator (None: this process alone).
    *pairs : tuple of ndarray
        ``(u, v)`` pairs of this rank's parts.

    Returns
    -------
    ndarray
        One global ``u^T v`` per pair.
    """
    local = np.array([np.dot(u, v) for u, v in pairs])
    if comm is None or comm.size == 1:
        return local
    out = np.empty_like(local)
    comm.Allreduce(local, out, op=mpi().SUM)
    return out


def _axpy(a, x, y):
    """y += a x in place (BLAS daxpy: no temporary; scipy's wrapper refuses empty vectors,
    which a rank without rows holds)."""
    if x.size:
        scipy.linalg.blas.daxpy(x, y, a=a)


class DistributedOperator(spla.LinearOperator):
    """A scipy ``LinearOperator`` on this rank's part of distributed vectors: ``shape`` is
    (this rank's rows, this rank's columns), ``matvec`` (and ``rmatvec`` where given) is
    collective, ``comm`` the communicator every rank calls it on.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        The communicator the operator's vectors are distributed over.
    shape : tuple of int
        This rank's (rows, columns).
    matvec : callable
        ``matvec(x) -> y`` on this rank's parts; collective.
    rmatvec : callable, optional
        The transpose's product, collective; without it ``rmatvec`` raises.
    global_shape : tuple of int, optional
        The whole operator's shape (for ``repr`` and :attr:`global_shape`).
    name : str
        What the operator is, for ``repr``.
    rows, cols : array_like of int, optional
        The global indices of the entries this rank holds of ``matvec``'s result and of its
        argument, in local order: :func:`cg`, :func:`gmres` and :func:`bicgstab` check that a
        preconditioner's agree with the matrix's (a vector distributed otherwise would be
        read in the wrong order, silently).

    Notes
    -----
    On one rank the local shape is the global one, and scipy's solvers use the operator as
    they would any other. On more ranks pass it to :func:`cg`, :func:`gmres` or
    :func:`bicgstab`, whose dot products are global.
    """

    def __init__(self, comm, shape, matvec, rmatvec=None, *, global_shape=None, name="operator", rows=None,
                 cols=None):
        super().__init__(dtype=np.float64, shape=tuple(int(s) for s in shape))
        self.comm = comm
        self.rows = None if rows is None else np.asarray(rows, dtype=np.int64)
        self.cols = None if cols is None else np.asarray(cols, dtype=np.int64)
        self.global_shape = tuple(global_shape) if global_shape is not None else self.shape
        self.name = name
        self._apply, self._apply_t = matvec, rmatvec

    def _matvec(self, x):
        return np.asarray(self._apply(np.ascontiguousarray(np.ravel(x), dtype=np.float64)))

    def _rmatvec(self, x):
        if self._apply_t is None:
            raise NotImplementedError(f"{self.name} has no transpose product")
        return np.asarray(self._apply_t(np.ascontiguousarray(np.ravel(x), dtype=np.float64)))

    def __repr__(self):
        ranks = 1 if self.comm is None else self.comm.size
        return (f"<DistributedOperator {self.name}: {self.global_shape[0]:,} x {self.global_shape[1]:,} "
                f"on {ranks} rank(s), {self.shape[0]:,} local rows>")


def _as_operator(A, what):
    """(comm, local rows, local columns, ``apply(x, out)``, (row ids, column ids)) of a
    ParCSR, a DistributedOperator, or a serial scipy matrix / array / LinearOperator; the ids
    (the global indices this rank holds of the result and of the argument) are None where the
    operator does not say."""
    comm = getattr(A, "comm", None)
    if hasattr(A, "matvec") and hasattr(A, "local_rows"):  # a ParCSR
        return (comm, A.local_rows, A.local_cols, lambda x, out: A.matvec(x, out=out),
                (A.owned_rows(), A.owned_cols()))
    if isinstance(A, spla.LinearOperator) or hasattr(A, "shape"):
        op = spla.aslinearoperator(A)
        if len(op.shape) != 2:
            raise ValueError(f"{what} must be 2-dimensional, got shape {op.shape}")

        def apply(x, out):
            out[:] = np.ravel(op.matvec(x))
            return out
        ids = (A.rows, A.cols) if isinstance(A, DistributedOperator) else (None, None)
        return comm, op.shape[0], op.shape[1], apply, ids
    hint = " (an AMG solver: pass ml.aspreconditioner())" if hasattr(A, "aspreconditioner") else ""
    raise TypeError(f"{what} must be a ParCSR, a DistributedOperator, a scipy matrix or LinearOperator, "
                    f"got {type(A).__name__}{hint}")


def _preconditioner(M, n, ids):
    """``precondition(r, out)`` of M (None: the identity), checked against the n rows (global
    indices ``ids``, if known) this rank holds of A's vectors."""
    if M is None:
        def identity(r, out):
            out[:] = r
            return out
        return identity
    if callable(M) and not isinstance(M, spla.LinearOperator) and not hasattr(M, "shape"):
        def call(r, out):
            out[:] = np.ravel(M(r))
            return out
        return call
    _, rows, cols, apply, (m_rows, m_cols) = _as_operator(M, "M")
    if (rows, cols) != (n, n):
        raise ValueError(f"M must act on this rank's {n} rows (shape ({n}, {n})), got ({rows}, {cols})")
    if ids is not None and any(m is not None and not np.array_equal(m, ids) for m in (m_rows, m_cols)):
        raise ValueError("M's vectors are distributed differently from A's on this rank (other global rows, or "
                         "another order): build M on A's row distribution (for an LU: factor(A, comm, "
                         "distribution=A.row_dist))")
    return apply


def local_vector(v, n, what):
    """Local. This rank's part of a real distributed vector, checked: what every solver does
    with the ``b`` and ``x0`` it is given (before agreeing on errors with the other ranks).

    Parameters
    ----------
    v : array_like
        The values: shape ``(n,)``, or ``(n, 1)`` / ``(1, n)``.
    n : int
        The rows this rank holds.
    what : str
        The argument's name, for the error.

    Returns
    -------
    ndarray
        A new float64 array of shape ``(n,)``.

    Raises
    ------
    ValueError
        For complex values, another shape, or non-finite values.
    """
    v = np.asarray(v)
    if np.iscomplexobj(v):
        raise ValueError(f"{what} is complex: these methods are for real systems")
    if v.ndim == 2 and 1 in v.shape:
        v = v.ravel()
    if v.shape != (n,):
        raise ValueError(f"{what} must hold this rank's {n} rows, got shape {v.shape}")
    v = np.array(v, dtype=np.float64)
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{what} holds non-finite values")
    return v


class _Setup:
    """What a method starts from, checked on every rank together: ``comm``, ``A`` (for the
    iteration kernels), ``precondition``, ``b``, ``x``, ``bnorm``, ``target``, ``maxiter``."""

    def __init__(self, name, A, b, x0, rtol, atol, maxiter, M, comm, **more):
        error = apply = None
        try:
            comm_a, rows, cols, apply, (row_ids, col_ids) = _as_operator(A, "A")
        except (ValueError, TypeError) as e:
            comm_a, rows, error = None, 0, str(e)
        comm = comm_a if comm_a is not None else comm
        self.comm = comm = mpi().COMM_SELF if comm is None else comm
        agree_args(comm, name, rtol=rtol, atol=atol, maxiter=maxiter, x0_given=x0 is not None, M_given=M is not None,
                   **more)
        try:
            if error:
                raise ValueError(error)
            if rows != cols:
                raise ValueError(f"A must be square: this rank holds {rows} rows and {cols} columns")
            if row_ids is not None and col_ids is not None and not np.array_equal(row_ids, col_ids):
                raise ValueError("A's rows and columns are distributed differently on this rank: x and b must hold "
                                 "the same global entries in the same order")
            if not (np.isfinite(rtol) and rtol >= 0 and np.isfinite(atol) and atol >= 0):
                raise ValueError(f"rtol and atol must be finite and >= 0, got rtol={rtol!r}, atol={atol!r}")
            if maxiter is not None and (int(maxiter) != maxiter or maxiter < 0):
                raise ValueError(f"maxiter must be an integer >= 0, got {maxiter!r}")
            self.b = local_vector(b, rows, "b")
            self.x = np.zeros(rows) if x0 is None else local_vector(x0, rows, "x0")
            self.precondition = _preconditioner(M, rows, row_ids)
        except (ValueError, TypeError) as e:
            error = str(e)
        agree(comm, error, where=name)
        self.A = _Operator(comm, apply)
        n = comm.allreduce(rows, op=mpi().SUM)
        self.bnorm = np.sqrt(dot(comm, self.b, self.b))
        self.target = max(rtol * self.bnorm, atol)
        self.maxiter = 10 * n if maxiter is None else int(maxiter)


class _Operator:
    """A (distributed) A as the iteration kernels use it: ``A.comm``, ``A.matvec(x, out=)``."""

    def __init__(self, comm, apply):
        self.comm, self._apply = comm, apply

    def matvec(self, x, out=None):
        return self._apply(x, np.empty_like(x) if out is None else out)


def cg(A, b, x0=None, *, rtol=1e-5, atol=0.0, maxiter=None, M=None, callback=None, residuals=None, comm=None):
    """Collective. Preconditioned conjugate gradients for a symmetric positive definite A.

    Parameters
    ----------
    A : ParCSR, DistributedOperator, or (one rank) a scipy matrix or LinearOperator
        The matrix; its ``comm`` is the communicator (else ``comm``, else ``COMM_SELF``).
    b : ndarray
        This rank's rows of the right-hand side.
    x0 : ndarray, optional
        This rank's rows of the initial guess (zero by default).
    rtol, atol : float
        Stop when ``||b - A x|| <= max(rtol ||b||, atol)`` (the recurrence's residual).
    maxiter : int, optional
        At most this many iterations (default: 10 x the global size, as scipy).
    M : ParCSR, DistributedOperator, LinearOperator, matrix or callable, optional
        The preconditioner, an approximation of A^-1, symmetric positive definite.
    callback : callable, optional
        ``callback(xk)`` after every iteration, with this rank's rows of the iterate.
    residuals : list, optional
        Gets ||r|| of the initial guess and of every iterate appended.
    comm : mpi4py.MPI.Comm, optional
        The communicator, when A does not carry one.

    Returns
    -------
    x : ndarray
        This rank's rows of the solution.
    info : int
        0 when converged, else the iterations done (x is then not to be trusted).

    Raises
    ------
    CollectiveError
        On every rank, for bad arguments on any rank, a non-finite residual, or when A or
        M is found not positive definite.

    Examples
    --------
    >>> import numpy as np, commsolve as cs
    >>> from mpi4py import MPI
    >>> A = cs.ParCSR.from_spec("poisson2d:16", MPI.COMM_WORLD)
    >>> ml = cs.amg.solver(A)
    >>> x, info = cs.krylov.cg(A, np.ones(A.local_rows), rtol=1e-8, M=ml.aspreconditioner())
    """
    s = _Setup("krylov.cg", A, b, x0, rtol, atol, maxiter, M, comm)
    if s.bnorm == 0:  # as scipy: b = 0 has the solution x = 0, whatever x0
        return np.zeros_like(s.b), 0
    history = [] if residuals is None else residuals
    its = pcg_iterate(s.A, s.precondition, s.b, s.x, s.target, s.maxiter, history, callback=callback)
    return s.x, (0 if history[-1] <= s.target else max(its, 1))


def gmres(A, b, x0=None, *, rtol=1e-5, atol=0.0, restart=GMRES_RESTART, maxiter=None, M=None, side="right",
          callback=None, residuals=None, comm=None):
    """Collective. Restarted GMRES(``restart``) for a general (nonsymmetric) A.

    Parameters
    ----------
    A, b, x0, rtol, atol, M, comm
        As :func:`cg` (M need not be symmetric).
    restart : int
        Krylov vectors kept before a restart (scipy's default, 20).
    maxiter : int, optional
        At most this many iterations, counted one per Krylov vector (scipy counts restart
        cycles; default 10 x the global size).
    side : {"right", "left"}
        ``"right"``: minimizes ``||b - A x||`` over the Krylov space of A M, so the residual
        it monitors is the true one. ``"left"``: minimizes ``||M (b - A x)||`` over that of
        M A, as scipy's ``gmres`` does, with scipy's goal for each cycle (``||M b|| rtol``
        at first, then tightened after a cycle that reached it without convergence, loosened
        after one that did not), convergence judged on the true residual: the same iterates
        as scipy's to rounding, restarts included.
    callback : callable, optional
        ``callback(xk)`` at the end of every cycle (scipy's ``callback_type="x"``).
    residuals : list, optional
        Gets the minimized norm of every iterate appended: the true residual at each
        (re)start and the rotations' estimate inside a cycle (``side="left"``: the
        preconditioned residual's).

    Returns
    -------
    x, info
        As :func:`cg`.
    """
    s = _Setup("krylov.gmres", A, b, x0, rtol, atol, maxiter, M, comm, restart=restart, side=side)
    error = None
    if side not in GMRES_SIDES:
        error = f"side must be one of {', '.join(GMRES_SIDES)}, got {side!r}"
    elif int(restart) != restart or restart < 1:
        error = f"restart must be an integer >= 1, got {restart!r}"
    agree(s.comm, error, where="krylov.gmres")
    if s.bnorm == 0:  # as scipy: b = 0 has the solution x = 0, whatever x0
        return np.zeros_like(s.b), 0
    history = [] if residuals is None else residuals
    true_residual = []
    its = gmres_iterate(s.A, s.precondition, s.b, s.x, s.target, s.maxiter, history, int(restart), side, callback,
                        true_residual)
    return s.x, (0 if true_residual[-1] <= s.target else max(its, 1))


def bicgstab(A, b, x0=None, *, rtol=1e-5, atol=0.0, maxiter=None, M=None, callback=None, residuals=None, comm=None):
    """Collective. BiCGStab (van der Vorst 1992) for a general (nonsymmetric) A: two
    products with A and two with M per iteration, short recurrences (no restart), four
    reductions per iteration (two of them fused pairs).

    Parameters
    ----------
    A, b, x0, rtol, atol, maxiter, M, comm
        As :func:`cg` (M need not be symmetric).
    callback : callable, optional
        ``callback(xk)`` after every iteration.
    residuals : list, optional
        Gets ||r|| of the initial guess and of every iterate appended.

    Returns
    -------
    x, info
        As :func:`cg`.

    Raises
    ------
    CollectiveError
        As :func:`cg`, and on a breakdown (r~^T r = 0, r~^T A M p = 0, or omega = 0 before
        convergence).
    """
    s = _Setup("krylov.bicgstab", A, b, x0, rtol, atol, maxiter, M, comm)
    if s.bnorm == 0:  # as scipy: b = 0 has the solution x = 0, whatever x0
        return np.zeros_like(s.b), 0
    history = [] if residuals is None else residuals
    its = bicgstab_iterate(s.A, s.precondition, s.b, s.x, s.target, s.maxiter, history, callback)
    return s.x, (0 if history[-1] <= s.target else max(its, 1))


def pcg_iterate(A, precondition, b, x, target, maxiter, history, stop=None, callback=None):
    """Collective. Preconditioned CG on the distributed A from x, in place (the kernel of
    :func:`cg` and of the AMG and MGCG solves; vectors updated by BLAS axpy).

    Parameters
    ----------
    A : ParCSR or object with ``comm`` and ``matvec(x, out=)``
        The matrix, symmetric positive definite.
    precondition : callable
        ``precondition(r, out)`` writes ``M r`` into ``out``.
    b : ndarray
        This rank's rows of the right-hand side.
    x : ndarray
        This rank's rows of the initial guess; overwritten by the iterates.
    target : float
        Stop when ``||r|| <= target``.
    maxiter : int
        At most this many iterations.
    history : list
        Gets ``||r||`` of the initial guess and of every iterate appended.
    stop : callable, optional
        ``stop(iteration, history, x)``, called after each iteration that has not
        converged: True stops the iteration.
    callback : callable, optional
        ``callback(x)`` after each iteration.

    Returns
    -------
    int
        The iterations done.

    Raises
    ------
    CollectiveError
        On every rank (the tests read allreduced values): a non-finite residual, or A or
        the preconditioner found not positive definite.
    """
    comm = A.comm
    r = b - A.matvec(x)
    history.append(np.sqrt(dot(comm, r, r)))
    if history[-1] <= target:
        return 0
    z, q = np.empty_like(r), np.empty_like(r)
    precondition(r, z)
    p = z.copy()
    rz = dot(comm, r, z)
    for it in range(1, maxiter + 1):
        if abs(rz) < np.finfo(float).tiny:  # M r = 0, or r^T M r underflowed (a target below rounding):
            return it - 1                      # nothing left to reduce; p^T A p would underflow too
        A.matvec(p, out=q)
        pq = dot(comm, p, q)
        if not (np.isfinite(pq) and pq > 0 and np.isfinite(rz) and rz > 0):
            raise CollectiveError(f"CG broke down at iteration {it}: p^T A p = {pq:.3g}, r^T M r = {rz:.3g} "
                                  "(the matrix or the preconditioner is not symmetric positive definite)")
        alpha = rz / pq
        _axpy(alpha, p, x)
        _axpy(-alpha, q, r)
        history.append(np.sqrt(dot(comm, r, r)))
        if not np.isfinite(history[-1]):
            raise CollectiveError(f"CG residual is not finite at iteration {it}")
        if callback is not None:
            callback(x)
        if history[-1] <= target or (stop is not None and stop(it, history, x)):
            return it
        precondition(r, z)
        rz_new = dot(comm, r, z)
        p *= rz_new / rz
        p += z
        rz = rz_new
    return maxiter


def gmres_iterate(A, precondition, b, x, target, maxiter, history, restart=30, side="right", callback=None,
                  true_residual=None):
    """Collective. Restarted GMRES(``restart``) on the distributed A from x, in place (the
    kernel of :func:`gmres` and of the AMG solve's ``accel="gmres"``). Modified
    Gram-Schmidt, Givens rotations.

    Parameters
    ----------
    A : ParCSR or object with ``comm`` and ``matvec(x, out=)``
        The matrix.
    precondition : callable
        ``precondition(r, out)`` writes ``M r`` into ``out``.
    b : ndarray
        This rank's rows of the right-hand side.
    x : ndarray
        This rank's rows of the initial guess; overwritten by the solution.
    target : float
        Stop when the true ``||r|| <= target`` at a (re)start.
    maxiter : int
        At most this many Krylov vectors in all.
    history : list
        Gets the minimized norm of every iterate appended: the rotations' value inside a
        cycle, the true one (preconditioned, on the left) at each restart and at the end.
    restart : int
        Krylov vectors per cycle.
    side : {"right", "left"}
        Right: minimizes ``||b - A x||`` over the Krylov space of ``A M``; left: minimizes
        ``||M (b - A x)||`` over that of ``M A``, with scipy's goal for each cycle (see
        :func:`gmres`).
    callback : callable, optional
        ``callback(x)`` after each cycle.
    true_residual : list, optional
        Gets the true ``||r||`` of each (re)start appended.

    Returns
    -------
    int
        The iterations (Krylov vectors) done.

    Raises
    ------
    CollectiveError
        On a non-finite residual.
    """
    comm = A.comm
    left = side == "left"
    its = 0
    true_residual = [] if true_residual is None else true_residual
    z = np.empty_like(b)
    inner = target  # each cycle's goal for the norm it minimizes
    if left:  # scipy's: ||M b|| target / ||b||, then adapted after each cycle (gh-8400)
        precondition(b, z)
        bnorm, factor = np.sqrt(dot(comm, b, b)), 1.0
        inner = np.sqrt(dot(comm, z, z)) * min(1.0, target / bnorm) if bnorm > 0 else 0.0
    presid, exact = None, False
    while True:
        r = b - A.matvec(x)
        rnorm = np.sqrt(dot(comm, r, r))
        true_residual.append(rnorm)
        if left:
            precondition(r, z)
            r = z.copy()
        beta = np.sqrt(dot(comm, r, r)) if left else rnorm
        history.append(beta)
        if not (np.isfinite(beta) and np.isfinite(rnorm)):
            raise CollectiveError(f"GMRES residual is not finite at iteration {its}")
        if rnorm <= target or its >= maxiter or beta == 0 or exact:  # exact: rounding keeps it from the target
            return its
        if left and presid is not None:  # the last cycle reached its goal (tighten it) or not (loosen it)
            factor = max(np.finfo(float).eps, 0.25 * factor) if presid <= inner else min(1.0, 1.5 * factor)
            inner = presid * min(factor, target / rnorm)
        m = min(restart, maxiter - its)
        V, Z = [r / beta], []
        H = np.zeros((m + 1, m))
        cs, sn, g = np.zeros(m), np.zeros(m), np.zeros(m + 1)
        g[0] = beta
        for k in range(m):
            if left:
                w = A.matvec(V[k])
                precondition(w, z)
                w = z.copy()
            else:
                Z.append(precondition(V[k], np.empty_like(b)))
                w = A.matvec(Z[k])
            h0_sq, H[0, k] = dots(comm, (w, w), (w, V[0]))  # ||w|| before orthogonalizing, in the same reduction
            w = w - H[0, k] * V[0]
            for i in range(1, k + 1):
                H[i, k] = dot(comm, w, V[i])
                w = w - H[i, k] * V[i]
            h_next = np.sqrt(dot(comm, w, w))
            exact = h_next <= np.finfo(float).eps * np.sqrt(h0_sq)  # w in the space already: x is exact
            H[k + 1, k] = 0.0 if exact else h_next
            for i in range(k):  # the earlier rotations on the new column
                H[i, k], H[i + 1, k] = cs[i] * H[i, k] + sn[i] * H[i + 1, k], -sn[i] * H[i, k] + cs[i] * H[i + 1, k]
            d = np.hypot(H[k, k], H[k + 1, k])
            cs[k], sn[k] = (H[k, k] / d, H[k + 1, k] / d) if d > 0 else (1.0, 0.0)
            H[k, k], H[k + 1, k] = d, 0.0
            g[k + 1], g[k] = -sn[k] * g[k], cs[k] * g[k]
            its += 1
            presid = abs(g[k + 1])
            if presid <= inner or exact or k == m - 1:  # converged, exact, or the cycle's end
                break
            history.append(abs(g[k + 1]))
            V.append(w / h_next)
        y = _upper_solve(H[:k + 1, :k + 1], g[:k + 1])
        for j in range(k + 1):
            _axpy(y[j], V[j] if left else Z[j], x)
        if callback is not None:
            callback(x)


def _upper_solve(R, g):
    """``R y = g`` for upper triangular R by back substitution, with ``y_i = 0`` where
    ``R_ii = 0`` (a singular preconditioner, say: scipy's pseudo-solve) instead of an error."""
    y = np.zeros_like(g)
    for i in range(len(g) - 1, -1, -1):
        rest = g[i] - R[i, i + 1:] @ y[i + 1:]
        y[i] = rest / R[i, i] if R[i, i] != 0 else 0.0
    return y


def bicgstab_iterate(A, precondition, b, x, target, maxiter, history, callback=None):
    """Collective. Right-preconditioned BiCGStab on the distributed A from x, in place (the
    kernel of :func:`bicgstab` and of the AMG solve's ``accel="bicgstab"``), shadow residual
    ``r~ = r0``.

    Per iteration: ``p = r + beta (p - omega v)``, ``v = A M p``, ``s = r - alpha v``,
    ``t = A M s``, ``omega = t^T s / t^T t``, ``x += alpha M p + omega M s``,
    ``r = s - omega t``; ``(t^T s, t^T t)`` and ``(r^T r, r~^T r)`` are each one reduction.

    Parameters
    ----------
    A : ParCSR or object with ``comm`` and ``matvec(x, out=)``
        The matrix.
    precondition : callable
        ``precondition(r, out)`` writes ``M r`` into ``out``.
    b : ndarray
        This rank's rows of the right-hand side.
    x : ndarray
        This rank's rows of the initial guess; overwritten by the iterates.
    target : float
        Stop when ``||r||`` (or ``||s||``, halfway through an iteration) ``<= target``.
    maxiter : int
        At most this many iterations.
    history : list
        Gets ``||r||`` of the initial guess and of every iterate appended.
    callback : callable, optional
        ``callback(x)`` after each iteration.

    Returns
    -------
    int
        The iterations done.

    Raises
    ------
    CollectiveError
        On a breakdown (``r~^T r = 0``, ``r~^T A M p = 0``, ``omega = 0``) or a non-finite
        residual.
    """
    comm = A.comm
    r = b - A.matvec(x)
    rt = r.copy()
    rr, rho = dots(comm, (r, r), (rt, r))
    history.append(np.sqrt(rr))
    if history[-1] <= target:
        return 0
    p, v, s, t = r.copy(), np.zeros_like(r), np.empty_like(r), np.empty_like(r)
    phat, shat = np.empty_like(r), np.empty_like(r)
    alpha = omega = 1.0
    rho_prev = rho
    for it in range(1, maxiter + 1):
        if not np.isfinite(rho) or rho == 0.0:
            raise CollectiveError(f"BiCGStab broke down at iteration {it}: r~^T r = {rho:.3g}")
        if it > 1:
            beta = (rho / rho_prev) * (alpha / omega)
            _axpy(-omega, v, p)
            p *= beta
            p += r
        precondition(p, phat)
        A.matvec(phat, out=v)
        rtv = dot(comm, rt, v)
        if not np.isfinite(rtv) or rtv == 0.0:
            raise CollectiveError(f"BiCGStab broke down at iteration {it}: r~^T A M p = {rtv:.3g}")
        alpha = rho / rtv
        np.copyto(s, r)
        _axpy(-alpha, v, s)
        ss = dot(comm, s, s)
        if np.sqrt(ss) <= target:  # converged halfway: x += alpha M p
            _axpy(alpha, phat, x)
            history.append(np.sqrt(ss))
            if callback is not None:
                callback(x)
            return it
        precondition(s, shat)
        A.matvec(shat, out=t)
        ts, tt = dots(comm, (t, s), (t, t))
        omega = ts / tt if tt > 0 else 0.0
        _axpy(alpha, phat, x)
        _axpy(omega, shat, x)
        np.copyto(r, s)
        _axpy(-omega, t, r)
        rho_prev = rho
        rr, rho = dots(comm, (r, r), (rt, r))
        history.append(np.sqrt(rr))
        if not np.isfinite(history[-1]):
            raise CollectiveError(f"BiCGStab residual is not finite at iteration {it}")
        if callback is not None:
            callback(x)
        if history[-1] <= target:
            return it
        if omega == 0.0:
            raise CollectiveError(f"BiCGStab broke down at iteration {it}: omega = 0 (t^T s = {ts:.3g})")
    return maxiter
