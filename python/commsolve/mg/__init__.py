"""Multigrid-preconditioned CG on structured grids (Nakajima's MGCG in pGW3D-FVM, HPCG's
solver): geometric multigrid (cell-centred 2 x 2 x 2 aggregation, Galerkin coarse
operators, V-cycle) as the preconditioner of CG, with

- the storage format of every level's operator (``format``: CSR, ELL, sliced ELL,
  SELL-C-sigma or DIA, :meth:`commsolve.ParCSR.set_format`), which its SpMV, residuals and
  Gauss-Seidel sweeps run on,
- per-rank smoothing: IC(0) (Nakajima's localized IC(0); ILU(0) is the same factor on a
  symmetric matrix), HPCG's symmetric Gauss-Seidel, or any AMG smoother,
- coarse-grid aggregation (``cga``): ``"flat"`` (CGA: the first level with fewer than
  ``cga_rows`` rows per rank is gathered onto one rank, which runs the rest of the
  hierarchy), ``"hierarchical"`` (hCGA: first, at fewer than ``hcga_rows`` rows per rank,
  onto ceil(P / ``hcga_group``) ranks — groups of ``hcga_group`` consecutive ranks when it
  divides P —, then as CGA), ``"none"`` (every level on every rank, the coarsest gathered
  whole on each and solved there), or ``"auto"`` (the mode and its switch levels chosen by
  the cost model, :mod:`commsolve.mg.choice`).

The moves are :mod:`commsolve.redistribute` plans: counted, recorded and priced like every
halo exchange. Example (``mpiexec -n 2 python -m mpi4py example.py``)::

    solver = cs.mg.MGCG("groundwater3d:64", MPI.COMM_WORLD, format="sell", cga="hierarchical")
    x, info = solver.solve(tol=1e-8)           # b = 1 on every cell by default
    print(solver.last_solve["iterations"], solver.last_solve["per_iteration_s"])
    for level in solver.last_solve["levels"]: print(level)
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from .. import amg
from .._collective import agree, agree_args, mpi, run_agreed
from .._watchdog import watched
from ..krylov import dot, pcg_iterate
from ..boxes import BoxGrid, box_process_grid
from ..gallery import GallerySpec, grid_shape, parse_spec
from ..partition import Distribution
from .stages import CGA_MODES, CGA_ROWS, HCGA_GROUP, HCGA_ROWS, cga_stages, check_switches

__all__ = ["MGCG", "CGA_MODES", "DECOMPOSITIONS", "FORMATS", "cga_stages"]

FORMATS = ("csr", "ell", "sliced-ell", "sell", "dia")  # and "sell-C-SIGMA" (ParCSR.set_format)
DECOMPOSITIONS = ("slabs", "blocks")


def _problem(A, comm, grid, partition, topology, strategy, decomposition, procs):
    """(ParCSR, grid) from a ParCSR, a scipy matrix with the communicator, or a gallery spec;
    with ``decomposition="blocks"`` the rows renumbered box by box (:class:`BoxGrid`)."""
    from ..parcsr import ParCSR

    if isinstance(A, ParCSR):
        if grid is None:
            raise ValueError("geometric multigrid needs the structured grid the rows number: grid=(nx, ny, nz) or a "
                             "BoxGrid")
        if decomposition == "blocks" and not isinstance(grid, BoxGrid):
            raise ValueError("a ParCSR in box order comes with its BoxGrid (grid=); decomposition='blocks' renumbers "
                             "a gallery spec or a scipy matrix")
        return A, grid
    if comm is None:
        raise ValueError("pass a ParCSR, a gallery spec, or a scipy matrix with the communicator (comm=)")
    spec = None
    if isinstance(A, (str, GallerySpec)):
        spec = run_agreed(comm, lambda: A if isinstance(A, GallerySpec) else parse_spec(A))
        grid = grid if grid is not None else grid_shape(spec, comm.size)
        agree(comm, None if grid is not None else
              f"'{spec.text}' is not a 3D structured grid (poisson3d, poisson3d27, groundwater3d, hpcg): pass grid=")
    elif grid is None:
        raise ValueError("geometric multigrid needs the structured grid the rows number: grid=(nx, ny, nz)")
    if decomposition == "slabs":
        if spec is not None:
            return ParCSR.from_spec(spec, comm, partition=partition, topology=topology, strategy=strategy), grid
        return ParCSR.from_global(A, comm, partition=partition, topology=topology, strategy=strategy), grid
    extents = tuple(int(g) for g in grid)
    boxes = run_agreed(comm, lambda: BoxGrid.blocks(extents, box_process_grid(extents, comm.size)
                                                    if procs is None else _procs(procs, comm.size, extents)))
    offsets = boxes.offsets()
    lex = boxes.lexicographic(np.arange(offsets[comm.rank], offsets[comm.rank + 1]))
    local = spec.build(rows=lex, nprocs=comm.size) if spec is not None else sp.csr_matrix(A)[lex]
    local = sp.csr_matrix((local.data, boxes.from_lexicographic(local.indices), local.indptr), shape=local.shape)
    local.sort_indices()
    return ParCSR.from_local_rows(local, comm, row_dist=Distribution.from_offsets(offsets), topology=topology,
                                  strategy=strategy), boxes


def _procs(procs, nranks, extents):
    procs = tuple(int(p) for p in procs)
    if len(procs) != 3 or min(procs) < 1 or int(np.prod(procs)) != nranks:
        raise ValueError(f"procs must be three positive numbers whose product is the {nranks} ranks, got {procs}")
    if any(p > e for p, e in zip(procs, extents)):
        raise ValueError(f"procs {procs}: more boxes than cells along a dimension of the {extents} grid")
    return procs


class MGCG:
    """Geometric-multigrid-preconditioned CG (set up once, solved as often as wanted)."""

    @watched("mg.MGCG (the setup)")
    def __init__(self, A, comm=None, *, grid=None, format="csr", cga="none", cga_rows=CGA_ROWS, hcga_rows=HCGA_ROWS,
                 hcga_group=HCGA_GROUP, smoother="ic0", sweeps=1, correction=1.0, strategy="standard", max_coarse=1,
                 max_levels=25, partition="contiguous", decomposition="slabs", procs=None, topology=None, profile=None,
                 progress=None):
        """Collective. Sets up the hierarchy.

        Parameters
        ----------
        A : ParCSR, scipy sparse matrix or str
            A :class:`~commsolve.ParCSR`, a scipy matrix every rank of ``comm`` passes whole,
            or a gallery spec (each rank builds its own rows; the grid is the spec's).
        comm : mpi4py.MPI.Comm, optional
            The communicator of a scipy matrix or a spec (a ParCSR carries its own).
        grid : tuple of int or BoxGrid, optional
            (nx, ny, nz), x fastest. A ParCSR already in box order comes with its
            :class:`commsolve.boxes.BoxGrid` as ``grid``.
        format : str
            One of :data:`FORMATS` or ``"sell-C-SIGMA"``, for every level's operator (CSR
            where some rank's block cannot take it).
        cga : str
            One of :data:`CGA_MODES` with its switches (:func:`cga_stages`), or ``"auto"``:
            the mode (none, CGA, hCGA with groups of ``hcga_group``, or the leaders' first
            move alone) and its switch levels chosen by the cost model with the machine
            ``profile`` (:func:`commsolve.mg.choice.choose_cga`; the predictions in
            :attr:`cga_choice`).
        cga_rows, hcga_rows : float
            The switches: CGA's and hCGA's rows per rank (:func:`cga_stages`).
        hcga_group : int
            hCGA's group of consecutive ranks, 2 or more (:func:`cga_stages`).
        smoother : str
            Any of :data:`commsolve.amg.SMOOTHERS` (default IC(0)).
        sweeps : int
            Sweeps of the smoother before and after each coarse correction.
        correction : float
            The coarse corrections' factor (:func:`commsolve.amg.solver`).
        strategy : str
            The halo exchanges' (any of :data:`commsolve.parcsr.STRATEGIES`).
        max_coarse : int
            The hierarchy coarsens until a level has at most this many rows, or has
            ``max_levels`` levels (the coarsest is then solved directly).
        max_levels : int
            See ``max_coarse``.
        partition : str or Distribution
            How the rows of a scipy matrix or a spec are split with ``"slabs"``
            (:meth:`~commsolve.ParCSR.from_global`).
        decomposition : {"slabs", "blocks"}
            ``"slabs"`` (rows in grid order, split contiguously across the ranks: slabs of
            z-planes) or ``"blocks"`` (a box of cells per rank on the process grid
            ``procs``; the rows renumbered box by box, :meth:`cells` maps them back).
        procs : tuple of int, optional
            The process grid (px, py, pz) of ``"blocks"``, by default the one of least
            surface, :func:`commsolve.boxes.box_process_grid`.
        topology : Topology or int, optional
            The node layout for a scipy matrix or a spec (None: the real one of ``comm``; an
            int: that many ranks per node).
        profile : MachineProfile, str or path, optional
            The machine profile ``cga="auto"`` prices with.
        progress : callable, optional
            ``progress(k, rows)`` once coarse level ``k`` is formed, with its global rows.

        Raises
        ------
        ValueError
            For an unknown decomposition, bad switches, ``cga="auto"`` without ``profile``,
            or a missing ``grid`` or ``comm``.
        CollectiveError
            On every rank: when the ranks passed different arguments, for an unknown mode or
            format, ``procs`` that do not fit the ranks and the grid, a spec that is not a 3D
            structured grid (without ``grid``), or as :func:`commsolve.amg.solver`.
        """
        comm = A.comm if comm is None and hasattr(A, "comm") else comm
        if comm is not None:
            agree_args(comm, "mg.MGCG", format=format, cga=cga, cga_rows=cga_rows, hcga_rows=hcga_rows,
                       hcga_group=hcga_group, smoother=smoother, sweeps=sweeps, grid=grid, max_coarse=max_coarse,
                       max_levels=max_levels, profile=profile, decomposition=decomposition, procs=procs)
        if decomposition not in DECOMPOSITIONS:
            raise ValueError(f"unknown decomposition '{decomposition}' (known: {', '.join(DECOMPOSITIONS)})")
        check_switches(cga_rows, hcga_rows, hcga_group)
        if cga == "auto" and profile is None:
            raise ValueError("cga='auto' chooses the mode and its switch levels with a machine profile: pass profile=")
        A, grid = _problem(A, comm, grid, partition, topology, strategy, decomposition, procs)
        self.comm = A.comm
        if cga != "auto":
            stages = run_agreed(self.comm, cga_stages, cga, self.comm.size, cga_rows, hcga_rows, hcga_group)
        run_agreed(self.comm, A.set_format, format)  # an unknown format fails here, on every rank alike
        t0 = time.perf_counter()

        def setup(stages):
            return amg.solver(A, method="geometric", grid=grid, strategy=strategy,
                              smoother=smoother, sweeps=sweeps, correction=correction, agglomerate=stages,
                              max_coarse=max_coarse, max_levels=max_levels, progress=progress)

        self.cga_choice = None
        if cga == "auto":
            from .choice import choose_cga

            self.ml = setup([])
            stages, self.cga_choice = choose_cga(self.ml, profile, hcga_group)
            if stages:
                self.ml = setup(stages)
        else:
            self.ml = setup(stages)
        for solver in _chain(self.ml):
            for lvl in solver.levels:
                _apply_format(lvl.A, format)
        self.setup_s = self.comm.allreduce(time.perf_counter() - t0, op=mpi().MAX)
        self.format, self.cga, self.stages, self.smoother = format, cga, stages, smoother
        self.boxes = grid if isinstance(grid, BoxGrid) else None
        self.grid = tuple(int(g) for g in (grid.extents if self.boxes is not None else grid))
        self.last_solve = None

    @property
    def A(self):
        """The finest level's operator (a ParCSR)."""
        return self.ml.A

    def cells(self):
        """Local. The lexicographic index (x fastest over the whole grid) of each of this
        rank's rows.

        Returns
        -------
        ndarray of int
            ``b_global[solver.cells()]`` is this rank's b, and x goes back the same way.
        """
        rows = self.A.owned_rows()
        return rows if self.boxes is None else self.boxes.lexicographic(rows)

    def aspreconditioner(self):
        """One V-cycle of this geometric multigrid as a preconditioner, like pyamg's.

        Returns
        -------
        DistributedOperator
            :meth:`commsolve.amg.MultilevelSolver.aspreconditioner`'s: a scipy
            ``LinearOperator`` on this rank's rows (collective), which
            :func:`commsolve.krylov.cg` and, on one rank, scipy's solvers take as ``M``.
        """
        return self.ml.aspreconditioner()

    def describe(self):
        """Collective. The hierarchy level by level.

        Returns
        -------
        list of dict
            :meth:`commsolve.amg.MultilevelSolver.describe`'s.
        """
        return self.ml.describe()

    @watched("MGCG.solve")
    def solve(self, b=None, x0=None, tol=1e-8, maxiter=500):
        """Collective. CG preconditioned by one V-cycle on ``A x = b`` to
        ``||b - A x|| <= tol ||b||``.

        :attr:`last_solve`: iterations, residual history, solve time and time per iteration
        (the slowest rank's), and per level (:meth:`level_report`) the seconds spent there
        and the messages the solve sent there, as recorded by the executors.

        Parameters
        ----------
        b : ndarray, optional
            This rank's rows of the right-hand side (default 1 everywhere).
        x0 : ndarray, optional
            This rank's rows of the initial guess (default 0).
        tol : float
            The relative residual to reach, > 0.
        maxiter : int
            At most this many iterations.

        Returns
        -------
        x : ndarray
            This rank's rows of the solution.
        info : int
            0 when converged, else the iterations done.

        Raises
        ------
        CollectiveError
            On every rank: when the ranks passed different arguments, for a ``b`` on some
            rank of the wrong shape or with non-finite values, a ``tol`` not > 0, or when CG
            breaks down or meets a non-finite residual.
        """
        agree_args(self.comm, "MGCG.solve", tol=tol, maxiter=maxiter, b_given=b is not None, x0_given=x0 is not None)
        A = self.A
        b = np.ones(A.local_rows) if b is None else np.asarray(b, dtype=np.float64)
        error = None
        if b.shape != (A.local_rows,):
            error = f"b must hold this rank's {A.local_rows} rows, got shape {b.shape}"
        elif not np.all(np.isfinite(b)):
            error = "b holds non-finite values"
        elif not tol > 0:
            error = f"tol must be > 0, got {tol}"
        agree(self.comm, error, where="MGCG.solve")
        x = np.zeros(A.local_rows) if x0 is None else np.array(x0, dtype=np.float64)
        chain = _chain(self.ml)
        for solver in chain:
            solver.level_times = np.zeros(len(solver.levels))
            if solver.levels[-1].agglomerated:
                solver.coarse.seconds = 0.0
            for op in _operators(solver):
                op.reset_recorded()
        history = []
        bnorm = np.sqrt(dot(self.comm, b, b))
        self.comm.Barrier()
        t0 = time.perf_counter()
        its = pcg_iterate(A, self.ml.cycle, b, x, tol * bnorm, maxiter, history)
        elapsed = self.comm.allreduce(time.perf_counter() - t0, op=mpi().MAX)
        converged = bool(history[-1] <= tol * bnorm)
        levels = self.level_report()
        for solver in chain:
            solver.level_times = None
            if solver.levels[-1].agglomerated:
                solver.coarse.seconds = None
        self.last_solve = {"iterations": its, "converged": converged, "residuals": [float(h) for h in history],
                           "solve_s": elapsed, "per_iteration_s": elapsed / max(its, 1), "levels": levels,
                           "relative_residual": float(history[-1] / bnorm) if bnorm > 0 else 0.0}
        return x, (0 if converged else its)

    def level_report(self):
        """Collective. What the last solve spent level by level.

        Returns
        -------
        list of dict
            Per level of the whole hierarchy (after a solve): rows, the ranks it lives on,
            its operator's format (CSR where the asked one could not hold it), the seconds
            spent there in the V-cycles (the slowest rank's; the coarsest level's include its
            direct solve), and what its exchanges sent during the solve: messages and bytes
            summed over ranks, and the busiest rank's messages (recorded by the executors:
            the operator's halo exchanges, the interpolation's both ways; CG's own products
            on level 0). A moved level has ``moves``: per move onto it, the ranks it came
            from, the slowest rank's seconds in its gathers and scatters, and their messages.
        """
        return _report(self.ml)

    def __repr__(self):
        stages = ", ".join(f"< {r:g} rows/rank -> {m} rank(s)" for r, m in self.stages) or "none"
        boxes = "" if self.boxes is None else f" in {' x '.join(map(str, self.boxes.procs))} boxes"
        return (f"MGCG on a {' x '.join(map(str, self.grid))} grid{boxes}, format {self.format}, "
                f"smoother {self.smoother}, "
                f"CGA {self.cga} ({stages})\n{self.ml!r}")


def _apply_format(A, format):
    """Collective on A's communicator. A level's operator in ``format``, or in CSR where some
    rank's block cannot take it (DIA refuses a block it would store with too much padding:
    a Galerkin coarse level of a 27-point operator can be one)."""
    try:
        A.set_format(format)
        ok = True
    except ValueError:
        ok = False
    if not A.comm.allreduce(ok, op=mpi().LAND):
        A.set_format("csr")


def _chain(ml):
    """The solver and the solvers its coarse levels moved to, as far as this rank takes part."""
    out = [ml]
    while out[-1].inner is not None:
        out.append(out[-1].inner)
    return out


def _operators(solver):
    """The ParCSRs a solver's cycle exchanges through: each level's operator and interpolation,
    and the move of a level that went elsewhere."""
    ops = []
    for lvl in solver.levels:
        ops += [m for m in (lvl.A, lvl.P) if m is not None]
    if solver.levels[-1].agglomerated:
        ops.append(solver.coarse.move.R)
    return ops


def _sent(stats_list):
    """[msgs, bytes] sent by this rank in the given CommStats."""
    total = sum((s.array.sum(axis=0) for s in stats_list), np.zeros(8, dtype=np.int64))
    return [int(total[0] + total[1]), int(total[2] + total[3])]


def _report(solver):
    """Collective on the solver's communicator: :meth:`MGCG.level_report` of it and of the
    solvers its coarse levels moved to (broadcast from rank 0, which takes part in all)."""
    comm = solver.comm
    own = solver._own_levels
    times = np.empty(len(solver.levels))
    comm.Allreduce(np.asarray(solver.level_times, dtype=np.float64), times, op=mpi().MAX)
    rows = []
    for k, lvl in enumerate(own):
        recorded = [lvl.A.recorded_stats()]
        if lvl.P is not None:
            recorded += [lvl.P.recorded_stats(), lvl.P.recorded_stats(reverse=True)]
        rows.append((k, lvl.rows, lvl.A.format, times[k], _sent(recorded)))
    moved = None
    if solver.levels[-1].agglomerated:
        R = solver.coarse.move.R
        moved = _sent([R.recorded_stats(), R.recorded_stats(reverse=True)])
        rows.append((len(own), None, None, comm.allreduce(solver.coarse.seconds, op=mpi().MAX), moved))
    out = []
    for k, nrows, fmt, seconds, mine in rows:
        totals = np.empty(2, dtype=np.int64)
        comm.Allreduce(np.array(mine, dtype=np.int64), totals)
        busiest = comm.allreduce(mine[0], op=mpi().MAX)
        out.append({"level": k, "rows": nrows, "ranks": comm.size, "format": fmt, "time_s": float(seconds),
                    "msgs": int(totals[0]), "bytes": int(totals[1]), "msgs_max": int(busiest)})
    if not moved:
        return out
    inner = _report(solver.inner) if solver.inner is not None else None
    inner = comm.bcast(inner if comm.rank == 0 else None, root=0)
    move = out.pop()  # the move's own seconds (gather and scatter) and messages
    for r in inner:
        r["level"] += len(out)
    move = {"from": comm.size, "time_s": move["time_s"], "msgs": move["msgs"], "bytes": move["bytes"],
            "msgs_max": move["msgs_max"]}
    inner[0]["moves"] = [move, *inner[0].get("moves", [])]  # a level moved twice at once: both moves
    return out + inner

