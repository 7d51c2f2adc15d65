"""MPI script: the distributed factorization on one process grid (direct/factor3d.hpp and
direct/factor_grid.hpp), from a row-distributed ParCSR, gallery families (symmetric,
nonsymmetric, indefinite KKT, random).

Usage: mpiexec -n K python -m mpi4py tests/mpi/factor3d_cases.py K PxQxZ
Rank 0 prints one JSON line per family: the largest difference of any rank's blocks from the
serial (multifrontal) factorization's laid out the same way (relative to the largest entry of
the supernode's part), whether the ranks of each grid together hold exactly the supernodes of
its forests, whether each rank's store is as large as the virtual world counts and smaller
than the whole factor, whether every rank's recorded CommStats equal its plan (computed from
the whole matrix and the structure, no MPI), the residual and the distance to the serial
solve of a solve through factor(); then one line for stored zeros, and one for a tiny pivot on
one grid (an error on every rank, not a hang) and its replacement.
"""

import json
import sys

import numpy as np
import scipy.sparse as sp
from mpi4py import MPI

import commsolve as cs
from commsolve import _core, direct, gallery
from commsolve.direct import factor3d
from commsolve.direct import forest_partition, make_layout
from commsolve.direct.serial import analyze
from commsolve.topology import make_topology

FAMILIES = ["poisson2d9:24", "convdiff2d:24", "poisson3d:8", "kkt3d:4", "random:rows=300,nnz_per_row=5"]
OPTIONS = dict(max_supernode=16, levels=3, ordering="tree")
# the serial SparseLU's ordering ("auto" would be PT-Scotch's on 2+ ranks): results compared with it

comm = MPI.COMM_WORLD
expected, grid = int(sys.argv[1]), tuple(int(v) for v in sys.argv[2].split("x"))
assert comm.size == expected, f"launched with {comm.size} ranks, expected {expected}"
px, py, pz = grid
topo = make_topology(comm, ppn=2 if comm.size % 2 == 0 else 1)


def path_forests(z):
    """Heap indices of grid z's forests, leaf to root."""
    f, out = pz - 1 + z, set()
    while f >= 0:
        out.add(f)
        f = (f - 1) // 2 if f > 0 else -1
    return out


def blocks_differ(store, serial):
    """(largest relative difference of this rank's blocks from the serial factors', the
    supernodes it holds a part of)."""
    got, ref = store.values(), store.reference(serial._core)
    ks, _, offs, lens = store.pieces(serial.structure)
    if not np.isfinite(got).all():
        return np.inf, set(int(k) for k in ks)
    worst = 0.0
    for k, o, n in zip(ks, offs, lens):
        scale = max(float(np.abs(ref[o:o + n]).max()), 1e-300)
        worst = float(np.maximum(worst, np.abs(got[o:o + n] - ref[o:o + n]).max() / scale))  # NaN wins
    return worst, set(int(k) for k in ks)


def owners(D):
    owner = np.empty(D.shape[0], dtype=np.int64)
    for r in range(comm.size):
        owner[D.row_dist.owned(r)] = r
    return owner


