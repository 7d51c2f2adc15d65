"""Parallel selected inversion (PSelInv) on a :class:`~commsolve.direct.DistributedLU`'s
factors: the entries of A^-1 in the pattern of the factors, computed where the factors lie
on the 2D process grid, with the restricted collectives of the PSelInv paper (Col-Bcast of
L^ blocks down process columns, Row-Reduce of the products along process rows) carried by
any tree shape (:mod:`commsolve.trees`). The C++ side is ``direct/selinv_plan`` (what moves)
and ``direct/selinv_executor`` (the run on MPI).

Two forms: ``symmetric`` (A symmetric with the same ordering and scaling on both sides: half
the products, each lower block sent across the diagonal as its transpose) and unsymmetric
(both halves, L^ and U^ first sent across the diagonal), chosen from the factorization
unless asked for.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .. import _core
from .._collective import agree_args, mpi, or_abort, run_agreed
from .._watchdog import watched
from ..stats import CommStats
from ..trees import tree_shape
from .parallel_analysis import is_symmetric

__all__ = ["ROLES", "SelinvReport", "selected_inverse", "role_volumes"]

ROLES = tuple(_core.selinv_role_names())  # the collectives' roles: the statistics' steps


@dataclass
class SelinvReport:
    """One selected inversion: the slowest rank's ``seconds`` (``prepare``, ``invert``,
    ``total``), ``max`` (each part's largest value over the ranks), the ``flops`` of all
    ranks, this rank's ``recorded`` and ``planned`` CommStats (steps: :data:`ROLES`), the
    ``tree`` shape, the ``symmetric`` form, ``split_supernodes`` (products run in several
    pieces, summed over the ranks) and ``warnings`` (e.g. replaced tiny pivots: the entries
    are then those of a nearby matrix's inverse, which no refinement corrects).

    Each parameter is kept as the attribute of the same name.

    Parameters
    ----------
    seconds : dict
        The slowest rank's ``prepare``, ``invert`` and ``total``.
    max : dict
        Each part's largest value over the ranks.
    flops : float
        The floating-point operations of all ranks.
    recorded, planned : CommStats
        This rank's, steps :data:`ROLES`.
    tree : str
        The tree shape.
    symmetric : bool
        Whether the symmetric form ran.
    split_supernodes : int
        Supernodes whose products ran in several pieces, summed over the ranks.
    warnings : list of str
        E.g. replaced tiny pivots: the entries are then those of a nearby matrix's inverse,
        which no refinement corrects.
    """

    seconds: dict
    max: dict
    flops: float
    recorded: CommStats
    planned: CommStats
    tree: str
    symmetric: bool
    split_supernodes: int = 0  # supernodes whose products ran in several pieces, all ranks
    warnings: list = field(default_factory=list)


@watched("DistributedLU.selected_inverse")
def selected_inverse(lu, tree=None, seed=None, flat_threshold=None, symmetric=None, gather=True):
    """Collective. The entries of A^-1 that selected inversion computes (the pattern of the
    factors mapped back through the orderings and scalings: it holds the pattern of A^T and
    the diagonal), computed on ``lu``'s 2D grid (Pz = 1).

    Arguments that differ between the ranks, a 3D grid or an impossible form fail on every
    rank alike; a failure on one rank during the run (memory, say) aborts the job, as the
    others would otherwise wait forever for its messages.

    Parameters
    ----------
    lu : DistributedLU
        The factors, on a 2D grid (Pz = 1).
    tree : str or TreeShape, optional
        The shape of every broadcast and reduction tree (default: C++'s, binary).
    seed, flat_threshold : int, optional
        The tree shape's seed and flat threshold (C++'s defaults where not given).
    symmetric : bool or None
        The symmetric form (True), the unsymmetric one (False) or whichever the
        factorization allows (None; True needs it).
    gather : bool
        True: the whole matrix as scipy CSR on the root rank (None elsewhere); False: each
        rank's own entries, as a CSR matrix of A's shape.

    Returns
    -------
    matrix : scipy.sparse.csr_matrix or None
        The entries of A^-1 (see ``gather``).
    report : SelinvReport
        The run's times, flops and statistics per role.

    Raises
    ------
    CollectiveError
        On every rank, for arguments that differ between the ranks.
    ValueError
        On every rank, for a 3D grid, a ``symmetric`` other than True, False or None, or
        ``symmetric=True`` without a symmetric factorization (A = A^T exactly, its rows and
        columns ordered and scaled alike); for an unknown ``tree``.

    Warns
    -----
    UserWarning
        On the root, when tiny pivots were replaced in the factorization (also in the
        report's ``warnings``).
    """
    shape = tree_shape(tree, seed, flat_threshold)
    agree_args(lu.comm, "DistributedLU.selected_inverse", tree=repr(shape), symmetric=symmetric, gather=bool(gather))

    def check():
        if lu.grid[2] != 1:
            raise ValueError(f"selected inversion runs on a 2D grid (Pz = 1); these factors are on "
                             f"{'x'.join(map(str, lu.grid))}: factor with grid='PxQ'")
        if symmetric not in (None, True, False):
            raise ValueError(f"symmetric must be True, False or None, got {symmetric!r}")

    run_agreed(lu.comm, check)
    holds = lu.analysis.symmetric
    if holds is None and symmetric is not False:  # left by the parallel analysis: A = A^T tested now
        holds = lu.analysis.symmetric = is_symmetric(lu._residual.A)
    if symmetric and not holds:
        raise ValueError("symmetric=True needs a symmetric factorization: A = A^T exactly, its rows and columns "
                         "ordered and scaled alike (factor with row_perm='none', equil=False); use symmetric=None "
                         "or False")
    form = holds if symmetric is None else bool(symmetric)
    core = or_abort(lu.comm, "selected inversion", _core.SelectedInversion, lu._core, shape, form)
    mine = or_abort(lu.comm, "selected inversion", core.run)
    a = lu.analysis
    i64 = lambda v: np.ascontiguousarray(v, dtype=np.int64)  # noqa: E731
    f64 = lambda v: np.ascontiguousarray(v, dtype=np.float64)  # noqa: E731
    # Z[p, q] is A^-1[col_order[p], row_order[q]] / (col_scale, row_scale) there, as serially
    rows, cols, vals = core.entries(i64(a.col_order), i64(a.row_order), f64(a.pivoting.col_scale),
                                    f64(a.pivoting.row_scale))
    comm = lu.comm
    every = comm.allgather([mine["prepare"], mine["invert"], mine["total"]])
    parts = ("prepare", "invert", "total")
    slowest = every[int(np.argmax([e[2] for e in every]))]
    report = SelinvReport(dict(zip(parts, map(float, slowest))),
                          dict(zip(parts, map(float, np.max(every, axis=0)))),
                          float(comm.allreduce(core.flops, op=mpi().SUM)),
                          CommStats(core.recorded_stats_array()), CommStats(core.planned_stats_array()),
                          shape.name, form, int(comm.allreduce(core.split_supernodes, op=mpi().SUM)))
    if lu.tiny_pivots_replaced:
        report.warnings.append(f"{lu.tiny_pivots_replaced} tiny pivots were replaced in the factorization: these are "
                               "the entries of a nearby matrix's inverse (no refinement corrects them)")
        if comm.rank == lu.root:
            warnings.warn(report.warnings[-1], stacklevel=3)
    n = lu.shape[0]
    if not gather:
        return _csr(n, rows, cols, vals), report
    whole = _gather_triples(comm, lu.root, rows, cols, vals)
    return (None if whole is None else _csr(n, *whole)), report


def _csr(n, rows, cols, vals):
    """Distinct triples as scipy CSR (two counting sorts in C++, no comparison sort)."""
    indptr, indices, data = _core.triples_csr(n, rows, cols, vals)
    return sp.csr_matrix((data, indices, indptr), shape=(n, n))


def _gather_triples(comm, root, *arrays):
    """Collective: every rank's (rows, cols, values) concatenated on ``root`` (None
    elsewhere), by MPI_Gatherv of the arrays themselves (no pickling)."""
    counts = comm.gather(len(arrays[0]), root=root)
    out = []
    for a in arrays:
        buf = None
        if comm.rank == root:
            buf = np.empty(sum(counts), dtype=a.dtype)
            buf = [buf, (counts, None)]
        comm.Gatherv(np.ascontiguousarray(a), buf, root=root)
        out.append(buf[0] if buf is not None else None)
    return tuple(out) if comm.rank == root else None


def role_volumes(per_rank_stats, role, received=False):
    """Local. min, max, median and std over the ranks of the bytes each sends (or receives) in
    ``role``: the PSelInv paper's Table I columns for Col-Bcast sent and Row-Reduce received.

    Parameters
    ----------
    per_rank_stats : sequence of CommStats
        Every rank's statistics of a selected inversion (steps :data:`ROLES`).
    role : str
        One of :data:`ROLES`.
    received : bool
        The bytes received instead of sent.

    Returns
    -------
    dict
        ``min``, ``max``, ``median`` and ``std`` (floats), bytes.
    """
    i, col = ROLES.index(role), (6 if received else 2)
    v = np.array([s.array[i, col] + s.array[i, col + 1] for s in per_rank_stats], dtype=float)
    return {"min": float(v.min()), "max": float(v.max()), "median": float(np.median(v)), "std": float(v.std())}
