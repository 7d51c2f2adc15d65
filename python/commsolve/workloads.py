"""Realistic restricted-collective workloads on a supernodal factor: the communication of
parallel selected inversion (PSelInv paper, Algorithm 1 step 3) and of the 2D and 3D
triangular solves (SC'23 paper, Algorithms 1-3; Sao et al., ICS'19).

The supernode structure comes from a symbolic Cholesky factorization of the matrix's
symmetric pattern under METIS nested dissection — the structure a supernodal LU of that
matrix has (no pivoting). Blocks are mapped 2D block-cyclically to a Pr x Pc grid:
block (I, K) lives on rank (I mod Pr) * Pc + (K mod Pc).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from . import _core
from .partition import adjacency_graph
from .stats import CommStats
from .trees import Collectives

__all__ = ["SeparatorTree", "SupernodalStructure", "supernodal_structure", "selinv_collectives",
           "sptrsv_collectives", "forest_partition", "solve_program", "sptrsv3d_stats", "sptrsv3d_summary"]


@dataclass
class SeparatorTree:
    """Nested-dissection tree in postorder (root last): node k owns permuted columns
    [col_start[k], col_end[k]) and supernodes [sn_first[k], sn_last[k]); internal nodes are
    separators of their two children, leaves are subdomains."""

    parent: np.ndarray
    left: np.ndarray
    right: np.ndarray
    level: np.ndarray
    col_start: np.ndarray
    col_end: np.ndarray
    sn_first: np.ndarray
    sn_last: np.ndarray

    @property
    def num_nodes(self):
        return self.parent.size

    @property
    def root(self):
        return self.num_nodes - 1

    def subtree_columns(self, k):
        """[first, end) of the permuted columns of node k's whole subtree (contiguous)."""
        first = k
        while self.left[first] >= 0:
            first = self.left[first]
        return int(self.col_start[first]), int(self.col_end[k])


@dataclass
class SupernodalStructure:
    perm: np.ndarray  # perm[k]: original index of the k-th eliminated unknown
    parent: np.ndarray  # elimination tree of the permuted matrix
    sn_start: np.ndarray  # supernode s: columns [sn_start[s], sn_start[s+1])
    rows_ptr: np.ndarray  # rows of L below supernode s: rows[rows_ptr[s]:rows_ptr[s+1]]
    rows: np.ndarray
    nnz_L: int
    tree: SeparatorTree | None = None

    @property
    def nsuper(self):
        return self.sn_start.size - 1

    def core_arrays(self):
        """(sn_start, rows_ptr, rows) with the dtypes the core takes (int64, int64, int32)."""
        return self.sn_start.astype(np.int64), self.rows_ptr.astype(np.int64), self.rows.astype(np.int32)

    @functools.cached_property
    def sn_of(self):
        """Supernode of every column."""
        return np.repeat(np.arange(self.nsuper), np.diff(self.sn_start))

    def block_rows(self, s):
        """(supernodes I, rows in each) of the off-diagonal blocks L(I, s), ascending I."""
        return np.unique(self.sn_of[self.rows[self.rows_ptr[s]:self.rows_ptr[s + 1]]], return_counts=True)


def supernodal_structure(A, max_supernode=32, ordering="nd", levels=4, relax=0.0, relax_subtree=0):
    """Symbolic factorization of the pattern of ``A + A^T`` under ``ordering``: ``"nd"``
    (METIS nested dissection), ``"tree"`` (recursive METIS vertex separators keeping the top
    ``levels`` levels as an explicit binary :class:`SeparatorTree`, supernodes split at its
    node boundaries) or ``"natural"``. ``relax > 0`` amalgamates a supernode into its parent
    while the merged supernode stores at most that fraction of explicit zeros;
    ``relax_subtree > 0`` renumbers in elimination-tree postorder and makes every subtree of
    at most that many columns one supernode (SuperLU's relaxed supernodes)."""
    G = adjacency_graph(A)
    tree, breaks = None, np.zeros(0, np.int64)
    if ordering == "nd":
        perm = _core.metis_nested_dissection(G.indptr, G.indices)
    elif ordering == "tree":
        if levels < 0:
            raise ValueError(f"levels must be >= 0, got {levels}")
        t = _core.separator_tree(G.indptr, G.indices, int(levels))
        perm = t["perm"]
        breaks = np.unique(t["col_start"]).astype(np.int64)
    elif ordering == "natural":
        perm = np.arange(A.shape[0], dtype=np.int32)
    else:
        raise ValueError(f"unknown ordering '{ordering}' (known: nd, tree, natural)")
    P = G[perm][:, perm].tocsr()
    P.sort_indices()
    parent, sn_start, rows_ptr, rows, nnz, post = _core.symbolic_cholesky(
        P.indptr, P.indices, int(max_supernode), breaks, float(relax),
        int(relax_subtree))
    perm = np.asarray(perm)[post]
    if ordering == "tree":
        tree = SeparatorTree(t["parent"], t["left"], t["right"], t["level"], t["col_start"], t["col_end"],
                             np.searchsorted(sn_start, t["col_start"]), np.searchsorted(sn_start, t["col_end"]))
    return SupernodalStructure(perm, parent, sn_start, rows_ptr, rows, int(nnz), tree)


