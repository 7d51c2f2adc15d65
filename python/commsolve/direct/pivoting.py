"""Static pivoting the SuperLU_DIST way (``pdgssvx``): what happens to A before it is
factored without pivoting, and to b and x around the triangular solves.

1. **Equilibration** (``equil=True``, SuperLU_DIST's ``Equil = YES``; ``dgsequ`` /
   ``dlaqgs``): row scales ``r_i = 1 / max_j |a_ij|`` and column scales
   ``c_j = 1 / max_i |r_i a_ij|``, applied only where the matrix is badly scaled (the smallest
   over the largest row (column) scale below 0.1, or ``max |a_ij|`` near under- or overflow).
   ``equed`` says which were applied: ``"N"``, ``"R"``, ``"C"`` or ``"B"`` (both).
2. **A row permutation for a large diagonal** (``row_perm="mc64"``, SuperLU_DIST's
   ``RowPerm = LargeDiag_MC64``, job 5): the permutation maximising the product of the
   diagonal's magnitudes, with the scaling from its dual variables under which every
   diagonal entry has magnitude 1 and every other entry at most 1 (C++
   ``large_diagonal_matching``). ``row_perm="none"`` keeps the rows; ``row_perm="auto"``
   keeps them where a cheap test says the diagonal is already safe (:func:`diagonally_dominant`:
   nonzero and weakly dominant by rows or by columns, e.g. Poisson; not the gallery's
   centrally differenced convection-diffusion), and runs MC64 otherwise.

The matrix factored is then B = (diag(row_scale) A diag(col_scale))[row_of_col, :], its rows
and columns permuted symmetrically by the fill-reducing ordering; to solve A x = b, the
factors solve B y = (row_scale * b)[row_of_col] and x = col_scale * y. Tiny pivots
(``replace_tiny``) and iterative refinement live with the factors and the solves
(:mod:`commsolve.direct`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .. import _core

__all__ = ["StaticPivoting", "static_pivoting", "checked_matrix", "diagonally_dominant", "equilibration_scales",
           "check_row_perm", "ROW_PERMS", "EQUED"]

ROW_PERMS = ("mc64", "none", "auto")
EQUED = {"N": "none", "R": "rows scaled", "C": "columns scaled", "B": "rows and columns scaled"}  # LAPACK's letters
_THRESH = 0.1  # dlaqgs: scale only when the scale ratio is below this


@dataclass
class StaticPivoting:
    """What was done to A: scales (in A's own row and column order), the row matched to every
    column (None: no row permutation), and which scalings ``equed`` equilibration applied.

    Each parameter is kept as the attribute of the same name.

    Parameters
    ----------
    row_scale, col_scale : ndarray
        The row and column scales, in A's own row and column order.
    row_of_col : ndarray or None
        The row matched to every column (None: no row permutation).
    equed : str
        Which scalings equilibration applied: ``"N"``, ``"R"``, ``"C"`` or ``"B"`` (both; see
        :data:`EQUED`).
    row_perm : str
        The row permutation done (``"auto"`` resolved): ``"mc64"`` or ``"none"``.
    """

    row_scale: np.ndarray
    col_scale: np.ndarray
    row_of_col: np.ndarray | None
    equed: str
    row_perm: str

    def row_order(self, perm):
        """The row of A (and b) that row k of the factored matrix ``B[perm][:, perm]`` holds.

        Parameters
        ----------
        perm : array_like of int
            The symmetric permutation of B that is factored (``structure.perm``).

        Returns
        -------
        ndarray of int
            Entry k: the row of A (and b) that row k of ``B[perm][:, perm]`` holds.
        """
        return np.asarray(perm) if self.row_of_col is None else self.row_of_col[perm]


def checked_matrix(A, what="the matrix"):
    """``A`` as square float64 CSR (duplicates summed, explicit zeros kept).

    Parameters
    ----------
    A : scipy sparse matrix or array_like
        The matrix.
    what : str
        What the errors call ``A``.

    Returns
    -------
    scipy.sparse.csr_matrix
        ``A``, square, float64, duplicates summed, explicit zeros kept.

    Raises
    ------
    ValueError
        A clear one for complex values, a non-square or empty shape, or a non-finite entry
        (named by its row and column).
    """
    if np.iscomplexobj(A.data if sp.issparse(A) else np.asarray(A)):
        raise ValueError(f"{what} is complex; commsolve's factorizations are real")
    A = sp.csr_matrix(A, dtype=np.float64)
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"{what} must be square, got {A.shape[0]} x {A.shape[1]}")
    if A.shape[0] == 0:
        raise ValueError(f"{what} has no rows (0 x 0): nothing to factor")
    A.sum_duplicates()
    bad = np.nonzero(~np.isfinite(A.data))[0]
    if bad.size:
        row = int(np.searchsorted(A.indptr, bad[0], side="right") - 1)
        raise ValueError(f"{what} has a non-finite entry {A.data[bad[0]]} at ({row}, {int(A.indices[bad[0]])}) "
                         f"(counting from 0)")
    return A


def _scaled(A, r, c):
    """diag(r) A diag(c) as a new CSR matrix: the values scaled in one pass (no sparse
    products), the entries that are zero dropped (as a sparse product drops them)."""
    B = sp.csr_matrix((A.data * (np.repeat(r, np.diff(A.indptr)) * c[A.indices]), A.indices.copy(), A.indptr.copy()),
                      shape=A.shape)
    B.has_sorted_indices = A.has_sorted_indices
    B.eliminate_zeros()
    return B


def _equilibrate(A):
    """(r, c, equed) as dgsequ and dlaqgs decide them."""
    absA = abs(A)
    row_max = np.asarray(absA.max(axis=1).todense()).ravel()
    with np.errstate(divide="ignore"):
        r = 1.0 / row_max  # a zero row is an error below
    col_max = np.asarray(_scaled(absA, np.where(row_max > 0, r, 1.0), np.ones(A.shape[1])).max(axis=0).todense())
    return equilibration_scales(row_max, col_max.ravel())


def equilibration_scales(row_max, col_max):
    """``(r, c, equed)`` from every row's and every column's largest magnitude (dgsequ),
    scaled only where dlaqgs would.

    Parameters
    ----------
    row_max : ndarray
        Every row's largest magnitude.
    col_max : ndarray
        Every column's largest magnitude after the rows are scaled by ``1 / row_max``.

    Returns
    -------
    r, c : ndarray
        The row and column scales (ones where dlaqgs would not scale).
    equed : str
        Which were applied: ``"N"``, ``"R"``, ``"C"`` or ``"B"``.

    Raises
    ------
    ValueError
        Naming the first zero row or column (the matrix is singular).
    """
    zero = np.nonzero(row_max == 0)[0]
    if zero.size:
        raise ValueError(f"the matrix is singular: row {int(zero[0])} (counting from 0) is zero")
    r = 1.0 / row_max
    zero = np.nonzero(col_max == 0)[0]
    if zero.size:
        raise ValueError(f"the matrix is singular: column {int(zero[0])} (counting from 0) is zero")
    c = 1.0 / col_max
    small = np.finfo(float).tiny / np.finfo(float).eps
    large = 1.0 / small
    amax = row_max.max()
    rowcnd = max(r.min(), small) / min(r.max(), large)
    colcnd = max(c.min(), small) / min(c.max(), large)
    rows_ok = rowcnd >= _THRESH and small <= amax <= large
    cols_ok = colcnd >= _THRESH
    equed = {(True, True): "N", (True, False): "C", (False, True): "R", (False, False): "B"}[rows_ok, cols_ok]
    one = np.ones(r.size)
    return (one if rows_ok else r), (one if cols_ok else c), equed


def diagonally_dominant(A):
    """Whether every diagonal entry of the square CSR ``A`` is nonzero and ``|a_ii|`` >= the sum
    of the other magnitudes of its row, for every row, or of its column, for every column: the
    matrices LU factors stably without a row permutation (one pass over the entries).

    Parameters
    ----------
    A : scipy.sparse.csr_matrix
        The matrix, square.

    Returns
    -------
    bool
    """
    d = np.abs(A.diagonal())
    if not np.all(d > 0):
        return False
    M = abs(A)
    by_rows, by_cols = np.asarray(M.sum(axis=1)).ravel(), np.asarray(M.sum(axis=0)).ravel()
    return bool(np.all(2 * d >= by_rows) or np.all(2 * d >= by_cols))


def check_row_perm(row_perm):
    """A ValueError unless ``row_perm`` is one of :data:`ROW_PERMS`.

    Parameters
    ----------
    row_perm : str
        The row permutation asked for.

    Raises
    ------
    ValueError
        When ``row_perm`` is not one of :data:`ROW_PERMS`; the message lists them.
    """
    if row_perm not in ROW_PERMS:
        raise ValueError(f"unknown row permutation {row_perm!r} (known: {', '.join(ROW_PERMS)})")


def static_pivoting(A, equil=True, row_perm="mc64"):
    """``(B, StaticPivoting)``: the scaled and row-permuted matrix to factor, and what was done.

    Parameters
    ----------
    A : scipy.sparse.csr_matrix
        The matrix, as :func:`checked_matrix` returns it.
    equil : bool
        Equilibrate, where the matrix is badly scaled (step 1 of :mod:`~commsolve.direct.pivoting`;
        SuperLU_DIST's ``Equil = YES``).
    row_perm : {"mc64", "none", "auto"}
        The row permutation for a large diagonal (step 2 of :mod:`~commsolve.direct.pivoting`).

    Returns
    -------
    B : scipy.sparse.csr_matrix
        ``(diag(row_scale) A diag(col_scale))[row_of_col, :]``, indices sorted.
    pivoting : StaticPivoting
        What was done.

    Raises
    ------
    ValueError
        For an unknown ``row_perm``, or (equilibrating) a zero row or column.
    """
    check_row_perm(row_perm)
    n = A.shape[0]
    if row_perm == "auto":
        row_perm = "none" if diagonally_dominant(A) else "mc64"
    r, c, equed = _equilibrate(A) if equil else (np.ones(n), np.ones(n), "N")
    B = _scaled(A, r, c) if equed != "N" else A.copy()
    row_of_col = None
    if row_perm == "mc64":
        B.sort_indices()
        row_of_col, dr, dc, _ = _core.large_diagonal_matching(B.indptr.astype(np.int64), B.indices.astype(np.int32),
                                                              B.data)
        r, c = r * dr, c * dc
        B = _scaled(B, dr, dc)[row_of_col]
        equed = "B"
    B.sort_indices()
    return B, StaticPivoting(r, c, row_of_col, equed, row_perm)
