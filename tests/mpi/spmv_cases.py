"""MPI script: every gallery matrix x partition x construction path, checked on every rank.

Usage: mpiexec -n K python -m mpi4py tests/mpi/spmv_cases.py K TMPDIR
Rank 0 prints one JSON line per case.
"""

import json
import os
import sys

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(__file__))
import cases  # noqa: E402

import commsolve as cs  # noqa: E402

comm = MPI.COMM_WORLD
expected, tmpdir = int(sys.argv[1]), sys.argv[2]
assert comm.size == expected, f"launched with {comm.size} ranks, expected {expected}"
ppn = cases.ppn_for(comm.size)
RUNS = 3


def relerr(a, b):
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def pattern_arrays(p):
    return [p.halo_globals, p.recv_peers, p.recv_ptr, p.send_peers, p.send_ptr, p.send_idx]


def plan_arrays(plan):
    out = [np.array([plan.n_owned, plan.n_halo, plan.n_work])]
    for st in plan.steps:
        out += [st.send_peers, st.send_ptr, st.send_idx, st.recv_peers, st.recv_offset, st.recv_count]
    return out


def same(xs, ys):
    return len(xs) == len(ys) and all(np.array_equal(x, y) for x, y in zip(xs, ys))


for gen, part, source in cases.all_cases():
    G = cs.gallery.from_spec(gen)  # the serial reference (every rank builds it: small)
    if source == "spec":
        A = cs.ParCSR.from_spec(gen, comm, partition=part, topology=ppn)
    elif source == "global":
        A = cs.ParCSR.from_global(G, comm, partition=part, topology=ppn)
    else:
        path = os.path.join(tmpdir, gen.replace(":", "_").replace(",", "_").replace("=", "") + ".mtx")
        if comm.rank == 0 and not os.path.exists(path):
            cs.mmwrite(path, G)
        comm.Barrier()
        A = cs.ParCSR.from_file(path, comm, partition=part, topology=ppn)

    xg = np.cos(np.arange(G.shape[1]) * 0.7) + 0.1
    rng = np.random.default_rng(7)
    zg = rng.standard_normal(G.shape[0])
    for _ in range(RUNS):
        y = A.matvec(A.distribute(xg))
    for _ in range(RUNS):
        w = A.rmatvec(A.distribute(zg, space="rows"))
    yg, wg = A.gather(y), A.gather(w, space="cols")

    planned = A.planned_stats()
    fwd_ok = A.recorded_stats() == planned.scaled(RUNS)
    rev_ok = A.recorded_stats(reverse=True) == planned.reversed().scaled(RUNS)
    # Each rank's pattern, plan and planned statistics must equal the virtual world's.
    mine = (pattern_arrays(A.pattern), plan_arrays(A.plan), planned.array)
    everyone = comm.gather(mine, root=0)
    stats_ok = comm.allreduce(int(fwd_ok and rev_ok), op=MPI.MIN) == 1
    if comm.rank == 0:
        vplans = cs.virtual.plans(G, A.row_dist)
        vpatterns = cs.virtual.halo_patterns(G, A.row_dist)
        vstats = cs.virtual.plan_stats(vplans, A.topology)
        virtual_ok = all(
            same(m[0], pattern_arrays(vpatterns[r])) and same(m[1], plan_arrays(vplans[r]))
            and np.array_equal(m[2], vstats[r].array)
            for r, m in enumerate(everyone)
        )
        print(json.dumps({
            "case": cases.case_id(gen, part, source),
            "matvec_err": relerr(yg, G @ xg),
            "rmatvec_err": relerr(wg, G.T @ zg),
            "stats_ok": stats_ok,
            "virtual_ok": bool(virtual_ok),
            "runs": list(A.runs),
        }), flush=True)