def selinv_collectives(structure, grid):
    """The Col-Bcast and Row-Reduce collectives of selected inversion on a ``(Pr, Pc)`` grid.

    For every supernode K with off-diagonal block rows S_K:
    - Col-Bcast of each block L(I, K), I in S_K, from its owner to the ranks of grid column
      K mod Pc that own blocks (J, K), J in S_K;
    - Row-Reduce for each J in S_K along grid row J mod Pr, from the owners of blocks (J, I),
      I in S_K, to the owner of block (J, K).
    Payloads are the blocks' sizes (rows x columns of K, in doubles). Receivers are listed
    by the first block they own (their need order).
    """
    Pr, Pc = (int(g) for g in grid)
    if Pr < 1 or Pc < 1:
        raise ValueError(f"grid must be positive, got {Pr} x {Pc}")
    ids, kinds, roots, parts, counts = [], [], [], [], []
    for K in range(structure.nsuper):
        blocks, sizes = structure.block_rows(K)
        if blocks.size == 0:
            continue
        width = int(structure.sn_start[K + 1] - structure.sn_start[K])
        kc = K % Pc
        # grid column kc, processor rows in need order (first block owned)
        prow_order = list(dict.fromkeys((blocks % Pr).tolist()))
        column = [pr * Pc + kc for pr in prow_order]
        pcol_order = list(dict.fromkeys((blocks % Pc).tolist()))
        for I, n in zip(blocks.tolist(), sizes.tolist()):
            root = (I % Pr) * Pc + kc
            ids.append(len(ids))
            kinds.append(0)
            roots.append(root)
            parts.append(column)
            counts.append(n * width)
        for J, n in zip(blocks.tolist(), sizes.tolist()):
            pr = J % Pr
            root = pr * Pc + kc
            row = [pr * Pc + pc for pc in pcol_order]
            if root not in row:
                row = [root] + row
            ids.append(len(ids))
            kinds.append(1)
            roots.append(root)
            parts.append(row)
            counts.append(n * width)
    return Collectives(ids, kinds, roots, parts, counts)


def sptrsv_collectives(structure, grid, upper=False):
    """The collectives of the 2D L-solve (or U-solve, ``upper=True``) on a ``(Pr, Pc)`` grid,
    exactly those :func:`commsolve.direct.factor` runs: collective K broadcasts supernode K's
    solution from its diagonal owner to the owners of the blocks that use it, collective
    ns + K reduces K's partial sums to it (payloads per right-hand side)."""
    Pr, Pc = (int(g) for g in grid)
    return Collectives.from_core(_core.triangular_solve_collectives(*structure.core_arrays(), Pr, Pc, bool(upper)))


def forest_partition(structure, pz, method="nd", imbalance=0.2):
    """Each supernode's forest (heap index in [0, 2 pz - 1)) for a 3D grid with ``pz`` layers.

    ``"nd"``: the top log2 pz levels of the structure's separator tree (``ordering="tree"``,
    built with at least that many ``levels``, as :func:`commsolve.direct.symbolic` does; a
    graph too small to split that deep leaves the layers below a leaf empty); ``"greedy"``: SuperLU_DIST's load-balancing split of the
    supernodal elimination tree (weight size x depth, bins within ``imbalance``)."""
    pz = int(pz)
    if pz < 1 or pz & (pz - 1):
        raise ValueError(f"Pz must be a power of two, got {pz}")
    if pz == 1:  # one layer: every supernode in the one forest, whatever the ordering
        return np.zeros(structure.nsuper, np.int32)
    if method == "greedy":
        return _core.greedy_forests(*structure.core_arrays(), pz, float(imbalance))
    if method != "nd":
        raise ValueError(f"unknown forest partition {method!r} (known: nd, greedy)")
    t = structure.tree
    if t is None:
        raise ValueError("the nd forest partition needs a separator tree (factor with ordering='tree')")
    i32, i64 = np.int32, np.int64
    return _core.nd_forests(structure.nsuper, pz, int(t.root), t.left.astype(i32), t.right.astype(i32),
                            np.asarray(t.sn_first, i64), np.asarray(t.sn_last, i64))


