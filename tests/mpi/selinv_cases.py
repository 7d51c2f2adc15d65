"""MPI script: parallel selected inversion on one process grid, every gallery family, both
forms (symmetric where the factorization allows it: no row permutation, no scaling) and
every tree shape.

Usage: mpiexec -n K python -m mpi4py tests/mpi/selinv_cases.py K PxQ
Rank 0 prints one JSON line per (family, form, tree): the largest difference from numpy's
dense inverse (relative to its largest entry), whether the entries hold the pattern of A^T
and the diagonal, whether the ranks' own entries (gather=False) make up the gathered matrix,
whether every rank's recorded CommStats equal its plan and its plan the virtual world's,
and the messages sent in all; then poisson3d:14 in both forms (products in several pieces)
the form symmetric=None picks, the warning of replaced tiny pivots, and one line on a 3D
grid's refusal.
"""

import json
import sys

import numpy as np
import scipy.sparse as sp
from mpi4py import MPI

from commsolve import CommStats, ParCSR, _core, direct, gallery
from commsolve.trees import SHAPES, tree_shape

# The torus shapes (binomial, rectangular) run under MPI in trees_cases.py and dense_cases.py.
SHAPES = [s for s in SHAPES if s not in ("binomial", "rectangular")]

FAMILIES = ["poisson2d:12", "poisson2d9:10", "poisson3d:5", "poisson3d27:5", "aniso2d:12,eps=0.001,theta=30",
            "convdiff2d:12,pe=50,theta=30", "kkt3d:3,alpha=1", "random:rows=150,nnz_per_row=5"]
SYMMETRIC = {"row_perm": "none", "equil": False}
OPTIONS = dict(max_supernode=8, levels=3, ordering="tree")  # small supernodes: many blocks, many messages
# the serial SparseLU's ordering ("auto" would be PT-Scotch's on 2+ ranks): results compared with it

comm = MPI.COMM_WORLD
expected, grid = int(sys.argv[1]), sys.argv[2]
assert comm.size == expected, f"launched with {comm.size} ranks, expected {expected}"
topo = 2 if comm.size % 2 == 0 else 1


def pattern_ok(A, S):
    C = S.tocoo()  # the stored pattern: an entry of A^-1 may be an exact zero
    have = set(zip(C.row.tolist(), C.col.tolist()))
    At = sp.coo_matrix(A.T)
    return all((i, j) in have for i, j in zip(At.row.tolist(), At.col.tolist())) and \
        all((i, i) in have for i in range(A.shape[0]))


for spec in FAMILIES:
    A = sp.csr_matrix(gallery.from_spec(spec))
    dense = np.linalg.inv(A.toarray()) if comm.rank == 0 else None
    forms = [("unsymmetric", {})]
    if (A != A.T).nnz == 0 and not spec.startswith("kkt"):  # KKT's zero block needs the row matching
        forms.append(("symmetric", SYMMETRIC))
    for form, options in forms:
        lu = direct.factor(ParCSR.from_global(A, comm), comm, grid=grid, topology=topo, **OPTIONS, **options)
        for tree in SHAPES:
            S = lu.selected_inverse(tree=tree, seed=3, flat_threshold=2, symmetric=form == "symmetric")
            rep = lu.selinv
            stats_ok = comm.allreduce(rep.recorded == rep.planned, op=MPI.LAND)
            planned = comm.gather(rep.planned.array, root=0)
            sent = comm.allreduce(sum(v for k, v in rep.recorded.total().items() if k.startswith("msgs_sent")))
            mine, _ = __import__("commsolve.direct.selinv", fromlist=["x"]).selected_inverse(
                lu, tree, 3, 2, form == "symmetric", gather=False)
            pieces = comm.gather(mine, root=0)
            if comm.rank == 0:
                C = S.tocoo()
                err = float(np.abs(C.data - dense[C.row, C.col]).max() / np.abs(dense).max())
                virtual = _core.selinv_stats_virtual(lu.layout, tree_shape(tree, 3, 2), lu.topology,
                                                     form == "symmetric")
                coo = [p.tocoo() for p in pieces]  # explicit zeros kept (A^-1 may have exact zeros)
                union = sp.csr_matrix((np.concatenate([c.data for c in coo]),
                                       (np.concatenate([c.row for c in coo]), np.concatenate([c.col for c in coo]))),
                                      shape=S.shape)
                union.sort_indices()
                print(json.dumps({"family": spec.split(":")[0], "form": form, "tree": tree, "err": err,
                                  "nnz": int(S.nnz), "pattern_ok": pattern_ok(A, S), "stats_ok": bool(stats_ok),
                                  "virtual_ok": all(np.array_equal(p, v) for p, v in zip(planned, virtual)),
                                  # (a second run: sums may add in another order, so to rounding)
                                  "pieces_ok": bool(sum(p.nnz for p in pieces) == S.nnz == union.nnz
                                                    and np.array_equal(union.indptr, S.indptr)
                                                    and np.array_equal(union.indices, S.indices)
                                                    and np.abs(union.data - S.data).max() <= 1e-14 * abs(S).max()),
                                  "symmetric": rep.symmetric, "messages": int(sent),
                                  "seconds_ok": all(np.isfinite(v) and v >= 0 for v in rep.seconds.values())}),
                      flush=True)

