"""The distributed solver: :func:`factor` and :class:`DistributedLU` (see the package docs)."""

from __future__ import annotations

import os
import time

import numpy as np
import scipy.sparse as sp

from .. import _core
from .._collective import CollectiveError, agree, agree_on, mpi, run_agreed
from ..parcsr import ParCSR
from ..partition import Distribution
from ..stats import CommStats
from ..topology import make_topology
from ..trees import check_shape
from ..workloads import forest_partition
from .refinement import ITMAX, iterative_refinement
from .factor3d import factor_on_grids, planned_factor_stats
from .serial import PIVOTING_DEFAULTS, SparseLU, analyze, levels_for, rhs_array

__all__ = ["factor", "DistributedLU", "parse_grid", "SOLVE_STEPS", "XY_STEPS", "Z_STEPS", "REDISTRIBUTE_STEPS",
           "ALGORITHMS", "PARTITIONS", "ALLREDUCE", "TIME_PARTS", "MAX_AUTO_PZ"]

# The steps of a solve's CommStats: inside a grid (XY), between grids (Z), and the moves of b
# to the ranks that solve and of x back.
SOLVE_STEPS = ("L broadcast", "L reduce", "U broadcast", "U reduce", "Z reduce", "Z broadcast", "b to diagonal",
               "x from diagonal")
XY_STEPS, Z_STEPS, REDISTRIBUTE_STEPS = (0, 1, 2, 3), (4, 5), (6, 7)
ALGORITHMS = tuple(_core.algorithm_names())  # 2d, 3d-baseline, 3d-baseline-async, 3d
MAX_AUTO_PZ = 32  # the most layers grid="auto" tries: the SC'23 paper's range (its best was near 16)
PARTITIONS = ("nd", "greedy")
ALLREDUCE = ("packed", "per-supernode")
# A solve's parts, as the C++ timers measure them on every rank.
TIME_PARTS = ("redistribute_b", "l_solve", "z_comm", "u_solve", "redistribute_x", "total")


def parse_grid(grid, nranks):
    """``(px, py, pz)`` from a pair or triple, a string ``"PxQ"`` or ``"PxQxR"``, or None (the
    squarest 2D grid with px <= py, as SuperLU_DIST chooses, and pz = 1). pz must be a power
    of two and px * py * pz equal ``nranks`` (unless ``nranks`` is None: whatever the grid
    has)."""
    if grid is None:
        px = max(d for d in range(1, int(np.sqrt(nranks)) + 1) if nranks % d == 0)
        return px, nranks // px, 1
    if isinstance(grid, str):
        parts = grid.lower().split("x")
        if len(parts) not in (2, 3) or not all(p.strip().isdigit() for p in parts):
            raise ValueError(f"grid must look like 2x3 or 2x2x2, got {grid!r}")
        grid = tuple(int(p) for p in parts)
    dims = tuple(int(v) for v in grid)
    if len(dims) not in (2, 3):
        raise ValueError(f"grid must have 2 or 3 dimensions, got {grid!r}")
    px, py, pz = dims if len(dims) == 3 else (*dims, 1)
    name = "x".join(map(str, dims))
    if min(px, py, pz) < 1:
        raise ValueError(f"grid dimensions must be positive, got {name}")
    if pz & (pz - 1):
        raise ValueError(f"Pz must be a power of two, got {name}")
    if nranks is not None and px * py * pz != nranks:
        raise ValueError(f"a {name} grid needs {px * py * pz} ranks, the communicator has {nranks}")
    return px, py, pz


def _check_choice(value, known, what):
    if value not in known:
        raise ValueError(f"unknown {what} {value!r} (known: {', '.join(known)})")
    return value


def _check_algorithm(algorithm, pz):
    _check_choice(algorithm, ALGORITHMS, "solve algorithm")
    if algorithm == "2d" and pz > 1:
        raise ValueError(f"the 2d algorithm needs Pz = 1, the grid has Pz = {pz} (use 3d or 3d-baseline)")
    if algorithm != "2d" and pz == 1:
        raise ValueError(f"the {algorithm} algorithm needs a 3D grid (Pz >= 2, e.g. 1x2x2); a 2D grid runs the "
                         "2d algorithm")
    return algorithm


