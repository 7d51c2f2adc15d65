"""AMG-preconditioned CG: commsolve against hypre's BoomerAMG and PETSc's GAMG (Debian's
PETSc 3.18 through petsc4py, which links hypre 2.26) and pyamg, same matrices, same
process counts (issue 13).

Every solver runs CG to ||b - A x|| <= 1e-8 ||b|| (PETSc with the unpreconditioned norm, so
the test is the same) from x0 = 0 with b = 1, one thread per rank, with its own defaults
for the AMG (commsolve: classical — PMIS, or HMIS as hypre recommends, extended+i
interpolation truncated to 4 entries per row, HMIS with its first level coarsened aggressively
(multipass interpolation there, hypre's agg_num_levels 1) — and smoothed aggregation — MIS-2 aggregates —,
hybrid Gauss-Seidel, strategy auto; BoomerAMG through PCHYPRE with PETSc's defaults: Falgout
coarsening, modified classical interpolation, hybrid symmetric Gauss-Seidel, and with hypre's
recommended HMIS, extended+i and at most 4 entries per row of P; GAMG: smoothed aggregation, Chebyshev/Jacobi;
pyamg: Ruge-Stueben, classical interpolation, symmetric Gauss-Seidel, one rank only). Setup and solve are timed apart between barriers
(the slowest rank), ``--repeat`` times in one run, medians reported; the true residual of
each solution is reported as measured by its own library. The JSON carries the machine.

    python bench/amg_vs_hypre.py [--problems poisson2d:1000,...] [--procs 1,2] [--repeat 3]
                                 [--out bench/results/amg_vs_hypre.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(__file__))
from spmv_local import machine  # noqa: E402

from commsolve import gallery  # noqa: E402
from commsolve.launch import mpi_env  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PETSC_DIR = "/usr/lib/petscdir/petsc3.18/x86_64-linux-gnu-real"
PROBLEMS = ("poisson2d:1000", "poisson3d:100", "aniso2d:1000,eps=0.001,theta=45")


def write_petsc_binary(A, path):
    """A (scipy CSR) in PETSc's binary matrix format (big-endian: class id, sizes, row
    lengths, column indices, values)."""
    A = sp.csr_matrix(A)
    with open(path, "wb") as f:
        np.array([1211216, A.shape[0], A.shape[1], A.nnz], dtype=">i4").tofile(f)
        np.diff(A.indptr).astype(">i4").tofile(f)
        A.indices.astype(">i4").tofile(f)
        A.data.astype(">f8").tofile(f)


def run(nprocs, argv, env_extra=None, timeout=3600):
    env = dict(mpi_env(nprocs), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", **(env_extra or {}))
    proc = subprocess.run([shutil.which("mpiexec"), "-n", str(nprocs), *argv], env=env, capture_output=True,
                          text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:3])}... exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    lines = [json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{")]
    out = lines[-1]
    m = re.findall(r"[Oo]perator\s*=\s*([\d.]+)", proc.stdout)
    if m:
        out["operator_complexity"] = float(m[0])
    return out


def summary(result):
    runs = result["runs"]
    med = {k: statistics.median(r[k] for r in runs) for k in ("setup_s", "solve_s")}
    med["total_s"] = statistics.median(r["setup_s"] + r["solve_s"] for r in runs)
    out = {"peer": result["peer"], "iterations": [r["iterations"] for r in runs],
           "converged": all(r["converged"] for r in runs), "rel_residual": max(r["rel_residual"] for r in runs),
           **med, "runs": runs}
    steps = [r["setup_steps_s"] for r in runs if r.get("setup_steps_s")]
    if steps:  # commsolve: rank 0's setup seconds per step, medians over the runs
        out["setup_steps_s"] = {k: statistics.median(s[k] for s in steps) for k in steps[0]}
    for k in ("operator_complexity", "levels"):
        if k in runs[0]:
            out[k] = runs[0][k]
        elif k in result:
            out[k] = result[k]
    return out


def pyamg_run(A, repeat):
    import pyamg

    b = np.ones(A.shape[0])
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        ml = pyamg.ruge_stuben_solver(A)
        setup = time.perf_counter() - t0
        res = []
        t0 = time.perf_counter()
        x = ml.solve(b, tol=1e-8, accel="cg", residuals=res, maxiter=500)
        solve = time.perf_counter() - t0
        runs.append({"setup_s": setup, "solve_s": solve, "iterations": len(res) - 1,
                     "converged": bool(res[-1] <= 1e-8 * np.linalg.norm(b)),
                     "rel_residual": float(np.linalg.norm(b - A @ x) / np.linalg.norm(b)),
                     "operator_complexity": ml.operator_complexity(), "levels": len(ml.levels)})
    return summary({"peer": f"pyamg {pyamg.__version__} ruge_stuben", "runs": runs})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problems", default=",".join(PROBLEMS))
    ap.add_argument("--procs", default="1,2")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "amg_vs_hypre.json"))
    args = ap.parse_args()
    problems = _split_specs(args.problems)
    procs = [int(p) for p in args.procs.split(",")]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in problems:
            A = sp.csr_matrix(gallery.from_spec(spec))
            path = os.path.join(tmp, "A.petsc")
            write_petsc_binary(A, path)
            for P in procs:
                entry = {"problem": spec, "rows": A.shape[0], "nnz": int(A.nnz), "nranks": P, "solvers": {}}
                ours = {"commsolve": ["classical"], "commsolve-hmis": ["classical", "coarsening=hmis"],
                        "commsolve-hmis-agg": ["classical", "coarsening=hmis", "aggressive=1"], "commsolve-sa": ["sa"]}
                for name, how in ours.items():
                    entry["solvers"][name] = summary(run(P, [sys.executable, "-m", "mpi4py",
                                                             os.path.join(HERE, "amg_commsolve_run.py"), spec,
                                                             str(args.repeat), *how]))
                for pc in ("hypre", "hypre-hmis", "gamg"):
                    entry["solvers"][pc] = summary(run(P, ["/usr/bin/python3", os.path.join(HERE, "amg_petsc_run.py"),
                                                           path, pc, str(args.repeat)], {"PETSC_DIR": PETSC_DIR}))
                if P == 1:
                    entry["solvers"]["pyamg"] = pyamg_run(A, args.repeat)
                entry["ratios"] = {f"{mine}_over_{k}": entry["solvers"][mine]["total_s"] / v["total_s"]
                                   for mine in ours
                                   for k, v in entry["solvers"].items() if not k.startswith("commsolve")}
                results.append(entry)
                print(_line(entry), flush=True)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"benchmark": "amg_vs_hypre", "machine": machine(), "repeat": args.repeat, "results": results}, f,
                  indent=2)
    print(f"wrote {args.out}")


def _split_specs(text):
    """Problem specs separated by commas, where a spec's own options also use commas
    (aniso2d:1000,eps=0.001,theta=45): a new spec starts at a name followed by ':'."""
    parts, out = text.split(","), []
    for p in parts:
        if re.match(r"^[a-z][a-z0-9]*:", p) or not out:
            out.append(p)
        else:
            out[-1] += "," + p
    return out


def _line(e):
    cells = [f"{e['problem']} P={e['nranks']}:"]
    for k, v in e["solvers"].items():
        cells.append(f"{k} {v['iterations'][0]} it, setup {v['setup_s']:.2f} s + solve {v['solve_s']:.2f} s"
                     + (f", OC {v['operator_complexity']:.2f}" if "operator_complexity" in v else ""))
    return "\n  ".join(cells)


if __name__ == "__main__":
    main()
