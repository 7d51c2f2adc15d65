"""MPI script for the watchdog test: rank 0 calls a collective operation (matvec) that rank
1 never calls; rank 1 ends its program. Run with COMMSOLVE_TIMEOUT set."""

import sys

import numpy as np
from mpi4py import MPI

import commsolve as cs

comm = MPI.COMM_WORLD
assert comm.size == 2, f"launched with {comm.size} ranks, expected 2"
A = cs.ParCSR.from_spec("poisson2d:20", comm)
if comm.rank == 0:
    A.matvec(np.ones(A.local_cols))
    print("rank 0 got past the matvec", flush=True)
sys.exit(0)
