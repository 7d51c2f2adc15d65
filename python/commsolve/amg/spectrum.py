"""The largest eigenvalue of D^-1 A, estimated as pyamg does for symmetric A (Lanczos on
the similar D^-1/2 A D^-1/2): what smoothed aggregation's prolongator smoothing and the
Chebyshev smoother scale by. The start vector is hashed from the points' identities, so
the estimate is the same on any partition."""

from __future__ import annotations

import numpy as np

from ..krylov import dot as global_dot
from .classical import hash_uniform

__all__ = ["spectral_radius_dinv_a"]


def spectral_radius_dinv_a(A, diag, ids, steps=15):
    """Collective. The spectral radius of ``D^-1 A``, as pyamg estimates it for symmetric A.

    The largest Ritz value of ``steps`` Lanczos steps on ``D^-1/2 A D^-1/2`` (similar to
    ``D^-1 A``), from a start vector hashed from the points' identities (so the same on any
    partition).

    Parameters
    ----------
    A : ParCSR
        The operator, its rows and columns distributed alike.
    diag : ndarray
        This rank's diagonal of A.
    ids : ndarray of int
        The points' identities (the fine-grid indices they descend from).
    steps : int
        Lanczos steps, at most A's rows (fewer when the Krylov space is exhausted).

    Returns
    -------
    float
        The estimate.
    """
    def dot(u, v):
        return global_dot(A.comm, u, v)

    s = 1.0 / np.sqrt(np.abs(diag))
    q = hash_uniform(ids, 12345) + 0.5
    q /= np.sqrt(dot(q, q))
    q_prev, beta = np.zeros_like(q), 0.0
    alphas, betas = [], []
    for _ in range(min(steps, A.shape[0])):
        w = s * A.matvec(s * q) - beta * q_prev
        alpha = dot(w, q)
        w -= alpha * q
        alphas.append(alpha)
        beta = np.sqrt(max(dot(w, w), 0.0))
        if beta <= 1e-12 * abs(alpha):
            break
        betas.append(beta)
        q_prev, q = q, w / beta
    T = np.diag(alphas) + np.diag(betas[: len(alphas) - 1], 1) + np.diag(betas[: len(alphas) - 1], -1)
    return float(np.max(np.abs(np.linalg.eigvalsh(T))))
