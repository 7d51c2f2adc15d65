"""The run behind ``commsolve selinv``: supernodal LU on a 2D process grid, then parallel
selected inversion on its factors (PSelInv), timed, counted per role and checked against
an independent computation of A^-1's entries."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._collective import mpi, run_agreed
from ..direct import LU_DEFAULTS, ROW_PERMS, factor, parse_grid
from ..direct.selinv import ROLES, role_volumes
from ..gallery import parse_spec
from ..parcsr import ParCSR
from ..stats import CommStats
from .spmv import machine_info

__all__ = ["run_selinv", "selinv_grid", "format_selinv", "DENSE_CHECK_ROWS", "check_entries"]

DENSE_CHECK_ROWS = 3000  # up to this many rows the check is numpy's dense inverse; above, sampled columns
FORMS = {"auto": None, "symmetric": True, "unsymmetric": False}


def check_entries(A, S, columns=8, seed=0):
    """The largest difference, relative to the largest entry compared, between the selected
    entries ``S`` and A^-1's, with the method used: numpy's dense inverse (n <=
    :data:`DENSE_CHECK_ROWS`) or ``columns`` columns of A^-1 by scipy's ``splu`` (SuperLU:
    independent of commsolve's factors), chosen at random with ``seed``."""
    n = A.shape[0]
    C = sp.csc_matrix(S)
    if n <= DENSE_CHECK_ROWS:
        D = np.linalg.inv(A.toarray())
        Sc = S.tocoo()
        return float(np.abs(Sc.data - D[Sc.row, Sc.col]).max() / np.abs(D).max()), "dense inverse (numpy)"
    from scipy.sparse.linalg import splu

    lu = splu(sp.csc_matrix(A))
    picks = np.random.default_rng(seed).choice(n, size=min(columns, n), replace=False)
    worst, scale = 0.0, 0.0
    for j in picks:
        e = np.zeros(n)
        e[j] = 1.0
        col = lu.solve(e)
        rows = C.indices[C.indptr[j]:C.indptr[j + 1]]
        worst = max(worst, float(np.abs(C.data[C.indptr[j]:C.indptr[j + 1]] - col[rows]).max(initial=0.0)))
        scale = max(scale, float(np.abs(col).max()))
    return (worst / scale if scale > 0 else float("nan")), f"{len(picks)} columns by scipy's splu"


def selinv_grid(grid, nranks):
    """``(px, py)`` of ``grid`` by the grid rule (:func:`~commsolve.direct.parse_grid`; None:
    the squarest), one layer only: selected inversion runs on a 2D grid.

    Parameters
    ----------
    grid : str, tuple of int or None
        As :func:`~commsolve.direct.parse_grid` reads it.
    nranks : int or None
        The ranks the grid must have (None: not checked; ``grid`` must then be given).

    Returns
    -------
    tuple of int

    Raises
    ------
    ValueError
        For a grid that breaks the grid rule, has several layers or not ``nranks`` ranks.
    """
    px, py, pz = parse_grid(grid, nranks)
    if pz != 1:
        raise ValueError(f"selected inversion runs on a 2D grid: --grid PxQ, got {grid}")
    return px, py


