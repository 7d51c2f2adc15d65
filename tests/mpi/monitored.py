"""MPI script for the referee test: run one workload K times under Open MPI's pml_monitoring
(started by tests/test_monitoring_mpi.py with --mca pml_monitoring_enable 2 and
COMMSOLVE_PERSISTENT=0) and print, per rank, what our plans say one repetition sends.

Usage: mpiexec -n 4 python -m mpi4py tests/mpi/monitored.py 4 WORKLOAD K
WORKLOAD: halo (matvec and rmatvec under all three strategies), trees (random restricted
collectives, two shapes), sptrsv (the 2D solve, also on 2 threads per rank, and both 3D solves), spgemm (A A and the
Galerkin product P^T A P: variable-length row records), factor3d (the distributed
factorization on a 1x2x2 grid with binary trees and on a 2x2x1 grid with flat trees: panel
broadcasts inside the grids, inter-grid reductions and the ancestor broadcast), sparsified (a
hybrid Galerkin AMG hierarchy's sparsified operators and interpolations), selinv (parallel
selected inversion on a 2x2 grid, symmetric and unsymmetric forms), dense (the 2.5D multiply
and LU on a 1x2x2 grid, LU with tournament pivoting on 2x1x2: its row swaps as recorded).
mgcg (one V-cycle of MGCG with hierarchical coarse-grid aggregation: its moves onto 2 ranks,
then 1, recorded as run).
Rank 0 prints a JSON
line per rank: [msgs intra, msgs inter, bytes intra, bytes inter] sent per repetition, and
the node of every rank.
"""

import json
import os
import sys

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(__file__))
import commsolve as cs  # noqa: E402
from commsolve import direct, gallery, trees  # noqa: E402

comm = MPI.COMM_WORLD
expected, workload, K = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
assert comm.size == expected == 4, f"launched with {comm.size} ranks, expected {expected} (4)"
topo = cs.make_topology(comm, ppn=2)


def sent(stats):
    a = stats.array.sum(axis=0)
    return a[0:4].astype(np.int64)


if workload == "halo":
    mats = [cs.ParCSR.from_spec("poisson2d:40", comm, partition="metis", topology=topo, strategy=s)
            for s in ("standard", "node-aware", "node-aware-2step")]
    x = [np.ones(A.local_cols) for A in mats]
    y = [np.ones(A.local_rows) for A in mats]

    def once():
        for A, u, v in zip(mats, x, y):
            A.matvec(u)
            A.rmatvec(v)

    planned = sum(sent(A.planned_stats()) + sent(A.planned_stats().reversed()) for A in mats)
elif workload == "trees":
    C = trees.random_collectives(comm.size, 200, seed=4)
    plans = [trees.plan(C, comm.rank, topo, shape=s, seed=2) for s in ("binary", "shifted-binary")]

    def once():
        for p in plans:
            trees.run(comm, C, p, [np.ones(C.counts[c]) for c in p.index], topo)

    planned = sum(sent(s) for s in trees.stats(plans, C, topo))
elif workload == "sptrsv":
    A = gallery.poisson2d9(30) if comm.rank == 0 else None
    three_d = direct.factor(A, comm, grid=(1, 2, 2), topology=topo, allreduce="per-supernode")
    runs = [(direct.factor(A, comm, grid=(2, 2, 1), topology=topo), "2d")]
    runs += [(three_d, alg) for alg in ("3d-baseline", "3d-baseline-async", "3d", "3d-baseline-pdgstrs")]
    # the message-driven phases on 2 threads per rank (their sends queued for the engine's thread)
    runs += [(direct.factor(A, comm, grid=(2, 2, 1), topology=topo, threads=2), "2d")]

    def once():
        for s, alg in runs:
            s.set_options(algorithm=alg)
            s.solve(np.ones((s.local_rows, 2)), refine=False)

    # the triangular solve, and measuring its backward error: per right-hand side one
    # product with A and one halo exchange of |x| (the residual matrix's forward plan)
    planned = 0
    for s, alg in runs:
        s.set_options(algorithm=alg)
        planned = planned + sent(s.planned_stats(2)) + 2 * 2 * sent(s.residual_matrix.planned_stats())