def _check_solve_options(o, pz):
    _check_algorithm(o["algorithm"], pz)
    check_shape(o["tree"])
    _check_choice(o["allreduce"], ALLREDUCE, "allreduce variant")
    return o


def _row_distribution(distribution, A, n, comm):
    """The Distribution of b and x: given, a ParCSR's rows, or balanced contiguous blocks
    (with fewer rows than ranks, the last ranks hold none)."""
    if distribution is None and hasattr(A, "row_dist"):
        distribution = A.row_dist
    elif distribution is None:
        P, n = comm.size, int(n)
        distribution = Distribution.from_offsets(
            np.array([r * (n // P) + min(r, n % P) for r in range(P + 1)], dtype=np.int64))
    if distribution.global_size != n or distribution.nranks != comm.size:
        raise ValueError(f"the distribution of b and x covers {distribution.global_size} rows on "
                         f"{distribution.nranks} ranks; need {n} rows on {comm.size}")
    return distribution


def _describe(value):
    """A comparable description of an option (objects by their kind and size)."""
    if isinstance(value, _core.Topology):
        return ("Topology", tuple(value.node_of_rank.tolist()))
    if isinstance(value, Distribution):
        return ("Distribution", value.global_size, value.nranks, value.is_contiguous)
    return value


class _Residual:
    """b - A x and |A| |x| for x distributed by rows: A as a ParCSR (its halo exchange), |A|
    as its local rows over [owned entries | halo]."""

    def __init__(self, A):
        self.A = A
        local = A.local_matrix().tocoo()
        owned = A.owned_cols()
        halo = np.asarray(A.col_map)
        where = np.full(A.shape[1], -1, dtype=np.int64)
        where[owned] = np.arange(owned.size)
        where[halo] = owned.size + np.arange(halo.size)
        self.abs_local = sp.csr_matrix((np.abs(local.data), (local.row, where[local.col])),
                                       shape=(A.local_rows, owned.size + halo.size))
        self.nz = A.comm.allreduce(int(np.diff(self.abs_local.indptr).max(initial=0)), op=mpi().MAX) + 1

    def residual(self, B):
        return lambda x, cols: np.column_stack([B[:, c] - self.A.matvec(x[:, k]) for k, c in enumerate(cols)]) \
            if len(cols) else np.zeros((B.shape[0], 0))

    def abs_product(self, V):
        return np.column_stack([self.abs_local @ np.concatenate([V[:, k], self.A.exchange(V[:, k])])
                                for k in range(V.shape[1])]) if V.shape[1] else V.copy()


def factor(A, comm=None, grid=None, tree=None, *, algorithm=None, partition="nd", allreduce="packed",
           distribution=None, topology=None, seed=0, flat_threshold=8, root=0, profile=None, **lu_options):
    """Collective on ``comm``. Factor ``A`` and spread the factors over a process grid.

    ``A``: a :class:`~commsolve.ParCSR` on ``comm`` or a Matrix Market path (read in
    parallel into one): its rows are gathered on ``root`` for static pivoting, the ordering
    and the symbolic analysis only (as SuperLU_DIST does by default), then its entries go
    from their row owners straight to the ranks that factor their blocks: every rank of every
    grid factors (right-looking supernodal LU on the grid's 2D block-cyclic layout, the
    panels broadcast along process rows and columns by ``tree``; with pz > 1 the 3D
    algorithm of ``direct/factor3d.hpp`` between the grids), and each rank ends holding its
    own blocks: the factors never pass through one rank. Or a scipy matrix on rank ``root``
    (other ranks may pass None): factored whole there as :class:`SparseLU` does, then
    distributed.
    ``lu_options`` are :class:`SparseLU`'s options (static pivoting, ordering). Then
    spread the factors over a ``grid = (px, py, pz)`` of ``comm``: the supernodal elimination
    tree is split into 2 pz - 1 forests (``partition``: ``"nd"``, the top log2 pz levels of
    the nested-dissection separator tree, or ``"greedy"``, SuperLU_DIST's load-balancing
    split); layer z (ranks z px py .. (z + 1) px py - 1) holds the blocks of its forests and
    their ancestors, block (I, J) on its process (I mod px, J mod py), rank
    z px py + row py + column.

    ``algorithm``: ``"2d"`` (the default when pz = 1), ``"3d"`` (the default otherwise),
    ``"3d-baseline"`` or ``"3d-baseline-async"``; ``tree``: the intra-grid broadcast and reduction tree shape;
    ``allreduce``: inter-grid messages ``"packed"`` (one per pair of ranks and step, as the
    SC'23 paper describes) or ``"per-supernode"`` (as SuperLU_DIST sends them);
    ``distribution``: how b and x are distributed by rows (default: a ParCSR's row
    distribution, else contiguous blocks); ``topology``: a Topology, an int (virtual
    processes per node) or None (the real nodes of ``comm``). ``grid="auto"`` (with a machine
    ``profile`` that has the simulator's fields, e.g. one ``commsolve calibrate`` wrote):
    after the symbolic analysis, every candidate grid of ``comm.size`` ranks and every
    algorithm (or the given one) with each tree shape of ``tree`` (a name or a sequence) is
    simulated on ``topology`` (:func:`commsolve.sim.study.rank_grids`)
    and the fastest is used; the ranking is kept in ``solver.grid_ranking``. Every rank must
    pass the same options (checked). A is kept distributed by rows for the residuals of iterative
    refinement. Returns a :class:`DistributedLU`; errors (bad grid, zero pivot, ...) are
    raised on every rank.
    """
    MPI = mpi()
    comm = MPI.COMM_WORLD if comm is None else comm

    auto = isinstance(grid, str) and grid.strip().lower() == "auto"
    if tree is None and auto:  # grid="auto" compares the simulator's usual shapes
        from ..sim.study import AUTO_TREES

        tree = AUTO_TREES
    tree = "binary" if tree is None else tree

    def check():
        if auto:
            from ..sim import simulation_profile

            if profile is None:
                raise ValueError("grid='auto' needs a machine profile (profile=...; 'commsolve calibrate' writes "
                                 "one for this machine)")
            simulation_profile(profile)
            _check_choice(algorithm or "3d", ALGORITHMS, "solve algorithm")
            for shape in ([tree] if isinstance(tree, str) else tree):
                check_shape(shape)
            _check_choice(allreduce, ALLREDUCE, "allreduce variant")
            _check_choice(partition, PARTITIONS, "forest partition")
            return (0, 0, _auto_max_pz(comm.size)), dict(algorithm=algorithm, tree=tree if isinstance(tree, str)
                                                         else tuple(tree), seed=int(seed),
                                                         flat_threshold=int(flat_threshold), allreduce=allreduce)
        px, py, pz = parse_grid(grid, comm.size)
        o = _check_solve_options(dict(algorithm=("2d" if pz == 1 else "3d") if algorithm is None else algorithm,
                                      tree=tree, seed=int(seed), flat_threshold=int(flat_threshold),
                                      allreduce=allreduce), pz)
        _check_choice(partition, PARTITIONS, "forest partition")
        if not 0 <= root < comm.size:
            raise ValueError(f"root {root} outside the communicator of {comm.size} ranks")
        return (px, py, pz), o

    (px, py, pz), options = run_agreed(comm, check)
    agree_on(comm, "factor options", ((px, py, pz), tuple(sorted(options.items())), partition, root, _describe(profile),
                                      _describe(topology), _describe(distribution),
                                      tuple(sorted((k, _describe(v)) for k, v in lu_options.items()))))
    if isinstance(A, (str, os.PathLike)):
        A = ParCSR.from_file(A, comm)
    row_source = A
    on_grids = hasattr(A, "to_global")  # a ParCSR: the grids factor it
    t_start = time.perf_counter()
    if on_grids:  # its rows come together on the root for static pivoting and the ordering
        A = A.to_global(root)
    topo = topology if isinstance(topology, _core.Topology) else run_agreed(
        comm, make_topology, comm, ppn=None if topology is None else int(topology))
    lu_options["levels"] = levels_for(lu_options.get("levels", 4), pz)

    def serial_analysis():
        if comm.rank != root:
            return None
        if A is None:
            raise ValueError(f"the matrix must be given on the root rank ({root})")
        if on_grids:
            checked, B, pivoting, structure, seconds = analyze(
                A, **{k: v for k, v in lu_options.items() if k not in ("replace_tiny", "zero_pivot")})
            work = _Analysis(checked, B, pivoting, structure, seconds)
        else:
            work = SparseLU(A, **lu_options)
        t0 = time.perf_counter()
        ranking = None
        if auto:
            from ..sim.study import rank_grids

            ranking = rank_grids(work.structure, topo, profile, [algorithm] if algorithm else ALGORITHMS, trees=tree,
                                 partition=partition, allreduce=allreduce, seed=seed, flat_threshold=flat_threshold,
                                 max_pz=pz)
        best_pz = ranking[0]["grid"][2] if ranking else pz
        forests = forest_partition(work.structure, best_pz, partition)
        work.ordering_seconds += time.perf_counter() - t0
        return work, forests, ranking

    lu, forests, ranking = run_agreed(comm, serial_analysis) or (None, None, None)
    t0 = time.perf_counter()
    info = comm.bcast(None if lu is None else (
        lu.structure, forests, lu.shape, lu.nnz_LU, lu.ordering_seconds, lu.allocate_seconds, lu.numeric_seconds,
        lu.tiny_pivots_replaced, lu.pivoting, lu.row_order.astype(np.int32), lu.col_order.astype(np.int32), ranking,
        getattr(lu, "anorm", None)), root=root)
    (structure, forests, shape, nnz, ordering_s, allocate_s, numeric_s, replaced, pivoting, row_order, col_order,
     ranking, anorm) = info
    if auto:
        (px, py, pz), options["algorithm"], options["tree"] = (ranking[0]["grid"], ranking[0]["algorithm"],
                                                               ranking[0]["tree"])
    dist = run_agreed(comm, _row_distribution, distribution, row_source, shape[0], comm)
    factor_stats = planned_factor = None
    solve_options = (options["algorithm"], options["tree"], options["seed"], options["flat_threshold"],
                     options["allreduce"] == "packed")
    arrays = (comm.py2f(), topo, px, py, pz, *structure.core_arrays(), forests, row_order, col_order, dist)
    flops = None
    if on_grids:
        trees = (options["tree"], options["seed"], options["flat_threshold"])
        planned_factor = run_agreed(comm, lambda: None if comm.rank != root else planned_factor_stats(
            A, _row_owner(row_source.row_dist, comm.size), pivoting, row_order, col_order, structure, forests,
            (px, py, pz), topo, trees))
        planned_factor = comm.scatter(planned_factor, root=root)
        # on the root: the rows gathered, the analysis, its broadcast and the message plan
        seconds = {"ordering": comm.allreduce(time.perf_counter() - t_start, op=MPI.MAX)}
        del lu
        store, factor_stats, grid_seconds, replaced, flops = factor_on_grids(
            row_source, pivoting, row_order, col_order, structure, forests, (px, py, pz), topo, anorm,
            lu_options.get("zero_pivot", PIVOTING_DEFAULTS["zero_pivot"]),
            lu_options.get("replace_tiny", PIVOTING_DEFAULTS["replace_tiny"]), trees)
        seconds.update(grid_seconds)
        t0 = time.perf_counter()
        core = _core.TriSolve(*arrays, store, *solve_options)  # takes this rank's blocks over
        del store
    else:
        seconds = {"ordering": ordering_s, "allocate": allocate_s, "numeric": numeric_s}
        core = _core.TriSolve(*arrays, None if lu is None else lu._core, *solve_options, root)
        del lu  # every rank now holds its blocks
    residual = _Residual(_distributed_matrix(A, row_source, dist, topo, comm, root))
    seconds["distribute"] = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)
    solver = DistributedLU(comm, core, structure, shape, (px, py, pz), forests, dist, topo, nnz, replaced, root,
                           seconds, dict(options, partition=partition), pivoting, residual)
    solver.factor_stats, solver.planned_factor_stats = factor_stats, planned_factor
    solver.factor_flops = flops
    solver.row_order, solver.col_order = row_order, col_order
    solver.grid_ranking = ranking
    return solver


class _Analysis:
    """What the root knows before a factorization on the grids: as :class:`SparseLU` has it,
    without the numeric factors (they are computed on the grids)."""

    allocate_seconds = numeric_seconds = 0.0
    tiny_pivots_replaced = 0

    def __init__(self, A, B, pivoting, structure, seconds):
        self.shape, self.pivoting, self.structure, self.ordering_seconds = A.shape, pivoting, structure, seconds
        widths, below = np.diff(structure.sn_start), np.diff(structure.rows_ptr)
        self.nnz_LU = int((widths * widths + 2 * widths * below).sum())
        self.row_order = pivoting.row_order(structure.perm)
        self.col_order = np.asarray(structure.perm)
        self.anorm = float(abs(B).sum(axis=0).max())  # ||B||_1, the pivot thresholds' scale


def _row_owner(dist, nranks):
    """The rank owning each row under the Distribution ``dist``."""
    owner = np.empty(dist.global_size, dtype=np.int64)
    for r in range(nranks):
        owner[dist.owned(r)] = r
    return owner


def _auto_max_pz(nranks):
    """The most layers grid='auto' tries: the largest power of two up to min(nranks, 32)."""
    return 1 << (min(int(nranks), MAX_AUTO_PZ).bit_length() - 1)


def _distributed_matrix(A, source, dist, topo, comm, root):
    """A as a ParCSR distributed like b and x: the given ParCSR when b and x follow its rows,
    else A's rows sent from the root."""
    if dist is getattr(source, "row_dist", None):
        return source
    pieces = None if comm.rank != root else [A[dist.owned(r)] for r in range(comm.size)]
    return ParCSR.from_local_rows(comm.scatter(pieces, root=root), comm, row_dist=dist, topology=topo)


class DistributedLU:
    """LU factors spread over a process grid (from :func:`factor`); solve many times.

    Attributes: ``grid`` (px, py, pz), ``algorithm``, ``tree``, ``allreduce``, ``partition``,
    ``forests`` (each supernode's forest, heap order), ``distribution`` (of b and x),
    ``pivoting`` (static pivoting: scales, row permutation), ``row_order`` / ``col_order``
    (the row of b factor row k reads / of x factor column k gives), ``shape``, ``nnz_LU`` (entries of
    L and U, diagonal blocks once), ``local_entries`` (factor entries stored on this rank,
    inverted diagonal blocks and replicated ancestors included), ``factor_seconds``
    (``ordering``, ``allocate``, ``numeric``, ``distribute``, ``total``, and
    ``redistribute`` when factored on the grids: see :func:`factor`), ``factor_stats`` and
    ``planned_factor_stats`` (when factored on the grids: this rank's CommStats of the
    factorization, steps as ``factor3d.FACTOR_STEPS``, recorded and planned) and, after a solve,
    ``solve_seconds``: the parts of the slowest rank's triangular solve (``redistribute_b``,
    ``l_solve``, ``z_comm``, ``u_solve``, ``redistribute_x``, ``redistribute`` = b + x and
    ``total``, all from C++ timers; total >= the sum of the parts), ``max`` (each part's
    largest value over the ranks: a rank that takes no part in the inter-grid steps may be the
    slowest) and ``refine`` (the slowest rank's seconds of iterative refinement, corrections
    included); ``berr`` (the componentwise backward error per right-hand side) and
    ``refine_steps``.
    """

    def __init__(self, comm, core, structure, shape, grid, forests, distribution, topology, nnz_LU, replaced, root,
                 seconds, options, pivoting, residual):
        self.comm, self._core, self.structure, self.shape = comm, core, structure, shape
        self.grid, self.forests, self.distribution = grid, forests, distribution
        self.topology, self.nnz_LU = topology, nnz_LU
        self.tiny_pivots_replaced, self.root = replaced, root
        self.factor_seconds = dict(seconds, total=sum(seconds.values()))
        self._options = options
        self.pivoting = pivoting
        mine = distribution.owned(comm.rank)
        self._row_scale, self._col_scale = pivoting.row_scale[mine], pivoting.col_scale[mine]
        self._residual = residual
        self.solve_seconds = self.berr = self.refine_steps = None
        self._nrhs = self._stats = None

    algorithm = property(lambda self: self._options["algorithm"])
    tree = property(lambda self: self._options["tree"])
    allreduce = property(lambda self: self._options["allreduce"])
    partition = property(lambda self: self._options["partition"])

    @property
    def local_entries(self):
        return self._core.local_entries

    @property
    def local_rows(self):
        """Rows of b and x on this rank."""
        return self._core.local_rows

    @property
    def residual_matrix(self):
        """A distributed like b and x (a ParCSR): what the residuals of the backward error and
        of iterative refinement multiply by (one product and one halo exchange of |x| per
        right-hand side and measurement; its own statistics)."""
        return self._residual.A

    def set_options(self, *, algorithm=None, tree=None, seed=None, flat_threshold=None, allreduce=None):
        """Collective. Another algorithm (the 3D ones share the layout),
        tree shape or inter-grid packing for the next solves, same factors; every rank must
        ask for the same (checked: a mismatch is an error on every rank, not a hang)."""
        new = dict(self._options)
        for key, value in dict(algorithm=algorithm, tree=tree, seed=seed, flat_threshold=flat_threshold,
                               allreduce=allreduce).items():
            if value is not None:
                new[key] = value
        run_agreed(self.comm, _check_solve_options, new, self.grid[2])
        agree_on(self.comm, "set_options", tuple(sorted(new.items())))
        self._core.set_options(new["algorithm"], new["tree"], int(new["seed"]), int(new["flat_threshold"]),
                               new["allreduce"] == "packed")
        self._options = new

    def set_tree(self, tree, seed=0, flat_threshold=8):
        """Collective. Use another tree shape for the next solves (see :meth:`set_options`)."""
        self.set_options(tree=tree, seed=seed, flat_threshold=flat_threshold)

    def solve(self, b, replicated=False, refine=True):
        """Collective. ``x`` with ``A x = b``.

        ``b``: this rank's rows of the right-hand sides, shape ``(local_rows,)`` or
        ``(local_rows, nrhs)``, in the order of ``distribution.owned(rank)``; x comes back
        the same way. With ``replicated=True``, ``b`` is the whole ``(n,)`` or ``(n, nrhs)``
        array, read on the root rank only, and every rank gets the whole x. ``refine``:
        iterative refinement (the default, SuperLU_DIST's); ``berr`` is measured either way.
        """
        if replicated:
            return self._solve_replicated(b, refine)
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
        x_local = self.solve(comm.scatter(parts, root=self.root), refine=refine)
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

    def stats(self):
        """This rank's recorded CommStats of the last solve's triangular solve (the first, not
        the refinement's corrections; steps: :data:`SOLVE_STEPS`)."""
        if self._stats is None:
            raise ValueError("no solve has run yet")
        return CommStats(self._stats)

    def planned_stats(self, nrhs=None):
        """This rank's planned CommStats of a solve with ``nrhs`` right-hand sides (default:
        the last solve's)."""
        nrhs = self._nrhs if nrhs is None else nrhs
        if nrhs is None:
            raise ValueError("give nrhs (no solve has run yet)")
        return CommStats(self._core.planned_stats_array(int(nrhs)))
