"""The simulator against measurement on this machine (issue 15's validation).

In one run: `commsolve calibrate` on 2 ranks writes a profile of this machine (ping-pong as
the message engine sends, send overhead, the solve's block kernel and packs timed on both
ranks at once); then, per matrix and rank count, every layout's solves are measured (median
of --repeat, slowest rank) and the same schedules (each solver's own structure, forests,
orders and distribution) simulated with that profile on rank 0, untimed; and the SpMV halo
exchange of each strategy (median of --halo-repeat, slowest rank; with 1 and 2 ranks per
virtual node) against its simulated plan. Reported per run: predicted / measured, and
whether the simulated traffic equals what every rank recorded through MPI. P = 4 runs on 2
cores (oversubscribed): reported apart, as its times measure waiting for a core, which the
simulator does not model.

    python bench/simulate_validation.py [--matrices poisson2d9:180,poisson2d9:500,poisson3d:40] [--nprocs 1,2,4]
                                        [--halo "poisson2d:400;poisson3d27:40;random:rows=20000,nnz_per_row=20"]
                                        [--repeat 10] [--halo-repeat 300]
                                        [--out bench/results/simulate_validation.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from spmv_local import machine  # noqa: E402

from commsolve.launch import mpi_env  # noqa: E402
from commsolve.model import load_profile  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
LAYOUTS = {1: ["1x1x1"], 2: ["1x2x1", "2x1x1", "1x1x2"], 4: ["2x2x1", "1x2x2", "1x1x4"]}


def run(nprocs, args, timeout=3600):
    cmd = [shutil.which("mpiexec"), "-n", str(nprocs), sys.executable, *args]
    proc = subprocess.run(cmd, env=mpi_env(nprocs), capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} on {nprocs} ranks failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--matrices", default="poisson2d9:180,poisson2d9:500,poisson3d:40")
    ap.add_argument("--nprocs", default="1,2,4")
    ap.add_argument("--halo", default="poisson2d:400;poisson3d27:40;random:rows=20000,nnz_per_row=20",
                    help="matrices of the halo exchanges, separated by semicolons")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--halo-repeat", type=int, default=300)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "simulate_validation.json"))
    args = ap.parse_args()
    tmp = tempfile.mkdtemp()
    profile = os.path.join(tmp, "this-machine.toml")
    print("calibrating", file=sys.stderr, flush=True)
    run(2, ["-m", "commsolve", "calibrate", "-np", "2", "--ppn", "2", "-o", profile])
    runs = []
    script = os.path.join(HERE, "simulate_validation_mpi.py")

    def collect(p, out):
        for line in out.splitlines():
            if line.startswith("{"):
                r = json.loads(line)
                r["oversubscribed"] = p > (os.cpu_count() or 1)
                runs.append(r)
                what = (f"{'x'.join(map(str, r['grid'])):>6} {r['algorithm']:<12}" if r["workload"] == "solve"
                        else f"ppn {r['ppn']} {r['strategy']:<16}")
                print(f"{r['matrix']:<16} P={p} {what} measured {r['measured_s'] * 1e6:10.1f} us  predicted "
                      f"{r['predicted_s'] * 1e6:10.1f} us  ratio {r['predicted_over_measured']:.2f}", file=sys.stderr,
                      flush=True)

    for spec in filter(None, args.matrices.split(",")):
        for p in (int(v) for v in args.nprocs.split(",")):
            collect(p, run(p, ["-m", "mpi4py", script, "solve", spec, str(args.repeat), profile, *LAYOUTS[p]]))
    for spec in filter(None, args.halo.split(";")):
        for p in (int(v) for v in args.nprocs.split(",") if int(v) > 1):
            for ppn in sorted({1, 2} if p == 2 else {2}):
                collect(p, run(p, ["-m", "mpi4py", script, "halo", spec, str(args.halo_repeat), profile, str(ppn)]))

    def summary(rs):
        ratios = [r["predicted_over_measured"] for r in rs]
        if not ratios:
            return None
        return {"runs": len(ratios), "median_ratio": statistics.median(ratios), "min_ratio": min(ratios),
                "max_ratio": max(ratios), "within_1.5x": sum(1 / 1.5 <= v <= 1.5 for v in ratios)}

    doc = {"benchmark": "simulate_validation", "machine": machine(), "profile": load_profile(profile).to_toml(),
           "runs": runs,
           "summary": {f"{w}, {part}": summary([r for r in runs if r["workload"] == w and r["oversubscribed"] == over])
                       for w in ("solve", "halo") for part, over in (("P<=cores", False), ("oversubscribed", True))},
           "traffic_equal_everywhere": all(r["simulated_traffic_equals_recorded"] for r in runs)}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=2)
    print(json.dumps(doc["summary"], indent=1), file=sys.stderr)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
