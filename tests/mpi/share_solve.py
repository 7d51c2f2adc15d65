"""MPI script: the distributed factorization and triangular solves on shares of the
supernodal structure (issue 35; C++ direct/structure_share.hpp), each rank holding only its
own share.

Usage: mpiexec -n K python -m mpi4py tests/mpi/share_solve.py K PxQxZ
Every rank computes the same serial analysis (deterministic), takes its share, and factors
and solves on a layout of that share alone (the forests taken from the whole). Rank 0 prints
one JSON line per family: the relative error of the solves against scipy's, for every
algorithm the grid runs and three tree shapes; whether every rank's recorded messages equal
the plan of the whole structure (the factorization's from factor3d.planned_factor_stats, the
solves' from solve_stats_virtual: neither reads a share), and so does the rank's plan of the
factorization from its share (planned_factor_stats_here); whether each store is as large as
the whole structure's layout counts; and the largest share's rows over the whole's.
"""

import json
import sys

import numpy as np
import scipy.sparse.linalg as spla
from mpi4py import MPI

import commsolve as cs
from commsolve import _core, direct, gallery
from commsolve.direct import factor3d, forest_partition, make_layout, solve_options
from commsolve.direct.serial import analyze
from commsolve.topology import make_topology

FAMILIES = ["poisson2d9:20", "convdiff2d:20", "poisson3d:7", "kkt3d:4", "random:rows=300,nnz_per_row=5"]
OPTIONS = dict(max_supernode=16, levels=3, ordering="tree")
TREES = ["binary", "flat", "need-ordered"]

comm = MPI.COMM_WORLD
expected, grid = int(sys.argv[1]), tuple(int(v) for v in sys.argv[2].split("x"))
assert comm.size == expected, f"launched with {comm.size} ranks, expected {expected}"
px, py, pz = grid
q = comm.rank % (px * py)
topo = make_topology(comm, ppn=2 if comm.size % 2 == 0 else 1)
algorithms = [a for a in direct.ALGORITHMS if (a == "2d") == (pz == 1)]


for spec in FAMILIES:
    D = cs.ParCSR.from_spec(spec, comm)
    G = gallery.from_spec(spec).tocsr()
    serial = direct.SparseLU(G, **OPTIONS)
    whole = serial.structure
    _, B, _, _, _ = analyze(G, **OPTIONS)
    anorm = float(abs(B).sum(axis=0).max())
    forests = forest_partition(whole, pz, "nd")
    whole_layout = make_layout(whole, grid, forests)
    share = _core.structure_share(whole, px, py, q // py, q % py)
    layout = make_layout(share, grid, forests)
    store, report = factor3d.factor_on_grids(D, serial.pivoting, serial.row_order, serial.col_order, layout, topo,
                                             anorm, 1e-14, False)
    owners = np.asarray(D.row_dist.owners_of(np.arange(G.shape[0], dtype=np.int64)), dtype=np.int64)
    planned = factor3d.planned_factor_stats(G, owners, serial.pivoting, serial.row_order, serial.col_order,
                                            whole_layout, topo)
    here = factor3d.planned_factor_stats_here(comm, factor3d.local_entries(D, serial.pivoting, serial.row_order,
                                                                          serial.col_order), layout, topo)
    factor_as_planned = comm.allreduce(report.recorded == planned[comm.rank] == here, op=MPI.LAND)
    size_ok = comm.allreduce(store.size == _core.factor_entries_per_rank(whole_layout)[comm.rank], op=MPI.LAND)
    rhs = _core.RhsMap(D.row_dist, serial.row_order, serial.col_order)
    core = _core.TriSolve(comm.py2f(), topo, layout, rhs, store, solve_options(pz))
    b = np.random.default_rng(7).standard_normal((G.shape[0], 2))
    ref = spla.splu(G.tocsc()).solve(b)
    errors, solves_as_planned = {}, True
    for alg in algorithms:
        for tree in TREES:
            opts = solve_options(pz, alg, tree)
            core.set_options(opts)
            own = D.owned_rows()  # the factored matrix is D_r A D_c: b scaled going in, x coming out
            mine = np.ascontiguousarray(serial.pivoting.row_scale[own, None] * b[own])
            x = np.empty_like(mine)
            core.solve(mine, x)
            full = np.vstack(comm.allgather(serial.pivoting.col_scale[own, None] * x))
            errors[f"{alg}/{tree}"] = float(np.linalg.norm(full - ref) / np.linalg.norm(ref))
            virtual = _core.solve_stats_virtual(whole_layout, opts, topo, 2, rhs)[comm.rank]
            solves_as_planned &= bool(np.array_equal(core.recorded_stats_array(), virtual))
    solves_as_planned = comm.allreduce(solves_as_planned, op=MPI.LAND)
    share_rows = comm.allreduce(int(share.rows.size), op=MPI.MAX)
    if comm.rank == 0:
        print(json.dumps(dict(family=spec.split(":")[0], errors=errors, factor_as_planned=bool(factor_as_planned),
                              solves_as_planned=bool(solves_as_planned), size_ok=bool(size_ok),
                              share_fraction=share_rows / whole.rows.size)), flush=True)
