"""Tutorial 3: node-aware communication for SpMV and AMG.

A halo exchange sends one message per pair of ranks that share a boundary; node-aware
strategies (Bienz's thesis) gather what a node needs from another node into one message per
pair of nodes. This script runs the SpMV under MPI with each strategy on virtual nodes of
``--ppn`` ranks (so node-aware accounting works on one machine), checks the product against
scipy and what went through MPI against the plan, then counts the same exchange at 4,096
virtual ranks without MPI, and lets AMG choose a strategy per level.

    mpiexec -n 4 python3 -m mpi4py node_aware.py --ppn 2
"""

import argparse

import numpy as np
from mpi4py import MPI

import commsolve as cs

comm = MPI.COMM_WORLD
parser = argparse.ArgumentParser()
parser.add_argument("--n", type=int, default=40, help="poisson3d27:N, the 27-point Laplacian")
parser.add_argument("--ppn", type=int, default=2, help="ranks per virtual node")
parser.add_argument("--procs", type=int, default=4096, help="virtual ranks of the study")
args = parser.parse_args()

spec = f"poisson3d27:{args.n}"
G = cs.gallery.poisson3d27(args.n)
x_global = np.sin(np.arange(G.shape[0]) * 0.01)
for strategy in ("standard", "node-aware", "node-aware-2step"):
    A = cs.ParCSR.from_spec(spec, comm, topology=args.ppn, strategy=strategy)
    y = A.matvec(A.distribute(x_global))
    err = np.max(np.abs(y - (G @ x_global)[A.owned_rows()])) / np.max(np.abs(G @ x_global))
    worst = comm.allreduce(float(err), op=MPI.MAX)
    planned = A.planned_stats().total()
    inter = comm.allreduce(int(planned["msgs_sent_inter"]), op=MPI.MAX)
    same = comm.allreduce(int(A.recorded_stats() == A.planned_stats().scaled(A.runs[0])), op=MPI.MIN)
    if comm.rank == 0:
        print(f"{strategy:<17} busiest rank's inter-node messages {inter:>3}, error vs scipy {worst:.1e}, "
              f"recorded == planned: {bool(same)}")

if comm.rank == 0:  # the same exchange at scale, every rank's plan built in this process
    topo = cs.make_topology(size=args.procs, ppn=16)
    big = cs.gallery.poisson3d27(64)
    part = cs.partition.partition(big, args.procs)
    for strategy in ("standard", "node-aware", "node-aware-2step"):
        plans = cs.virtual.plans(big, part, strategy=strategy, topology=topo)
        s = cs.stats.summarize(cs.virtual.plan_stats(plans, topo))["max"]
        t = cs.model.CostModel("bluewaters").price(plans, topo).time
        print(f"{args.procs} ranks, {strategy:<17} busiest rank: {int(s['msgs_sent_inter']):>3} inter-node messages, "
              f"{int(s['bytes_sent_inter']):>7} bytes; predicted {t * 1e6:.1f} us (bluewaters)")

A = cs.ParCSR.from_spec(spec, comm, topology=args.ppn)
ml = cs.amg.solver(A, strategy="auto")          # each level's strategy from its own pattern
levels = ml.describe()
x, info = ml.solve(np.ones(A.local_rows), tol=1e-8)
if comm.rank == 0:
    for row in levels:
        print(f"AMG level {row['level']}: {row['rows']:>7} rows, strategy {row['strategy']:<17} "
              f"busiest rank's inter-node messages {row['inter_msgs_max']}")
    print(f"AMG-CG: {ml.last_solve['iterations']} iterations, converged {ml.last_solve['converged']}")
