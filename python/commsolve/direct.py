"""Sparse direct solvers: supernodal LU without pivoting, and its distributed triangular solves.

:class:`SparseLU` factors serially (multifrontal over the supernodes). :func:`factor` does
the same on one rank, spreads the factors over a Px x Py x Pz process grid and returns a
:class:`DistributedLU`, whose :meth:`~DistributedLU.solve` runs one of three distributed
triangular solves (``algorithm``):

``2d``           the message-driven 2D solve (SC'23 paper, Algorithm 3; Pz = 1): per
                 supernode a broadcast tree of its solution down a process column and a
                 reduction tree of partial sums along a process row, trees of any shape
                 (``flat``, ``binary``, ``shifted-binary``, ``auto``, ...; :mod:`commsolve.trees`)
``3d-baseline``  the 3D solve of Sao et al. (ICS'19): Pz grids each hold a forest of the
                 elimination tree and its ancestors; the L-solve climbs level by level with
                 an inter-grid exchange of partial sums after each, the U-solve comes back
                 down (2 log2 Pz inter-grid synchronisations)
``3d``           the SC'23 solve (Algorithms 1 and 2): every grid solves all its forests at
                 once, one sparse allreduce of the ancestors' partial solutions over the
                 grids, then every grid's U-solve (one synchronisation)

b and x are distributed by rows, as a :class:`~commsolve.ParCSR` distributes them (or, with
``replicated=True``, given whole on the root and returned whole on every rank).

The ordering keeps the nested-dissection separator tree (``ordering="tree"``), so the
factor's supernodes map onto the 2D and 3D process layouts of the distributed triangular
solves. Static pivoting as SuperLU_DIST: a zero pivot is an error, tiny pivots can be
replaced (``replace_tiny=True``).

Example
-------
>>> from commsolve import gallery, direct
>>> import numpy as np
>>> A = gallery.poisson2d9(50)
>>> lu = direct.SparseLU(A)
>>> x = lu.solve(np.ones(A.shape[0]))
>>> bool(np.linalg.norm(A @ x - 1) < 1e-10 * np.sqrt(A.shape[0]))
True
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from . import _core
from ._collective import CollectiveError, mpi, run_agreed
from .stats import CommStats
from .topology import make_topology
from .trees import SHAPES
from .partition import Distribution
from .workloads import forest_partition, supernodal_structure

__all__ = ["SparseLU", "factor", "DistributedLU", "parse_grid", "symbolic", "SOLVE_STEPS", "XY_STEPS", "Z_STEPS",
           "REDISTRIBUTE_STEPS", "ALGORITHMS", "PARTITIONS", "ALLREDUCE", "LU_DEFAULTS"]

# The steps of a solve's CommStats: inside a grid (XY), between grids (Z), and the moves of b
# to the ranks that solve and of x back.
SOLVE_STEPS = ("L broadcast", "L reduce", "U broadcast", "U reduce", "Z reduce", "Z broadcast", "b to diagonal",
               "x from diagonal")
XY_STEPS, Z_STEPS, REDISTRIBUTE_STEPS = (0, 1, 2, 3), (4, 5), (6, 7)
ALGORITHMS = tuple(_core.algorithm_names())  # 2d, 3d-baseline, 3d
PARTITIONS = ("nd", "greedy")
ALLREDUCE = ("packed", "per-supernode")
# The supernodal pipeline's defaults, shared by SparseLU, factor and the virtual-world analyses.
LU_DEFAULTS = {"max_supernode": 128, "ordering": "tree", "levels": 4, "relax": 0.3, "relax_subtree": 32}


def symbolic(A, pz=1, **options):
    """The supernodal structure that :class:`SparseLU` (``options`` as its own) and
    :func:`factor` on a grid of ``pz`` layers compute for ``A``: what the virtual-world
    analyses of the distributed solves read (no numeric factorization needed)."""
    unknown = set(options) - set(LU_DEFAULTS)
    if unknown:
        raise ValueError(f"unknown symbolic option(s) {', '.join(sorted(unknown))} (known: {', '.join(LU_DEFAULTS)})")
    o = {**LU_DEFAULTS, **options}
    o["levels"] = max(int(o["levels"]), int(pz).bit_length() - 1)  # the separator tree covers the forests
    return supernodal_structure(A, o["max_supernode"], o["ordering"], o["levels"], o["relax"], o["relax_subtree"])


class SparseLU:
    """Factor ``A`` (square, pattern made symmetric) once; :meth:`solve` many times.

    Attributes: ``structure`` (supernodes and separator tree), ``nnz_LU``,
    ``tiny_pivots_replaced``, ``flops``, and the time of each phase: ``ordering_seconds``
    (nested dissection and symbolic factorization) and ``numeric_seconds``.
    """

    def __init__(self, A, max_supernode=LU_DEFAULTS["max_supernode"], ordering=LU_DEFAULTS["ordering"],
                 levels=LU_DEFAULTS["levels"], relax=LU_DEFAULTS["relax"], relax_subtree=LU_DEFAULTS["relax_subtree"],
                 replace_tiny=False, zero_pivot=1e-14):
        A = sp.csr_matrix(A, dtype=np.float64)
        if A.shape[0] != A.shape[1]:
            raise ValueError(f"matrix must be square, got {A.shape[0]} x {A.shape[1]}")
        t0 = time.perf_counter()
        self.structure = symbolic(A, max_supernode=max_supernode, ordering=ordering, levels=levels, relax=relax,
                                  relax_subtree=relax_subtree)
        self.ordering_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        perm = self.structure.perm
        P = A[perm][:, perm].tocsr()
        P.sort_indices()
        T = P.T.tocsr()
        T.sort_indices()
        i32 = np.int32
        self._core = _core.SupernodalLU(
            *self.structure.core_arrays(), P.indptr.astype(i32), P.indices.astype(i32), P.data,
            T.indptr.astype(i32), T.indices.astype(i32), T.data, float(zero_pivot), bool(replace_tiny))
        self.numeric_seconds = time.perf_counter() - t0
        self.shape = A.shape

    @property
    def nnz_LU(self):
        return self._core.nnz_LU

    @property
    def tiny_pivots_replaced(self):
        return self._core.tiny_pivots_replaced

    @property
    def flops(self):
        return self._core.flops

    def solve(self, b):
        """``x`` with ``A x = b``; ``b`` of shape (n,) or (n, nrhs)."""
        b = np.asarray(b, dtype=np.float64)
        one = b.ndim == 1
        B = b.reshape(-1, 1) if one else b
        if B.shape[0] != self.shape[0]:
            raise ValueError(f"b has {B.shape[0]} rows, the matrix {self.shape[0]}")
        perm = self.structure.perm
        X = np.asfortranarray(B[perm])
        self._core.solve(X)
        out = np.empty_like(X)
        out[perm] = X
        return out.ravel() if one else out


def parse_grid(grid, nranks):
    """``(px, py, pz)`` from a pair or triple, a string ``"PxQ"`` or ``"PxQxR"``, or None (the
    squarest 2D grid with px <= py, as SuperLU_DIST chooses, and pz = 1). pz must be a power
    of two and px * py * pz equal ``nranks``."""
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
    if px * py * pz != nranks:
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
    return algorithm


def _row_distribution(distribution, A, n, comm):
    """The Distribution of b and x: given, a ParCSR's rows, or balanced contiguous blocks."""
    if distribution is None:
        distribution = A.row_dist if hasattr(A, "row_dist") else Distribution.contiguous(int(n), comm.size)
    if distribution.global_size != n or distribution.nranks != comm.size:
        raise ValueError(f"the distribution of b and x covers {distribution.global_size} rows on "
                         f"{distribution.nranks} ranks; need {n} rows on {comm.size}")
    return distribution


