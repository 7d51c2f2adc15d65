"""The symbolic analysis of a supernodal factor (C++ ``direct/symbolic.hpp``): the ordering
(METIS nested dissection, or recursive separators keeping the top levels of the separator
tree, or the natural order), the supernodal structure of L (relaxed supernodes, SuperLU's
amalgamation) and the forests a 3D process grid splits it into.

The structure is one C++ value type, :class:`SupernodalStructure`, read by every layout,
plan and simulation of a factor; its options' defaults are C++'s
(:class:`SymbolicOptions`), shared by :class:`~commsolve.direct.SparseLU`,
:func:`~commsolve.direct.factor`, the virtual-world analyses and the CLI.
"""

from __future__ import annotations

import time

import numpy as np

from .. import _core
from .._collective import mpi
from ..partition import adjacency_graph

__all__ = ["SupernodalStructure", "SeparatorTree", "SymbolicOptions", "LU_DEFAULTS", "ORDERINGS", "PARALLEL_ORDERINGS",
           "TREELESS_ORDERINGS", "FOREST_PARTITIONS",
           "supernodal_structure", "symbolic", "chosen_ordering", "levels_for", "forest_partition"]

SupernodalStructure = _core.SupernodalStructure
SeparatorTree = _core.SeparatorTree
SymbolicOptions = _core.SymbolicOptions
ORDERINGS = tuple(_core.ordering_names())
# Computed in parallel on a distributed matrix by factor(); on one process elsewhere.
PARALLEL_ORDERINGS = ("ptscotch", "ptscotch-metis")
# Those that keep no separator tree, which the forest partition "nd" of a Pz > 1 grid splits.
TREELESS_ORDERINGS = ("nd", "natural")
FOREST_PARTITIONS = tuple(_core.forest_partition_names())
_DEFAULTS = SymbolicOptions()
# The supernodal pipeline's defaults (read from C++), as SparseLU's and factor's keywords.
LU_DEFAULTS = {k: getattr(_DEFAULTS, k) for k in ("max_supernode", "ordering", "levels", "relax", "relax_subtree")}


def chosen_ordering(ordering, nranks, distributed):
    """The ordering ``"auto"`` (the default) stands for: the one whose setup to the first
    solve measured fastest (``bench/factor_vs_superlu.py`` against SuperLU_DIST at 1, 2 and 4
    ranks, ``bench/results/setup_vs_superlu9_parallel*.json``).

    For a distributed matrix (a ParCSR), PT-Scotch's separators, no rank gathering A, where
    MPI allows PT-Scotch's threads (one rank, or MPI_THREAD_MULTIPLE): returned as
    ``"ptscotch"``, its leaves are then ordered by METIS on a 3D mesh (``"ptscotch-metis"``)
    and by Scotch otherwise (docs/concepts.md, "The ordering in parallel", has the fill and the
    time of each); ``factor()`` reports which in ``solver.analysis.ordering``. Otherwise the
    separator tree on one rank (``"tree"``, also SparseLU's). Any other name stands for itself.

    Parameters
    ----------
    ordering : str
        The ordering asked for (one of :data:`ORDERINGS`).
    nranks : int
        The ranks the matrix is on.
    distributed : bool
        Whether the matrix is distributed (a ParCSR).

    Returns
    -------
    str
        The ordering used.
    """
    if ordering != "auto":
        return ordering
    MPI = mpi()
    if distributed and (nranks == 1 or MPI.Query_thread() == MPI.THREAD_MULTIPLE):
        return "ptscotch"
    return "tree"


def levels_for(levels, pz):
    """Separator-tree levels for a grid of ``pz`` layers: at least log2(pz).

    Parameters
    ----------
    levels : int
        The levels asked for.
    pz : int
        The grid's layers.

    Returns
    -------
    int
        The larger of ``levels`` and log2(pz) (rounded down).
    """
    return max(int(levels), int(pz).bit_length() - 1)


