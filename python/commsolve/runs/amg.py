"""The distributed AMG run behind ``commsolve amg``: set up, solve, check."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .. import amg
from .._collective import mpi
from ..gallery import parse_spec
from ..io import mmread
from ..parcsr import ParCSR
from .spmv import CHECK_LIMIT, machine_info

__all__ = ["run_amg", "format_amg", "scipy_residual"]


def run_amg(comm, *, gen=None, matrix=None, partition="contiguous", ppn=None, method="classical", strategy="auto",
            profile=None, smoother="hybrid-gs", tol=1e-8, accel="cg", maxiter=200, progress=None, **options):
    """Collective. Sets up AMG for the matrix, solves A x = b (b = 1), checks the true
    residual against scipy on rank 0 (up to CHECK_LIMIT rows) and every level's recorded
    halo statistics against its plan on every rank. Returns the result dict on rank 0."""
    if (gen is None) == (matrix is None):
        raise ValueError("give exactly one of a generator spec (--gen) or a matrix file (--matrix)")
    MPI = mpi()
    if gen is not None:
        A = ParCSR.from_spec(gen, comm, partition=partition, topology=ppn)
    else:
        A = ParCSR.from_file(matrix, comm, partition=partition, topology=ppn)
    ml = amg.solver(A, method=method, strategy=strategy, profile=profile, smoother=smoother, progress=progress,
                    **options)
    b = np.ones(A.local_rows)
    x, info = ml.solve(b, tol=tol, accel=accel, maxiter=maxiter)
    levels = ml.describe()
    ok = all(lvl.solve_A.recorded_stats() == lvl.solve_A.planned_stats().scaled(lvl.solve_A.runs[0])
             for lvl in ml.levels)
    stats_ok = comm.allreduce(int(ok), op=MPI.MIN) == 1
    residual = scipy_residual(comm, A, x, gen, matrix)
    if comm.rank != 0:
        return None
    s = ml.last_solve
    return {
        "matrix": gen if gen is not None else str(matrix), "rows": int(A.shape[0]), "nnz": int(levels[0]["nnz"]),
        "nranks": comm.size, "nodes": A.topology.num_nodes, "ppn": ppn, "method": method,
        "coarsening": (options.get("coarsening") or "pmis") if method == "classical" else None,
        "aggressive": options.get("aggressive", 0), "smoother": smoother,
        "sweeps": options.get("sweeps", 1), "cycle": ml.cycle_type,
        "strategy": strategy, "accel": accel, "tol": tol,
        "levels": levels, "operator_complexity": ml.operator_complexity, "grid_complexity": ml.grid_complexity,
        "sparsify": _sparsify_summary(ml),
        "setup_s": ml.setup_s, "setup_page_faults": ml.setup_page_faults, "setup_steps_s": setup_steps(levels),
        "solve_s": s["solve_s"],
        "iterations": s["iterations"], "converged": s["converged"],
        "convergence_factor": s["convergence_factor"], "residuals": s["residuals"], "warnings": s["warnings"],
        "asymmetry": ml.asymmetry,
        "rel_residual_vs_scipy": residual, "stats_recorded_equal_planned": bool(stats_ok), "info": info,
        "machine": machine_info(),
    }


def setup_steps(levels):
    """Rank 0's setup seconds per step, summed over the levels built in one C++ call
    (:meth:`MultilevelSolver.describe`'s ``setup_parts``), or None when none was."""
    parts = [lv["setup_parts"] for lv in levels if lv.get("setup_parts")]
    return {step: sum(p[step] for p in parts if step in p) for step in parts[0]} if parts else None


def scipy_residual(comm, A, x, gen, matrix, cells=None):
    """Collective. ||b - G x|| / ||b|| for b = 1 on rank 0, G the matrix scipy builds from the
    spec or reads from the file (None above CHECK_LIMIT rows, and on the other ranks).
    ``cells``: the row of G each of this rank's entries of x is (default: A's own rows)."""
    if A.shape[0] > CHECK_LIMIT:
        return None
    pieces = comm.gather((A.owned_rows() if cells is None else np.asarray(cells), x), root=0)
    if comm.rank != 0:
        return None
    x_global = np.zeros(A.shape[0])
    for rows, values in pieces:
        x_global[rows] = values
    G = sp.csr_matrix(parse_spec(gen).build(nprocs=comm.size) if gen is not None else mmread(matrix))
    return float(np.linalg.norm(1.0 - G @ x_global) / np.sqrt(G.shape[0]))


def _sparsify_summary(ml):
    """What sparsification was asked for and what the solve did with it (None: plain)."""
    spars = ml.sparsification
    if spars is None:
        return None
    a = ml.adaptive
    return {"method": spars.method, "lumping": spars.lumping, "gamma": list(spars.gamma),
            "adaptive": None if a is None else {"k": a.k, "s": a.s, "rho": a.rho},
            "galerkin_complexity": ml.galerkin_complexity, "gammas_now": ml.gammas,
            "updates": ml.last_solve["updates"]}


def format_amg(r):
    """The text report of :func:`run_amg`'s result."""
    coarsening = f" ({r['coarsening']})" if r["coarsening"] else ""
    if r.get("aggressive"):
        coarsening = coarsening[:-1] + f", {r['aggressive']} aggressive level(s), multipass)"
    head = [f"matrix      {r['matrix']}: {r['rows']:,} rows, {r['nnz']:,} nonzeros on {r['nranks']} rank(s), "
            f"{r['nodes']} node(s)",
            f"AMG         {r['method']}{coarsening}, smoother {r['smoother']} x{r['sweeps']}, {r['cycle']}-cycle, "
            f"strategy {r['strategy']}: "
            f"{len(r['levels'])} levels, "
            f"operator complexity {r['operator_complexity']:.3f}, grid complexity {r['grid_complexity']:.3f}"]
    spars = r.get("sparsify")
    if spars:
        head.append(f"sparsified  {spars['method']}, {spars['lumping']} lumping, gamma "
                    f"{','.join(f'{g:g}' for g in spars['gamma'])} (coarse levels 1, 2, ...; the last repeated)"
                    + (f"; Galerkin operator complexity {spars['galerkin_complexity']:.3f}"
                       if spars["method"] != "non-galerkin" else ""))
    cols = (f"{'level':>6}{'rows':>12}{'nnz':>14}{'complexity':>12}{'ranks':>7}  {'strategy':<18}{'inter msgs':>11}"
            f"{'intra msgs':>11}")
    if spars:
        cols += f"{'gamma':>7}{'nnz before':>12}{'inter before':>13}{'intra before':>13}{'inter bytes':>21}"

    def row(lv):
        text = (f"{lv['level']:>6}{lv['rows']:>12,}{lv['nnz']:>14,}{lv['complexity']:>12.3f}{lv['ranks']:>7}  "
                f"{lv['strategy']:<18}{lv['inter_msgs_max']:>11}{lv['intra_msgs_max']:>11}")
        done = lv.get("sparsified")
        if done:
            text += (f"{done['gamma']:>7g}{done['nnz_before']:>12,}{done['before']['inter_msgs_max']:>13}"
                     f"{done['before']['intra_msgs_max']:>13}"
                     f"{done['before']['inter_bytes_max']:>10,} -> {done['after']['inter_bytes_max']:<7,}")
        return text

    rows = []
    for lv in r["levels"]:
        for m in lv.get("moved", []):
            rows.append(f"{'':>6}  moved from {m['ranks_from']} ranks: the busiest receiver gets {m['recv_msgs_max']} "
                        f"messages, {m['recv_bytes_max']:,} bytes (gather; the scatter back as many)")
        rows.append(row(lv))
    res = r["rel_residual_vs_scipy"]
    tail = ["  (messages: the busiest rank's, one halo exchange of the operator the cycle applies"
            + ("; before: the Galerkin operator it was sparsified from" if spars else "") + ")",
            f"setup       {r['setup_s']:.3f} s ({r['setup_page_faults']:,} page faults on the busiest rank)"
            + ("" if not r.get("setup_steps_s") else
               "\n            " + ", ".join(f"{k} {v:.3f} s" for k, v in r["setup_steps_s"].items())
               + " (rank 0, the levels built in one C++ call)"),
            f"solve       {r['solve_s']:.3f} s, {r['iterations']} iterations ({r['accel'] or 'V-cycles'}), "
            f"{'converged' if r['converged'] else 'NOT converged'} to {r['tol']:g}, "
            f"convergence factor {r['convergence_factor']:.3f}",
            "check       " + ("skipped (problem too large)" if res is None else
                              f"||b - A x|| / ||b|| by scipy = {res:.2e}"),
            f"CommStats   recorded == planned on every level: {'yes' if r['stats_recorded_equal_planned'] else 'NO'}"]
    for u in (spars or {}).get("updates") or []:
        tail.append(f"adaptive    after iteration {u['iteration']} ({u['why']}): levels "
                    f"{', '.join(map(str, u['levels']))} to gamma {', '.join(f'{g:g}' for g in u['gammas'])}, CG "
                    f"restarted {u['restart']}")
    tail += [f"WARNING     {w}" for w in r.get("warnings", [])]
    return "\n".join(head + [cols] + rows + tail)


def plot_levels(r, path):
    """Per level: rows and nonzeros, and the busiest rank's messages (inter- and intra-node)."""
    from .._plotting import finish, pyplot

    plt = pyplot()
    lv = r["levels"]
    k = np.arange(len(lv))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    axes[0].bar(k - 0.2, [v["rows"] for v in lv], 0.4, label="rows")
    axes[0].bar(k + 0.2, [v["nnz"] for v in lv], 0.4, label="nonzeros")
    axes[0].set_yscale("log")
    axes[0].set_title("size per level")
    axes[1].bar(k - 0.2, [v["inter_msgs_max"] for v in lv], 0.4, label="inter-node")
    axes[1].bar(k + 0.2, [v["intra_msgs_max"] for v in lv], 0.4, label="intra-node")
    axes[1].set_title("busiest rank's messages per halo exchange")
    for ax in axes:
        ax.set_xlabel("level")
        ax.set_xticks(k)
        ax.legend()
    fig.suptitle(f"AMG on {r['matrix']}, {r['nranks']} ranks ({', '.join(v['strategy'] for v in lv)})", fontsize=9)
    fig.tight_layout()
    return finish(fig, path)
