"""Dense matrices distributed block-cyclically on layer 0 of a 2.5D process grid.

A grid (pr, pc, c) has pr x pc processes per layer and c layers; rank (x, y, z) is
z * pr * pc + x * pc + y, so layer 0 is ScaLAPACK's row-major pr x pc grid and its blocks
are laid out as ScaLAPACK lays them out (block row I on process row I mod pr, block column
J on process column J mod pc, each rank's blocks in one column-major array). The other
layers hold nothing between operations: the 2.5D algorithms replicate what they need.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _core

__all__ = ["DistributedDense", "parse_grid25", "default_grid25", "random_entries"]

DEFAULT_NB = 128


def default_grid25(p):
    """The squarest pr x pc single-layer grid of p ranks (pr <= pc).

    Parameters
    ----------
    p : int
        The number of ranks.

    Returns
    -------
    tuple of int
        ``(pr, pc, 1)`` with ``pr * pc == p``.
    """
    pr = max(d for d in range(1, math.isqrt(p) + 1) if p % d == 0)
    return pr, p // pr, 1


def parse_grid25(grid, p=None):
    """A (pr, pc, c) tuple from ``grid``, checked to have ``p`` ranks where p is given.

    Parameters
    ----------
    grid : str, sequence of int or None
        "PRxPCxC", "PRxPC" (one layer), a tuple of three (or two) extents, or None for
        :func:`default_grid25` of ``p``.
    p : int, optional
        The number of ranks the grid must have (not checked when None).

    Returns
    -------
    tuple of int
        ``(pr, pc, c)``.

    Raises
    ------
    ValueError
        Naming the grid, when it is not of that form, has an extent below 1 or does not have
        ``p`` ranks.

    Examples
    --------
    >>> from commsolve.dense import parse_grid25
    >>> parse_grid25("2x2x2")
    (2, 2, 2)
    >>> parse_grid25("2x3", 6)
    (2, 3, 1)
    >>> parse_grid25(None, 6)
    (2, 3, 1)
    """
    if grid is None:
        return default_grid25(p)
    if isinstance(grid, str):
        try:
            dims = tuple(int(v) for v in grid.lower().split("x"))
        except ValueError:
            raise ValueError(f"grid {grid!r}: expected PRxPCxC (e.g. 2x2x2) or PRxPC") from None
    else:
        dims = tuple(int(v) for v in grid)
    if len(dims) == 2:
        dims = dims + (1,)
    if len(dims) != 3 or min(dims) < 1:
        raise ValueError(f"grid {grid!r}: expected three positive extents PRxPCxC")
    if p is not None and dims[0] * dims[1] * dims[2] != p:
        raise ValueError(f"grid {'x'.join(map(str, dims))} has {dims[0] * dims[1] * dims[2]} ranks, the "
                         f"communicator {p}")
    return dims


def grid_position(rank, grid):
    """(x, y, z) of ``rank`` on ``grid`` (pr, pc, c): rank = z pr pc + x pc + y."""
    pr, pc, _ = grid
    return (rank % (pr * pc)) // pc, rank % pc, rank // (pr * pc)


def random_entries(rows, cols, seed):
    """Entries (rows[i], cols[j]) of the random matrix numbered ``seed``.

    Each entry is uniform in [-1, 1), a counter-based hash of (seed, row, column), so any rank
    makes any block of it alone.

    Parameters
    ----------
    rows, cols : array_like of int
        Global row and column indices (non-negative).
    seed : int
        Which random matrix.

    Returns
    -------
    ndarray
        The ``len(rows) x len(cols)`` float64 block.

    Examples
    --------
    >>> import numpy as np
    >>> from commsolve.dense import random_entries
    >>> whole = random_entries(range(4), range(4), seed=1)
    >>> np.array_equal(random_entries([2, 3], [1], seed=1), whole[2:4, 1:2])
    True
    """
    r = np.asarray(rows, dtype=np.uint64)[:, None]
    c = np.asarray(cols, dtype=np.uint64)[None, :]
    with np.errstate(over="ignore"):
        h = (r * np.uint64(0x9E3779B97F4A7C15)) ^ (c * np.uint64(0xC2B2AE3D27D4EB4F)) ^ np.uint64(
            (int(seed) * 0x165667B19E3779F9 + 0x27D4EB2F165667C5) % 2**64)
        h ^= h >> np.uint64(30)  # splitmix64's finalizer
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(27)
        h *= np.uint64(0x94D049BB133111EB)
        h ^= h >> np.uint64(31)
    return (h >> np.uint64(11)).astype(np.float64) * (2.0 / 2**53) - 1.0


class DistributedDense:
    """One rank's part of an m x n matrix, block-cyclic (blocks nb x nb) on layer 0 of the
    2.5D grid ``grid`` over ``comm``; ``local`` is this rank's blocks (column-major 2D array,
    empty off layer 0).

    Usually made by :meth:`from_global`, :meth:`scatter` or :meth:`random`.

    Parameters
    ----------
    local : array_like
        This rank's blocks as one 2D array (stored column-major): its rows and columns of the
        block-cyclic layout on layer 0, shape (0, 0) on the other layers.
    shape : tuple of int
        The global (m, n).
    nb : int
        The block size.
    grid : tuple of int
        The grid (pr, pc, c).
    comm : mpi4py.MPI.Comm
        The communicator of ``pr * pc * c`` ranks.

    Raises
    ------
    ValueError
        When ``local`` does not have the shape the layout gives this rank.
    """

    def __init__(self, local, shape, nb, grid, comm):
        self.shape = (int(shape[0]), int(shape[1]))
        self.nb = int(nb)
        self.grid = tuple(grid)
        self.comm = comm
        pr, pc, _ = self.grid
        x, y, z = self.position
        want = (0, 0) if z > 0 else (len(self._rows(x)), len(self._cols(y)))
        local = np.asfortranarray(local, dtype=np.float64)
        if local.shape != want:
            raise ValueError(f"rank {comm.rank} at {self.position}: local blocks of shape {local.shape}, expected "
                             f"{want} for {self.shape[0]} x {self.shape[1]} in blocks of {self.nb} on {pr}x{pc}")
        self.local = local

    @property
    def position(self):
        """This rank's (x, y, z) on the grid: rank = z pr pc + x pc + y."""
        return grid_position(self.comm.rank, self.grid)

    def _rows(self, x):
        return _core.cyclic_indices(self.shape[0], self.nb, self.grid[0], x)

    def _cols(self, y):
        return _core.cyclic_indices(self.shape[1], self.nb, self.grid[1], y)

    def global_indices(self):
        """Local. The global indices of this rank's local rows and columns.

        Returns
        -------
        rows, columns : ndarray of int64
            Both empty off layer 0.
        """
        x, y, z = self.position
        if z > 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return self._rows(x), self._cols(y)

    @classmethod
    def _make(cls, shape, comm, grid, nb, fill):
        grid = parse_grid25(grid, comm.size)
        nb = DEFAULT_NB if nb is None else int(nb)
        if nb < 1 or min(shape) < 0:
            raise ValueError(f"block size must be >= 1 and extents >= 0, got nb={nb}, shape={shape}")
        pr, pc, _ = grid
        x, y, z = grid_position(comm.rank, grid)
        if z > 0:
            return cls(np.zeros((0, 0)), shape, nb, grid, comm)
        rows = _core.cyclic_indices(shape[0], nb, pr, x)
        cols = _core.cyclic_indices(shape[1], nb, pc, y)
        return cls(fill(rows, cols), shape, nb, grid, comm)

    @classmethod
    def from_global(cls, A, comm, grid=None, nb=None):
        """Local. Every rank passes the same global array ``A``; each layer-0 rank keeps its blocks.

        Parameters
        ----------
        A : array_like
            The whole m x n matrix, the same on every rank.
        comm : mpi4py.MPI.Comm
            The communicator.
        grid : str, tuple of int or None
            The grid, as :func:`parse_grid25` takes it (default: the squarest single layer).
        nb : int, optional
            The block size (default 128).

        Returns
        -------
        DistributedDense

        Raises
        ------
        ValueError
            When ``A`` is not 2D, the grid does not fit ``comm`` or ``nb`` < 1.
        """
        A = np.asarray(A, dtype=np.float64)
        if A.ndim != 2:
            raise ValueError(f"a dense matrix is 2D, got an array of shape {A.shape}")
        return cls._make(A.shape, comm, grid, nb, lambda r, c: A[np.ix_(r, c)])

    @classmethod
    def scatter(cls, A, comm, grid=None, nb=None, root=0):
        """Collective. The global array ``A`` given on ``root`` only (None elsewhere), each
        layer-0 rank sent its blocks (the inverse of :meth:`to_global`).

        Parameters
        ----------
        A : array_like or None
            The whole m x n matrix on ``root``; None (ignored) on the other ranks.
        comm : mpi4py.MPI.Comm
            The communicator.
        grid : str, tuple of int or None
            The grid, as :func:`parse_grid25` takes it (default: the squarest single layer).
        nb : int, optional
            The block size (default 128).
        root : int
            The rank that holds ``A``.

        Returns
        -------
        DistributedDense

        Raises
        ------
        ValueError
            On every rank, when ``A`` is not 2D or the grid does not fit ``comm``.
        """
        shape = comm.bcast(None if comm.rank != root else np.shape(A), root=root)
        if len(shape) != 2:
            raise ValueError(f"a dense matrix is 2D, got an array of shape {shape} on rank {root}")
        g = parse_grid25(grid, comm.size)
        b = DEFAULT_NB if nb is None else int(nb)
        parts = None
        if comm.rank == root:
            A = np.asarray(A, dtype=np.float64)
            pr, pc, _ = g
            parts = [np.zeros((0, 0))] * comm.size
            for x in range(pr):
                rows = _core.cyclic_indices(shape[0], b, pr, x)
                for y in range(pc):
                    parts[x * pc + y] = np.asfortranarray(A[np.ix_(rows, _core.cyclic_indices(shape[1], b, pc, y))])
        return cls(comm.scatter(parts, root=root), shape, b, g, comm)

    @classmethod
    def random(cls, m, n, comm, grid=None, nb=None, seed=0):
        """Local. The random m x n matrix numbered ``seed`` (:func:`random_entries`), each rank
        making its own blocks.

        Parameters
        ----------
        m, n : int
            The global shape.
        comm : mpi4py.MPI.Comm
            The communicator.
        grid : str, tuple of int or None
            The grid, as :func:`parse_grid25` takes it (default: the squarest single layer).
        nb : int, optional
            The block size (default 128).
        seed : int
            Which random matrix.

        Returns
        -------
        DistributedDense

        Raises
        ------
        ValueError
            When the grid does not fit ``comm``, ``nb`` < 1 or an extent is negative.
        """
        return cls._make((int(m), int(n)), comm, grid, nb, lambda r, c: random_entries(r, c, seed))

    def to_global(self, root=0):
        """Collective. The whole matrix on ``root`` (None elsewhere); every rank with root=None.

        Parameters
        ----------
        root : int or None
            The rank that receives the matrix; None: every rank.

        Returns
        -------
        ndarray or None
            The m x n matrix where it is gathered, None elsewhere.
        """
        parts = (self.global_indices(), self.local)
        every = self.comm.allgather(parts) if root is None else self.comm.gather(parts, root=root)
        if every is None:
            return None
        A = np.zeros(self.shape)
        for (rows, cols), block in every:
            if len(rows) and len(cols):
                A[np.ix_(rows, cols)] = block
        return A

    def matvec(self, x, keep=None):
        """Collective. The product with the global vector ``x`` (every rank passes it), whole on
        every rank, by numpy on each rank's blocks and one allreduce (independent of the 2.5D
        algorithms: what their checks use).

        Parameters
        ----------
        x : array_like
            The whole vector of n values, the same on every rank.
        keep : callable, optional
            ``keep(rows, cols)`` (global indices: a column of rows, a row of columns) masks
            this rank's blocks: True where an entry counts, e.g. a triangle.

        Returns
        -------
        ndarray
            The m values of the product, on every rank.
        """
        from mpi4py import MPI

        rows, cols = self.global_indices()
        y = np.zeros(self.shape[0])
        if len(rows) and len(cols):
            B = self.local if keep is None else np.where(keep(rows[:, None], cols[None, :]), self.local, 0.0)
            y[rows] = B @ np.asarray(x, dtype=float)[cols]
        self.comm.Allreduce(MPI.IN_PLACE, y, op=MPI.SUM)
        return y

    def permute_rows(self, perm):
        """Collective. The matrix whose row i is this one's row ``perm[i]`` (every rank passes the
        same permutation), laid out alike: each rank sends its rows where they go (alltoall).

        Parameters
        ----------
        perm : array_like of int
            A permutation of the m rows, the same on every rank.

        Returns
        -------
        DistributedDense

        Raises
        ------
        ValueError
            When ``perm`` is not a permutation of the m rows.
        """
        perm = np.asarray(perm, dtype=np.int64)
        m = self.shape[0]
        if perm.shape != (m,) or not np.array_equal(np.sort(perm), np.arange(m)):
            raise ValueError(f"permute_rows: expected a permutation of {m} rows, got an array of shape {perm.shape}")
        pr, pc, _ = self.grid
        rows, _ = self.global_indices()
        inv = np.empty(m, dtype=np.int64)
        inv[perm] = np.arange(m)
        new = inv[rows]  # where each local row goes
        owner = (new // self.nb) % pr
        x, y, z = self.position
        out = [None] * self.comm.size
        if z == 0:
            for xd in range(pr):
                pick = owner == xd
                out[xd * pc + y] = (new[pick], self.local[pick])
        local = np.zeros_like(self.local)
        if z == 0:
            pos = np.full(m, -1, dtype=np.int64)
            pos[rows] = np.arange(len(rows))
        for part in self.comm.alltoall(out):
            if part is not None and len(part[0]):
                local[pos[part[0]]] = part[1]
        return DistributedDense(local, self.shape, self.nb, self.grid, self.comm)

    def flat(self):
        """Local. This rank's blocks as the flat column-major array the core reads (a copy only if
        needed).

        Returns
        -------
        ndarray
        """
        return self.local.reshape(-1, order="F")

    def agree_layout(self, other, where):
        """Local. Raise a ValueError unless ``other`` lies on the same grid and communicator with
        the same block size.

        Parameters
        ----------
        other : DistributedDense
            The matrix to compare with.
        where : str
            What is checking, the start of the error message.

        Raises
        ------
        ValueError
            When the grids, block sizes or communicators differ.
        """
        if other.grid != self.grid or other.nb != self.nb or other.comm is not self.comm:
            raise ValueError(f"{where}: the matrices lie on different grids or block sizes "
                             f"({self.grid}, nb={self.nb} and {other.grid}, nb={other.nb})")

    def __repr__(self):
        return (f"DistributedDense({self.shape[0]} x {self.shape[1]}, nb={self.nb}, grid={'x'.join(map(str, self.grid))}, "
                f"rank {self.comm.rank} at {self.position})")


