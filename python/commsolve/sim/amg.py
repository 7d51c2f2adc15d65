"""An AMG-preconditioned CG iteration at scale (thesis Chapter 4's question: what does
sparsification save per iteration?): the hierarchy is set up once in this process, every
level distributed over the virtual ranks as a run distributes it, and each halo exchange one
iteration runs (counted by running one, not assumed: CG's product and one V-cycle, whatever
the smoother) replayed by the simulator with a machine profile.

What is priced: the halo exchanges of every level's operator (the sparsified one where
there is one) and of its interpolation P, forward (interpolation) and reverse (restriction,
priced as the forward exchange: the same messages the other way). Not priced: the local
products, CG's two global dot products per iteration and the coarsest level's gather
(collectives that sparsification does not change).
"""

from __future__ import annotations

import time

import numpy as np

from .. import virtual
from ..topology import make_topology
from .halo import HaloSchedule, STRATEGIES, simulate_halo

__all__ = ["exchanges_per_iteration", "simulate_amg_iteration", "compare_sparsified", "format_amg_iteration"]


def exchanges_per_iteration(ml):
    """Collective on ``ml``'s communicator. Per level, the halo exchanges one CG iteration
    runs, counted by running CG's product and one V-cycle in place (the operators' recorded
    counts are reset first).

    Parameters
    ----------
    ml : MultilevelSolver
        The set-up hierarchy (:func:`commsolve.amg.solver`).

    Returns
    -------
    list of tuple of int
        Per level, (operator's forward, P's forward, P's reverse); 0 for P on the coarsest
        level.
    """
    for lvl in ml.levels:
        for M in (lvl.solve_A, lvl.P):
            if M is not None:
                M.reset_recorded()
    ml.A.matvec(np.ones(ml.A.local_cols))
    ml.cycle(np.ones(ml.A.local_rows))
    out = []
    for lvl in ml.levels:
        p = lvl.P.runs if lvl.P is not None else (0, 0)
        out.append((lvl.solve_A.runs[0], p[0], p[1]))
    return out


def simulate_amg_iteration(ml, nprocs, ppn, profile, strategy="standard", progress=None):
    """Collective on ``ml``'s (one-rank) communicator. The predicted halo-exchange time of
    one CG iteration preconditioned by ``ml`` on ``nprocs`` virtual ranks (``ppn`` per
    node), level by level.

    Parameters
    ----------
    ml : MultilevelSolver
        The hierarchy, set up in this process; every level is distributed over the virtual
        ranks as a run on ``nprocs`` ranks distributes it.
    nprocs : int
        Virtual ranks.
    ppn : int
        Ranks per node.
    profile : str, path or MachineProfile
        The machine profile (:func:`~commsolve.sim.simulation_profile`).
    strategy : str
        The halo strategy simulated: ``"standard"``, ``"node-aware"`` or
        ``"node-aware-2step"``.
    progress : callable, optional
        ``progress(done, total)`` after each level, with the levels done and their number.

    Returns
    -------
    dict
        ``levels``, per level its index ``level``, ``rows``, nonzeros ``nnz``, exchanges of
        the operator ``exchanges`` and of P ``p_exchanges`` (forward and reverse), seconds
        per exchange of the operator ``exchange_s`` and of P ``p_exchange_s``, and the
        level's seconds per iteration ``iteration_s``; and ``total_s``, their sum.

    Raises
    ------
    ValueError
        For an unknown halo strategy.
    """
    from ..amg.analysis import level_distributions

    if strategy not in STRATEGIES:
        raise ValueError(f"unknown halo strategy {strategy!r} (known: {', '.join(STRATEGIES)})")
    topo = make_topology(size=nprocs, ppn=ppn)
    dists = level_distributions(ml, nprocs)
    counts = exchanges_per_iteration(ml)

    def exchange_s(M, rows, cols):
        plans = virtual.plans(M, rows, cols, strategy=strategy, topology=topo)
        return simulate_halo(HaloSchedule(plans, strategy), topo, profile).predicted_s

    levels = []
    for k, (lvl, (n_op, n_interp, n_restrict)) in enumerate(zip(ml.levels, counts)):
        Ak = lvl.solve_A.local_matrix()
        op_s = exchange_s(Ak, dists[k], dists[k]) if n_op else 0.0
        p_s = exchange_s(lvl.P.local_matrix(), dists[k], dists[k + 1]) if lvl.P is not None else 0.0
        levels.append({"level": k, "rows": int(Ak.shape[0]), "nnz": int(Ak.nnz), "exchanges": n_op,
                       "p_exchanges": n_interp + n_restrict, "exchange_s": op_s, "p_exchange_s": p_s,
                       "iteration_s": n_op * op_s + (n_interp + n_restrict) * p_s})
        if progress:
            progress(k + 1, len(ml.levels))
    return {"levels": levels, "total_s": sum(lv["iteration_s"] for lv in levels)}


