"""The AMG solve phase: smoothers and the V-cycle (the Krylov methods it preconditions:
:mod:`commsolve.krylov`).

Smoothers (hypre's names in brackets): ``jacobi`` (weighted Jacobi, omega), ``l1-jacobi``
(Jacobi with the diagonal increased by the l1 norm of the row's off-process entries, which
makes it convergent without a weight [relax_type 18]), ``hybrid-gs`` (Gauss-Seidel on each
rank's rows, Jacobi across ranks: forward before restriction, backward after
interpolation, so the V-cycle stays symmetric for CG [relax_type 3/4]), ``l1-hybrid-gs``
(the same with the l1 term on the diagonal [relax_type 13/14]: convergent however the rows
are split — a partition that cuts most couplings, strided say, leaves hybrid Gauss-Seidel
an undamped Jacobi — at the price of weaker smoothing where many couplings are cut; Baker,
Falgout, Kolev, Yang 2011), ``chebyshev`` (a Chebyshev polynomial in D^-1 A of degree
``degree`` (default CHEBYSHEV_DEGREE) per sweep over [0.3, 1.1] x its largest eigenvalue,
estimated by Lanczos [relax_type 16]; PETSc GAMG's default smoother kind), ``symmetric-gs``
(symmetric hybrid Gauss-Seidel, HPCG's SYMGS: one halo exchange, then a forward and a
backward sweep, before and after the coarse correction alike [relax_type 6]),
``l1-symmetric-gs`` (the same with the l1 term on the diagonal [relax_type 8]), ``ilu0`` /
``ic0`` (x += (L U)^-1 (b - A x) with the ILU(0) factor of the rank's diagonal block: block
Jacobi across ranks, Nakajima's localized IC(0); on a symmetric matrix ILU(0) is IC(0),
U = D L^T, so the two names run the same factor and the cycle stays
symmetric). Only the Jacobi and Chebyshev smoothers are independent of the partition;
hybrid Gauss-Seidel on P ranks is a different smoother from Gauss-Seidel on one, so
iteration counts may differ with P.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .. import _core
from ..krylov import dot
from .spectrum import spectral_radius_dinv_a

__all__ = ["SMOOTHERS", "CYCLES", "Smoother", "CoarseSolver", "mgcycle", "asymmetry"]

SMOOTHERS = ("hybrid-gs", "l1-hybrid-gs", "jacobi", "l1-jacobi", "chebyshev", "symmetric-gs", "l1-symmetric-gs", "ilu0",
             "ic0")
CYCLES = ("V", "W")
# Chebyshev smoothing (hypre's hypre_ParCSRRelax_Cheby with its defaults, the smallest
# eigenvalue taken as 0): the polynomial of this degree per sweep, damping D^-1 A's spectrum
# in [fraction x upper, upper], upper = 1.1 x the estimated largest eigenvalue (the factor
# guards the Lanczos estimate, which lies below it). PETSc's default interval is
# [0.1, 1.1] x the estimate.
CHEBYSHEV_DEGREE, CHEBYSHEV_FRACTION, CHEBYSHEV_UPPER = 2, 0.3, 1.1


def check_smoother(kind, sweeps, omega, degree=None):
    """A ValueError for an unknown smoother, fewer than one sweep, or a weight (a degree) for
    a smoother that takes none."""
    if kind not in SMOOTHERS:
        raise ValueError(f"unknown smoother '{kind}' (known: {', '.join(SMOOTHERS)})")
    if omega is not None and not kind.endswith("jacobi"):
        raise ValueError(f"omega weights the Jacobi smoothers; the {kind} smoother takes none")
    if degree is not None and (kind != "chebyshev" or int(degree) != degree or degree < 1):
        raise ValueError(f"degree is the Chebyshev smoother's polynomial degree, a whole number >= 1 (got {degree} "
                         f"for {kind})")
    if sweeps < 1:
        raise ValueError(f"smoothing sweeps must be at least 1, got {sweeps}")


def check_cycle(cycle):
    """A ValueError for a cycle other than :data:`CYCLES`."""
    if cycle not in CYCLES:
        raise ValueError(f"unknown cycle '{cycle}' (known: {', '.join(CYCLES)})")


class Smoother:
    """What one level's smoother needs (the divisors, an ILU(0) factor) and the sweeps
    themselves; Gauss-Seidel sweeps run on the operator's own storage, in its format
    (:meth:`ParCSR.set_format`)."""

    def __init__(self, A, kind="hybrid-gs", sweeps=1, omega=None, ids=None, rho=None, local=None, degree=None):
        """Collective for ``chebyshev`` without ``rho`` and for ``ilu0`` / ``ic0``; local
        otherwise.

        Parameters
        ----------
        A : ParCSR
            The operator smoothed.
        kind : str
            One of :data:`SMOOTHERS`.
        sweeps : int
            Sweeps per smoothing step, at least 1.
        omega : float, optional
            The Jacobi smoothers' weight (default 2/3 for ``jacobi``, 1 for ``l1-jacobi``).
        ids : ndarray of int, optional
            The points' identities, from which the Lanczos start vector is hashed (default:
            A's global row indices).
        rho : float, optional
            The spectral radius of ``D^-1 A``, which smoothed aggregation has estimated
            already; else Lanczos from a start vector hashed from ``ids``.
        local : scipy.sparse.csr_matrix, optional
            A's local block if the caller has it (:meth:`ParCSR.local_block`), which
            ``ilu0`` / ``ic0`` factor.
        degree : int, optional
            The Chebyshev polynomial's degree (default CHEBYSHEV_DEGREE).

        Raises
        ------
        ValueError
            For an unknown smoother, fewer than one sweep, or a weight (a degree) for a
            smoother that takes none.
        CollectiveError
            On every rank, for ``ilu0`` / ``ic0``, when the factor meets a zero or
            non-finite pivot on some rank.
        """
        check_smoother(kind, sweeps, omega, degree)
        self.A, self.kind, self.sweeps = A, kind, int(sweeps)
        self.degree = CHEBYSHEV_DEGREE if degree is None else int(degree)
        self.omega = (2.0 / 3.0 if kind == "jacobi" else 1.0) if omega is None else float(omega)
        n = A.local_rows
        self.halo = np.zeros(len(A.col_map))  # the off-process values of x during a sweep
        self.work = np.empty(n)
        # a_ii, nonzero and finite (checked by the hierarchy); l1 scaling (plus the row's
        # off-process magnitudes) is convergent however the rows are split
        self.diag = A._core.diagonal(kind.startswith("l1-"))
        self.inv = 1.0 / self.diag
        if kind in ("ilu0", "ic0"):
            self.lu = _local_ilu0(A.local_block() if local is None else local, n, A)
        if kind == "chebyshev":
            if rho is None:
                rho = spectral_radius_dinv_a(A, self.diag, A.owned_rows() if ids is None else ids)
            upper = CHEBYSHEV_UPPER * rho
            self.interval = (CHEBYSHEV_FRACTION * upper, upper)

    def _chebyshev(self, b, x, zero):
        """x += p(D^-1 A) D^-1 (b - A x), the error multiplied by T_k((theta - t) / delta) /
        T_k(theta / delta) at each eigenvalue t of D^-1 A (Saad, Iterative Methods, Alg.
        12.1; k = :attr:`degree` matrix-vector products)."""
        lo, hi = self.interval
        theta, delta = (hi + lo) / 2, (hi - lo) / 2
        sigma = theta / delta
        rho = 1.0 / sigma
        r = (b if zero else b - self.A.matvec(x)) / self.diag
        d = r / theta
        for k in range(self.degree):
            x += d
            if k + 1 == self.degree:
                break
            r -= self.A.matvec(d) / self.diag
            rho_next = 1.0 / (2 * sigma - rho)
            d = rho_next * rho * d + (2 * rho_next / delta) * r
            rho = rho_next

    def _jacobi(self, b, x):
        x += self.omega * (b - self.A.matvec(x)) / self.diag

    def _gs(self, b, x, directions, zero):
        halo = None if zero else self.A.exchange(x, out=self.halo)
        for k, forward in enumerate(directions):
            self.A._core.gauss_seidel(self.inv, b, halo, x, forward, zero and k == 0, self.work)

    def _ilu(self, b, x, zero):
        indptr, indices, lu = self.lu
        d = self.work
        if zero:  # x = 0: x = M^-1 b
            _core.ilu0_solve(indptr, indices, lu, np.ascontiguousarray(b), x)
            return
        self.A.matvec(x, out=d)
        np.subtract(b, d, out=d)
        _core.ilu0_solve(indptr, indices, lu, d, d)  # in place: the solve reads b[i] before writing x[i]
        x += d

    def _sweep(self, b, x, zero, forward):
        if self.kind.endswith("hybrid-gs"):
            self._gs(b, x, (forward,), zero)
        elif self.kind.endswith("symmetric-gs"):
            self._gs(b, x, (True, False), zero)
        elif self.kind == "chebyshev":
            self._chebyshev(b, x, zero)
        elif self.kind in ("ilu0", "ic0"):
            self._ilu(b, x, zero)
        else:
            self._jacobi(b, x)

    def pre(self, b, x, zero=False):
        """Collective. Smooths x in place (the sweeps before the coarse correction).

        Parameters
        ----------
        b : ndarray
            This rank's part of the right-hand side.
        x : ndarray
            This rank's part of the iterate, smoothed in place.
        zero : bool
            x is known to be 0 (the halo need not travel).
        """
        for k in range(self.sweeps):
            self._sweep(b, x, zero and k == 0, True)

    def pre_residual(self, b, x, r):
        """Collective. Smooths x in place from x = 0 and writes ``r = b - A x``.

        One symmetric Gauss-Seidel step on CSR or DIA storage takes the residual from the
        lower half of the block: the backward sweep's own equation gives the rest (half a
        matrix pass saved).

        Parameters
        ----------
        b : ndarray
            This rank's part of the right-hand side.
        x : ndarray
            This rank's part of the iterate: 0 on entry, smoothed in place.
        r : ndarray
            Gets this rank's part of the residual.
        """
        if not (self.kind == "symmetric-gs" and self.sweeps == 1 and self.A.format in ("csr", "dia")):
            self.pre(b, x, zero=True)
            self.A.matvec(x, out=r)
            np.subtract(b, r, out=r)
            return
        core = self.A._core
        core.gauss_seidel(self.inv, b, None, x, True, True, self.work)
        np.copyto(r, x)  # x as the forward sweep left it
        core.gauss_seidel(self.inv, b, None, x, False, False, self.work)
        core.zero_start_sgs_residual(x, r, self.work)

    def post(self, b, x):
        """Collective. Smooths x in place (the sweeps after the coarse correction: hybrid
        Gauss-Seidel runs backward).

        Parameters
        ----------
        b : ndarray
            This rank's part of the right-hand side.
        x : ndarray
            This rank's part of the iterate, smoothed in place.
        """
        for _ in range(self.sweeps):
            self._sweep(b, x, False, False)


def _local_ilu0(L, n, A):
    """The ILU(0) factor of the rank's diagonal block (the first ``n`` columns of its local
    block ``L``): (indptr, indices, values) as int32/float64 arrays, or a CollectiveError on
    every rank naming the global row of a zero pivot."""
    from .._collective import agree

    D = sp.csr_matrix(L[:, :n])
    D.sort_indices()
    D.sum_duplicates()
    indptr, indices = D.indptr.astype(np.int32), D.indices.astype(np.int32)
    lu = np.ascontiguousarray(D.data, dtype=np.float64)
    bad = _core.ilu0_factor(indptr, indices, lu)
    agree(A.comm, None if bad < 0 else
          f"ILU(0) of the rank's diagonal block: zero or non-finite pivot in row {int(A.owned_rows()[bad])} (the "
          "matrix is not an M-matrix there; try another smoother)", where="ilu0 smoother")
    return indptr, indices, lu


class CoarseSolver:
    """The coarsest operator gathered on every rank and factored there: by LAPACK's dense LU
    (getrf with partial pivoting) up to DENSE_COARSE rows, where a call's overhead is the
    cost (hypre's Gaussian elimination coarse solve), by commsolve's own supernodal LU above;
    each solve gathers the right-hand side and keeps the rank's part."""

    def __init__(self, A):
        """Collective. Gathers the coarsest operator on every rank and factors it.

        Parameters
        ----------
        A : ParCSR
            The coarsest level's operator.

        Raises
        ------
        ValueError
            On every rank alike, when the operator cannot be factored (probably singular:
            a Laplacian with pure Neumann boundaries, say).
        """
        from ..direct import SparseLU

        self.A = A
        self.global_A = A.to_global(root=None)
        n = self.global_A.shape[0]
        self.lu = self.dense = None
        try:  # every rank factors the same matrix: every rank fails alike
            if 0 < n <= DENSE_COARSE:
                self.dense = _dense_lu(self.global_A.toarray())
            elif n > 0:
                self.lu = SparseLU(self.global_A)
        except ValueError as e:
            reason = str(e).split(" (static pivoting")[0]  # its advice is the direct solver's, not ours
            raise ValueError(
                f"the coarsest level's operator ({n} rows) cannot be factored ({reason}): A is "
                "probably singular, e.g. a Laplacian with pure Neumann boundaries, whose null space is the "
                "constants. Make it nonsingular (fix one value, or shift: A + sigma I with a small sigma > 0), "
                "or remove the null space from the problem.") from None
        self.owned = A.owned_rows()

    def solve(self, b):
        """Collective. The coarsest level's exact solve.

        Parameters
        ----------
        b : ndarray
            This rank's part of the right-hand side, gathered whole on every rank.

        Returns
        -------
        ndarray
            This rank's part of the solution.
        """
        b = self.A.gather(b, root=None)
        if self.dense is not None:
            lu, piv, scale = self.dense
            x = scipy.linalg.lu_solve((lu, piv), b * scale, check_finite=False)
        else:
            x = self.lu.solve(b, refine=False)
        return np.ascontiguousarray(x[self.owned])


DENSE_COARSE = 512  # rows up to which the coarsest level is factored dense


def _dense_lu(M):
    """LAPACK's LU of a small dense matrix, its rows first scaled to largest entry 1 (so the
    test below does not depend on how the rows are scaled): (lu, piv, row scales), or a
    ValueError on a pivot of at most 64 n eps, zero to rounding (numerically singular, as a
    Neumann Laplacian's)."""
    scale = np.abs(M).max(axis=1)
    if not np.all(scale > 0):
        raise ValueError(f"zero pivot at row {int(np.argmin(scale))} (counting from 0; an empty row)")
    scale = 1.0 / scale
    with warnings.catch_warnings():  # a zero pivot is reported below, as an error
        warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
        lu, piv = scipy.linalg.lu_factor(M * scale[:, None], check_finite=True)
    # a singular matrix leaves a last pivot of the eliminations' rounding, n eps times a growth
    # factor (7.7e-15 at n = 28 for a Neumann Laplacian's coarsest level): a margin of 64
    tiny = ~(np.abs(np.diag(lu)) > 64 * M.shape[0] * np.finfo(float).eps)  # NaN too
    if np.any(tiny):
        raise ValueError(f"zero pivot at row {int(np.argmax(tiny))} (counting from 0; numerically singular)")
    return lu, piv, scale


def mgcycle(levels, smoothers, coarse, b, correction=1.0, times=None, work=None, visits=1):
    """Collective. One multigrid cycle from a zero initial guess.

    Each coarser level is visited ``visits`` times, each visit after the first on the coarse
    residual the earlier ones left; a coarsest level solved directly is visited once (a
    second exact solve adds nothing), one moved onto fewer ranks as often as any. Each level
    smooths with and takes residuals of its ``solve_A`` (a sparsified copy where sparse or
    hybrid Galerkin made one).

    Parameters
    ----------
    levels : list of ~commsolve.amg.hierarchy.Level
        The hierarchy's levels on this communicator.
    smoothers : list of Smoother
        One per level but the last.
    coarse : CoarseSolver or ~commsolve.amg.agglomerate.Agglomerated
        The last level's solve: direct, or the hierarchy continued on fewer ranks.
    b : ndarray
        This rank's part of the finest right-hand side.
    correction : float
        The factor on every coarse correction (a constant: the cycle stays symmetric when
        the smoothing is).
    times : ndarray, optional
        An array with a slot per level to which each level's seconds are added (smoothing,
        residual, restriction and interpolation on level k; the coarse solve on the last).
    work : list, optional
        :func:`cycle_work`'s arrays, reused (the finest x returned is then one of them);
        None: fresh arrays.
    visits : int
        Visits of each coarser level (1: the V-cycle; 2: the W-cycle, hypre's cycle_type 2).

    Returns
    -------
    ndarray
        ``x ~ A^-1 b`` on the finest level, this rank's part.
    """
    clock = _Clock(times)
    last = len(levels) - 1
    work = cycle_work(levels) if work is None else work
    again = visits - 1 if getattr(coarse, "move", None) is not None else 0  # an inner cycle is inexact

    def visit(k, b):
        if k == last:
            x = coarse.solve(b)
            clock.lap(k)
            return x
        lvl, sm = levels[k], smoothers[k]
        x, r, bc = work[k]
        x.fill(0.0)
        sm.pre_residual(b, x, r)
        lvl.P.rmatvec(r, out=bc)
        clock.lap(k)
        xc = visit(k + 1, bc)
        for _ in range(visits - 1 if k + 1 < last else again):
            xc = np.array(xc)  # the next visit reuses level k + 1's arrays
            rc = bc - levels[k + 1].solve_A.matvec(xc)
            clock.lap(k + 1)
            xc += visit(k + 1, rc)
        lvl.P.matvec(xc, out=r)  # the residual's array, free again
        if correction != 1.0:
            r *= correction
        x += r
        sm.post(b, x)
        clock.lap(k)
        return x

    return visit(0, b)


def cycle_work(levels):
    """The arrays a V-cycle reuses: per level but the coarsest, its x and residual and the
    next level's right-hand side."""
    return [(np.zeros(lvl.A.local_rows), np.zeros(lvl.A.local_rows), np.zeros(lvl.P.local_cols))
            for lvl in levels[:-1]]


class _Clock:
    """Adds the seconds since the last lap to a slot of ``times`` (nothing when None)."""

    def __init__(self, times):
        self.times = times
        self.t = time.perf_counter() if times is not None else 0.0

    def lap(self, k):
        if self.times is not None:
            now = time.perf_counter()
            self.times[k] += now - self.t
            self.t = now


def asymmetry(A, seed=20251125):
    """Collective. How far A is from symmetric, measured with two random vectors.

    ``|y^T A x - x^T A y| / max(|y^T A x|, |x^T A y|)`` for two random vectors x, y (the same
    on any number of ranks: hashed from global indices). One product and two dot products
    each way.

    Parameters
    ----------
    A : ParCSR
        A square matrix, its rows and columns distributed alike.
    seed : int
        Seed of the random vectors.

    Returns
    -------
    float
        About machine epsilon times the row length for a symmetric A, far more for a
        nonsymmetric one (0 when both products vanish).
    """
    from .classical import hash_uniform

    ids = A.owned_rows()
    x, y = hash_uniform(ids, seed) - 0.5, hash_uniform(ids, seed + 1) - 0.5
    yax, xay = dot(A.comm, y, A.matvec(x)), dot(A.comm, x, A.matvec(y))
    scale = max(abs(yax), abs(xay))
    return abs(yax - xay) / scale if scale > 0 else 0.0
