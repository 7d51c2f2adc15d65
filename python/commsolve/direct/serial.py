"""The serial supernodal LU: static pivoting (:mod:`.pivoting`), a fill-reducing ordering
that keeps the nested-dissection separator tree, the symbolic and the numeric
factorization (multifrontal, C++), and solves with iterative refinement."""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from .. import _core
from .pivoting import check_row_perm, checked_matrix, static_pivoting
from .refinement import ITMAX, iterative_refinement
from .symbolic import LU_DEFAULTS, SymbolicOptions, symbolic

__all__ = ["SparseLU", "analyze", "pivoted", "PIVOTING_DEFAULTS", "checked_lu_options", "rhs_array"]

# Static pivoting's defaults (SuperLU_DIST's pdgssvx): SparseLU's and factor's.
PIVOTING_DEFAULTS = {"equil": True, "row_perm": "mc64", "replace_tiny": False, "zero_pivot": 1e-14}


def checked_lu_options(options):
    """:class:`SparseLU`'s options (``direct.factor``'s ``**lu_options``) checked, the one
    place their names, types and ranges are: the names of :data:`LU_DEFAULTS` and
    :data:`PIVOTING_DEFAULTS` only (a misspelt one is not ignored), whole numbers where
    counts are asked for, booleans for switches, a known ordering and row permutation, a
    finite ``zero_pivot`` >= 0.

    Parameters
    ----------
    options : dict
        Name to value; None stands for the default.

    Returns
    -------
    dict
        The options given (None values left out), counts as int, numbers as float.

    Raises
    ------
    ValueError
        Naming the option and what it must be.
    """
    known = {**LU_DEFAULTS, **PIVOTING_DEFAULTS}
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(unknown)} (known: {', '.join(known)})")
    given = {k: v for k, v in options.items() if v is not None}
    for name in ("max_supernode", "levels", "relax_subtree"):
        if name in given:
            if not isinstance(given[name], (int, np.integer)) or isinstance(given[name], (bool, np.bool_)):
                raise ValueError(f"{name} must be a whole number, got {given[name]!r}")
            given[name] = int(given[name])
    for name in ("relax", "zero_pivot"):
        if name in given:
            v = given[name]
            if not isinstance(v, (int, float, np.integer, np.floating)) or isinstance(v, (bool, np.bool_)):
                raise ValueError(f"{name} must be a number, got {v!r}")
            given[name] = float(v)
    if not 0.0 <= given.get("zero_pivot", 0.0) < np.inf:
        raise ValueError(f"zero_pivot must be finite and >= 0, got {given['zero_pivot']!r}")
    for name in ("equil", "replace_tiny"):
        if not isinstance(given.get(name, False), (bool, np.bool_)):
            raise ValueError(f"{name} must be True or False, got {given[name]!r}")
    if not isinstance(given.get("ordering", ""), str):
        raise ValueError(f"ordering must be a name, got {given['ordering']!r}")
    check_row_perm(given.get("row_perm", PIVOTING_DEFAULTS["row_perm"]))
    SymbolicOptions(**{k: given[k] for k in LU_DEFAULTS if k in given})  # the ordering's name and the ranges
    return given


def pivoted(A, equil=PIVOTING_DEFAULTS["equil"], row_perm=PIVOTING_DEFAULTS["row_perm"], times=None):
    """``(A, B, pivoting)``: A checked, B the scaled and row-permuted matrix to order and
    factor (static pivoting, :func:`~commsolve.direct.pivoting.static_pivoting`).

    Parameters
    ----------
    A : scipy sparse matrix or array_like
        The matrix, checked by :func:`~commsolve.direct.pivoting.checked_matrix`.
    equil : bool
        Equilibrate (as :func:`~commsolve.direct.pivoting.static_pivoting`).
    row_perm : {"mc64", "none", "auto"}
        The row permutation (as :func:`~commsolve.direct.pivoting.static_pivoting`).
    times : dict, optional
        If given, receives the static pivoting's seconds as ``pivoting``.

    Returns
    -------
    A : scipy.sparse.csr_matrix
        The matrix as checked.
    B : scipy.sparse.csr_matrix
        The scaled and row-permuted matrix to order and factor.
    pivoting : StaticPivoting
        What was done.

    Raises
    ------
    ValueError
        As :func:`~commsolve.direct.pivoting.checked_matrix` and
        :func:`~commsolve.direct.pivoting.static_pivoting` raise it.
    """
    A = checked_matrix(A)
    t0 = time.perf_counter()
    B, pivoting = static_pivoting(A, equil, row_perm)
    if times is not None:
        times["pivoting"] = time.perf_counter() - t0
    return A, B, pivoting


