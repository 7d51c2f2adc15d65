"""Algebraic multigrid, distributed (issue 13): classical AMG (PMIS or HMIS coarsening,
extended+i or direct interpolation) or smoothed aggregation (MIS-2 aggregates, Jacobi-smoothed tentative
prolongator), Galerkin coarse operators by distributed SpGEMM, a communication strategy per
level, used as the preconditioner of CG or on its own.

Example (``mpiexec -n 4 python -m mpi4py example.py``)::

    A = cs.ParCSR.from_spec("poisson3d:32", comm)
    ml = cs.amg.solver(A, strategy="auto")
    print(ml)                                  # the hierarchy, level by level
    x, info = ml.solve(np.ones(A.local_rows), tol=1e-8, accel="cg")
    print(ml.last_solve["iterations"], ml.last_solve["convergence_factor"])
"""

from __future__ import annotations

import time

import numpy as np

from .._collective import CollectiveError, agree, agree_args, mpi
from .._watchdog import watched
from .cycle import SMOOTHERS, CoarseSolver, Smoother, asymmetry, check_smoother, dot, gmres, pcg, vcycle
from .hierarchy import METHODS, SETUP_DEFAULTS, Level, build_hierarchy

__all__ = ["solver", "MultilevelSolver", "Level", "METHODS", "SMOOTHERS", "SETUP_DEFAULTS", "ACCELERATORS"]

ACCELERATORS = ("cg", "gmres", None)
SYMMETRY_TOL = 1e-8  # asymmetry() above this: A is not symmetric, CG's assumption fails


def solver(A, comm=None, *, method="classical", strategy="auto", profile=None, smoother="hybrid-gs", sweeps=1,
           omega=None, partition="contiguous", topology=None, progress=None, **options):
    """Collective. Sets up an AMG hierarchy for ``A``: a :class:`~commsolve.ParCSR`, or a
    scipy matrix that every rank of ``comm`` passes whole (rows split by ``partition``).

    ``strategy``: the halo and product exchange strategy of every level ("standard",
    "node-aware", "node-aware-2step", or "auto": chosen per level from that level's own
    pattern, priced with ``profile`` when given), or a list with one per level. ``method``:
    "classical" or "sa". Setup options: :data:`SETUP_DEFAULTS`, described in
    :func:`~commsolve.amg.hierarchy.build_hierarchy`. ``smoother``: one of :data:`SMOOTHERS`,
    ``sweeps`` of it before and after each coarse correction, weight ``omega`` (Jacobi)."""
    from ..parcsr import ParCSR

    if not isinstance(A, ParCSR):
        if comm is None:
            raise ValueError("pass a ParCSR, or a scipy matrix with the communicator (comm=)")
        A = ParCSR.from_global(A, comm, partition=partition, topology=topology)
    return MultilevelSolver(A, method=method, strategy=strategy, profile=profile, smoother=smoother, sweeps=sweeps,
                            omega=omega, progress=progress, **options)


