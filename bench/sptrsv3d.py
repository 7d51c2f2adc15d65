"""The 3D triangular solves: measured here, and counted at 2,048 virtual ranks beside the
SC'23 paper's results.

Measured (one machine, 2 cores): per matrix, the 2D solve and both 3D solves (each with
packed and per-supernode inter-grid messages) on P = 1, 2 and 4 ranks, every layout with
those ranks; median of --repeat solves, slowest rank, with the parts (L, inter-grid, U, b
and x moves). P = 4 runs on 2 cores: oversubscribed, reported apart; its times show
per-message overheads and waiting, not speed. Each P runs in one mpiexec job, so the
layouts of one P are compared side by side; a STREAM triad before and after brackets the
machine's state.

Virtual (no MPI, no numeric factors): every rank's solve plan at 2,048 ranks for
poisson2d9:2048 (the paper's s2D9pt2048, 4.2M unknowns) and poisson3d:100 (a 3D stand-in
for nlpkkt80: 1M unknowns, nnz(L+U) of the same order), for Pz = 1 .. 32: messages and bytes
per rank inside the grids and between them, inter-grid synchronisation points, work per
grid. Counts, not times: a time at scale needs the simulator (issue 15).

    python bench/sptrsv3d.py [--measured poisson2d9:500,poisson3d:40] [--repeat 10] [--nrhs 1]
                             [--virtual poisson2d9:2048,poisson3d:100] [--out bench/results/sptrsv3d.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from spmv_local import machine, triad, write_results  # noqa: E402

from commsolve import direct, gallery  # noqa: E402
from commsolve.launch import mpi_env  # noqa: E402
from commsolve.runs.sptrsv_analysis import analyse_sptrsv3d  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
LAYOUTS = {1: ["1x1x1"], 2: ["1x2x1", "2x1x1", "1x1x2"], 4: ["2x2x1", "1x4x1", "1x2x2", "2x1x2", "1x1x4"]}
PAPER = {  # SC'23, Cori Haswell, best Pz at each P from 128 to 2,048 (Section 4.1)
    "s2D9pt2048": {"n": 4194304, "nnz_LU": 810.6e6, "new_vs_baseline": 3.45, "new_vs_2d": 2.2},
    "nlpkkt80": {"n": 1062400, "nnz_LU": 1928e6, "new_vs_baseline": 1.87, "new_vs_2d": 1.1},
}
STAND_IN = {"poisson2d9:2048": "s2D9pt2048", "poisson3d:100": "nlpkkt80"}
VIRTUAL_P, VIRTUAL_PPN = 2048, 32  # Cori Haswell: 32 cores per node


def measured(spec, nprocs, repeat, nrhs):
    cmd = [shutil.which("mpiexec"), "-n", str(nprocs), sys.executable, "-m", "mpi4py",
           os.path.join(HERE, "sptrsv3d_mpi.py"), spec, str(repeat), str(nrhs), *LAYOUTS[nprocs]]
    proc = subprocess.run(cmd, env=mpi_env(nprocs), capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"{spec} on {nprocs} ranks failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def virtual(spec):
    t0 = time.perf_counter()
    A = gallery.from_spec(spec)
    S = direct.symbolic(A, 32)
    out = {"matrix": spec, "stands_for": STAND_IN.get(spec), "rows": int(A.shape[0]), "nnz_L": int(S.nnz_L),
           "supernodes": int(S.nsuper), "symbolic_s": time.perf_counter() - t0, "nranks": VIRTUAL_P,
           "ppn": VIRTUAL_PPN, "by_pz": []}
    del A
    for pz in (1, 2, 4, 8, 16, 32):
        grid = direct.parse_grid(None, VIRTUAL_P // pz)[:2] + (pz,)
        algorithms = ["2d"] if pz == 1 else ["3d-baseline", "3d"]
        for partition in (("nd", "greedy") if pz > 1 else ("nd",)):
            t0 = time.perf_counter()
            r = analyse_sptrsv3d(None, grid, algorithms, ppn=VIRTUAL_PPN, partition=partition, structure=S)
            r["seconds"] = time.perf_counter() - t0
            out["by_pz"].append(r)
            print(json.dumps({"matrix": spec, "grid": r["grid"], "partition": partition,
                              **{a: {"xy_max_msgs": s["xy"]["max_msgs"], "z_max_bytes": s["z"]["max_bytes"],
                                     "syncs": s["sync_points"]} for a, s in r["algorithms"].items()}}),
                  file=sys.stderr, flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--measured", default="poisson2d9:500,poisson3d:40")
    ap.add_argument("--nprocs", default="1,2,4")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--nrhs", type=int, default=1)
    ap.add_argument("--virtual", default="poisson2d9:2048,poisson3d:100")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "sptrsv3d.json"))
    args = ap.parse_args()
    triad_before = triad()
    runs = []
    for spec in filter(None, args.measured.split(",")):
        for p in (int(v) for v in args.nprocs.split(",")):
            print(f"{spec} on {p} ranks", file=sys.stderr, flush=True)
            for r in measured(spec, p, args.repeat, args.nrhs):
                r["oversubscribed"] = p > (os.cpu_count() or 1)
                runs.append(r)
                print(json.dumps({k: r[k] for k in ("matrix", "grid", "algorithm", "allreduce")}
                                 | {"total_ms": round(1e3 * r["median_s"]["total"], 2)}), file=sys.stderr, flush=True)
    triad_after = triad()
    doc = {"benchmark": "sptrsv3d", "machine": machine(),
           "stream_triad_gbs": {"before": statistics.median(triad_before) / 1e9,
                                "after": statistics.median(triad_after) / 1e9},
           "measured": runs,
           "virtual": [virtual(spec) for spec in filter(None, args.virtual.split(","))],
           "paper": PAPER}
    write_results(args.out, doc)


if __name__ == "__main__":
    main()
