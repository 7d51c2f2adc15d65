"""The simulator against measurement on this machine (issue 15's validation).

In one run: `commsolve calibrate` on 2 ranks writes a profile of this machine (ping-pong,
send overhead, the solve's block kernel timed on both ranks at once); then, per matrix and
rank count, every layout's solves are measured (median of --repeat, slowest rank) and the
same schedules (each solver's own structure, forests, orders and distribution) simulated
with that profile on rank 0, untimed. Reported per run: predicted / measured, and whether
the simulated traffic equals what every rank recorded through MPI. P = 4 runs on 2 cores
(oversubscribed): reported apart, as its times measure waiting for a core, which the
simulator does not model.

    python bench/simulate_validation.py [--matrices poisson2d9:500,poisson3d:40] [--nprocs 1,2,4]
                                        [--repeat 10] [--out bench/results/simulate_validation.json]
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
    ap.add_argument("--matrices", default="poisson2d9:500,poisson3d:40")
    ap.add_argument("--nprocs", default="1,2,4")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "simulate_validation.json"))
    args = ap.parse_args()
    tmp = tempfile.mkdtemp()
    profile = os.path.join(tmp, "this-machine.toml")
    print("calibrating", file=sys.stderr, flush=True)
    run(2, ["-m", "commsolve", "calibrate", "-np", "2", "--ppn", "2", "-o", profile])
    runs = []
    for spec in filter(None, args.matrices.split(",")):
        for p in (int(v) for v in args.nprocs.split(",")):
            out = run(p, ["-m", "mpi4py", os.path.join(HERE, "simulate_validation_mpi.py"), spec, str(args.repeat),
                          profile, *LAYOUTS[p]])
            for line in out.splitlines():
                if line.startswith("{"):
                    r = json.loads(line)
                    r["oversubscribed"] = p > (os.cpu_count() or 1)
                    runs.append(r)
                    print(f"{spec:<16} P={p} {'x'.join(map(str, r['grid'])):>6} {r['algorithm']:<12} measured "
                          f"{r['measured_s'] * 1e3:8.2f} ms  predicted {r['predicted_s'] * 1e3:8.2f} ms  "
                          f"ratio {r['predicted_over_measured']:.2f}", file=sys.stderr, flush=True)

    def summary(rs):
        ratios = [r["predicted_over_measured"] for r in rs]
        if not ratios:
            return None
        return {"runs": len(ratios), "median_ratio": statistics.median(ratios), "min_ratio": min(ratios),
                "max_ratio": max(ratios), "within_1.5x": sum(1 / 1.5 <= v <= 1.5 for v in ratios)}

    doc = {"benchmark": "simulate_validation", "machine": machine(), "profile": load_profile(profile).to_toml(),
           "runs": runs, "summary": {"P<=cores": summary([r for r in runs if not r["oversubscribed"]]),
                                     "oversubscribed": summary([r for r in runs if r["oversubscribed"]])},
           "traffic_equal_everywhere": all(r["simulated_traffic_equals_recorded"] for r in runs)}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=2)
    print(json.dumps(doc["summary"], indent=1), file=sys.stderr)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
