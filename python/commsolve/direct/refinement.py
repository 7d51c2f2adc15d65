"""Iterative refinement with the componentwise backward error, as SuperLU_DIST's ``pdgsrfs``.

After a solve, the residual ``r = b - A x`` is computed in working precision, a correction
solved with the same factors and added, while the componentwise backward error::

    berr = max_i |r_i| / (|A| |x| + |b|)_i

(Oettli-Prager; the smallest relative change of the entries of A and b for which x is an exact
solution) is above machine epsilon and at least halves every step, at most ``ITMAX`` steps.
Rows whose denominator is tiny use SuperLU's safe minimum so a zero row of b cannot divide
by zero; a row whose residual is exactly zero there contributes nothing (an equation that
holds exactly needs no change: b = 0 solved by x = 0 has backward error 0, not SuperLU's 1).
Every right-hand side is refined on its own; ``berr`` is reported per column.
"""

from __future__ import annotations

import numpy as np

__all__ = ["iterative_refinement", "ITMAX"]

ITMAX = 20  # pdgsrfs' limit


def iterative_refinement(solve, residual, abs_product, b, x, nz, allmax=lambda v: v, max_steps=ITMAX):
    """Refine ``x`` (this rank's rows, shape (n_local, nrhs), updated in place) for ``b``.

    Collective when ``allmax`` is (and ``residual`` and ``abs_product`` are): every rank
    calls it with its own rows.

    Parameters
    ----------
    solve : callable
        ``solve(r)``: the correction for residuals ``r`` (columns).
    residual : callable
        ``residual(x, cols)``: ``b - A x`` for columns ``cols`` of b.
    abs_product : callable
        ``abs_product(v)``: ``|A| v``.
    b : ndarray
        This rank's rows of the right-hand sides, shape (n_local, nrhs).
    x : ndarray
        This rank's rows of the solution, shape (n_local, nrhs), updated in place.
    nz : int
        The largest number of entries in a row of A, plus one.
    allmax : callable
        ``allmax(v)``: the elementwise maximum of ``v`` over the ranks (collective; the
        identity in serial, the default).
    max_steps : int
        At most this many refinement steps (default :data:`ITMAX`); 0 measures berr only.

    Returns
    -------
    x : ndarray
        The refined ``x`` (the array given).
    berr : ndarray
        The componentwise backward error per right-hand side; NaN where x or r is.
    steps : ndarray of int
        The refinement steps per right-hand side.
    """
    eps, safmin = np.finfo(float).eps, np.finfo(float).tiny
    safe1 = nz * safmin
    safe2 = safe1 / eps
    nrhs = b.shape[1]
    berr = np.zeros(nrhs)
    steps = np.zeros(nrhs, dtype=int)
    lstres = np.full(nrhs, 3.0)
    active = np.arange(nrhs)
    while active.size:
        r = residual(x[:, active], active)
        denom = abs_product(np.abs(x[:, active])) + np.abs(b[:, active])
        ratio = np.where(denom > safe2, np.abs(r) / np.where(denom > safe2, denom, 1.0),
                         np.where(r == 0, 0.0, (np.abs(r) + safe1) / (denom + safe1)))
        s = allmax(ratio.max(axis=0) if ratio.shape[0] else np.zeros(active.size))
        berr[active] = s
        go = (s > eps) & (2.0 * s <= lstres[active]) & (steps[active] < max_steps)
        active = active[go]
        if not active.size:
            break
        x[:, active] += solve(r[:, go])
        lstres[active] = s[go]
        steps[active] += 1
    return x, berr, steps
