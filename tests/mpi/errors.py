"""MPI script: bad input under MPI must raise the same clear error on every rank.

Usage: mpiexec -n K python -m mpi4py tests/mpi/errors.py K TMPDIR CASE[,CASE...]
For each case, in turn, rank 0 prints {"case", "rank", "error"} of every rank after they
caught the error (null for a rank where nothing was raised). Each case runs on its own
duplicate of the world communicator, so nothing a case leaves in flight reaches the next.
Case "wrong-length" is not caught: rank 1 fails alone and python -m mpi4py must abort the
job.
"""

import json
import os
import sys

import numpy as np
import scipy.sparse as sp
from mpi4py import MPI

import commsolve as cs

expected, tmpdir, cases = int(sys.argv[1]), sys.argv[2], sys.argv[3].split(",")
assert MPI.COMM_WORLD.size == expected, f"launched with {MPI.COMM_WORLD.size} ranks, expected {expected}"
comm, case = MPI.COMM_WORLD, None  # the case being run and its communicator


def bad_file(lines_ok, bad_line, symmetry="general"):
    """A file whose entries are fine except one late line (parsed by the last rank); a
    symmetric one starts with an entry below the diagonal (parsed by rank 0)."""
    path = os.path.join(tmpdir, case, "bad.mtx")
    if comm.rank == 0:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(f"%%MatrixMarket matrix coordinate real {symmetry}\n")
            f.write(f"{lines_ok + 1} {lines_ok + 1} {lines_ok + 1}\n")
            for i in range(lines_ok):
                f.write("2 1 -1.0\n" if i == 0 and symmetry != "general" else f"{i + 1} {i + 1} 2.0\n")
            f.write(bad_line)
    comm.Barrier()
    return path


