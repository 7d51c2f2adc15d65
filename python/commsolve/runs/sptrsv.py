"""The factor-and-solve run behind ``commsolve sptrsv``: supernodal LU, factors spread over
a 2D or 3D process grid, distributed triangular solves (2d, 3d-baseline, 3d-baseline-async
or 3d), and what they cost."""

from __future__ import annotations

import resource

import numpy as np

from .._collective import mpi, run_agreed
from ..direct import (LU_DEFAULTS, REDISTRIBUTE_STEPS, SOLVE_STEPS, XY_STEPS, Z_STEPS, factor, is_auto,
                      parse_grid)
from ..direct.factor3d import FACTOR_STEPS
from ..direct.pivoting import EQUED
from ..gallery import parse_spec
from ..parcsr import ParCSR
from .spmv import machine_info
from ..stats import FIELDS, CommStats, format_summary, summarize

__all__ = ["run_sptrsv", "format_sptrsv", "singular_warnings", "TIME_KEYS", "SINGULAR_RESIDUAL"]

# solve_seconds keys -> JSON keys: the run of median total, its slowest rank's parts (so
# that they add up to at most the total)
TIME_KEYS = {"l_solve": "l_solve_s", "z_comm": "z_comm_s", "u_solve": "u_solve_s",
             "redistribute": "redistribute_s", "total": "solve_s"}


def _sent(stats, steps):
    """Messages and bytes sent in ``steps``, intra and inter node."""
    a = stats.array[list(steps)].sum(axis=0)
    return {FIELDS[k]: int(a[k]) for k in range(4)}


