"""Matrix generators that stand for the papers' test matrices.

Every generator can build the whole matrix or only a chosen set of rows (``rows=``), with
global column indices, so that under MPI each rank generates just its own rows and the
result does not depend on the number of ranks.

Families
--------
``poisson2d:N``
    2D 5-point Laplacian on an N x N grid
``poisson2d9:N``
    2D 9-point Laplacian (``s2D9pt2048`` is ``poisson2d9:2048``)
``poisson3d:N``
    3D 7-point Laplacian on an N x N x N grid
``poisson3d27:N``
    3D 27-point Laplacian
``aniso2d:N,eps=E,theta=T``
    rotated anisotropic diffusion, 9-point, theta in degrees
``random:rows=R,nnz_per_row=K,seed=S``
    random, exactly K nonzeros per row, diagonally dominant; ``rows_per_rank=`` scales the
    size with the rank count
``convdiff2d:N,pe=P,theta=T``
    convection-diffusion ``-lap u + w . grad u``, ``|w| = P`` at angle T (degrees), central
    differences: nonsymmetric, and not diagonally dominant once the cell Peclet number
    P h / 2 exceeds 1
``kkt3d:N,alpha=A``
    a saddle-point (KKT) matrix shaped like nlpkkt (3D PDE-constrained optimisation):
    ``[[H, J^T], [J, 0]]`` with ``H = diag(L, A I)``, ``J = [L, -I]``, L the 3D 7-point
    Laplacian on N^3 points; 3 N^3 rows, zero (2,2) block
``elasticity3d:N,dofs=D``
    shaped like 3D linear elasticity (audikw_1, the PSelInv paper's): D unknowns (default 3)
    at each point of an N^3 grid, every pair of 27-point neighbours coupled by a dense D x D
    block; SPD (the 27-point Laplacian Kronecker a D x D SPD coupling); D N^3 rows
``dg3d:N,dofs=M``
    shaped like a discontinuous Galerkin discretisation (DG_PNF14000, the PSelInv paper's):
    N^3 elements of M basis functions (default 16), dense M x M blocks inside an element and
    between face neighbours (7-point); SPD; M N^3 rows
``hpcg:N``
    HPCG 3.1's problem: the 27-point operator (26 on the diagonal, -1 to each neighbour) on
    N x N x N points per rank, the ranks stacked in z (an N x N x N P grid: weak scaling, as
    HPCG's local grid per rank)
``groundwater3d:N,contrast=C,seed=S,tile=T``
    steady groundwater flow by finite volumes on N^3 cells (Nakajima's pGW3D-FVM): 7-point,
    harmonic-mean transmissibilities of a smooth log-normal conductivity spanning C (default
    1e10: 1e-5 .. 1e5) that repeats every T cells (default 64), fixed head on the top face;
    SPD

Examples
--------
>>> from commsolve import gallery
>>> A = gallery.poisson2d(4)
>>> A.shape, A.nnz
((16, 16), 64)
>>> B = gallery.from_spec("aniso2d:8,eps=0.01,theta=30")
>>> B.shape
(64, 64)
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

__all__ = [
    "GallerySpec",
    "parse_spec",
    "from_spec",
    "poisson2d",
    "poisson2d9",
    "poisson3d",
    "poisson3d27",
    "hpcg",
    "grid_shape",
    "aniso2d",
    "random_fixed_nnz",
    "convdiff2d",
    "kkt3d",
    "elasticity3d",
    "dg3d",
    "groundwater3d",
    "conductivity_field",
    "stencil_matrix",
]

_CHUNK_ROWS = 1 << 18  # bounds the temporary (rows x stencil) arrays
_RANDOM_BLOCK = 1024  # random rows are drawn in blocks seeded by (seed, block)


def _rows_array(n, rows):
    if rows is None:
        return np.arange(n, dtype=np.int64)
    rows = np.asarray(rows, dtype=np.int64)
    if rows.ndim != 1:
        raise ValueError("rows must be a 1-D array of global row indices")
    if rows.size and (rows.min() < 0 or rows.max() >= n):
        raise ValueError(f"rows must lie in [0, {n})")
    return rows


def stencil_matrix(shape, offsets, weights, rows=None):
    """Matrix of a constant-coefficient stencil on a structured grid (Dirichlet boundary).

    Parameters
    ----------
    shape : tuple of int
        Grid points per dimension; the linear index is x-fastest.
    offsets : array_like, shape (k, d)
        Stencil offsets; neighbours outside the grid are dropped.
    weights : array_like, shape (k,)
        The weight of each offset.
    rows : array_like of int, optional
        Global rows to build (default: all). The result has ``len(rows)`` rows and
        ``prod(shape)`` columns.

    Returns
    -------
    scipy.sparse.csr_matrix
        Columns sorted within each row.

    Raises
    ------
    ValueError
        When a grid dimension is below 1, or ``rows`` is not a 1-D array of rows of the grid.
    """
    shape = tuple(int(s) for s in shape)
    if any(s < 1 for s in shape):
        raise ValueError(f"grid dimensions must be positive, got {shape}")
    offsets = np.asarray(offsets, dtype=np.int64).reshape(len(weights), len(shape))
    weights = np.asarray(weights, dtype=np.float64)
    strides = np.cumprod((1,) + shape[:-1])
    order = np.argsort(offsets @ strides)  # ascending column within every row
    offsets, weights = offsets[order], weights[order]
    n = int(np.prod(shape))
    rows = _rows_array(n, rows)
    indptr = [np.zeros(1, dtype=np.int64)]
    indices, data = [], []
    for start in range(0, rows.size, _CHUNK_ROWS):
        r = rows[start : start + _CHUNK_ROWS]
        coords = [(r // strides[d]) % shape[d] for d in range(len(shape))]
        valid = np.ones((r.size, len(weights)), dtype=bool)
        cols = np.zeros((r.size, len(weights)), dtype=np.int64)
        for d in range(len(shape)):
            c = coords[d][:, None] + offsets[None, :, d]
            valid &= (c >= 0) & (c < shape[d])
            cols += c * strides[d]
        counts = valid.sum(axis=1)
        indptr.append(indptr[-1][-1] + np.cumsum(counts))
        indices.append(cols[valid])
        data.append(np.broadcast_to(weights, valid.shape)[valid])
    indptr = np.concatenate(indptr)
    idx_dtype = np.int32 if max(n, indptr[-1]) < 2**31 else np.int64
    return sp.csr_matrix(
        (
            np.concatenate(data) if data else np.zeros(0),
            (np.concatenate(indices) if indices else np.zeros(0)).astype(idx_dtype),
            indptr.astype(idx_dtype),
        ),
        shape=(rows.size, n),
    )


def _laplacian(dim, points, n, rows):
    """Box stencil (3^dim points) or star stencil (2*dim+1 points) Laplacian."""
    return _laplacian_on((n,) * dim, points, rows)


def _laplacian_on(shape, points, rows):
    dim = len(shape)
    if points == 2 * dim + 1:
        offs = [np.zeros(dim, dtype=int)]
        for d in range(dim):
            for s in (-1, 1):
                e = np.zeros(dim, dtype=int)
                e[d] = s
                offs.append(e)
    else:
        offs = [np.array(o) for o in np.ndindex(*([3] * dim))]
        offs = [o - 1 for o in offs]
    offs = np.array(offs)
    w = np.where(np.all(offs == 0, axis=1), len(offs) - 1.0, -1.0)
    return stencil_matrix(shape, offs, w, rows)


def poisson2d(n, rows=None):
    """2D 5-point Laplacian on an ``n x n`` grid.

    Parameters
    ----------
    n : int
        Grid points per dimension.
    rows : array_like of int, optional
        Global rows to build (default: all); the result has ``len(rows)`` rows and all the
        columns.

    Returns
    -------
    scipy.sparse.csr_matrix
        With global column indices, sorted within each row.

    Raises
    ------
    ValueError
        When ``n`` < 1, or ``rows`` is not a 1-D array of rows of the matrix.
    """
    return _laplacian(2, 5, n, rows)


def poisson2d9(n, rows=None):
    """2D 9-point Laplacian on an ``n x n`` grid (8 on the diagonal, -1 off it).

    Parameters
    ----------
    n : int
        Grid points per dimension.
    rows : array_like of int, optional
        Global rows to build (default: all); the result has ``len(rows)`` rows and all the
        columns.

    Returns
    -------
    scipy.sparse.csr_matrix
        With global column indices, sorted within each row.

    Raises
    ------
    ValueError
        When ``n`` < 1, or ``rows`` is not a 1-D array of rows of the matrix.
    """
    return _laplacian(2, 9, n, rows)


def poisson3d(n, rows=None):
    """3D 7-point Laplacian on an ``n x n x n`` grid.

    Parameters
    ----------
    n : int
        Grid points per dimension.
    rows : array_like of int, optional
        Global rows to build (default: all); the result has ``len(rows)`` rows and all the
        columns.

    Returns
    -------
    scipy.sparse.csr_matrix
        With global column indices, sorted within each row.

    Raises
    ------
    ValueError
        When ``n`` < 1, or ``rows`` is not a 1-D array of rows of the matrix.
    """
    return _laplacian(3, 7, n, rows)


def poisson3d27(n, rows=None):
    """3D 27-point Laplacian on an ``n x n x n`` grid.

    Parameters
    ----------
    n : int
        Grid points per dimension.
    rows : array_like of int, optional
        Global rows to build (default: all); the result has ``len(rows)`` rows and all the
        columns.

    Returns
    -------
    scipy.sparse.csr_matrix
        With global column indices, sorted within each row.

    Raises
    ------
    ValueError
        When ``n`` < 1, or ``rows`` is not a 1-D array of rows of the matrix.
    """
    return _laplacian(3, 27, n, rows)


def aniso2d(n, eps=0.001, theta=45.0, rows=None):
    """Rotated anisotropic diffusion ``-div(Q diag(1, eps) Q^T grad u)`` on an ``n x n`` grid.

    Central differences: ``a u_xx + 2 c u_xy + b u_yy`` with ``a = cos^2 + eps sin^2``,
    ``b = sin^2 + eps cos^2``, ``c = (1 - eps) cos sin``; theta in degrees.

    Parameters
    ----------
    n : int
        Grid points per dimension.
    eps : float
        The diffusion across the strong direction (1 along it).
    theta : float
        The rotation Q's angle in degrees: the strong direction is ``(cos theta, sin theta)``
        (0 gives a 5-point stencil).
    rows : array_like of int, optional
        Global rows to build (default: all); the result has ``len(rows)`` rows and all the
        columns.

    Returns
    -------
    scipy.sparse.csr_matrix
        With global column indices, sorted within each row.

    Raises
    ------
    ValueError
        When ``n`` < 1, or ``rows`` is not a 1-D array of rows of the matrix.
    """
    t = math.radians(theta)
    cs, sn = math.cos(t), math.sin(t)
    a = cs * cs + eps * sn * sn
    b = sn * sn + eps * cs * cs
    c = (1.0 - eps) * cs * sn
    offs = [(0, 0), (-1, 0), (1, 0), (0, -1), (0, 1), (1, 1), (-1, -1), (-1, 1), (1, -1)]
    w = [2 * (a + b), -a, -a, -b, -b, -c / 2, -c / 2, c / 2, c / 2]
    keep = [i for i, v in enumerate(w) if v != 0.0]  # theta = 0 gives a 5-point stencil
    return stencil_matrix((n, n), [offs[i] for i in keep], [w[i] for i in keep], rows)


def convdiff2d(n, pe=100.0, theta=30.0, rows=None):
    """Convection-diffusion ``-lap u + w . grad u`` on an ``n x n`` grid (h = 1 / (n + 1)),
    ``w = pe (cos theta, sin theta)``, central differences, scaled by h^2: 4 on the
    diagonal, ``-1 +- w_d h / 2`` towards the +- neighbour in dimension d.

    Parameters
    ----------
    n : int
        Grid points per dimension.
    pe : float
        The velocity's magnitude ``|w|``.
    theta : float
        The velocity's angle, in degrees.
    rows : array_like of int, optional
        Global rows to build (default: all); the result has ``len(rows)`` rows and all the
        columns.

    Returns
    -------
    scipy.sparse.csr_matrix
        With global column indices, sorted within each row.

    Raises
    ------
    ValueError
        When ``n`` < 1, or ``rows`` is not a 1-D array of rows of the matrix.
    """
    h = 1.0 / (n + 1)
    t = math.radians(theta)
    wx, wy = pe * math.cos(t) * h / 2, pe * math.sin(t) * h / 2
    offs = [(0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)]
    return stencil_matrix((n, n), offs, [4.0, -1.0 + wx, -1.0 - wx, -1.0 + wy, -1.0 - wy], rows)


def kkt3d(n, alpha=1.0, rows=None):
    """The KKT matrix ``[[H, J^T], [J, 0]]`` of ``min 1/2 y^T L y + alpha/2 |u|^2`` subject to
    ``L y = u`` (L the 3D 7-point Laplacian on ``n^3`` points): ``H = diag(L, alpha I)``,
    ``J = [L, -I]``. Symmetric, indefinite, with a zero (2,2) block of ``n^3`` rows (nlpkkt's
    shape); unknowns ordered (y, u, lambda).

    Parameters
    ----------
    n : int
        Grid points per dimension (``3 n^3`` rows).
    alpha : float
        The weight of the control u.
    rows : array_like of int, optional
        Global rows to build (default: all); the result has ``len(rows)`` rows and all the
        columns.

    Returns
    -------
    scipy.sparse.csr_matrix
        With global column indices, sorted within each row.

    Raises
    ------
    ValueError
        When ``rows`` is not a 1-D array of rows of the matrix.
    """
    m = n ** 3
    rows = _rows_array(3 * m, rows)
    block, i = rows // m, rows % m
    out_rows, out_cols, out_vals = [], [], []

    def add(sel, cols, vals):
        out_rows.append(sel)
        out_cols.append(cols)
        out_vals.append(vals)

    for b in (0, 2):  # rows of L: [L . L] in block 0 (H11 and J^T), [L -I .] in block 2 (J)
        sel = np.nonzero(block == b)[0]
        if not sel.size:
            continue
        L = poisson3d(n, rows=i[sel]).tocoo()
        add(sel[L.row], L.col.astype(np.int64), L.data)
        if b == 0:
            add(sel[L.row], L.col.astype(np.int64) + 2 * m, L.data)
        else:
            add(sel, i[sel] + m, -np.ones(sel.size))
    sel = np.nonzero(block == 1)[0]  # rows of u: alpha I and -I (J^T)
    add(sel, i[sel] + m, np.full(sel.size, float(alpha)))
    add(sel, i[sel] + 2 * m, -np.ones(sel.size))
    A = sp.csr_matrix((np.concatenate(out_vals), (np.concatenate(out_rows), np.concatenate(out_cols))),
                      shape=(rows.size, 3 * m))
    A.sort_indices()
    return A


def block_coupled(points, n, dofs, beta=0.5, rows=None):
    """``points(n, rows=...)`` (a point-coupling generator, e.g. :func:`poisson3d27`)
    Kronecker a dense ``dofs x dofs`` block ``B = (1 - beta) I + beta J / dofs`` (SPD for
    beta < 1: eigenvalues 1 - beta and 1), unknowns numbered point by point (point p's are
    p dofs .. p dofs + dofs - 1): SPD when the point matrix is."""
    d = int(dofs)
    if d < 1:
        raise ValueError(f"dofs must be at least 1, got {dofs}")
    m = n ** 3
    rows = _rows_array(d * m, rows)
    P = points(n, rows=rows // d).tocsr()
    B = (1.0 - beta) * np.eye(d) + beta / d
    counts = np.diff(P.indptr)
    cols = (P.indices.astype(np.int64)[:, None] * d + np.arange(d)).ravel()
    vals = (P.data[:, None] * B[np.repeat(rows % d, counts)]).ravel()
    indptr = np.concatenate([[0], np.cumsum(counts * d)])
    A = sp.csr_matrix((vals, cols, indptr), shape=(rows.size, d * m))
    A.sort_indices()
    return A


def elasticity3d(n, dofs=3, rows=None):
    """Shaped like 3D linear elasticity: ``dofs`` unknowns per point of an ``n^3`` grid, the
    27-point neighbours coupled by dense blocks (:func:`block_coupled`).

    Parameters
    ----------
    n : int
        Grid points per dimension.
    dofs : int
        Unknowns per point (``dofs n^3`` rows, numbered point by point).
    rows : array_like of int, optional
        Global rows to build (default: all); the result has ``len(rows)`` rows and all the
        columns.

    Returns
    -------
    scipy.sparse.csr_matrix
        With global column indices, sorted within each row.

    Raises
    ------
    ValueError
        When ``n`` < 1 or ``dofs`` < 1, or ``rows`` is not a 1-D array of rows of the matrix.
    """
    return block_coupled(poisson3d27, n, dofs, rows=rows)


def dg3d(n, dofs=16, rows=None):
    """Shaped like a DG discretisation: ``n^3`` elements of ``dofs`` basis functions, dense
    blocks inside each element and between face neighbours (7-point; :func:`block_coupled`).

    Parameters
    ----------
    n : int
        Elements per dimension.
    dofs : int
        Basis functions per element (``dofs n^3`` rows, numbered element by element).
    rows : array_like of int, optional
        Global rows to build (default: all); the result has ``len(rows)`` rows and all the
        columns.

    Returns
    -------
    scipy.sparse.csr_matrix
        With global column indices, sorted within each row.

    Raises
    ------
    ValueError
        When ``n`` < 1 or ``dofs`` < 1, or ``rows`` is not a 1-D array of rows of the matrix.
    """
    return block_coupled(poisson3d, n, dofs, rows=rows)


_GW_MODES = 64  # random Fourier modes of the groundwater conductivity field


def conductivity_field(cells, n, contrast=1e10, seed=0, tile=64):
    """log10 of the hydraulic conductivity at ``cells`` of :func:`groundwater3d`.

    A smooth Gaussian random field (a sum of random Fourier modes whose wave numbers are whole
    multiples of 2 pi / ``tile`` cells, so the field repeats every ``tile`` cells: weak
    scaling keeps its statistics), normalised to unit variance, its 3-sigma range mapped onto
    [-L, L] with L = log10(contrast) / 2 and clipped there: K spans ``contrast`` (1e-5 .. 1e5
    by default). The same on every rank: any rank evaluates any cell.

    Parameters
    ----------
    cells : array_like of int
        Global cell indices of an n x n x n grid, x fastest.
    n : int
        Cells per dimension.
    contrast : float
        The ratio of the largest conductivity to the smallest.
    seed : int
        Which random field.
    tile : int
        The field's period, in cells.

    Returns
    -------
    ndarray
        log10 K at each cell, in [-L, L].
    """
    cells = np.asarray(cells, dtype=np.int64)
    rng = np.random.default_rng([int(seed), 0x6D67])  # every rank draws the same modes
    waves = rng.integers(-4, 5, size=(_GW_MODES, 3)) * (2 * np.pi / tile)  # up to 4 periods per tile
    phase = rng.uniform(0, 2 * np.pi, _GW_MODES)
    coords = np.stack([cells % n, (cells // n) % n, cells // (n * n)], axis=1).astype(float)
    g = np.zeros(len(cells))
    for start in range(0, len(cells), _CHUNK_ROWS):
        block = coords[start:start + _CHUNK_ROWS]
        g[start:start + _CHUNK_ROWS] = np.cos(block @ waves.T + phase).sum(axis=1)
    g /= math.sqrt(_GW_MODES / 2.0)  # unit variance (modes of random phase)
    half = math.log10(contrast) / 2.0
    return np.clip(g / 3.0, -1.0, 1.0) * half


def groundwater3d(n, contrast=1e10, seed=0, tile=64, rows=None):
    """Steady groundwater flow ``-div(K grad h) = 0`` by cell-centred finite volumes on an
    n x n x n grid of unit cells (Nakajima's pGW3D-FVM problem).

    7-point, each face's transmissibility the harmonic mean of its two cells' conductivities,
    K from :func:`conductivity_field` (spanning ``contrast``), no-flow on every face but the
    top (z = n - 1), where the head is fixed (Dirichlet, half a cell away: transmissibility
    2 K). Symmetric positive definite, diagonally dominant.

    Parameters
    ----------
    n : int
        Cells per dimension.
    contrast : float
        The ratio of the largest conductivity to the smallest (at least 1).
    seed : int
        Which random conductivity field.
    tile : int
        The field's period, in cells.
    rows : array_like of int, optional
        Global rows (cells, x fastest) to build (default: all); the result has ``len(rows)``
        rows and all the columns.

    Returns
    -------
    scipy.sparse.csr_matrix
        With global column indices, sorted within each row.

    Raises
    ------
    ValueError
        When ``n`` < 1, ``contrast`` < 1 or ``tile`` < 1, or ``rows`` is not a 1-D array of
        rows of the matrix.
    """
    if n < 1 or not contrast >= 1 or tile < 1:
        raise ValueError(f"groundwater3d: n >= 1, contrast >= 1 and tile >= 1, got n={n}, contrast={contrast}, "
                         f"tile={tile}")
    N = n ** 3
    rows = _rows_array(N, rows)
    x, y, z = rows % n, (rows // n) % n, rows // (n * n)
    K = 10.0 ** conductivity_field(rows, n, contrast, seed, tile)
    offsets = [(-1, 0, 0, x > 0), (1, 0, 0, x < n - 1), (0, -n, 0, y > 0), (0, n, 0, y < n - 1),
               (0, 0, -n * n, z > 0), (0, 0, n * n, z < n - 1)]
    diag = np.where(z == n - 1, 2.0 * K, 0.0)  # the fixed head above the top face
    cols, vals, mask = [], [], []
    for dx, dy, dz, inside in offsets:
        nbr = np.where(inside, rows + dx + dy + dz, rows)
        Kn = 10.0 ** conductivity_field(nbr, n, contrast, seed, tile)
        t = np.where(inside, 2.0 * K * Kn / (K + Kn), 0.0)
        diag += t
        cols.append(nbr)
        vals.append(-t)
        mask.append(inside)
    cols = np.stack([rows] + cols, axis=1)
    vals = np.stack([diag] + vals, axis=1)
    keep = np.stack([np.ones(len(rows), dtype=bool)] + mask, axis=1)
    order = np.argsort(np.where(keep, cols, np.iinfo(np.int64).max), axis=1, kind="stable")
    cols, vals, keep = (np.take_along_axis(a, order, axis=1) for a in (cols, vals, keep))
    counts = keep.sum(axis=1)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    idx = np.int32 if max(N, indptr[-1]) < 2**31 else np.int64
    return sp.csr_matrix((vals[keep], cols[keep].astype(idx), indptr.astype(idx)), shape=(len(rows), N))


def _random_block(n, k, seed, block):
    """Rows [block*B, ...) of the random matrix: k-1 distinct off-diagonal columns each."""
    lo = block * _RANDOM_BLOCK
    hi = min(n, lo + _RANDOM_BLOCK)
    m = hi - lo
    rng = np.random.default_rng([seed, block])
    r = np.arange(lo, hi, dtype=np.int64)
    if k == 1:
        cols = np.zeros((m, 0), dtype=np.int64)
    elif n - 1 <= 4 * (k - 1):
        cols = np.argsort(rng.random((m, n - 1)), axis=1)[:, : k - 1].astype(np.int64)
    else:
        cols = rng.integers(0, n - 1, size=(m, k - 1))
        while True:  # redraw repeated columns until every row's columns are distinct
            cols.sort(axis=1)
            dup = np.zeros_like(cols, dtype=bool)
            dup[:, 1:] = cols[:, 1:] == cols[:, :-1]
            if not dup.any():
                break
            cols[dup] = rng.integers(0, n - 1, size=int(dup.sum()))
    cols = cols + (cols >= r[:, None])  # skip the diagonal
    vals = -rng.random((m, k - 1)) - 0.01
    diag = -vals.sum(axis=1) + 1.0  # strictly diagonally dominant
    allc = np.concatenate([r[:, None], cols], axis=1)
    allv = np.concatenate([diag[:, None], vals], axis=1)
    order = np.argsort(allc, axis=1)
    return np.take_along_axis(allc, order, 1), np.take_along_axis(allv, order, 1)


def random_fixed_nnz(n, nnz_per_row, seed=0, rows=None):
    """Random ``n x n`` matrix with exactly ``nnz_per_row`` nonzeros in every row.

    Off-diagonal columns are uniform without repetition; values make the matrix strictly
    diagonally dominant. Row ``i`` depends only on ``(seed, i)``, not on which rows are asked.

    Parameters
    ----------
    n : int
        Rows and columns.
    nnz_per_row : int
        Nonzeros in every row, the diagonal included.
    seed : int
        Which random matrix.
    rows : array_like of int, optional
        Global rows to build (default: all); the result has ``len(rows)`` rows and all the
        columns.

    Returns
    -------
    scipy.sparse.csr_matrix
        With global column indices, sorted within each row.

    Raises
    ------
    ValueError
        When ``nnz_per_row`` < 1 or exceeds ``n``, or ``rows`` is not a 1-D array of rows of
        the matrix.
    """
    n, k = int(n), int(nnz_per_row)
    if k < 1:
        raise ValueError(f"nnz_per_row must be at least 1, got {k}")
    if k > n:
        raise ValueError(f"nnz_per_row {k} exceeds the number of columns {n}")
    rows = _rows_array(n, rows)
    blocks = np.unique(rows // _RANDOM_BLOCK)
    idx_dtype = np.int32 if max(n, rows.size * k) < 2**31 else np.int64
    cols = np.empty((rows.size, k), dtype=idx_dtype)
    vals = np.empty((rows.size, k))
    block_of = rows // _RANDOM_BLOCK
    for b in blocks:
        bc, bv = _random_block(n, k, seed, int(b))
        sel = np.nonzero(block_of == b)[0]
        cols[sel] = bc[rows[sel] - b * _RANDOM_BLOCK]
        vals[sel] = bv[rows[sel] - b * _RANDOM_BLOCK]
    indptr = (np.arange(rows.size + 1, dtype=np.int64) * k).astype(idx_dtype)
    return sp.csr_matrix((vals.ravel(), cols.ravel(), indptr), shape=(rows.size, n))


@dataclass
class GallerySpec:
    """A parsed generator spec such as ``poisson2d:512`` or ``random:rows=1000,nnz_per_row=7``.

    Made by :func:`parse_spec`.

    Attributes
    ----------
    family : str
        The generator family (see the module).
    args : list of str
        The positional arguments, as written.
    kwargs : dict
        The ``key=value`` arguments, values as written (str).
    text : str
        The spec as given.
    """

    family: str
    args: list = field(default_factory=list)
    kwargs: dict = field(default_factory=dict)
    text: str = ""

    def global_rows(self, nprocs=None):
        """Number of rows of the matrix (``rows_per_rank`` needs ``nprocs``).

        Parameters
        ----------
        nprocs : int, optional
            The number of ranks (``rows_per_rank``, and hpcg's ranks: 1 when None).

        Returns
        -------
        int

        Raises
        ------
        ValueError
            When the spec's arguments are missing or malformed, or ``rows_per_rank`` has no
            ``nprocs``.
        """
        return _FAMILIES[self.family][1](self, nprocs)

    def check_fits(self, count):
        """A ValueError unless ``count`` of its rows fit this machine's memory while built: the
        spec's own arithmetic (entries per row, bytes per entry), before anything is allocated.

        Parameters
        ----------
        count : int
            The rows to be built.

        Raises
        ------
        ValueError
            When they would take more than three quarters of the physical memory (not checked
            where that is unknown).
        """
        per_row = (_NNZ_PER_ROW.get(self.family) or (27 * _dofs(self, 3) if self.family == "elasticity3d" else 0)
                   or (7 * _dofs(self, 16) if self.family == "dg3d" else 0)
                   or _whole(self, "nnz_per_row", self.kwargs.get("nnz_per_row", 1)))
        need = int(count) * per_row * _BYTES_PER_ENTRY
        have = _physical_memory()
        if have and need > 0.75 * have:
            raise ValueError(f"'{self.text}': {int(count):,} rows would take about {need / 2**30:,.1f} GiB to build, "
                             f"more than this machine's memory allows ({have / 2**30:,.1f} GiB)")

    def build(self, rows=None, nprocs=None):
        """The matrix, or only ``rows`` of it, as scipy CSR with global column indices. A
        matrix that would not fit in this machine's memory is refused before it is built.

        Parameters
        ----------
        rows : array_like of int, optional
            Global rows to build (default: all).
        nprocs : int, optional
            The number of ranks (``rows_per_rank``, and hpcg's ranks: 1 when None).

        Returns
        -------
        scipy.sparse.csr_matrix

        Raises
        ------
        ValueError
            When the rows would not fit this machine's memory (:meth:`check_fits`), or the
            spec's arguments or ``rows`` are not valid.
        """
        self.check_fits(self.global_rows(nprocs) if rows is None else len(rows))
        return _FAMILIES[self.family][0](self, rows, nprocs)


# Entries per row (at most) and bytes per entry while building (CSR plus the temporaries of
# the stencil builder), for the up-front memory check.
_NNZ_PER_ROW = {"poisson2d": 5, "poisson2d9": 9, "poisson3d": 7, "poisson3d27": 27, "aniso2d": 9, "convdiff2d": 5,
                "kkt3d": 14, "groundwater3d": 7, "hpcg": 27}
_BYTES_PER_ENTRY = 40


def _physical_memory():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _grid_n(spec):
    if len(spec.args) != 1 and "n" not in spec.kwargs:
        raise ValueError(f"'{spec.text}': give the grid size, e.g. {spec.family}:64")
    text = spec.kwargs.get("n", spec.args[0] if spec.args else "0")
    try:
        n = int(text)
    except ValueError:
        raise ValueError(f"'{spec.text}': the grid size must be a whole number, got {text!r}") from None
    if n < 1:
        raise ValueError(f"'{spec.text}': grid size must be positive")
    return n


def _whole(spec, key, text):
    """An integer parameter of a spec (a clear error for 'abc' or 1.5)."""
    try:
        return int(text)
    except (TypeError, ValueError):
        raise ValueError(f"'{spec.text}': {key} must be a whole number, got {text!r}") from None


def _random_rows(spec, nprocs):
    kw = spec.kwargs
    if "rows_per_rank" in kw:
        if nprocs is None:
            raise ValueError(f"'{spec.text}': rows_per_rank needs the number of ranks")
        return _whole(spec, "rows_per_rank", kw["rows_per_rank"]) * int(nprocs)
    if "rows" in kw or spec.args:
        return _whole(spec, "rows", kw.get("rows", spec.args[0] if spec.args else 0))
    raise ValueError(f"'{spec.text}': give rows=N or rows_per_rank=N")


def _random_build(spec, rows, nprocs):
    kw = spec.kwargs
    k = _whole(spec, "nnz_per_row", kw.get("nnz_per_row", spec.args[1] if len(spec.args) > 1 else 0))
    if k < 1:
        raise ValueError(f"'{spec.text}': give nnz_per_row=K (K >= 1)")
    return random_fixed_nnz(_random_rows(spec, nprocs), k, _whole(spec, "seed", kw.get("seed", 0)), rows)


def hpcg(n, nprocs=1, rows=None):
    """HPCG 3.1's matrix (GenerateProblem): the 27-point operator, 26 on the diagonal and -1 to
    every neighbour inside the grid, on ``n`` x ``n`` x ``n nprocs`` points (each of
    ``nprocs`` ranks an n^3 block, stacked in z; HPCG's process grid differs, the problem
    only by a rotation when it is 1 x 1 x P).

    Parameters
    ----------
    n : int
        Points per dimension of each rank's block.
    nprocs : int
        The number of ranks (blocks stacked in z).
    rows : array_like of int, optional
        Global rows to build (default: all); the result has ``len(rows)`` rows and all the
        columns.

    Returns
    -------
    scipy.sparse.csr_matrix
        With global column indices, sorted within each row.

    Raises
    ------
    ValueError
        When ``n`` < 1, or ``rows`` is not a 1-D array of rows of the matrix.
    """
    return _laplacian_on((n, n, n * int(nprocs)), 27, rows)


def _hpcg_ranks(spec, nprocs):
    return 1 if nprocs is None else int(nprocs)


def grid_shape(spec, nprocs=None):
    """The structured grid (nx, ny, nz; x fastest) a spec's rows number, for the families
    that have one in 3D (poisson3d, poisson3d27, groundwater3d, hpcg), else None.

    Parameters
    ----------
    spec : str or GallerySpec
        The spec (parsed by :func:`parse_spec` when a string).
    nprocs : int, optional
        The number of ranks, hpcg's (1 when None).

    Returns
    -------
    tuple of int or None

    Raises
    ------
    ValueError
        When ``spec`` does not parse.

    Examples
    --------
    >>> from commsolve import gallery
    >>> gallery.grid_shape("hpcg:16", nprocs=4)
    (16, 16, 64)
    >>> gallery.grid_shape("poisson2d:4") is None
    True
    """
    spec = spec if isinstance(spec, GallerySpec) else parse_spec(spec)
    if spec.family in ("poisson3d", "poisson3d27", "groundwater3d"):
        return (_grid_n(spec),) * 3
    if spec.family == "hpcg":
        n = _grid_n(spec)
        return (n, n, n * _hpcg_ranks(spec, nprocs))
    return None


def _stencil_family(fn, dim):
    return (lambda s, rows, nprocs: fn(_grid_n(s), rows=rows), lambda s, nprocs: _grid_n(s) ** dim)


_FAMILIES = {
    "poisson2d": _stencil_family(poisson2d, 2),
    "poisson2d9": _stencil_family(poisson2d9, 2),
    "poisson3d": _stencil_family(poisson3d, 3),
    "poisson3d27": _stencil_family(poisson3d27, 3),
    "aniso2d": (
        lambda s, rows, nprocs: aniso2d(_grid_n(s), _number(s, "eps", 0.001), _number(s, "theta", 45.0), rows),
        lambda s, nprocs: _grid_n(s) ** 2,
    ),
    "random": (_random_build, _random_rows),
    "convdiff2d": (
        lambda s, rows, nprocs: convdiff2d(
            _grid_n(s), _number(s, "pe", 100.0), _number(s, "theta", 30.0), rows),
        lambda s, nprocs: _grid_n(s) ** 2,
    ),
    "kkt3d": (
        lambda s, rows, nprocs: kkt3d(_grid_n(s), _number(s, "alpha", 1.0), rows),
        lambda s, nprocs: 3 * _grid_n(s) ** 3,
    ),
    "elasticity3d": (
        lambda s, rows, nprocs: elasticity3d(_grid_n(s), _dofs(s, 3), rows),
        lambda s, nprocs: _dofs(s, 3) * _grid_n(s) ** 3,
    ),
    "dg3d": (
        lambda s, rows, nprocs: dg3d(_grid_n(s), _dofs(s, 16), rows),
        lambda s, nprocs: _dofs(s, 16) * _grid_n(s) ** 3,
    ),
    "hpcg": (
        lambda s, rows, nprocs: hpcg(_grid_n(s), _hpcg_ranks(s, nprocs), rows),
        lambda s, nprocs: _grid_n(s) ** 3 * _hpcg_ranks(s, nprocs),
    ),
    "groundwater3d": (
        lambda s, rows, nprocs: groundwater3d(_grid_n(s), _number(s, "contrast", 1e10),
                                              _whole(s, "seed", s.kwargs.get("seed", 0)),
                                              _whole(s, "tile", s.kwargs.get("tile", 64)), rows),
        lambda s, nprocs: _grid_n(s) ** 3,
    ),
}


def _dofs(spec, default):
    d = _whole(spec, "dofs", spec.kwargs.get("dofs", default))
    if d < 1:
        raise ValueError(f"'{spec.text}': dofs must be positive, got {d}")
    return d

_KNOWN_KEYS = {
    "aniso2d": {"n", "eps", "theta"},
    "random": {"rows", "rows_per_rank", "nnz_per_row", "seed"},
    "convdiff2d": {"n", "pe", "theta"},
    "kkt3d": {"n", "alpha"},
    "elasticity3d": {"n", "dofs"},
    "dg3d": {"n", "dofs"},
    "groundwater3d": {"n", "contrast", "seed", "tile"},
}


def _number(spec, key, default):
    """A finite float parameter of a spec (a clear error for 'abc', nan or inf)."""
    text = spec.kwargs.get(key, default)
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"'{spec.text}': {key} must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"'{spec.text}': {key} must be finite, got {text}")
    return value


def parse_spec(text):
    """Parse ``family:arg,...,key=value`` into a :class:`GallerySpec`.

    Parameters
    ----------
    text : str
        The spec: a family of the module's list and its arguments, or ``s2D9ptN`` (the same
        as ``poisson2d9:N``).

    Returns
    -------
    GallerySpec

    Raises
    ------
    ValueError
        For an unknown family or parameter, or arguments that are missing or malformed.

    Examples
    --------
    >>> from commsolve import gallery
    >>> gallery.parse_spec("s2D9pt2048")
    GallerySpec(family='poisson2d9', args=['2048'], kwargs={}, text='s2D9pt2048')
    """
    text = text.strip()
    m = re.fullmatch(r"s2D9pt(\d+)", text)
    if m:
        return GallerySpec("poisson2d9", [m.group(1)], {}, text)
    family, _, rest = text.partition(":")
    family = family.strip().lower()
    if family not in _FAMILIES:
        raise ValueError(f"unknown generator '{family}' in '{text}' (known: {', '.join(sorted(_FAMILIES))})")
    args, kwargs = [], {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        if "=" in part:
            k, v = (s.strip() for s in part.split("=", 1))
            if k not in _KNOWN_KEYS.get(family, {"n"}):
                raise ValueError(f"'{text}': unknown parameter '{k}' for {family}")
            kwargs[k] = v
        else:
            args.append(part)
    spec = GallerySpec(family, args, kwargs, text)
    try:
        spec.global_rows(nprocs=1)
    except (TypeError, ValueError) as e:
        raise ValueError(str(e) if "'" in str(e) else f"'{text}': {e}") from None
    return spec


def from_spec(text, rows=None, nprocs=None):
    """Build a matrix from a spec string; see the module docstring for the families.

    Parameters
    ----------
    text : str
        The spec (:func:`parse_spec`).
    rows : array_like of int, optional
        Global rows to build (default: all).
    nprocs : int, optional
        The number of ranks (``rows_per_rank``, and hpcg's ranks: 1 when None).

    Returns
    -------
    scipy.sparse.csr_matrix
        With global column indices.

    Raises
    ------
    ValueError
        When the spec does not parse, the rows would not fit this machine's memory, or
        ``rows`` is not valid.
    """
    return parse_spec(text).build(rows=rows, nprocs=nprocs)
