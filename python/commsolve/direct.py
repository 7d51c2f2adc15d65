"""Sparse direct solvers: supernodal LU without pivoting (serial, multifrontal).

The ordering keeps the nested-dissection separator tree (``ordering="tree"``), so the
factor's supernodes map onto the 2D and 3D process layouts of the distributed triangular
solves. Static pivoting as SuperLU_DIST: a zero pivot is an error, tiny pivots can be
replaced (``replace_tiny=True``).

Example
-------
>>> from commsolve import gallery, direct
>>> import numpy as np
>>> A = gallery.poisson2d9(50)
>>> lu = direct.SparseLU(A)
>>> x = lu.solve(np.ones(A.shape[0]))
>>> bool(np.linalg.norm(A @ x - 1) < 1e-10 * np.sqrt(A.shape[0]))
True
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from . import _core
from .workloads import supernodal_structure

__all__ = ["SparseLU"]


class SparseLU:
    """Factor ``A`` (square, pattern made symmetric) once; :meth:`solve` many times.

    Attributes: ``structure`` (supernodes and separator tree), ``nnz_LU``,
    ``tiny_pivots_replaced``, ``flops``, and the time of each phase: ``ordering_seconds``
    (nested dissection and symbolic factorization) and ``numeric_seconds``.
    """

    def __init__(self, A, max_supernode=64, ordering="tree", levels=4, relax=0.3, relax_subtree=16,
                 replace_tiny=False, zero_pivot=1e-14):
        A = sp.csr_matrix(A, dtype=np.float64)
        if A.shape[0] != A.shape[1]:
            raise ValueError(f"matrix must be square, got {A.shape[0]} x {A.shape[1]}")
        t0 = time.perf_counter()
        self.structure = supernodal_structure(A, max_supernode, ordering, levels, relax, relax_subtree)
        self.ordering_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        perm = self.structure.perm
        P = A[perm][:, perm].tocsr()
        P.sort_indices()
        T = P.T.tocsr()
        T.sort_indices()
        i32 = np.int32
        self._core = _core.SupernodalLU(
            self.structure.sn_start.astype(np.int64), self.structure.rows_ptr.astype(np.int64),
            self.structure.rows.astype(i32), P.indptr.astype(i32), P.indices.astype(i32), P.data,
            T.indptr.astype(i32), T.indices.astype(i32), T.data, float(zero_pivot), bool(replace_tiny))
        self.numeric_seconds = time.perf_counter() - t0
        self.shape = A.shape

    @property
    def nnz_LU(self):
        return self._core.nnz_LU

    @property
    def tiny_pivots_replaced(self):
        return self._core.tiny_pivots_replaced

    @property
    def flops(self):
        return self._core.flops

    def solve(self, b):
        """``x`` with ``A x = b``; ``b`` of shape (n,) or (n, nrhs)."""
        b = np.asarray(b, dtype=np.float64)
        one = b.ndim == 1
        B = b.reshape(-1, 1) if one else b
        if B.shape[0] != self.shape[0]:
            raise ValueError(f"b has {B.shape[0]} rows, the matrix {self.shape[0]}")
        perm = self.structure.perm
        X = np.asfortranarray(B[perm])
        self._core.solve(X)
        out = np.empty_like(X)
        out[perm] = X
        return out.ravel() if one else out