def run():
    if case == "bad-line":
        cs.ParCSR.from_file(bad_file(200, "201 201 oops\n"), comm)
    elif case == "truncated":
        cs.ParCSR.from_file(bad_file(200, ""), comm)
    elif case == "both-triangles":
        cs.ParCSR.from_file(bad_file(200, "1 3 -1.0\n", "symmetric"), comm)
    elif case == "ppn":
        cs.ParCSR.from_spec("poisson2d:8", comm, topology=2)
    elif case == "nonsquare":
        cs.ParCSR.from_global(sp.random(10, 12, density=0.3, random_state=0), comm)
    elif case == "more-ranks-than-rows":
        cs.ParCSR.from_spec("poisson2d:1", comm, partition="strided")
    elif case == "strategy":
        cs.ParCSR.from_spec("poisson2d:8", comm, strategy="carrier-pigeon")
    elif case == "grid":
        cs.direct.factor(cs.gallery.poisson2d(6) if comm.rank == 0 else None, comm, grid=(2, 2))
    elif case == "tree":
        cs.direct.factor(cs.gallery.poisson2d(6) if comm.rank == 0 else None, comm, tree="oak")
    elif case == "zero-pivot":
        A = sp.csr_matrix(np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 1.0, 2.0]]))
        cs.direct.factor(A if comm.rank == 0 else None, comm, ordering="natural", row_perm="none")
    elif case == "no-matrix":
        cs.direct.factor(None, comm)
    elif case == "rhs-shape":
        solver = cs.direct.factor(cs.gallery.poisson2d(6) if comm.rank == 0 else None, comm)
        solver.solve(np.ones(35) if comm.rank == 0 else None, replicated=True)
    elif case == "rhs-rows":  # b distributed by rows: rank 1 gives one row too many
        solver = cs.direct.factor(cs.gallery.poisson2d(6) if comm.rank == 0 else None, comm)
        solver.solve(np.ones(solver.local_rows + (1 if comm.rank == 1 else 0)))
    elif case == "rhs-columns":  # every rank's b fits, but the ranks disagree on nrhs
        solver = cs.direct.factor(cs.gallery.poisson2d(6) if comm.rank == 0 else None, comm)
        solver.solve(np.ones((solver.local_rows, 1 + comm.rank)))
    elif case == "tree-on-one-rank":  # would hang the next solve if it went through
        solver = cs.direct.factor(cs.gallery.poisson2d(6) if comm.rank == 0 else None, comm)
        solver.set_tree("flat" if comm.rank == 0 else "binary")
    elif case == "options-differ":  # would give wrong answers or hang if it went through
        cs.direct.factor(cs.gallery.poisson2d(6) if comm.rank == 0 else None, comm, grid=(1, 1, 2),
                         algorithm="3d" if comm.rank == 0 else "3d-baseline")
    elif case == "grids-differ":
        cs.direct.factor(cs.gallery.poisson2d(6) if comm.rank == 0 else None, comm,
                         grid=(1, 1, 2) if comm.rank == 0 else (1, 2))
    elif case == "rhs-strings":  # only rank 1's b cannot be read as numbers
        solver = cs.direct.factor(cs.gallery.poisson2d(6) if comm.rank == 0 else None, comm)
        solver.solve(np.array(["x"] * solver.local_rows) if comm.rank == 1 else np.ones(solver.local_rows))
    elif case == "set-options-vs-solve":  # rank 0 changes options while rank 1 solves
        solver = cs.direct.factor(cs.gallery.poisson2d(6) if comm.rank == 0 else None, comm)
        if comm.rank == 0:
            solver.set_options(tree="flat")
        else:
            solver.solve(np.ones(solver.local_rows))
    elif case == "pz":
        cs.direct.factor(cs.gallery.poisson2d(6) if comm.rank == 0 else None, comm, grid=(1, 1, 3))
    elif case == "algorithm":
        cs.direct.factor(cs.gallery.poisson2d(6) if comm.rank == 0 else None, comm, grid=(1, 1, 2), algorithm="2d")
    elif case == "strategy-differs":  # each rank would build its plan for another strategy and hang
        cs.ParCSR.from_global(cs.gallery.poisson2d(8), comm, strategy="standard" if comm.rank == 0 else "node-aware")
    elif case == "matrix-on-one-rank":  # as factor() takes it: scipy fails on rank 1 alone
        cs.ParCSR.from_global(cs.gallery.poisson2d(8) if comm.rank == 0 else None, comm)
    elif case == "matrix-differs":  # the same shape, other values: rows of two matrices would mix
        cs.ParCSR.from_global(cs.gallery.poisson2d(8) * (1.0 + comm.rank), comm)
    elif case == "smoother-differs":  # one rank in matvec, the other in rmatvec
        cs.amg.solver(cs.ParCSR.from_spec("poisson2d:16", comm), smoother="hybrid-gs" if comm.rank == 0 else "jacobi")
    elif case == "tol-differs":  # one rank would stop iterating before the other
        ml = cs.amg.solver(cs.ParCSR.from_spec("poisson2d:16", comm))
        ml.solve(np.ones(ml.A.local_rows), tol=1e-8 if comm.rank == 0 else 1e-4)
    elif case == "refine-differs":  # one rank would refine, the other return
        solver = cs.direct.factor(cs.gallery.poisson2d(6) if comm.rank == 0 else None, comm)
        solver.solve(np.ones(solver.local_rows), refine=comm.rank == 0)
    elif case == "spgemm-strategy-differs":
        A = cs.ParCSR.from_spec("poisson2d:8", comm)
        cs.spgemm(A, A, strategy="standard" if comm.rank == 0 else "node-aware")
    elif case == "option-type":  # refused on every rank, not a TypeError on the root alone
        cs.direct.factor(cs.gallery.poisson2d(6) if comm.rank == 0 else None, comm, max_supernode=2.5)
    elif case == "option-misspelt":  # not ignored: the user meant another row permutation
        cs.direct.factor(cs.ParCSR.from_spec("poisson2d:8", comm), comm, row_prem="none")
    elif case == "zero-pivot-nan":  # every pivot would compare as tiny
        cs.direct.factor(cs.gallery.poisson2d(6) if comm.rank == 0 else None, comm, zero_pivot=float("nan"))
    elif case == "rhs-nan":  # x and its backward error would be NaN
        solver = cs.direct.factor(cs.gallery.poisson2d(6) if comm.rank == 0 else None, comm)
        b = np.ones(solver.local_rows)
        if comm.rank == 1:
            b[3] = np.nan
        solver.solve(b)
    elif case == "nd-partition-without-tree":  # refused before the analysis, not after it
        cs.direct.factor(cs.gallery.poisson2d(6) if comm.rank == 0 else None, comm, grid=(1, 1, 2), ordering="nd")
    elif case == "distribution-type":
        cs.direct.factor(cs.gallery.poisson2d(6) if comm.rank == 0 else None, comm, distribution="contiguous")
    elif case == "wrong-length":
        A = cs.ParCSR.from_spec("poisson2d:8", comm)
        n = A.local_cols + (1 if comm.rank == 1 else 0)
        A.matvec(np.ones(n))
        return
    else:
        raise SystemExit(f"unknown case {case}")


for case in cases:
    comm = MPI.COMM_WORLD.Dup()
    try:
        run()
        err = None
    except cs.CollectiveError as e:
        err = str(e)
    everyone = comm.gather({"case": case, "rank": comm.rank, "error": err}, root=0)
    if comm.rank == 0:
        for record in everyone:
            print(json.dumps(record), flush=True)