def factor(A, comm=None, grid=None, tree="binary", *, algorithm=None, partition="nd", allreduce="packed",
           distribution=None, topology=None, seed=0, flat_threshold=8, root=0, **lu_options):
    """Collective on ``comm``. Factor ``A`` (a scipy matrix on rank ``root``, other ranks may
    pass None; or a :class:`~commsolve.ParCSR` on ``comm``, gathered to ``root``) as
    :class:`SparseLU` does (``lu_options`` are its options), then spread the factors over a
    ``grid = (px, py, pz)`` of ``comm``: the supernodal elimination tree is split into
    2 pz - 1 forests (``partition``: ``"nd"``, the top log2 pz levels of the nested-dissection
    separator tree, or ``"greedy"``, SuperLU_DIST's load-balancing split); layer z (ranks
    z px py .. (z + 1) px py - 1) holds the blocks of its forests and their ancestors, block
    (I, J) on its process (I mod px, J mod py), rank z px py + row py + column.

    ``algorithm``: ``"2d"`` (the default when pz = 1), ``"3d"`` (the default otherwise) or
    ``"3d-baseline"``; ``tree``: the intra-grid broadcast and reduction tree shape;
    ``allreduce``: inter-grid messages ``"packed"`` (one per pair of ranks and step, as the
    SC'23 paper describes) or ``"per-supernode"`` (as SuperLU_DIST sends them);
    ``distribution``: how b and x are distributed by rows (default: a ParCSR's row
    distribution, else contiguous blocks); ``topology``: a Topology, an int (virtual
    processes per node) or None (the real nodes of ``comm``).
    Returns a :class:`DistributedLU`; errors (bad grid, zero pivot, ...) are raised on every rank.
    """
    MPI = mpi()
    comm = MPI.COMM_WORLD if comm is None else comm
    px, py, pz = run_agreed(comm, parse_grid, grid, comm.size)
    algorithm = ("2d" if pz == 1 else "3d") if algorithm is None else algorithm
    run_agreed(comm, _check_algorithm, algorithm, pz)
    run_agreed(comm, _check_choice, tree, SHAPES, "tree shape")
    run_agreed(comm, _check_choice, partition, PARTITIONS, "forest partition")
    run_agreed(comm, _check_choice, allreduce, ALLREDUCE, "allreduce variant")
    if not 0 <= root < comm.size:
        raise ValueError(f"root {root} outside the communicator of {comm.size} ranks")
    row_source = A
    if hasattr(A, "to_global"):  # a ParCSR: its rows come together on the root
        A = A.to_global(root)
    topo = topology if isinstance(topology, _core.Topology) else make_topology(
        comm, ppn=None if topology is None else int(topology))
    lu_options["levels"] = max(lu_options.get("levels", LU_DEFAULTS["levels"]), pz.bit_length() - 1)

    def serial_factor():
        if comm.rank != root:
            return None
        if A is None:
            raise ValueError(f"the matrix must be given on the root rank ({root})")
        try:
            lu = SparseLU(A, **lu_options)
        except RuntimeError as e:  # a zero pivot: raised on every rank
            raise ValueError(str(e)) from e
        t0 = time.perf_counter()
        forests = forest_partition(lu.structure, pz, partition)
        lu.ordering_seconds += time.perf_counter() - t0
        return lu, forests

    lu, forests = run_agreed(comm, serial_factor) or (None, None)
    t0 = time.perf_counter()
    info = comm.bcast(None if lu is None else (lu.structure, forests, lu.shape, lu.nnz_LU, lu.ordering_seconds,
                                               lu.numeric_seconds, lu.tiny_pivots_replaced), root=root)
    structure, forests, shape, nnz, ordering_s, numeric_s, replaced = info
    dist = run_agreed(comm, _row_distribution, distribution, row_source, shape[0], comm)
    core = _core.TriSolve(
        comm.py2f(), topo, px, py, pz, *structure.core_arrays(), forests, structure.perm.astype(np.int32), dist,
        None if lu is None else lu._core, algorithm, tree, seed, flat_threshold, allreduce == "packed")
    del lu  # the serial factors; every rank now holds its blocks
    distribute_s = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)
    return DistributedLU(comm, core, structure, shape, (px, py, pz), forests, dist, topo, nnz, replaced, root,
                         {"ordering": ordering_s, "numeric": numeric_s, "distribute": distribute_s},
                         dict(algorithm=algorithm, tree=tree, seed=seed, flat_threshold=flat_threshold,
                              allreduce=allreduce, partition=partition))


