"""MPI script: the ordering "tree" on several ranks, its leaves ordered each on a rank of its
own (direct/leaf_ordering.hpp), for a row-distributed ParCSR.

Usage: mpiexec -n K python -m mpi4py tests/mpi/tree_leaves_cases.py K
Per family the last rank prints one JSON line: the separator tree's levels and leaves;
whether the ordering factor() used is a permutation, equal to the one separator_tree
computes alone on the gathered, row-permuted matrix with the same levels (no MPI in it),
and the same with one level more (two leaves a rank); each rank's seconds inside METIS when
the leaves are ordered on the ranks directly, rooted on the last rank; the levels of
factor()'s tree and the ordering's parts as factor() reports them; and the backward error
and error against a known solution of the solve, computed here in numpy from the matrix.
"""

import json
import sys

import numpy as np
from mpi4py import MPI

from commsolve import _core, gallery
from commsolve.direct import factor
from commsolve.direct.symbolic import levels_for
from commsolve.direct.pivoting import checked_matrix
from commsolve.parcsr import ParCSR
from commsolve.partition import adjacency_graph

FAMILIES = ["poisson2d9:24", "convdiff2d:20", "poisson3d:8", "kkt3d:5", "elasticity3d:3",
            "random:rows=300,nnz_per_row=5"]

comm = MPI.COMM_WORLD
expected = int(sys.argv[1])
assert comm.size == expected, f"launched with {comm.size} ranks, expected {expected}"
LEVELS = levels_for(0, comm.size)  # what factor() keeps at least
GRIDS = {2: (1, 1, 2), 3: (3, 1, 1), 4: (1, 2, 2)}
ROOT = comm.size - 1  # of the calls by hand (factor()'s is rank 0)

for spec in FAMILIES:
    A_global = checked_matrix(gallery.from_spec(spec))
    n = A_global.shape[0]
    A = ParCSR.from_global(A_global, comm)
    lu = factor(A, comm, grid=GRIDS[comm.size], ordering="tree")
    x_true = np.sin(np.arange(n) + 1.0)
    b = A_global @ x_true
    x = lu.solve(b[A.owned_rows()], refine=False)
    pieces = comm.gather((np.asarray(A.owned_rows()), np.asarray(x)), root=ROOT)
    # The same pieces by hand, rooted on the last rank: its top separators, then the leaves on
    # the ranks; with one level more, two leaves a rank.
    G = None
    if comm.rank == ROOT:
        row_of_col = lu.pivoting.row_of_col
        G = adjacency_graph(A_global if row_of_col is None else A_global[np.asarray(row_of_col)])
    by_hand = []
    for levels in (LEVELS, LEVELS + 1):
        top = None if G is None else _core.separator_tree(G.indptr, G.indices, levels, order_leaves=False)
        tree, seconds = _core.order_leaves_on_ranks(comm.py2f(), ROOT,
                                                    *((G.indptr, G.indices, top) if G is not None else ()))
        by_hand.append((tree, comm.gather(seconds, root=ROOT)))
    # what factor()'s root (rank 0) knows of its analysis, to the same rank
    structure_perm, factor_levels, parts = comm.bcast(
        (np.asarray(lu.structure.perm), int(max(lu.structure.tree.level)), sorted(lu.report.ordering_parts))
        if comm.rank == 0 else None, root=0)
    if comm.rank != ROOT:
        continue
    (tree, seconds), (deeper, _) = by_hand
    alone = _core.separator_tree(G.indptr, G.indices, LEVELS)  # on one process, no MPI
    X = np.empty(n)
    for rows, piece in pieces:
        X[rows] = piece
    r = b - A_global @ X
    print(json.dumps({
        "family": spec, "n": n, "root": ROOT,
        "levels": int(max(tree.level)), "leaves": int(sum(1 for k in tree.left if k < 0)),
        "permutation": bool(np.array_equal(np.sort(structure_perm), np.arange(n))),
        "by_hand_equals_alone": bool(np.array_equal(np.asarray(tree.perm), np.asarray(alone.perm))),
        "two_a_rank_equal_alone": bool(np.array_equal(np.asarray(deeper.perm), np.asarray(
            _core.separator_tree(G.indptr, G.indices, LEVELS + 1).perm))),
        "deeper_leaves": int(sum(1 for k in deeper.left if k < 0)),
        # factor()'s structure against the one for the ordering computed alone (same options)
        "factor_equals_alone": bool(np.array_equal(structure_perm, np.asarray(_core.symbolic_for_ordering(
            G.indptr, G.indices, alone, _core.SymbolicOptions()).perm))),
        "metis_seconds": seconds,
        "ordering_parts": parts, "factor_levels": factor_levels,
        "berr": float(np.max(np.abs(r) / (abs(A_global) @ np.abs(X) + np.abs(b)))),
        "err": float(np.max(np.abs(X - x_true))),
    }), flush=True)
