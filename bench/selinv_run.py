"""One MPI job of bench/selinv.py: commsolve's side on one matrix.

    mpiexec -n P python -m mpi4py bench/selinv_run.py SPEC REPEAT TREE FORM VALUES.npy [UNIT_BLOCK]

The matrix (gallery SPEC, distributed by rows) is factored on the squarest 2D grid of P
ranks, FORM "symmetric" (no row permutation, no scaling: selected inversion's symmetric
form, for an SPD matrix) or "unsymmetric" (the solver's defaults: MC64-like row matching
and scaling, the unsymmetric form); then its selected inverse is computed REPEAT times with
TREE trees; A^-1's entries at A's pattern (in scipy CSR order of A) are saved to VALUES.npy
for the comparison with MUMPS. With UNIT_BLOCK > 0, the same entries are also computed the
plain way: every column of A^-1 by the distributed triangular solves with UNIT_BLOCK unit
vectors at a time (the same factors, refinement off), timed. Rank 0 prints one JSON line
(times are the slowest rank's; medians over the repetitions).
"""

import json
import statistics
import sys
import time

import numpy as np
import scipy.sparse as sp
from mpi4py import MPI

from commsolve import ParCSR, direct, gallery

comm = MPI.COMM_WORLD
spec, repeat, tree, form, values_path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
unit_block = int(sys.argv[6]) if len(sys.argv) > 6 else 0
options = {"symmetric": {"row_perm": "none", "equil": False}, "unsymmetric": {}}[form]

A = sp.csr_matrix(gallery.from_spec(spec))
comm.Barrier()
t0 = time.perf_counter()
lu = direct.factor(ParCSR.from_global(A, comm), comm, tree=tree, **options)
comm.Barrier()
factor_s = time.perf_counter() - t0
runs = []
for _ in range(repeat):
    comm.Barrier()
    t = time.perf_counter()
    S = lu.selected_inverse(tree=tree, symmetric=form == "symmetric")
    comm.Barrier()
    runs.append({"wall_s": time.perf_counter() - t, **lu.selinv.seconds})
stats_ok = comm.allreduce(int(lu.selinv.recorded == lu.selinv.planned), op=MPI.MIN) == 1

unit = None
if unit_block > 0:  # every column of A^-1 by solves with unit vectors, the entries at A's pattern kept
    n, dist = A.shape[0], lu.distribution
    mine = dist.owned(comm.rank)
    At = A.tocsc()  # column j of A's pattern: the rows A^-1 is wanted at, in column j of A
    kept = np.zeros(A.nnz) if comm.rank == 0 else None
    comm.Barrier()
    t = time.perf_counter()
    for j0 in range(0, n, unit_block):
        cols = np.arange(j0, min(n, j0 + unit_block))
        B = np.zeros((mine.size, cols.size))
        hit = np.nonzero((mine >= j0) & (mine < j0 + cols.size))[0]
        B[hit, mine[hit] - j0] = 1.0
        X = lu.solve(B, refine=False)
        pieces = comm.gather((mine, X), root=0)
        if comm.rank == 0:
            full = np.empty((n, cols.size))
            for rows, piece in pieces:
                full[rows] = piece
            for c, j in enumerate(cols):  # A's entries (i, j) want A^-1[i, j]
                lo, hi = At.indptr[j], At.indptr[j + 1]
                kept[lo:hi] = full[At.indices[lo:hi], c]
    comm.Barrier()
    unit = {"seconds": time.perf_counter() - t, "block": unit_block}

if comm.rank == 0:
    C = A.tocoo()
    sel = np.asarray(S[C.row, C.col]).ravel()  # A^-1 at A's pattern, CSR order of A
    np.save(values_path, sel)
    if unit is not None:  # kept is in CSC order of A: reorder to CSR order to compare
        csc = sp.csc_matrix((np.arange(A.nnz, dtype=float) + 1, (C.row, C.col)), shape=A.shape)
        order = np.asarray(csc[C.row, C.col]).ravel().astype(np.int64) - 1
        unit["max_rel_diff"] = float(np.abs(kept[order] - sel).max() / np.abs(sel).max())
    med = lambda key: statistics.median(r[key] for r in runs)  # noqa: E731
    print(json.dumps({"matrix": spec, "rows": int(A.shape[0]), "nnz": int(A.nnz), "procs": comm.size,
                      "grid": list(lu.grid[:2]), "tree": tree, "form": "symmetric" if lu.selinv.symmetric else
                      "unsymmetric", "nnz_LU": int(lu.nnz_LU), "selected_entries": int(S.nnz),
                      "factor_s": factor_s, "factor_parts_s": lu.factor_seconds,
                      "selinv_s": med("wall_s"), "selinv_prepare_s": med("prepare"), "selinv_invert_s": med("invert"),
                      "selinv_runs_s": [r["wall_s"] for r in runs], "selinv_flops": lu.selinv.flops,
                      "stats_recorded_equal_planned": bool(stats_ok), "unit_vectors": unit}), flush=True)
