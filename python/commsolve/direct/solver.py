"""The distributed solver object that :func:`~commsolve.direct.factor` returns: factors spread
over a process grid (a C++ ``TriSolve``) and the solves with iterative refinement."""

from __future__ import annotations

import os
import time
import warnings

import numpy as np
import scipy.sparse as sp

from .. import _core
from .._collective import CollectiveError, agree, agree_args, mpi, run_agreed
from .._watchdog import watched
from ..stats import CommStats
from ..trees import tree_shape
from .options import solve_options, solve_threads
from .refinement import ITMAX, iterative_refinement
from .selinv import selected_inverse as _selected_inverse
from .serial import rhs_array

__all__ = ["DistributedLU", "device_available", "Residual", "SOLVE_STEPS", "XY_STEPS", "Z_STEPS", "REDISTRIBUTE_STEPS",
           "TIME_PARTS"]

# The steps of a solve's CommStats: inside a grid (XY), between grids (Z), and the moves of b
# to the ranks that solve and of x back.
SOLVE_STEPS = ("L broadcast", "L reduce", "U broadcast", "U reduce", "Z reduce", "Z broadcast", "b to diagonal",
               "x from diagonal", "grid sync")  # C++ SolveStep; grid sync: the leaf forests' (leaf_sync)
XY_STEPS, Z_STEPS, REDISTRIBUTE_STEPS = (0, 1, 2, 3, 8), (4, 5), (6, 7)
# A solve's parts, as the C++ timers measure them on every rank.
TIME_PARTS = ("redistribute_b", "l_solve", "z_comm", "u_solve", "redistribute_x", "total")


class Residual:
    """``b - A x`` and ``|A| |x|`` for x distributed by rows: A as a ParCSR (its halo exchange),
    ``|A|`` as its local rows over ``[owned entries | halo]``. Collective construction.

    Parameters
    ----------
    A : ParCSR
        The matrix, distributed like b and x (kept as ``A``).
    """

    def __init__(self, A):
        self.A = A
        local = A.local_matrix()
        owned = A.owned_cols()
        halo = np.asarray(A.col_map)
        where = np.full(A.shape[1], -1, dtype=local.indices.dtype)
        where[owned] = np.arange(owned.size)
        where[halo] = owned.size + np.arange(halo.size)
        # A's own row pointers, its columns renumbered (each row's may then be out of order:
        # the product does not mind); no COO round trip (a fifth of a second at 9 M entries)
        self.abs_local = sp.csr_matrix((np.abs(local.data), where[local.indices], local.indptr),
                                       shape=(A.local_rows, owned.size + halo.size))
        self.nz = A.comm.allreduce(int(np.diff(self.abs_local.indptr).max(initial=0)), op=mpi().MAX) + 1

    def residual(self, B):
        """Local. The ``residual`` that :func:`~commsolve.direct.refinement.iterative_refinement`
        takes, for the right-hand sides ``B``.

        Parameters
        ----------
        B : ndarray
            This rank's rows of the right-hand sides, shape (local_rows, nrhs).

        Returns
        -------
        callable
            ``residual(x, cols)``: ``B[:, cols] - A x``, column k of x for column ``cols[k]``
            of B; collective (one product with A per column).
        """
        return lambda x, cols: np.column_stack([B[:, c] - self.A.matvec(x[:, k]) for k, c in enumerate(cols)]) \
            if len(cols) else np.zeros((B.shape[0], 0))

    def abs_product(self, V):
        """Collective. ``|A| V`` on this rank's rows (one halo exchange per column of V).

        Parameters
        ----------
        V : ndarray
            This rank's rows, shape (local_rows, k).

        Returns
        -------
        ndarray
            ``|A| V``, this rank's rows, shape (local_rows, k).
        """
        return np.column_stack([self.abs_local @ np.concatenate([V[:, k], self.A.exchange(V[:, k])])
                                for k in range(V.shape[1])]) if V.shape[1] else V.copy()


def device_available(device="cuda"):
    """Local. Whether this build of commsolve has ``device``'s backend and this process sees
    such a device.

    Parameters
    ----------
    device : str
        The device's name (``"cuda"``).

    Returns
    -------
    bool
    """
    return bool(_core.device_available(device))


