"""MPI script: classical AMG with aggressive coarsening (``aggressive=``), checked on every
rank.

Usage: mpiexec -n K python -m mpi4py tests/mpi/amg_aggressive_cases.py K TMPDIR PPN
For each case rank 0 prints one JSON line: per configuration the hierarchy's sizes, the
iterations and the true residual (scipy); for PMIS with one aggressive level, the gathered
first and second coarse points, level 0's P, the coarse operator against scipy's P^T A P,
and the level's exchanges against the virtual world's (the second split's product, each
multipass pass's from the passes of the gathered strength matrix, the Galerkin product's).
"""

import json
import os
import sys

import numpy as np
import scipy.sparse as sp
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(__file__))
import commsolve as cs  # noqa: E402
from aggressive_matrices import CASES, matrix  # noqa: E402
from commsolve.amg.classical import strength, strength_graphs  # noqa: E402

comm = MPI.COMM_WORLD
expected, tmpdir, ppn = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
assert comm.size == expected, f"launched with {comm.size} ranks, expected {expected}"
CONFIGS = (("pmis-1", {"aggressive": 1}), ("hmis-1", {"aggressive": 1, "coarsening": "hmis"}),
           ("pmis-2", {"aggressive": 2, "smoother": "symmetric-gs"}),
           ("pmis-1-w", {"aggressive": 1, "smoother": "l1-symmetric-gs", "cycle": "W"}))


def multipass_passes(S, coarse):
    """Each point's multipass pass, from the gathered strength matrix S (ones where a point
    depends strongly on another): 0 for the coarse points, k for a point depending on one
    of pass k - 1 and on none earlier, -1 for points 10 passes do not reach."""
    which = np.full(S.shape[0], -1)
    which[coarse] = 0
    for k in range(1, 11):
        reached = (S @ (which == k - 1).astype(float) > 0) & (which == -1)
        if not reached.any():
            break
        which[reached] = k
    return which


def gathered(values):
    parts = comm.gather(np.asarray(values), root=0)
    return None if parts is None else np.concatenate(parts)


for gen in CASES:
    A = cs.ParCSR.from_global(matrix(gen), comm, topology=ppn)
    G = A.to_global(root=0)
    b = np.cos(0.3 * A.owned_rows())
    out = {"case": gen}
    for name, options in CONFIGS:
        ml = cs.amg.solver(A, strategy="auto", **options)
        x, info = ml.solve(b, tol=1e-8, accel="cg")
        xg, bg = A.gather(x), A.gather(b)
        if comm.rank == 0:
            out[name] = {"iterations": ml.last_solve["iterations"], "info": info,
                         "residual": float(np.linalg.norm(bg - G @ xg) / np.linalg.norm(bg)),
                         "rows": [lvl.rows for lvl in ml.levels], "operator_complexity": ml.operator_complexity}
        if name != "pmis-1":
            continue
        lvl = ml.levels[0]
        first = cs.amg.solver(A, strategy="auto", max_levels=2).levels[0].c_points  # the first split alone
        Pg, Acg = lvl.P.to_global(root=0), ml.levels[1].A.to_global(root=0)
        # the exchanges, against the virtual world's: the second split's product S_C (I + S) Inj
        # (S_C: S's rows of the first coarse points), then multipass's passes k = 2, 3, ...,
        # each M_k P_<k (M_k: A's strong couplings of pass-k points to pass-(k-1) points, P_<k:
        # P's rows of passes below k, all that is assigned then), after the Galerkin product's two
        L = A.local_block()
        S = strength_graphs(A, L, strength(L, 0.25), "standard")[0].to_global(root=None)
        which_all = multipass_passes(S, np.concatenate(comm.allgather(lvl.c_points)))
        c1 = np.concatenate(comm.allgather(first))
        inj = sp.csr_matrix((np.ones(c1.size), (c1, np.arange(c1.size))), shape=(A.shape[0], c1.size))
        rows_c1 = sp.diags(np.isin(np.arange(A.shape[0]), c1).astype(float))
        topo = A.topology
        galerkin, setup = lvl.exchanges[:2], lvl.exchanges[2:]
        Ag, Pall = comm.bcast(G, root=0), comm.bcast(Pg, root=0)
        ap, rap = cs.virtual.galerkin_record_stats(Ag, Pall, A.row_dist, lvl.P.col_dist, topo,
                                                   *[e["strategy"] for e in galerkin])
        ok = galerkin[0]["recorded"] == ap[comm.rank] and galerkin[1]["recorded"] == rap[comm.rank]
        paths = cs.virtual.spgemm_record_stats(rows_c1 @ S, (sp.identity(A.shape[0]) + S) @ inj, A.row_dist,
                                               A.row_dist, topo, setup[0]["strategy"])
        ok &= setup[0]["recorded"] == paths[comm.rank] and len(setup) == max(1, which_all.max())
        strong_A = Ag.multiply(S != 0).tocoo()
        for k, e in enumerate(setup[1:], start=2):
            pick = (which_all[strong_A.row] == k) & (which_all[strong_A.col] == k - 1)
            Mk = sp.csr_matrix((strong_A.data[pick], (strong_A.row[pick], strong_A.col[pick])), shape=Ag.shape)
            Pk = sp.diags(((which_all >= 0) & (which_all < k)).astype(float)) @ Pall
            Pk.eliminate_zeros()
            expected = cs.virtual.spgemm_record_stats(Mk, Pk, A.row_dist, A.row_dist, topo, e["strategy"])
            ok &= e["recorded"] == expected[comm.rank]
        ok = comm.allreduce(int(bool(ok)), op=MPI.MIN) == 1
        second, P0 = gathered(lvl.c_points), Pg
        first = gathered(first)
        if comm.rank == 0:
            out[name].update({
                "first": first.tolist(), "second": second.tolist(), "stats_ok": ok,
                "galerkin_err": float(sp.linalg.norm(Acg - Pg.T @ G @ Pg) / sp.linalg.norm(Acg)),
                "P0": {"indptr": P0.indptr.tolist(), "indices": P0.indices.tolist(), "data": P0.data.tolist(),
                       "shape": list(P0.shape)}})
    if comm.rank == 0:
        print(json.dumps(out), flush=True)