def analyze(A, max_supernode=LU_DEFAULTS["max_supernode"], ordering=LU_DEFAULTS["ordering"],
            levels=LU_DEFAULTS["levels"], relax=LU_DEFAULTS["relax"], relax_subtree=LU_DEFAULTS["relax_subtree"],
            equil=PIVOTING_DEFAULTS["equil"], row_perm=PIVOTING_DEFAULTS["row_perm"], times=None):
    """Everything before the numeric factorization, as :class:`SparseLU` does it.

    Parameters
    ----------
    A : scipy sparse matrix or array_like
        The matrix (checked).
    max_supernode, ordering, levels, relax, relax_subtree
        As :func:`~commsolve.direct.symbolic.supernodal_structure`'s (defaults:
        :data:`~commsolve.direct.symbolic.LU_DEFAULTS`).
    equil, row_perm
        As :func:`~commsolve.direct.pivoting.static_pivoting`'s (defaults:
        :data:`PIVOTING_DEFAULTS`).
    times : dict, optional
        If given, receives the seconds of each part: ``pivoting`` (equilibration and the row
        permutation), then :func:`~commsolve.direct.symbolic.supernodal_structure`'s.

    Returns
    -------
    A : scipy.sparse.csr_matrix
        The matrix as checked.
    B : scipy.sparse.csr_matrix
        The scaled and row-permuted matrix whose symmetric permutation ``structure.perm`` is
        factored.
    pivoting : StaticPivoting
        The static pivoting done.
    structure : SupernodalStructure
        The supernodal structure of B.
    seconds : float
        The seconds all of it took.

    Raises
    ------
    ValueError
        As :func:`pivoted` and :func:`~commsolve.direct.symbolic.symbolic` raise it.
    """
    t0 = time.perf_counter()
    A, B, pivoting = pivoted(A, equil, row_perm, times)
    structure = symbolic(B, max_supernode=max_supernode, ordering=ordering, levels=levels, relax=relax,
                         relax_subtree=relax_subtree, times=times)
    return A, B, pivoting, structure, time.perf_counter() - t0


