"""MPI script: the parallel ordering (PT-Scotch's separators, each leaf ordered on a rank; direct/parallel_ordering.hpp)
on every gallery family, from a row-distributed ParCSR, and a factorization with it.

Usage: mpiexec -n K python -m mpi4py tests/mpi/ordering_cases.py K
Rank 0 prints one JSON line per family and ordering ("ptscotch", "ptscotch-metis"): whether
perm is a permutation and the same on every rank, the separator tree's levels and whether
every entry of the row-permuted matrix's B + B^T joins two nodes on one root path (checked
here in numpy, apart from the C++ check), nnz(L) of the symbolic factorization for this
ordering and for serial METIS nested dissection (ordering "nd", no relaxation), the arrays
in which the structure computed in parallel (direct/parallel_symbolic.hpp, no rank gathering
the matrix) differs from the serial one on the gathered matrix, and the
backward error and the error against a known solution of factor() with the ordering on a
grid of the K ranks. Then, for four families, a line comparing the parallel symbolic
factorization for METIS's 3-level tree (8 leaves, separators on the last rank) with the
serial one. Last, a line per graph (meshes, two of them with a dense row, a path) of the
leaf ordering that the default ("auto") chooses (METIS's on a 3D mesh, Scotch's otherwise),
its nnz(L) and serial METIS's, and (for two) which ordering factor() reports with it.
"""

import json
import sys

import numpy as np
import scipy.sparse as sp
from mpi4py import MPI

from commsolve import _core, gallery
from commsolve.direct import factor, symbolic
from commsolve.direct.parallel_analysis import parallel_ordering, parallel_symbolic
from commsolve.direct.pivoting import checked_matrix, static_pivoting
from commsolve.parcsr import ParCSR
from commsolve.partition import adjacency_graph

FAMILIES = ["poisson2d:20", "poisson2d9:20", "aniso2d:20", "convdiff2d:20", "poisson3d:7", "poisson3d27:6", "kkt3d:4",
            "elasticity3d:3", "groundwater3d:7", "dg3d:2", "hpcg:6", "random:rows=300,nnz_per_row=5"]
GRIDS = {1: (1, 1, 1), 2: (1, 1, 2), 3: (3, 1, 1), 4: (1, 2, 2)}

comm = MPI.COMM_WORLD
expected = int(sys.argv[1])
assert comm.size == expected, f"launched with {comm.size} ranks, expected {expected}"


def node_of_columns(tree, n):
    """The tree node holding each permuted column."""
    node = np.full(n, -1)
    for k in range(tree.num_nodes):
        node[tree.col_start[k]:tree.col_end[k]] = k
    return node


def separated(tree, B):
    """Whether every off-diagonal entry of B + B^T (old indices) joins nodes on one root path."""
    n = B.shape[0]
    perm = np.asarray(tree.perm)
    new = np.empty(n, dtype=np.int64)
    new[perm] = np.arange(n)
    node = node_of_columns(tree, n)
    parent = np.asarray(tree.parent)
    ancestors = []
    for k in range(tree.num_nodes):
        path, x = set(), k
        while x >= 0:
            path.add(x)
            x = parent[x]
        ancestors.append(path)
    C = (abs(B) + abs(B).T).tocoo()
    a, b = node[new[C.row]], node[new[C.col]]
    return all(x == y or y in ancestors[x] or x in ancestors[y] for x, y in set(zip(a.tolist(), b.tolist())))


def differences(mine, serial):
    """The arrays in which two structures differ (none: equal supernode by supernode)."""
    out = [k for k in ("sn_start", "rows_ptr", "rows", "perm", "parent", "post")
           if not np.array_equal(np.asarray(getattr(mine, k)), np.asarray(getattr(serial, k)))]
    return out + [f"tree.{k}" for k in ("col_start", "col_end", "sn_first", "sn_last")
                  if not np.array_equal(np.asarray(getattr(mine.tree, k)), np.asarray(getattr(serial.tree, k)))]


STRUCTURE_OPTIONS = [{}, {"relax": 0, "relax_subtree": 0, "max_supernode": 16}]
# Layers the shares are taken on: every px x py dividing the ranks, px, py <= 3.
SHARE_GRIDS = [(px, py) for px in range(1, 4) for py in range(1, 4) if comm.size % (px * py) == 0]


def share_differences(A, row_of_col, tree, whole, root=0):
    """Per layer grid, the arrays in which this rank's share computed in parallel differs from
    the share of ``whole`` (C++ structure_share), on any rank."""
    out = {}
    q = comm.rank
    for px, py in SHARE_GRIDS:
        mine = parallel_symbolic(A, row_of_col, tree, {}, root=root, share=(px, py))
        x, y = q % (px * py) // py, q % py
        ref = _core.structure_share(whole, px, py, x, y)
        diff = differences(mine, ref)
        diff += [f"share.{k}" for k in ("rows_ptr", "rows", "cols_ptr", "cols")
                 if not np.array_equal(mine.share[k], ref.share[k])]
        if not np.array_equal(_core.supernodal_etree(mine), _core.supernodal_etree(ref)):
            diff.append("supernodal_etree")
        if mine.share["place"] != (x, y):
            diff.append("place")
        out[f"{px}x{py}"] = sorted(set().union(*comm.allgather(diff)))
    return out

