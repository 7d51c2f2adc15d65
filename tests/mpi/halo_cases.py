"""MPI script: distributed SpMV and its transpose for a suite of cases, checked on every rank.

Usage: mpiexec -n K python -m mpi4py tests/mpi/halo_cases.py K TMPDIR SUITE PPN[,PPN...]
SUITE is "construction" or "strategies" (tests/mpi/cases.py); each PPN is a virtual ranks
per node ("real" for the machine's layout), the suite run once for each. Rank 0 prints one
JSON line per case and PPN.
"""

import itertools
import json
import os
import sys

import numpy as np
import scipy.sparse as sp
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(__file__))
import cases  # noqa: E402

import commsolve as cs  # noqa: E402

comm = MPI.COMM_WORLD
expected, tmpdir, suite_name, ppn_args = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4].split(",")
assert comm.size == expected, f"launched with {comm.size} ranks, expected {expected}"
RUNS = 3


def relerr(a, b):
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def pattern_arrays(p):
    return [p.halo_globals, p.recv_peers, p.recv_ptr, p.send_peers, p.send_ptr, p.send_idx]


def plan_arrays(plan):
    out = [np.array([plan.n_owned, plan.n_halo, plan.n_work]), plan.copy_src, plan.copy_dst]
    for st in plan.steps:
        out += [st.send_peers, st.send_ptr, st.send_idx, st.recv_peers, st.recv_offset, st.recv_count]
    return out


def reference(gen):
    """The global matrix of a case: a gallery spec, or one of cases.CUSTOM."""
    if not gen.startswith("custom-"):
        return cs.gallery.from_spec(gen)
    kind, n = gen[len("custom-"):].split(":")
    n = int(n)
    A = sp.identity(n, format="lil")
    if kind == "arrow":
        A[:, :2] = 1.0
    return sp.csr_matrix(A)


def same(xs, ys):
    return len(xs) == len(ys) and all(np.array_equal(x, y) for x, y in zip(xs, ys))


for ppn_arg, (gen, part, source, strategy) in itertools.product(ppn_args, cases.suite(suite_name)):
    ppn = None if ppn_arg == "real" else int(ppn_arg)
    G = reference(gen)  # the serial reference (every rank builds it: small)
    if source == "spec":
        A = cs.ParCSR.from_spec(gen, comm, partition=part, topology=ppn, strategy=strategy)
    elif source == "global":
        A = cs.ParCSR.from_global(G, comm, partition=part, topology=ppn, strategy=strategy)
    else:
        path = os.path.join(tmpdir, gen.replace(":", "_").replace(",", "_").replace("=", "") + ".mtx")
        if comm.rank == 0 and not os.path.exists(path):
            cs.mmwrite(path, G)
        comm.Barrier()
        A = cs.ParCSR.from_file(path, comm, partition=part, topology=ppn, strategy=strategy)

    xg = np.cos(np.arange(G.shape[1]) * 0.7) + 0.1
    rng = np.random.default_rng(7)
    zg = rng.standard_normal(G.shape[0])
    for _ in range(RUNS - 1):
        y = A.matvec(A.distribute(xg))
    halo = A.exchange(A.distribute(xg))  # the third forward run: a bare ghost update
    halo_ok = bool(np.array_equal(halo, xg[A.col_map]))
    for _ in range(RUNS):
        w = A.rmatvec(A.distribute(zg, space="rows"))
    yg, wg = A.gather(y), A.gather(w, space="cols")

    planned = A.planned_stats()
    fwd_ok = A.recorded_stats() == planned.scaled(RUNS)
    rev_ok = A.recorded_stats(reverse=True) == planned.reversed().scaled(RUNS)
    # Each rank's pattern, plan and planned statistics must equal the virtual world's.
    mine = (pattern_arrays(A.pattern), plan_arrays(A.plan), planned.array)
    everyone = comm.gather(mine, root=0)
    stats_ok = comm.allreduce(int(fwd_ok and rev_ok and halo_ok), op=MPI.MIN) == 1
    runs = list(A.runs)
    # The same product with the standard strategy, for the 1e-13 agreement between strategies.
    S = cs.ParCSR.from_global(G, comm, partition=part, topology=ppn) if strategy != "standard" else A
    ys = S.gather(S.matvec(S.distribute(xg)))
    # The standard matrix re-planned for this strategy: the same plan as building it so, the
    # same product, and its own exchange recorded as planned.
    W = S.with_strategy(strategy)
    yw = W.gather(W.matvec(W.distribute(xg)))
    w_ok = same(plan_arrays(W.plan), plan_arrays(A.plan)) and W.recorded_stats() == W.planned_stats()
    with_strategy_ok = comm.allreduce(int(w_ok), op=MPI.MIN) == 1
    if comm.rank == 0:
        vplans = cs.virtual.plans(G, A.row_dist, strategy=strategy, topology=A.topology)
        vpatterns = cs.virtual.halo_patterns(G, A.row_dist)
        vstats = cs.virtual.plan_stats(vplans, A.topology)
        virtual_ok = all(
            same(m[0], pattern_arrays(vpatterns[r])) and same(m[1], plan_arrays(vplans[r]))
            and np.array_equal(m[2], vstats[r].array)
            for r, m in enumerate(everyone)
        )
        print(json.dumps({
            "case": cases.case_id(gen, part, source, strategy),
            "ppn": ppn_arg,
            "plan_strategy": A.plan.strategy,
            "steps": len(A.plan.steps),
            "matvec_err": relerr(yg, G @ xg),
            "vs_standard_err": relerr(yg, ys),
            "with_strategy_ok": with_strategy_ok and relerr(yw, yg) <= 1e-13,
            "rmatvec_err": relerr(wg, G.T @ zg),
            "stats_ok": stats_ok,
            "virtual_ok": bool(virtual_ok),
            "runs": runs,
        }), flush=True)