def solve_program(algorithm, z, pz):
    """What grid ``z`` of a ``pz``-layer grid runs in a solve: ``([(kind, lo, hi, step), ...],
    synchronisation points)``, kind ``"L"``/``"U"`` (a solve phase of the grid's forests at
    levels lo..hi; level 0 is its leaf forest) or ``"Z-reduce"``/``"Z-broadcast"`` (an
    inter-grid step with grid z -+ 2^(step-1))."""
    return _core.solve_program(algorithm, int(z), int(pz))


def sptrsv3d_stats(structure, grid, algorithm, tree, topology, forests=None, partition="nd", nrhs=1,
                   allreduce="packed", seed=0, flat_threshold=8, distribution=None, row_order=None, col_order=None):
    """Every rank's planned CommStats of one distributed solve on a ``(px, py, pz)`` grid,
    built in one process without MPI or numeric factors (steps:
    :data:`commsolve.direct.SOLVE_STEPS`; the moves of b and x are counted when a
    ``distribution`` of the rows is given: b's row ``row_order[k]`` goes to factor row k,
    x's row ``col_order[k]`` comes from factor column k, both ``structure.perm`` by default,
    as without a row permutation)."""
    px, py, pz = (int(g) for g in grid)
    forests = forest_partition(structure, pz, partition) if forests is None else forests
    orders = [None, None]
    if distribution is not None:
        orders = [np.asarray(structure.perm if o is None else o, np.int32) for o in (row_order, col_order)]
    arr = _core.solve_stats_virtual(*structure.core_arrays(), np.asarray(forests, np.int32), px, py, pz, algorithm,
                                    tree, int(seed), int(flat_threshold), topology, int(nrhs),
                                    allreduce == "packed", distribution, *orders)
    return [CommStats(a) for a in arr]


def sptrsv3d_summary(structure, grid, algorithm, tree, topology, forests=None, partition="nd", nrhs=1,
                     allreduce="packed", seed=0, flat_threshold=8):
    """One algorithm's solve at virtual scale: per-rank messages and bytes sent inside the
    grids (XY) and between them (Z), max and mean over ranks; the inter-grid
    synchronisation points; and the floating-point work per grid (one right-hand side)."""
    px, py, pz = (int(g) for g in grid)
    forests = forest_partition(structure, pz, partition) if forests is None else forests
    stats = sptrsv3d_stats(structure, grid, algorithm, tree, topology, forests, nrhs=nrhs, allreduce=allreduce,
                           seed=seed, flat_threshold=flat_threshold)
    arr = np.stack([s.array for s in stats])  # (ranks, steps, 8)

    def part(steps):
        sent = arr[:, list(steps), :].sum(axis=1)
        msgs, nbytes = sent[:, 0] + sent[:, 1], sent[:, 2] + sent[:, 3]
        return {"max_msgs": int(msgs.max()), "mean_msgs": float(msgs.mean()), "max_bytes": int(nbytes.max()),
                "mean_bytes": float(nbytes.mean()), "total_msgs": int(msgs.sum()), "total_bytes": int(nbytes.sum()),
                "per_rank_msgs": msgs.astype(int).tolist()}

    flops = _core.grid_flops(*structure.core_arrays(), np.asarray(forests, np.int32), pz, algorithm)
    serial = float(_core.grid_flops(*structure.core_arrays(), np.zeros(structure.nsuper, np.int32), 1, "2d")[0])
    syncs = max(solve_program(algorithm, z, pz)[1] for z in range(pz))
    return {"algorithm": algorithm, "grid": [px, py, pz], "tree": tree, "nrhs": int(nrhs), "allreduce": allreduce,
            "xy": part((0, 1, 2, 3)), "z": part((4, 5)), "sync_points": int(syncs),
            "flops_per_grid": [float(f) for f in flops], "flops_serial": serial,
            "replication": float(np.sum(flops) / serial) if serial else 1.0}
