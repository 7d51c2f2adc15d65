"""Realistic restricted-collective workloads on a supernodal factor, counted in the virtual
world: the communication of parallel selected inversion (PSelInv paper, Algorithm 1 step 3)
and of the 2D and 3D triangular solves (SC'23 paper, Algorithms 1-3; Sao et al., ICS'19).

The supernodal structure is :func:`commsolve.direct.supernodal_structure`'s. Blocks are
mapped 2D block-cyclically to a Pr x Pc grid: block (I, K) lives on rank (I mod Pr) * Pc +
(K mod Pc).
"""

from __future__ import annotations

import numpy as np

from . import _core
from .direct.options import make_layout, solve_options
from .direct.solver import XY_STEPS, Z_STEPS
from .stats import CommStats
from .trees import Collectives

__all__ = ["selinv_collectives", "sptrsv_collectives", "solve_program", "sptrsv3d_stats", "layout_stats",
           "sptrsv3d_summary"]


def selinv_collectives(structure, grid, symmetric=True, roles=("col_bcast", "row_reduce")):
    """The collectives of parallel selected inversion (:mod:`commsolve.direct.selinv`) on a
    ``(Pr, Pc)`` grid whose ``roles`` are given (default: the PSelInv paper's two, Tables I
    and II): per supernode K, the Col-Bcast of L^(C_y, K)^T from (K mod Pr, y) down each
    process column y holding rows of K's structure, to the ranks that hold blocks of Z(C, C)
    there, and the Row-Reduce of Z(R_x, K) along each process row x to (x, K mod Pc). The
    same plan the MPI run executes (C++ ``selinv_plan``); payloads are the blocks' doubles;
    receivers in the order of their process row or column.

    Parameters
    ----------
    structure : SupernodalStructure
        The factor's supernodal structure (:func:`commsolve.direct.supernodal_structure`).
    grid : tuple of int
        (Pr, Pc).
    symmetric : bool
        Selected inversion's symmetric form (half the products, each lower block sent across
        the diagonal as its transpose), else the unsymmetric one.
    roles : sequence of str
        The roles of the collectives kept (names of :data:`commsolve.direct.selinv.ROLES`).

    Returns
    -------
    Collectives
        Numbered 0, 1, ... in the plan's order.

    Raises
    ------
    ValueError
        When Pr or Pc is below 1, or naming an unknown role.
    """
    Pr, Pc = (int(g) for g in grid)
    if Pr < 1 or Pc < 1:
        raise ValueError(f"grid must be positive, got {Pr} x {Pc}")
    known = _core.selinv_role_names()
    keep = [known.index(r) for r in roles]  # a ValueError names an unknown role
    _, invert = _core.selinv_plan(make_layout(structure, (Pr, Pc, 1)), bool(symmetric))
    core = invert["set"]
    ptr, part, kind, root, count = core.part_ptr, core.part, core.kind, core.root, core.count  # one copy each
    chosen = np.nonzero(np.isin(invert["role"], keep))[0]
    return Collectives(list(range(chosen.size)), kind[chosen].tolist(), root[chosen].tolist(),
                       [part[ptr[c]:ptr[c + 1]].tolist() for c in chosen], count[chosen].tolist())


def sptrsv_collectives(structure, grid, upper=False):
    """The collectives of the 2D L-solve (or U-solve, ``upper=True``) on a ``(Pr, Pc)`` grid,
    exactly those :func:`commsolve.direct.factor` runs: collective K broadcasts supernode K's
    solution from its diagonal owner to the owners of the blocks that use it, collective
    ns + K reduces K's partial sums to it (payloads per right-hand side).

    Parameters
    ----------
    structure : SupernodalStructure
        The factor's supernodal structure (:func:`commsolve.direct.supernodal_structure`).
    grid : tuple of int
        (Pr, Pc).
    upper : bool
        The U-solve instead of the L-solve.

    Returns
    -------
    Collectives
    """
    Pr, Pc = (int(g) for g in grid)
    return Collectives.from_core(_core.triangular_solve_collectives(structure, Pr, Pc, bool(upper)))


def solve_program(algorithm, z, pz, leaf_sync=False):
    """What grid ``z`` of a ``pz``-layer grid runs in a solve.

    Parameters
    ----------
    algorithm : str
        The solve algorithm (:data:`commsolve.direct.ALGORITHMS`).
    z : int
        The grid (layer), 0 .. pz - 1.
    pz : int
        The number of grids.
    leaf_sync : bool
        Also list the leaf forests' counter allreduces (``"L-counters"``/``"U-counters"``)
        and barrier (``"barrier"``).

    Returns
    -------
    program : list of tuple
        ``[(kind, lo, hi, step), ...]``, kind ``"L"``/``"U"`` (a solve phase of the grid's
        forests at levels lo..hi; level 0 is its leaf forest) or ``"Z-reduce"``/
        ``"Z-broadcast"`` (an inter-grid step with grid ``z -+ 2^(step-1)``), and with
        ``leaf_sync`` the kinds above.
    sync_points : int
        The synchronisation points.
    """
    return _core.solve_program(algorithm, int(z), int(pz), bool(leaf_sync))


