"""ParCSR: a row-distributed sparse matrix over an mpi4py communicator.

Example (run with ``mpiexec -n 4 python -m mpi4py example.py``)::

    from mpi4py import MPI
    import numpy as np
    import commsolve as cs

    comm = MPI.COMM_WORLD
    A = cs.ParCSR.from_spec("poisson2d:512", comm, partition="contiguous", topology=2)
    x = np.ones(A.local_cols)
    y = A.matvec(x)                  # this rank's rows of A @ x
    print(A.planned_stats())         # messages and bytes of one halo exchange
"""

from __future__ import annotations

import os

import numpy as np
import scipy.sparse as sp

from . import _core
from ._collective import agree, agree_args, mpi, run_agreed
from ._watchdog import watched
from .gallery import GallerySpec, parse_spec
from .io import read_rows_parallel
from .partition import METHODS, Distribution, owners, partition
from .stats import CommStats
from .topology import Topology, make_topology

__all__ = ["ParCSR", "resolve_topology"]


def resolve_topology(topology, comm):
    """Collective. The node layout a matrix on ``comm`` gets from a ``topology=`` argument.

    Parameters
    ----------
    topology : None, int or Topology
        ``None``: the real node layout of ``comm``; an int: that many virtual ranks per node
        (SMP layout); a Topology: checked against the communicator's size.
    comm : mpi4py.MPI.Comm
        The communicator the matrix lives on.

    Returns
    -------
    Topology
        A rank -> node map of ``comm.size`` ranks.

    Raises
    ------
    ValueError
        For a Topology of another size than the communicator's, or a virtual layout that
        :func:`~commsolve.topology.make_topology` refuses.
    """
    if topology is None:
        return make_topology(comm)
    if isinstance(topology, Topology):
        if topology.size != comm.size:
            raise ValueError(f"topology has {topology.size} ranks, the communicator {comm.size}")
        return topology
    return make_topology(comm, ppn=int(topology))


def _distribution(how, n, comm, global_matrix=None, seed=0):
    """The row Distribution for ``how`` (a method name or a Distribution). Collective.

    METIS runs on rank 0 only (it needs the whole graph; ``global_matrix()`` builds it
    there) and its owners are broadcast."""
    if isinstance(how, Distribution):
        if how.global_size != n or how.nranks != comm.size:
            raise ValueError(
                f"distribution covers {how.global_size} rows on {how.nranks} ranks; "
                f"need {n} rows on {comm.size}"
            )
        return how
    if how not in METHODS:
        raise ValueError(f"unknown partition method '{how}' (known: {', '.join(METHODS)})")
    if comm.size > n:
        raise ValueError(f"cannot partition {n} rows over {comm.size} ranks (more ranks than rows)")
    if how != "metis":
        return partition(n, comm.size, how)
    own = run_agreed(comm, lambda: owners(global_matrix(), comm.size, "metis", seed) if comm.rank == 0 else None)
    return Distribution.from_owners(comm.bcast(own, root=0), comm.size)


# How halo values travel (C++ strategy_names): standard, node-aware, node-aware-2step, auto.
STRATEGIES = tuple(_core.strategy_names())


def check_strategy(comm, strategy):
    """Collective. A CollectiveError on every rank unless ``strategy`` names a communication
    strategy (:data:`STRATEGIES`).

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        The communicator; every rank of it calls.
    strategy : str
        The name to check.

    Raises
    ------
    CollectiveError
        On every rank, when ``strategy`` is unknown on some rank.
    """
    agree(comm, None if strategy in STRATEGIES else
          f"unknown communication strategy '{strategy}' (known: {', '.join(STRATEGIES)})")