def _warn_if_bound(threads):
    """A warning when this process may run on fewer cores than its ``threads`` (its CPU
    affinity: mpiexec binds each rank to one core unless told otherwise)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else threads
    if cores < threads:
        warnings.warn(f"{threads} solve threads per rank, but this rank may run on {cores} core(s) only (its CPU "
                      f"affinity): start mpiexec with --bind-to none or --map-by slot:PE={threads} (commsolve's -np "
                      "does the former)", RuntimeWarning, stacklevel=3)


def _host_array(b):
    """``b`` as a host array, and what turns a host result back into ``b``'s kind: a CuPy
    array (anything with ``__cuda_array_interface__`` that CuPy takes) comes back as one."""
    if b is None or not hasattr(b, "__cuda_array_interface__"):
        return b, lambda x: x
    import cupy  # only where a device array was given

    return cupy.asnumpy(b), cupy.asarray


class DistributedLU:
    """LU factors spread over a process grid (from :func:`~commsolve.direct.factor`); solve
    many times.

    Built by :func:`~commsolve.direct.factor` from a few objects (the parameters).

    Attributes: ``grid`` (px, py, pz), ``algorithm``, ``tree``, ``allreduce``, ``partition``,
    ``forests`` (each supernode's forest, heap order), ``distribution`` (of b and x),
    ``pivoting`` (static pivoting: scales, row permutation), ``row_order`` / ``col_order``
    (the row of b factor row k reads / of x factor column k gives), ``shape``, ``nnz_LU``
    (entries of L and U, diagonal blocks once), ``local_entries`` (factor entries stored on
    this rank, inverted diagonal blocks and replicated ancestors included), ``factor_seconds``
    (``ordering``, ``allocate``, ``numeric``, ``distribute``, ``total``, and ``redistribute``
    when factored on the grids: see :func:`~commsolve.direct.factor`), ``factor_stats`` and
    ``planned_factor_stats`` (when factored on the grids: this rank's CommStats of the
    factorization, steps as ``factor3d.FACTOR_STEPS``, recorded and planned), ``factor_flops``,
    ``grid_ranking`` (grid="auto": every simulated configuration, fastest first) and, after a
    solve, ``solve_seconds``: the parts of the slowest rank's triangular solve
    (``redistribute_b``, ``l_solve``, ``z_comm``, ``u_solve``, ``redistribute_x``,
    ``redistribute`` = b + x and ``total``, all from C++ timers; total >= the sum of the
    parts), ``max`` (each part's largest value over the ranks: a rank that takes no part in
    the inter-grid steps may be the slowest) and ``refine`` (the slowest rank's seconds of
    iterative refinement, corrections included); ``berr`` (the componentwise backward error
    per right-hand side) and ``refine_steps``.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        The communicator the factors are spread over.
    core : _core.TriSolve
        Holding this rank's blocks.
    layout : SolveLayout
        Structure, grid, forests.
    analysis : Analysis
        The root's analysis (shape, structure, static pivoting, orders, nnz(L+U);
        :class:`~commsolve.direct.distributed.Analysis`).
    rhs : RhsMap
        How b and x are distributed.
    topology : Topology
        Which ranks share a node.
    report : FactorReport
        The report of the factorization (:class:`~commsolve.direct.distributed.FactorReport`).
    residual : Residual
        What refinement multiplies by.
    partition : str
        The forest partition.
    root : int
        The root rank (where a replicated b is read, and the selected inverse gathered).
    """

    def __init__(self, comm, core, layout, analysis, rhs, topology, report, residual, *, partition, root=0):
        self.comm, self._core, self.layout, self.analysis = comm, core, layout, analysis
        self.topology, self.report, self._residual = topology, report, residual
        self.partition, self.root = partition, root
        self.distribution = rhs.distribution
        mine = self.distribution.owned(comm.rank)
        self._row_scale, self._col_scale = analysis.pivoting.row_scale[mine], analysis.pivoting.col_scale[mine]
        self.solve_seconds = self.berr = self.refine_steps = None
        self._nrhs = self._stats = None
        self.selinv = None  # the last selected_inverse()'s SelinvReport

    structure = property(lambda self: self.analysis.structure,
                         doc="The supernodal structure of the matrix as factored (this rank's share of it where "
                             "the analysis ran in parallel on a grid of px x py layers, px and py > 1).")
    shape = property(lambda self: self.analysis.shape, doc="The matrix's shape.")
    pivoting = property(lambda self: self.analysis.pivoting, doc="The static pivoting (scales, row permutation).")
    row_order = property(lambda self: self.analysis.row_order, doc="The row of b that factor row k reads.")
    col_order = property(lambda self: self.analysis.col_order, doc="The row of x that factor column k gives.")
    nnz_LU = property(lambda self: self.analysis.nnz_LU, doc="Entries of L and U, diagonal blocks once.")
    grid = property(lambda self: tuple(self.layout.grid), doc="``(px, py, pz)``.")
    forests = property(lambda self: self.layout.forests, doc="Each supernode's forest, heap order.")
    options = property(lambda self: self._core.options, doc="The SolveOptions of the next solves.")
    algorithm = property(lambda self: self.options.algorithm, doc="The solve algorithm of the next solves.")
    tree = property(lambda self: self.options.tree.name, doc="The tree shape of the next solves, by name.")
    allreduce = property(lambda self: self.options.allreduce, doc="The inter-grid packing of the next solves.")
    threads = property(lambda self: self._core.threads, doc="Threads per rank, for the solve phases.")
    device = property(lambda self: self._core.device, doc='Where the solve phases run, ``"cpu"`` or ``"cuda"``.')
    tiny_pivots_replaced = property(lambda self: self.report.replaced,
                                    doc="Tiny pivots replaced in the factorization.")
    factor_seconds = property(lambda self: self.report.seconds,
                              doc="The factorization's seconds by phase (see :func:`~commsolve.direct.factor`).")
    factor_stats = property(lambda self: self.report.recorded,
                            doc="This rank's recorded CommStats of the factorization, when factored on the grids "
                                "(else None).")
    planned_factor_stats = property(lambda self: self.report.planned,
                                    doc="This rank's planned CommStats of the factorization, when factored on the "
                                        "grids (else None).")
    factor_flops = property(lambda self: self.report.flops,
                            doc="The factorization's floating-point operations (None when factored whole on the "
                                "root).")
    grid_ranking = property(lambda self: self.report.ranking,
                            doc='Every simulated configuration, fastest first, with ``grid="auto"`` (else None).')

    @property
    def local_entries(self):
        """Factor entries stored on this rank, inverted diagonal blocks and replicated ancestors included."""
        return self._core.local_entries

    @property
    def local_rows(self):
        """Rows of b and x on this rank."""
        return self._core.local_rows

    @property
    def residual_matrix(self):
        """A distributed like b and x (a ParCSR), what the residuals of the backward error and
        of iterative refinement multiply by (one product and one halo exchange of ``|x|`` per
        right-hand side and measurement; its own statistics)."""
        return self._residual.A

    @watched("DistributedLU.set_options")
    def set_options(self, *, algorithm=None, tree=None, seed=None, flat_threshold=None, allreduce=None,
                    threads=None, kernels=None, leaf_sync=None):
        """Collective. Another algorithm, tree shape, inter-grid packing, ``kernels``,
        ``leaf_sync`` or number of ``threads`` per rank for the next solves, same factors;
        what is not given stays as it is.

        Every rank must ask for the same (checked: a mismatch is an error on every rank, not
        a hang).

        Parameters
        ----------
        algorithm : str, optional
            One of :data:`~commsolve.direct.ALGORITHMS` (the 3D ones share the layout).
        tree : str, optional
            The tree shape.
        seed, flat_threshold : int, optional
            The tree shape's seed and flat threshold.
        allreduce : str, optional
            The inter-grid packing (:data:`~commsolve.direct.ALLREDUCE`).
        threads : int, optional
            Threads per rank. More than one thread: on a 1 x 1 x Pz grid each phase runs
            sync-free on the rank's threads (SC'23 Algorithm 4); on other grids the
            message-driven phases run on them (the calling thread doing MPI; not with
            3d-baseline, whose upper levels go one supernode at a time).
        kernels : str, optional
            One of :data:`~commsolve.direct.KERNELS`: with ``leaf_sync``, the SC'23 ablation's
            switches, see :class:`SolveOptions`.
        leaf_sync : bool, optional
            The leaf forests' counter allreduce and barrier (the SC'23 ablation's switch).

        Raises
        ------
        CollectiveError
            On every rank, when the ranks ask for different things or an option is not valid
            (a ValueError).
        """
        now = self.options
        new = run_agreed(self.comm, solve_options, self.grid[2], algorithm or now.algorithm,
                         tree or now.tree.name, now.tree.seed if seed is None else seed,
                         now.tree.flat_threshold if flat_threshold is None else flat_threshold,
                         allreduce or now.allreduce, kernels or now.kernels,
                         now.leaf_sync if leaf_sync is None else leaf_sync)
        n = self.threads if threads is None else run_agreed(self.comm, solve_threads, threads, self.grid)
        agree_args(self.comm, "DistributedLU.set_options", options=repr(new), threads=n)
        # fewer threads first, more threads last: each step checked against the other's setting
        if n < self.threads:
            run_agreed(self.comm, self._core.set_threads, n)
        if new != now:
            run_agreed(self.comm, self._core.set_options, new)
        if n > self.threads:
            run_agreed(self.comm, self._core.set_threads, n)
            _warn_if_bound(n)

    @watched("DistributedLU.to_device")
    def to_device(self, device):
        """Collective. Run the next solves' phases on ``device``.

        Needs a grid whose layers are one rank (1 x 1 x Pz), a build with CUDA
        (``SKBUILD_CMAKE_DEFINE=COMMSOLVE_CUDA=ON python3 scripts/build.py``) and a GPU on every
        rank (:func:`device_available`); the inter-grid steps and the moves of b and x stay on
        the host.

        Parameters
        ----------
        device : {"cuda", "cpu"}
            ``"cuda"`` (the sync-free kernel of SC'23 Algorithm 4, one thread block per
            supernode; this rank's factors are uploaded once to its GPU) or ``"cpu"`` (back on
            the host).

        Returns
        -------
        DistributedLU
            ``self``.

        Raises
        ------
        CollectiveError
            On every rank, when the ranks ask for different devices, for an unknown device, a
            grid whose layers are not one rank or ``kernels="per-block"`` (which runs on the CPU),
            or where any rank's build has no CUDA backend or finds no CUDA device (the others
            must not go on to solve without it).
        """
        agree_args(self.comm, "DistributedLU.to_device", device=str(device))

        def move():
            try:
                self._core.to_device(str(device))
            except RuntimeError as e:  # no CUDA backend or no device here: an error on every rank
                raise ValueError(str(e)) from e

        run_agreed(self.comm, move)
        return self

    def set_tree(self, tree, seed=None, flat_threshold=None):
        """Collective. Use another tree shape for the next solves (see :meth:`set_options`).

        Parameters
        ----------
        tree : str
            The tree shape.
        seed, flat_threshold : int, optional
            The tree shape's seed and flat threshold (C++'s defaults where not given).
        """
        default = tree_shape()
        self.set_options(tree=tree, seed=default.seed if seed is None else seed,
                         flat_threshold=default.flat_threshold if flat_threshold is None else flat_threshold)

    @watched("DistributedLU.solve")
    def solve(self, b, replicated=False, refine=True):
        """Collective. ``x`` with ``A x = b``; ``berr`` is measured either way.

        Parameters
        ----------
        b : ndarray
            This rank's rows of the right-hand sides, shape ``(local_rows,)`` or
            ``(local_rows, nrhs)``, in the order of ``distribution.owned(rank)``. A CuPy array
            (anything with ``__cuda_array_interface__`` that CuPy takes) is taken too.
        replicated : bool
            With ``replicated=True``, ``b`` is the whole ``(n,)`` or ``(n, nrhs)`` array, read on
            the root rank only, and every rank gets the whole x.
        refine : bool
            Iterative refinement (the default, SuperLU_DIST's).

        Returns
        -------
        ndarray
            x, the same way as ``b`` (a CuPy array if ``b`` was one).

        Raises
        ------
        CollectiveError
            On every rank, for a ``b`` that is not valid on some rank (wrong shape, not
            numbers, complex, NaN or Inf), a different number of columns on different ranks,
            or ranks that pass different ``replicated`` or ``refine``.
        """
        agree_args(self.comm, "DistributedLU.solve", replicated=bool(replicated), refine=bool(refine))
        b, back = _host_array(b)
        if replicated:
            return back(self._solve_replicated(b, refine))
        return back(self._solve(b, refine))

    def aslinearoperator(self, refine=True):
        """The inverse A^-1 as a scipy ``LinearOperator``: an exact preconditioner, or the
        solve inside a larger operator.

        Parameters
        ----------
        refine : bool
            Iterative refinement in each application (as :meth:`solve`).

        Returns
        -------
        DistributedOperator
            Shape (``local_rows``, ``local_rows``) on this rank, vectors in the order of
            ``distribution.owned(rank)``; ``matvec(b)`` is :meth:`solve` (collective; its
            ``berr`` is that of the last application).
        """
        from ..krylov import DistributedOperator

        n = self.local_rows
        ids = self.distribution.owned(self.comm.rank)
        return DistributedOperator(self.comm, (n, n), lambda b: self.solve(b, refine=refine),
                                   global_shape=self.shape, name="LU inverse", rows=ids, cols=ids)

    def _solve(self, b, refine):
        B, one, error = None, False, None
        try:
            B, one = rhs_array(b, self.local_rows, f"b on rank {self.comm.rank} (its rows)")
        except ValueError as e:
            error = str(e)
        every = agree(self.comm, error, where="DistributedLU.solve", value=None if B is None else B.shape[1])
        if len(set(every)) != 1:
            raise CollectiveError(f"b has {', '.join(map(str, every))} columns on ranks "
                                  f"{', '.join(map(str, range(len(every))))}: every rank must give the same number")
        times = []

        def once(R):
            bs = np.ascontiguousarray(self._row_scale[:, None] * R)
            X = np.empty_like(bs)
            times.append(self._core.solve(bs, X))
            return X * self._col_scale[:, None]

        X = once(B)
        self._stats = self._core.recorded_stats_array()  # of the main solve, before any correction
        t0 = time.perf_counter()
        X, self.berr, self.refine_steps = iterative_refinement(
            once, self._residual.residual(B), self._residual.abs_product, B, X, self._residual.nz, self._allmax,
            max_steps=ITMAX if refine else 0)
        self._record_times(times[0], time.perf_counter() - t0)
        self._nrhs = B.shape[1]
        return X.ravel() if one else X

    def _allmax(self, v):
        """Collective: the elementwise maximum of ``v`` over the ranks (NaN wins)."""
        v = np.ascontiguousarray(v, dtype=np.float64)
        out = np.empty_like(v)
        self.comm.Allreduce(np.where(np.isnan(v), np.inf, v), out, op=mpi().MAX)
        nan = np.empty(v.shape, dtype=np.int8)
        self.comm.Allreduce(np.isnan(v).astype(np.int8), nan, op=mpi().MAX)
        return np.where(nan > 0, np.nan, out)

    def _solve_replicated(self, b, refine):
        dist, comm = self.distribution, self.comm

        def check():
            return rhs_array(b, self.shape[0]) if comm.rank == self.root else (None, None)

        B, one = run_agreed(comm, check)
        parts = None if B is None else [B[dist.owned(r)] for r in range(comm.size)]
        x_local = self._solve(comm.scatter(parts, root=self.root), refine)
        pieces = comm.allgather(x_local)
        X = np.empty((self.shape[0], pieces[0].shape[1]))
        for r, piece in enumerate(pieces):
            X[dist.owned(r)] = piece
        one = comm.bcast(one, root=self.root)
        return X.ravel() if one else X

    def _record_times(self, mine, refine_s):
        every = np.array(self.comm.allgather([mine[k] for k in TIME_PARTS] + [refine_s]))
        every = np.column_stack([every, every[:, 0] + every[:, 4]])  # redistribute = b + x

        def parts(row):
            return dict(zip(TIME_PARTS + ("refine", "redistribute"), map(float, row)))

        self.solve_seconds = parts(every[int(np.argmax(every[:, TIME_PARTS.index("total")]))])
        self.solve_seconds["refine"] = float(every[:, len(TIME_PARTS)].max())
        self.solve_seconds["max"] = parts(every.max(axis=0))

    def selected_inverse(self, tree=None, seed=None, flat_threshold=None, symmetric=None, gather=True):
        """Collective. The entries of A^-1 in the pattern of the factors by parallel selected
        inversion on this grid (Pz = 1); ``selinv`` then holds the run's
        :class:`~commsolve.direct.selinv.SelinvReport` (times, flops, statistics per role).
        See :func:`commsolve.direct.selinv.selected_inverse`.

        Parameters
        ----------
        tree, seed, flat_threshold, symmetric, gather
            As :func:`commsolve.direct.selinv.selected_inverse`'s.

        Returns
        -------
        scipy.sparse.csr_matrix or None
            Scipy CSR on the root (None elsewhere), or with ``gather=False`` this rank's own
            entries.

        Raises
        ------
        ValueError
            As :func:`commsolve.direct.selinv.selected_inverse` raises it.
        """
        Z, self.selinv = _selected_inverse(self, tree, seed, flat_threshold, symmetric, gather)
        return Z

    def stats(self):
        """Local. This rank's recorded CommStats of the last solve's triangular solve (the first,
        not the refinement's corrections; steps: :data:`SOLVE_STEPS`).

        Returns
        -------
        CommStats

        Raises
        ------
        ValueError
            When no solve has run yet.
        """
        if self._stats is None:
            raise ValueError("no solve has run yet")
        return CommStats(self._stats)

    def planned_stats(self, nrhs=None):
        """Local. This rank's planned CommStats of a solve with ``nrhs`` right-hand sides.

        Parameters
        ----------
        nrhs : int, optional
            The right-hand sides (default: the last solve's).

        Returns
        -------
        CommStats

        Raises
        ------
        ValueError
            When ``nrhs`` is not given and no solve has run yet.
        """
        nrhs = self._nrhs if nrhs is None else nrhs
        if nrhs is None:
            raise ValueError("give nrhs (no solve has run yet)")
        return CommStats(self._core.planned_stats_array(int(nrhs)))
