"""MPI part of bench/node_aware.py: SpMV per strategy, interleaved, on 4 ranks, 2 per node.

Usage: mpiexec -n 4 python -m mpi4py bench/node_aware_mpi.py REPEATS SPEC [SPEC ...]
Rank 0 prints a JSON list: per matrix, the median over repeats of the slowest rank's time.
"""

import json
import sys
import time

import numpy as np
from mpi4py import MPI

import commsolve as cs

comm = MPI.COMM_WORLD
assert comm.size == 4, f"launched with {comm.size} ranks, expected 4"
reps, specs = int(sys.argv[1]), sys.argv[2:]
strategies = ["standard", "node-aware", "node-aware-2step"]
out = []
for spec in specs:
    mats = {s: cs.ParCSR.from_spec(spec, comm, topology=2, strategy=s) for s in strategies}
    x = np.ones(mats["standard"].local_cols)
    y = {s: np.empty(mats[s].local_rows) for s in strategies}
    times = {s: [] for s in strategies}
    for s in strategies:
        mats[s].matvec(x, y[s])
    for _ in range(reps):
        for s in strategies:  # interleaved, so drifts in machine speed hit all alike
            comm.Barrier()
            t = time.perf_counter()
            mats[s].matvec(x, y[s])
            times[s].append(time.perf_counter() - t)
    agree = all(np.allclose(y[s], y["standard"], rtol=1e-13, atol=0) for s in strategies)
    med = {}
    for s in strategies:
        t = np.array(times[s])
        comm.Allreduce(MPI.IN_PLACE, t, op=MPI.MAX)
        med[s] = float(np.median(t) * 1e3)
    stats = {s: cs.stats.summarize(comm.allgather(mats[s].planned_stats()))["max"] for s in strategies}
    agree = comm.allreduce(int(agree), op=MPI.MIN) == 1
    out.append({"matrix": spec, "repeats": reps, "median_ms": med, "results_agree": agree,
                "max_per_rank": stats})
if comm.rank == 0:
    print(json.dumps(out))
