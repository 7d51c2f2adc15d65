"""Sparsified coarse operators (thesis Chapter 4): fewer entries on the coarse levels, so
fewer and smaller messages in every V-cycle.

Three methods (``sparsify=``), each with a drop tolerance per coarse level (``gamma``):

- ``"non-galerkin"`` (Falgout and Schroder; thesis Section 4.2): each coarse operator is
  sparsified as soon as it is formed, and the sparsified one builds the next level; dropped
  entries are lumped to strong neighbours (Algorithm 4.1), which keeps symmetry and row sums;
- ``"sparse"`` (Sparse Galerkin, Section 4.3): the Galerkin hierarchy is kept whole and each
  coarse operator gets a sparsified copy used only in smoothing and residuals; its minimal
  pattern comes from the Galerkin operator of the level above;
- ``"hybrid"`` (Hybrid Galerkin): as sparse, the minimal pattern from the sparsified operator
  of the level above.

An entry a_ij of a coarse operator is kept when it lies in the minimal pattern
M = P̂^T A P + P^T A P̂ (P̂ the injection at the coarse points: what keeps the coarse stencil
as wide as the fine one), or ``|a_ij| >= gamma max_{k != i} |a_ik|``, or its transpose is kept
(the kept set is symmetric); gamma <= 1 always keeps each row's largest entry, so no row
loses every off-diagonal entry (Algorithm 4.1b's zero-row-sum case cannot arise). The
others are lumped (``lumping=``):

- ``"diagonal"`` (Algorithm 4.1b, the default of sparse and hybrid): a_ij added to a_ii. Row
  sums are kept; definiteness only where the operator is diagonally dominant (Theorem 4.1).
  Classical AMG's coarse operators often are not (those of the 27-point Laplacian: hybrid
  Galerkin at gamma = 1 gives an indefinite level from 28^3 on), and CG then breaks down;
- ``"spd"``: ``|a_ij|`` added to a_ii (and ``|a_ji|`` to a_jj): A_hat - A is a sum of
  ``|a| (e_i -+ e_j)(e_i -+ e_j)^T``, positive semidefinite, so A_hat is SPD whenever A is;
  row sums grow (by ``2 |a_ij|`` per negative entry dropped);
- ``"strong"`` (Algorithm 4.1, the default of non-Galerkin; C++: neighbours of neighbours, the
  dropped entry's row fetched from its owner): a_ij spread over the strong neighbours k of j
  among the off-diagonal entries row i keeps, in proportion to ``|a_jk|``, symmetrically (+ at
  (i,k) and (k,i), - at (k,k)); an entry with no such neighbour stays (as the thesis says, and
  hypre does), with its transpose.

gamma = 0 keeps everything: the plain hierarchy, exactly.

Every step is distributed (the keep mask's transpose and the lumped entries' travel along
halo plans); the decisions depend on values and global indices only, never on the
partition (which enters only through the rounding of the Galerkin products' values, as it
does in the hierarchy itself).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .. import _core
from ..stats import summarize

__all__ = ["METHODS", "LUMPINGS", "GAMMA_MIN", "Sparsification", "sparsification", "parse_gamma", "parse_adaptive",
           "Adaptive", "minimal_pattern", "sparsify", "relaxed"]

METHODS = ("non-galerkin", "sparse", "hybrid")
LUMPINGS = ("diagonal", "strong", "spd")
DEFAULT_LUMPING = {"non-galerkin": "strong", "sparse": "diagonal", "hybrid": "diagonal"}
GAMMA_MIN = 0.01       # the adaptive solve's smallest tolerance: divided below it, it becomes 0 (thesis 4.6)
ADAPTIVE_RHO = 0.5     # the adaptive solve's default: a convergence factor over k iterations above this adds back


@dataclass(frozen=True)
class Sparsification:
    """What to sparsify and how (plain data, validated by :func:`sparsification`).
    ``gamma[k]`` is the drop tolerance of coarse level k + 1 (the finest level is the
    problem's own matrix, never sparsified); the last value holds for every deeper level."""

    method: str
    gamma: tuple
    lumping: str

    def level_gamma(self, level):
        """Local. The drop tolerance of a level.

        Parameters
        ----------
        level : int
            The level (0: the finest).

        Returns
        -------
        float
            0 for the finest level; else ``gamma[level - 1]``, the last value for every
            deeper level.
        """
        if level == 0:
            return 0.0
        return float(self.gamma[min(level - 1, len(self.gamma) - 1)])

    @property
    def keeps_galerkin(self):
        """Whether the Galerkin hierarchy stays whole (sparse, hybrid): sparsified copies are
        used in smoothing and residuals only, and entries can be put back."""
        return self.method != "non-galerkin"


def parse_gamma(gamma):
    """Local. Drop tolerances read and checked.

    Parameters
    ----------
    gamma : float, sequence of float or str
        A number, a sequence or the CLI's ``"0,0.01,0.1,1"``.

    Returns
    -------
    tuple of float
        The drop tolerances.

    Raises
    ------
    ValueError
        Unless each is a finite number in [0, 1] (and there is at least one).
    """
    if isinstance(gamma, str):
        parts = [p.strip() for p in gamma.split(",")]
        try:
            values = [float(p) for p in parts]
        except ValueError:
            raise ValueError(f"gamma must be comma-separated numbers, e.g. 0,0.01,0.1,1; got {gamma!r}") from None
    else:
        values = [float(v) for v in np.atleast_1d(np.asarray(gamma, dtype=float))]
    if not values:
        raise ValueError("gamma needs at least one drop tolerance")
    for v in values:
        if not 0 <= v <= 1:  # NaN fails too
            raise ValueError(f"each drop tolerance gamma must lie in [0, 1], got {v}")
    return tuple(values)


def sparsification(method, gamma=None, lumping=None):
    """Local. The validated :class:`Sparsification`.

    One place for the rules: a known method and lumping, gamma given with a method only.

    Parameters
    ----------
    method : {"non-galerkin", "sparse", "hybrid"} or None
        The sparsification (None: plain Galerkin).
    gamma : float, sequence of float or str, optional
        The drop tolerances (:func:`parse_gamma`), required with a method.
    lumping : {"diagonal", "strong", "spd"}, optional
        Where dropped entries go (default: strong for non-Galerkin, diagonal for sparse and
        hybrid).

    Returns
    -------
    Sparsification or None
        None for plain Galerkin (``method`` None).

    Raises
    ------
    ValueError
        For an unknown method or lumping, ``gamma`` or ``lumping`` without a method, a
        method without ``gamma``, or a bad drop tolerance.
    """
    if method is None:
        if gamma is not None or lumping is not None:
            raise ValueError("gamma and lumping are options of a sparsification: pass sparsify='non-galerkin', "
                             "'sparse' or 'hybrid' too")
        return None
    if method not in METHODS:
        raise ValueError(f"unknown sparsification '{method}' (known: {', '.join(METHODS)})")
    if gamma is None:
        raise ValueError(f"sparsify='{method}' needs its drop tolerances, e.g. gamma=[0, 0.01, 0.1, 1] (coarse "
                         "levels 1, 2, 3 and deeper)")
    lumping = DEFAULT_LUMPING[method] if lumping is None else lumping
    if lumping not in LUMPINGS:
        raise ValueError(f"unknown lumping '{lumping}' (known: {', '.join(LUMPINGS)})")
    return Sparsification(method, parse_gamma(gamma), lumping)


@dataclass(frozen=True)
class Adaptive:
    """The adaptive solve (thesis Algorithm 4.4): every ``k`` iterations whose mean
    convergence factor is above ``rho``, the finest ``s`` levels still sparsified get their
    drop tolerance divided by 10 (0 below :data:`GAMMA_MIN`) and CG restarts."""

    k: int
    s: int
    rho: float = ADAPTIVE_RHO


def parse_adaptive(adaptive):
    """Local. The adaptive solve's setting read and checked.

    Parameters
    ----------
    adaptive : tuple, dict, str, Adaptive or None
        ``(k, s)``, ``(k, s, rho)``, a dict, or the CLI's ``"k=3,s=2[,rho=0.5]"``.

    Returns
    -------
    Adaptive or None
        An :class:`Adaptive` (``adaptive`` itself if it is one); None for None.

    Raises
    ------
    ValueError
        Naming what is wrong: another form, k or s not a whole number >= 1, or rho outside
        [0, 1).
    """
    if adaptive is None or isinstance(adaptive, Adaptive):
        return adaptive
    if isinstance(adaptive, str):
        fields = {}
        for part in adaptive.split(","):
            key, eq, value = part.partition("=")
            if not eq or key.strip() not in ("k", "s", "rho"):
                raise ValueError(f"--adaptive takes k=ITERATIONS,s=LEVELS[,rho=FACTOR], got {adaptive!r}")
            fields[key.strip()] = value.strip()
        adaptive = fields
    if isinstance(adaptive, dict):
        unknown = set(adaptive) - {"k", "s", "rho"}
        if unknown or not {"k", "s"} <= set(adaptive):
            raise ValueError(f"adaptive needs k and s (and optionally rho), got {sorted(adaptive)}")
        args = (adaptive["k"], adaptive["s"], adaptive.get("rho", ADAPTIVE_RHO))
    else:
        args = tuple(adaptive)
        if len(args) not in (2, 3):
            raise ValueError(f"adaptive takes (k, s) or (k, s, rho), got {adaptive!r}")
    try:
        k, s = int(args[0]), int(args[1])
        rho = float(args[2]) if len(args) > 2 else ADAPTIVE_RHO
        whole = float(args[0]) == k and float(args[1]) == s
    except (TypeError, ValueError):
        raise ValueError(f"adaptive's k and s must be whole numbers and rho a number, got {args}") from None
    if not whole or k < 1 or s < 1 or not 0 <= rho < 1:
        raise ValueError(f"adaptive needs k >= 1 iterations, s >= 1 levels and rho in [0, 1), got k={args[0]}, "
                         f"s={args[1]}, rho={rho}")
    return Adaptive(k, s, rho)


def relaxed(gamma):
    """Local. The adaptive solve's next drop tolerance.

    Parameters
    ----------
    gamma : float
        The drop tolerance now.

    Returns
    -------
    float
        gamma / 10, or 0 below :data:`GAMMA_MIN`.
    """
    g = gamma / 10.0
    return g if g >= GAMMA_MIN else 0.0


def minimal_pattern(A, P, coarse, strategy="standard"):
    """Collective. Half of the minimal pattern: the rows of ``A P`` at the coarse points,
    the pattern of ``P̂^T A P`` (the other half is its transpose, which the keep mask's
    symmetrization adds). Entries that cancel are kept: a pattern, not values.

    Parameters
    ----------
    A : ParCSR
        The fine level's operator.
    P : ParCSR
        The interpolation from the coarse level.
    coarse : ndarray of bool
        A mask over A's rows, in the coarse level's local order: the coarse points.
    strategy : str
        The exchange strategy of the product ``A P``.

    Returns
    -------
    scipy.sparse.csr_matrix
        This rank's coarse rows over global coarse columns, ones.
    """
    indptr, indices, data, _, _ = _core.spgemm(A._core, P._core, A.comm.py2f(), strategy, None, True)
    AP = sp.csr_matrix((np.ones(indices.size), indices, indptr), shape=(A.local_rows, P.shape[1]))
    return AP[np.flatnonzero(coarse)]


def _keys(rows, cols, ncols):
    return rows.astype(np.int64) * np.int64(ncols) + cols.astype(np.int64)


def _in_pattern(rows, cols, M, ncols):
    """Whether each (local row, global column) is an entry of the scipy CSR M."""
    Mc = M.tocoo()
    keys = np.unique(_keys(Mc.row, Mc.col, ncols))
    if keys.size == 0:
        return np.zeros(rows.size, dtype=bool)
    q = _keys(rows, cols, ncols)
    at = np.searchsorted(keys, q)
    return (at < keys.size) & (keys[np.minimum(at, keys.size - 1)] == q)


def _keep_mask(A, rows, cols, vals, minimal, gamma):
    """This rank's keep mask over A's local entries (before symmetrization)."""
    n = A.local_rows
    grow = A.owned_rows()
    diag = cols == grow[rows]
    absval, off = np.abs(vals), ~diag
    rowmax = np.zeros(n)
    np.maximum.at(rowmax, rows[off], absval[off])
    keep = diag | (off & (absval >= gamma * rowmax[rows]))
    if minimal is not None:
        keep |= off & _in_pattern(rows, cols, minimal, A.shape[1])
    return keep


def _transposed(A, rows, cols, mask, strategy):
    """Collective. Whether the transpose of each local entry is masked on its own row's
    rank (the masked entries' transpose travels to their columns' owners)."""
    from ..parcsr import ParCSR
    from ..products import transpose_rows

    K = sp.csr_matrix((np.ones(int(mask.sum())), (rows[mask], cols[mask])), shape=(A.local_rows, A.shape[1]))
    KP = ParCSR.from_local_rows(K, A.comm, row_dist=A.row_dist, col_dist=A.col_dist, topology=A.topology,
                                strategy=strategy)
    return _in_pattern(rows, cols, transpose_rows(KP, strategy), A.shape[1])


def sparsify(A, minimal, gamma, lumping, *, theta=0.25, strategy="standard", profile=None):
    """Collective. The sparsified copy of the coarse operator A.

    Parameters
    ----------
    A : ParCSR
        The coarse operator, rows and columns distributed alike.
    minimal : scipy.sparse.csr_matrix or None
        The minimal pattern's half (:func:`minimal_pattern`; None: none).
    gamma : float
        The drop tolerance; 0 returns A itself.
    lumping : {"diagonal", "strong", "spd"}
        Where dropped entries go (:data:`LUMPINGS`; "strong": strong neighbours by the
        classical measure with ``theta``).
    theta : float
        The strength threshold of "strong" lumping.
    strategy : str
        The halo plan's strategy of the new ParCSR (and of the exchanges of the keep mask's
        transpose and the lumped entries).
    profile : MachineProfile, str or path, optional
        The machine profile that prices the strategy "auto".

    Returns
    -------
    A_hat : ParCSR
        The new ParCSR (halo plan of ``strategy``); A itself when gamma = 0.
    info : dict
        The drop tolerance (``gamma``) and the global entries before, after and dropped
        (``nnz_before``, ``nnz_after``, ``dropped``).
    """
    from ..parcsr import ParCSR
    from ..products import transpose_rows

    comm = A.comm
    before = A.global_nnz()
    if gamma == 0:
        return A, {"gamma": 0.0, "nnz_before": before, "nnz_after": before, "dropped": 0}
    L = A.local_block()
    gc = A.global_columns()
    rows = np.repeat(np.arange(A.local_rows), np.diff(L.indptr))
    cols, vals = gc[L.indices], L.data
    keep = _keep_mask(A, rows, cols, vals, minimal, gamma)
    diag = cols == A.owned_rows()[rows]
    keep |= _transposed(A, rows, cols, keep & ~diag, strategy)
    shape = (A.local_rows, A.shape[1])
    if lumping == "strong":
        lump = lambda: _core.lump_to_strong_neighbours(  # noqa: E731
            A._core, L.indptr.astype(np.int32), L.indices.astype(np.int32), np.ascontiguousarray(L.data),
            keep.astype(np.uint8), float(theta), comm.py2f())
        while True:  # entries no strong neighbour takes stay, with their transposes (W only grows: once more)
            indptr, indices, data, must, _ = lump()
            must = must.view(bool)
            if not comm.allreduce(int(must.any())):
                break
            keep |= must | _transposed(A, rows, cols, must, strategy)
        Lrows = sp.csr_matrix((data, indices, indptr), shape=shape)
    kept = sp.csr_matrix((vals[keep], (rows[keep], cols[keep])), shape=shape)
    drop = ~keep
    if lumping != "strong":
        grow = A.owned_rows()
        moved = vals[drop] if lumping == "diagonal" else np.abs(vals[drop])
        lumped = np.bincount(rows[drop], weights=moved, minlength=A.local_rows)
        local = kept + sp.csr_matrix((lumped, (np.arange(A.local_rows), grow)), shape=shape)
    else:
        LP = ParCSR.from_local_rows(Lrows, comm, row_dist=A.row_dist, col_dist=A.col_dist, topology=A.topology,
                                    strategy=strategy)
        LT = transpose_rows(LP, strategy)
        back = np.asarray(LT.sum(axis=1)).ravel()
        local = kept + Lrows + LT - sp.csr_matrix((back, (np.arange(A.local_rows), A.owned_rows())), shape=shape)
    local = sp.csr_matrix(local)
    local.sum_duplicates()
    Ahat = ParCSR.from_local_rows(local, comm, row_dist=A.row_dist, col_dist=A.col_dist, topology=A.topology,
                                  strategy=strategy, profile=profile)
    dropped = comm.allreduce(int(drop.sum()))
    return Ahat, {"gamma": float(gamma), "nnz_before": before, "nnz_after": Ahat.global_nnz(), "dropped": dropped}


def halo_summary(A):
    """Collective. Max and mean over ranks of one halo exchange of A (planned)."""
    return summarize(A.comm.allgather(A.planned_stats()))
