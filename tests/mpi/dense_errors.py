"""MPI script: 2.5D LU on 1x1xK (or 2x1x1 for "singular") of a matrix it cannot factor: the
rank that meets the bad pivot aborts the job naming its column (tests/test_dense_mpi.py).

Usage: mpiexec -n K python tests/mpi/dense_errors.py K MODE
MODE: "zero-pivot" (no pivoting, first pivot zero) or "singular" (tournament pivoting,
column 2 zero)."""

import sys

import numpy as np
from mpi4py import MPI

from commsolve import dense

comm = MPI.COMM_WORLD
assert comm.size == int(sys.argv[1])
if sys.argv[2] == "zero-pivot":
    A = np.array([[0.0, 1.0, 2.0], [1.0, 3.0, 1.0], [2.0, 1.0, 4.0]])
    dense.lu(A, comm, grid=(1, 1, comm.size), nb=2)
else:
    A = np.random.default_rng(0).standard_normal((6, 6))
    A[:, 2] = 0.0  # exactly singular, and still exactly after eliminating columns 0 and 1
    dense.lu(A, comm, grid=(comm.size, 1, 1), nb=2, pivoting="tournament")
print("no error", flush=True)