class ParCSR:
    """Row-distributed sparse matrix: on-process block, off-process block split on-node /
    off-node, and a halo-exchange plan run by persistent MPI requests.

    Build it with :meth:`from_global`, :meth:`from_local_rows`, :meth:`from_spec` or
    :meth:`from_file`; all are collective on ``comm``.

    Attributes
    ----------
    comm : mpi4py.MPI.Comm
        The communicator the matrix lives on.
    topology : Topology
        The ranks' node layout.
    row_dist, col_dist : Distribution
        Which rank owns each row, and each column (vector entry).
    shape : tuple of int
        The whole matrix's (rows, columns).
    """

    def __init__(self, core, comm, topology, row_dist, col_dist):
        self._core = core
        self.comm = comm
        self.topology = topology
        self.row_dist = row_dist
        self.col_dist = col_dist
        self.shape = (row_dist.global_size, col_dist.global_size)

    # ---- construction ---------------------------------------------------------------
    @classmethod
    @watched("ParCSR.from_local_rows")
    def from_local_rows(cls, local, comm, *, row_dist=None, col_dist=None, topology=None, strategy="standard",
                        profile=None):
        """Collective. A matrix from every rank's own rows (no rank holds the whole matrix).

        Copies the arrays.

        Parameters
        ----------
        local : scipy sparse matrix or 2-D array
            This rank's rows (global column indices, shape ``(local rows, global columns)``),
            in ``row_dist``'s local order. Real values only.
        comm : mpi4py.MPI.Comm
            The communicator; every rank of it calls.
        row_dist : Distribution, optional
            Which rank owns each row. Defaults to contiguous blocks of the ranks' row counts
            in rank order.
        col_dist : Distribution, optional
            Which rank owns each column (vector entry). Defaults to ``row_dist`` (a square
            matrix); a rectangular matrix needs one.
        topology : None, int or Topology, optional
            The ranks' node layout, as :func:`resolve_topology` takes it: None (the default),
            ``comm``'s real one; an int, that many virtual ranks per node.
        strategy : str, default "standard"
            How halo values travel: ``"standard"``, ``"node-aware"``, ``"node-aware-2step"``
            or ``"auto"``. ``strategy="auto"`` with a machine ``profile`` keeps the strategy
            whose plans the cost model prices cheapest; without one, the strategy with the
            fewest inter-node messages on the busiest rank.
        profile : str, path or MachineProfile, optional
            The machine profile (name, path or MachineProfile) that prices ``"auto"``.

        Returns
        -------
        ParCSR

        Raises
        ------
        ValueError
            On the ranks whose ``local`` holds complex values (ParCSR holds real values).
        CollectiveError
            On every rank when the ranks pass different arguments, ``row_dist`` is for another
            number of ranks or gives this rank another number of rows, the matrix is not
            square and no ``col_dist`` is given, a column index is out of range, ``col_dist``
            covers another number of columns, ``topology`` does not fit ``comm``, or
            ``strategy`` is unknown.

        Examples
        --------
        >>> import scipy.sparse as sp
        >>> from mpi4py import MPI
        >>> import commsolve as cs
        >>> comm = MPI.COMM_WORLD
        >>> n = 8
        >>> rows = cs.Distribution.contiguous(n, comm.size).owned(comm.rank)
        >>> G = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n), format="csr")
        >>> A = cs.ParCSR.from_local_rows(G[rows], comm)   # rows cut from G here; usually built locally
        >>> A.shape, A.global_nnz()
        ((8, 8), 22)
        """
        agree_args(comm, "ParCSR.from_local_rows", strategy=strategy, profile=profile, topology=topology,
                   row_dist=row_dist, col_dist=col_dist)
        if np.iscomplexobj(local.data if sp.issparse(local) else np.asarray(local)):
            raise ValueError("the matrix is complex; ParCSR holds real values")
        local = sp.csr_matrix(local)
        if row_dist is None:
            counts = comm.allgather(local.shape[0])
            row_dist = Distribution.from_offsets(np.concatenate([[0], np.cumsum(counts)]).astype(np.int64))
        ncols = comm.allreduce(local.shape[1], op=mpi().MAX)
        err = None
        if row_dist.nranks != comm.size:
            err = f"row distribution is for {row_dist.nranks} ranks, communicator has {comm.size}"
        elif local.shape[0] != row_dist.local_size(comm.rank):
            err = f"{local.shape[0]} local rows given, the distribution assigns {row_dist.local_size(comm.rank)}"
        elif col_dist is None and ncols != row_dist.global_size:
            err = (
                f"matrix is {row_dist.global_size} x {ncols}, not square: pass col_dist "
                "for a rectangular matrix"
            )
        elif local.nnz and (local.indices.min() < 0 or local.indices.max() >= ncols):
            err = "column index out of range"
        agree(comm, err)
        col_dist = row_dist if col_dist is None else col_dist
        agree(comm, None if col_dist.global_size == ncols else
              f"column distribution covers {col_dist.global_size} columns, the matrix has {ncols}")
        topo = run_agreed(comm, resolve_topology, topology, comm)
        check_strategy(comm, strategy)
        return cls._from_rows(local.indptr, local.indices, local.data, comm, row_dist=row_dist, col_dist=col_dist,
                              topology=topo, strategy=strategy, profile=profile)

    def redistributed(self, row_dist, topology=None):
        """Collective. The same square matrix with its rows (and columns) distributed by
        ``row_dist``, each row moved from its owner to its new one in one all-to-all (no rank
        gathers the matrix).

        Parameters
        ----------
        row_dist : Distribution
            The new distribution of the rows, and of the columns.
        topology : None, int or Topology, optional
            The new matrix's node layout (as :meth:`from_local_rows` takes it); defaults to
            this one's.

        Returns
        -------
        ParCSR
            A new matrix, with the standard halo strategy.

        Raises
        ------
        CollectiveError
            On every rank when ``row_dist`` covers another number of rows or ranks than the
            matrix has, or as :meth:`from_local_rows`.
        """
        comm = self.comm
        agree(comm, None if (row_dist.global_size, row_dist.nranks) == (self.shape[0], comm.size) else
              f"the new row distribution covers {row_dist.global_size} rows on {row_dist.nranks} ranks; the matrix "
              f"has {self.shape[0]} rows on {comm.size}")
        M, rows = self.local_matrix(), np.asarray(self.owned_rows(), dtype=np.int64)
        to = np.asarray(row_dist.owners_of(rows), dtype=np.int64) if rows.size else np.zeros(0, dtype=np.int64)
        order = np.argsort(to, kind="stable")  # rows grouped by their new owner
        cuts = np.searchsorted(to[order], np.arange(comm.size + 1))
        got = comm.alltoall([(rows[order[a:b]], M[order[a:b]]) for a, b in zip(cuts[:-1], cuts[1:])])
        arrived = np.concatenate([g for g, _ in got]).astype(np.int64)
        stacked = sp.vstack([m for _, m in got], format="csr") if arrived.size else sp.csr_matrix((0, self.shape[1]))
        mine = np.asarray(row_dist.owned(comm.rank), dtype=np.int64)
        order = np.argsort(arrived, kind="stable")
        local = stacked[order[np.searchsorted(arrived[order], mine)]] if mine.size else stacked[:0]
        return ParCSR.from_local_rows(local, comm, row_dist=row_dist,
                                      topology=self.topology if topology is None else topology)

    @classmethod
    def _from_rows(cls, indptr, indices, data, comm, *, row_dist, col_dist, topology, strategy="standard",
                   profile=None):
        """Collective. From this rank's rows as CSR arrays over global columns, built by the
        library (a product's, an interpolation's: no copy when they are int64 and float64
        already; the C++ constructor checks the columns' range), with the distributions and
        the resolved topology given; ``strategy`` and ``profile`` as for
        :meth:`from_local_rows`."""
        core = _core.ParCsr(np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int64),
                            np.ascontiguousarray(data, dtype=np.float64), row_dist, col_dist, topology, comm.py2f(),
                            cls._core_strategy(strategy, profile))
        return cls(core, comm, topology, row_dist, col_dist)._resolved(strategy, profile)

    @staticmethod
    def _core_strategy(strategy, profile):
        """The strategy a matrix built in C++ gets its plan for: ``"auto"`` priced with a
        machine ``profile`` is chosen afterwards (:meth:`_resolved`), on a standard plan."""
        return "standard" if strategy == "auto" and profile is not None else strategy

    def _resolved(self, strategy, profile):
        """Collective. This matrix, built with :meth:`_core_strategy`, with ``"auto"`` chosen
        by ``profile`` when that was what was asked."""
        return self.with_strategy("auto", profile) if strategy == "auto" and profile is not None else self

    @watched("ParCSR.with_strategy")
    def with_strategy(self, strategy, profile=None):
        """Collective. This matrix with its halo plan built for ``strategy`` (the blocks
        copied, the halo pattern kept: no all-to-all).

        Parameters
        ----------
        strategy : str
            ``"standard"``, ``"node-aware"``, ``"node-aware-2step"`` or ``"auto"``. ``"auto"``
            with a machine ``profile`` keeps the strategy whose plan the cost model prices
            cheapest; without one, the strategy with the fewest inter-node messages on the
            busiest rank.
        profile : str, path or MachineProfile, optional
            The machine profile that prices ``"auto"``.

        Returns
        -------
        ParCSR
            A new matrix; this one is left as it is.

        Raises
        ------
        CollectiveError
            On every rank when the ranks pass different arguments or ``strategy`` is unknown.
        """
        agree_args(self.comm, "ParCSR.with_strategy", strategy=strategy, profile=profile)
        check_strategy(self.comm, strategy)
        if strategy == "auto" and profile is not None:
            from .model import CostModel

            cost = run_agreed(self.comm, CostModel, profile)
            priced = [(cost.price_mpi(self.comm, B.plan, self.topology), B)
                      for B in map(self.with_strategy, ("standard", "node-aware-2step", "node-aware"))]
            return min(priced, key=lambda tb: tb[0])[1]
        core = self._core.with_strategy(self.comm.py2f(), strategy)
        return ParCSR(core, self.comm, self.topology, self.row_dist, self.col_dist)

    @classmethod
    @watched("ParCSR.from_global")
    def from_global(cls, A, comm, *, partition="contiguous", topology=None, strategy="standard", seed=0,
                    profile=None):
        """Collective. Every rank passes the same square global matrix ``A`` and keeps its
        rows.

        Parameters
        ----------
        A : scipy sparse matrix or 2-D array
            The same square matrix on every rank (checked); real values only.
        comm : mpi4py.MPI.Comm
            The communicator; every rank of it calls.
        partition : str or Distribution, default "contiguous"
            ``"contiguous"``, ``"strided"``, ``"metis"`` or a Distribution. METIS runs on
            rank 0 only and its owners are broadcast.
        topology : None, int or Topology, optional
            As for :meth:`from_local_rows`.
        strategy : str, default "standard"
            As for :meth:`from_local_rows`.
        seed : int, default 0
            The seed of the METIS partition (the other methods do not use it).
        profile : str, path or MachineProfile, optional
            As for :meth:`from_local_rows`.

        Returns
        -------
        ParCSR
            Rows distributed by ``partition``, columns alike.

        Raises
        ------
        CollectiveError
            On every rank when ``A`` is not a sparse matrix or a 2D array on some rank, the
            ranks pass different arguments (a different ``A`` included), ``A`` is not square,
            ``partition`` names no method or is a Distribution of other sizes, or there are
            more ranks than rows; and as :meth:`from_local_rows`.
        ValueError
            When ``A`` holds complex values.

        Examples
        --------
        >>> import numpy as np
        >>> import scipy.sparse as sp
        >>> from mpi4py import MPI
        >>> import commsolve as cs
        >>> comm = MPI.COMM_WORLD
        >>> G = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(8, 8))
        >>> A = cs.ParCSR.from_global(G, comm, partition="strided")
        >>> A.shape, A.global_nnz()
        ((8, 8), 22)
        >>> y = A.matvec(np.ones(A.local_cols))   # this rank's rows of G @ 1
        >>> A.gather(y)                           # the whole vector on rank 0 (None elsewhere)
        array([1., 0., 0., 0., 0., 0., 0., 1.])
        """
        try:
            A, error = sp.csr_matrix(A), None
        except Exception as e:  # noqa: BLE001 -- agreed below: no rank is left waiting
            error = f"A must be a sparse matrix or a 2D array on every rank ({type(e).__name__}: {e})"
        agree(comm, error, where="ParCSR.from_global")
        agree_args(comm, "ParCSR.from_global", A=A, partition=partition, seed=seed, strategy=strategy,
                   topology=topology, profile=profile)
        agree(comm, None if A.shape[0] == A.shape[1] else f"matrix must be square, got {A.shape[0]} x {A.shape[1]}")
        dist = run_agreed(comm, _distribution, partition, A.shape[0], comm, lambda: A, seed)
        local = A[dist.owned(comm.rank)]
        return cls.from_local_rows(local, comm, row_dist=dist, topology=topology, strategy=strategy, profile=profile)

    @classmethod
    @watched("ParCSR.from_spec")
    def from_spec(cls, spec, comm, *, partition="contiguous", topology=None, strategy="standard", seed=0,
                  profile=None):
        """Collective. A gallery matrix (``"poisson2d:512"``...), each rank generating only
        its own rows (METIS needs the whole graph on rank 0).

        Parameters
        ----------
        spec : str or GallerySpec
            The generator spec (see :mod:`commsolve.gallery`), the same on every rank.
        comm : mpi4py.MPI.Comm
            The communicator; every rank of it calls.
        partition : str or Distribution, default "contiguous"
            As for :meth:`from_global`.
        topology : None, int or Topology, optional
            As for :meth:`from_local_rows`.
        strategy : str, default "standard"
            As for :meth:`from_local_rows`.
        seed : int, default 0
            As for :meth:`from_global`.
        profile : str, path or MachineProfile, optional
            As for :meth:`from_local_rows`.

        Returns
        -------
        ParCSR

        Raises
        ------
        CollectiveError
            On every rank when the ranks pass different arguments, ``spec`` is not a valid
            spec, a rank's share of the rows would not fit this machine's memory while built
            (checked before anything is allocated), for a bad ``partition`` as in
            :meth:`from_global`, or as :meth:`from_local_rows`.

        Examples
        --------
        >>> from mpi4py import MPI
        >>> import commsolve as cs
        >>> comm = MPI.COMM_WORLD
        >>> A = cs.ParCSR.from_spec("poisson2d:16", comm)   # 5-point Laplacian, 16 x 16 grid
        >>> A.shape, A.global_nnz()
        ((256, 256), 1216)
        """
        agree_args(comm, "ParCSR.from_spec", spec=str(spec), partition=partition, seed=seed)
        spec = run_agreed(comm, lambda: spec if isinstance(spec, GallerySpec) else parse_spec(spec))
        n = spec.global_rows(comm.size)
        run_agreed(comm, spec.check_fits, -(-n // comm.size))  # before any array of n entries is made
        dist = run_agreed(comm, _distribution, partition, n, comm, lambda: spec.build(nprocs=comm.size), seed)
        local = spec.build(rows=dist.owned(comm.rank), nprocs=comm.size)
        return cls.from_local_rows(local, comm, row_dist=dist, topology=topology, strategy=strategy, profile=profile)

    @classmethod
    @watched("ParCSR.from_file")
    def from_file(cls, path, comm, *, partition="contiguous", topology=None, strategy="standard", seed=0,
                  profile=None):
        """Collective. A square Matrix Market matrix read in parallel: every rank parses a
        byte range of the file and entries travel to their row's owner. For METIS, the
        structure is first gathered on rank 0 to partition it, then the file is read again.

        Parameters
        ----------
        path : str or os.PathLike
            The file (coordinate format; symmetric and skew-symmetric ones expanded to both
            triangles), the same on every rank.
        comm : mpi4py.MPI.Comm
            The communicator; every rank of it calls.
        partition : str or Distribution, default "contiguous"
            As for :meth:`from_global`.
        topology : None, int or Topology, optional
            As for :meth:`from_local_rows`.
        strategy : str, default "standard"
            As for :meth:`from_local_rows`.
        seed : int, default 0
            As for :meth:`from_global`.
        profile : str, path or MachineProfile, optional
            As for :meth:`from_local_rows`.

        Returns
        -------
        ParCSR

        Raises
        ------
        CollectiveError
            On every rank when the ranks pass different arguments, the file cannot be read
            (the message names the file and the line, as :func:`~commsolve.io.read_rows_parallel`),
            the matrix is not square, for a bad ``partition`` as in :meth:`from_global`, or as
            :meth:`from_local_rows`.

        Examples
        --------
        >>> import scipy.sparse as sp
        >>> from mpi4py import MPI
        >>> import commsolve as cs
        >>> comm = MPI.COMM_WORLD
        >>> G = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(8, 8))
        >>> if comm.rank == 0:
        ...     cs.mmwrite("laplace1d.mtx", G, symmetry="symmetric")   # 15 entries stored
        >>> comm.Barrier()
        >>> A = cs.ParCSR.from_file("laplace1d.mtx", comm, partition="metis")
        >>> A.shape, A.global_nnz()
        ((8, 8), 22)
        """
        path = os.fspath(path)
        agree_args(comm, "ParCSR.from_file", path=path, partition=partition, seed=seed)
        if partition == "metis":
            h, r, c, _ = read_rows_parallel(path, comm, lambda h: Distribution.contiguous(h.nrows, comm.size).owners_of)
            pieces = comm.gather((r, c), root=0)

            def graph():
                rr = np.concatenate([p[0] for p in pieces])
                cc = np.concatenate([p[1] for p in pieces])
                return sp.csr_matrix((np.ones(rr.size), (rr, cc)), shape=(h.nrows, h.ncols))

            agree(comm, None if h.nrows == h.ncols else f"{path}: matrix must be square, got {h.nrows} x {h.ncols}")
            partition = run_agreed(comm, _distribution, "metis", h.nrows, comm, graph, seed)
        state = {}

        def owners_fn(h):
            if h.nrows != h.ncols:
                raise ValueError(f"{path}: matrix must be square, got {h.nrows} x {h.ncols}")
            state["dist"] = _distribution(partition, h.nrows, comm)
            return state["dist"].owners_of

        h, rows, cols, vals = run_agreed(comm, read_rows_parallel, path, comm, owners_fn)
        dist = state["dist"]
        local_row = _local_positions(dist, comm.rank, rows)
        local = sp.csr_matrix((vals, (local_row, cols)), shape=(dist.local_size(comm.rank), h.ncols))
        return cls.from_local_rows(local, comm, row_dist=dist, topology=topology, strategy=strategy, profile=profile)

    # ---- products -------------------------------------------------------------------
    @watched("ParCSR.matvec")
    def matvec(self, x, out=None):
        """Collective. This rank's rows of ``A @ x``. The halo exchange overlaps the
        on-process product.

        Parameters
        ----------
        x : array_like
            This rank's owned entries of ``x`` (``local_cols`` values).
        out : ndarray, optional
            Where to write the result: a float64 C-contiguous array of ``local_rows`` values,
            not sharing memory with x. Default: a new array.

        Returns
        -------
        ndarray
            This rank's ``local_rows`` values of ``A @ x`` (``out`` when given).

        Raises
        ------
        ValueError
            On this rank only, for an ``x`` that is complex, not 1-D, of another length or not
            numbers, or an ``out`` that is not as above.
        """
        x = _vector(x, self.local_cols, "x")
        y = _output(out, self.local_rows, x)
        self._core.matvec(x, y)
        return y

    @watched("ParCSR.rmatvec")
    def rmatvec(self, x, out=None):
        """Collective. This rank's entries of ``A.T @ x``; the off-process contributions
        travel back along the plan in reverse.

        Parameters
        ----------
        x : array_like
            This rank's entries of ``x`` (``local_rows`` values).
        out : ndarray, optional
            Where to write the result: a float64 C-contiguous array of ``local_cols`` values,
            not sharing memory with x. Default: a new array.

        Returns
        -------
        ndarray
            This rank's ``local_cols`` values of ``A.T @ x`` (``out`` when given).

        Raises
        ------
        ValueError
            On this rank only, as :meth:`matvec`.
        """
        x = _vector(x, self.local_rows, "x")
        y = _output(out, self.local_cols, x)
        self._core.rmatvec(x, y)
        return y

    @watched("ParCSR.exchange")
    def exchange(self, x, out=None):
        """Collective. The halo (ghost) values for this rank's owned entries ``x``: the
        values of ``x`` owned elsewhere that this rank's rows use, in :attr:`col_map` order.
        Runs the plan once (it is counted in the recorded statistics).

        Parameters
        ----------
        x : array_like
            This rank's owned entries (``local_cols`` values).
        out : ndarray, optional
            Where to write the halo: a float64 C-contiguous array of ``plan.n_halo`` values
            (one per :attr:`col_map` entry), not sharing memory with x. Default: a new array.

        Returns
        -------
        ndarray
            The halo values, in :attr:`col_map` order (``out`` when given).

        Raises
        ------
        ValueError
            On this rank only, as :meth:`matvec`.
        """
        x = _vector(x, self.local_cols, "x")
        halo = _output(out, self.plan.n_halo, x)
        self._core.exchange(x, halo)
        return halo

    def timed_exchanges(self, x, repeat):
        """Collective. ``repeat`` halo exchanges, each after a barrier, timed in C++ (no
        Python between the clock readings). They count in the recorded statistics.

        Parameters
        ----------
        x : array_like
            This rank's owned entries (``local_cols`` values).
        repeat : int
            How many exchanges (at least 1).

        Returns
        -------
        ndarray
            This rank's seconds for each exchange, ``repeat`` float64 values (take the largest
            over ranks for the exchange's time).

        Raises
        ------
        ValueError
            For an ``x`` as :meth:`matvec` refuses it, or ``repeat`` below 1.
        """
        return self._core.timed_exchanges(_vector(x, self.local_cols, "x"), self.comm.py2f(), int(repeat))

    def __matmul__(self, x):
        return self.matvec(x)

    def aslinearoperator(self):
        """This matrix as a scipy ``LinearOperator`` on this rank's part of the vectors.

        Returns
        -------
        DistributedOperator
            Shape (``local_rows``, ``local_cols``); ``matvec`` is :meth:`matvec` and
            ``rmatvec`` :meth:`rmatvec`, both collective. On one rank scipy's solvers take
            it as they take the matrix; on any number, :mod:`commsolve.krylov`'s do.
        """
        from .krylov import DistributedOperator

        return DistributedOperator(self.comm, (self.local_rows, self.local_cols), self.matvec, self.rmatvec,
                                   global_shape=self.shape, name="ParCSR", rows=self.owned_rows(),
                                   cols=self.owned_cols())

    def set_format(self, format):
        """Local. How :meth:`matvec` and the Gauss-Seidel sweeps of the multigrid smoothers
        stream this rank's on-process block (the off-process blocks stay CSR): ``"csr"``, or
        that block also kept in SELL-C-sigma storage (Kreutzer et al. 2014): ``"ell"``,
        ``"sliced-ell"`` (SELL-8-1, Nakajima's sliced ELL), ``"sell"`` (SELL-8-256) or
        ``"sell-C-SIGMA"``; or in DIA storage, ``"dia"`` (the distinct diagonals' values row
        by row, no column indices: stencils and banded matrices; a ValueError for a block
        with more than 64 diagonals or more than twice its entries stored). The product is
        the same to rounding; only the kernel and its memory traffic (:attr:`spmv_bytes`)
        change. A Gauss-Seidel sweep takes the rows one by one in storage order: ELL's
        column-major storage of all rows makes it slow (every entry a row apart).

        Parameters
        ----------
        format : str
            ``"csr"``, ``"ell"``, ``"sliced-ell"``, ``"sell"``, ``"sell-C-SIGMA"`` (C and
            SIGMA numbers, e.g. ``"sell-4-64"``) or ``"dia"``.

        Returns
        -------
        ParCSR
            This matrix (changed in place).

        Raises
        ------
        ValueError
            For an unknown format, or ``"dia"`` on a block that does not suit it (above).
        """
        self._core.set_format(str(format))
        return self

    @property
    def format(self):
        """The on-process block's storage, as :meth:`set_format` set it (``"csr"`` at first)."""
        return self._core.format

    # ---- vectors --------------------------------------------------------------------
    def owned_rows(self):
        """Local. Global indices of this rank's rows, in local order.

        Returns
        -------
        ndarray of int64
        """
        return self.row_dist.owned(self.comm.rank)

    def owned_cols(self):
        """Local. Global indices of the vector entries this rank owns (the columns it
        multiplies), in local order.

        Returns
        -------
        ndarray of int64
        """
        return self.col_dist.owned(self.comm.rank)

    def distribute(self, v_global, space="cols"):
        """Local. This rank's part of a global vector.

        Parameters
        ----------
        v_global : array_like
            The whole vector.
        space : {"cols", "rows"}, default "cols"
            ``"cols"`` for x (entries distributed as the columns), ``"rows"`` for y (as the
            rows).

        Returns
        -------
        ndarray
            This rank's entries, in local order (a C-contiguous copy).

        Raises
        ------
        ValueError
            When ``v_global``'s length is not the global size of ``space``.
        """
        v_global = np.asarray(v_global)
        dist = self.col_dist if space == "cols" else self.row_dist
        if v_global.shape[0] != dist.global_size:
            raise ValueError(f"vector has length {v_global.shape[0]}, expected {dist.global_size}")
        return np.ascontiguousarray(v_global[dist.owned(self.comm.rank)])

    def gather(self, v_local, root=0, space="rows"):
        """Collective. The global vector on ``root`` from every rank's part.

        Parameters
        ----------
        v_local : array_like
            This rank's part, in local order.
        root : int or None, default 0
            The rank that gets the vector; ``None``: every rank.
        space : {"rows", "cols"}, default "rows"
            ``"rows"`` for y (parts distributed as the rows), ``"cols"`` for x (as the
            columns).

        Returns
        -------
        ndarray or None
            The global vector on ``root`` (None elsewhere; ``root=None``: on every rank).
        """
        dist = self.row_dist if space == "rows" else self.col_dist
        parts = _gather(self.comm, np.asarray(v_local), root)
        if parts is None:
            return None
        out = np.empty(dist.global_size, dtype=np.result_type(*parts))
        for r, p in enumerate(parts):
            out[dist.owned(r)] = p
        return out

    # ---- structure and statistics ---------------------------------------------------
    @property
    def local_rows(self):
        """Number of this rank's rows (the length of its part of y)."""
        return self._core.local_rows

    @property
    def local_cols(self):
        """Number of vector entries this rank owns (the length of its part of x)."""
        return self._core.local_cols

    @property
    def local_nnz(self):
        """Entries stored in this rank's rows (the on-process and off-process blocks)."""
        return self._core.local_nnz

    @property
    def spmv_bytes(self):
        """Bytes this rank's local SpMV moves (matrix blocks, x, halo, y)."""
        return self._core.spmv_bytes

    def global_nnz(self):
        """Collective. Nonzeros of the whole matrix.

        Returns
        -------
        int
        """
        return self.comm.allreduce(self.local_nnz)

    @property
    def col_map(self):
        """Global column of every halo entry (grouped by owner)."""
        return self._core.col_map

    @property
    def plan(self):
        """This rank's CommPlan (plain data)."""
        return self._core.plan

    @property
    def pattern(self):
        """This rank's HaloPattern (what must move, strategy-free)."""
        return self._core.pattern

    def block(self, which):
        """Local. A local block as scipy CSR.

        Parameters
        ----------
        which : {"diag", "offd_on_node", "offd_off_node"}
            ``"diag"`` (local columns), ``"offd_on_node"`` or ``"offd_off_node"`` (halo
            columns, see :attr:`col_map`).

        Returns
        -------
        scipy.sparse.csr_matrix

        Raises
        ------
        ValueError
            For another ``which``.
        """
        indptr, indices, data, nr, nc = self._core.block(which)
        return sp.csr_matrix((data, indices, indptr), shape=(nr, nc))

    def local_block(self):
        """Local. This rank's rows as scipy CSR over its column space: owned columns first
        (local order), then the halo (:attr:`col_map` order); see :meth:`global_columns`.

        Returns
        -------
        scipy.sparse.csr_matrix
            Shape ``(local_rows, local_cols + len(col_map))``.
        """
        indptr, indices, data = self._core.space_rows()
        return sp.csr_matrix((data, indices, indptr), shape=(self.local_rows, self.local_cols + len(self.col_map)),
                             copy=False)

    def global_columns(self):
        """Local. Global column of every column of :meth:`local_block`.

        Returns
        -------
        ndarray of int64
        """
        return np.concatenate([self.owned_cols(), np.asarray(self.col_map, dtype=np.int64)])

    def local_triples(self):
        """Local. This rank's entries as (local row, global column, value) arrays, row by row,
        columns ascending.

        Returns
        -------
        rows, cols, vals : ndarray
            The local row, global column and value of every stored entry.
        """
        M = self.local_matrix()
        return np.repeat(np.arange(self.local_rows), np.diff(M.indptr)), M.indices, M.data

    def local_matrix(self):
        """Local. This rank's rows (in local order) as scipy CSR over global columns.

        Returns
        -------
        scipy.sparse.csr_matrix
            Shape ``(local_rows, shape[1])``.
        """
        indptr, indices, data = self._core.merged_rows(np.asarray(self.owned_cols(), dtype=np.int64))
        return sp.csr_matrix((data, indices, indptr), shape=(self.local_rows, self.shape[1]))

    def to_global(self, root=0):
        """Collective. The whole matrix as scipy CSR on ``root``.

        Parameters
        ----------
        root : int or None, default 0
            The rank that gets the matrix; ``None``: every rank.

        Returns
        -------
        scipy.sparse.csr_matrix or None
            The matrix on ``root`` (None elsewhere; ``root=None``: on every rank).
        """
        parts = _gather(self.comm, self.local_matrix(), root)
        if parts is None:
            return None
        order = np.concatenate([self.row_dist.owned(r) for r in range(self.comm.size)])
        stacked = sp.vstack(parts, format="csr")
        inverse = np.empty_like(order)
        inverse[order] = np.arange(order.size)
        return stacked[inverse]

    def planned_stats(self):
        """Local. CommStats of one halo exchange, from the plan.

        Returns
        -------
        CommStats
        """
        return CommStats(self._core.planned_stats_array())

    def recorded_stats(self, reverse=False):
        """Local. CommStats recorded by the executor over all runs since the last reset.

        Parameters
        ----------
        reverse : bool, default False
            True: the counts of the exchanges run in reverse (as :meth:`rmatvec` runs them)
            instead of the forward ones.

        Returns
        -------
        CommStats
        """
        return CommStats(self._core.recorded_stats_array(reverse))

    @property
    def runs(self):
        """(forward, reverse) exchanges run since the last reset."""
        return self._core.forward_runs, self._core.reverse_runs

    def reset_recorded(self):
        """Local. Clear the recorded statistics and the run counts (:attr:`runs`)."""
        self._core.reset_recorded()

    def __repr__(self):
        return (
            f"ParCSR(shape={self.shape}, rank {self.comm.rank}/{self.comm.size}, "
            f"local rows {self.local_rows}, local nnz {self.local_nnz}, halo {self.plan.n_halo})"
        )


def _gather(comm, obj, root):
    """Every rank's ``obj``, in rank order, on ``root`` (None elsewhere), or on every rank
    when root is None. Collective."""
    return comm.allgather(obj) if root is None else comm.gather(obj, root=root)


def _vector(x, n, what):
    """``x`` as a contiguous float64 vector of ``n`` values, or a ValueError saying what was
    expected (local: raised on this rank only)."""
    a = np.asarray(x)
    if np.iscomplexobj(a):
        raise ValueError(f"{what} is complex; ParCSR holds real values (apply it to the real and imaginary parts)")
    if a.ndim != 1 or a.shape[0] != n:
        raise ValueError(f"{what} must be a 1-D array of this rank's {n} entries, got shape {a.shape}")
    try:
        return np.ascontiguousarray(a, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{what} holds values that are not numbers (dtype {a.dtype})") from None


def _output(out, n, x):
    """``out`` checked (float64, C-contiguous, writable, ``n`` values, not aliasing ``x``),
    or a fresh array."""
    if out is None:
        return np.empty(n)
    if not isinstance(out, np.ndarray) or out.dtype != np.float64 or out.ndim != 1 or out.shape[0] != n \
            or not out.flags.c_contiguous or not out.flags.writeable:
        got = f"{out.dtype} array of shape {out.shape}" if isinstance(out, np.ndarray) else type(out).__name__
        raise ValueError(f"out must be a writable C-contiguous float64 array of {n} values, got {got}")
    if np.shares_memory(out, x):
        raise ValueError("out must not share memory with x (the product reads x while it writes out)")
    return out


def _local_positions(dist, rank, rows):
    if dist.is_contiguous:
        return rows - dist.offsets[rank]
    owned = dist.owned(rank)
    return np.searchsorted(owned, rows)
