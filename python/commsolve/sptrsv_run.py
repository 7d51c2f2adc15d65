"""The factor-and-solve run behind ``commsolve sptrsv``: supernodal LU, 2D block-cyclic
factors, message-driven triangular solves, and what they cost."""

from __future__ import annotations

import numpy as np

from ._collective import mpi, run_agreed
from .direct import SOLVE_STEPS, factor, parse_grid
from .gallery import parse_spec
from .io import mmread
from .spmv_run import machine_info
from .stats import FIELDS, CommStats, format_summary, summarize

__all__ = ["run_sptrsv", "format_sptrsv"]


def run_sptrsv(comm, *, gen=None, matrix=None, grid=None, tree="binary", nrhs=1, repeat=5, ppn=None,
               max_supernode=128, relax_subtree=32, progress=None):
    """Collective. Rank 0 builds (or reads) the matrix; it is factored and spread over the
    grid; ``repeat`` solves with ``nrhs`` right-hand sides are timed (slowest rank, median
    over repeats). Returns a result dict on rank 0, None elsewhere."""
    if (gen is None) == (matrix is None):
        raise ValueError("give exactly one of a generator spec (--gen) or a matrix file (--matrix)")
    if nrhs < 1 or repeat < 1:
        raise ValueError(f"nrhs and repeat must be at least 1, got {nrhs} and {repeat}")
    MPI = mpi()
    px, py = run_agreed(comm, parse_grid, grid, comm.size)

    def build():  # on rank 0 only; a bad spec or file is an error on every rank
        if comm.rank != 0:
            return None
        return parse_spec(gen).build(nprocs=comm.size) if gen is not None else mmread(matrix)

    A = run_agreed(comm, build)
    solver = factor(A, comm, grid=(px, py), tree=tree, topology=ppn, max_supernode=max_supernode,
                    relax_subtree=relax_subtree)
    n = solver.shape[0]
    B = None
    if comm.rank == 0:
        B = np.sin(0.37 * np.arange(n * nrhs, dtype=np.float64)).reshape(n, nrhs) + 0.5
    times = []
    runs = range(repeat) if progress is None else progress(range(repeat))
    for _ in runs:
        X = solver.solve(B)
        times.append(solver.solve_seconds)
    recorded, planned = solver.stats(), solver.planned_stats(nrhs)
    stats_match = comm.allreduce(int(recorded == planned), op=MPI.MIN) == 1
    per_rank = comm.gather(recorded.array, root=0)
    entries = comm.gather(solver.local_entries, root=0)
    if comm.rank != 0:
        return None
    resid = float(np.linalg.norm(A @ X - B) / np.linalg.norm(B))
    med = {k: float(np.median([t[k] for t in times])) for k in ("l_solve", "u_solve", "total")}
    factor_bytes = 8 * int(sum(entries))
    return {
        "matrix": gen if gen is not None else str(matrix),
        "rows": int(n),
        "nnz": int(A.nnz),
        "nranks": comm.size,
        "grid": [px, py],
        "tree": tree,
        "nrhs": nrhs,
        "repeat": repeat,
        "nnz_LU": int(solver.nnz_LU),
        "supernodes": int(solver.structure.nsuper),
        "max_supernode": max_supernode,
        "relax_subtree": relax_subtree,
        "tiny_pivots_replaced": int(solver.tiny_pivots_replaced),
        "factor_s": solver.factor_seconds,
        "l_solve_s": med["l_solve"],
        "u_solve_s": med["u_solve"],
        "solve_s": med["total"],
        "solve_runs_s": [t["total"] for t in times],
        "factor_bytes": factor_bytes,
        "solve_bandwidth_gbs": factor_bytes / (med["l_solve"] + med["u_solve"]) / 1e9,
        "local_entries": [int(e) for e in entries],
        "rel_residual": resid,
        "stats_recorded_equal_planned": bool(stats_match),
        "comm_steps": list(SOLVE_STEPS),
        "comm_per_rank": [CommStats(a).to_dict() for a in per_rank],
        "comm": summarize([CommStats(a) for a in per_rank]),
        "machine": machine_info(),
    }


def format_sptrsv(r):
    """The text report of :func:`run_sptrsv`'s result."""
    f = r["factor_s"]
    lines = [
        f"matrix      {r['matrix']}: {r['rows']:,} rows, {r['nnz']:,} nonzeros",
        f"layout      {r['nranks']} ranks, grid {r['grid'][0]}x{r['grid'][1]}, tree {r['tree']}, nrhs {r['nrhs']}",
        f"factors     nnz(L+U) {r['nnz_LU']:,} in {r['supernodes']:,} supernodes "
        f"({r['factor_bytes'] / 1e6:,.1f} MB with inverted diagonal blocks)",
        f"factor      {f['total']:.3f} s (ordering {f['ordering']:.3f}, numeric {f['numeric']:.3f}, "
        f"distribute {f['distribute']:.3f})",
        f"L-solve     {r['l_solve_s'] * 1e3:.3f} ms",
        f"U-solve     {r['u_solve_s'] * 1e3:.3f} ms",
        f"solve       {r['solve_s'] * 1e3:.3f} ms total, median of {r['repeat']} "
        f"(factors read at {r['solve_bandwidth_gbs']:.2f} GB/s)",
        f"residual    ||Ax - b|| / ||b|| = {r['rel_residual']:.2e}",
        f"CommStats   recorded == planned: {'yes' if r['stats_recorded_equal_planned'] else 'NO'}",
        f"{'rank':>4} {'msgs intra':>11} {'msgs inter':>11} {'bytes intra':>13} {'bytes inter':>13}   (sent)",
    ]
    for rank, s in enumerate(r["comm_per_rank"]):
        t = s["total"]
        lines.append(f"{rank:>4} {t[FIELDS[0]]:>11,} {t[FIELDS[1]]:>11,} {t[FIELDS[2]]:>13,} {t[FIELDS[3]]:>13,}")
    if r["nranks"] > 1:
        lines.append(format_summary(r["comm"]))
    return "\n".join(lines)
