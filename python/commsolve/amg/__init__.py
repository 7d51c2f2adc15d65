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

from .. import _core
from .._collective import CollectiveError, agree, agree_args, mpi, run_agreed
from .._watchdog import watched
from .agglomerate import Agglomerated, parse_stages
from ..krylov import DistributedOperator, bicgstab_iterate, dot, gmres_iterate, local_vector, pcg_iterate
from .cycle import (CYCLES, SMOOTHERS, CoarseSolver, Smoother, asymmetry, check_cycle, check_smoother, cycle_work,
                    mgcycle)
from .hierarchy import METHODS, SETUP_DEFAULTS, THETA, Level, build_hierarchy, resparsify
from .sparsify import halo_summary, parse_adaptive, relaxed, sparsification

__all__ = ["solver", "MultilevelSolver", "Level", "METHODS", "SMOOTHERS", "CYCLES", "SETUP_DEFAULTS", "ACCELERATORS"]

ACCELERATORS = ("cg", "gmres", "bicgstab", None)
SYMMETRY_TOL = 1e-8  # asymmetry() above this: A is not symmetric, CG's assumption fails


def solver(A, comm=None, *, method="classical", strategy="auto", profile=None, smoother="hybrid-gs", sweeps=1,
           omega=None, degree=None, cycle="V", partition="contiguous", topology=None, progress=None, sparsify=None,
           gamma=None, lumping=None, adaptive=None, correction=1.0, agglomerate=None, **options):
    """Collective. Sets up an AMG hierarchy for ``A``.

    Parameters
    ----------
    A : ParCSR or scipy sparse matrix
        A :class:`~commsolve.ParCSR`, or a scipy matrix that every rank of ``comm`` passes
        whole (rows split by ``partition``).
    comm : mpi4py.MPI.Comm, optional
        The communicator of a scipy matrix (a ParCSR carries its own).
    method : {"classical", "sa", "geometric"}
        "classical" or "sa" (algebraic), or "geometric" with ``grid=(nx, ny, nz)``
        (cell-centred 2 x 2 x 2 aggregation of a structured grid: Nakajima's MGCG).
    strategy : str or list of str
        The halo and product exchange strategy of every level ("standard", "node-aware",
        "node-aware-2step", or "auto": chosen per level from that level's own pattern,
        priced with ``profile`` when given), or a list with one per level.
    profile : MachineProfile, str or path, optional
        The machine profile that prices "auto" (a profile, a bundled name or a TOML path).
    smoother : str
        One of :data:`SMOOTHERS`.
    sweeps : int
        Sweeps of the smoother before and after each coarse correction.
    omega : float, optional
        The weight of the Jacobi smoothers (default 2/3 for "jacobi", 1 for "l1-jacobi").
    degree : int, optional
        The polynomial degree of the Chebyshev smoother (default 2).
    cycle : {"V", "W"}
        "V", or "W" (each coarser level visited twice, :func:`~commsolve.amg.cycle.mgcycle`).
    partition : str or Distribution
        How the rows of a scipy matrix are split (:meth:`~commsolve.ParCSR.from_global`:
        ``"contiguous"``, ``"strided"``, ``"metis"`` or a Distribution).
    topology : Topology or int, optional
        The node layout for a scipy matrix (None: the real one of ``comm``; an int: that many
        ranks per node).
    progress : callable, optional
        ``progress(k, rows)`` once coarse level ``k`` is formed, with its global rows.
    sparsify : {"non-galerkin", "sparse", "hybrid"}, optional
        Sparsified coarse operators (thesis Chapter 4, :mod:`commsolve.amg.sparsify`); None:
        the plain Galerkin hierarchy.
    gamma : float, sequence of float or str, optional
        With ``sparsify``: the drop tolerance of each coarse level (level 1 first, the last
        repeated: ``[0, 0.01, 0.1, 1]``).
    lumping : {"diagonal", "strong", "spd"}, optional
        With ``sparsify``: where dropped entries go (default: strong for non-Galerkin,
        diagonal for the others).
    adaptive : tuple, dict or str, optional
        ``(k, s)`` or ``(k, s, rho)`` (sparse and hybrid; CG): every k iterations converging
        slower than rho (default 0.5) per iteration, entries go back into the finest s
        sparsified levels (gamma / 10, 0 below 0.01) and CG restarts.
    correction : float
        The factor on every coarse correction, in (0, 2) (over-correction, for the
        piecewise-constant interpolation of geometric aggregation, whose coarse corrections
        fall short; 1: none).
    agglomerate : list of (float, int), optional
        Coarse levels on fewer ranks (:mod:`commsolve.amg.agglomerate`), a list of stages
        ``(rows_per_rank, nranks)``: the first level with fewer rows per rank than
        ``rows_per_rank`` moves onto ``nranks`` ranks and the hierarchy goes on there, until
        the next stage. ``[(64, 1)]`` is Nakajima's CGA, ``[(64, P // 16), (64, 1)]`` his
        hCGA.
    **options
        Setup options: :data:`SETUP_DEFAULTS`, described in
        :func:`~commsolve.amg.hierarchy.build_hierarchy`.

    Returns
    -------
    MultilevelSolver
        The set-up hierarchy.

    Raises
    ------
    ValueError
        For a scipy matrix without ``comm``, an unknown method, smoother, cycle, option or
        sparsification, a value out of range (``correction`` outside (0, 2), say), a
        hierarchy whose coarsest level stays too large, or a coarsest operator that cannot
        be factored.
    CollectiveError
        On every rank, when the ranks passed different arguments or some rank's part fails
        a check (an unknown strategy, a zero diagonal entry on some level, a bad
        agglomeration stage, ``agglomerate`` with ``sparsify``).

    Examples
    --------
    >>> import numpy as np, commsolve as cs
    >>> from mpi4py import MPI
    >>> A = cs.ParCSR.from_spec("poisson2d:32", MPI.COMM_WORLD)
    >>> ml = cs.amg.solver(A, strategy="standard")
    >>> x, info = ml.solve(np.ones(A.local_rows), tol=1e-8)
    >>> info
    0
    """
    from ..parcsr import ParCSR

    if not isinstance(A, ParCSR):
        if comm is None:
            raise ValueError("pass a ParCSR, or a scipy matrix with the communicator (comm=)")
        A = ParCSR.from_global(A, comm, partition=partition, topology=topology)
    return MultilevelSolver(A, method=method, strategy=strategy, profile=profile, smoother=smoother, sweeps=sweeps,
                            omega=omega, degree=degree, cycle=cycle, progress=progress, sparsify=sparsify, gamma=gamma,
                            lumping=lumping, adaptive=adaptive, correction=correction, agglomerate=agglomerate,
                            **options)


