"""Cost-model validation on this machine: calibrate, predict, then measure.

In one MPI job: calibrate a profile here (commsolve.model.calibrate), then for each gallery
matrix and strategy predict the halo exchange time from the virtual world's plans priced
with that profile, and measure the same exchange (ParCSR.exchange; strategies interleaved,
each exchange barrier-bracketed, slowest rank, median of many repeats).

    python bench/model_validation.py [--np 2] [--ppn 1] [--repeats 400]
        [--out bench/results/model_validation_np2.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MATRICES = ["poisson2d:400", "poisson3d27:40", "random:rows=20000,nnz_per_row=20"]
STRATEGIES = ["standard", "node-aware", "node-aware-2step"]


def mpi_main(ppn, repeats):
    import numpy as np
    from mpi4py import MPI

    import commsolve as cs
    from commsolve.model import CostModel
    from commsolve.model.calibrate import fit_profile, measure

    comm = MPI.COMM_WORLD
    topo = cs.parcsr.resolve_topology(ppn, comm)
    meas = measure(comm, topo)
    prof = comm.bcast(fit_profile(meas, "this-machine")[0] if comm.rank == 0 else None, root=0)
    out = {"profile": prof.to_toml(), "cases": []}
    for spec in MATRICES:
        mats = {s: cs.ParCSR.from_spec(spec, comm, topology=ppn, strategy=s) for s in STRATEGIES}
        x = np.ones(mats["standard"].local_cols)
        halos = {s: np.empty(mats[s].plan.n_halo) for s in STRATEGIES}
        for s in STRATEGIES:
            for _ in range(5):
                mats[s].exchange(x, halos[s])
        times = {s: np.empty(repeats) for s in STRATEGIES}
        for k in range(repeats):
            for s in STRATEGIES:
                comm.Barrier()
                t = time.perf_counter()
                mats[s].exchange(x, halos[s])
                times[s][k] = time.perf_counter() - t
        for s in STRATEGIES:
            comm.Allreduce(MPI.IN_PLACE, times[s], op=MPI.MAX)
        if comm.rank == 0:
            G = cs.gallery.from_spec(spec)
            model = CostModel(prof)
            for s in STRATEGIES:
                plans = cs.virtual.plans(G, mats[s].row_dist, strategy=s, topology=mats[s].topology)
                pred = model.price(plans, mats[s].topology)
                med = float(np.median(times[s]))
                out["cases"].append({"matrix": spec, "strategy": s, "predicted_s": pred.time,
                                     "measured_median_s": med, "measured_p10_p90_s": [
                                         float(np.percentile(times[s], 10)), float(np.percentile(times[s], 90))],
                                     "measured_over_predicted": med / pred.time if pred.time > 0 else None,
                                     "breakdown_slowest_rank_s": pred.to_dict()["breakdown_slowest_rank_s"]})
    if comm.rank == 0:
        print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--ppn", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=400)
    ap.add_argument("--out", default=None)
    ap.add_argument("--mpi", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.mpi:
        return mpi_main(args.ppn, args.repeats)
    from commsolve.launch import run_mpi
    from spmv_local import machine

    proc = run_mpi(args.np, [os.path.abspath(__file__), "--mpi", "--ppn", str(args.ppn), "--repeats",
                             str(args.repeats)], timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    res = json.loads(proc.stdout)
    res.update({"benchmark": "model_validation", "date": time.strftime("%Y-%m-%d %H:%M:%S"),
                "machine": machine(), "nranks": args.np, "ppn": args.ppn, "repeats": args.repeats})
    out = args.out or os.path.join(HERE, "results", f"model_validation_np{args.np}.json")
    with open(out, "w") as f:
        json.dump(res, f, indent=2)
    print(f"{'matrix':<34}{'strategy':<18}{'predicted us':>13}{'measured us':>13}{'meas/pred':>10}")
    for c in res["cases"]:
        print(f"{c['matrix']:<34}{c['strategy']:<18}{c['predicted_s'] * 1e6:>13.2f}"
              f"{c['measured_median_s'] * 1e6:>13.2f}{c['measured_over_predicted']:>10.2f}")
    print(f"written to {out}")


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    main()
