"""MPI script: distributed classical AMG-PCG, checked on every rank.

Usage: mpiexec -n K python -m mpi4py tests/mpi/amg_cases.py K TMPDIR PPN
For each case rank 0 prints one JSON line: the hierarchy (rows, nnz per level), each level's
coarse operator against scipy's P^T A P of the same gathered P, the statistics every rank
recorded (halo exchanges of every level's A and P; both Galerkin exchanges) against the
plans' and the virtual world's, and per smoother the iterations and the true residual
computed by scipy.
"""

import json
import os
import sys

import numpy as np
import scipy.sparse as sp
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(__file__))
import commsolve as cs  # noqa: E402

comm = MPI.COMM_WORLD
expected, tmpdir, ppn = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
assert comm.size == expected, f"launched with {comm.size} ranks, expected {expected}"
CASES = (("poisson2d:40", "auto"), ("poisson3d:10", "auto"), ("aniso2d:40,eps=0.01,theta=30", "standard"))
# (name, options): classical AMG with its defaults (extended+i interpolation, 4 entries per
# row) and both smoothers, with pyamg's direct interpolation for the comparison with it,
# and smoothed aggregation, and HMIS coarsening. The "hybrid-gs" and "sa" hierarchies are
# checked level by level.
SOLVERS = (("direct", {"smoother": "hybrid-gs", "interpolation": "direct"}), ("jacobi", {"smoother": "jacobi"}),
           ("hybrid-gs", {"smoother": "hybrid-gs"}), ("sa", {"method": "sa"}),
           ("chebyshev", {"smoother": "chebyshev"}), ("hmis", {"coarsening": "hmis"}),
           ("hmis-direct", {"coarsening": "hmis", "interpolation": "direct"}),
           ("symmetric-gs", {"smoother": "symmetric-gs"}), ("l1-symmetric-gs", {"smoother": "l1-symmetric-gs"}),
           ("w-cycle", {"smoother": "symmetric-gs", "cycle": "W"}),
           ("chebyshev-4", {"smoother": "chebyshev", "degree": 4, "cycle": "W"}))
CHECKED = ("hybrid-gs", "sa")


def relerr(C, R):
    return float(sp.linalg.norm(C - R) / max(sp.linalg.norm(R), 1e-300))


def worst(values):
    """The largest value, NaN above all (Python's max can pass over a NaN)."""
    return max(values, key=lambda v: (np.isnan(v), v))


def all_ok(flag):
    return comm.allreduce(int(bool(flag)), op=MPI.MIN) == 1


def halo_stats_ok(M):
    """Every run of M's halo plan recorded exactly what the plan says, both directions."""
    fwd, rev = M.runs
    planned = M.planned_stats()
    return M.recorded_stats() == planned.scaled(fwd) and M.recorded_stats(reverse=True) == planned.reversed().scaled(rev)


