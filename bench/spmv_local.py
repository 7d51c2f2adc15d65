"""Local SpMV against the physical limit (STREAM triad) and against scipy, per storage format.

For each gallery problem: commsolve's CSR kernel (y reused), its SELL-C-sigma kernels (sliced
ELL: SELL-8-1; SELL-8-256; ELL: one chunk of all rows) and DIA (where the matrix is banded
enough: stencils), scipy ``A @ x`` (allocates y), and
scipy's raw csr_matvec with a reused y, timed interleaved in the same process; the STREAM
triad is measured in the same run before and after. Effective bandwidth uses CSR's byte
model 12*nnz + 4*(rows+1) + 8*cols + 8*rows for every format (padding then shows as a lower
figure); each format's own byte count (stored entries, padding included) is reported too, and
the fastest format per matrix (the choice a user makes per matrix). Reports medians.

    python bench/spmv_local.py [--quick] [--out bench/results/spmv_local.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np
import scipy
from scipy.sparse import _sparsetools

import commsolve
from commsolve import _core, gallery

PROBLEMS = ["poisson2d:2000", "poisson3d:160", "poisson3d27:100", "aniso2d:2000,eps=0.001,theta=30",
            "random:rows=2000000,nnz_per_row=10"]
QUICK = ["poisson2d:1000", "poisson3d27:50"]


def machine():
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(mem, 1), "os": platform.platform(),
            "python": platform.python_version(), "numpy": np.__version__, "scipy": scipy.__version__,
            "commsolve": commsolve.__version__}


def write_results(path, doc):
    """The benchmark's results as JSON at ``path`` (its folder made if missing)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)
    print(f"wrote {path}", file=sys.stderr)


def mpi_job(nprocs, argv, timeout=3600):
    """Runs ``argv`` under ``mpiexec -n nprocs`` with one thread per rank; its stdout (a
    RuntimeError with the end of stderr if it fails)."""
    import shutil
    import subprocess

    from commsolve.launch import mpi_env

    env = dict(mpi_env(nprocs), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    proc = subprocess.run([shutil.which("mpiexec"), "-n", str(nprocs), *argv], env=env, capture_output=True,
                          text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:3])}... exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return proc.stdout


def triad(reps=10):
    return list(_core.stream_triad_bandwidth(40_000_000, reps))


def read_stream(reps=10):
    return list(_core.stream_read_bandwidth(40_000_000, reps))


