"""The MGCG run behind ``commsolve mgcg``: set up, solve, check against scipy and against the
plans."""

from __future__ import annotations

import numpy as np

from .. import mg
from ..mg.stages import describe_placement
from .._collective import mpi, run_agreed
from ..io import mmread
from ..parcsr import ParCSR
from .amg import scipy_residual
from .spmv import machine_info

__all__ = ["run_mgcg", "format_mgcg", "plot_mgcg"]


def run_mgcg(comm, *, gen=None, matrix=None, grid=None, ppn=None, fmt="csr", cga="none", tol=1e-8, maxiter=500,
             progress=None, **options):
    """Collective. Sets up MGCG for the matrix (a 3D structured-grid spec, or a file with
    ``grid``), solves A x = b (b = 1), checks the true residual with scipy on rank 0 (up to
    CHECK_LIMIT rows) and every exchange's recorded statistics against its plan. Returns
    the result dict on rank 0."""
    if (gen is None) == (matrix is None):
        raise ValueError("give exactly one of a generator spec (--gen) or a matrix file (--matrix)")
    if gen is not None:
        source = gen
    elif options.get("decomposition") == "blocks":  # renumbered box by box: every rank reads the file
        source = run_agreed(comm, mmread, matrix)
    else:
        source = ParCSR.from_file(matrix, comm, topology=ppn)
    solver = mg.MGCG(source, comm, grid=grid, format=fmt, cga=cga, topology=ppn, progress=progress, **options)
    A = solver.A
    x, info = solver.solve(tol=tol, maxiter=maxiter)
    levels = solver.describe()
    ok = all(op.recorded_stats() == op.planned_stats().scaled(op.runs[0])
             and op.recorded_stats(reverse=True) == op.planned_stats().reversed().scaled(op.runs[1])
             for s in mg._chain(solver.ml) for op in mg._operators(s))
    stats_ok = comm.allreduce(int(ok), op=mpi().MIN) == 1
    residual = scipy_residual(comm, A, x, gen, matrix, cells=solver.cells())
    if comm.rank != 0:
        return None
    s = solver.last_solve
    return {
        "matrix": gen if gen is not None else str(matrix), "grid": list(solver.grid), "rows": int(A.shape[0]),
        "decomposition": "slabs" if solver.boxes is None else "blocks",
        "process_grid": None if solver.boxes is None else list(solver.boxes.procs),
        "nnz": int(levels[0]["nnz"]), "nranks": comm.size, "nodes": A.topology.num_nodes, "ppn": ppn,
        "format": fmt, "cga": cga, "stages": [list(st) for st in solver.stages], "cga_choice": solver.cga_choice,
        "smoother": solver.smoother,
        "tol": tol, "hierarchy": levels, "operator_complexity": solver.ml.operator_complexity,
        "setup_s": solver.setup_s, "solve_s": s["solve_s"], "per_iteration_s": s["per_iteration_s"],
        "iterations": s["iterations"], "converged": s["converged"], "residuals": s["residuals"],
        "levels": s["levels"], "rel_residual_vs_scipy": residual, "stats_recorded_equal_planned": bool(stats_ok),
        "info": info, "machine": machine_info(),
    }


