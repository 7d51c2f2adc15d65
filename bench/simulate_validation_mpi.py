"""MPI part of bench/simulate_validation.py, on the ranks it is started with.

    mpiexec -n P python -m mpi4py bench/simulate_validation_mpi.py solve SPEC REPEAT PROFILE LAYOUT [LAYOUT ...]
    mpiexec -n P python -m mpi4py bench/simulate_validation_mpi.py halo SPEC REPEAT PROFILE PPN

solve: per layout, factor once, time every solve algorithm (median total, slowest rank), and
simulate the same schedule (the solver's own) with PROFILE on rank 0, untimed. halo: time
the SpMV's halo exchange per strategy (strategies interleaved, barrier-bracketed, slowest
rank, median of REPEAT; timed in C++ around each exchange) and simulate each rank's plan.
Rank 0 prints one JSON line per run: measured, predicted, their ratio, and whether the
simulated traffic equals what every rank recorded through MPI.
"""

import json
import sys

import numpy as np
from mpi4py import MPI

import commsolve as cs
from commsolve import direct, gallery, sim

comm = MPI.COMM_WORLD
mode, spec, repeat, profile = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]


def line(**fields):
    print(json.dumps({"matrix": spec, "nranks": comm.size, **fields,
                      "predicted_over_measured": fields["predicted_s"] / fields["measured_s"]}), flush=True)


def solves(layouts):
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
                median = times[int(np.argsort([t["total"] for t in times])[repeat // 2])]
                line(workload="solve", grid=list(grid), algorithm=algorithm, measured_s=median["total"],
                     measured_parts_s={k: v for k, v in median.items() if k != "max"},
                     runs_total_s=[t["total"] for t in times], predicted_s=r.predicted_s, breakdown=r.breakdown(),
                     ranks_in_cache=int(r.in_cache.sum()),
                     simulated_traffic_equals_recorded=all(np.array_equal(a, s.array)
                                                           for a, s in zip(recorded, r.recorded)))
            comm.Barrier()


def halos(ppn):
    strategies = sim.halo.STRATEGIES
    mats = {s: cs.ParCSR.from_spec(spec, comm, topology=ppn, strategy=s) for s in strategies}
    x = np.ones(mats["standard"].local_cols)
    out = {s: np.empty(mats[s].plan.n_halo) for s in strategies}
    for s in strategies:
        for _ in range(5):
            mats[s].exchange(x, out[s])
    times = {s: [] for s in strategies}
    for _ in range(10):  # strategies interleaved in rounds; each exchange after a barrier, timed in C++
        for s in strategies:
            times[s].append(mats[s].timed_exchanges(x, max(1, repeat // 10)))
    for s in strategies:
        times[s] = np.concatenate(times[s])
        comm.Allreduce(MPI.IN_PLACE, times[s], op=MPI.MAX)
    G = gallery.from_spec(spec) if comm.rank == 0 else None
    for s in strategies:
        recorded = comm.gather(mats[s].recorded_stats().array, root=0)
        if comm.rank != 0:
            continue
        topo = mats[s].topology
        sched = sim.HaloSchedule(cs.virtual.plans(G, mats[s].row_dist, strategy=s, topology=topo), s)
        r = sim.simulate(sched, topo, profile)
        runs = mats[s].runs[0]
        line(workload="halo", strategy=s, ppn=ppn, measured_s=float(np.median(times[s])), predicted_s=r.predicted_s,
             simulated_traffic_equals_recorded=all(np.array_equal(a, st.scaled(runs).array)
                                                   for a, st in zip(recorded, r.recorded)))


if mode == "solve":
    solves(sys.argv[5:])
elif mode == "halo":
    halos(int(sys.argv[5]))
else:
    raise SystemExit(f"unknown mode {mode!r} (solve or halo)")