def bench_problem(spec, reps):
    A = gallery.from_spec(spec)
    n, m = A.shape
    x = np.random.default_rng(0).standard_normal(m)
    y = np.empty(n)
    y_raw = np.empty(n)
    nbytes = 12.0 * A.nnz + 4.0 * (n + 1) + 8.0 * m + 8.0 * n
    formats = {"sell_8_1": (8, 1), "sell_8_256": (8, 256), "ell": (n, 1)}
    sells = {k: _core.SellMatrix(A.indptr, A.indices, A.data, m, C, sigma) for k, (C, sigma) in formats.items()}
    refused = {}
    try:  # DIA: stencils and banded matrices only
        sells["dia"] = _core.DiaMatrix(A.indptr.astype(np.int32), A.indices.astype(np.int32), A.data, m)
    except ValueError as e:
        refused["dia"] = str(e)
    ys = {k: np.empty(n) for k in sells}
    runs = {
        "commsolve": lambda: _core.spmv(A.indptr, A.indices, A.data, x, y),
        **{k: (lambda S=S, v=ys[k]: S.spmv(x, v)) for k, S in sells.items()},
        "scipy_matmul": lambda: A @ x,
        "scipy_raw": lambda: (y_raw.fill(0.0), _sparsetools.csr_matvec(n, m, A.indptr, A.indices, A.data, x, y_raw)),
    }
    times = {k: [] for k in runs}
    for fn in runs.values():
        fn()  # warm-up
    for _ in range(reps):
        for k, fn in runs.items():
            t = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t)
    ref = A @ x
    err = float(np.linalg.norm(y - ref) / np.linalg.norm(ref))
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "matrix": spec, "rows": n, "nnz": int(A.nnz), "bytes": nbytes, "rel_error": err,
        "formats": {k: {**({"ndiag": S.ndiag} if k == "dia" else {"C": S.C, "sigma": S.sigma}),
                        "stored": S.stored, "padding": S.stored / max(A.nnz, 1) - 1, "own_bytes": S.spmv_bytes,
                        "rel_error": float(np.linalg.norm(ys[k] - ref) / np.linalg.norm(ref)),
                        "speedup_vs_csr": med["commsolve"] / med[k]} for k, S in sells.items()},
        "refused": refused,
        "median_s": med,
        "bandwidth_gbs": {k: nbytes / t / 1e9 for k, t in med.items()},
        "speedup_vs_scipy_matmul": med["scipy_matmul"] / med["commsolve"],
        "speedup_vs_scipy_raw": med["scipy_raw"] / med["commsolve"],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small problems, few repeats")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "spmv_local.json"))
    args = ap.parse_args()
    reps = args.reps or (10 if args.quick else 30)
    before, read_before = triad(), read_stream()
    results = []
    for spec in QUICK if args.quick else PROBLEMS:
        r = bench_problem(spec, reps)
        results.append(r)
        print(f"{spec:<36} {r['bandwidth_gbs']['commsolve']:6.2f} GB/s  "
              f"x{r['speedup_vs_scipy_matmul']:.2f} vs A@x  x{r['speedup_vs_scipy_raw']:.2f} vs raw", file=sys.stderr)
    after, read_after = triad(), read_stream()
    triad_gbs = statistics.median(before + after) / 1e9
    read_gbs = statistics.median(read_before + read_after) / 1e9
    for r in results:
        r["fraction_of_triad"] = r["bandwidth_gbs"]["commsolve"] / triad_gbs
        r["fraction_of_read_stream"] = r["bandwidth_gbs"]["commsolve"] / read_gbs
        for k, f in r["formats"].items():
            f["fraction_of_triad"] = r["bandwidth_gbs"][k] / triad_gbs
        best = max(["commsolve", *r["formats"]], key=lambda k: r["bandwidth_gbs"][k])  # selected per matrix
        r["best"] = {"format": "csr" if best == "commsolve" else best,
                     "fraction_of_triad": r["bandwidth_gbs"][best] / triad_gbs,
                     "speedup_vs_csr": r["median_s"]["commsolve"] / r["median_s"][best]}
    out = {"benchmark": "spmv_local", "date": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": machine(),
           "repeats": reps, "triad_gbs_median": triad_gbs, "triad_gbs_best": max(before + after) / 1e9,
           "triad_gbs_before_after": [statistics.median(before) / 1e9, statistics.median(after) / 1e9],
           "read_stream_gbs_median": read_gbs,
           "read_stream_gbs_before_after": [statistics.median(read_before) / 1e9, statistics.median(read_after) / 1e9],
           "results": results}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=2)
    print(f"triad (median) {triad_gbs:.2f} GB/s, read-only stream (median) {read_gbs:.2f} GB/s")
    print(f"{'matrix':<36}{'GB/s':>7}{'of triad':>10}{'of read':>9}{'vs A@x':>8}{'vs raw':>8}")
    for r in results:
        print(f"{r['matrix']:<36}{r['bandwidth_gbs']['commsolve']:>7.2f}{r['fraction_of_triad']:>10.2f}"
              f"{r['fraction_of_read_stream']:>9.2f}{r['speedup_vs_scipy_matmul']:>8.2f}{r['speedup_vs_scipy_raw']:>8.2f}")
    names = ["sell_8_1", "sell_8_256", "ell", "dia"]
    print(f"{'matrix':<36}" + "".join(f"{k:>12}" for k in names) + "   (fraction of triad; CSR's bytes)   best")
    for r in results:
        cells = "".join(f"{r['formats'][k]['fraction_of_triad']:>12.2f}" if k in r["formats"] else f"{'-':>12}"
                        for k in names)
        b = r["best"]
        print(f"{r['matrix']:<36}{cells}   {b['format']} {b['fraction_of_triad']:.2f} (x{b['speedup_vs_csr']:.2f})")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
