"""Tutorial 2: choose and predict. Simulate the triangular solves at 2,048 ranks, rank every
grid and algorithm, and let ``grid="auto"`` pick for the ranks at hand.

The simulator replays the very schedules the MPI solves run, built for every rank of a
virtual world (no MPI, no numeric factors), on a machine profile: here Cori Haswell's, the
SC'23 paper's machine. Then ``cs.direct.factor(A, comm, grid="auto", profile=...)`` runs the
same ranking for the job's own ranks and factors on the best grid.

    python predict_at_scale.py                            # the study at 2,048 ranks (a minute)
    mpiexec -n 2 python3 -m mpi4py predict_at_scale.py --n 64 --procs 64
"""

import argparse

import numpy as np
from mpi4py import MPI

import commsolve as cs

comm = MPI.COMM_WORLD
parser = argparse.ArgumentParser()
parser.add_argument("--n", type=int, default=256, help="poisson2d9:N, the 9-point Laplacian")
parser.add_argument("--procs", type=int, default=2048, help="virtual ranks of the study")
parser.add_argument("--profile", default="cori-haswell", help="bundled profile name or a TOML path")
args = parser.parse_args()

if comm.rank == 0:
    G = cs.gallery.poisson2d9(args.n)
    topo = cs.make_topology(size=args.procs, ppn=min(32, args.procs))   # Cori Haswell: 32 cores a node
    # one solve on one grid: 16 x 16 x 8 at 2,048 ranks (or the squarest grid of 8 layers)
    pz = 8 if args.procs % 8 == 0 else 1
    S = cs.direct.symbolic(G, pz=pz)
    px = int(np.sqrt(args.procs // pz))
    while (args.procs // pz) % px:
        px -= 1
    grid = (px, args.procs // pz // px, pz)
    r = cs.sim.simulate(cs.sim.solve_schedule(S, grid, "3d", tree="binary"), topo, args.profile)
    parts = ", ".join(f"{k.removesuffix('_s')} {v * 1e3:.3f}" for k, v in r.breakdown().items())
    print(f"poisson2d9:{args.n} on {'x'.join(map(str, grid))} ({args.procs} ranks, {args.profile}): "
          f"3d solve predicted {r.predicted_s * 1e3:.3f} ms ({parts} ms)")
    # every grid, algorithm and tree of the same ranks, fastest first
    S = cs.direct.symbolic(G, pz=cs.tune.auto_max_pz(args.procs))
    ranking = cs.tune.rank_grids(S, topo, args.profile)
    print(cs.tune.format_ranking(ranking, top=5))

# grid="auto" on this job's ranks: the same ranking, then the factorization on the best grid
A = cs.ParCSR.from_spec(f"poisson2d9:{args.n}", comm)
lu = cs.direct.factor(A, comm, grid="auto", profile=args.profile)
x = lu.solve(np.ones(lu.local_rows))
if comm.rank == 0:
    best = lu.grid_ranking[0]
    print(f"grid=auto on {comm.size} rank(s): {'x'.join(map(str, lu.grid))} {lu.algorithm} {lu.tree} "
          f"(predicted {best['predicted_s'] * 1e3:.3f} ms, {len(lu.grid_ranking)} configurations), "
          f"measured {lu.solve_seconds['total'] * 1e3:.3f} ms, backward error {max(lu.berr):.1e}")