def compare_sparsified(A, nprocs, ppn, profile, strategy="standard", sparsify=None, gamma=None, lumping=None,
                       progress=None, **setup):
    """Plain AMG and AMG sparsified as asked, both set up once in this process from the
    scipy matrix ``A``: each one's predicted halo time per CG iteration on ``nprocs`` ranks
    (:func:`simulate_amg_iteration`), and the iterations CG takes here (one process: the
    hierarchy is the partition's, the hybrid Gauss-Seidel smoother is Gauss-Seidel here).

    Parameters
    ----------
    A : scipy sparse matrix
        The matrix.
    nprocs : int
        Virtual ranks.
    ppn : int
        Ranks per node.
    profile : str, path or MachineProfile
        The machine profile (:func:`~commsolve.sim.simulation_profile`).
    strategy : str
        The halo strategy simulated (both hierarchies are set up with ``"standard"``).
    sparsify, gamma, lumping : optional
        The sparsification (:func:`commsolve.amg.solver`'s options of those names).
    progress : callable, optional
        As :func:`simulate_amg_iteration`'s, for each of the two hierarchies.
    **setup
        The other options of :func:`commsolve.amg.solver`.

    Returns
    -------
    dict
        ``nprocs``, ``ppn``, ``strategy``, ``profile`` (its name), ``runs`` (``galerkin``
        and ``sparsified``: :func:`simulate_amg_iteration`'s dict with ``iterations`` and
        ``converged`` of CG to 1e-8, at most 500 iterations, ``operator_complexity``,
        ``wall_s`` and ``gammas``), ``iteration_ratio`` (sparsified over Galerkin time per
        iteration) and ``solve_ratio`` (the same for the halo time to solution); a ratio is
        None where the Galerkin time (or, for ``solve_ratio``, its iterations) is 0.
    """
    from mpi4py import MPI

    from ..amg import solver

    out = {"nprocs": nprocs, "ppn": ppn, "strategy": strategy, "profile": getattr(profile, "name", profile),
           "runs": {}}
    cases = (("galerkin", {}), ("sparsified", {"sparsify": sparsify, "gamma": gamma, "lumping": lumping}))
    b = None
    for name, extra in cases:
        t0 = time.perf_counter()
        ml = solver(A, MPI.COMM_SELF, strategy="standard", **setup, **extra)
        b = np.cos(0.3 * np.arange(A.shape[0])) if b is None else b
        ml.solve(b, tol=1e-8, maxiter=500)
        sim = simulate_amg_iteration(ml, nprocs, ppn, profile, strategy, progress)
        out["runs"][name] = {**sim, "iterations": ml.last_solve["iterations"], "converged": ml.last_solve["converged"],
                             "operator_complexity": ml.operator_complexity, "wall_s": time.perf_counter() - t0,
                             "gammas": ml.gammas}
    g, s = out["runs"]["galerkin"], out["runs"]["sparsified"]
    out["iteration_ratio"] = s["total_s"] / g["total_s"] if g["total_s"] > 0 else None
    out["solve_ratio"] = (s["total_s"] * s["iterations"] / (g["total_s"] * g["iterations"])
                          if g["total_s"] > 0 and g["iterations"] > 0 else None)
    return out


def format_amg_iteration(r, name):
    """The text report of a :func:`compare_sparsified`: per level, Galerkin against
    sparsified, then the totals and what is priced.

    Parameters
    ----------
    r : dict
        :func:`compare_sparsified`'s result.
    name : str
        The matrix's name, for the heading.

    Returns
    -------
    str
    """
    g, s = r["runs"]["galerkin"], r["runs"]["sparsified"]
    lines = [f"{name}: one AMG-CG iteration's halo exchanges on {r['nprocs']:,} ranks ({r['ppn']} per node), "
             f"{r['strategy']} strategy, profile {r['profile']}: Galerkin vs sparsified",
             f"{'level':>5}{'rows':>11}{'nnz':>25}{'exch':>6}{'us per exchange':>24}{'us per iteration':>24}"]
    for a, b in zip(g["levels"], s["levels"]):
        lines.append(f"{a['level']:>5}{a['rows']:>11,}{a['nnz']:>12,} -> {b['nnz']:<9,}{a['exchanges']:>6}"
                     f"{a['exchange_s'] * 1e6:>11.1f} -> {b['exchange_s'] * 1e6:<9.1f}"
                     f"{a['iteration_s'] * 1e6:>11.1f} -> {b['iteration_s'] * 1e6:<9.1f}")
    extra = len(s["levels"]) - len(g["levels"])
    if extra:
        lines.append(f"  (the sparsified hierarchy has {abs(extra)} level(s) {'more' if extra > 0 else 'fewer'}; "
                     "rows and levels paired from the finest)")
    lines += [f"per iteration: {g['total_s'] * 1e6:.1f} us -> {s['total_s'] * 1e6:.1f} us "
              f"({r['iteration_ratio']:.2f}x)",
              f"iterations (CG to 1e-8, one process): {g['iterations']} -> {s['iterations']}; halo time to "
              f"solution {r['solve_ratio']:.2f}x",
              "(priced: every level's operator and P exchanges, restriction as interpolation's; not priced: "
              "local work, CG's dot products, the coarsest level's gather)"]
    return "\n".join(lines)
