"""The 2.5D multiply and LU (Solomonik and Demmel) on MPI, with what they moved.

On a grid (pr, pc, c) the inputs on layer 0 are used by all c layers: the multiply
broadcasts A and B along z, each layer runs SUMMA over 1/c of the inner dimension and the
partial products are summed back onto layer 0; LU eliminates step k on layer k mod c, whose
trailing update only that layer applies, the panels summed along z first. Every move is a
restricted collective on the message engine, counted per rank (recorded from what went
through MPI, compared with the plan), and the same plans are counted without MPI at any
scale (:func:`virtual_stats`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from .. import _core
from .._collective import agree_args, mpi, or_abort
from ..parcsr import resolve_topology
from ..stats import CommStats
from ..topology import blocked_topology
from ..trees import tree_shape
from .matrix import DEFAULT_NB, DistributedDense, parse_grid25

__all__ = ["DenseReport", "DenseLU", "MatmulPlan", "LUPlan", "matmul", "lu", "virtual_stats", "words_leading_term",
           "ROLES"]

ROLES = {kind: tuple(_core.dense_role_names(kind)) for kind in ("matmul", "lu")}


def words_leading_term(kind, m, n, k, grid):
    """The words of panels a rank receives, to leading order.

    ``(m k / pr + k n / pc) / c`` for the multiply (``2 n^2 / sqrt(c p)`` when square on a
    q x q x c grid), ``n^2 (1/pr + 1/pc) / (2c)`` for LU (``n^2 / sqrt(c p)``).

    Parameters
    ----------
    kind : {"matmul", "lu"}
        The algorithm (any other value counts as LU).
    m, n, k : int
        The multiply's A is m x k and B k x n; LU's matrix n x n (m and k unused).
    grid : tuple of int
        The grid (pr, pc, c).

    Returns
    -------
    float
    """
    pr, pc, c = grid
    if kind == "matmul":
        return (m * k / pr + k * n / pc) / c
    return n * n * (1 / pr + 1 / pc) / (2 * c)


@dataclass
class DenseReport:
    """What one run did: the slowest rank's seconds (total and local BLAS), the flops of all
    ranks, and every rank's recorded statistics per role (steps: :data:`ROLES`).

    Attributes
    ----------
    kind : str
        "matmul" or "lu".
    shape : tuple of int
        (m, n, k): A m x k, B k x n; LU: (n, n, n).
    grid : tuple of int
        The grid (pr, pc, c).
    nb : int
        The block size.
    tree : str
        The shape of every broadcast and reduction.
    seconds : float
        The slowest rank's seconds of the run.
    compute_seconds : float
        The slowest rank's seconds in local BLAS.
    flops : float
        The flops of all ranks.
    recorded : list of CommStats
        Every rank's recorded statistics (steps: :data:`ROLES`).
    planned_equal : bool
        Whether every rank recorded what its plan counts (the roles the plan cannot count, a
        pivoted LU's row swaps, left out).
    setup_seconds : float
        The slowest rank's plan, trees and engine (before the run).
    growth : float or None
        LU: ``max |U| / max |A|``.
    warnings : list of str
        What the run warns of (LU: a large growth).
    pivoting : str or None
        LU: "none" or "tournament".
    """

    kind: str
    shape: tuple  # (m, n, k): A m x k, B k x n; LU: (n, n, n)
    grid: tuple
    nb: int
    tree: str
    seconds: float
    compute_seconds: float
    flops: float
    recorded: list = field(repr=False)  # CommStats per rank
    planned_equal: bool = True
    setup_seconds: float = 0.0  # the slowest rank's plan, trees and engine (before the run)
    growth: float | None = None  # LU: max |U| / max |A|
    warnings: list = field(default_factory=list)
    pivoting: str | None = None  # LU: "none" or "tournament"

    @property
    def gflops(self):
        """The flops of all ranks per second of the slowest rank, in billions (NaN without a time)."""
        return self.flops / self.seconds / 1e9 if self.seconds > 0 else float("nan")

    def words_received(self, roles=None):
        """Per rank: the values received in ``roles``.

        Parameters
        ----------
        roles : sequence of str, optional
            Role names of :data:`ROLES` for this kind; all if None.

        Returns
        -------
        ndarray
            One float per rank.
        """
        steps = None if roles is None else [ROLES[self.kind].index(r) for r in roles]
        return np.array([s.words_received(steps) for s in self.recorded], dtype=float)

    def panel_words(self):
        """Per rank: the values of panels received (the roles the formula counts).

        Returns
        -------
        ndarray
            One float per rank.
        """
        return self.words_received([r for r in ROLES[self.kind] if r.startswith("panel")])

    def words_formula(self):
        """The words of panels a rank receives to leading order, :func:`words_leading_term` of
        this run's kind, shape and grid (compare with :meth:`panel_words`).

        Returns
        -------
        float
        """
        m, n, k = self.shape
        return words_leading_term(self.kind, m, n, k, self.grid)

    def to_dict(self):
        """The report as a dict of plain values: the fields (``grid`` as "PRxPCxC", without
        ``recorded``), ``gflops``, and from the recorded statistics the values received per rank
        (max, mean, min), the panels' (max, mean, and the formula's), each role's most and the
        most messages a rank received.

        Returns
        -------
        dict
        """
        w, pw = self.words_received(), self.panel_words()
        return {
            "kind": self.kind, "shape": list(self.shape), "grid": "x".join(map(str, self.grid)), "nb": self.nb,
            "tree": self.tree, "seconds": self.seconds, "setup_seconds": self.setup_seconds,
            "compute_seconds": self.compute_seconds, "flops": self.flops, "gflops": self.gflops,
            "planned_equal": self.planned_equal, "growth": self.growth, "warnings": list(self.warnings),
            "pivoting": self.pivoting,
            "words_received": {"max": float(w.max()), "mean": float(w.mean()), "min": float(w.min())},
            "panel_words_received": {"max": float(pw.max()), "mean": float(pw.mean()),
                                     "formula": self.words_formula()},
            "words_received_per_role_max": {r: float(self.words_received([r]).max()) for r in ROLES[self.kind]},
            "messages_received_max": int(max(t["msgs_recv_intra"] + t["msgs_recv_inter"]
                                             for t in (s.total() for s in self.recorded))),
        }


UNPLANNED = ("swap",)  # roles the plan cannot count: a pivoted LU's row swaps depend on the pivots


def _report(core, comm, kind, shape, grid, nb, tree, times, setup, pivoting=None):
    every = comm.allgather((times["total"], times["compute"], core.flops, core.recorded_stats_array(),
                            core.planned_stats_array(), setup))
    skip = [ROLES[kind].index(r) for r in UNPLANNED if r in ROLES[kind]]
    same = all(np.array_equal(np.delete(e[3], skip, 0), np.delete(e[4], skip, 0)) for e in every)
    return DenseReport(kind, tuple(shape), tuple(grid), nb, tree, max(e[0] for e in every), max(e[1] for e in every),
                       float(sum(e[2] for e in every)), [CommStats(e[3]) for e in every], same,
                       max(e[5] for e in every), pivoting=pivoting)


def _distributed(A, comm, grid, nb, others=()):
    """The DistributedDense operands: ``A`` as it is (its comm, grid and nb then taken) or made
    from a numpy array every rank passes (with ``comm``, ``grid``, ``nb``), and ``others`` laid
    out alike."""
    if isinstance(A, DistributedDense):
        comm, grid, nb = A.comm, A.grid, A.nb
    if comm is None:
        raise ValueError("A is a numpy array: give the communicator (comm=) to distribute it")
    grid = parse_grid25(grid, comm.size)
    nb = DEFAULT_NB if nb is None else int(nb)
    return [M if isinstance(M, DistributedDense) else DistributedDense.from_global(M, comm, grid, nb)
            for M in (A, *others)]


PANEL = 512  # widest SUMMA panel (columns of A) by default
PIECE = 1 << 16  # most values one message carries: larger moves go in pieces, pipelined down the trees


class MatmulPlan:
    """Collective. The 2.5D multiply of an m x k matrix by a k x n one on ``grid`` (pr, pc, c)
    over ``comm`` in blocks of ``nb``, planned once (every rank's trees, the message engine on
    a duplicate of ``comm``) and run as often as wanted (:meth:`run`).

    Parameters
    ----------
    m, n, k : int
        A is m x k, B k x n.
    comm : mpi4py.MPI.Comm
        The communicator; every rank passes the same arguments.
    grid : str, tuple of int or None
        (pr, pc, c), as :func:`~commsolve.dense.parse_grid25` takes it (default: the squarest
        2D grid of the communicator).
    nb : int, optional
        The block size (default 128).
    tree : str
        The shape of every broadcast and reduction (:data:`commsolve.trees.SHAPES`).
    topology : Topology, int or None
        A Topology, a virtual ranks-per-node count or None for the real nodes.
    panel : int
        The widest SUMMA panel (columns of A, whole blocks of the same owners: one broadcast
        and one GEMM each).
    piece : int
        The most values one message carries (larger moves go in pieces, each forwarded down
        its tree as it arrives).

    Raises
    ------
    ValueError
        When the grid does not fit ``comm`` or the tree shape is unknown.
    CollectiveError
        On every rank, when the ranks pass different arguments.
    """

    def __init__(self, m, n, k, comm, grid=None, nb=None, tree="binary", topology=None, panel=PANEL, piece=PIECE):
        self.shape = (int(m), int(n), int(k))
        self.comm = comm
        self.grid = tuple(parse_grid25(grid, comm.size))
        self.nb = DEFAULT_NB if nb is None else int(nb)
        self.tree = str(tree)
        agree_args(comm, "dense.matmul", shape=self.shape, grid=self.grid, nb=self.nb, tree=tree, panel=panel,
                   piece=piece)
        topo = resolve_topology(topology, comm)
        t0 = time.perf_counter()
        m, n, k = self.shape
        self._core = _core.Matmul25D(comm.py2f(), topo, m, n, k, self.nb, self.grid, tree_shape(tree), int(panel),
                                     int(piece))
        self.setup_seconds = time.perf_counter() - t0

    def run(self, A, B):
        """Collective. C = A B for DistributedDense A and B laid out as planned.

        Parameters
        ----------
        A, B : DistributedDense
            m x k and k x n, on the plan's grid and communicator with its block size.

        Returns
        -------
        C : DistributedDense
            The m x n product, laid out alike.
        report : DenseReport
            What the run did.

        Raises
        ------
        ValueError
            When A or B is not a DistributedDense, lies elsewhere or has another shape.
        """
        for M, name in ((A, "A"), (B, "B")):
            if not isinstance(M, DistributedDense):
                raise ValueError(f"MatmulPlan.run: {name} must be a DistributedDense (DistributedDense.from_global)")
            if M.grid != self.grid or M.nb != self.nb or M.comm is not self.comm:
                raise ValueError(f"MatmulPlan.run: {name} lies on grid {M.grid} with nb={M.nb}, the plan's "
                                 f"{self.grid} with nb={self.nb} (or on another communicator)")
        m, n, k = self.shape
        if A.shape != (m, k) or B.shape != (k, n):
            raise ValueError(f"MatmulPlan.run: A is {A.shape[0]} x {A.shape[1]} and B {B.shape[0]} x {B.shape[1]}, "
                             f"the plan's {m} x {k} and {k} x {n}")
        rows, _ = A.global_indices()
        _, cols = B.global_indices()
        c = np.zeros(len(rows) * len(cols))
        times = or_abort(self.comm, "the 2.5D multiply", self._core.run, A.flat(), B.flat(), c)
        C = DistributedDense(c.reshape(len(rows), len(cols), order="F"), (m, n), self.nb, self.grid, self.comm)
        return C, _report(self._core, self.comm, "matmul", (m, n, k), self.grid, self.nb, self.tree, times,
                          self.setup_seconds)


def matmul(A, B, comm=None, grid=None, nb=None, tree="binary", topology=None, report=False, panel=PANEL, piece=PIECE):
    """Collective. C = A B by the 2.5D algorithm on ``grid`` (pr, pc, c) (or "2x2x2"; default
    the squarest 2D grid of the communicator), planned and run once (:class:`MatmulPlan` to
    run a plan many times; its arguments are these).

    ``A`` and ``B`` are DistributedDense on one grid (C is too; ``comm``, ``grid`` and ``nb``
    are then theirs), or numpy arrays that every rank passes alike (C then comes back whole on
    every rank).

    Parameters
    ----------
    A, B : DistributedDense or array_like
        The m x k and k x n factors.
    comm : mpi4py.MPI.Comm, optional
        The communicator, needed when ``A`` is a numpy array.
    grid : str, tuple of int or None
        (pr, pc, c) or "2x2x2" (default: the squarest 2D grid of the communicator); ignored
        for DistributedDense operands.
    nb : int, optional
        The block size (default 128); ignored for DistributedDense operands.
    tree : str
        The shape of every broadcast and reduction, as :class:`MatmulPlan`'s.
    topology : Topology, int or None
        As :class:`MatmulPlan`'s.
    report : bool
        Also return the :class:`DenseReport`.
    panel, piece : int
        As :class:`MatmulPlan`'s.

    Returns
    -------
    C : DistributedDense or ndarray
        The m x n product: distributed like ``A``, or whole on every rank for numpy operands.
    report : DenseReport
        With ``report`` only: then ``(C, report)`` comes back.

    Raises
    ------
    ValueError
        When ``A`` is a numpy array without ``comm``, the operands lie on different grids or
        block sizes, or their inner sizes differ.

    Examples
    --------
    One rank (every rank passes the same arrays on more):

    >>> import numpy as np
    >>> from mpi4py import MPI
    >>> from commsolve import dense
    >>> dense.matmul(np.arange(6.0).reshape(2, 3), np.ones((3, 2)), comm=MPI.COMM_SELF, nb=2)
    array([[ 3.,  3.],
           [12., 12.]])
    """
    numpy_in = not isinstance(A, DistributedDense)
    A, B = _distributed(A, comm, grid, nb, (B,))
    A.agree_layout(B, "matmul")
    if A.shape[1] != B.shape[0]:
        raise ValueError(f"matmul: A is {A.shape[0]} x {A.shape[1]}, B {B.shape[0]} x {B.shape[1]}: inner sizes differ")
    plan = MatmulPlan(A.shape[0], B.shape[1], A.shape[1], A.comm, A.grid, A.nb, tree, topology, panel, piece)
    C, rep = plan.run(A, B)
    out = C.to_global(root=None) if numpy_in else C
    return (out, rep) if report else out


class DenseLU:
    """The factors of a 2.5D LU: ``factors`` holds L (unit lower, below the diagonal) and U
    (on and above it) on layer 0 as LAPACK's getrf stores them; ``ipiv`` its row interchanges
    with pivoting (0-based: row i was swapped with row ipiv[i], for i = 0, 1, ...; None
    without), so that P A = L U with P from :meth:`perm`; ``report`` what the run did.

    Parameters
    ----------
    factors : DistributedDense
        L and U in one n x n matrix.
    report : DenseReport
        What the run did.
    ipiv : ndarray of int, optional
        The row interchanges (None without pivoting).
    """

    def __init__(self, factors, report, ipiv=None):
        self.factors = factors
        self.report = report
        self.ipiv = ipiv

    def perm(self):
        """Local. The rows of P A: (P A)[i] = A[perm[i]] (the identity without pivoting).

        Returns
        -------
        ndarray of int
            ``perm``, a permutation of the n rows.
        """
        p = np.arange(self.factors.shape[0])
        for i, j in enumerate([] if self.ipiv is None else self.ipiv):
            p[i], p[j] = p[j], p[i]
        return p

    def _parts(self):
        rows, cols = self.factors.global_indices()
        F = self.factors.local
        below = rows[:, None] > cols[None, :]
        L = np.where(below, F, 0.0) + (rows[:, None] == cols[None, :])
        U = np.where(below, 0.0, F)
        return L, U

    def L(self):
        """Local. L as a DistributedDense on the factors' grid.

        Returns
        -------
        DistributedDense
            Unit lower triangular.
        """
        f = self.factors
        return DistributedDense(self._parts()[0], f.shape, f.nb, f.grid, f.comm)

    def U(self):
        """Local. U as a DistributedDense on the factors' grid.

        Returns
        -------
        DistributedDense
            Upper triangular.
        """
        f = self.factors
        return DistributedDense(self._parts()[1], f.shape, f.nb, f.grid, f.comm)

    def growth(self, A):
        """Collective. ``max |U| / max |A|`` (the growth factor's usual estimate).

        Parameters
        ----------
        A : DistributedDense
            The matrix factored.

        Returns
        -------
        float
            NaN when A is zero.
        """
        MPI = mpi()
        comm = self.factors.comm
        a = comm.allreduce(float(np.abs(A.local).max(initial=0.0)), op=MPI.MAX)
        u = comm.allreduce(float(np.abs(self._parts()[1]).max(initial=0.0)), op=MPI.MAX)
        return u / a if a > 0 else float("nan")

    def residual(self, A, tree="binary"):
        """Collective. ``||P A - L U||_F / ||A||_F``, L U formed by the 2.5D multiply on the same
        grid.

        Parameters
        ----------
        A : DistributedDense
            The DistributedDense factored (or the same matrix on the same grid).
        tree : str
            The multiply's tree shape.

        Returns
        -------
        float
            NaN when A is zero.

        Raises
        ------
        ValueError
            When ``A`` is not a DistributedDense on the factors' grid, block size and
            communicator.
        """
        if not isinstance(A, DistributedDense):
            raise ValueError("residual: A must be the DistributedDense that was factored (DistributedDense.from_global)")
        self.factors.agree_layout(A, "residual")
        if self.ipiv is not None:
            A = A.permute_rows(self.perm())
        MPI = mpi()
        LU = matmul(self.L(), self.U(), tree=tree)
        comm = self.factors.comm
        num = comm.allreduce(float(np.sum((A.local - LU.local) ** 2)), op=MPI.SUM)
        den = comm.allreduce(float(np.sum(A.local ** 2)), op=MPI.SUM)
        return math.sqrt(num / den) if den > 0 else float("nan")


PIVOTING = ("none", "tournament")
GROWTH_WARNING = 1e3  # an LU report warns above this growth (max |U| / max |A|)


def check_pivoting(pivoting):
    if pivoting not in PIVOTING:
        raise ValueError(f"pivoting must be one of {', '.join(PIVOTING)}, got {pivoting!r}")
    return pivoting


class LUPlan:
    """Collective. The 2.5D LU of an n x n matrix on ``grid`` over ``comm`` in blocks of
    ``nb``, planned once and run as often as wanted (:meth:`factor`).

    Parameters
    ----------
    n : int
        The matrix is n x n.
    comm : mpi4py.MPI.Comm
        The communicator; every rank passes the same arguments.
    grid : str, tuple of int or None
        (pr, pc, c), as :func:`~commsolve.dense.parse_grid25` takes it (default: the squarest
        2D grid of the communicator).
    nb : int, optional
        The block size (default 128).
    tree : str
        As :class:`MatmulPlan`'s.
    topology : Topology, int or None
        As :class:`MatmulPlan`'s.
    piece : int
        As :class:`MatmulPlan`'s.
    pivoting : {"none", "tournament"}
        "tournament": CALU's tournament pivoting, each panel's pivot rows chosen by a
        reduction of candidate rows over its process column.

    Raises
    ------
    ValueError
        When ``pivoting`` or the tree shape is unknown or the grid does not fit ``comm``.
    CollectiveError
        On every rank, when the ranks pass different arguments.
    """

    def __init__(self, n, comm, grid=None, nb=None, tree="binary", topology=None, piece=PIECE, pivoting="none"):
        self.n = int(n)
        self.comm = comm
        self.grid = tuple(parse_grid25(grid, comm.size))
        self.nb = DEFAULT_NB if nb is None else int(nb)
        self.tree = str(tree)
        self.pivoting = check_pivoting(pivoting)
        agree_args(comm, "dense.lu", n=self.n, grid=self.grid, nb=self.nb, tree=tree, piece=piece, pivoting=pivoting)
        topo = resolve_topology(topology, comm)
        t0 = time.perf_counter()
        self._core = _core.LU25D(comm.py2f(), topo, self.n, self.nb, self.grid, tree_shape(tree), int(piece),
                                 self.pivoting == "tournament")
        self.setup_seconds = time.perf_counter() - t0

    def factor(self, A):
        """Collective. The factors of the DistributedDense ``A`` laid out as planned (A is not
        changed).

        A zero or non-finite pivot stops the job with the column that met it (``MPI_Abort``:
        the other ranks would wait for its messages; with pivoting only a singular matrix has
        one); the growth ``max |U| / max |A|`` is in ``report.growth``, with a warning in
        ``report.warnings`` above :data:`GROWTH_WARNING`.

        Parameters
        ----------
        A : DistributedDense
            n x n, on the plan's grid and communicator with its block size.

        Returns
        -------
        DenseLU

        Raises
        ------
        ValueError
            When ``A`` is not laid out as planned.
        """
        if not isinstance(A, DistributedDense) or A.grid != self.grid or A.nb != self.nb or A.comm is not self.comm \
                or A.shape != (self.n, self.n):
            raise ValueError(f"LUPlan.factor: A must be a {self.n} x {self.n} DistributedDense on grid {self.grid} "
                             f"with nb={self.nb} and the plan's communicator")
        f = np.array(A.flat())
        times = or_abort(self.comm, "the 2.5D LU", self._core.run, f)
        F = DistributedDense(f.reshape(A.local.shape, order="F"), A.shape, self.nb, self.grid, self.comm)
        n = self.n
        ipiv = np.array(self._core.ipiv) if self.pivoting == "tournament" else None
        out = DenseLU(F, _report(self._core, self.comm, "lu", (n, n, n), self.grid, self.nb, self.tree, times,
                                 self.setup_seconds, self.pivoting), ipiv)
        g = out.growth(A)
        out.report.growth = g
        if not g <= GROWTH_WARNING:  # NaN warns too
            how = "without pivoting" if ipiv is None else "even with tournament pivoting"
            out.report.warnings.append(f"growth max|U| / max|A| = {g:.3g} (above {GROWTH_WARNING:g}): {how} "
                                       "the factors may be inaccurate; check DenseLU.residual(A)")
        return out


def lu(A, comm=None, grid=None, nb=None, pivoting="none", tree="binary", topology=None, piece=PIECE):
    """Collective. The LU factorization of the square ``A`` by the 2.5D algorithm on ``grid``,
    planned and run once (:class:`LUPlan` to run a plan many times).

    Parameters
    ----------
    A : DistributedDense or array_like
        A DistributedDense, whose ``comm``, ``grid`` and ``nb`` are then taken, or a numpy
        array every rank passes alike: its factors stay distributed, ``factors.to_global()``
        gathers them.
    comm : mpi4py.MPI.Comm, optional
        The communicator, needed when ``A`` is a numpy array.
    grid : str, tuple of int or None
        (pr, pc, c) or "2x2x2" (default: the squarest 2D grid of the communicator); ignored
        for a DistributedDense.
    nb : int, optional
        The block size (default 128); ignored for a DistributedDense.
    pivoting : {"none", "tournament"}
        "none" for matrices that need none (diagonally dominant, SPD), "tournament" for any
        nonsingular one (P A = L U).
    tree, topology, piece
        As :class:`MatmulPlan`'s.

    Returns
    -------
    DenseLU
        See :meth:`LUPlan.factor` for pivots and growth.

    Raises
    ------
    ValueError
        When ``pivoting`` is unknown, ``A`` is a numpy array without ``comm`` or ``A`` is not
        square.

    Examples
    --------
    >>> import numpy as np
    >>> from mpi4py import MPI
    >>> from commsolve import dense
    >>> F = dense.lu(np.array([[4.0, 1.0], [1.0, 3.0]]), comm=MPI.COMM_SELF)
    >>> F.factors.to_global()
    array([[4.  , 1.  ],
           [0.25, 2.75]])
    """
    check_pivoting(pivoting)
    (A,) = _distributed(A, comm, grid, nb)
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"lu: A is {A.shape[0]} x {A.shape[1]}, not square")
    return LUPlan(A.shape[0], A.comm, A.grid, A.nb, tree, topology, piece, pivoting).factor(A)


def virtual_stats(kind, m, n, k, grid, nb=DEFAULT_NB, tree="binary", ppn=1, topology=None, panel=PANEL, piece=PIECE,
                  pivoting="none"):
    """Every rank's planned statistics of the 2.5D multiply or LU on ``grid`` (pr, pc, c),
    without MPI.

    Parameters
    ----------
    kind : {"matmul", "lu"}
        The multiply ("matmul", A m x k, B k x n) or LU ("lu", n x n).
    m, n, k : int
        The multiply's shapes; LU's n (m must equal n).
    grid : str or tuple of int
        (pr, pc, c) or "PRxPCxC".
    nb : int
        The block size.
    tree : str
        The shape of every broadcast and reduction.
    ppn : int
        Consecutive ranks per node (the last node partly filled if need be), when no
        ``topology`` is given.
    topology : Topology, optional
        The ranks' nodes, instead of ``ppn``.
    panel, piece : int
        As :class:`MatmulPlan`'s.
    pivoting : {"none", "tournament"}
        LU's pivoting: the row swaps, which follow the pivots, are not in the statistics.

    Returns
    -------
    list of CommStats
        One per rank (steps: :data:`ROLES`).

    Raises
    ------
    ValueError
        When ``kind``, ``pivoting`` or the tree shape is unknown, or the grid is malformed.
    """
    pr, pc, c = parse_grid25(grid)
    topo = topology if topology is not None else blocked_topology(pr * pc * c, ppn)
    arr = _core.dense_stats_virtual(kind, m, n, k, int(nb), (pr, pc, c), tree_shape(tree), topo, int(panel),
                                    int(piece), check_pivoting(pivoting) == "tournament")
    return [CommStats(a) for a in arr]
