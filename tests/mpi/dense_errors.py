"""MPI script: 2.5D LU without pivoting of a matrix whose first pivot is zero, on 1x1x2: the
rank that meets it aborts the job with the column (tests/test_dense_mpi.py)."""

import sys

import numpy as np
from mpi4py import MPI

from commsolve import dense

comm = MPI.COMM_WORLD
assert comm.size == int(sys.argv[1])
A = np.array([[0.0, 1.0, 2.0], [1.0, 3.0, 1.0], [2.0, 1.0, 4.0]])
dense.lu(A, comm, grid=(1, 1, comm.size), nb=2)
print("no error", flush=True)
