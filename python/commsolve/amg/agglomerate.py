"""Coarse levels on fewer ranks: the hierarchy below a chosen level moved onto a subset of the
ranks and continued there (Nakajima's coarse-grid aggregation: CGA onto one rank, hCGA first
onto a subset, then onto one; PETSc GAMG's process reduction; hypre's coarse gathering).

A stage ``(rows_per_rank, nranks)`` moves the first level with fewer than ``rows_per_rank``
rows per rank onto ``nranks`` ranks (groups of consecutive ranks onto their first,
:func:`commsolve.redistribute.agglomeration`); the stages apply in turn, each on the ranks
the previous one left. The moved level is smoothed there, by the continued hierarchy: in the
V-cycle the level's right-hand side is gathered to the leaders, their V-cycle runs, and the
correction is scattered back (R^T M R: symmetric when the inner cycle is).
"""

from __future__ import annotations

import time

import numpy as np

from ..boxes import BoxGrid
from ..redistribute import agglomeration

__all__ = ["parse_stages", "Agglomerated"]


def parse_stages(stages, nranks):
    """Local. Agglomeration stages checked: positive rows per rank, target rank counts at
    least 1 and strictly decreasing.

    Parameters
    ----------
    stages : sequence of (float, int) or None
        None, or a sequence of ``(rows_per_rank, nranks)``.
    nranks : int
        The ranks the hierarchy starts on.

    Returns
    -------
    list of (float, int)
        The stages as (float, int) pairs, without the stages that leave the ``nranks`` ranks
        as they are (empty for None).

    Raises
    ------
    ValueError
        For anything else: stages that are not pairs of numbers, rows per rank not > 0,
        a target below 1 rank, or targets not strictly decreasing.
    """
    if stages is None:
        return []
    try:
        out = [(float(r), int(m)) for r, m in stages]
    except (TypeError, ValueError):
        raise ValueError(f"agglomerate takes a list of (rows_per_rank, nranks) stages, got {stages!r}") from None
    for k, (r, m) in enumerate(out):
        if not (r > 0 and m >= 1):
            raise ValueError(f"agglomeration stage {k}: rows per rank must be > 0 and ranks >= 1, got ({r:g}, {m})")
        if k and m >= out[k - 1][1]:
            raise ValueError(f"agglomeration stages must move onto fewer and fewer ranks, got {[m for _, m in out]}")
    return [(r, m) for r, m in out if m < nranks]


class Agglomerated:
    """The coarse solve of a hierarchy whose last level moved onto fewer ranks: the move
    (planned once) and, on the ranks that receive it, the hierarchy continued there
    (``inner``: a solver with a ``cycle``, None elsewhere)."""

    def __init__(self, level, nranks, build, strategy="standard"):
        """Collective on the level's communicator. Plans the move and builds the continued
        solver on the ranks that receive the level.

        Parameters
        ----------
        level : ~commsolve.amg.hierarchy.Level
            The last level of the hierarchy, the one moved.
        nranks : int
            The ranks it moves onto (groups of consecutive ranks onto their first).
        build : callable
            ``build(A, ids, candidate, grid)`` makes the continued solver from the moved
            operator (on the leaders' communicator) and the level's point data moved with
            it.
        strategy : str
            The communication strategy of the move and of the moved operator.
        """
        A = level.A
        self.move = agglomeration(A, nranks, strategy)
        moved = self.move.matrix(A, strategy=strategy, spmv_strategy=strategy)
        ids = self.move.gather(level.ids.astype(np.float64)).astype(np.int64)  # exact below 2^53
        candidate = None if level.candidate is None else self.move.gather(level.candidate)
        grid = level.grid.moved(self.move.group) if isinstance(level.grid, BoxGrid) else level.grid
        self.inner = build(moved, ids, candidate, grid) if moved is not None else None
        self.seconds = None  # a number: the moves' time is added to it (the solve's report)

    def solve(self, b):
        """Collective on the level's communicator: the inner V-cycle of b, back on b's ranks.

        While :attr:`seconds` is a number, the gather's and scatter's seconds are added to it.

        Parameters
        ----------
        b : ndarray
            This rank's part of the level's right-hand side.

        Returns
        -------
        ndarray
            This rank's part of the correction.
        """
        t0 = time.perf_counter()
        y = self.move.gather(b)
        moved = time.perf_counter() - t0
        z = self.inner.cycle(y) if self.inner is not None else y
        t0 = time.perf_counter()
        x = self.move.scatter(z)
        if self.seconds is not None:
            self.seconds += moved + time.perf_counter() - t0
        return x
