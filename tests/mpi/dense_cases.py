"""MPI script: the 2.5D multiply and LU on one grid (issue 33).

Usage: mpiexec -n K python -m mpi4py tests/mpi/dense_cases.py K PRxPCxC
Rank 0 prints one JSON line per case: the largest difference from numpy (relative to the
largest entry of the reference), whether every rank's recorded CommStats equal its plan and
its plan the virtual world's (no MPI), the words of panels each rank received (recorded), and
for square sizes divisible by the grid, the words the formula's leading term gives.
"""

import json
import sys

import numpy as np
from mpi4py import MPI

from commsolve import dense
from commsolve.dense import DistributedDense

comm = MPI.COMM_WORLD
expected, grid = int(sys.argv[1]), sys.argv[2]
assert comm.size == expected, f"launched with {comm.size} ranks, expected {expected}"
pr, pc, c = dense.parse_grid25(grid, comm.size)
ppn = 2 if comm.size % 2 == 0 else 1
TREES = ["binary", "flat", "shifted-binary", "binomial", "rectangular", "need-ordered"]


def unpivoted_lu(A):
    """Doolittle LU without pivoting, one column at a time (numpy only): the reference."""
    F = np.array(A, dtype=float)
    for k in range(F.shape[0] - 1):
        F[k + 1:, k] /= F[k, k]
        F[k + 1:, k + 1:] -= np.outer(F[k + 1:, k], F[k, k + 1:])
    return F


def checks(rep, kind, shape, nb, tree, pivoting="none"):
    planned_virtual = dense.virtual_stats(kind, shape[0], shape[1], shape[2], (pr, pc, c), nb=nb, tree=tree, ppn=ppn,
                                          pivoting=pivoting)
    mine = comm.gather(rep.recorded[comm.rank].array, root=0)
    skip = [dense.ROLES[kind].index("swap")] if pivoting == "tournament" else []
    virtual_ok = mine is None or all(np.array_equal(np.delete(m, skip, 0), np.delete(v.array, skip, 0))
                                     for m, v in zip(mine, planned_virtual))
    roles = dense.ROLES[kind]
    panels = [roles.index(r) for r in roles if r.startswith("panel")]
    per_rank = [s.words_received(panels) for s in rep.recorded]
    return {"words": float(rep.words_received().sum()), "stats_ok": rep.planned_equal, "virtual_ok": bool(comm.bcast(virtual_ok)), "panel_words": per_rank,
            "formula": rep.words_formula(), "seconds_ok": rep.seconds > 0 and rep.compute_seconds <= rep.seconds,
            "flops": rep.flops}


def emit(d):
    if comm.rank == 0:
        print(json.dumps(d), flush=True)


# The multiply: square, rectangular, sizes not multiples of the block, tiny, exactly divisible.
q = max(pr, pc)
for (m, n, k, nb) in [(37, 29, 41, 5), (50, 50, 50, 7), (10, 7, 3, 4), (1, 1, 1, 3), (16 * q, 16 * q, 16 * q, 16)]:
    rng = np.random.default_rng(m * 1000 + n)
    A, B = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    for tree in TREES:
        C, rep = dense.matmul(A, B, comm, grid=grid, nb=nb, tree=tree, topology=ppn, report=True)
        err = float(np.abs(C - A @ B).max() / max(np.abs(A @ B).max(), 1e-300))
        emit({"kind": "matmul", "shape": [m, n, k], "nb": nb, "tree": tree, "err": err, **checks(rep, "matmul", (m, n, k), nb, tree)})

# Moves in pieces of 5 values (every broadcast and reduction in several pieces, each its own tree).
for tree in TREES:
    A, B = np.random.default_rng(5).standard_normal((37, 29)), np.random.default_rng(6).standard_normal((29, 31))
    C, rep = dense.matmul(A, B, comm, grid=grid, nb=4, tree=tree, topology=ppn, report=True, piece=5)
    err = float(np.abs(C - A @ B).max() / np.abs(A @ B).max())
    M = np.random.default_rng(7).standard_normal((30, 30)) + 30 * np.eye(30)
    f = dense.lu(DistributedDense.from_global(M, comm, grid, 4), tree=tree, topology=ppn, piece=5)
    F = f.factors.to_global()
    lu_err = float(np.abs(F - unpivoted_lu(M)).max() / np.abs(unpivoted_lu(M)).max()) if comm.rank == 0 else None
    R = np.random.default_rng(8).standard_normal((30, 30))
    g = dense.lu(DistributedDense.from_global(R, comm, grid, 4), tree=tree, topology=ppn, piece=5, pivoting="tournament")
    G = g.factors.to_global()
    if comm.rank == 0:
        p = np.arange(30)
        for i, j in enumerate(g.ipiv):
            p[i], p[j] = p[j], p[i]
        piv_err = float(np.abs(R[p] - (np.tril(G, -1) + np.eye(30)) @ np.triu(G)).max() / np.abs(R).max())
    emit({"kind": "pieces", "tree": tree, "err": err, "lu_err": lu_err, "piv_err": piv_err if comm.rank == 0 else None,
          "stats_ok": rep.planned_equal and f.report.planned_equal and g.report.planned_equal,
          "messages": int(sum(s.total()["msgs_recv_intra"] + s.total()["msgs_recv_inter"] for s in rep.recorded))})

