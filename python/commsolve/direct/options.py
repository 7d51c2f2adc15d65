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
    """Whether ``grid`` asks for the tuned grid (``"auto"``, any case and spacing).

    Parameters
    ----------
    grid : object
        A grid as :func:`parse_grid` and :func:`~commsolve.direct.factor` take it.

    Returns
    -------
    bool
        True when ``grid`` is a string that reads ``"auto"`` once stripped and lower-cased.
    """
    return isinstance(grid, str) and grid.strip().lower() == AUTO


def parse_grid(grid, nranks, max_ranks=None, where=None):
    """``(px, py, pz)`` from a pair or triple, a string ``"PxQ"`` or ``"PxQxR"``, or None.

    The grid rule is C++'s ``parse_grid``: positive dimensions, pz a power of two, at most
    ``max_ranks`` ranks, what ``where`` handles.

    Parameters
    ----------
    grid : tuple of int, str or None
        A pair or triple (whole numbers, 2.0 included), a string ``"PxQ"`` or ``"PxQxR"``,
        or None: the squarest 2D grid with px <= py, as SuperLU_DIST chooses, and pz = 1.
    nranks : int or None
        With ``nranks``, ``px py pz`` must equal it; None checks no count (then ``grid``
        must be given).
    max_ranks : int, optional
        At most this many ranks in the grid (default: C++'s, the largest int).
    where : str, optional
        What handles at most ``max_ranks`` ranks, named in the error (default ``"this"``;
        read only with ``max_ranks``).

    Returns
    -------
    tuple of int
        ``(px, py, pz)``.

    Raises
    ------
    ValueError
        For a grid that breaks the grid rule or whose ranks are not ``nranks``.

    Examples
    --------
    >>> from commsolve.direct import parse_grid
    >>> parse_grid(None, 6)
    (2, 3, 1)
    >>> parse_grid("2x2x2", 8)
    (2, 2, 2)
    """
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
    """``value`` if it is one of ``known``, else a ValueError listing them.

    Parameters
    ----------
    value : object
        The name to check.
    known : sequence of str
        The names allowed.
    what : str
        What ``value`` names, for the error (e.g. ``"forest partition"``).

    Returns
    -------
    object
        ``value`` itself.

    Raises
    ------
    ValueError
        When ``value`` is not one of ``known``; the message lists them.
    """
    if value not in known:
        raise ValueError(f"unknown {what} {value!r} (known: {', '.join(known)})")
    return value


def solve_options(pz, algorithm=None, tree=None, seed=None, flat_threshold=None, allreduce=None, kernels=None,
                  leaf_sync=None):
    """The :class:`SolveOptions` of a solve on ``pz`` layers; what is not given takes C++'s defaults.

    Parameters
    ----------
    pz : int
        The grid's layers.
    algorithm : str, optional
        One of :data:`ALGORITHMS` (default: ``"2d"`` on one layer, ``"3d"`` on more).
    tree : str or TreeShape, optional
        The tree shape (:mod:`commsolve.trees`).
    seed, flat_threshold : int, optional
        The tree shape's seed and flat threshold.
    allreduce : str, optional
        The inter-grid packing, one of :data:`ALLREDUCE`.
    kernels : str, optional
        One of :data:`KERNELS`.
    leaf_sync : bool, optional
        The leaf forests' counter allreduce and barrier, as pdgstrs3d.

    Returns
    -------
    SolveOptions

    Raises
    ------
    ValueError
        For an unknown name or an algorithm that does not run on ``pz`` layers (the
        algorithm/Pz rule).
    """
    algorithm = _core.default_algorithm(int(pz)) if algorithm is None else algorithm
    _core.check_algorithm_grid(algorithm, int(pz))
    return SolveOptions(algorithm, tree_shape(tree, seed, flat_threshold), allreduce, kernels,
                        None if leaf_sync is None else bool(leaf_sync))


def solve_threads(threads, grid):
    """Threads per rank of the solves on ``grid``.

    Parameters
    ----------
    threads : int or None
        A whole number >= 1 (C++ ``check_solve_threads``), or None: ``OMP_NUM_THREADS`` on a
        grid whose layers are one rank (where the phases run sync-free), else 1.
    grid : tuple of int
        ``(px, py, pz)``.

    Returns
    -------
    int
        The threads per rank.

    Raises
    ------
    ValueError
        When ``threads`` is not a whole number or is below 1.
    """
    if threads is None:
        return _core.default_threads() if grid[0] * grid[1] == 1 else 1
    try:
        n = operator.index(threads)
    except TypeError:
        raise ValueError(f"threads must be a whole number, got {threads!r}") from None
    _core.check_solve_threads(n)
    return n


def make_layout(structure, grid, forests=None, partition="nd"):
    """A SolveLayout of ``structure`` on ``grid`` with the given ``forests`` or those of ``partition``.

    Parameters
    ----------
    structure : SupernodalStructure
        The factor's supernodal structure.
    grid : tuple of int, str or ProcessGrid3D
        ``(px, py, pz)``, ``"PxQxR"`` or a ProcessGrid3D (the first two by :func:`parse_grid`).
    forests : array_like of int, optional
        One forest index per supernode; without it, the forests of ``partition``.
    partition : str
        The forest partition, one of :data:`~commsolve.direct.symbolic.FOREST_PARTITIONS`
        (read only without ``forests``).

    Returns
    -------
    SolveLayout
    """
    g = grid if isinstance(grid, ProcessGrid3D) else ProcessGrid3D(*parse_grid(grid, None))
    if forests is None:
        return _core.SolveLayout(structure, g, partition)
    return _core.SolveLayout(structure, g, np.ascontiguousarray(forests, dtype=np.int32))
