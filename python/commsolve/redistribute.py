"""Agglomeration: a ParCSR's rows, and vectors over them, moved onto a subset of its ranks
(Nakajima's coarse-grid aggregation, CGA and hCGA; PETSc GAMG's process reduction; hypre's
coarse-level gathering).

The P ranks of the communicator fall into groups of ``g = ceil(P / m)`` consecutive ranks;
each group's first rank (its leader) receives the rows of the whole group, in their global
order, so a matrix whose rows were in global order across the ranks keeps that property on
the leaders. The move is the ParCSR ``R`` (rows distributed over the leaders, columns as the
source's rows, ``R[i, i] = 1``): a vector goes to the leaders by ``R x`` and back by
``R^T y``, a matrix by the Galerkin product ``R A R^T`` — the same plans, strategies,
recorded statistics and cost model as every other exchange, virtual-world capable. The
leaders get a sub-communicator to go on with; the other ranks get None.

Example::

    move = agglomeration(A, nranks=1)        # collective on A.comm
    A1 = move.matrix(A)                      # a ParCSR on move.subcomm (None off the leaders)
    y = move.gather(x)                       # the leaders' rows of x (empty elsewhere)
    x2 = move.scatter(y)                     # back on A's distribution
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ._collective import agree_args
from .partition import Distribution

__all__ = ["Redistribution", "agglomeration", "group_size"]


def group_size(nranks_from, nranks_to):
    """Consecutive ranks per group when ``nranks_from`` ranks agglomerate onto at most
    ``nranks_to``.

    Parameters
    ----------
    nranks_from : int
        The ranks the rows are on.
    nranks_to : int
        The most ranks they go to.

    Returns
    -------
    int
        ``ceil(nranks_from / nranks_to)``.

    Raises
    ------
    ValueError
        Unless ``1 <= nranks_to <= nranks_from``.
    """
    if not 1 <= int(nranks_to) <= int(nranks_from):
        raise ValueError(f"agglomeration onto {nranks_to} ranks: must be between 1 and the {nranks_from} ranks "
                         "the matrix lives on")
    return -(-int(nranks_from) // int(nranks_to))


def _target_distributions(dist, g):
    """The rows of ``dist`` with each group's rows on its leader (rank j g): over the source
    ranks, and over the leaders alone (leader j g is rank j there)."""
    P = dist.nranks
    if dist.is_contiguous:
        off = np.asarray(dist.offsets, dtype=np.int64)
        start = np.minimum(-(-np.arange(P + 1) // g) * g, P)  # the first leader at or after each rank
        return Distribution.from_offsets(off[start]), Distribution.from_offsets(off[np.r_[0:P:g, P]])
    group = np.asarray(dist.owners_of(np.arange(dist.global_size, dtype=np.int64)), dtype=np.int32) // g
    return Distribution.from_owners(group * g, P), Distribution.from_owners(group, -(-P // g))


@dataclass
class Redistribution:
    """A planned move of rows onto group leaders: ``R`` (a ParCSR on the source communicator)
    and ``subcomm``, the leaders' communicator (None on the other ranks).

    :func:`agglomeration` builds it.

    Parameters
    ----------
    R : ParCSR
        The move: rows distributed over the leaders, columns as the source's rows,
        ``R[i, i] = 1``.
    subcomm : mpi4py.MPI.Comm or None
        The leaders' communicator; None on the other ranks.
    group : int
        Consecutive ranks per group (see :func:`group_size`).
    sub_dist : Distribution
        The rows' Distribution over the leaders (ranks of ``subcomm``).
    """

    R: object
    subcomm: object
    group: int
    sub_dist: object  # the rows' Distribution over the leaders (ranks of subcomm)

    @property
    def comm(self):
        """The source communicator (``R``'s)."""
        return self.R.comm

    @property
    def is_leader(self):
        """Whether this rank is its group's leader (it has a ``subcomm``)."""
        return self.subcomm is not None

    def gather(self, x):
        """Collective on the source communicator. The leaders' entries of ``x``.

        Parameters
        ----------
        x : array_like
            This rank's part of ``x`` on the source distribution.

        Returns
        -------
        ndarray
            On a leader, its group's entries (in their global order); an empty array off the
            leaders.
        """
        return self.R.matvec(np.ascontiguousarray(x, dtype=np.float64))

    def scatter(self, y):
        """Collective on the source communicator. ``y`` back on the source distribution.

        Parameters
        ----------
        y : array_like
            The leaders' entries (as :meth:`gather` returns them), empty off them.

        Returns
        -------
        ndarray
            This rank's part on the source distribution.
        """
        return self.R.rmatvec(np.ascontiguousarray(y, dtype=np.float64))

    def matrix(self, A, strategy="standard", spmv_strategy="standard", return_info=False):
        """Collective on the source communicator. ``A`` moved to the leaders, by the
        distributed product ``R A R^T``.

        Parameters
        ----------
        A : ParCSR
            The matrix, rows and columns distributed as the source.
        strategy : str, default "standard"
            The product's exchanges' strategy.
        spmv_strategy : str, default "standard"
            The moved matrix's halo plan.
        return_info : bool, default False
            Also return the product's exchanges with their recorded statistics.

        Returns
        -------
        moved : ParCSR or None
            A ParCSR on ``subcomm`` (None off it).
        info : dict
            Only with ``return_info`` (then ``(moved, info)`` comes back): the product's
            exchanges, as :func:`~commsolve.products.galerkin` returns them.
        """
        from . import products
        from .parcsr import ParCSR

        Rt = _transpose_map(self.R)
        moved, info = products.galerkin(A, Rt, strategy=strategy, return_info=True)
        local = moved.local_matrix()
        out = None
        if self.subcomm is not None:
            topo = _sub_topology(A.topology, self.group)
            out = ParCSR.from_local_rows(local, self.subcomm, row_dist=self.sub_dist, topology=topo,
                                         strategy=spmv_strategy)
        return (out, info) if return_info else out


def _transpose_map(R):
    """R^T as a ParCSR (rows as the source distribution, columns the leaders'): the identity
    in global indices, built locally (no communication beyond the plan)."""
    from .parcsr import ParCSR

    own = R.col_dist.owned(R.comm.rank)
    local = sp.csr_matrix((np.ones(own.size), (np.arange(own.size), own)), shape=(own.size, R.shape[0]))
    return ParCSR.from_local_rows(local, R.comm, row_dist=R.col_dist, col_dist=R.row_dist, topology=R.topology,
                                  strategy=R.plan.strategy)


def _sub_topology(topology, g):
    """The leaders' node layout: each leader stays on its node (nodes without a leader
    dropped, the others renumbered in order)."""
    from .topology import make_topology

    _, relabelled = np.unique(np.asarray(topology.node_of_rank)[::g], return_inverse=True)
    return make_topology(nodes=relabelled.tolist())


def agglomeration(A, nranks, strategy="standard"):
    """Collective on ``A.comm``. The planned move of ``A``'s rows onto at most ``nranks``
    ranks (groups of ``ceil(P / nranks)`` consecutive ranks, each onto its first).

    Parameters
    ----------
    A : ParCSR
        The matrix whose rows move (over P ranks).
    nranks : int
        The most ranks the rows go to, between 1 and P.
    strategy : str, default "standard"
        The strategy its vector exchanges run with.

    Returns
    -------
    Redistribution

    Raises
    ------
    ValueError
        Unless ``1 <= nranks <= P`` (see :func:`group_size`).
    CollectiveError
        On every rank when the ranks pass different arguments or ``strategy`` is unknown.
    """
    from .parcsr import ParCSR

    comm = A.comm
    agree_args(comm, "agglomeration", nranks=nranks, strategy=strategy)
    g = group_size(comm.size, nranks)
    target, sub_dist = _target_distributions(A.row_dist, g)
    own = target.owned(comm.rank)
    local = sp.csr_matrix((np.ones(own.size), (np.arange(own.size), own)), shape=(own.size, A.shape[0]))
    R = ParCSR.from_local_rows(local, comm, row_dist=target, col_dist=A.row_dist, topology=A.topology,
                               strategy=strategy)
    leader = comm.rank % g == 0
    sub = comm.Split(0 if leader else _undefined(), comm.rank)
    return Redistribution(R, sub if leader else None, g, sub_dist)


def _undefined():
    from ._collective import mpi

    return mpi().UNDEFINED
