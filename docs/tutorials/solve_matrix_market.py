"""Tutorial 1: solve a Matrix Market system on a cluster.

Reads A from a Matrix Market file distributed by rows (each rank reads its own rows), factors
it on a process grid (supernodal LU with static pivoting, every rank ending with its own
blocks), solves with the 2D triangular solve and then, on the same ranks arranged as layers,
with the SC'23 3D solve, and reports what a user must check: the backward error, the error
against a known solution, the times and the messages against the plan.

    mpiexec -n 4 python3 -m mpi4py solve_matrix_market.py my_matrix.mtx
    mpiexec -n 2 python3 -m mpi4py solve_matrix_market.py            # writes a demo matrix first

Without a file it writes ``convdiff2d:N`` (a nonsymmetric convection-diffusion matrix,
``--n N``, default 300) to ``demo.mtx`` in the working directory and reads that.
"""

import argparse

import numpy as np
from mpi4py import MPI

import commsolve as cs

comm = MPI.COMM_WORLD
parser = argparse.ArgumentParser()
parser.add_argument("path", nargs="?", help="Matrix Market file (default: write demo.mtx)")
parser.add_argument("--n", type=int, default=300, help="grid side of the demo matrix")
args = parser.parse_args()

path = args.path
if path is None:
    path = "demo.mtx"
    if comm.rank == 0:
        cs.mmwrite(path, cs.gallery.convdiff2d(args.n), comment="commsolve tutorial: convdiff2d")
    comm.Barrier()
if comm.rank == 0:
    print(f"file: {path}: {cs.mminfo(path)}")

A = cs.ParCSR.from_file(path, comm)                 # rows split in contiguous blocks
x_true = np.cos(0.001 * A.owned_rows())             # a known solution, this rank's rows
b = A.matvec(x_true)

P = comm.size
grids = [(1, P, 1)]                                 # 2D: one layer of 1 x P
if P & (P - 1) == 0 and P > 1:
    grids.append((1, 1, P))                         # 3D: P layers of one rank (SC'23)
for grid in grids:
    lu = cs.direct.factor(A, comm, grid=grid)
    x = lu.solve(b)                                 # this rank's rows, as b
    err = np.sqrt(comm.allreduce(float(np.sum((x - x_true) ** 2))) / comm.allreduce(float(np.sum(x_true ** 2))))
    same = comm.allreduce(int(lu.stats() == lu.planned_stats()), op=MPI.MIN)
    if comm.rank == 0:
        print(f"grid {'x'.join(map(str, lu.grid))} ({lu.algorithm}): factor {lu.factor_seconds['total']:.3f} s, "
              f"solve {lu.solve_seconds['total'] * 1e3:.2f} ms, nnz(L+U) {lu.nnz_LU:,}")
        print(f"  backward error {max(lu.berr):.2e}, relative error {err:.2e}, "
              f"refinement steps {lu.refine_steps}, messages as planned: {bool(same)}")