# Large enough that a rank's products for a supernode run in several pieces (about 2 MFlop
# each: direct/selinv_plan.hpp's product_pieces), with messages handled between them. METIS's
# nested dissection on the root, the same on every grid (the default's supernodes depend on
# the ranks and on how it orders leaves).
A = sp.csr_matrix(gallery.from_spec("poisson3d:14"))  # the smallest with split products on every grid
dense = np.linalg.inv(A.toarray()) if comm.rank == 0 else None
for form, options in (("unsymmetric", {}), ("symmetric", SYMMETRIC)):  # 128 columns: several blocks below each
    lu = direct.factor(ParCSR.from_global(A, comm), comm, grid=grid, topology=topo, max_supernode=128, ordering="nd",
                       **options)
    S = lu.selected_inverse(symmetric=form == "symmetric")
    if comm.rank == 0:
        C = S.tocoo()
        print(json.dumps({"family": "pieces", "form": form, "rows": A.shape[0],
                          "split_supernodes": lu.selinv.split_supernodes,
                          "err": float(np.abs(C.data - dense[C.row, C.col]).max() / np.abs(dense).max())}), flush=True)

# The default (parallel) ordering: on a grid of px, py > 1 each rank holds its share of the
# structure only, and selected inversion gathers the whole while it runs.
A = sp.csr_matrix(gallery.from_spec("convdiff2d:14"))
dense = np.linalg.inv(A.toarray()) if comm.rank == 0 else None
lu = direct.factor(ParCSR.from_global(A, comm), comm, grid=grid, topology=topo, max_supernode=8)
shares = comm.gather(lu.structure.share is not None, root=0)
S = lu.selected_inverse()
stats_ok = comm.allreduce(lu.selinv.recorded == lu.selinv.planned, op=MPI.LAND)
if comm.rank == 0:
    C = S.tocoo()
    print(json.dumps({"family": "shares", "shares": shares, "stats_ok": bool(stats_ok), "pattern_ok": pattern_ok(A, S),
                      "err": float(np.abs(C.data - dense[C.row, C.col]).max() / np.abs(dense).max())}), flush=True)

# symmetric=None takes the symmetric form exactly where the factorization allows it; replaced
# tiny pivots (KKT's zero block without the row matching) are reported, not hidden
A = sp.csr_matrix(gallery.from_spec("poisson2d:10"))
chosen = {}
for name, options in (("alike", SYMMETRIC), ("defaults", {})):
    lu = direct.factor(ParCSR.from_global(A, comm), comm, grid=grid, topology=topo, **options)
    lu.selected_inverse()
    chosen[name] = lu.selinv.symmetric
K = sp.csr_matrix(gallery.from_spec("kkt3d:3"))
lu = direct.factor(ParCSR.from_global(K, comm), comm, grid=grid, topology=topo, replace_tiny=True,
                   ordering="tree", levels=4, **SYMMETRIC)  # this tree of METIS's meets tiny pivots in the zero block
lu.selected_inverse()
if comm.rank == 0:
    print(json.dumps({"family": "auto", "chosen": chosen, "replaced": int(lu.tiny_pivots_replaced),
                      "warnings": lu.selinv.warnings}), flush=True)

if comm.size % 2 == 0:  # a grid of two layers is refused, on every rank, with the reason
    A = sp.csr_matrix(gallery.from_spec("poisson2d:8"))
    lu = direct.factor(ParCSR.from_global(A, comm), comm, grid=f"1x{comm.size // 2}x2", topology=topo, **OPTIONS)
    try:
        lu.selected_inverse()
        error = None
    except ValueError as e:
        error = str(e)
    every = comm.gather(error, root=0)
    if comm.rank == 0:
        print(json.dumps({"family": "3d-refused", "errors": every}), flush=True)
