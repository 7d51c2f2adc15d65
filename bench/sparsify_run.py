"""One commsolve AMG-PCG run for bench/sparsify.py: the matrix generated row by row on every
rank, classical AMG (PMIS, extended+i at most 4 per row, hybrid Gauss-Seidel: hypre's
settings in bench/hypre_amg.c), plain or sparsified, CG to rtol 1e-8 from x0 = 0, b = 1.
Setup and solve each timed between barriers (the slowest rank's), REPEAT times; the
hierarchy's levels (rows, the nonzeros the cycle applies and before sparsification) from
the first. Rank 0 prints one JSON line.

    mpiexec -n P python -m mpi4py bench/sparsify_run.py SPEC REPEAT [METHOD GAMMA [LUMPING]]
"""

import json
import sys
import time

import numpy as np
from mpi4py import MPI

import commsolve as cs

spec, repeat = sys.argv[1], int(sys.argv[2])
options = {}
if len(sys.argv) > 3:
    options = {"sparsify": sys.argv[3], "gamma": sys.argv[4]}
    if len(sys.argv) > 5:
        options["lumping"] = sys.argv[5]
comm = MPI.COMM_WORLD
A = cs.ParCSR.from_spec(spec, comm)
b = np.ones(A.local_rows)
runs, levels = [], None
for _ in range(repeat):
    comm.Barrier()
    t0 = time.perf_counter()
    ml = cs.amg.solver(A, strategy="standard", **options)
    comm.Barrier()
    setup = time.perf_counter() - t0
    t0 = time.perf_counter()
    try:
        x, info = ml.solve(b, tol=1e-8, accel="cg", maxiter=300)
        failure = None
    except cs.CollectiveError as e:  # CG broke down: the preconditioner is not positive definite
        x, info, failure = np.zeros(A.local_rows), -1, str(e)
    comm.Barrier()
    solve = time.perf_counter() - t0
    r = b - A.matvec(x)
    rel = np.sqrt(comm.allreduce(float(r @ r)) / comm.allreduce(float(b @ b)))
    its = ml.last_solve["iterations"] if ml.last_solve else None
    runs.append({"setup_s": setup, "solve_s": solve, "iterations": its, "converged": info == 0,
                 "rel_residual": rel, "failure": failure, "operator_complexity": ml.operator_complexity})
    if levels is None:
        levels = [{"rows": d["rows"], "nnz": d["nnz"],
                   "nnz_before": d["sparsified"]["nnz_before"] if d["sparsified"] else d["nnz"]}
                  for d in ml.describe()]
if comm.rank == 0:
    print(json.dumps({"nranks": comm.size, "options": options, "levels": levels, "runs": runs}), flush=True)
