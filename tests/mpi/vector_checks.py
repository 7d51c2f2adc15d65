"""MPI script: ParCSR refuses bad vectors before any communication (every rank makes the
same bad call, catches the ValueError and reports it; the matrix keeps working after).

Usage: mpiexec -n 2 python -m mpi4py tests/mpi/vector_checks.py 2
Rank 0 prints one JSON line per case: its message, and whether a good product still works.
"""

import json
import sys

import numpy as np
import scipy.sparse as sp
from mpi4py import MPI

import commsolve as cs

comm = MPI.COMM_WORLD
assert comm.size == int(sys.argv[1]) == 2
A = cs.ParCSR.from_spec("poisson2d:6", comm)
x = np.ones(A.local_cols)
cases = {
    "complex x": lambda: A.matvec(x * 1j),
    "2-D x": lambda: A.matvec(np.ones((A.local_cols, 2))),
    "out aliases x": lambda: A.matvec(x, out=x),
    "float32 out": lambda: A.matvec(x, out=np.empty(A.local_rows, dtype=np.float32)),
    "strided out": lambda: A.matvec(x, out=np.empty(2 * A.local_rows)[::2]),
    "strings x": lambda: A.matvec(np.array(["a"] * A.local_cols)),
    "complex matrix": lambda: cs.ParCSR.from_global(sp.eye(12, dtype=complex) * (1 + 1j), comm),
}
for name, call in cases.items():
    try:
        call()
        error = None
    except (ValueError, cs.CollectiveError) as e:
        error = str(e)
    y = A.matvec(x)  # still works
    ok = bool(comm.allreduce(np.isfinite(y).all(), op=MPI.LAND))
    if comm.rank == 0:
        print(json.dumps({"case": name, "error": error, "still_works": ok}), flush=True)
