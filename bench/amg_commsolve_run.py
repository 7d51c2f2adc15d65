"""One commsolve AMG-PCG run for bench/amg_vs_hypre.py: the matrix generated row by row on
every rank, ``cs.amg.solver`` (METHOD classical or sa, strategy auto) and CG to rtol 1e-8 from x0 = 0,
b = 1. Setup and solve are each timed between barriers (the slowest rank's time), REPEAT
times; rank 0's seconds per setup step (the levels built in one C++ call) beside them. Rank
0 prints one JSON line.

    mpiexec -n P python -m mpi4py bench/amg_commsolve_run.py SPEC REPEAT [METHOD [OPTION=VALUE ...]]

OPTION=VALUE: a setup option of ``cs.amg.solver`` (coarsening=hmis, aggressive=1, trunc=0.1,
...; numbers read as numbers).
"""

import json
import sys
import time

import numpy as np
from mpi4py import MPI

import commsolve as cs
from commsolve.runs.amg import setup_steps

spec, repeat = sys.argv[1], int(sys.argv[2])
method = sys.argv[3] if len(sys.argv) > 3 else "classical"
options = {}
for arg in sys.argv[4:]:
    key, _, value = arg.partition("=")
    try:
        options[key] = int(value)
    except ValueError:
        try:
            options[key] = float(value)
        except ValueError:
            options[key] = value
comm = MPI.COMM_WORLD
A = cs.ParCSR.from_spec(spec, comm)
b = np.ones(A.local_rows)
runs = []
for _ in range(repeat):
    comm.Barrier()
    t0 = time.perf_counter()
    ml = cs.amg.solver(A, method=method, strategy="auto", **options)
    comm.Barrier()
    setup = time.perf_counter() - t0
    t0 = time.perf_counter()
    x, info = ml.solve(b, tol=1e-8, accel="cg", maxiter=500)
    comm.Barrier()
    solve = time.perf_counter() - t0
    r = b - A.matvec(x)
    rel = np.sqrt(comm.allreduce(float(r @ r)) / comm.allreduce(float(b @ b)))
    steps = setup_steps(ml.describe())
    runs.append({"setup_s": setup, "setup_page_faults": ml.setup_page_faults, "setup_steps_s": steps,
                 "solve_s": solve, "iterations": ml.last_solve["iterations"],
                 "converged": info == 0, "rel_residual": rel, "operator_complexity": ml.operator_complexity,
                 "levels": len(ml.levels)})
if comm.rank == 0:
    peer = " ".join(["commsolve", method, *(f"{k}={v}" for k, v in options.items())])
    print(json.dumps({"peer": peer, "nranks": comm.size, "runs": runs}), flush=True)
