"""What a distributed solve is asked to run, and the rules it must follow — each rule and
list of names is C++'s (``direct/solve_layout.hpp``, ``direct/solve_schedule.hpp``); this
module gives them their Python spelling: a grid from ``"PxQxR"``, a tuple or None, the
``"auto"`` grid (tuned from above, :mod:`commsolve.tune`), and :class:`SolveOptions` whose
unset parts take C++'s defaults."""

from __future__ import annotations

import operator

import numpy as np

from .. import _core
from ..trees import tree_shape

__all__ = ["ALGORITHMS", "ALLREDUCE", "KERNELS", "AUTO", "ProcessGrid3D", "SolveOptions", "is_auto", "parse_grid",
           "solve_options", "solve_threads", "check_choice", "make_layout"]

ALGORITHMS = tuple(_core.algorithm_names())  # 2d, 3d-baseline, 3d-baseline-async, 3d, 3d-baseline-pdgstrs
ALLREDUCE = tuple(_core.allreduce_names())  # packed, per-supernode
KERNELS = tuple(_core.kernel_names())  # inverted, per-block
AUTO = "auto"  # the grid that tuning chooses (commsolve.tune)
ProcessGrid3D = _core.ProcessGrid3D
SolveOptions = _core.SolveOptions


def is_auto(grid):
    """Whether ``grid`` asks for the tuned grid (``"auto"``, any case and spacing)."""
    return isinstance(grid, str) and grid.strip().lower() == AUTO


def parse_grid(grid, nranks, max_ranks=None, where=None):
    """``(px, py, pz)`` from a pair or triple, a string ``"PxQ"`` or ``"PxQxR"``, or None (the
    squarest 2D grid with px <= py, as SuperLU_DIST chooses, and pz = 1), by the grid rule
    (C++ ``parse_grid``: positive dimensions, pz a power of two, at most ``max_ranks`` ranks,
    what ``where`` handles); with ``nranks``, px py pz must equal it."""
    if grid is None:
        return tuple(_core.squarest_grid(int(nranks)))
    spelled = grid if isinstance(grid, str) else "x".join(map(_dimension, grid))
    limits = {} if max_ranks is None else {"max_ranks": int(max_ranks), "where": where or "this"}
    g = _core.parse_grid(spelled, **limits)
    if nranks is not None:
        _core.check_grid_ranks(g, int(nranks), spelled.strip())
    return tuple(g)


def _dimension(v):
    """A tuple's dimension as the grid rule reads it (whole numbers, 2.0 included)."""
    try:
        return str(operator.index(v))
    except TypeError:
        f = float(v)
        return str(int(f)) if f.is_integer() else str(v)


def check_choice(value, known, what):
    """``value`` if it is one of ``known``, else a ValueError listing them."""
    if value not in known:
        raise ValueError(f"unknown {what} {value!r} (known: {', '.join(known)})")
    return value


def solve_options(pz, algorithm=None, tree=None, seed=None, flat_threshold=None, allreduce=None, kernels=None,
                  leaf_sync=None):
    """The :class:`SolveOptions` of a solve on ``pz`` layers: ``algorithm`` (default: 2d on
    one layer, 3d on more), the tree shape ``tree`` with its ``seed`` and ``flat_threshold``,
    ``allreduce``, ``kernels`` (:data:`KERNELS`) and ``leaf_sync`` (the leaf forests' counter
    allreduce and barrier, as pdgstrs3d); what is not given takes C++'s defaults. A
    ValueError for an unknown name or an algorithm that does not run on ``pz`` layers (the
    algorithm/Pz rule)."""
    algorithm = _core.default_algorithm(int(pz)) if algorithm is None else algorithm
    _core.check_algorithm_grid(algorithm, int(pz))
    return SolveOptions(algorithm, tree_shape(tree, seed, flat_threshold), allreduce, kernels,
                        None if leaf_sync is None else bool(leaf_sync))


def solve_threads(threads, grid):
    """Threads per rank of the solves on ``grid`` (px, py, pz): ``threads`` (a whole number
    >= 1, C++ ``check_solve_threads``), or None: ``OMP_NUM_THREADS`` on a grid whose layers
    are one rank (where the phases run sync-free), else 1."""
    if threads is None:
        return _core.default_threads() if grid[0] * grid[1] == 1 else 1
    try:
        n = operator.index(threads)
    except TypeError:
        raise ValueError(f"threads must be a whole number, got {threads!r}") from None
    _core.check_solve_threads(n)
    return n


def make_layout(structure, grid, forests=None, partition="nd"):
    """A SolveLayout of ``structure`` on ``grid`` ((px, py, pz), "PxQxR" or a ProcessGrid3D)
    with the given ``forests`` (one forest index per supernode) or those of ``partition``."""
    g = grid if isinstance(grid, ProcessGrid3D) else ProcessGrid3D(*parse_grid(grid, None))
    if forests is None:
        return _core.SolveLayout(structure, g, partition)
    return _core.SolveLayout(structure, g, np.ascontiguousarray(forests, dtype=np.int32))