class MultilevelSolver:
    """A set-up hierarchy and its V-cycle; :meth:`solve` runs it.

    Made by :func:`solver`. :attr:`levels`: the levels on this communicator; when the coarse
    levels moved onto fewer ranks, the last of them is the level moved and :attr:`inner` (on
    the ranks that received it; None elsewhere) is the solver that goes on from it."""

    @watched("amg.solver (the setup)")
    def __init__(self, A, *, method, strategy, profile, smoother, sweeps, omega, progress, degree=None, cycle="V",
                 sparsify=None, gamma=None, lumping=None, adaptive=None, correction=1.0, agglomerate=None,
                 _continued=None, **options):
        self.comm = A.comm
        agree_args(self.comm, "amg.solver", method=method, strategy=strategy, profile=profile, smoother=smoother,
                   sweeps=sweeps, omega=omega, degree=degree, cycle=cycle, sparsify=sparsify, gamma=gamma,
                   lumping=lumping, adaptive=adaptive, correction=correction, agglomerate=agglomerate, **options)
        stages = run_agreed(self.comm, parse_stages, agglomerate, self.comm.size)
        if stages and sparsify is not None:
            agree(self.comm, "sparsified hierarchies are not agglomerated (agglomerate= with sparsify=)")
        check_smoother(smoother, sweeps, omega, degree)
        check_cycle(cycle)
        self.cycle_type = cycle
        if not 0 < correction < 2:
            raise ValueError(f"correction (the coarse corrections' factor) must lie in (0, 2), got {correction}")
        self.correction = float(correction)
        self.sparsification = sparsification(sparsify, gamma, lumping)
        self.adaptive = self._check_adaptive(adaptive)
        t0, faults = time.perf_counter(), _core.minor_page_faults()
        self.smoothers = []  # built as each level completes, from the block the setup has at hand
        self._smoothing = (smoother, sweeps, omega, degree)
        self._profile = profile
        theta = options.get("theta")
        self._strength_theta = theta if method == "classical" and theta is not None else THETA["classical"]

        def add_smoother(lvl, local):
            self.smoothers.append(self._smoother(lvl, local))

        ids, candidate = (None, None) if _continued is None else _continued
        self.levels = build_hierarchy(A, method=method, strategy=strategy, profile=profile, progress=progress,
                                      on_level=add_smoother, sparsify=self.sparsification, ids=ids,
                                      candidate=candidate, agglomerate_below=stages[0][0] if stages else None,
                                      **options)
        self.inner = None
        self.level_times = None  # an array (a slot per level here) makes every cycle time its levels
        self._work = None  # the cycle's arrays, made at its first run
        last = self.levels[-1]
        if last.agglomerated:
            rest = ((strategy[len(self.levels) - 1:] or strategy[-1:]) if isinstance(strategy, (list, tuple))
                    else strategy)

            def build(moved, ids, candidate, grid):
                more = dict(options, grid=grid) if method == "geometric" else dict(options)
                # the moved level is the continued hierarchy's first: the levels above count against
                # max_levels and aggressive
                more["max_levels"] = options.get("max_levels", SETUP_DEFAULTS["max_levels"]) - (len(self.levels) - 1)
                more["aggressive"] = max(0, options.get("aggressive", 0) - (len(self.levels) - 1))
                return MultilevelSolver(moved, method=method, strategy=rest, profile=profile, smoother=smoother,
                                        sweeps=sweeps, omega=omega, degree=degree, cycle=cycle, progress=None,
                                        correction=correction,
                                        agglomerate=stages[1:], _continued=(ids, candidate), **more)

            self.coarse = Agglomerated(last, stages[0][1], build, last.strategy)
            self.inner = self.coarse.inner
        else:
            self.coarse = CoarseSolver(last.A)
        # The slowest rank's time and the busiest rank's minor page faults (memory first touched),
        # reduced as fixed-size buffers: a pickled int's size depends on its value, and mpi4py
        # reduces pickles with point-to-point messages that Open MPI counts as the user's.
        mine = np.array([time.perf_counter() - t0, _core.minor_page_faults() - faults], dtype=np.float64)
        most = np.empty_like(mine)
        self.comm.Allreduce(mine, most, op=mpi().MAX)
        self.setup_s, self.setup_page_faults = float(most[0]), int(most[1])
        self.method, self.smoother = method, smoother
        # CG needs a symmetric A; a random-vector check costs two products (cycle.asymmetry)
        self.asymmetry = asymmetry(A) if _continued is None else 0.0
        self.symmetric = self.asymmetry <= SYMMETRY_TOL
        self.last_solve = None
        own = self._own_levels
        self._nnz = [lvl.nnz() for lvl in own]
        self._galerkin_nnz = [lvl.A.global_nnz() if lvl.A_hat is not None else n for lvl, n in zip(own, self._nnz)]
        self._rows = [lvl.rows for lvl in own]
        self._ranks = [self.comm.size] * len(own)
        if last.agglomerated:  # the continued levels' figures, from rank 0 (a receiver at every stage)
            more = self.comm.bcast((self.inner._nnz, self.inner._galerkin_nnz, self.inner._rows, self.inner._ranks)
                                   if self.comm.rank == 0 else None, root=0)
            for mine, theirs in zip((self._nnz, self._galerkin_nnz, self._rows, self._ranks), more):
                mine.extend(theirs)

    def _smoother(self, lvl, local=None):
        """Level ``lvl``'s smoother, on the operator the cycle uses there (``local``: its
        block, if at hand); a sparsified copy's spectral radius is estimated anew."""
        kind, sweeps, omega, degree = self._smoothing
        return Smoother(lvl.solve_A, kind, sweeps, omega, lvl.ids, lvl.rho if lvl.A_hat is None else None, local,
                        degree)

    def _check_adaptive(self, adaptive):
        adaptive = parse_adaptive(adaptive)
        if adaptive is not None and (self.sparsification is None or not self.sparsification.keeps_galerkin):
            raise ValueError("the adaptive solve puts entries back into a Galerkin hierarchy kept whole: it needs "
                             "sparsify='sparse' or 'hybrid'")
        return adaptive

    @property
    def A(self):
        """The finest level's operator: the ParCSR the hierarchy was set up for."""
        return self.levels[0].A

    @property
    def operator_complexity(self):
        """Sum of the levels' nonzeros over the finest level's (hypre's and pyamg's
        definition), of the operators the cycle applies (the sparsified ones where they are)."""
        return sum(self._nnz) / self._nnz[0]

    @property
    def galerkin_complexity(self):
        """The same of the Galerkin operators (sparse and hybrid Galerkin keep them too)."""
        return sum(self._galerkin_nnz) / self._galerkin_nnz[0]

    @property
    def grid_complexity(self):
        """Sum of the levels' rows over the finest level's."""
        return sum(self._rows) / self._rows[0]

    @property
    def level_ranks(self):
        """The ranks each level of the whole hierarchy lives on (fewer on agglomerated levels)."""
        return list(self._ranks)

    @watched("MultilevelSolver.describe")
    def describe(self):
        """Collective. The hierarchy level by level.

        Returns
        -------
        list of dict
            One dict per level of the whole hierarchy: rows, nnz, its share of the operator
            complexity, the ranks it lives on, strategies, and the busiest rank's
            halo-exchange messages (inter- and intra-node), this rank's setup seconds (and,
            for a level built in one C++ call, per step: ``setup_parts``); a level moved onto
            fewer ranks also has ``moved``: per move (two when a stage moves the level again
            at once), the ranks it came from and the busiest receiver's messages and bytes
            when a vector is gathered (scattering it back sends as many the other way).
        """
        out = []
        for k, lvl in enumerate(self._own_levels):
            row = {"level": k, "rows": lvl.rows, "nnz": self._nnz[k], "complexity": self._nnz[k] / self._nnz[0],
                   "ranks": self.comm.size,
                   "strategy": lvl.strategy, "product_strategy": lvl.product_strategy or None,
                   **_busiest(lvl.halo_stats()), "setup_s": lvl.setup_s, "setup_parts": lvl.setup_parts,
                   "sparsified": None}
            if lvl.sparsified is not None:
                done = lvl.sparsified
                row["sparsified"] = {"gamma": done["gamma"], "nnz_before": done["nnz_before"],
                                     "nnz_after": done["nnz_after"], "dropped": done["dropped"],
                                     "before": _busiest(done["before"]), "after": _busiest(done["after"])}
            out.append(row)
        if self.inner is not None or self.levels[-1].agglomerated:
            busiest = halo_summary(self.coarse.move.R)["max"]
            moved = {"ranks_from": self.comm.size,
                     "recv_msgs_max": int(busiest["msgs_recv_intra"] + busiest["msgs_recv_inter"]),
                     "recv_bytes_max": int(busiest["bytes_recv_intra"] + busiest["bytes_recv_inter"])}
            more = self.inner.describe() if self.inner is not None else None
            more = self.comm.bcast(more if self.comm.rank == 0 else None, root=0)
            more[0]["moved"] = [moved, *more[0].get("moved", [])]  # a level moved twice at once: both moves
            for row in more:
                row["level"] += len(out)
                row["complexity"] = row["nnz"] / self._nnz[0]
            out.extend(more)
        return out

    @property
    def _own_levels(self):
        """The levels this communicator smooths (not the last, when it moved elsewhere)."""
        return self.levels[:-1] if self.levels[-1].agglomerated else self.levels

    @property
    def gammas(self):
        """Each level's drop tolerance now (0 where nothing was dropped; the adaptive solve
        lowers them)."""
        return [lvl.sparsified["gamma"] if lvl.sparsified is not None else 0.0 for lvl in self.levels]

    def add_back(self, s):
        """Collective. The adaptive solve's update: entries put back into the finest
        sparsified levels.

        The finest ``s`` levels whose drop tolerance is still above 0 get gamma / 10 (0 below
        0.01) and their sparsified copy and smoother made again (thesis Algorithm 4.4: until
        entries went back into s operators).

        Parameters
        ----------
        s : int
            How many levels to update.

        Returns
        -------
        list of (int, float)
            ``[(level, new gamma)]`` (empty when no level is sparsified any more).
        """
        gammas = self.gammas
        done = []
        for k in [k for k, g in enumerate(gammas) if g > 0][:s]:
            gamma = relaxed(gammas[k])
            resparsify(self.levels, k, self.sparsification, gamma, self._strength_theta, self._profile)
            self.smoothers[k] = self._smoother(self.levels[k])
            self._nnz[k] = self.levels[k].sparsified["nnz_after"]
            done.append((k, gamma))
        return done

    def cycle(self, b, out=None, kind=None):
        """Collective. One cycle applied to this rank's part of b (zero initial guess): M b.

        Parameters
        ----------
        b : ndarray
            This rank's part of the right-hand side.
        out : ndarray, optional
            Where M b is written (else a new array).
        kind : {"V", "W"}, optional
            The cycle (default: the setup's ``cycle``).

        Returns
        -------
        ndarray
            M b: ``out`` if given, else a new array.
        """
        if self._work is None:
            self._work = cycle_work(self.levels)
        kind = kind or self.cycle_type
        x = mgcycle(self.levels, self.smoothers, self.coarse, np.ascontiguousarray(b, dtype=np.float64),
                    self.correction, self.level_times, self._work, visits=2 if kind == "W" else 1)
        if out is None:
            return np.array(x)
        out[:] = x
        return out

    def aspreconditioner(self, cycle=None):
        """One cycle as a preconditioner, like pyamg's ``ml.aspreconditioner()``.

        Parameters
        ----------
        cycle : {"V", "W"}, optional
            The cycle applied (default: the setup's ``cycle``).

        Returns
        -------
        DistributedOperator
            A scipy ``LinearOperator`` on this rank's rows whose ``matvec(b)`` is one cycle
            from a zero guess (collective). On one rank,
            ``scipy.sparse.linalg.cg(A, b, M=ml.aspreconditioner())`` takes the iterations
            of ``ml.solve(b, accel="cg")``; on any number,
            :func:`commsolve.krylov.cg` / ``gmres`` / ``bicgstab`` take it as ``M``.

        Raises
        ------
        ValueError
            For a cycle other than "V" or "W".
        """
        kind = self.cycle_type if cycle is None else cycle
        check_cycle(kind)
        n = self.A.local_rows
        ids = self.A.owned_rows()
        return DistributedOperator(self.comm, (n, n), lambda b: self.cycle(b, kind=kind), global_shape=self.A.shape,
                                   name=f"AMG {kind}-cycle ({self.method})", rows=ids, cols=ids)

    @watched("MultilevelSolver.solve")
    def solve(self, b, x0=None, tol=1e-8, accel="cg", maxiter=200, adaptive=False):
        """Collective. Solves ``A x = b`` (this rank's rows) to ``||b - A x|| <= tol ||b||``.

        :attr:`last_solve` holds the residual history, iterations, the mean convergence
        factor per iteration, and the solve time.

        Parameters
        ----------
        b : ndarray
            This rank's rows of the right-hand side.
        x0 : ndarray, optional
            This rank's rows of the initial guess (zero by default).
        tol : float
            The relative residual to reach.
        accel : {"cg", "gmres", "bicgstab", None}
            ``"cg"``: CG preconditioned by one cycle (the setup's, V or W; for a symmetric A:
            on a matrix the setup found nonsymmetric, :attr:`last_solve` carries a warning
            suggesting GMRES); ``"gmres"``: restarted GMRES(30) right-preconditioned by one
            cycle (nonsymmetric A); ``"bicgstab"``: BiCGStab right-preconditioned by one cycle
            (nonsymmetric A, two cycles per iteration, no restart); ``None``: cycles alone
            (see :mod:`commsolve.krylov`).
        maxiter : int
            At most this many iterations.
        adaptive : tuple, dict, str or None, optional
            This solve's adaptive setting (default: the solver's, see :func:`solver`; None:
            off), which needs ``accel="cg"``; its updates are in ``last_solve["updates"]``
            (they stay for later solves).

        Returns
        -------
        x : ndarray
            This rank's rows of the solution.
        info : int
            As scipy's solvers: 0 when converged, else the iterations done (the solution is
            then not to be trusted; :attr:`last_solve` says how far it got).

        Raises
        ------
        CollectiveError
            On every rank: when the ranks passed different arguments, for an unknown
            accelerator, an adaptive setting without ``accel="cg"`` (or without a sparse or
            hybrid sparsification), a ``b`` or ``x0`` on some rank of the wrong shape, complex
            or with non-finite values, a non-finite residual or a breakdown.
        """
        agree_args(self.comm, "MultilevelSolver.solve", tol=tol, accel=accel, maxiter=maxiter,
                   x0_given=x0 is not None, adaptive=adaptive)
        adaptive = self.adaptive if adaptive is False else run_agreed(self.comm, self._check_adaptive, adaptive)
        A = self.A
        error = None
        try:
            if accel not in ACCELERATORS:
                raise ValueError(f"unknown accelerator {accel!r} (known: 'cg', 'gmres', 'bicgstab', None)")
            if adaptive is not None and accel != "cg":
                raise ValueError(f"the adaptive solve restarts CG (accel='cg'), not {accel!r}")
            b = local_vector(b, A.local_rows, "b")
            x = np.zeros(A.local_rows) if x0 is None else local_vector(x0, A.local_rows, "x0")
        except ValueError as e:
            error = str(e)
        agree(self.comm, error, where="MultilevelSolver.solve")
        history = []
        bnorm = np.sqrt(dot(self.comm, b, b))
        t0 = time.perf_counter()
        updates = []
        if accel == "cg" and adaptive is not None:
            its = self._adaptive_cg(b, x, tol * bnorm, maxiter, history, adaptive, updates)
        elif accel == "cg":
            its = pcg_iterate(A, self.cycle, b, x, tol * bnorm, maxiter, history)
        elif accel == "gmres":
            its = gmres_iterate(A, self.cycle, b, x, tol * bnorm, maxiter, history)
        elif accel == "bicgstab":
            its = bicgstab_iterate(A, self.cycle, b, x, tol * bnorm, maxiter, history)
        else:
            its = self._stationary(b, x, tol * bnorm, maxiter, history)
        elapsed = self.comm.allreduce(time.perf_counter() - t0, op=mpi().MAX)
        converged = history[-1] <= tol * bnorm
        factor = (history[-1] / history[0]) ** (1.0 / its) if its > 0 and history[0] > 0 else 0.0
        self.last_solve = {"iterations": its, "residuals": [float(h) for h in history], "converged": bool(converged),
                           "convergence_factor": float(factor), "solve_s": elapsed, "accel": accel,
                           "warnings": self._warnings(accel), "updates": updates, "gammas": self.gammas}
        return x, (0 if converged else its)

    def _warnings(self, accel):
        if accel == "cg" and not self.symmetric:
            return [f"A is not symmetric (|y^T A x - x^T A y| / |y^T A x| = {self.asymmetry:.1e} for random x, y): "
                    "CG assumes a symmetric positive definite matrix, and its answer is not to be trusted even "
                    "when it converges; use accel='gmres' or accel='bicgstab' (--accel gmres, --accel bicgstab)"]
        return []

    def _adaptive_cg(self, b, x, target, maxiter, history, adaptive, updates):
        """CG (x in place) that, every ``adaptive.k`` iterations converging slower than
        ``adaptive.rho`` per iteration, puts entries back (:meth:`add_back`) and restarts
        from the latest x, or from the block's first if the residual grew over it. Thesis
        Algorithm 4.4 with two stated differences: it restarts PCG after every k iterations
        and puts entries back whenever ||r|| / ||r0|| is still above tol (rho = 0 is that
        trigger); here CG runs on and restarts only when the preconditioner changed, and the
        trigger is the convergence factor. CG breaking down
        (a preconditioner no longer positive definite) counts as such a block too. Appends every
        residual to ``history`` (a restart's first is the previous run's last, or the
        block's first iterate's); returns the iterations done; an entry per update in
        ``updates``."""
        k = adaptive.k
        its = 0
        while True:
            h, block = [], {"x": x.copy()}

            def stop(it, hist, xx):
                if it % k:
                    return False
                start, now = hist[it - k], hist[it]
                if start > 0 and (now / start) ** (1.0 / k) > adaptive.rho and any(g > 0 for g in self.gammas):
                    block["diverged"] = now > start
                    return True
                block["x"] = xx.copy()
                return False

            try:
                done = pcg_iterate(self.A, self.cycle, b, x, target, maxiter - its, h, stop)
            except CollectiveError as e:  # the preconditioner lost definiteness: too much was dropped
                if "broke down" not in str(e) or not any(g > 0 for g in self.gammas):
                    raise
                done, block["diverged"], block["why"] = len(h) - 1, True, "CG broke down"
            history.extend(h if not history else h[1:])
            its += done
            if h[-1] <= target or its >= maxiter or "diverged" not in block:
                return its
            if block["diverged"]:
                x[:] = block["x"]
                r = b - self.A.matvec(x)
                history.append(float(np.sqrt(dot(self.comm, r, r))))
            changed = self.add_back(adaptive.s)
            factor = (h[done] / h[max(done - k, 0)]) ** (1.0 / max(min(k, done), 1)) if done else float("nan")
            updates.append({"iteration": its, "factor": float(factor),
                            "why": block.get("why", f"converging slower than {adaptive.rho:g} per iteration"),
                            "restart": "from the block's first iterate" if block["diverged"] else "from the latest",
                            "levels": [lv for lv, _ in changed], "gammas": [g for _, g in changed]})

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
        spars = self.sparsification
        how = "" if spars is None else f", {spars.method} sparsified with {spars.lumping} lumping"
        galerkin = "" if spars is None or not spars.keeps_galerkin else f" (Galerkin {self.galerkin_complexity:.3f})"
        lines = [f"AMG ({self.method}, {self.smoother}{how}) on {self.comm.size} rank(s): {len(self._nnz)} levels, "
                 f"operator complexity {self.operator_complexity:.3f}{galerkin}, grid complexity "
                 f"{self.grid_complexity:.3f}"]
        own = self._own_levels
        for k, (rows, nnz, ranks) in enumerate(zip(self._rows, self._nnz, self._ranks)):
            note = ""
            if k < len(own) and own[k].sparsified is not None:
                note = f"  gamma {own[k].sparsified['gamma']:g}: {own[k].sparsified['nnz_before']:,} nnz before"
            where = f"strategy {own[k].strategy}" if k < len(own) else f"on {ranks} rank(s)"
            lines.append(f"  level {k}: {rows:>10,} rows {nnz:>12,} nnz  {where}{note}")
        return "\n".join(lines)


def _busiest(summary):
    """The busiest rank's halo-exchange figures of a :func:`~commsolve.stats.summarize` result."""
    return {"inter_msgs_max": int(summary["max"]["msgs_sent_inter"]),
            "intra_msgs_max": int(summary["max"]["msgs_sent_intra"]),
            "inter_bytes_max": int(summary["max"]["bytes_sent_inter"])}