# A matrix given on rank 0 only, scattered; gathered back where it came from.
G = np.arange(23 * 17, dtype=float).reshape(23, 17) if comm.rank == 0 else None
S = DistributedDense.scatter(G, comm, grid, nb=4)
back = S.to_global(root=0)
emit({"kind": "scatter", "ok": bool(np.array_equal(back, G)) if comm.rank == 0 else None,
      "same_as_from_global": bool(comm.allreduce(
          int(np.array_equal(S.local, DistributedDense.from_global(comm.bcast(G), comm, grid, 4).local)), op=MPI.MIN))})

# Distributed inputs stay distributed; random matrices are made by each rank alone.
A = DistributedDense.random(45, 33, comm, grid, nb=6, seed=1)
B = DistributedDense.random(33, 28, comm, grid, nb=6, seed=2)
C = dense.matmul(A, B)
Ag, Bg, Cg = A.to_global(), B.to_global(), C.to_global()
if comm.rank == 0:
    from commsolve.dense import random_entries  # noqa: E402

    same = np.array_equal(Ag, random_entries(np.arange(45), np.arange(33), 1))
    emit({"kind": "distributed", "err": float(np.abs(Cg - Ag @ Bg).max() / np.abs(Ag @ Bg).max()), "random_ok": same,
          "type": type(C).__name__})

# LU without pivoting on diagonally dominant matrices.
for (n, nb) in [(40, 5), (33, 4), (7, 8), (1, 2), (8 * q * c, 8)]:
    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, n)) + n * np.eye(n)
    ref = unpivoted_lu(A)
    for tree in TREES:
        D = DistributedDense.from_global(A, comm, grid, nb)
        f = dense.lu(D, tree=tree, topology=ppn)
        F = f.factors.to_global()
        res, growth = f.residual(D), f.growth(D)
        if comm.rank == 0:
            err = float(np.abs(F - ref).max() / np.abs(ref).max())
        emit({"kind": "lu", "shape": [n, n, n], "nb": nb, "tree": tree, "err": err if comm.rank == 0 else None,
              "residual": res, "growth": growth, **checks(f.report, "lu", (n, n, n), nb, tree)})

# LU with tournament pivoting on random matrices (and one with a zero diagonal): P A = L U
# checked by numpy from the gathered factors and pivots; where the panel has one process row
# the tournament is partial pivoting, so the pivots and factors must be LAPACK's (scipy); the
# row swaps each rank received, per rank, for the test to count from the pivots.
swap = dense.ROLES["lu"].index("swap")
for (n, nb, zero_diag) in [(40, 5, False), (33, 4, True), (7, 8, False), (1, 2, False), (8 * q * c, 8, False)]:
    A = np.random.default_rng(100 + n).standard_normal((n, n))
    if zero_diag:
        A -= np.diag(np.diag(A))
    for tree in TREES:
        D = DistributedDense.from_global(A, comm, grid, nb)
        f = dense.lu(D, tree=tree, topology=ppn, pivoting="tournament")
        F = f.factors.to_global()
        res = f.residual(D)
        row = {"kind": "lu_tournament", "shape": [n, n, n], "nb": nb, "tree": tree, "residual": res,
               "growth": f.report.growth, "ipiv": [int(v) for v in f.ipiv],
               "swap_received": [[int(s.array[swap, 4] + s.array[swap, 5]), float(s.words_received([swap]))]
                                 for s in f.report.recorded],
               **checks(f.report, "lu", (n, n, n), nb, tree, "tournament")}
        if comm.rank == 0:
            import scipy.linalg

            p = np.arange(n)
            for i, j in enumerate(f.ipiv):
                p[i], p[j] = p[j], p[i]
            L, U = np.tril(F, -1) + np.eye(n), np.triu(F)
            row["err"] = float(np.abs(A[p] - L @ U).max() / np.abs(A).max())
            if pr == 1:
                lu_ref, piv_ref = scipy.linalg.lu_factor(A)
                row["lapack_same_pivots"] = bool(np.array_equal(piv_ref, f.ipiv))
                row["lapack_err"] = float(np.abs(F - lu_ref).max() / np.abs(lu_ref).max())
        emit(row)

# Exact ties between candidate pivots (small integers over 3): where the panel has one process
# row, the factors and the pivots must come from the same elimination (P A = L U still).
TIES = [np.array([[-1, 0, 0, 1, -2, 2], [1, -2, 0, 1, -2, -1], [1, -1, -2, 1, 1, -1], [2, 2, -2, -1, 0, -2],
                  [0, -1, 1, -1, 0, -1], [0, -1, 2, -2, 1, -1]]) / 3.0,
        np.random.default_rng(63).integers(-2, 3, (51, 51)) / 3.0]
for A, nb in zip(TIES, (4, 16)):
    n = A.shape[0]
    f = dense.lu(DistributedDense.from_global(A, comm, grid, nb), topology=ppn, pivoting="tournament")
    F = f.factors.to_global()
    if comm.rank == 0:
        p = np.arange(n)
        for i, j in enumerate(f.ipiv):
            p[i], p[j] = p[j], p[i]
        L, U = np.tril(F, -1) + np.eye(n), np.triu(F)
        emit({"kind": "lu_ties", "n": n, "nb": nb, "err": float(np.abs(A[p] - L @ U).max() / np.abs(A).max())})