def supernodal_structure(A, max_supernode=None, ordering=None, levels=None, relax=None, relax_subtree=None,
                         times=None, ordered=None, graph=None):
    """The supernodal structure of the pattern of ``A + A^T`` (a :class:`SupernodalStructure`).

    Options left out take :data:`LU_DEFAULTS` (C++'s); ``relax=0, relax_subtree=0`` give the
    exact structure of symbolic Cholesky.

    Parameters
    ----------
    A : scipy sparse matrix
        The matrix, square; only its pattern is read.
    max_supernode : int, optional
        Supernodes hold at most ``max_supernode`` columns (default 256, SuperLU_DIST's
        ``maxsup``: the fastest setup measured at P <= 2; the simulator prices solves on
        thousands of ranks 17-26 % faster with 128, docs/concepts.md).
    ordering : str, optional
        ``"auto"`` (here ``"tree"``; see :func:`chosen_ordering`), ``"nd"`` (METIS nested
        dissection), ``"tree"`` (recursive METIS vertex separators keeping the top ``levels``
        levels as an explicit binary separator tree, supernodes split at its node
        boundaries), ``"ptscotch"`` (Scotch's nested dissection, here on one process;
        :func:`~commsolve.direct.factor` runs PT-Scotch's on the distributed matrix, keeping
        log2 of its ordering ranks as tree levels, each leaf ordered by Scotch on a rank of
        its own), ``"ptscotch-metis"`` (the same with each leaf ordered by METIS; on one
        process it is METIS's ordering) or ``"natural"``.
    levels : int, optional
        The top levels of the separator tree kept (``ordering="tree"``).
    relax : float, optional
        ``relax > 0`` amalgamates a supernode into its parent while the merged supernode
        stores at most that fraction of explicit zeros.
    relax_subtree : int, optional
        ``relax_subtree > 0`` renumbers in elimination-tree postorder and makes every subtree
        of at most that many columns one supernode (SuperLU's relaxed supernodes).
    times : dict, optional
        If given, receives the seconds of each part: ``graph`` (the pattern of ``A + A^T``),
        ``nested_dissection`` (METIS), ``permute`` (the graph renumbered) and ``symbolic``
        (the supernodal structure).
    ordered : SeparatorTree, optional
        An ordering computed elsewhere (a :class:`SeparatorTree` with ``perm``, as
        :func:`~commsolve.direct.parallel_analysis.parallel_ordering` returns it), used
        instead of ``ordering`` and ``levels``.
    graph : scipy.sparse.csr_matrix, optional
        The pattern of ``A + A^T`` without its diagonal as :func:`~commsolve.partition.adjacency_graph`
        gives it, if the caller holds it (then not computed again).

    Returns
    -------
    SupernodalStructure

    Raises
    ------
    ValueError
        For a non-square matrix or an unknown ``ordering``.
    """
    options = SymbolicOptions(max_supernode=max_supernode, ordering=ordering, levels=levels, relax=relax,
                              relax_subtree=relax_subtree)
    if options.ordering in PARALLEL_ORDERINGS:
        mpi()  # PT-Scotch runs on MPI_COMM_SELF: MPI must be initialized
    t0 = time.perf_counter()
    G = adjacency_graph(A) if graph is None else graph
    if times is not None and graph is None:
        times["graph"] = time.perf_counter() - t0
    if ordered is not None:
        return _core.symbolic_for_ordering(G.indptr, G.indices, ordered, options, times)
    return _core.symbolic_analysis(G.indptr, G.indices, options, times)


def symbolic(A, pz=1, times=None, ordered=None, graph=None, **options):
    """The supernodal structure that :class:`~commsolve.direct.SparseLU` and
    :func:`~commsolve.direct.factor` on a grid of ``pz`` layers compute for ``A`` with the same
    ordering: what the virtual-world analyses of the distributed solves read. (factor() of a
    ParCSR with ``ordering="tree"`` on P ranks keeps at least log2 P levels, its leaves ordered
    on their ranks: ``levels=`` that many gives its structure here.)

    Parameters
    ----------
    A : scipy sparse matrix
        The matrix as factored, after any row permutation: the pattern of ``A + A^T`` is what
        counts.
    pz : int
        The grid's layers: the separator tree keeps at least log2(pz) levels
        (:func:`levels_for`).
    times : dict, optional
        As :func:`supernodal_structure`'s.
    ordered : SeparatorTree, optional
        As :func:`supernodal_structure`'s.
    graph : scipy.sparse.csr_matrix, optional
        As :func:`supernodal_structure`'s.
    **options
        As :class:`~commsolve.direct.SparseLU`'s own: the keys of :data:`LU_DEFAULTS`, whose
        values the options left out take.

    Returns
    -------
    SupernodalStructure

    Raises
    ------
    ValueError
        For a matrix with no rows or an unknown option (or as :func:`supernodal_structure`).
    """
    if A.shape[0] == 0:
        raise ValueError("the matrix has no rows (0 x 0): nothing to factor")
    unknown = set(options) - set(LU_DEFAULTS)
    if unknown:
        raise ValueError(f"unknown symbolic option(s) {', '.join(sorted(unknown))} (known: {', '.join(LU_DEFAULTS)})")
    o = {**LU_DEFAULTS, **options}
    return supernodal_structure(A, o["max_supernode"], o["ordering"], levels_for(o["levels"], pz), o["relax"],
                                o["relax_subtree"], times, ordered, graph)


def forest_partition(structure, pz, method="nd", imbalance=0.2):
    """Each supernode's forest (heap index in [0, 2 pz - 1)) for a 3D grid with ``pz`` layers.

    Parameters
    ----------
    structure : SupernodalStructure
        The factor's supernodal structure.
    pz : int
        The grid's layers.
    method : {"nd", "greedy"}
        ``"nd"``: the top log2 pz levels of the structure's separator tree
        (``ordering="tree"``, built with at least that many ``levels``, as :func:`symbolic`
        does; a graph too small to split that deep leaves the layers below a leaf empty);
        ``"greedy"``: SuperLU_DIST's load-balancing split of the supernodal elimination tree
        (weight size x depth, bins within ``imbalance``).
    imbalance : float
        The bins' allowed imbalance (``"greedy"`` only).

    Returns
    -------
    ndarray of int32
        Each supernode's forest.

    Raises
    ------
    ValueError
        For an unknown ``method``.
    """
    return np.asarray(_core.forest_partition(structure, int(pz), method, float(imbalance)))
