"""Structured grids numbered box by box: the 3D block decomposition of Nakajima's pGW3D-FVM
and HPCG, where each rank owns a box of cells (its rows consecutive, x fastest within the
box) and talks to up to 26 neighbours, instead of the slabs a contiguous split of the
lexicographic numbering gives.

A :class:`BoxGrid` is the grid's extents, the cut points of a process grid along each
dimension, and the rank owning each box (boxes x fastest; owners never decrease along that
order, so every rank's rows are one contiguous range). Geometric multigrid coarsens it box
by box (a cell-centred aggregate belongs to its first cell's box) and an agglomeration
merges the owners of consecutive ranks: both keep it a BoxGrid.
"""

from __future__ import annotations

import numpy as np

__all__ = ["BoxGrid", "box_process_grid"]


def box_process_grid(extents, nprocs):
    """The process grid (px, py, pz) with px py pz = ``nprocs`` and at most one rank per cell
    along each dimension whose boxes have the least surface (the halo a rank exchanges); ties
    to the largest px, then py (MPI_Dims_create's order).

    Parameters
    ----------
    extents : sequence of int
        The grid's cells (nx, ny, nz).
    nprocs : int
        The number of ranks.

    Returns
    -------
    tuple of int
        (px, py, pz).

    Raises
    ------
    ValueError
        When no such grid gives every rank a box of cells.

    Examples
    --------
    >>> from commsolve.boxes import box_process_grid
    >>> box_process_grid((8, 8, 8), 8)
    (2, 2, 2)
    >>> box_process_grid((8, 4, 2), 8)
    (4, 2, 1)
    """
    nx, ny, nz = (int(e) for e in extents)
    P = int(nprocs)
    best = None
    for px in range(1, P + 1):
        if P % px or px > nx:
            continue
        for py in range(1, P // px + 1):
            pz = P // (px * py)
            if (P // px) % py or py > ny or pz > nz:
                continue
            bx, by, bz = nx / px, ny / py, nz / pz
            key = (bx * by + by * bz + bx * bz, -px, -py)
            if best is None or key < best[0]:
                best = (key, (px, py, pz))
    if best is None:
        raise ValueError(f"{P} ranks do not fit a {nx} x {ny} x {nz} grid with a box of cells each")
    return best[1]


def _cuts(extent, parts):
    """``parts`` + 1 cut points splitting ``extent`` cells as evenly as possible."""
    return (np.arange(parts + 1, dtype=np.int64) * int(extent)) // int(parts)


class BoxGrid:
    """A structured grid (nx, ny, nz) numbered box by box (see the module).

    Parameters
    ----------
    extents : sequence of int
        The grid's cells (nx, ny, nz).
    cuts : sequence of array_like of int
        Per dimension, the cut points of the process grid: from 0 up to the extent, never
        decreasing (px + 1 of them along x, and so on).
    owners : array_like of int, optional
        The rank owning each box, boxes x fastest: starting at 0, never decreasing (default:
        box b on rank b).

    Raises
    ------
    ValueError
        When there are not three dimensions, the cuts do not split the extents, or the owners
        are not one per box, starting at 0 and never decreasing.

    Examples
    --------
    >>> from commsolve.boxes import BoxGrid
    >>> g = BoxGrid.blocks((4, 4, 1), (2, 2, 1))
    >>> g.offsets()
    array([ 0,  4,  8, 12, 16])
    >>> g.coords([0, 1, 2, 3])  # rank 0's rows: the 2 x 2 box at the origin
    (array([0, 1, 0, 1]), array([0, 0, 1, 1]), array([0, 0, 0, 0]))
    >>> int(g.index(2, 0, 0))  # the first cell of rank 1's box
    4
    """

    def __init__(self, extents, cuts, owners=None):
        self.extents = tuple(int(e) for e in extents)
        self.cuts = tuple(np.asarray(c, dtype=np.int64) for c in cuts)
        if len(self.extents) != 3 or len(self.cuts) != 3:
            raise ValueError("a BoxGrid has three dimensions")
        for e, c in zip(self.extents, self.cuts):
            if c.size < 2 or c[0] != 0 or c[-1] != e or np.any(np.diff(c) < 0):
                raise ValueError(f"box cuts {c.tolist()} do not split {e} cells")
        self.procs = tuple(c.size - 1 for c in self.cuts)
        nboxes = int(np.prod(self.procs))
        self.owners = np.arange(nboxes, dtype=np.int64) if owners is None else np.asarray(owners, dtype=np.int64)
        if self.owners.shape != (nboxes,) or np.any(np.diff(self.owners) < 0) or self.owners[0] != 0:
            raise ValueError("box owners must start at 0 and never decrease in box order")
        sizes = [np.diff(c) for c in self.cuts]
        self.box_cells = np.einsum("i,j,k->kji", *sizes).ravel()  # cells per box, boxes x fastest
        self.box_start = np.concatenate([[0], np.cumsum(self.box_cells)])

    @classmethod
    def blocks(cls, extents, procs):
        """The grid cut into ``procs`` = (px, py, pz) boxes as even as possible, one per rank.

        Parameters
        ----------
        extents : sequence of int
            The grid's cells (nx, ny, nz).
        procs : sequence of int
            The boxes per dimension (px, py, pz), e.g. :func:`box_process_grid`'s.

        Returns
        -------
        BoxGrid
        """
        return cls(extents, [_cuts(e, p) for e, p in zip(extents, procs)])

    @property
    def nranks(self):
        """The number of ranks (the last box's owner + 1)."""
        return int(self.owners[-1]) + 1

    @property
    def rows(self):
        """The number of rows: the grid's cells, nx ny nz."""
        return int(np.prod(self.extents))

    def offsets(self):
        """Each rank's first row, and the total at the end (a contiguous Distribution's).

        Returns
        -------
        ndarray of int64
            ``nranks + 1`` offsets.
        """
        return self.box_start[np.searchsorted(self.owners, np.arange(self.nranks + 1))]

    def _box_coords(self, b):
        px, py, _ = self.procs
        return b % px, (b // px) % py, b // (px * py)

    def coords(self, g):
        """The cells (x, y, z) of global rows ``g``.

        Parameters
        ----------
        g : array_like of int
            Global rows.

        Returns
        -------
        x, y, z : ndarray of int64
        """
        g = np.asarray(g, dtype=np.int64)
        b = np.searchsorted(self.box_start, g, side="right") - 1
        i, j, k = self._box_coords(b)
        (cx, cy, cz), local = self.cuts, g - self.box_start[b]
        wx, wy = cx[i + 1] - cx[i], cy[j + 1] - cy[j]
        return cx[i] + local % wx, cy[j] + (local // wx) % wy, cz[k] + local // (wx * wy)

    def index(self, x, y, z):
        """The global rows of cells (x, y, z).

        Parameters
        ----------
        x, y, z : array_like of int
            The cells' coordinates.

        Returns
        -------
        ndarray of int64
        """
        (cx, cy, cz) = self.cuts
        i, j, k = (np.searchsorted(c, v, side="right") - 1 for c, v in zip(self.cuts, (x, y, z)))
        px, py, _ = self.procs
        b = i + px * (j + py * k)
        wx, wy = cx[i + 1] - cx[i], cy[j + 1] - cy[j]
        x, y, z = (np.asarray(v, dtype=np.int64) for v in (x, y, z))
        return self.box_start[b] + (x - cx[i]) + wx * ((y - cy[j]) + wy * (z - cz[k]))

    def lexicographic(self, g):
        """The lexicographic indices (x fastest over the whole grid) of global rows ``g``.

        Parameters
        ----------
        g : array_like of int
            Global rows.

        Returns
        -------
        ndarray of int64
        """
        x, y, z = self.coords(g)
        nx, ny, _ = self.extents
        return x + nx * (y + ny * z)

    def from_lexicographic(self, lex):
        """The global rows of lexicographic indices ``lex``.

        Parameters
        ----------
        lex : array_like of int
            Indices x fastest over the whole grid.

        Returns
        -------
        ndarray of int64
        """
        lex = np.asarray(lex, dtype=np.int64)
        nx, ny, _ = self.extents
        return self.index(lex % nx, (lex // nx) % ny, lex // (nx * ny))

    def coarser(self):
        """The grid of 2 x 2 x 2 aggregates (extents halved, rounded up): each aggregate in its
        first cell's box, so every cut halves, rounded up.

        Returns
        -------
        BoxGrid
            With the same owners.
        """
        return BoxGrid([-(-e // 2) for e in self.extents], [-(-c // 2) for c in self.cuts], self.owners)

    def moved(self, group):
        """The grid after groups of ``group`` consecutive ranks moved onto their first (which is
        rank r // group among the leaders).

        Parameters
        ----------
        group : int
            The ranks per group.

        Returns
        -------
        BoxGrid
            The same cells and cuts, box owners divided by ``group``.
        """
        return BoxGrid(self.extents, self.cuts, self.owners // int(group))

    def __eq__(self, other):
        return (isinstance(other, BoxGrid) and self.extents == other.extents
                and all(np.array_equal(a, b) for a, b in zip(self.cuts, other.cuts))
                and np.array_equal(self.owners, other.owners))

    def __repr__(self):
        return (f"BoxGrid({' x '.join(map(str, self.extents))} in {' x '.join(map(str, self.procs))} boxes on "
                f"{self.nranks} ranks)")