elif workload == "spgemm":
    import scipy.sparse as sp

    G = sp.csr_matrix(gallery.from_spec("poisson2d:30"))
    n = G.shape[0]
    Pg = sp.csr_matrix((np.ones(n), (np.arange(n), np.arange(n) // 4)), shape=(n, (n + 3) // 4))
    Pg = sp.csr_matrix((sp.identity(n) - 0.1 * G) @ Pg)
    A = cs.ParCSR.from_global(G, comm, partition="metis", topology=topo)
    coarse = cs.partition.partition(Pg.shape[1], comm.size)
    P = cs.ParCSR.from_local_rows(Pg[A.row_dist.owned(comm.rank)], comm, row_dist=A.row_dist, col_dist=coarse,
                                  topology=topo)

    from commsolve import _core

    _, first = cs.spgemm(A, A, strategy="node-aware", return_info=True)
    _, second = cs.galerkin(A, P, strategy="node-aware-2step", return_info=True)
    f = comm.py2f()

    # The products' exchanges and local multiplications, with the plans built above; not the
    # construction of the result matrices, whose setup (an MPI_Alltoallv of halo indices)
    # Open MPI counts among these point-to-point lines.
    def once():
        _core.spgemm(A._core, A._core, f, "node-aware", first["exchanges"][0]["plan"])
        _core.galerkin(A._core, P._core, f, "node-aware-2step", *(e["plan"] for e in second["exchanges"]))

    AA = cs.virtual.spgemm_record_stats(G, G, A.row_dist, A.row_dist, topo, "node-aware")
    AP, RAP = cs.virtual.galerkin_record_stats(G, Pg, A.row_dist, coarse, topo, "node-aware-2step")
    planned = sent(AA[comm.rank]) + sent(AP[comm.rank]) + sent(RAP[comm.rank])
elif workload == "factor3d":
    from commsolve import _core
    from commsolve.direct import factor3d, make_layout
    from commsolve.direct.serial import analyze

    G = gallery.from_spec("poisson2d9:30").tocsr()
    A = cs.ParCSR.from_global(G, comm, topology=topo)
    options = dict(max_supernode=16, levels=3)
    lu = direct.SparseLU(G, **options)
    _, B, _, _, _ = analyze(G, **options)
    f, anorm = comm.py2f(), float(abs(B).sum(axis=0).max())
    # Two layouts: 1x2x2 with binary trees (inside and between grids) and 2x2x1 with flat
    # trees (panels along process rows and down process columns, px > 1).
    triples = factor3d.local_entries(A, lu.pivoting, lu.row_order, lu.col_order)  # this rank's rows' entries
    owner = np.repeat(np.arange(comm.size), [A.row_dist.local_size(r) for r in range(comm.size)])
    runs = [(make_layout(lu.structure, grid, partition="nd"), cs.trees.TreeShape(shape))
            for grid, shape in (((1, 2, 2), "binary"), ((2, 2, 1), "flat"))]

    # Every step of the factorization, the entries' move by its plan included, against the
    # plan counted from the whole matrix (the entries' step from A's pattern and its rows' owners).
    def once():
        for layout, shape in runs:
            _core.factor_3d(f, topo, layout, *triples, anorm, 1e-14, False, shape, 0)

    planned = sum(sent(factor3d.planned_factor_stats(G, owner, lu.pivoting, lu.row_order, lu.col_order, layout, topo,
                                                     shape)[comm.rank]) for layout, shape in runs)
elif workload == "sparsified":
    # Hybrid Galerkin with strong lumping: each level's sparsified operator (and P) exchange
    # along their own plans; what the busiest level sends after sparsification is what the
    # hierarchy reports.
    A = cs.ParCSR.from_spec("poisson3d27:12", comm, topology=topo)
    ml = cs.amg.solver(A, strategy="node-aware", sparsify="hybrid", gamma=[0.5], lumping="strong")
    ops = [lvl.solve_A for lvl in ml.levels] + [lvl.P for lvl in ml.levels[:-1]]
    assert any(lvl.A_hat is not None for lvl in ml.levels)

    def once():
        for M in ops:
            M.matvec(np.ones(M.local_cols))
            M.rmatvec(np.ones(M.local_rows))

    planned = sum(sent(M.planned_stats()) + sent(M.planned_stats().reversed()) for M in ops)
elif workload == "mgcg":
    # One V-cycle of MGCG with hCGA (4 ranks -> 2 -> 1), SELL-C-sigma operators, IC(0): every
    # level's halo exchanges, interpolations both ways, and the moves' gathers and scatters.
    from commsolve.mg import _chain, _operators

    s = cs.mg.MGCG("groundwater3d:16", comm, topology=topo, format="sell", cga="hierarchical", hcga_group=2,
                   hcga_rows=200, cga_rows=20)
    assert [lv["ranks"] for lv in s.describe()] == [4, 2, 2, 1, 1]
    ops = [op for solver in _chain(s.ml) for op in _operators(solver)]
    b = np.ones(s.A.local_rows)

    def once():
        s.ml.cycle(b)

    for op in ops:
        op.reset_recorded()
    once()  # how often one cycle runs each plan, each way
    planned = sum(op.runs[0] * sent(op.planned_stats()) + op.runs[1] * sent(op.planned_stats().reversed())
                  for op in ops) if ops else np.zeros(4, dtype=np.int64)
elif workload == "selinv":
    # Parallel selected inversion on a 2x2 grid, both forms (symmetric with shifted-binary
    # trees, unsymmetric with flat ones): every broadcast, reduction and cross-diagonal send.
    from commsolve import _core

    runs = []
    for options, shape, form in (({"row_perm": "none", "equil": False}, "shifted-binary", True), ({}, "flat", False)):
        lu = direct.factor(cs.ParCSR.from_spec("poisson2d9:20", comm, topology=topo), comm, grid="2x2",
                           topology=topo, max_supernode=8, **options)
        runs.append(_core.SelectedInversion(lu._core, cs.trees.TreeShape(shape), form))

    def once():
        for r in runs:
            r.run()

    planned = sum(sent(cs.CommStats(r.planned_stats_array())) for r in runs)
elif workload == "dense":
    # The 2.5D multiply and LU on a 1x2x2 grid: replication and reduction along z, SUMMA
    # panels, the LU's sums of panels along z, diagonal and panel broadcasts.
    from commsolve import _core, dense
    from commsolve.dense import DistributedDense

    grid = (1, 2, 2)
    A = DistributedDense.random(30, 22, comm, grid, nb=4, seed=1)
    B = DistributedDense.random(22, 26, comm, grid, nb=4, seed=2)
    S = DistributedDense.from_global(np.eye(28) * 28 + np.ones((28, 28)), comm, grid, nb=4)
    mm = _core.Matmul25D(comm.py2f(), topo, 30, 26, 22, 4, grid, cs.trees.TreeShape("binary"))
    fac = _core.LU25D(comm.py2f(), topo, 28, 4, grid, cs.trees.TreeShape("flat"))
    # with tournament pivoting on 2x1x2: its row swaps are not planned (they follow the
    # pivots): what the engine recorded of them is checked instead
    P = DistributedDense.random(29, 29, comm, (2, 1, 2), nb=4, seed=3)
    piv = _core.LU25D(comm.py2f(), topo, 29, 4, (2, 1, 2), cs.trees.TreeShape("binary"), tournament=True)
    C = np.zeros(A.local.shape[0] * B.local.shape[1])

    def once():
        mm.run(A.flat(), B.flat(), C)
        fac.run(np.array(S.flat()))
        piv.run(np.array(P.flat()))

    piv.run(np.array(P.flat()))  # the same pivots every run: its swaps as recorded now
    swap = dense.ROLES["lu"].index("swap")
    unplanned = np.zeros_like(piv.planned_stats_array())
    unplanned[swap] = piv.recorded_stats_array()[swap]
    planned = sent(cs.CommStats(mm.planned_stats_array())) + sent(cs.CommStats(fac.planned_stats_array())) + \
        sent(cs.CommStats(piv.planned_stats_array() + unplanned))
else:
    raise SystemExit(f"unknown workload {workload}")

once()  # warm-up: lazily built executors and communicators are part of both jobs' setup
for _ in range(K):
    once()
everyone = comm.gather([int(v) for v in planned], root=0)
if comm.rank == 0:
    for r, p in enumerate(everyone):
        print(json.dumps({"rank": r, "planned": p, "nodes": [topo.node_of(q) for q in range(comm.size)]}), flush=True)
