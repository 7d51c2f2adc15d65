"""MPI part of bench/simulate_validation.py: on the ranks it is started with, factor one
matrix per layout, time every solve algorithm, and (rank 0, untimed) simulate the same
schedule with the given profile.

    mpiexec -n P python -m mpi4py bench/simulate_validation_mpi.py SPEC REPEAT PROFILE LAYOUT [LAYOUT ...]

Rank 0 prints one JSON line per run: measured median total (slowest rank) and its parts,
the simulated prediction and breakdown, and whether the simulated traffic equals what every
rank recorded.
"""

import json
import sys

import numpy as np
from mpi4py import MPI

from commsolve import direct, gallery, sim

comm = MPI.COMM_WORLD
spec, repeat, profile, layouts = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
A = gallery.from_spec(spec) if comm.rank == 0 else None
n = comm.bcast(None if A is None else A.shape[0])
b_all = np.sin(0.37 * np.arange(n)) + 0.5

for layout in layouts:
    grid = direct.parse_grid(layout, comm.size)
    algorithms = ["2d"] if grid[2] == 1 else ["3d-baseline", "3d"]
    solver = direct.factor(A, comm, grid=grid, algorithm=algorithms[0])
    b = b_all[solver.distribution.owned(comm.rank)]
    for algorithm in algorithms:
        solver.set_options(algorithm=algorithm)
        solver.solve(b, refine=False)  # warm-up
        times = []
        for _ in range(repeat):
            solver.solve(b, refine=False)
            times.append(solver.solve_seconds)
        recorded = comm.gather(solver.stats().array, root=0)
        if comm.rank == 0:
            r = sim.simulate(sim.schedule_of(solver), solver.topology, profile)
            same = all(np.array_equal(a, s.array) for a, s in zip(recorded, r.recorded))
            median = times[int(np.argsort([t["total"] for t in times])[repeat // 2])]
            print(json.dumps({"matrix": spec, "nranks": comm.size, "grid": list(grid), "algorithm": algorithm,
                              "measured_s": median["total"], "measured_parts_s": median,
                              "runs_total_s": [t["total"] for t in times], "predicted_s": r.predicted_s,
                              "predicted_over_measured": r.predicted_s / median["total"],
                              "breakdown": r.breakdown(), "simulated_traffic_equals_recorded": bool(same)}),
                  flush=True)
        comm.Barrier()
