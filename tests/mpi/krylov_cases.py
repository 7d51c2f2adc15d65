"""MPI script: commsolve's Krylov methods on K ranks against scipy's. The reference runs scipy's
solver redundantly on every rank on whole vectors, with the distributed A and preconditioner
applied through a gather (so both sides use the same K-rank AMG cycle); scipy's dot products
are then over whole vectors, commsolve's are allreduced. Compared: CG's and BiCGStab's
iterates, GMRES's residual estimates (left: scipy's pr_norm with M; right: scipy's on the
operator A M), and the true residual of each solution (the gathered matrix, scipy).

Usage: mpiexec -n K python -m mpi4py tests/mpi/krylov_cases.py K TMPDIR
Rank 0 prints one JSON line per method.
"""

import json
import sys

import numpy as np
import scipy.sparse.linalg as spla
from mpi4py import MPI

import commsolve as cs

comm = MPI.COMM_WORLD
assert comm.size == int(sys.argv[1]), f"launched with {comm.size} ranks, expected {sys.argv[1]}"
RTOL = 1e-9


def whole(v_local, ids, n):
    """The whole vector from every rank's part (allgather)."""
    out = np.empty(n)
    for i, v in comm.allgather((ids, v_local)):
        out[i] = v
    return out


def global_operator(op, ids, n):
    """A LinearOperator on whole vectors that applies the distributed ``op`` (every rank
    calls it with the same whole vector)."""
    return spla.LinearOperator((n, n), matvec=lambda v: whole(op.matvec(v[ids]), ids, n), dtype=np.float64)


def gap(mine, theirs):
    """The largest relative difference of two sequences of iterates. scipy's BiCGStab calls
    no callback when it stops halfway through an iteration (||s|| small enough), commsolve's
    does: so one sequence may hold one more, the final x (compared separately)."""
    assert abs(len(mine) - len(theirs)) <= 1, (len(mine), len(theirs))
    return max(float(np.linalg.norm(np.asarray(u) - np.asarray(v)) / max(np.linalg.norm(v), 1e-300))
               for u, v in zip(mine, theirs))


def report(method, A, G, x_local, info, iterations, history_gap, ids):
    x = whole(x_local, ids, G.shape[0])
    b = whole(b_of(A), ids, G.shape[0])
    if comm.rank == 0:
        print(json.dumps({"method": method, "ranks": comm.size, "info": int(info), "iterations": iterations,
                          "history_gap": history_gap, "rtol": RTOL,
                          "true_residual": float(np.linalg.norm(b - G @ x) / np.linalg.norm(b))}), flush=True)


def b_of(A):
    ids = A.owned_rows()
    return np.cos(0.37 * ids) + 1.0


def iterates(A, ids, n, ours, theirs, G, M):
    b = b_of(A)
    mine, scipys = [], []
    x, info = ours(A, b, rtol=RTOL, M=M, callback=lambda xk: mine.append(whole(xk, ids, n)))
    Mg = global_operator(M, ids, n)
    xs, info_s = theirs(global_operator(A.aslinearoperator(), ids, n), whole(b, ids, n), rtol=RTOL, M=Mg,
                        callback=lambda xk: scipys.append(xk.copy()))
    assert info_s == 0
    return x, info, len(mine), max(gap(mine, scipys), gap([whole(x, ids, n)], [xs]))


def gmres_estimates(A, ids, n, M, side):
    b = b_of(A)
    bw = whole(b, ids, n)
    mine, scipys = [], []
    x, info = cs.krylov.gmres(A, b, rtol=RTOL, restart=80, M=M, side=side, residuals=mine)
    Ag, Mg = global_operator(A.aslinearoperator(), ids, n), global_operator(M, ids, n)
    if side == "left":
        spla.gmres(Ag, bw, rtol=RTOL, restart=80, M=Mg, callback=scipys.append, callback_type="pr_norm")
    else:
        AM = spla.LinearOperator((n, n), matvec=lambda v: Ag.matvec(Mg.matvec(v)), dtype=np.float64)
        spla.gmres(AM, bw, rtol=RTOL, restart=80, callback=scipys.append, callback_type="pr_norm")
    bnorm = np.linalg.norm(bw)
    # the estimates inside the cycle (the last entry of ours is the true residual of x), their
    # differences relative to the first (rounding is relative to it)
    ours, theirs = np.array(mine[1:-1]) / bnorm, np.array(scipys[:-1])
    assert ours.shape == theirs.shape, (len(mine), len(scipys))
    return x, info, len(mine) - 1, float(np.max(np.abs(ours - theirs)) / theirs[0])


def main():
    sym = cs.ParCSR.from_spec("poisson2d:40", comm)
    nonsym = cs.ParCSR.from_spec("convdiff2d:40,pe=50", comm)
    for A, methods in ((sym, ("cg",)), (nonsym, ("gmres-left", "gmres-right", "bicgstab"))):
        G = A.to_global(root=0)
        G = comm.bcast(G, root=0)
        ids, n = A.owned_rows(), A.shape[0]
        M = cs.amg.solver(A).aspreconditioner()
        for method in methods:
            if method == "cg":
                x, info, its, g = iterates(A, ids, n, cs.krylov.cg, spla.cg, G, M)
            elif method == "bicgstab":
                x, info, its, g = iterates(A, ids, n, cs.krylov.bicgstab, spla.bicgstab, G, M)
            else:
                x, info, its, g = gmres_estimates(A, ids, n, M, method.split("-")[1])
            report(method, A, G, x, info, its, g, ids)
    # the LU's inverse as the preconditioner of the distributed BiCGStab: one or two iterations
    lu = cs.direct.factor(nonsym, comm)
    assert np.array_equal(lu.distribution.owned(comm.rank), nonsym.owned_rows())
    G = comm.bcast(nonsym.to_global(root=0), root=0)
    x, info = cs.krylov.bicgstab(nonsym, b_of(nonsym), rtol=RTOL, M=lu.aslinearoperator(), residuals=(h := []))
    report("aslinearoperator", nonsym, G, x, info, len(h) - 1, None, nonsym.owned_rows())
    errors()


def errors():
    """Errors on every rank, never on one alone: a preconditioner whose vectors are distributed
    otherwise than A's (an LU on contiguous rows for a strided A), a wrong x0 on one rank."""
    G = cs.gallery.convdiff2d(20)
    strided = cs.ParCSR.from_global(G, comm, partition="strided")
    lu = cs.direct.factor(cs.ParCSR.from_global(G, comm), comm)
    caught = {}
    try:
        cs.krylov.bicgstab(strided, np.ones(strided.local_rows), M=lu.aslinearoperator())
    except cs.CollectiveError as e:
        caught["distribution"] = "distributed differently" in str(e)
    ml = cs.amg.solver(strided)
    x0 = np.zeros(strided.local_rows + (1 if comm.rank == comm.size - 1 else 0))  # wrong on the last rank only
    for name, call in (("x0 krylov", lambda: cs.krylov.cg(strided, np.ones(strided.local_rows), x0=x0)),
                       ("x0 amg", lambda: ml.solve(np.ones(strided.local_rows), x0=x0))):
        try:
            call()
        except cs.CollectiveError as e:
            caught[name] = f"[rank {comm.size - 1}] x0 must hold" in str(e)
    every = comm.allgather(caught)
    if comm.rank == 0:
        print(json.dumps({"method": "errors", "ranks": comm.size, "caught": every}), flush=True)


main()