class MultilevelSolver:
    """A set-up hierarchy (:attr:`levels`) and its V-cycle; :meth:`solve` runs it."""

    @watched("amg.solver (the setup)")
    def __init__(self, A, *, method, strategy, profile, smoother, sweeps, omega, progress, **options):
        self.comm = A.comm
        agree_args(self.comm, "amg.solver", method=method, strategy=strategy, profile=profile, smoother=smoother,
                   sweeps=sweeps, omega=omega, **options)
        check_smoother(smoother, sweeps, omega)
        t0 = time.perf_counter()
        self.smoothers = []  # built as each level completes, from the block the setup has at hand

        def add_smoother(lvl, local):
            self.smoothers.append(Smoother(lvl.A, smoother, sweeps, omega, lvl.ids, lvl.rho, local))

        self.levels = build_hierarchy(A, method=method, strategy=strategy, profile=profile, progress=progress,
                                      on_level=add_smoother, **options)
        self.coarse = CoarseSolver(self.levels[-1].A)
        self.setup_s = self.comm.allreduce(time.perf_counter() - t0, op=mpi().MAX)
        self.method, self.smoother = method, smoother
        # CG needs a symmetric A; a random-vector check costs two products (cycle.asymmetry)
        self.asymmetry = asymmetry(A)
        self.symmetric = self.asymmetry <= SYMMETRY_TOL
        self.last_solve = None
        nnz = [lvl.nnz() for lvl in self.levels]
        self._nnz = nnz

    @property
    def A(self):
        return self.levels[0].A

    @property
    def operator_complexity(self):
        """Sum of the levels' nonzeros over the finest level's (hypre's and pyamg's definition)."""
        return sum(self._nnz) / self._nnz[0]

    @property
    def grid_complexity(self):
        rows = [lvl.rows for lvl in self.levels]
        return sum(rows) / rows[0]

    @watched("MultilevelSolver.describe")
    def describe(self):
        """Collective. One dict per level: rows, nnz, its share of the operator complexity,
        strategies, and the busiest rank's halo-exchange messages (inter- and intra-node)."""
        out = []
        for k, lvl in enumerate(self.levels):
            st = lvl.halo_stats()
            out.append({
                "level": k, "rows": lvl.rows, "nnz": self._nnz[k], "complexity": self._nnz[k] / self._nnz[0],
                "strategy": lvl.strategy, "product_strategy": lvl.product_strategy or None,
                "inter_msgs_max": int(st["max"]["msgs_sent_inter"]), "intra_msgs_max": int(st["max"]["msgs_sent_intra"]),
                "inter_bytes_max": int(st["max"]["bytes_sent_inter"]), "setup_s": lvl.setup_s,
            })
        return out

    def cycle(self, b):
        """Collective. One V-cycle applied to this rank's part of b (zero initial guess)."""
        return vcycle(self.levels, self.smoothers, self.coarse, np.ascontiguousarray(b, dtype=np.float64))

    @watched("MultilevelSolver.solve")
    def solve(self, b, x0=None, tol=1e-8, accel="cg", maxiter=200):
        """Collective. Solves A x = b (this rank's rows) to ||b - A x|| <= tol ||b||.

        ``accel="cg"``: CG preconditioned by one V-cycle (for a symmetric A: on a matrix the
        setup found nonsymmetric, :attr:`last_solve` carries a warning suggesting GMRES);
        ``"gmres"``: restarted GMRES(30) right-preconditioned by one V-cycle (nonsymmetric A);
        ``None``: V-cycles alone. Returns
        ``(x, info)`` as scipy's solvers: info 0 when converged, else the iterations done
        (the solution is then not to be trusted; :attr:`last_solve` says how far it got).
        :attr:`last_solve` holds the residual history, iterations, the mean convergence
        factor per iteration, and the solve time."""
        agree_args(self.comm, "MultilevelSolver.solve", tol=tol, accel=accel, maxiter=maxiter,
                   x0_given=x0 is not None)
        A = self.A
        b = np.asarray(b, dtype=np.float64)
        error = None
        if accel not in ACCELERATORS:
            error = f"unknown accelerator {accel!r} (known: 'cg', 'gmres', None)"
        elif b.shape != (A.local_rows,):
            error = f"b must hold this rank's {A.local_rows} rows, got shape {b.shape}"
        elif not np.all(np.isfinite(b)):
            error = "b holds non-finite values"
        agree(self.comm, error, where="MultilevelSolver.solve")
        x = np.zeros(A.local_rows) if x0 is None else np.array(x0, dtype=np.float64)
        history = []
        bnorm = np.sqrt(dot(self.comm, b, b))
        t0 = time.perf_counter()
        if accel == "cg":
            its = pcg(A, self.cycle, b, x, tol * bnorm, maxiter, history)
        elif accel == "gmres":
            its = gmres(A, self.cycle, b, x, tol * bnorm, maxiter, history)
        else:
            its = self._stationary(b, x, tol * bnorm, maxiter, history)
        elapsed = self.comm.allreduce(time.perf_counter() - t0, op=mpi().MAX)
        converged = history[-1] <= tol * bnorm
        factor = (history[-1] / history[0]) ** (1.0 / its) if its > 0 and history[0] > 0 else 0.0
        self.last_solve = {"iterations": its, "residuals": [float(h) for h in history], "converged": bool(converged),
                           "convergence_factor": float(factor), "solve_s": elapsed, "accel": accel,
                           "warnings": self._warnings(accel)}
        return x, (0 if converged else its)

    def _warnings(self, accel):
        if accel == "cg" and not self.symmetric:
            return [f"A is not symmetric (|y^T A x - x^T A y| / |y^T A x| = {self.asymmetry:.1e} for random x, y): "
                    "CG assumes a symmetric positive definite matrix, and its answer is not to be trusted even "
                    "when it converges; use accel='gmres' (--accel gmres)"]
        return []

    def _stationary(self, b, x, target, maxiter, history):
        """V-cycles on the residual from x (in place) until ||r|| <= target."""
        A = self.A
        r = b - A.matvec(x)
        history.append(np.sqrt(dot(self.comm, r, r)))
        for it in range(1, maxiter + 1):
            if history[-1] <= target:
                return it - 1
            x += self.cycle(r)
            r = b - A.matvec(x)
            history.append(np.sqrt(dot(self.comm, r, r)))
            if not np.isfinite(history[-1]):
                raise CollectiveError(f"V-cycle iteration {it} produced a non-finite residual")
        return maxiter

    def __repr__(self):
        lines = [f"AMG ({self.method}, {self.smoother}) on {self.comm.size} rank(s): {len(self.levels)} levels, "
                 f"operator complexity {self.operator_complexity:.3f}, grid complexity {self.grid_complexity:.3f}"]
        for k, lvl in enumerate(self.levels):
            lines.append(f"  level {k}: {lvl.rows:>10,} rows {self._nnz[k]:>12,} nnz  strategy {lvl.strategy}")
        return "\n".join(lines)