def format_mgcg(r):
    """The text report of :func:`run_mgcg`'s result."""
    stages = ", ".join(f"below {rows:g} rows/rank onto {m} rank(s)" for rows, m in r["stages"]) or "none"
    head = [f"matrix      {r['matrix']}: {' x '.join(map(str, r['grid']))} grid, {r['rows']:,} rows, "
            f"{r['nnz']:,} nonzeros on {r['nranks']} rank(s), {r['nodes']} node(s), "
            + ("z-slabs" if r["decomposition"] == "slabs" else f"{'x'.join(map(str, r['process_grid']))} boxes"),
            f"MGCG        format {r['format']}, smoother {r['smoother']}, CGA {r['cga']} ({stages}), "
            f"{len(r['levels'])} levels, operator complexity {r['operator_complexity']:.3f}",
            f"{'level':>6}{'rows':>12}{'ranks':>7}{'format':>7}{'time s':>10}{'share':>8}{'msgs':>9}{'busiest':>9}"
            f"{'bytes':>13}"]
    total = sum(lv["time_s"] + _move_seconds(lv) for lv in r["levels"]) or 1.0
    rows = []
    for lv in r["levels"]:
        for i, move in enumerate(lv.get("moves", [])):
            to = lv["moves"][i + 1]["from"] if i + 1 < len(lv["moves"]) else lv["ranks"]
            rows.append(f"{'move':>6}{'':>12}{str(move['from']) + '>' + str(to):>7}{'':>7}"
                        f"{move['time_s']:>10.4f}{move['time_s'] / total:>8.1%}{move['msgs']:>9,}"
                        f"{move['msgs_max']:>9,}{move['bytes']:>13,}")
        rows.append(f"{lv['level']:>6}{lv['rows']:>12,}{lv['ranks']:>7}{lv['format']:>7}{lv['time_s']:>10.4f}"
                    f"{lv['time_s'] / total:>8.1%}{lv['msgs']:>9,}{lv['msgs_max']:>9,}{lv['bytes']:>13,}")
    res = r["rel_residual_vs_scipy"]
    choice = r.get("cga_choice")
    if choice:
        best = ", ".join(f"{describe_placement(c)} {c['cycle_s'] * 1e3:.3f} ms" for c in choice["best"].values())
        head.insert(2, f"CGA auto    chose {describe_placement(choice['chosen'])} by {choice['profile']} "
                       f"(best predicted V-cycle of each mode: {best})")
    tail = ["  (time: the slowest rank's seconds in the V-cycles; messages and bytes: sent during the solve, "
            "all ranks; busiest: one rank's most)",
            f"setup       {r['setup_s']:.3f} s",
            f"solve       {r['solve_s']:.3f} s, {r['iterations']} CG iterations, "
            f"{r['per_iteration_s'] * 1e3:.3f} ms per iteration, "
            f"{'converged' if r['converged'] else 'NOT converged'} to {r['tol']:g}",
            "check       " + ("skipped (problem too large)" if res is None else
                              f"||b - A x|| / ||b|| by scipy = {res:.2e}"),
            "CommStats   recorded == planned on every exchange: "
            + ("yes" if r["stats_recorded_equal_planned"] else "NO")]
    return "\n".join(head + rows + tail)


def _move_seconds(level):
    return sum(m["time_s"] for m in level.get("moves", []))


def plot_mgcg(r, path):
    """Per level: the slowest rank's seconds (a moved level's move stacked on it) and the
    messages sent during the solve."""
    from .._plotting import finish, pyplot

    plt = pyplot()
    lv = r["levels"]
    k = np.arange(len(lv))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    own = [v["time_s"] for v in lv]
    move = [_move_seconds(v) for v in lv]
    axes[0].bar(k, own, label="level")
    axes[0].bar(k, move, bottom=own, label="move onto fewer ranks")
    axes[0].set_title("seconds in the V-cycles (slowest rank)")
    axes[1].bar(k - 0.2, [v["msgs"] for v in lv], 0.4, label="level's exchanges")
    axes[1].bar(k + 0.2, [sum(m["msgs"] for m in v.get("moves", [])) for v in lv], 0.4, label="moves")
    axes[1].set_title("messages sent during the solve (all ranks)")
    for ax in axes:
        ax.set_xlabel("level (ranks: " + ", ".join(str(v["ranks"]) for v in lv) + ")")
        ax.set_xticks(k)
        ax.legend()
    fig.suptitle(f"MGCG on {r['matrix']}, {r['nranks']} ranks, format {r['format']}, CGA {r['cga']}: "
                 f"{r['iterations']} iterations", fontsize=9)
    fig.tight_layout()
    return finish(fig, path)