def rhs_array(b, nrows, what="b"):
    """``b`` as a float64 (nrows, nrhs) array and whether it was 1-D.

    Parameters
    ----------
    b : array_like
        The right-hand sides, shape ``(nrows,)`` or ``(nrows, nrhs)``.
    nrows : int
        The rows ``b`` must have.
    what : str
        What the errors call ``b``.

    Returns
    -------
    B : ndarray
        ``b`` as float64, shape ``(nrows, nrhs)``.
    one : bool
        Whether ``b`` was 1-D.

    Raises
    ------
    ValueError
        A clear one otherwise (complex, wrong shape, not numbers, NaN or Inf).
    """
    try:
        B = np.asarray(b)
    except Exception as e:  # noqa: BLE001 - whatever numpy cannot take
        raise ValueError(f"{what} is not an array of numbers ({e})") from None
    if np.iscomplexobj(B):
        raise ValueError(f"{what} is complex; the factors are real (solve the real and imaginary parts apart)")
    if B.ndim not in (1, 2) or B.shape[0] != nrows or (B.ndim == 2 and B.shape[1] < 1):
        raise ValueError(f"{what} must have shape ({nrows},) or ({nrows}, nrhs), got {B.shape}")
    try:
        B = np.asarray(B, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{what} holds values that are not numbers (dtype {B.dtype})") from None
    bad = np.flatnonzero(~(np.isfinite(B) if B.ndim == 1 else np.isfinite(B).all(axis=1)))
    if bad.size:  # x and its backward error would be NaN: nothing to vouch for
        raise ValueError(f"{what} holds non-finite values (NaN or Inf), first in row {bad[0]} "
                         f"({bad.size} row(s) in all)")
    return B.reshape(nrows, 1 if B.ndim == 1 else B.shape[1]), B.ndim == 1


class SparseLU:
    """Factor ``A`` (square) once; :meth:`solve` many times.

    Static pivoting as SuperLU_DIST's ``pdgssvx``, with its defaults: ``equil=True``
    (equilibrate when the matrix is badly scaled), ``row_perm="mc64"`` (rows permuted for a
    large diagonal, with its scaling; ``"none"`` keeps them), ``replace_tiny=False`` (a
    pivot below ``zero_pivot`` ||A||_1 is an error; with True pivots below sqrt(eps) ||A||_1
    are replaced by that value, counted in ``tiny_pivots_replaced``), and iterative
    refinement in :meth:`solve`. A non-finite entry or pivot is an error.

    Attributes: ``structure`` (supernodes and separator tree of the matrix as factored),
    ``pivoting`` (scales, row permutation, ``equed``), ``nnz_LU``, ``tiny_pivots_replaced``,
    ``flops``, ``ordering_seconds`` (static pivoting, nested dissection, symbolic; each part
    in ``ordering_parts``, as :func:`analyze` times them),
    ``allocate_seconds`` (A permuted into the factor's order, the factors' memory obtained
    and first touched: SuperLU_DIST does both in its DISTRIBUTE phase) and
    ``numeric_seconds`` (the factorization proper, as its FACTOR); after a solve ``berr``
    (componentwise backward error per right-hand side) and ``refine_steps``.

    Parameters
    ----------
    A : scipy sparse matrix or array_like
        The matrix, square (checked by :func:`~commsolve.direct.pivoting.checked_matrix`).
    max_supernode, ordering, levels, relax, relax_subtree
        The symbolic analysis's options, as
        :func:`~commsolve.direct.symbolic.supernodal_structure`'s (defaults:
        :data:`~commsolve.direct.symbolic.LU_DEFAULTS`).
    equil : bool
        Equilibrate when the matrix is badly scaled (default True).
    row_perm : {"mc64", "none", "auto"}
        ``"mc64"`` (the default): rows permuted for a large diagonal, with its scaling;
        ``"none"`` keeps them; ``"auto"`` keeps them where the diagonal is already safe
        (:mod:`~commsolve.direct.pivoting`).
    replace_tiny : bool
        False (the default): a pivot below ``zero_pivot ||A||_1`` is an error; True: pivots
        below ``sqrt(eps) ||A||_1`` are replaced by that value, counted in
        ``tiny_pivots_replaced``.
    zero_pivot : float
        With ``replace_tiny=False``, the pivot threshold relative to ``||A||_1`` (default 1e-14).

    Raises
    ------
    ValueError
        For a matrix :func:`~commsolve.direct.pivoting.checked_matrix` refuses, a zero or
        non-finite pivot, or an unknown option value.
    """

    def __init__(self, A, max_supernode=LU_DEFAULTS["max_supernode"], ordering=LU_DEFAULTS["ordering"],
                 levels=LU_DEFAULTS["levels"], relax=LU_DEFAULTS["relax"], relax_subtree=LU_DEFAULTS["relax_subtree"],
                 equil=PIVOTING_DEFAULTS["equil"], row_perm=PIVOTING_DEFAULTS["row_perm"],
                 replace_tiny=PIVOTING_DEFAULTS["replace_tiny"], zero_pivot=PIVOTING_DEFAULTS["zero_pivot"]):
        o = {**LU_DEFAULTS, **PIVOTING_DEFAULTS, **checked_lu_options(dict(
            max_supernode=max_supernode, ordering=ordering, levels=levels, relax=relax, relax_subtree=relax_subtree,
            equil=equil, row_perm=row_perm, replace_tiny=replace_tiny, zero_pivot=zero_pivot))}
        self.ordering_parts = {}
        A, B, self.pivoting, self.structure, self.ordering_seconds = analyze(
            A, max_supernode=o["max_supernode"], ordering=o["ordering"], levels=o["levels"], relax=o["relax"],
            relax_subtree=o["relax_subtree"], equil=o["equil"], row_perm=o["row_perm"], times=self.ordering_parts)
        t0 = time.perf_counter()
        perm = self.structure.perm
        P = B[perm][:, perm].tocsr()
        P.sort_indices()
        T = P.T.tocsr()
        T.sort_indices()
        i32 = np.int32
        try:
            self._core = _core.SupernodalLU(
                self.structure, P.indptr.astype(i32), P.indices.astype(i32), P.data,
                T.indptr.astype(i32), T.indices.astype(i32), T.data, float(o["zero_pivot"]), bool(o["replace_tiny"]))
        except RuntimeError as e:  # a zero or non-finite pivot
            raise ValueError(str(e)) from e
        self.numeric_seconds = self._core.numeric_seconds
        self.allocate_seconds = time.perf_counter() - t0 - self.numeric_seconds
        self.shape = A.shape
        self.row_order = self.pivoting.row_order(perm)  # b's row for factor row k
        self.col_order = np.asarray(perm)               # x's row for factor column k
        self.matrix = A  # as checked: square float64 CSR
        self._absA = abs(A)
        self._nz = int(np.diff(A.indptr).max()) + 1
        self.berr = self.refine_steps = None

    @property
    def nnz_LU(self):
        """Stored entries of L and U (diagonal blocks counted once)."""
        return self._core.nnz_LU

    @property
    def tiny_pivots_replaced(self):
        """Tiny pivots replaced in the factorization (``replace_tiny=True``)."""
        return self._core.tiny_pivots_replaced

    @property
    def flops(self):
        """Floating-point operations of the numeric factorization."""
        return self._core.flops

    def selected_inverse(self):
        """The entries of A^-1 that selected inversion computes (Erisman-Tinney, SelInv),
        as scipy CSR: every (i, j) where the factors hold an entry, mapped back through the
        orderings and scalings (A^-1 = D_c Q (L U)^-1 P D_r). It holds the pattern of A^T
        (A's own when the pattern is symmetric and rows are not permuted), and the diagonal:
        what trace(A^-1 B), diag(A^-1) and the density matrices of electronic structure need,
        at the cost of a few factorizations, not of the dense inverse. Serial (C++).

        Returns
        -------
        scipy.sparse.csr_matrix
            Of A's shape: the entries of A^-1 where the factors hold an entry.
        """
        i64 = lambda a: np.ascontiguousarray(a, dtype=np.int64)  # noqa: E731
        f64 = lambda a: np.ascontiguousarray(a, dtype=np.float64)  # noqa: E731
        # Z[a, b] is A^-1[col_order[a], row_order[b]] / (col_scale, row_scale) there (see _solve_once)
        indptr, indices, data = self._core.selected_inverse(i64(self.col_order), i64(self.row_order),
                                                            f64(self.pivoting.col_scale),
                                                            f64(self.pivoting.row_scale))
        return sp.csr_matrix((data, indices, indptr), shape=self.shape)

    def _solve_once(self, B):
        X = np.asfortranarray((self.pivoting.row_scale[:, None] * B)[self.row_order])
        self._core.solve(X)
        out = np.empty_like(X)
        out[self.col_order] = X
        return out * self.pivoting.col_scale[:, None]

    def solve(self, b, refine=True):
        """``x`` with ``A x = b``; ``berr`` holds the componentwise backward error of each
        right-hand side either way.

        Parameters
        ----------
        b : array_like
            The right-hand sides, shape (n,) or (n, nrhs).
        refine : bool
            Iterative refinement (the default, SuperLU_DIST's ``IterRefine``).

        Returns
        -------
        ndarray
            ``x``, of ``b``'s shape.

        Raises
        ------
        ValueError
            For a ``b`` that is complex, of the wrong shape or not numbers.

        Examples
        --------
        >>> import numpy as np
        >>> from commsolve import direct, gallery
        >>> A = gallery.poisson2d9(10)
        >>> lu = direct.SparseLU(A)
        >>> x = lu.solve(np.ones(A.shape[0]))
        >>> bool(np.allclose(A @ x, 1.0)), lu.berr.shape
        (True, (1,))
        """
        B, one = rhs_array(b, self.shape[0])
        A, absA = self.matrix, self._absA
        X, self.berr, self.refine_steps = iterative_refinement(
            self._solve_once, lambda x, cols: B[:, cols] - A @ x, lambda v: absA @ v, B, self._solve_once(B),
            self._nz, max_steps=ITMAX if refine else 0)
        return X.ravel() if one else X