class DistributedLU:
    """LU factors spread over a process grid (from :func:`factor`); solve many times.

    Attributes: ``grid`` (px, py, pz), ``algorithm``, ``tree``, ``allreduce``, ``partition``,
    ``forests`` (each supernode's forest, heap order), ``distribution`` (of b and x),
    ``shape``, ``nnz_LU`` (entries of L and U, diagonal blocks once), ``local_entries``
    (factor entries stored on this rank, inverted diagonal blocks and replicated ancestors
    included), ``factor_seconds`` (``ordering``, ``numeric``, ``distribute``, ``total``) and,
    after a solve, ``solve_seconds``: the parts of the slowest rank's solve (``redistribute_b``,
    ``l_solve``, ``z_comm``, ``u_solve``, ``redistribute_x``, ``redistribute`` = b + x and
    ``total``, all from C++ timers; total >= the sum of the parts).
    """

    def __init__(self, comm, core, structure, shape, grid, forests, distribution, topology, nnz_LU, replaced, root,
                 seconds, options):
        self.comm, self._core, self.structure, self.shape = comm, core, structure, shape
        self.grid, self.forests, self.distribution = grid, forests, distribution
        self.topology, self.nnz_LU = topology, nnz_LU
        self.tiny_pivots_replaced, self.root = replaced, root
        self.factor_seconds = dict(seconds, total=sum(seconds.values()))
        self._options = options
        self.solve_seconds = None
        self._nrhs = None

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

    def set_options(self, *, algorithm=None, tree=None, seed=None, flat_threshold=None, allreduce=None):
        """Collective. Another algorithm (``"3d"`` and ``"3d-baseline"`` share the layout),
        tree shape or inter-grid packing for the next solves, same factors; every rank must
        ask for the same (checked: a mismatch is an error on every rank, not a hang)."""
        new = dict(self._options)
        for key, value in dict(algorithm=algorithm, tree=tree, seed=seed, flat_threshold=flat_threshold,
                               allreduce=allreduce).items():
            if value is not None:
                new[key] = value

        def check():
            _check_algorithm(new["algorithm"], self.grid[2])
            _check_choice(new["tree"], SHAPES, "tree shape")
            _check_choice(new["allreduce"], ALLREDUCE, "allreduce variant")
            return new

        run_agreed(self.comm, check)
        every = self.comm.allgather(new)
        differ = [k for k in new if len({o[k] for o in every}) > 1]
        if differ:
            k = differ[0]
            raise CollectiveError(f"set_options: the ranks asked for different settings ({k} "
                                  + ", ".join(f"{o[k]} on rank {r}" for r, o in enumerate(every)) + ")")
        self._core.set_options(new["algorithm"], new["tree"], int(new["seed"]), int(new["flat_threshold"]),
                               new["allreduce"] == "packed")
        self._options = new

    def set_tree(self, tree, seed=0, flat_threshold=8):
        """Collective. Use another tree shape for the next solves (see :meth:`set_options`)."""
        self.set_options(tree=tree, seed=seed, flat_threshold=flat_threshold)

    def solve(self, b, replicated=False):
        """Collective. ``x`` with ``A x = b``.

        ``b``: this rank's rows of the right-hand sides, shape ``(local_rows,)`` or
        ``(local_rows, nrhs)``, in the order of ``distribution.owned(rank)``; x comes back
        the same way. With ``replicated=True``, ``b`` is the whole ``(n,)`` or ``(n, nrhs)``
        array, read on the root rank only, and every rank gets the whole x.
        """
        if replicated:
            return self._solve_replicated(b)
        n_local = self.local_rows

        def check():
            B = np.asarray(b)
            if np.iscomplexobj(B):
                raise ValueError("b is complex; the factors are real (solve the real and imaginary parts apart)")
            if B.ndim not in (1, 2) or B.shape[0] != n_local or (B.ndim == 2 and B.shape[1] < 1):
                raise ValueError(f"b must have shape ({n_local},) or ({n_local}, nrhs) on rank {self.comm.rank} "
                                 f"(its rows), got {B.shape}")
            return B

        B = run_agreed(self.comm, check)
        nrhs = 1 if B.ndim == 1 else B.shape[1]
        every = self.comm.allgather(nrhs)
        if len(set(every)) != 1:
            raise CollectiveError(f"b has {', '.join(map(str, every))} columns on ranks "
                                  f"{', '.join(map(str, range(len(every))))}: every rank must give the same number")
        Bc = np.ascontiguousarray(B.reshape(n_local, nrhs), dtype=np.float64)
        X = np.empty_like(Bc)
        mine = self._core.solve(Bc, X)
        self._record_times(mine)
        self._nrhs = nrhs
        return X.ravel() if B.ndim == 1 else X

    def _solve_replicated(self, b):
        dist, comm = self.distribution, self.comm

        def check():
            if comm.rank != self.root:
                return None
            B = np.asarray(b)
            if np.iscomplexobj(B):
                raise ValueError("b is complex; the factors are real (solve the real and imaginary parts apart)")
            if B.ndim not in (1, 2) or B.shape[0] != self.shape[0] or (B.ndim == 2 and B.shape[1] < 1):
                raise ValueError(f"b must have shape ({self.shape[0]},) or ({self.shape[0]}, nrhs), got {B.shape}")
            return np.asarray(B, dtype=np.float64)

        B = run_agreed(comm, check)
        parts = None if B is None else [B[dist.owned(r)] for r in range(comm.size)]
        x_local = self.solve(comm.scatter(parts, root=self.root))
        pieces = comm.allgather(x_local)
        one = pieces[0].ndim == 1
        X = np.empty((self.shape[0],) + pieces[0].shape[1:])
        for r, piece in enumerate(pieces):
            X[dist.owned(r)] = piece
        return X.ravel() if one else X

    def _record_times(self, mine):
        keys = ("redistribute_b", "l_solve", "z_comm", "u_solve", "redistribute_x", "total")
        every = np.array(self.comm.allgather([mine[k] for k in keys]))
        slowest = every[int(np.argmax(every[:, -1]))]
        self.solve_seconds = dict(zip(keys, map(float, slowest)))
        self.solve_seconds["redistribute"] = self.solve_seconds["redistribute_b"] + self.solve_seconds["redistribute_x"]

    def stats(self):
        """This rank's recorded CommStats of the last solve (steps: :data:`SOLVE_STEPS`)."""
        return CommStats(self._core.recorded_stats_array())

    def planned_stats(self, nrhs=None):
        """This rank's planned CommStats of a solve with ``nrhs`` right-hand sides (default:
        the last solve's)."""
        nrhs = self._nrhs if nrhs is None else nrhs
        if nrhs is None:
            raise ValueError("give nrhs (no solve has run yet)")
        return CommStats(self._core.planned_stats_array(int(nrhs)))