for spec in FAMILIES:
    partition = "strided" if spec.startswith("poisson3d") else "contiguous"
    D = cs.ParCSR.from_spec(spec, comm, partition=partition)
    G = gallery.from_spec(spec).tocsr()
    serial = direct.SparseLU(G, **OPTIONS)  # every rank: the same (deterministic) analysis
    _, B, _, _, _ = analyze(G, **OPTIONS)
    anorm = float(abs(B).sum(axis=0).max())
    forests = forest_partition(serial.structure, pz, "nd")
    layout = make_layout(serial.structure, grid, forests)
    store, report = factor3d.factor_on_grids(D, serial.pivoting, serial.row_order, serial.col_order, layout, topo,
                                             anorm, 1e-14, False)
    recorded, flops = report.recorded, report.flops
    worst, held = blocks_differ(store, serial)
    # the ranks of each grid together hold a part of every supernode of its forests, no other
    layer = comm.Split(comm.rank // (px * py), comm.rank)
    together = set().union(*layer.allgather(held))
    layer.Free()
    mine = path_forests(comm.rank // (px * py))
    held_ok = together == {s for s in range(len(forests)) if int(forests[s]) in mine}
    counted = _core.factor_entries_per_rank(layout)
    size_ok = store.size == counted[comm.rank] and (px * py == 1 or store.size < serial.nnz_LU)
    planned = factor3d.planned_factor_stats(G, owners(D), serial.pivoting, serial.row_order, serial.col_order, layout,
                                            topo)
    stats_ok = comm.allreduce(recorded == planned[comm.rank], op=MPI.LAND)
    # the plan factor() uses, counted from each rank's own rows, against the whole matrix's
    entries = factor3d.local_entries(D, serial.pivoting, serial.row_order, serial.col_order)
    here_ok = comm.allreduce(factor3d.planned_factor_stats_here(comm, entries, layout, topo) == planned[comm.rank],
                             op=MPI.LAND)
    inter_grid = comm.allreduce(int(recorded.array[list(factor3d.Z_FACTOR_STEPS), :2].sum()))
    in_grid = comm.allreduce(int(recorded.array[list(factor3d.XY_FACTOR_STEPS), :2].sum()))
    # One send at a time handed to MPI: messages wait in the engine's queue (the window's
    # paths, sends left after the last arrival among them); the blocks must come out the
    # same up to the order of the sums, which the order of arrivals decides.
    narrow, _ = factor3d.factor_on_grids(D, serial.pivoting, serial.row_order, serial.col_order, layout, topo, anorm,
                                         1e-14, False, send_window=1)
    narrow_diff = max(comm.allgather(blocks_differ(narrow, serial)[0]), key=lambda v: (np.isnan(v), v))
    worst = max(comm.allgather(worst), key=lambda v: (np.isnan(v), v))  # NaN wins
    held_ok = comm.allreduce(held_ok, op=MPI.LAND)
    size_ok = comm.allreduce(bool(size_ok), op=MPI.LAND)
    solver = direct.factor(D, comm, grid=grid, **OPTIONS)
    b = np.random.default_rng(5).standard_normal(G.shape[0])
    x = solver.solve(b, replicated=True)
    if comm.rank == 0:
        ref = serial.solve(b)
        print(json.dumps(dict(family=spec.split(":")[0], block_diff=worst, held_ok=bool(held_ok), here_ok=bool(here_ok),
                              size_ok=bool(size_ok), stats_ok=bool(stats_ok), narrow_diff=narrow_diff,
                              inter_grid_msgs=inter_grid,
                              in_grid_msgs=in_grid, flops=flops, serial_flops=serial._core.flops,
                              resid=float(np.linalg.norm(G @ x - b) / np.linalg.norm(b)),
                              diff=float(np.linalg.norm(x - ref) / np.linalg.norm(ref)),
                              phases=sorted(solver.factor_seconds))), flush=True)

# Stored zeros linking far-apart unknowns: the default static pivoting (MC64's scaled
# product) drops them from the pattern it orders; they must not travel to the grids.
G = gallery.from_spec("poisson2d9:20").tocsr()
n = G.shape[0]
C = G.tocoo()
S = sp.csr_matrix((np.concatenate([C.data, [0.0, 0.0]]), (np.concatenate([C.row, [0, n - 1]]),
                                                          np.concatenate([C.col, [n - 1, 0]]))), shape=(n, n))
assert S.nnz == G.nnz + 2
D = cs.ParCSR.from_global(S, comm)
solver = direct.factor(D, comm, grid=grid, **OPTIONS)
b = np.ones(n)
x = solver.solve(b, replicated=True)
if comm.rank == 0:
    print(json.dumps(dict(family="stored-zeros", resid=float(np.linalg.norm(G @ x - b) / np.linalg.norm(b)))),
          flush=True)

# The rows of the last grid's leaf forest scaled down: their pivots, and only theirs, fall
# below zero_pivot x ||A||_1 (the ordering reads the pattern alone, so it is unchanged).
G = gallery.from_spec("poisson2d:20").tocsr()
opts = dict(OPTIONS, equil=False, row_perm="none", zero_pivot=1e-6)
lu = direct.SparseLU(G, **opts)
forests = np.asarray(forest_partition(lu.structure, pz, "nd"))
leaf = np.flatnonzero(forests[lu.structure.sn_of] == 2 * pz - 2)  # factor columns of grid pz - 1's leaf
if pz == 1:  # one grid: its later half (all of it would scale ||A||_1 alike)
    leaf = np.arange(G.shape[0] // 2, G.shape[0])
scale = np.ones(G.shape[0])
scale[lu.row_order[leaf]] = 1e-8
S = sp.csr_matrix(sp.diags(scale) @ G)
D = cs.ParCSR.from_global(S, comm)
try:
    direct.factor(D, comm, grid=grid, **opts)
    error = None
except ValueError as e:
    error = str(e)
errors = comm.gather(error, root=0)
solver = direct.factor(D, comm, grid=grid, replace_tiny=True, **opts)
if comm.rank == 0:
    serial = direct.SparseLU(S, replace_tiny=True, **opts)
    print(json.dumps(dict(family="tiny-pivot", errors=errors, leaf=[int(leaf.min()), int(leaf.max())],
                          replaced=int(solver.tiny_pivots_replaced),
                          replaced_serial=int(serial.tiny_pivots_replaced))), flush=True)