for spec, ordering in [(f, o) for f in FAMILIES for o in ("ptscotch", "ptscotch-metis")]:
    A_global = checked_matrix(gallery.from_spec(spec))
    n = A_global.shape[0]
    B, pivoting = static_pivoting(A_global)  # the default static pivoting (equilibration, MC64)
    A = ParCSR.from_global(A_global, comm)
    tree, _ = parallel_ordering(A, pivoting.row_of_col, leaves="metis" if ordering == "ptscotch-metis" else "scotch")
    perm = np.asarray(tree.perm)
    same = comm.allgather(perm.tobytes())
    # The structure computed by leaves on their ranks, for the defaults and the exact one.
    pieces = [parallel_symbolic(A, pivoting.row_of_col, tree, options) for options in STRUCTURE_OPTIONS]
    shares = share_differences(A, pivoting.row_of_col, tree, pieces[0])
    lu = factor(A, grid=GRIDS[comm.size], ordering=ordering, max_supernode=16)
    x_true = np.random.default_rng(7).standard_normal(n)
    b = A_global @ x_true
    x = lu.solve(b[A.owned_rows()])
    err = comm.allreduce(float(np.abs(x - x_true[A.owned_rows()]).max()), op=MPI.MAX)
    if comm.rank == 0:
        nnz_L = symbolic(B, ordered=tree, max_supernode=16, relax=0, relax_subtree=0).nnz_L
        nnz_L_metis = symbolic(B, ordering="nd", max_supernode=16, relax=0, relax_subtree=0).nnz_L
        serial = [symbolic(B, ordered=tree, **options) for options in STRUCTURE_OPTIONS]
        print(json.dumps({
            "family": spec.split(":")[0], "ordering": ordering, "n": n,
            "permutation": bool(np.array_equal(np.sort(perm), np.arange(n))),
            "same_on_every_rank": all(s == same[0] for s in same),
            "levels": int(max(tree.level)), "nodes": tree.num_nodes,
            "separated": separated(tree, B),
            "nnz_L": int(nnz_L), "nnz_L_metis": int(nnz_L_metis),
            "structure_differs": [differences(p, q) for p, q in zip(pieces, serial)],
            "share_differs": shares,
            "supernodes": [int(q.nsuper) for q in serial],
            "berr": float(np.max(lu.berr)), "err": err, "x_scale": float(np.abs(x_true).max()),
            "ordering_parts": sorted(lu.report.ordering_parts)}), flush=True)


# More leaves than ranks (METIS's tree of 3 levels: 8 leaves, several on one rank) and the
# separators analysed on the last rank: the structure computed in parallel still equals the
# serial one.
for spec in ("poisson2d:20", "kkt3d:4", "dg3d:2", "random:rows=300,nnz_per_row=5"):
    A_global = checked_matrix(gallery.from_spec(spec))
    B, pivoting = static_pivoting(A_global)
    G = adjacency_graph(B)
    tree = _core.separator_tree(G.indptr, G.indices, 3)
    A = ParCSR.from_global(A_global, comm)
    mine = parallel_symbolic(A, pivoting.row_of_col, tree, {}, root=comm.size - 1)
    shares = share_differences(A, pivoting.row_of_col, tree, mine, root=comm.size - 1)
    if comm.rank == 0:
        leaves = int(sum(1 for k in range(tree.num_nodes) if tree.left[k] < 0))
        print(json.dumps({"family": spec.split(":")[0], "many_leaves": leaves,
                          "structure_differs": differences(mine, symbolic(B, ordered=tree)),
                          "share_differs": shares}), flush=True)


# The default's leaf ordering on meshes, and (for two of them) the ordering factor() reports.
def with_dense_row(A):
    """A with its first row and column full (a constraint): every vertex 2 steps from every other."""
    n = A.shape[0]
    D = sp.csr_matrix((np.ones(n), (np.zeros(n, dtype=np.int64), np.arange(n))), shape=(n, n))
    return (A + D + D.T).tocsr()


def path(n):
    """A tridiagonal matrix: a path, whose shells do not grow."""
    return sp.diags([-np.ones(n - 1), 4 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1], format="csr")


MESHES = {spec: lambda spec=spec: gallery.from_spec(spec) for spec in (
    "poisson2d:300", "poisson2d9:300", "convdiff2d:300", "aniso2d:300", "poisson3d:32", "poisson3d27:32",
    "elasticity3d:16", "groundwater3d:32", "kkt3d:24", "hpcg:32", "dg3d:8", "poisson2d:120", "poisson3d:12")}
MESHES["poisson3d:32+dense-row"] = lambda: with_dense_row(gallery.from_spec("poisson3d:32"))
MESHES["poisson2d:300+dense-row"] = lambda: with_dense_row(gallery.from_spec("poisson2d:300"))
MESHES["path:100000"] = lambda: path(100000)

for spec, build in MESHES.items():
    A_global = checked_matrix(build())
    A = ParCSR.from_global(A_global, comm)
    parts = {}
    tree, chosen = parallel_ordering(A, None, times=parts, leaves="auto")
    reported = None
    if spec in ("poisson2d:120", "poisson3d:12"):
        reported = factor(A, grid=(1, comm.size, 1), row_perm="none").analysis.ordering
    if comm.rank == 0:
        fill = [symbolic(A_global, **o).nnz_L  # the default supernodes: what the user gets
                for o in ({"ordered": tree}, {"ordering": "nd"})]
        print(json.dumps({"auto_leaves": spec, "chosen": chosen, "reported": reported,
                          "timed": "ordering_dimension" in parts, "nnz_L": int(fill[0]),
                          "nnz_L_metis": int(fill[1])}), flush=True)
