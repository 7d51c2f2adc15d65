"""Sparse direct solvers: supernodal LU without pivoting, and its distributed triangular solves.

:class:`SparseLU` factors serially (multifrontal over the supernodes). :func:`factor` does
the same on one rank, spreads the factors block-cyclically over a Px x Py process grid and
returns a :class:`DistributedLU`, whose :meth:`~DistributedLU.solve` runs the message-driven
2D triangular solves (SC'23 paper, Algorithm 3 on a 2D grid): per supernode a broadcast
tree of its solution down a process column and a reduction tree of partial sums along a
process row, with the tree shape selectable (``flat``, ``binary``, ``shifted-binary``,
``auto``, ...; see :mod:`commsolve.trees`).

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
from ._collective import mpi, run_agreed
from .stats import CommStats
from .topology import make_topology
from .trees import SHAPES
from .workloads import supernodal_structure

__all__ = ["SparseLU", "factor", "DistributedLU", "parse_grid", "SOLVE_STEPS"]

# The steps of a 2D solve's CommStats.
SOLVE_STEPS = ("L broadcast", "L reduce", "U broadcast", "U reduce")


class SparseLU:
    """Factor ``A`` (square, pattern made symmetric) once; :meth:`solve` many times.

    Attributes: ``structure`` (supernodes and separator tree), ``nnz_LU``,
    ``tiny_pivots_replaced``, ``flops``, and the time of each phase: ``ordering_seconds``
    (nested dissection and symbolic factorization) and ``numeric_seconds``.
    """

    def __init__(self, A, max_supernode=128, ordering="tree", levels=4, relax=0.3, relax_subtree=32,
                 replace_tiny=False, zero_pivot=1e-14):
        A = sp.csr_matrix(A, dtype=np.float64)
        if A.shape[0] != A.shape[1]:
            raise ValueError(f"matrix must be square, got {A.shape[0]} x {A.shape[1]}")
        t0 = time.perf_counter()
        self.structure = supernodal_structure(A, max_supernode, ordering, levels, relax, relax_subtree)
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
    """``(px, py)`` from a pair, a string ``"PxQ"`` or None (the squarest grid with px <= py,
    as SuperLU_DIST chooses); px * py must equal ``nranks``."""
    if grid is None:
        px = max(d for d in range(1, int(np.sqrt(nranks)) + 1) if nranks % d == 0)
        return px, nranks // px
    if isinstance(grid, str):
        parts = grid.lower().split("x")
        if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
            raise ValueError(f"grid must look like 2x3, got {grid!r}")
        grid = tuple(int(p) for p in parts)
    px, py = (int(v) for v in grid)
    if px < 1 or py < 1:
        raise ValueError(f"grid dimensions must be positive, got {px}x{py}")
    if px * py != nranks:
        raise ValueError(f"a {px}x{py} grid needs {px * py} ranks, the communicator has {nranks}")
    return px, py


def _check_tree(tree):
    if tree not in SHAPES:
        raise ValueError(f"unknown tree shape {tree!r} (known: {', '.join(SHAPES)})")
    return tree


def factor(A, comm=None, grid=None, tree="binary", *, topology=None, seed=0, flat_threshold=8, root=0,
           **lu_options):
    """Collective on ``comm``. Factor ``A`` (a scipy matrix on rank ``root``, other ranks may
    pass None; or a :class:`~commsolve.ParCSR` on ``comm``, gathered to ``root``) as
    :class:`SparseLU` does (``lu_options`` are its options), then spread the factors 2D
    block-cyclically over a ``grid = (px, py)`` of ``comm`` (block (I, J) on process
    (I mod px, J mod py), rank = row * py + column).

    ``tree``: the broadcast and reduction tree shape of the solves; ``topology``: a
    Topology, an int (virtual processes per node) or None (the real nodes of ``comm``).
    Returns a :class:`DistributedLU`; errors (bad grid, zero pivot, ...) are raised on every rank.
    """
    MPI = mpi()
    comm = MPI.COMM_WORLD if comm is None else comm
    px, py = run_agreed(comm, parse_grid, grid, comm.size)
    run_agreed(comm, _check_tree, tree)
    if not 0 <= root < comm.size:
        raise ValueError(f"root {root} outside the communicator of {comm.size} ranks")
    if hasattr(A, "to_global"):  # a ParCSR: its rows come together on the root
        A = A.to_global(root)
    topo = topology if isinstance(topology, _core.Topology) else make_topology(
        comm, ppn=None if topology is None else int(topology))

    def serial_factor():
        if comm.rank != root:
            return None
        if A is None:
            raise ValueError(f"the matrix must be given on the root rank ({root})")
        try:
            return SparseLU(A, **lu_options)
        except RuntimeError as e:  # a zero pivot: raised on every rank
            raise ValueError(str(e)) from e

    lu = run_agreed(comm, serial_factor)
    t0 = time.perf_counter()
    info = comm.bcast(None if lu is None else (lu.structure, lu.shape, lu.nnz_LU, lu.ordering_seconds,
                                               lu.numeric_seconds, lu.tiny_pivots_replaced), root=root)
    structure, shape, nnz, ordering_s, numeric_s, replaced = info
    core = _core.TriSolve2D(
        comm.py2f(), topo, px, py, *structure.core_arrays(), None if lu is None else lu._core, tree, seed,
        flat_threshold)
    del lu  # the serial factors; every rank now holds its blocks
    distribute_s = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)
    return DistributedLU(comm, core, structure, shape, (px, py), tree, topo, nnz, replaced, root,
                         {"ordering": ordering_s, "numeric": numeric_s, "distribute": distribute_s})


class DistributedLU:
    """LU factors spread over a process grid (from :func:`factor`); solve many times.

    Attributes: ``grid``, ``tree``, ``shape``, ``nnz_LU`` (entries of L and U, diagonal
    blocks once), ``local_entries`` (factor entries stored on this rank, inverted diagonal
    blocks included), ``factor_seconds`` (``ordering``, ``numeric``, ``distribute``,
    ``total``) and, after a solve, ``solve_seconds`` (``l_solve``, ``u_solve``, ``total``:
    the slowest rank's).
    """

    def __init__(self, comm, core, structure, shape, grid, tree, topology, nnz_LU, replaced, root, seconds):
        self.comm, self._core, self.structure, self.shape = comm, core, structure, shape
        self.grid, self.tree, self.topology, self.nnz_LU = grid, tree, topology, nnz_LU
        self.tiny_pivots_replaced, self.root = replaced, root
        self.factor_seconds = dict(seconds, total=sum(seconds.values()))
        self.solve_seconds = None
        self._nrhs = None

    @property
    def local_entries(self):
        return self._core.local_entries

    def set_tree(self, tree, seed=0, flat_threshold=8):
        """Use another tree shape for the next solves (rebuilt locally, no communication)."""
        self._core.set_tree(_check_tree(tree), seed, flat_threshold)
        self.tree = tree

    def solve(self, b):
        """Collective. ``x`` with ``A x = b`` on every rank; ``b`` (shape (n,) or (n, nrhs)) is
        read on the root rank only."""
        MPI = mpi()
        t0 = time.perf_counter()

        def check():
            if self.comm.rank != self.root:
                return None
            B = np.asarray(b, dtype=np.float64)
            if B.ndim not in (1, 2) or B.shape[0] != self.shape[0] or (B.ndim == 2 and B.shape[1] < 1):
                raise ValueError(f"b must have shape ({self.shape[0]},) or ({self.shape[0]}, nrhs), got {B.shape}")
            return B

        B = run_agreed(self.comm, check)
        one, nrhs = self.comm.bcast(None if B is None else (B.ndim == 1, 1 if B.ndim == 1 else B.shape[1]),
                                    root=self.root)
        perm = self.structure.perm
        X = np.empty((self.shape[0], nrhs), order="F")
        if self.comm.rank == self.root:
            X[:] = B.reshape(-1, nrhs)[perm]
        self.comm.Bcast(X, root=self.root)
        lsolve, usolve, _ = self._core.solve(X)
        out = np.empty_like(X)
        out[perm] = X
        mine = np.array([lsolve, usolve, time.perf_counter() - t0])
        worst = np.empty(3)
        self.comm.Allreduce(mine, worst, op=MPI.MAX)
        self.solve_seconds = dict(zip(("l_solve", "u_solve", "total"), map(float, worst)))
        self._nrhs = nrhs
        return out.ravel() if one else out

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