def run_sptrsv(comm, *, gen=None, matrix=None, grid=None, tree=None, nrhs=1, repeat=5, ppn=None,
               max_supernode=LU_DEFAULTS["max_supernode"], relax_subtree=LU_DEFAULTS["relax_subtree"], algorithm=None,
               partition="nd", allreduce=None, ordering=LU_DEFAULTS["ordering"],
               equil=True, row_perm="mc64", replace_tiny=False, refine=True, profile=None, progress=None,
               factor_progress=None, threads=None, device="cpu"):
    """Collective. The matrix is built (or read) distributed by rows, a ParCSR; it is factored
    on the grids (static pivoting as ``equil``, ``row_perm``, ``replace_tiny`` say; the
    ``ordering`` on rank 0, or on every rank for PT-Scotch's (``"auto"``: PT-Scotch's, its
    leaves by METIS on a 3D mesh, :func:`~commsolve.direct.symbolic.chosen_ordering`); the numeric factorization by
    every rank of every grid, each ending with its own blocks, see :func:`~commsolve.direct.factor`); b (distributed by
    rows) is solved ``repeat`` times with ``nrhs`` right-hand sides, timed (slowest rank,
    median over repeats; iterative refinement, if ``refine``, timed apart). ``grid="auto"``:
    the grid and algorithm the simulator predicts fastest with ``profile`` (the ranking is in
    the result). ``threads`` per rank: see :func:`~commsolve.direct.factor`; ``device``:
    ``"cuda"`` runs the solve phases on each rank's GPU
    (:meth:`~commsolve.direct.DistributedLU.to_device`). Returns a result dict on rank 0,
    None elsewhere."""
    if (gen is None) == (matrix is None):
        raise ValueError("give exactly one of a generator spec (--gen) or a matrix file (--matrix)")
    if nrhs < 1 or repeat < 1:
        raise ValueError(f"nrhs and repeat must be at least 1, got {nrhs} and {repeat}")
    MPI = mpi()
    if not is_auto(grid):
        grid = run_agreed(comm, parse_grid, grid, comm.size)

    parse_spec(gen) if gen is not None else None  # a bad spec: a clear error, on every rank
    D = ParCSR.from_spec(gen, comm) if gen is not None else ParCSR.from_file(matrix, comm)
    solver = factor(D, comm, grid=grid, tree=tree, algorithm=algorithm, partition=partition,
                    allreduce=allreduce, topology=ppn, max_supernode=max_supernode, relax_subtree=relax_subtree,
                    ordering=ordering, equil=equil, row_perm=row_perm, replace_tiny=replace_tiny, profile=profile,
                    progress=factor_progress,
                    threads=threads)
    setup_rss = peak_resident_bytes()  # the setup's peak: before rank 0 gathers A for the check below
    if device != "cpu":
        solver.to_device(device)
    A = D.to_global(0)  # for the check of the residual, on rank 0
    del D
    px, py, pz = solver.grid
    n, dist = solver.shape[0], solver.distribution
    B = None
    if comm.rank == 0:
        B = np.sin(0.37 * np.arange(n * nrhs, dtype=np.float64)).reshape(n, nrhs) + 0.5
    b_local = comm.scatter(None if B is None else [B[dist.owned(r)] for r in range(comm.size)], root=0)
    times = []
    runs = range(repeat) if progress is None else progress(range(repeat))
    for _ in runs:
        x_local = solver.solve(b_local, refine=refine)
        times.append(solver.solve_seconds)
    recorded, planned = solver.stats(), solver.planned_stats(nrhs)
    stats_match = comm.allreduce(int(recorded == planned), op=MPI.MIN) == 1
    per_rank = comm.gather(recorded.array, root=0)
    on_grids = solver.factor_stats is not None  # factored on the grids (always, from a ParCSR)
    factor_match = on_grids and comm.allreduce(int(solver.factor_stats == solver.planned_factor_stats),
                                               op=MPI.MIN) == 1
    factor_per_rank = comm.gather(solver.factor_stats.array if on_grids else None, root=0)
    entries = comm.gather(solver.local_entries, root=0)
    peak_rss = comm.gather(peak_resident_bytes(), root=0)
    setup_rss = comm.gather(setup_rss, root=0)
    pieces = comm.gather(x_local, root=0)
    if comm.rank != 0:
        return None
    X = np.empty((n, nrhs))
    for r, piece in enumerate(pieces):
        X[dist.owned(r)] = piece
    R = A @ X - B
    resid = float(np.linalg.norm(R) / np.linalg.norm(B))
    # Normwise backward error, per right-hand side, the largest: ||r|| / (||A|| ||x|| + ||b||) (inf-norms).
    norm_a = float(abs(A).sum(axis=1).max())
    backward = float(max(np.abs(R[:, c]).max() / (norm_a * np.abs(X[:, c]).max() + np.abs(B[:, c]).max())
                         for c in range(nrhs)))
    middle = times[int(np.argsort([t["total"] for t in times])[len(times) // 2])]
    med = {k: float(middle[k]) for k in TIME_KEYS}
    solve_only = med["total"] - med["redistribute"]  # L, inter-grid and U: the factors are read here
    factor_bytes = 8 * int(sum(entries))
    stats = [CommStats(a) for a in per_rank]
    out = {
        "matrix": gen if gen is not None else str(matrix),
        "rows": int(n),
        "nnz": int(A.nnz),
        "nranks": comm.size,
        "grid": [px, py, pz],
        "algorithm": solver.algorithm,
        "partition": solver.partition if pz > 1 else None,
        "allreduce": solver.allreduce if pz > 1 else None,
        "tree": solver.tree,
        "threads": solver.threads,
        "device": solver.device,
        "grid_ranking": solver.grid_ranking,
        "nrhs": nrhs,
        "repeat": repeat,
        "nnz_LU": int(solver.nnz_LU),
        "supernodes": int(solver.structure.nsuper),
        "ordering": solver.analysis.ordering,  # "auto" resolved
        "max_supernode": max_supernode,
        "relax_subtree": relax_subtree,
        "tiny_pivots_replaced": int(solver.tiny_pivots_replaced),
        "static_pivoting": {"equil": bool(equil), "equed": solver.pivoting.equed, "row_perm": row_perm,
                            "row_perm_used": solver.pivoting.row_perm, "replace_tiny": bool(replace_tiny),
                            "refine": bool(refine)},
        "factor_s": solver.factor_seconds,
        "ordering_parts_s": solver.report.ordering_parts,  # where the ordering's seconds went (rank 0's clock)
        **{TIME_KEYS[k]: v for k, v in med.items()},
        "max_over_ranks_s": {TIME_KEYS[k]: float(middle["max"][k]) for k in TIME_KEYS},
        "refine_s": float(np.median([t["refine"] for t in times])),
        "solve_runs_s": [t["total"] for t in times],
        "factor_bytes": factor_bytes,
        # unique factor entries (no replicas, no inverses) over the time of L, inter-grid and U
        "solve_bandwidth_gbs": 8 * int(solver.nnz_LU) / solve_only / 1e9 if solve_only > 0 else None,
        "local_entries": [int(e) for e in entries],
        # per rank: the factor entries it stores (bytes), its peak resident memory at the end of
        # factor() (the setup: matrix, the root's analysis, the factorization's buffers, Python) and
        # at the end of the run (the solves, and rank 0's gathered A for the residual check, included)
        "memory_per_rank": {"factor_bytes": _max_mean([8 * e for e in entries]),
                            "setup_peak_rss_bytes": _max_mean(setup_rss),
                            "peak_rss_bytes": _max_mean(peak_rss)},
        "rel_residual": resid,
        "warnings": singular_warnings(int(solver.tiny_pivots_replaced), resid),
        "singular": not resid <= SINGULAR_RESIDUAL,  # x does not solve A x = b (NaN too)
        "backward_error": backward,
        "berr": [float(v) for v in solver.berr],
        "refine_steps": [int(v) for v in solver.refine_steps],
        "stats_recorded_equal_planned": bool(stats_match),
        "comm_steps": list(SOLVE_STEPS),
        "comm_per_rank": [s.to_dict() for s in stats],
        "comm_split_per_rank": [{"xy": _sent(s, XY_STEPS), "z": _sent(s, Z_STEPS),
                                 "redistribute": _sent(s, REDISTRIBUTE_STEPS)} for s in stats],
        "comm": summarize(stats),
        # the factorization's messages (steps as FACTOR_STEPS), as MPI moved them
        "factor_comm_steps": list(FACTOR_STEPS),
        "factor_comm_per_rank": [CommStats(a).to_dict() for a in factor_per_rank] if on_grids else None,
        "factor_stats_recorded_equal_planned": bool(factor_match) if on_grids else None,
        "machine": machine_info(),
    }
    return out


SINGULAR_RESIDUAL = 1e-6  # a relative residual above this says the matrix is numerically singular


def singular_warnings(replaced, rel_residual):
    """What the solve cannot vouch for, in words: replaced tiny pivots (the factors are of a
    nearby matrix; iterative refinement may still reach A's solution, which the residual
    says) and a relative residual above :data:`SINGULAR_RESIDUAL` (x does not solve A x = b
    to working accuracy, whatever the backward error says: a tiny backward error with a huge
    x is what a singular matrix gives; only this one says the matrix is singular)."""
    out = []
    if replaced:
        out.append(f"{replaced} tiny pivot{'s were' if replaced > 1 else ' was'} replaced (--replace-tiny): the "
                   "factors are those of a nearby matrix (A is singular or nearly so, or its diagonal needs the "
                   "row permutation: --row-perm mc64)")
    if not rel_residual <= SINGULAR_RESIDUAL:  # NaN too
        out.append(f"the relative residual ||Ax - b|| / ||b|| is {rel_residual:.2e}, above {SINGULAR_RESIDUAL:g}: the "
                   "matrix is numerically singular (or b is outside its range), x does not solve A x = b")
    return out


def peak_resident_bytes():
    """This process's peak resident set size so far, in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _max_mean(values):
    return {"max": int(max(values)), "mean": float(np.mean(values))}


def format_sptrsv(r):
    """The text report of :func:`run_sptrsv`'s result."""
    f = r["factor_s"]
    grid = "x".join(map(str, r["grid"]))
    ranking = r.get("grid_ranking")
    lines = [
        f"matrix      {r['matrix']}: {r['rows']:,} rows, {r['nnz']:,} nonzeros",
        *([f"grid auto   {len(ranking)} configurations simulated; chosen {'x'.join(map(str, ranking[0]['grid']))} "
           f"{ranking[0]['algorithm']} (predicted {ranking[0]['predicted_s'] * 1e3:.3f} ms), next: "
           + ", ".join(f"{'x'.join(map(str, q['grid']))} {q['algorithm']} {q['predicted_s'] * 1e3:.3f} ms"
                       for q in ranking[1:4])] if ranking else []),
        f"layout      {r['nranks']} rank{'s' if r['nranks'] > 1 else ''}, grid {grid}, algorithm {r['algorithm']}, "
        f"tree {r['tree']}, nrhs {r['nrhs']}"
        + (f", {r['threads']} threads per rank (sync-free)" if r["threads"] > 1 and r["device"] == "cpu" else "")
        + (f", solve phases on {r['device']} (sync-free)" if r["device"] != "cpu" else "")
        + (f", forests {r['partition']}, allreduce {r['allreduce']}" if r["grid"][2] > 1 else ""),
        f"factors     nnz(L+U) {r['nnz_LU']:,} in {r['supernodes']:,} supernodes "
        f"({r['factor_bytes'] / 1e6:,.1f} MB stored, inverted diagonal blocks and replicas included; per rank "
        f"max {r['memory_per_rank']['factor_bytes']['max'] / 1e6:,.1f} MB; peak resident per rank after the setup "
        f"max {r['memory_per_rank']['setup_peak_rss_bytes']['max'] / 1e6:,.1f} MB, mean "
        f"{r['memory_per_rank']['setup_peak_rss_bytes']['mean'] / 1e6:,.1f} MB, at the end max "
        f"{r['memory_per_rank']['peak_rss_bytes']['max'] / 1e6:,.1f} MB)",
        f"factor      {f['total']:.3f} s ("
        + ", ".join(f"{k} {v:.3f}" for k, v in f.items() if k != "total")
        + (f"; its messages as planned: {'yes' if r['factor_stats_recorded_equal_planned'] else 'NO'}"
           if r["factor_stats_recorded_equal_planned"] is not None else "") + ")",
        *([f"  ordering  {r['ordering']}: " + ", ".join(f"{k} {v:.3f}" for k, v in r["ordering_parts_s"].items())]
          if r.get("ordering_parts_s") else []),
        f"solve       {r['solve_s'] * 1e3:.3f} ms total (the run of median total of {r['repeat']}, its slowest rank:"
        + (f" factors read at {r['solve_bandwidth_gbs']:.2f} GB/s)" if r["solve_bandwidth_gbs"] else ")"),
        f"  L-solve   {r['l_solve_s'] * 1e3:.3f} ms   (slowest rank in this part: "
        f"{r['max_over_ranks_s']['l_solve_s'] * 1e3:.3f} ms)",
        f"  Z (grids) {r['z_comm_s'] * 1e3:.3f} ms   ({r['max_over_ranks_s']['z_comm_s'] * 1e3:.3f} ms)",
        f"  U-solve   {r['u_solve_s'] * 1e3:.3f} ms   ({r['max_over_ranks_s']['u_solve_s'] * 1e3:.3f} ms)",
        f"  b and x   {r['redistribute_s'] * 1e3:.3f} ms   ({r['max_over_ranks_s']['redistribute_s'] * 1e3:.3f} ms;"
        " to the diagonal owners and back)",
        (f"refinement  {r['refine_s'] * 1e3:.3f} ms, steps {r['refine_steps']}, componentwise backward error "
         f"{max(r['berr']):.2e}" if r["static_pivoting"]["refine"] else
         f"refinement  off (backward error measured in {r['refine_s'] * 1e3:.3f} ms: componentwise "
         f"{max(r['berr']):.2e})"),
        f"pivoting    equilibration {EQUED[r['static_pivoting']['equed']]}, row permutation "
        f"{r['static_pivoting']['row_perm_used']}"
        + (" (auto)" if r["static_pivoting"]["row_perm"] == "auto" else "")
        + f", tiny pivots replaced {r['tiny_pivots_replaced']}",
        f"residual    ||Ax - b|| / ||b|| = {r['rel_residual']:.2e}, backward error ||Ax - b|| / (||A|| ||x|| + ||b||)"
        f" = {r['backward_error']:.2e}",
        f"CommStats   recorded == planned: {'yes' if r['stats_recorded_equal_planned'] else 'NO'}",
        f"{'rank':>4} {'XY msgs':>9} {'XY bytes':>11} {'Z msgs':>7} {'Z bytes':>10} {'b/x msgs':>9} {'b/x bytes':>11}"
        "   (sent; intra + inter node)",
    ]
    for rank, s in enumerate(r["comm_split_per_rank"]):
        m = {k: (v["msgs_sent_intra"] + v["msgs_sent_inter"], v["bytes_sent_intra"] + v["bytes_sent_inter"])
             for k, v in s.items()}
        lines.append(f"{rank:>4} {m['xy'][0]:>9,} {m['xy'][1]:>11,} {m['z'][0]:>7,} {m['z'][1]:>10,} "
                     f"{m['redistribute'][0]:>9,} {m['redistribute'][1]:>11,}")
    lines += [f"WARNING     {w}" for w in r.get("warnings", [])]
    if r["nranks"] > 1:
        lines.append(format_summary(r["comm"]))
    return "\n".join(lines)
