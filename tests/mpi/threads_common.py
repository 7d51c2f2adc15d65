"""What the threaded-solve MPI scripts share: a solve gathered on rank 0 with whether every
rank's recorded CommStats equal its plan, and the comparison with the one-thread solve
(distance, relative to max |x|, and scipy's normwise backward error on the gathered A)."""

import numpy as np
from mpi4py import MPI


def gathered_solve(solver, comm, b, n):
    """Collective: x of ``solver.solve(b)`` without refinement, whole on rank 0 (None
    elsewhere), and whether every rank recorded exactly its planned messages."""
    nrhs = b.shape[1]
    x = solver.solve(b, refine=False)
    ok = comm.allreduce(solver.stats() == solver.planned_stats(nrhs), op=MPI.LAND)
    pieces = comm.gather(x, root=0)
    if comm.rank != 0:
        return None, ok
    X = np.empty((n, nrhs))
    for r, piece in enumerate(pieces):
        X[solver.distribution.owned(r)] = piece
    return X, ok


def compared(A, B, X, X1):
    """(max |X - X1| / max |X1|, the largest normwise backward error ||A x - b|| / (||A|| ||x|| +
    ||b||) of X's columns, inf-norms)."""
    R = A @ X - B
    norm_a = abs(A).sum(axis=1).max()
    berr = max(np.abs(R[:, c]).max() / (norm_a * np.abs(X[:, c]).max() + np.abs(B[:, c]).max())
               for c in range(B.shape[1]))
    return float(np.abs(X - X1).max() / np.abs(X1).max()), float(berr)