def sptrsv3d_stats(structure, grid, algorithm, tree, topology, forests=None, partition="nd", nrhs=1,
                   allreduce=None, seed=None, flat_threshold=None, distribution=None, row_order=None, col_order=None,
                   kernels=None, leaf_sync=None):
    """Every rank's planned CommStats of one distributed solve on a ``(px, py, pz)`` grid,
    built in one process without MPI or numeric factors.

    Parameters
    ----------
    structure : SupernodalStructure
        The factor's supernodal structure (:func:`commsolve.direct.supernodal_structure`).
    grid : tuple of int, str or ProcessGrid3D
        (px, py, pz) or "PxQxR".
    algorithm : str or None
        The solve algorithm (:data:`commsolve.direct.ALGORITHMS`; None: 2d on one layer, 3d
        on more).
    tree : str or None
        The tree shape.
    topology : Topology
        The ranks and their nodes.
    forests : array_like of int, optional
        One forest index per supernode (default: those of ``partition``).
    partition : str
        The forest partition (:data:`commsolve.direct.FOREST_PARTITIONS`).
    nrhs : int
        Right-hand sides.
    allreduce, seed, flat_threshold, kernels, leaf_sync
        As :func:`commsolve.direct.solve_options` takes them (None: C++'s defaults).
    distribution : Distribution, optional
        The rows' distribution; when given, the moves of b and x are counted: b's row
        ``row_order[k]`` goes to factor row k, x's row ``col_order[k]`` comes from factor
        column k.
    row_order, col_order : array_like of int, optional
        Both ``structure.perm`` by default, as without a row permutation.

    Returns
    -------
    list of CommStats
        One per rank (steps: :data:`commsolve.direct.SOLVE_STEPS`).

    Raises
    ------
    ValueError
        For an unknown name or an algorithm that does not run on pz layers.
    """
    layout = make_layout(structure, grid, forests, partition)
    options = solve_options(layout.grid.pz, algorithm, tree, seed, flat_threshold, allreduce, kernels, leaf_sync)
    rhs = None
    if distribution is not None:
        rhs = _core.RhsMap(distribution, *(np.asarray(structure.perm if o is None else o, np.int32)
                                           for o in (row_order, col_order)))
    return layout_stats(layout, options, topology, nrhs, rhs)


def layout_stats(layout, options, topology, nrhs=1, rhs=None):
    """Every rank's planned CommStats of one solve on ``layout`` with ``options``; the moves of
    b and x when ``rhs`` is given.

    Parameters
    ----------
    layout : SolveLayout
        The factor on its grid (:func:`commsolve.direct.make_layout`).
    options : SolveOptions
        The solve's options (:func:`commsolve.direct.solve_options`).
    topology : Topology
        The ranks and their nodes.
    nrhs : int
        Right-hand sides.
    rhs : RhsMap, optional
        How b and x are distributed.

    Returns
    -------
    list of CommStats
        One per rank (steps: :data:`commsolve.direct.SOLVE_STEPS`).
    """
    return [CommStats(a) for a in _core.solve_stats_virtual(layout, options, topology, int(nrhs), rhs)]


def sptrsv3d_summary(layout, algorithm, tree, topology, nrhs=1, allreduce=None, seed=None, flat_threshold=None):
    """One algorithm's solve on ``layout`` (a SolveLayout) at virtual scale: per-rank
    messages and bytes sent inside the grids (XY) and between them (Z), max and mean over
    ranks; the inter-grid synchronisation points; and the floating-point work per grid (one
    right-hand side).

    Parameters
    ----------
    layout : SolveLayout
        The factor on its grid (:func:`commsolve.direct.make_layout`).
    algorithm : str or None
        The solve algorithm (:data:`commsolve.direct.ALGORITHMS`; None: 2d on one layer, 3d
        on more).
    tree : str or None
        The tree shape.
    topology : Topology
        The ranks and their nodes.
    nrhs : int
        Right-hand sides (the messages' sizes; the flops are one right-hand side's).
    allreduce, seed, flat_threshold
        As :func:`commsolve.direct.solve_options` takes them (None: C++'s defaults).

    Returns
    -------
    dict
        ``algorithm``, ``grid`` [px, py, pz], ``tree``, ``nrhs``, ``allreduce``; ``xy`` and
        ``z``, each a dict of ``max_msgs``, ``mean_msgs``, ``max_bytes``, ``mean_bytes``,
        ``total_msgs``, ``total_bytes`` and ``per_rank_msgs``; ``sync_points``;
        ``flops_per_grid``, ``flops_serial`` and ``replication`` (their sum over the serial
        flops).

    Raises
    ------
    ValueError
        For an unknown name or an algorithm that does not run on pz layers.
    """
    px, py, pz = layout.grid
    options = solve_options(pz, algorithm, tree, seed, flat_threshold, allreduce)
    arr = np.stack([s.array for s in layout_stats(layout, options, topology, nrhs)])  # (ranks, steps, 8)

    def part(steps):
        sent = arr[:, list(steps), :].sum(axis=1)
        msgs, nbytes = sent[:, 0] + sent[:, 1], sent[:, 2] + sent[:, 3]
        return {"max_msgs": int(msgs.max()), "mean_msgs": float(msgs.mean()), "max_bytes": int(nbytes.max()),
                "mean_bytes": float(nbytes.mean()), "total_msgs": int(msgs.sum()), "total_bytes": int(nbytes.sum()),
                "per_rank_msgs": msgs.astype(int).tolist()}

    flops = _core.grid_flops(layout, algorithm)
    serial = float(_core.solve_flops(layout.structure))
    syncs = max(solve_program(algorithm, z, pz)[1] for z in range(pz))
    return {"algorithm": algorithm, "grid": [px, py, pz], "tree": options.tree.name, "nrhs": int(nrhs),
            "allreduce": options.allreduce, "xy": part(XY_STEPS), "z": part(Z_STEPS), "sync_points": int(syncs),
            "flops_per_grid": [float(f) for f in flops], "flops_serial": serial,
            "replication": float(np.sum(flops) / serial) if serial else 1.0}