for gen, strategy in CASES:
    A = cs.ParCSR.from_spec(gen, comm, topology=ppn)
    b = np.cos(0.3 * A.owned_rows())
    out = {"case": gen, "strategy": strategy, "solves": {}}
    hierarchies = {}
    for name, options in SOLVERS:
        ml = cs.amg.solver(A, strategy=strategy, **options)
        x, info = ml.solve(b, tol=1e-8, accel="cg")
        xg, bg = A.gather(x), A.gather(b)
        G = A.to_global(root=0)
        hierarchies[name] = ml
        if comm.rank == 0:
            out["solves"][name] = {"iterations": ml.last_solve["iterations"], "info": info,
                                   "residual": float(np.linalg.norm(bg - G @ xg) / np.linalg.norm(bg)),
                                   "levels": len(ml.levels), "operator_complexity": ml.operator_complexity}
    for name in CHECKED:  # level by level: sizes, strategies, Galerkin products, statistics
        ml = hierarchies[name]
        levels = ml.describe()
        errs, ok = [], True
        for k, lvl in enumerate(ml.levels):
            ok &= halo_stats_ok(lvl.A) and (lvl.P is None or halo_stats_ok(lvl.P))
            if lvl.P is None:
                continue
            Ag, Pg, Acg = lvl.A.to_global(root=0), lvl.P.to_global(root=0), ml.levels[k + 1].A.to_global(root=0)
            Ag, Pg = comm.bcast(Ag, root=0), comm.bcast(Pg, root=0)
            ap, rap = cs.virtual.galerkin_record_stats(Ag, Pg, lvl.A.row_dist, lvl.P.col_dist, lvl.A.topology,
                                                       *[e["strategy"] for e in lvl.exchanges])
            ok &= lvl.exchanges[0]["recorded"] == ap[comm.rank] and lvl.exchanges[1]["recorded"] == rap[comm.rank]
            if comm.rank == 0:
                errs.append(relerr(Acg, sp.csr_matrix(Pg.T @ Ag @ Pg)))
        # Smoothed aggregation fits P0 to each level's candidate B and hands the coarse level
        # B_c with P0 B_c = B (no point is unaggregated here: theta 0, no isolated points), so
        # the smoothed P = (I - omega / rho D^-1 A) P0 maps B_c to B smoothed once.
        cand_errs = []
        for k, lvl in enumerate(ml.levels[:-1] if name == "sa" else []):
            B, Bc = lvl.A.gather(lvl.candidate), ml.levels[k + 1].A.gather(ml.levels[k + 1].candidate)
            Ag, Pg = lvl.A.to_global(root=0), lvl.P.to_global(root=0)
            if comm.rank == 0:
                smoothed = B - (4.0 / 3.0 / lvl.rho) * (Ag @ B) / Ag.diagonal()
                cand_errs.append(float(np.linalg.norm(Pg @ Bc - smoothed) / np.linalg.norm(B)))
                cand_errs.append(0.0 if k or np.all(B == 1.0) else 1.0)  # the finest level's is the constant
        out[name] = {"candidate_err": worst(cand_errs) if cand_errs else None,
                     "rows": [lv["rows"] for lv in levels], "nnz": [lv["nnz"] for lv in levels],
                     "strategies": [lv["strategy"] for lv in levels], "stats_ok": all_ok(ok),
                     "galerkin_err": worst(errs) if errs else 0.0}
    # HMIS's first split against pyamg's strength of the gathered matrix: every point that
    # strongly depends on another strongly depends on a coarse point, unless it is one.
    cpts = comm.gather(hierarchies["hmis"].levels[0].c_points, root=0)
    # The rank's interior first-pass coarse points (no strong dependency on another rank)
    # stay coarse: HMIS is not PMIS.
    from commsolve.amg.classical import strength, strength_graphs

    L = A.local_block()
    S, Gsym, depends = strength_graphs(A, L, strength(L, 0.25), "standard")
    Gsym_global = Gsym.to_global(root=0)
    depends_all = comm.gather(depends, root=0)
    interior = np.diff(S.block("offd_on_node").indptr) + np.diff(S.block("offd_off_node").indptr) == 0
    kept = A.owned_rows()[(cs._core.rs_first_pass(S._core) == 1) & interior]
    hmis_keeps = all_ok(np.isin(kept, hierarchies["hmis"].levels[0].c_points).all() and kept.size > 0)
    if comm.rank == 0:
        import pyamg

        S = pyamg.strength.classical_strength_of_connection(G, theta=0.25, norm="min").tocsr()
        S.setdiag(0)
        S.eliminate_zeros()
        coarse = np.zeros(G.shape[0], dtype=bool)
        coarse[np.concatenate(cpts)] = True
        has_strong = np.diff(S.indptr) > 0
        strong_c = (S @ coarse.astype(float)) > 0
        out["hmis_split"] = {"coarse": int(coarse.sum()), "keeps_first_pass": hmis_keeps,
                             "uncovered": int(np.sum(has_strong & ~coarse & ~strong_c))}
        # PMIS's graphs against pyamg's strength: S + S^T's pattern, and how many points depend on each
        sym = (abs(S) + abs(S.T)).tocsr()
        sym.eliminate_zeros()
        out["strength_graphs"] = {
            "symmetric_pattern": bool((abs(Gsym_global) > 0).astype(int).__ne__((sym > 0).astype(int)).nnz == 0),
            "depends_on_me": bool(np.array_equal(np.concatenate(depends_all), np.diff(S.tocsc().indptr)))}
    # Level 0's P untruncated, with the coarse points, for the test's own extended+i reference.
    ml0 = cs.amg.solver(A, strategy=strategy, pmax=0, max_levels=2)
    P0 = ml0.levels[0].P.to_global(root=0)
    cpts = comm.gather(ml0.levels[0].c_points, root=0)
    if comm.rank == 0:
        out["P0"] = {"indptr": P0.indptr.tolist(), "indices": P0.indices.tolist(), "data": P0.data.tolist(),
                     "shape": list(P0.shape), "c_points": np.concatenate(cpts).tolist()}
    # Another partition: the random weights follow the points' fine-grid identities, so the
    # first coarse grid is the same; deeper ones may differ where truncation breaks ties by
    # column order (which the coarse numbering, rank by rank, changes).
    As = cs.ParCSR.from_spec(gen, comm, partition="strided", topology=ppn)
    for name, options in (("jacobi", {"smoother": "jacobi"}), ("sa", {"method": "sa", "smoother": "jacobi"})):
        ml = cs.amg.solver(As, strategy=strategy, **options)
        xs, info = ml.solve(np.cos(0.3 * As.owned_rows()), tol=1e-8, accel="cg")
        out[f"strided-{name}"] = {"rows": [lvl.rows for lvl in ml.levels], "iterations": ml.last_solve["iterations"],
                                  "info": info}
    if comm.rank == 0:
        print(json.dumps(out), flush=True)
