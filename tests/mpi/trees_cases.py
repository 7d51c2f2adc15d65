"""MPI script: hundreds of random overlapping restricted collectives, every tree shape.

Usage: mpiexec -n K python -m mpi4py tests/mpi/trees_cases.py K
Rank 0 prints one JSON line per shape.
"""

import json
import sys

import numpy as np
from mpi4py import MPI

import commsolve as cs
from commsolve import trees

comm = MPI.COMM_WORLD
expected = int(sys.argv[1])
assert comm.size == expected, f"launched with {comm.size} ranks, expected {expected}"
ppn = 2 if comm.size % 2 == 0 else 1
topo = cs.make_topology(comm, ppn=ppn)
C = trees.random_collectives(comm.size, 300, seed=11)


def root_values(c):
    return np.arange(C.counts[c], dtype=float) + 1000.0 * C.ids[c]


def contribution(c, rank):
    return (np.arange(C.counts[c], dtype=float) + 1.0) * (rank + 1) + C.ids[c]


for shape in trees.SHAPES:
    plan = trees.plan(C, comm.rank, topo, shape=shape, seed=5, flat_threshold=3)
    data = []
    for c in plan.index:
        if C.kinds[c] == 0:
            data.append(root_values(c) if C.roots[c] == comm.rank else np.full(C.counts[c], np.nan))
        else:
            data.append(contribution(c, comm.rank))
    recorded = trees.run(comm, C, plan, data, topo, max_posted=8)
    ok_values = True
    for c, d in zip(plan.index, data):
        if C.kinds[c] == 0:
            ok_values &= bool(np.array_equal(d, root_values(c)))
        elif C.roots[c] == comm.rank:
            ok_values &= bool(np.array_equal(d, sum(contribution(c, r) for r in C.participants[c])))
    planned = trees.stats([plan], C, topo)[0]
    mine = (plan.index, plan.parents, [plan.children(i) for i in range(len(plan.index))])
    everyone = comm.gather(mine, root=0)
    ok_values = comm.allreduce(int(ok_values), op=MPI.MIN) == 1
    ok_stats = comm.allreduce(int(recorded == planned), op=MPI.MIN) == 1
    if comm.rank == 0:
        vplans = trees.plans(C, topo, shape=shape, seed=5, flat_threshold=3)
        ok_virtual = all(np.array_equal(m[0], v.index) and np.array_equal(m[1], v.parents)
                         and m[2] == [v.children(i) for i in range(len(v.index))]
                         for m, v in zip(everyone, vplans))
        print(json.dumps({"shape": shape, "values_ok": ok_values, "stats_ok": ok_stats,
                          "virtual_ok": bool(ok_virtual)}), flush=True)
