"""The distributed factorization, :func:`factor`, in four steps a reader can hold one at a
time:

1. :func:`agreed_request` checks the options and agrees on them over the ranks;
2. :func:`analyze` gives every rank the :class:`Analysis`: with a parallel ordering
   (``"ptscotch"``, ``"ptscotch-metis"``) computed by all ranks from their own rows
   (:mod:`.parallel_analysis`; A is gathered only for the large-diagonal matching), else on
   the root from the gathered matrix (SuperLU_DIST's default);
3. the grid and the solve's options: given, or chosen by a registered tuner when
   ``grid="auto"`` (:func:`register_tuner`; :mod:`commsolve.tune` registers the simulator's,
   from above this package, which never imports it);
4. :func:`factor_on_layout` factors on the SolveLayout (every rank of every grid, or the
   root's serial factors sent out) and builds the :class:`~commsolve.direct.DistributedLU`.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numpy as np

from .. import _core
from .._collective import agree_args, mpi, run_agreed
from .._watchdog import watched
from ..parcsr import ParCSR
from ..partition import Distribution, adjacency_graph
from ..topology import make_topology
from .factor3d import factor_on_grids, local_entries, planned_factor_stats_here
from .parallel_analysis import (LEAVES, one_norm, parallel_ordering, parallel_symbolic, pivoting_gathered,
                                pivoting_in_parallel, rows_of_B)
from .options import ALGORITHMS, check_choice, is_auto, parse_grid, solve_options, solve_threads
from .serial import PIVOTING_DEFAULTS, SparseLU, checked_lu_options, pivoted
from .solver import DistributedLU, Residual
from .symbolic import (FOREST_PARTITIONS, LU_DEFAULTS, ORDERINGS, PARALLEL_ORDERINGS, TREELESS_ORDERINGS,
                       chosen_ordering, levels_for, symbolic)

__all__ = ["factor", "FACTOR_STAGES", "agreed_request", "analyze", "parallel_ordering", "factor_on_layout",
           "Analysis", "FactorRequest", "FactorReport", "register_tuner", "checked_request"]

_tuner = None


def register_tuner(tuner):
    """Install what turns ``grid="auto"`` into a grid and options (:mod:`commsolve.tune` does,
    on import).

    Parameters
    ----------
    tuner : object
        Has ``check(profile, algorithm, trees)`` (the request's own checks, on every rank),
        ``max_pz(nranks)`` (the most layers it tries: the analysis keeps that many
        separator-tree levels) and ``rank(structure, topology, profile, request)``: the
        configurations it tried, fastest first, each a dict with ``grid``, ``algorithm``,
        ``tree``.
    """
    global _tuner
    _tuner = tuner


@dataclass
class FactorRequest:
    """What :func:`factor` is asked for, checked and agreed on every rank.

    Each parameter is kept as the attribute of the same name.

    Parameters
    ----------
    grid : tuple of int or None
        ``(px, py, pz)``; None when the tuner chooses it (``auto``).
    options : SolveOptions or None
        The solve's, when the grid is given (None with ``auto``).
    algorithm : str or None
        The solve algorithm asked for.
    trees : tuple of str
        With ``auto``, the tree shapes the tuner compares; otherwise that of ``options``.
    seed, flat_threshold : int or None
        The tree shapes' seed and flat threshold asked for.
    allreduce : str or None
        The inter-grid packing asked for.
    partition : str
        The forest partition.
    root : int
        The root rank.
    profile : object
        The machine profile (``auto``).
    lu_options : dict
        :class:`SparseLU`'s options.
    max_pz : int
        The most layers the request may use: the grid's pz, or with ``auto`` the tuner's
        ``max_pz``.
    """

    grid: tuple | None
    options: object
    algorithm: str | None
    trees: tuple
    seed: int | None
    flat_threshold: int | None
    allreduce: str
    partition: str
    root: int
    profile: object
    lu_options: dict
    max_pz: int

    @property
    def auto(self):
        """Whether the tuner chooses the grid (``grid`` is None)."""
        return self.grid is None


@dataclass
class Analysis:
    """What the root knows before the numeric factorization, given to every rank (but
    ``serial`` and ``matrix``, on the root only).

    Each parameter is kept as the attribute of the same name.

    Parameters
    ----------
    shape : tuple of int
        The matrix shape.
    structure : SupernodalStructure
        Its supernodal structure: where the analysis ran in parallel for a grid of px x py
        layers, px and py > 1, this rank's share of it (C++ ``direct/structure_share.hpp``;
        no rank holds the whole).
    pivoting : StaticPivoting
        The static pivoting (scales, row permutation).
    row_order, col_order : ndarray of int32
        The orders: factor row k reads b's row ``row_order[k]``, column k gives x's
        ``col_order[k]``.
    nnz_LU : int
        Entries of L and U, diagonal blocks once.
    anorm : float or None
        ``||B||_1`` of the scaled, permuted matrix: the pivot thresholds' scale; None when
        factored whole on the root.
    seconds : dict
        The seconds it took.
    replaced : int
        The tiny pivots replaced (factored whole on the root).
    symmetric : bool or None
        Whether the factored matrix is symmetric (``A = A^T`` exactly, rows and columns ordered
        and scaled alike: selected inversion's symmetric form applies); None where rows and
        columns are ordered and scaled alike but A itself was not tested, which selected
        inversion then does.
    ordering_parts : dict or None
        The gather and the analysis's parts, seconds (the root's, or each rank's).
    ordering : str or None
        The fill-reducing ordering used (``"auto"`` resolved).
    serial : SparseLU, optional
        On the root only: a :class:`SparseLU` when a scipy matrix is factored whole there.
    matrix : scipy.sparse.csr_matrix, optional
        On the root only: A, checked.
    """

    shape: tuple
    structure: object
    pivoting: object
    row_order: np.ndarray
    col_order: np.ndarray
    nnz_LU: int
    anorm: float | None
    seconds: dict
    replaced: int = 0
    symmetric: bool | None = False
    ordering_parts: dict | None = None  # the gather and the analysis's parts, seconds (the root's, or each rank's)
    ordering: str | None = None  # the fill-reducing ordering used ("auto" resolved)
    serial: object = field(default=None, repr=False)
    matrix: object = field(default=None, repr=False)

    def shared(self):
        """The part every rank receives (no root-only objects).

        Returns
        -------
        Analysis
            A new one with the same fields but ``serial`` and ``matrix`` (left None).
        """
        return Analysis(self.shape, self.structure, self.pivoting, self.row_order, self.col_order, self.nnz_LU,
                        self.anorm, self.seconds, self.replaced, self.symmetric, self.ordering_parts, self.ordering)


@dataclass
class FactorReport:
    """How the factorization went.

    Each parameter is kept as the attribute of the same name.

    Parameters
    ----------
    seconds : dict
        By phase (and ``total``).
    replaced : int
        The tiny pivots replaced.
    flops : float or None
        The factorization's floating-point operations (None when factored whole on the root).
    recorded, planned : CommStats or None
        When factored on the grids, this rank's CommStats, recorded and planned.
    ranking : list or None
        With ``grid="auto"``, the tuner's ranking.
    ordering_parts : dict or None
        The ordering's parts (the gather of A on the root, static pivoting, the graph, METIS,
        the permuted graph, the symbolic factorization; with a parallel ordering PT-Scotch's
        and the parallel symbolic factorization's parts instead), seconds.
    """

    seconds: dict
    replaced: int
    flops: float | None = None
    recorded: object = None
    planned: object = None
    ranking: list | None = None
    ordering_parts: dict | None = None  # the ordering's parts on the root (Analysis.ordering_parts)


def checked_request(nranks, grid, tree, algorithm, partition, allreduce, seed, flat_threshold, root, profile,
                    lu_options):
    """The request of a factorization on ``nranks`` ranks, checked (no MPI: what every rank
    checks, and what a launcher can check before it starts them).

    Parameters
    ----------
    nranks : int
        The communicator's size.
    grid, tree, algorithm, partition, allreduce, seed, flat_threshold, root, profile
        As :func:`factor`'s.
    lu_options : dict
        As :func:`factor`'s ``**lu_options``.

    Returns
    -------
    FactorRequest

    Raises
    ------
    ValueError
        For a grid, algorithm, tree or option that does not fit ``nranks`` ranks or is unknown.
    """
    check_choice(partition, FOREST_PARTITIONS, "forest partition")
    lu_options = checked_lu_options(lu_options)
    if not 0 <= root < nranks:
        raise ValueError(f"root {root} outside the communicator of {nranks} ranks")
    if is_auto(grid):
        if _tuner is None:
            raise ValueError("grid='auto' needs a tuner: import commsolve.tune")
        trees = (tree,) if isinstance(tree, str) else tuple(tree or ())
        _tuner.check(profile, algorithm, trees)
        if algorithm is not None:
            check_choice(algorithm, ALGORITHMS, "solve algorithm")
        solve_options(2, None, None, seed, flat_threshold, allreduce)  # the tree and allreduce names
        return FactorRequest(None, None, algorithm, trees, seed, flat_threshold, allreduce, partition, root,
                             profile, lu_options, _tuner.max_pz(nranks))
    dims = parse_grid(grid, nranks)
    ordering = lu_options.get("ordering", LU_DEFAULTS["ordering"])
    if dims[2] > 1 and partition == "nd" and ordering in TREELESS_ORDERINGS:
        with_tree = ", ".join(repr(o) for o in ORDERINGS if o not in TREELESS_ORDERINGS)
        raise ValueError(f"a grid of Pz = {dims[2]} layers with partition 'nd' splits the separator tree, which "
                         f"ordering {ordering!r} does not keep: use partition 'greedy' (--partition greedy) or an "
                         f"ordering with a tree ({with_tree})")
    options = solve_options(dims[2], algorithm, tree, seed, flat_threshold, allreduce)
    return FactorRequest(dims, options, algorithm, (options.tree.name,), seed, flat_threshold, allreduce,
                         partition, root, profile, lu_options, dims[2])


def agreed_request(comm, grid, tree, algorithm, partition, allreduce, seed, flat_threshold, root, profile,
                   lu_options, topology=None, distribution=None):
    """Collective. The request checked on every rank (:func:`checked_request`) and agreed.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        The communicator.
    grid, tree, algorithm, partition, allreduce, seed, flat_threshold, root, profile, lu_options
        As :func:`checked_request`'s.
    topology : Topology, int or None
        As :func:`factor`'s; only compared between the ranks.
    distribution : Distribution, optional
        As :func:`factor`'s; only compared between the ranks.

    Returns
    -------
    FactorRequest

    Raises
    ------
    ValueError
        On every rank, if any finds a problem.
    CollectiveError
        If the ranks asked for different things.
    """
    request = run_agreed(comm, checked_request, comm.size, grid, tree, algorithm, partition, allreduce, seed,
                         flat_threshold, root, profile, lu_options)
    agree_args(comm, "direct.factor", grid=request.grid, algorithm=request.algorithm, tree=request.trees,
               seed=request.seed, flat_threshold=request.flat_threshold, allreduce=request.allreduce,
               partition=request.partition, root=root, profile=profile, topology=topology, distribution=distribution,
               **{f"lu option {k}": v for k, v in sorted(request.lu_options.items())}, options=repr(request.options))
    return request


def analyze(source, comm, request):
    """Collective. The :class:`Analysis` on every rank.

    A ParCSR with a parallel ordering (``"ptscotch"``, ``"ptscotch-metis"``): computed by
    every rank from its own rows (:func:`_analyze_in_parallel`). Another ParCSR: its rows
    gathered on ``request.root`` for the static pivoting, the ordering and the symbolic
    analysis (its numeric factorization happens on the grids); with ``"tree"`` on several
    ranks the root computes the separator tree's top levels (at least log2 of the ranks) and
    each leaf is ordered by METIS on a rank of its own (``_core.order_leaves_on_ranks``), the
    ordering the root alone would compute. A scipy matrix given on the
    root: factored whole there (:class:`SparseLU`). The separator tree keeps at least log2 of
    the most layers the request may use.

    Parameters
    ----------
    source : ParCSR or scipy sparse matrix
        The matrix: a ParCSR, or a scipy matrix given on the root (None elsewhere).
    comm : mpi4py.MPI.Comm
        The communicator.
    request : FactorRequest
        What :func:`agreed_request` returned.

    Returns
    -------
    Analysis
        On every rank (``serial`` and ``matrix`` on the root only).

    Raises
    ------
    CollectiveError
        On every rank, when the scipy matrix is not given on the root, or for a ValueError of
        the analysis (a bad matrix; a zero pivot when factored whole on the root).
    """
    root = request.root
    on_grids = isinstance(source, ParCSR)
    options = dict(request.lu_options, levels=levels_for(request.lu_options.get("levels", LU_DEFAULTS["levels"]),
                                                         request.max_pz))
    symbolic_options = {k: v for k, v in options.items() if k in LU_DEFAULTS}
    asked = symbolic_options.get("ordering", LU_DEFAULTS["ordering"])
    symbolic_options["ordering"] = options["ordering"] = chosen_ordering(asked, comm.size, on_grids)
    if on_grids and symbolic_options["ordering"] in PARALLEL_ORDERINGS:
        leaves = "auto" if asked == "auto" else LEAVES[symbolic_options["ordering"]]
        # each rank keeps its share of the structure where the grid is known (the tuner of
        # grid="auto" reads the whole) and a share is less than the whole (px, py > 1: on a
        # 1 x P layer every rank reads every row)
        share = request.grid[:2] if request.grid is not None and min(request.grid[:2]) > 1 else None
        return _analyze_in_parallel(source, comm, root, options, symbolic_options, leaves, share)
    t0 = time.perf_counter()
    A = source.to_global(root) if on_grids else source
    parts = {"gather": time.perf_counter() - t0} if on_grids else {}

    def given():
        if comm.rank == root and A is None:
            raise ValueError(f"the matrix must be given on the root rank ({root})")

    run_agreed(comm, given)
    if not on_grids:
        def serial():
            if comm.rank != root:
                return None
            lu = SparseLU(A, **options)
            return Analysis(lu.shape, lu.structure, lu.pivoting, lu.row_order.astype(np.int32),
                            lu.col_order.astype(np.int32), lu.nnz_LU, None,
                            {"ordering": lu.ordering_seconds, "allocate": lu.allocate_seconds,
                             "numeric": lu.numeric_seconds}, lu.tiny_pivots_replaced,
                            _symmetric(lu.matrix, lu.row_order, lu.col_order, lu.pivoting), lu.ordering_parts,
                            serial=lu, matrix=lu.matrix)
        mine = run_agreed(comm, serial)
    else:
        # The ordering "tree" on several ranks: its leaves are ordered each on a rank of its own
        # (the tree then keeps at least log2 of the ranks as levels).
        leaves_apart = symbolic_options["ordering"] == "tree" and comm.size > 1
        if leaves_apart:
            symbolic_options["levels"] = levels_for(symbolic_options["levels"], comm.size)
        t1 = time.perf_counter()

        def on_root():
            if comm.rank != root:
                return None
            checked, B, pivoting = pivoted(A, options.get("equil", PIVOTING_DEFAULTS["equil"]),
                                           options.get("row_perm", PIVOTING_DEFAULTS["row_perm"]), parts)
            if not leaves_apart:
                return checked, B, pivoting, None, None
            t2 = time.perf_counter()
            G = adjacency_graph(B)
            t3 = time.perf_counter()
            top = _core.separator_tree(G.indptr, G.indices, symbolic_options["levels"], order_leaves=False)
            parts.update(graph=t3 - t2, nested_dissection=time.perf_counter() - t3)
            return checked, B, pivoting, G, top
        pivoted_here = run_agreed(comm, on_root)
        G = ordered = None
        if leaves_apart:
            t2 = time.perf_counter()
            G, top = pivoted_here[3:] if pivoted_here else (None, None)
            ordered, _ = run_agreed(comm, _core.order_leaves_on_ranks, comm.py2f(), root,
                                    *((G.indptr, G.indices, top) if G is not None else ()))
            parts["leaf_ordering"] = time.perf_counter() - t2

        def finish():
            if comm.rank != root:
                return None
            checked, B, pivoting = pivoted_here[:3]
            structure = symbolic(B, times=parts, ordered=ordered, graph=G, **symbolic_options)
            perm = np.asarray(structure.perm)
            row_order = pivoting.row_order(perm).astype(np.int32)
            seconds = time.perf_counter() - t1  # pivoting, ordering, symbolic
            return Analysis(checked.shape, structure, pivoting, row_order, perm.astype(np.int32),
                            _nnz_LU(structure), float(abs(B).sum(axis=0).max()),
                            {"ordering": seconds}, symmetric=_symmetric(checked, row_order, perm, pivoting),
                            ordering_parts=parts, matrix=checked)
        mine = run_agreed(comm, finish)
    shared = comm.bcast(None if mine is None else mine.shared(), root=root)
    analysis = mine if mine is not None else shared
    analysis.ordering = symbolic_options["ordering"]
    return analysis


def _nnz_LU(structure):
    widths, below = np.diff(structure.sn_start), structure.below  # a share's too
    return int((widths * widths + 2 * widths * below).sum())


def _analyze_in_parallel(source, comm, root, options, symbolic_options, leaves, share=None):
    """Collective. The Analysis of the ParCSR ``source`` computed on every rank from its own
    rows: the static pivoting (A gathered on ``root`` only for the large-diagonal matching),
    PT-Scotch's ordering (its leaves ordered as ``leaves`` says, and the ordering it was
    reported), the symbolic factorization by leaves of the separator tree (with ``share``
    ``(px, py)``, each rank's share of it on layers of that grid) and ||B||_1;
    ``ordering_parts`` holds this rank's seconds of each part."""
    t0 = time.perf_counter()
    parts = {}
    local = source.local_matrix()  # read once, for every step
    local.sum_duplicates()  # as the gathered matrix is checked
    equil = options.get("equil", PIVOTING_DEFAULTS["equil"])
    row_perm = options.get("row_perm", PIVOTING_DEFAULTS["row_perm"])
    pivoting = pivoting_in_parallel(source, equil, row_perm, local)
    if pivoting is None:  # the matching: mc64 asked, or auto found the diagonal unsafe
        pivoting = pivoting_gathered(source, equil, "mc64", root, parts)
    parts["pivoting"] = time.perf_counter() - t0 - parts.get("gather", 0.0)
    rows = rows_of_B(source, pivoting.row_of_col, local)
    ordered, used = parallel_ordering(source, pivoting.row_of_col, parts, leaves, rows)
    options["ordering"] = symbolic_options["ordering"] = used
    structure = parallel_symbolic(source, pivoting.row_of_col, ordered, symbolic_options, root, parts, rows, share)
    del rows
    perm = np.asarray(structure.perm)
    row_order = pivoting.row_order(perm).astype(np.int32)
    anorm = one_norm(source, pivoting, local)
    # A's own symmetry is left to selected inversion, its one reader (None: not known yet)
    alike = np.array_equal(row_order, perm) and np.array_equal(pivoting.row_scale, pivoting.col_scale)
    symmetric = None if alike else False
    return Analysis(source.shape, structure, pivoting, row_order, perm.astype(np.int32), _nnz_LU(structure), anorm,
                    {"ordering": time.perf_counter() - t0}, symmetric=symmetric, ordering_parts=parts,
                    ordering=symbolic_options["ordering"])


def _symmetric(A, row_order, col_order, pivoting):
    """Whether the factored matrix D_r P A Q D_c is symmetric: A = A^T exactly, with the
    same order and scaling of rows and columns."""
    return bool(np.array_equal(row_order, col_order) and np.array_equal(pivoting.row_scale, pivoting.col_scale)
                and (A != A.T).nnz == 0)


def _chosen(analysis, topo, request, comm):
    """Collective: the grid and SolveOptions to factor for, and the tuner's ranking (None
    when they were given). The tuner runs on the root; its time counts as the ordering's."""
    if not request.auto:
        return request.grid, request.options, None
    t0 = time.perf_counter()
    ranking = run_agreed(comm, lambda: _tuner.rank(analysis.structure, topo, request.profile, request)
                         if comm.rank == request.root else None)
    ranking = comm.bcast(ranking, root=request.root)
    analysis.seconds["ordering"] += time.perf_counter() - t0
    best = ranking[0]
    grid = tuple(best["grid"])
    return grid, solve_options(grid[2], best["algorithm"], best["tree"], request.seed, request.flat_threshold,
                               request.allreduce), ranking


def _row_distribution(distribution, source, n, comm):
    """The Distribution of b and x: given, a ParCSR's rows, or balanced contiguous blocks
    (with fewer rows than ranks, the last ranks hold none)."""
    if distribution is None and isinstance(source, ParCSR):
        distribution = source.row_dist
    elif distribution is None:
        P, n = comm.size, int(n)
        distribution = Distribution.from_offsets(
            np.array([r * (n // P) + min(r, n % P) for r in range(P + 1)], dtype=np.int64))
    elif not isinstance(distribution, Distribution):
        raise ValueError(f"distribution must be a commsolve Distribution (e.g. Distribution.from_offsets) or None, "
                         f"got {type(distribution).__name__} {distribution!r}")
    if distribution.global_size != n or distribution.nranks != comm.size:
        raise ValueError(f"the distribution of b and x covers {distribution.global_size} rows on "
                         f"{distribution.nranks} ranks; need {n} rows on {comm.size}")
    return distribution


def _residual_matrix(analysis, source, dist, topo, comm, root):
    """A as a ParCSR distributed like b and x: the given ParCSR when b and x follow its rows,
    else its rows moved to their new owners, or a scipy matrix's rows sent from the root."""
    if dist is getattr(source, "row_dist", None):
        return source
    if isinstance(source, ParCSR):
        return source.redistributed(dist, topo)
    A = analysis.matrix
    pieces = None if comm.rank != root else [A[dist.owned(r)] for r in range(comm.size)]
    return ParCSR.from_local_rows(comm.scatter(pieces, root=root), comm, row_dist=dist, topology=topo)


def factor_on_layout(source, analysis, layout, options, rhs, topo, comm, request, t_start):
    """Collective. The factors on ``layout`` as a ``_core.TriSolve`` with ``options``, and the
    :class:`FactorReport`: a ParCSR ``source`` factored on the grids (its entries moved by a
    plan to the ranks that factor them), a scipy one's serial factors (on the root) sent to
    the ranks that hold their blocks.

    Parameters
    ----------
    source : ParCSR or scipy sparse matrix
        As :func:`analyze`'s.
    analysis : Analysis
        What :func:`analyze` returned.
    layout : SolveLayout
        The layout of the factors.
    options : SolveOptions
        The solves' options.
    rhs : RhsMap
        How b and x are distributed.
    topo : Topology
        Which ranks share a node.
    comm : mpi4py.MPI.Comm
        The communicator.
    request : FactorRequest
        What :func:`agreed_request` returned (its root and the ``zero_pivot`` and
        ``replace_tiny`` of its ``lu_options``).
    t_start : float
        The ``time.perf_counter()`` the ordering's seconds count from (factored on the grids).

    Returns
    -------
    core : _core.TriSolve
        The factors on ``layout``.
    report : FactorReport
        How the factorization went (the distribution's seconds not yet in it).
    t0 : float
        The ``time.perf_counter()`` when the ``_core.TriSolve`` began to be built: the
        distribution's seconds count from it.

    Raises
    ------
    ValueError
        On every rank, for a zero pivot (factored on the grids).
    """
    MPI = mpi()
    root = request.root
    pivots = {k: request.lu_options.get(k, PIVOTING_DEFAULTS[k]) for k in ("zero_pivot", "replace_tiny")}
    if isinstance(source, ParCSR):
        entries = local_entries(source, analysis.pivoting, analysis.row_order, analysis.col_order)
        planned = planned_factor_stats_here(comm, entries, layout, topo, options.tree)
        seconds = {"ordering": comm.allreduce(time.perf_counter() - t_start, op=MPI.MAX)}
        store, grids = factor_on_grids(source, analysis.pivoting, analysis.row_order, analysis.col_order, layout, topo,
                                       analysis.anorm, pivots["zero_pivot"], pivots["replace_tiny"], options.tree,
                                       entries=entries)
        seconds.update(grids.seconds)
        report = FactorReport(seconds, grids.replaced, grids.flops, grids.recorded, planned)
        t0 = time.perf_counter()
        core = _core.TriSolve(comm.py2f(), topo, layout, rhs, store, options)  # takes this rank's blocks over
        del store
    else:
        report = FactorReport(dict(analysis.seconds), analysis.replaced)
        t0 = time.perf_counter()
        lu = analysis.serial  # on the root only
        core = _core.TriSolve(comm.py2f(), topo, layout, rhs, None if lu is None else lu._core, options, root)
    return core, report, t0


FACTOR_STAGES = ("analysis", "grid", "factorization", "solver")  # what factor(progress=...) reports, in order


@watched("direct.factor")
def factor(A, comm=None, grid=None, tree=None, *, algorithm=None, partition="nd", allreduce=None,
           distribution=None, topology=None, seed=None, flat_threshold=None, root=0, profile=None, progress=None,
           threads=None, **lu_options):
    """Collective on ``comm``. Factor ``A`` and spread the factors over a process grid.

    A :class:`~commsolve.ParCSR` (or a Matrix Market file read into one) is analysed by every
    rank from its own rows with a parallel ordering (``"ptscotch"``, ``"ptscotch-metis"``,
    which the default ``ordering="auto"`` picks where MPI allows PT-Scotch's threads: one
    rank, or ``MPI_THREAD_MULTIPLE``, see :func:`~commsolve.direct.symbolic.chosen_ordering`;
    A is gathered on ``root`` only for the large-diagonal matching), or gathered on ``root``
    for static pivoting, the ordering and the symbolic analysis (the orderings ``"tree"``,
    ``"nd"``, ``"natural"``, as SuperLU_DIST does by default; ``"tree"``'s leaves are ordered
    each on a rank of its own); then its entries go from their row owners straight to the
    ranks that factor their blocks, by a plan (counted and checked like every other move):
    every rank of every grid factors (right-looking supernodal LU on the grid's 2D
    block-cyclic layout, the panels broadcast along process rows and columns by ``tree``;
    with pz > 1 the 3D algorithm of ``direct/factor3d.hpp`` between the grids), and each rank
    ends holding its own blocks: the factors never pass through one rank. A scipy matrix on
    rank ``root`` is factored whole there as :class:`SparseLU` does, then distributed.

    The factors are spread over a ``grid = (px, py, pz)`` of ``comm``: the supernodal
    elimination tree is split into 2 pz - 1 forests (``partition``); layer z (ranks
    z px py .. (z + 1) px py - 1) holds the blocks of its forests and their ancestors, block
    (I, J) on its process (I mod px, J mod py), rank z px py + row py + column. Every rank
    must pass the same options (checked). A is kept distributed by rows for the residuals of
    iterative refinement.

    Parameters
    ----------
    A : ParCSR, str, os.PathLike or scipy sparse matrix
        A :class:`~commsolve.ParCSR` on ``comm``, a Matrix Market path (read in parallel into
        a ParCSR), or a scipy matrix on rank ``root`` (other ranks may pass None).
    comm : mpi4py.MPI.Comm, optional
        The communicator (default: a ParCSR's own, else ``MPI.COMM_WORLD``).
    grid : tuple of int, str or None
        The process grid ``(px, py, pz)`` of ``comm``, as :func:`parse_grid` reads it (None:
        the squarest 2D grid), or ``"auto"`` (with a machine ``profile``): after the symbolic
        analysis, the registered tuner (:mod:`commsolve.tune`) simulates every candidate grid
        of ``comm.size`` ranks and every algorithm (or the given one) with each tree shape of
        ``tree`` on ``topology`` and the fastest is used; the ranking is kept in
        ``solver.grid_ranking``.
    tree : str or sequence of str, optional
        The intra-grid broadcast and reduction tree shape (with ``seed`` and
        ``flat_threshold``; C++'s defaults where not given); with ``grid="auto"``, a name or
        a sequence of names.
    algorithm : str, optional
        ``"2d"`` (the default when pz = 1), ``"3d"`` (the default otherwise),
        ``"3d-baseline"`` or ``"3d-baseline-async"``.
    partition : {"nd", "greedy"}
        How the tree is split into forests: ``"nd"``, the top log2 pz levels of the
        nested-dissection separator tree, or ``"greedy"``, SuperLU_DIST's load-balancing split.
    allreduce : str, optional
        Inter-grid messages ``"packed"`` (one per pair of ranks and step, as the SC'23 paper
        describes; the default) or ``"per-supernode"`` (as SuperLU_DIST sends them).
    distribution : Distribution, optional
        How b and x are distributed by rows (default: a ParCSR's row distribution, else
        contiguous blocks).
    topology : Topology, int or None
        A Topology, an int (virtual processes per node) or None (the real nodes of ``comm``).
    seed, flat_threshold : int, optional
        The tree shape's seed and flat threshold.
    root : int
        The root rank: where A is gathered (or the scipy matrix given), and where a
        replicated b is read.
    profile : object, optional
        With ``grid="auto"``: a machine profile that has the simulator's fields, e.g. one
        ``commsolve calibrate`` wrote.
    progress : callable, optional
        ``progress(stage)``, if given, is called as each of :data:`FACTOR_STAGES` ends (for a
        progress bar).
    threads : int, optional
        Per rank, for the solves (more than one: on a 1 x 1 x Pz grid each solve phase runs
        sync-free on the rank's threads, SC'23 Algorithm 4; on other grids the message-driven
        phases run on them; default: ``OMP_NUM_THREADS`` on a 1 x 1 x Pz grid, else 1; see
        :meth:`DistributedLU.set_options`).
    **lu_options
        :class:`SparseLU`'s options (static pivoting, ordering: ``"auto"`` resolved by
        :func:`~commsolve.direct.symbolic.chosen_ordering`, the one used in
        ``solver.analysis.ordering``), checked by
        :func:`~commsolve.direct.serial.checked_lu_options` on every rank: a name it does
        not know is refused, not ignored; None stands for the default.

    Returns
    -------
    DistributedLU
        The solver.

    Raises
    ------
    ValueError
        Errors (bad grid, zero pivot, ...) are raised on every rank; also for a ParCSR on
        another communicator than ``comm``.
    CollectiveError
        On every rank, when the ranks pass different options (a ValueError too).

    Examples
    --------
    One rank:

    >>> import numpy as np
    >>> from mpi4py import MPI
    >>> from commsolve import direct, gallery
    >>> A = gallery.poisson2d9(20)
    >>> solver = direct.factor(A, MPI.COMM_SELF)
    >>> x = solver.solve(np.ones(A.shape[0]))
    >>> bool(np.allclose(A @ x, 1.0)), bool(solver.berr.max() <= 1e-15)
    (True, True)
    """
    done = progress or (lambda stage: None)
    MPI = mpi()
    if comm is None:
        comm = A.comm if isinstance(A, ParCSR) else MPI.COMM_WORLD
    elif isinstance(A, ParCSR) and MPI.Comm.Compare(A.comm, comm) not in (MPI.IDENT, MPI.CONGRUENT):
        raise ValueError(f"A is a ParCSR on a communicator of {A.comm.size} rank(s), factor was given another "
                         f"({comm.size} rank(s)): pass A's own (comm=A.comm, or leave comm out)")
    request = agreed_request(comm, grid, tree, algorithm, partition, allreduce, seed, flat_threshold, root, profile,
                             lu_options, topology, distribution)
    source = ParCSR.from_file(A, comm) if isinstance(A, (str, os.PathLike)) else A
    t_start = time.perf_counter()
    topo = topology if isinstance(topology, _core.Topology) else run_agreed(
        comm, make_topology, comm, ppn=None if topology is None else int(topology))
    analysis = analyze(source, comm, request)
    done("analysis")
    dims, options, ranking = _chosen(analysis, topo, request, comm)
    threads = run_agreed(comm, solve_threads, threads, dims)
    done("grid")
    layout = _core.SolveLayout(analysis.structure, _core.ProcessGrid3D(*dims), request.partition)
    dist = run_agreed(comm, _row_distribution, distribution, source, analysis.shape[0], comm)
    rhs = _core.RhsMap(dist, analysis.row_order, analysis.col_order)
    core, report, t0 = factor_on_layout(source, analysis, layout, options, rhs, topo, comm, request, t_start)
    done("factorization")
    report.ranking = ranking
    report.ordering_parts = analysis.ordering_parts
    residual = Residual(_residual_matrix(analysis, source, dist, topo, comm, root))
    report.seconds["distribute"] = comm.allreduce(time.perf_counter() - t0, op=mpi().MAX)
    report.seconds["total"] = sum(report.seconds.values())
    solver = DistributedLU(comm, core, layout, analysis.shared(), rhs, topo, report, residual,
                           partition=request.partition, root=root)
    solver.set_options(threads=threads)
    done("solver")
    return solver