def run_selinv(comm, *, gen=None, matrix=None, grid=None, tree=None, form="auto", repeat=3, ppn=None,
               max_supernode=LU_DEFAULTS["max_supernode"], equil=None, row_perm=None, columns=8, progress=None):
    """Collective. The matrix, distributed by rows, is factored on a 2D grid (``grid`` "PxQ";
    default: the squarest), then its selected inverse is computed ``repeat`` times with
    ``tree`` trees in ``form`` ("auto", "symmetric", "unsymmetric"); the run of median
    total time is reported (its slowest rank), with every rank's statistics per role
    (recorded, checked against the plan) and the check of the entries on rank 0. Static
    pivoting as ``equil`` and ``row_perm`` say; by default none for the symmetric form (which
    needs rows and columns alike), the solver's for the others. Returns the result dict on
    rank 0, None elsewhere."""
    if (gen is None) == (matrix is None):
        raise ValueError("give exactly one of a generator spec (--gen) or a matrix file (--matrix)")
    if repeat < 1 or form not in FORMS:
        raise ValueError(f"repeat must be at least 1 and form one of {', '.join(FORMS)}, got {repeat}, {form!r}")
    MPI = mpi()
    symmetric = form == "symmetric"
    row_perm = ("none" if symmetric else ROW_PERMS[0]) if row_perm is None else row_perm
    equil = (not symmetric) if equil is None else equil

    px, py = run_agreed(comm, selinv_grid, grid, comm.size)
    if gen is not None:
        parse_spec(gen)
    D = ParCSR.from_spec(gen, comm) if gen is not None else ParCSR.from_file(matrix, comm)
    lu = factor(D, comm, grid=(px, py, 1), tree=tree, topology=ppn, max_supernode=max_supernode, equil=equil,
                row_perm=row_perm)
    A = D.to_global(0)
    del D
    runs = []
    for _ in (range(repeat) if progress is None else progress(range(repeat))):
        S = lu.selected_inverse(tree=tree, symmetric=FORMS[form])
        runs.append(lu.selinv)
    rep = runs[int(np.argsort([r.seconds["total"] for r in runs])[len(runs) // 2])]
    pivoting = {"equil": bool(equil), "row_perm": row_perm, "tiny_pivots_replaced": int(lu.tiny_pivots_replaced)}
    stats_ok = comm.allreduce(int(all(r.recorded == r.planned for r in runs)), op=MPI.MIN) == 1
    per_rank = [CommStats(a) for a in comm.gather(rep.recorded.array, root=0) or []]
    if comm.rank != 0:
        return None
    err, method = check_entries(A, S, columns)
    totals = np.array([s.array.sum(axis=0) for s in per_rank], float)
    sent = totals[:, 2] + totals[:, 3]
    return {
        "matrix": gen if gen is not None else str(matrix),
        "rows": int(A.shape[0]), "nnz": int(A.nnz), "nranks": comm.size, "grid": [px, py],
        "tree": rep.tree, "form": "symmetric" if rep.symmetric else "unsymmetric", "repeat": repeat,
        "nnz_LU": int(lu.nnz_LU), "supernodes": int(lu.structure.nsuper), "selected_entries": int(S.nnz),
        "factor_s": lu.factor_seconds["total"],
        "selinv_s": rep.seconds["total"], "prepare_s": rep.seconds["prepare"], "invert_s": rep.seconds["invert"],
        "runs_s": [r.seconds["total"] for r in runs], "flops": rep.flops, "static_pivoting": pivoting,
        "split_supernodes": rep.split_supernodes, "warnings": rep.warnings,
        "gflops": rep.flops / rep.seconds["total"] / 1e9 if rep.seconds["total"] > 0 else None,
        "check_error": err, "check": method,
        "stats_recorded_equal_planned": bool(stats_ok),
        "roles": list(ROLES),
        "per_role": {role: {"messages": int(sum(s.array[i, 0] + s.array[i, 1] for s in per_rank)),
                            "bytes": int(sum(s.array[i, 2] + s.array[i, 3] for s in per_rank))}
                     for i, role in enumerate(ROLES)},
        "sent_per_rank_bytes": {"min": float(sent.min()), "max": float(sent.max()),
                                "median": float(np.median(sent)), "std": float(sent.std())},
        "col_bcast_sent_bytes": role_volumes(per_rank, "col_bcast"),
        "row_reduce_received_bytes": role_volumes(per_rank, "row_reduce", received=True),
        "comm_per_rank": [s.to_dict() for s in per_rank],
        "machine": machine_info(),
    }


def format_selinv(r):
    """The text report of :func:`run_selinv`'s result."""
    mb = 2.0 ** 20

    def row(name, v):
        return f"  {name:<22}{v['min'] / mb:>9.3f}{v['max'] / mb:>9.3f}{v['median'] / mb:>9.3f}{v['std'] / mb:>9.3f}"

    lines = [
        f"matrix      {r['matrix']}: {r['rows']:,} rows, {r['nnz']:,} nonzeros",
        f"layout      {r['nranks']} rank{'s' if r['nranks'] > 1 else ''}, grid {r['grid'][0]}x{r['grid'][1]}, "
        f"tree {r['tree']}, {r['form']} form",
        f"factors     nnz(L+U) {r['nnz_LU']:,} in {r['supernodes']:,} supernodes; factored in {r['factor_s']:.3f} s",
        f"selinv      {r['selinv_s']:.3f} s (prepare {r['prepare_s']:.3f}, invert {r['invert_s']:.3f}; the run of "
        f"median total of {r['repeat']}, its slowest rank), {r['flops'] / 1e9:.2f} GFlop"
        + (f" at {r['gflops']:.2f} GFlop/s" if r["gflops"] else ""),
        f"entries     {r['selected_entries']:,} of A^-1 (the pattern of the factors)",
        f"check       max |error| / max |A^-1| = {r['check_error']:.2e} against {r['check']}",
        f"CommStats   recorded == planned: {'yes' if r['stats_recorded_equal_planned'] else 'NO'}",
        *(f"WARNING     {w}" for w in r["warnings"]),
    ]
    if r["nranks"] > 1:
        lines.append(f"  {'per rank (MB)':<22}{'min':>9}{'max':>9}{'median':>9}{'std':>9}")
        lines += [row("sent, all roles", r["sent_per_rank_bytes"]), row("Col-Bcast sent", r["col_bcast_sent_bytes"]),
                  row("Row-Reduce received", r["row_reduce_received_bytes"])]
        lines.append(f"  {'role':<22}{'messages':>10}{'MB':>10}")
        lines += [f"  {k:<22}{v['messages']:>10,}{v['bytes'] / mb:>10.3f}" for k, v in r["per_role"].items()
                  if v["messages"]]
    return "\n".join(lines)
