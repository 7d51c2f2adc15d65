"""The getting-started example: AMG-preconditioned CG on a distributed 2D Laplacian, checked
against scipy."""
from mpi4py import MPI
import numpy as np
import commsolve as cs

comm = MPI.COMM_WORLD
A = cs.ParCSR.from_spec("poisson2d:200", comm)       # 40,000 rows split by rows over the ranks
b = np.ones(A.local_rows)                            # this rank's rows of b
ml = cs.amg.solver(A)                                # classical AMG, set up in parallel
residuals = []
x, info = cs.krylov.cg(A, b, rtol=1e-8, M=ml.aspreconditioner(), residuals=residuals)

G = A.to_global()                                    # the whole matrix on rank 0, to check
x_all = A.gather(x)                                  # the whole x on rank 0
if comm.rank == 0:
    true = np.linalg.norm(np.ones(G.shape[0]) - G @ x_all) / np.sqrt(G.shape[0])
    print(f"CG+AMG on {comm.size} ranks: {len(residuals) - 1} iterations, info {info}, "
          f"true relative residual {true:.1e}")
    print(ml)
