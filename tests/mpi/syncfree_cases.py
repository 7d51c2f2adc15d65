"""MPI script: the sync-free solve on a rank's threads (grids 1 x 1 x Pz).

Usage: mpiexec -n K python tests/mpi/syncfree_cases.py K OUTDIR [cuda]
With "cuda", the solve phases run on the GPU (DistributedLU.to_device) instead of threads.
On grid 1x1xK, for three gallery families (one nonsymmetric), every algorithm the grid runs,
nrhs 1, 3 and 50, and threads 1 to 8 (some runs with a deliberately adversarial schedule:
random sleeps and yields between taking a task, its additions and its counter decrements),
rank 0 prints one JSON line per run: the largest distance of x to the one-thread solve of
the same factors (relative to max |x|), the normwise backward error measured with scipy on
the gathered matrix, and whether every rank's recorded CommStats equal its plan.
"""

import json
import sys

import numpy as np
from mpi4py import MPI

from commsolve import direct, gallery
from threads_common import compared, gathered_solve

FAMILIES = ["poisson2d9:24", "poisson3d:9", "random:rows=500,nnz_per_row=6"]  # the last is nonsymmetric
OPTIONS = dict(max_supernode=8)  # small supernodes: many tasks and updates
NRHS = (1, 3, 50)

comm = MPI.COMM_WORLD
expected = int(sys.argv[1])
assert comm.size == expected, f"launched with {comm.size} ranks, expected {expected}"
ON_GPU = sys.argv[3:] == ["cuda"]
THREADS = [(2, 0), (3, 0), (8, 0), (8, 11), (4, 12)] if comm.size == 1 else [(2, 0), (4, 13)]
if ON_GPU:
    THREADS = [("cuda", 0)]
ALGORITHMS = ["2d"] if comm.size == 1 else ["3d", "3d-baseline", "3d-baseline-async"]

for spec in FAMILIES:
    A = gallery.from_spec(spec) if comm.rank == 0 else None
    n = comm.bcast(None if A is None else A.shape[0])
    B = np.random.default_rng(5).standard_normal((n, max(NRHS)))
    solver = direct.factor(A, comm, grid=(1, 1, comm.size), threads=1, **OPTIONS)
    dist = solver.distribution
    for algorithm in ALGORITHMS:
        for nrhs in NRHS:
            b = B[dist.owned(comm.rank), :nrhs]

            def solve(threads, chaos=0):
                solver.to_device("cuda" if threads == "cuda" else "cpu")
                solver.set_options(algorithm=algorithm, threads=1 if threads == "cuda" else threads)
                if chaos:  # the adversarial schedule (set on the core after set_options chose the threads)
                    solver._core.set_threads(threads, chaos_seed=chaos, chaos_sleep_us=30)
                return gathered_solve(solver, comm, b, n)

            X1, _ = solve(1)
            for threads, chaos in THREADS:
                X, stats_ok = solve(threads, chaos)
                if comm.rank != 0:
                    continue
                diff, berr = compared(A, B[:, :nrhs], X, X1)
                print(json.dumps({"family": spec.split(":")[0], "algorithm": algorithm, "nrhs": nrhs,
                                  "threads": threads, "chaos": chaos,
                                  "used": solver.device if threads == "cuda" else solver.threads,
                                  "diff": diff, "berr": berr, "stats_ok": bool(stats_ok)}), flush=True)
