"""Distributed sparse products on :class:`ParCSR` matrices (issue 13; thesis Chapter 6).

``spgemm(A, B)`` fetches the rows of B that A's off-process columns name, as variable-length
records along a halo plan of the chosen strategy (``standard``, ``node-aware``,
``node-aware-2step`` or ``auto``), and multiplies locally. ``galerkin(A, P)`` is the
multigrid triple product P^T A P: A P as above, then each rank's P^T (A P) rows for coarse
entries it does not own travel back to their owners along P's halo plan in reverse and are
summed there. Neither ever holds a global matrix.

Example (``mpiexec -n 4 python -m mpi4py example.py``)::

    A = cs.ParCSR.from_spec("poisson2d:64", comm)
    C, info = cs.spgemm(A, A, strategy="node-aware", return_info=True)
    print(info["exchanges"][0]["recorded"])   # what the row exchange sent, per step
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from . import _core
from ._collective import agree, agree_args
from ._watchdog import watched
from .parcsr import ParCSR, check_strategy
from .stats import CommStats

__all__ = ["spgemm", "galerkin", "transpose_rows"]


def _same_comm(A, B):
    from mpi4py import MPI

    if MPI.Comm.Compare(A.comm, B.comm) not in (MPI.IDENT, MPI.CONGRUENT):
        raise ValueError("the matrices live on different communicators")


def _same_distribution(comm, a, b, what):
    """Collective: a CollectiveError naming ``what`` unless Distributions a and b give every
    rank the same indices in the same order."""
    agree(comm, None if a.same_share(b, comm.rank) else what)


def _exchange(kernel, plan, stats, halo):
    """The info of one row exchange along the halo plan of a matrix whose halo (global
    columns) is ``halo``, kept to check a reuse."""
    return {"kernel": kernel, "strategy": plan.strategy, "plan": plan, "recorded": CommStats(stats),
            "halo": np.asarray(halo)}


def _reused(reuse, mats):
    """Collective. The plans of an earlier call's info dict (``reuse``), one per exchange along
    the halo of each of ``mats`` — checked on every rank to be for the same halo — or None."""
    if reuse is None:
        return [None] * len(mats)
    ex = reuse.get("exchanges", []) if isinstance(reuse, dict) else []
    ok = len(ex) == len(mats) and all(np.array_equal(e.get("halo"), np.asarray(M.col_map)) for e, M in zip(ex, mats))
    agree(mats[0].comm, None if ok else "reuse= takes the info dict of an earlier product with the same matrices' "
          "structure (its plans are for their halos, which differ here)")
    return [e["plan"] for e in ex]


@watched("spgemm")
def spgemm(A, B, *, strategy="standard", spmv_strategy="standard", return_info=False, reuse=None):
    """Collective. C = A B as a ParCSR (rows distributed as A's, columns as B's).

    Parameters
    ----------
    A, B : ParCSR
        The factors, on the same (or a congruent) communicator, with
        ``A.shape[1] == B.shape[0]`` and B's rows distributed as A's columns.
    strategy : str, default "standard"
        Moves B's rows (the plan is built for A's halo pattern): ``"standard"``,
        ``"node-aware"``, ``"node-aware-2step"`` or ``"auto"``.
    spmv_strategy : str, default "standard"
        C's own halo-exchange strategy.
    return_info : bool, default False
        Also return a dict whose ``"exchanges"`` lists the row exchange's plan and recorded
        statistics.
    reuse : dict, optional
        That dict from an earlier product with the same A, whose plan is used again (a
        numeric re-setup; building a node-aware plan is itself collective).

    Returns
    -------
    C : ParCSR
        The product.
    info : dict
        Only with ``return_info`` (then ``(C, info)`` comes back): ``info["exchanges"]`` is a
        list of one dict, with the exchange's ``"kernel"`` (``"A B"``), ``"strategy"``,
        ``"plan"`` (CommPlan), ``"recorded"`` (CommStats) and ``"halo"`` (A's
        :attr:`~commsolve.ParCSR.col_map`, to check a reuse).

    Raises
    ------
    ValueError
        When A and B live on different communicators.
    CollectiveError
        On every rank when the ranks pass different arguments, ``strategy`` is unknown, the
        shapes do not match, or ``reuse`` is for matrices of another structure.
    """
    _same_comm(A, B)
    agree_args(A.comm, "spgemm", strategy=strategy, spmv_strategy=spmv_strategy, return_info=return_info,
               reuse=reuse is not None)
    check_strategy(A.comm, strategy)
    agree(A.comm, None if A.shape[1] == B.shape[0] else
          f"spgemm: A is {A.shape[0]} x {A.shape[1]}, B is {B.shape[0]} x {B.shape[1]}")
    (plan,) = _reused(reuse, [A])
    indptr, indices, data, plan, stats = _core.spgemm(A._core, B._core, A.comm.py2f(), strategy, plan)
    C = ParCSR._from_rows(indptr, indices, data, A.comm, row_dist=A.row_dist, col_dist=B.col_dist,
                          topology=A.topology, strategy=spmv_strategy)
    if not return_info:
        return C
    return C, {"exchanges": [_exchange("A B", plan, stats, A.col_map)]}


@watched("galerkin")
def galerkin(A, P, *, strategy="standard", spmv_strategy="standard", profile=None, return_info=False, reuse=None):
    """Collective. The coarse operator P^T A P as a ParCSR distributed as P's columns.

    Parameters
    ----------
    A : ParCSR
        The square operator, its rows and columns distributed alike.
    P : ParCSR
        The interpolation, on A's communicator, its rows distributed as A's.
    strategy : str, default "standard"
        The plan of both exchanges (the rows of P fetched for A P, the rows of P^T (A P)
        sent back to their owners).
    spmv_strategy : str, default "standard"
        The coarse operator's own (``auto`` priced with ``profile`` when given, see
        :meth:`ParCSR.from_local_rows`).
    profile : str, path or MachineProfile, optional
        The machine profile that prices ``spmv_strategy="auto"``.
    return_info : bool, default False
        Also return the exchanges' plans and recorded statistics, as in :func:`spgemm`.
    reuse : dict, optional
        As in :func:`spgemm` (same A and P structure).

    Returns
    -------
    C : ParCSR
        P^T A P, rows and columns distributed as P's columns.
    info : dict
        Only with ``return_info`` (then ``(C, info)`` comes back): ``info["exchanges"]``
        lists two exchanges as :func:`spgemm`'s, ``"A P"`` (along A's halo plan) and
        ``"P^T (A P)"`` (along P's, in reverse).

    Raises
    ------
    ValueError
        When A and P live on different communicators.
    CollectiveError
        On every rank when the ranks pass different arguments, ``strategy`` is unknown, the
        shapes do not match, A's columns or P's rows are not distributed as A's rows, or
        ``reuse`` is for matrices of another structure.
    """
    _same_comm(A, P)
    agree_args(A.comm, "galerkin", strategy=strategy, spmv_strategy=spmv_strategy, profile=profile,
               return_info=return_info, reuse=reuse is not None)
    check_strategy(A.comm, strategy)
    agree(A.comm, None if A.shape[0] == A.shape[1] == P.shape[0] else
          f"galerkin: A is {A.shape[0]} x {A.shape[1]}, P is {P.shape[0]} x {P.shape[1]}")
    # P^T (A P) pairs row i of A P (A's rows) with row i of P, and A P needs P's rows where
    # A's columns are: one distribution for all three.
    _same_distribution(A.comm, A.row_dist, A.col_dist, "galerkin: A's rows and columns must be distributed alike")
    _same_distribution(A.comm, A.row_dist, P.row_dist, "galerkin: P's rows must be distributed as A's")
    plan_ap, plan_rap = _reused(reuse, [A, P])
    indptr, indices, data, halo, plan_ap, stats_ap, plan_rap, stats_rap = _core.galerkin(
        A._core, P._core, A.comm.py2f(), strategy, plan_ap, plan_rap)
    core = _core.ParCsr.from_space_rows(indptr, indices, data, halo, P.col_dist, P.col_dist, A.topology,
                                        A.comm.py2f(), ParCSR._core_strategy(spmv_strategy, profile))
    C = ParCSR(core, A.comm, A.topology, P.col_dist, P.col_dist)._resolved(spmv_strategy, profile)
    if not return_info:
        return C
    return C, {"exchanges": [_exchange("A P", plan_ap, stats_ap, A.col_map),
                             _exchange("P^T (A P)", plan_rap, stats_rap, P.col_map)]}


@watched("transpose_rows")
def transpose_rows(A, strategy="standard", return_info=False):
    """Collective. This rank's rows of A^T (distributed as A's columns) as scipy CSR over
    global columns, stored zeros kept (as scipy's ``.T``): the owned columns' entries are
    transposed in place, the halo columns' travel to their owners along A's halo plan in
    reverse.

    Parameters
    ----------
    A : ParCSR
        The matrix.
    strategy : str, default "standard"
        The plan the halo columns' entries travel along.
    return_info : bool, default False
        Also return the exchange's plan and recorded statistics (the ``"exchanges"`` of
        :func:`spgemm`).

    Returns
    -------
    T : scipy.sparse.csr_matrix
        Shape ``(A.local_cols, A.shape[0])``.
    info : dict
        Only with ``return_info`` (then ``(T, info)`` comes back): ``info["exchanges"]``
        lists the exchange (``"A^T"``) as :func:`spgemm`'s.

    Raises
    ------
    CollectiveError
        On every rank when the ranks pass different arguments or ``strategy`` is unknown.
    """
    agree_args(A.comm, "transpose_rows", strategy=strategy, return_info=return_info)
    check_strategy(A.comm, strategy)
    indptr, indices, data, plan, stats = _core.transpose_rows(A._core, A.comm.py2f(), strategy)
    T = sp.csr_matrix((data, indices, indptr), shape=(A.local_cols, A.shape[0]))
    return (T, {"exchanges": [_exchange("A^T", plan, stats, A.col_map)]}) if return_info else T

