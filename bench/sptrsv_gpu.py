"""The sync-free triangular solve on a GPU against cuSPARSE and against the CPU solve on the
machine's cores (SC'23 Algorithm 4; issue: the sync-free solve on threads and GPU).

For each problem the matrix is factored once on one rank (commsolve's supernodal LU; the
serial factorization with the same options gives the same factors, exported as CSR L with
its unit diagonal and U for cuSPARSE). For nrhs in --nrhs, medians of --repeat solves:

- ``gpu``: commsolve's kernel (DistributedLU.to_device("cuda")): the L and U phases' host
  wall time, minus the copies of the solve vector to the device and back (reported apart as
  ``device_copy_s``); the kernel reads the factors from device memory, uploaded once.
- ``cusparse``: cuSPARSE's SpSV (nrhs 1) or SpSM (nrhs columns at once), default
  algorithms, on the same L and U through CuPy's bindings, the analysis of each factor done once beforehand
  and timed apart; b and x on the device; the L and U solves' host wall time, synchronised.
  Also CuPy's public ``spsolve_triangular`` (its analysis repeated in every call), as a
  user of CuPy meets it.
- ``cpu_threads``: the sync-free solve on T threads of one rank (T = --threads, default the
  machine's cores) and ``cpu_1``: the message-driven solve on one thread, same factors.
- ``cpu_ranks``: ``commsolve sptrsv`` on R ranks (--ranks, default the cores), grid
  1 x 1 x R, algorithm 3d, one thread each: L + inter-grid + U of the slowest rank (its own
  factorization, on the grids).

Each x is checked: ours against the one-thread solve (1e-12), cuSPARSE's against the serial
factors' own solve. The effective bandwidth of a solve is 8 nnz(L+U) bytes over its time,
against a device-to-device copy measured in the same run (bytes read + written).

    python bench/sptrsv_gpu.py [--problems poisson2d9:1024,poisson3d:40] [--nrhs 1,50]
        [--repeat 5] [--threads N] [--ranks N] [--out bench/results/sptrsv_gpu.json]

Without a GPU (or a build without CUDA) the GPU parts are recorded as skipped, with why.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from spmv_local import machine, write_results  # noqa: E402

from mpi4py import MPI  # noqa: E402

from commsolve import direct, gallery  # noqa: E402
from commsolve.launch import mpi_env  # noqa: E402


def gpu_state():
    """(cupy module or None, why not)."""
    if not direct.device_available("cuda"):
        return None, "no CUDA build of commsolve or no GPU (direct.device_available('cuda') is False)"
    try:
        import cupy
    except ImportError as e:
        return None, f"CuPy not importable: {e}"
    return cupy, None


def copy_bandwidth(cupy, nbytes=1 << 30, repeat=5):
    """Device-to-device copy, bytes read + written per second (median)."""
    a = cupy.ones(nbytes // 8)
    b = cupy.empty_like(a)
    times = []
    for _ in range(repeat + 1):
        cupy.cuda.Device().synchronize()
        t0 = time.perf_counter()
        b[...] = a
        cupy.cuda.Device().synchronize()
        times.append(time.perf_counter() - t0)
    return 2 * nbytes / statistics.median(times[1:])


def core_times(core, B, repeat):
    """Median of ``repeat`` solves (after one warm-up) of the C++ solver on B: the phases
    (L + inter-grid + U), the device copies within them, and x."""
    X = np.empty_like(B)
    core.solve(B, X)
    rows = [core.solve(B, X) for _ in range(repeat)]
    med = lambda key: statistics.median(r[key] for r in rows)  # noqa: E731
    phases = statistics.median(r["l_solve"] + r["z_comm"] + r["u_solve"] for r in rows)
    kernel = statistics.median(r["l_solve"] + r["u_solve"] - r["device_copy"] for r in rows)  # run by run
    return {"phases_s": phases, "kernel_s": kernel, "l_solve_s": med("l_solve"), "u_solve_s": med("u_solve"),
            "device_copy_s": med("device_copy"), "total_s": med("total")}, X


class CusparseTriangular:
    """L or U as a cuSPARSE triangular problem with its analysis done once (CuPy's low-level
    bindings): SpSV on one right-hand side (``vector=True``, where CuPy binds SpSV; else SpSM
    on one column), otherwise SpSM on nrhs columns. ``b`` and ``x`` are its device arrays
    (F-ordered n x nrhs); solve() fills x from b (x zeroed first, as SpSM wants)."""

    def __init__(self, cupy, csr, lower, unit, nrhs, vector):
        from cupy._core import _dtype
        from cupy.cuda import device as cuda_device
        from cupy_backends.cuda.libs import cusparse as cs
        from cupyx import cusparse

        n = csr.shape[0]
        vector = vector and hasattr(cs, "spSV_createDescr")
        self.cupy, self.cs, self.vector = cupy, cs, vector
        self.api = "SpSV" if vector else "SpSM"
        self.b = cupy.zeros((n, nrhs), order="F")
        self.x = cupy.zeros((n, nrhs), order="F")
        mat = cusparse.SpMatDescriptor.create(csr)
        fill = cs.CUSPARSE_FILL_MODE_LOWER if lower else cs.CUSPARSE_FILL_MODE_UPPER
        diag = cs.CUSPARSE_DIAG_TYPE_UNIT if unit else cs.CUSPARSE_DIAG_TYPE_NON_UNIT
        mat.set_attribute(cs.CUSPARSE_SPMAT_FILL_MODE, fill)
        mat.set_attribute(cs.CUSPARSE_SPMAT_DIAG_TYPE, diag)
        self.alpha = np.array(1.0).ctypes
        op = cs.CUSPARSE_OPERATION_NON_TRANSPOSE
        dtype = _dtype.to_cuda_dtype(np.dtype(np.float64))
        handle = cuda_device.get_cusparse_handle()
        if vector:
            dense = [cusparse.DnVecDescriptor.create(v.reshape(-1)) for v in (self.b, self.x)]
            self.descr = cs.spSV_createDescr()
            self.args = (handle, op, self.alpha.data, mat.desc, dense[0].desc, dense[1].desc, dtype,
                         cs.CUSPARSE_SPSV_ALG_DEFAULT, self.descr)
            size, analysis, self._solve = cs.spSV_bufferSize, cs.spSV_analysis, cs.spSV_solve
        else:
            dense = [cusparse.DnMatDescriptor.create(v) for v in (self.b, self.x)]
            self.descr = cs.spSM_createDescr()
            self.args = (handle, op, op, self.alpha.data, mat.desc, dense[0].desc, dense[1].desc, dtype,
                         cs.CUSPARSE_SPSM_ALG_DEFAULT, self.descr)
            size, analysis, self._solve = cs.spSM_bufferSize, cs.spSM_analysis, cs.spSM_solve
        self._keep = (mat, dense)  # descriptors live as long as the problem
        self.buf = cupy.empty(max(size(*self.args), 1), dtype=cupy.int8)
        cupy.cuda.Device().synchronize()
        t0 = time.perf_counter()
        analysis(*self.args, self.buf.data.ptr)
        cupy.cuda.Device().synchronize()
        self.analysis_s = time.perf_counter() - t0

    def solve(self):
        if self.vector:
            try:  # CUDA 12+: SpSV's solve takes no buffer; older bindings pass it
                self._solve(*self.args)
            except TypeError:
                self._solve(*self.args, self.buf.data.ptr)
        else:
            self._solve(*self.args, self.buf.data.ptr)


def cusparse_run(cupy, lu, B_factor, X_ref, repeat):
    """cuSPARSE on L and U of ``lu`` (a SparseLU): B_factor is b in the factor's order, X_ref
    the factors' own solve of it."""
    import cupyx.scipy.sparse as csp
    import cupyx.scipy.sparse.linalg as csl

    n, nrhs = B_factor.shape
    out = {}
    mats = []
    for upper in (False, True):
        indptr, indices, data = lu._core.triangular_factor(upper)
        mats.append(csp.csr_matrix((cupy.asarray(data), cupy.asarray(indices.astype(np.int32)),
                                    cupy.asarray(indptr.astype(np.int32))), shape=(n, n)))
    out["nnz_L_plus_U"] = int(mats[0].nnz + mats[1].nnz - n)
    Ls = CusparseTriangular(cupy, mats[0], True, True, nrhs, nrhs == 1)
    Us = CusparseTriangular(cupy, mats[1], False, False, nrhs, nrhs == 1)
    out["api"] = Ls.api
    out["analysis_s"] = Ls.analysis_s + Us.analysis_s
    Ls.b[...] = cupy.asarray(B_factor)
    times = []
    for _ in range(repeat + 1):
        Ls.x.fill(0)
        Us.x.fill(0)
        cupy.cuda.Device().synchronize()
        t0 = time.perf_counter()
        Ls.solve()
        Us.b[...] = Ls.x  # y as U's right-hand side (a device copy, counted)
        Us.solve()
        cupy.cuda.Device().synchronize()
        times.append(time.perf_counter() - t0)
    out["solve_s"] = statistics.median(times[1:])
    X = cupy.asnumpy(Us.x)
    out["max_rel_diff_vs_factors"] = float(np.abs(X - X_ref).max() / np.abs(X_ref).max())
    # As a CuPy user meets it: the analysis inside every call.
    b = cupy.asarray(B_factor)
    times = []
    for _ in range(max(2, repeat // 2) + 1):
        cupy.cuda.Device().synchronize()
        t0 = time.perf_counter()
        y = csl.spsolve_triangular(mats[0], b, lower=True, unit_diagonal=True)
        csl.spsolve_triangular(mats[1], y, lower=False)
        cupy.cuda.Device().synchronize()
        times.append(time.perf_counter() - t0)
    out["cupy_spsolve_triangular_s"] = statistics.median(times[1:])
    return out


def ranks_run(spec, ranks, nrhs, repeat):
    """commsolve sptrsv on grid 1x1xR, one thread per rank: the slowest rank's phases."""
    cmd = [sys.executable, "-m", "commsolve", "sptrsv", "--gen", spec, "-np", str(ranks), "--grid", f"1x1x{ranks}",
           "--threads", "1", "--nrhs", str(nrhs), "--repeat", str(repeat), "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800,
                       env=dict(mpi_env(ranks), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1"))
    if p.returncode != 0:
        return {"error": p.stderr[-2000:]}
    r = json.loads(p.stdout[p.stdout.index("{"):])
    return {"phases_s": r["l_solve_s"] + r["z_comm_s"] + r["u_solve_s"], "total_s": r["solve_s"],
            "backward_error": r["backward_error"], "ranks": ranks}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", default="poisson2d9:1024,poisson3d:40")
    ap.add_argument("--nrhs", default="1,50")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--ranks", type=int, default=os.cpu_count())
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "sptrsv_gpu.json"))
    args = ap.parse_args()
    cupy, why = gpu_state()
    gpu_name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode() if cupy else None
    copy_bw = copy_bandwidth(cupy) if cupy else None
    results = []
    for spec in args.problems.split(","):
        A = gallery.from_spec(spec)
        print(f"{spec}: factoring", file=sys.stderr, flush=True)
        solver = direct.factor(A, MPI.COMM_SELF, grid=(1, 1, 1), threads=1)
        lu = direct.SparseLU(A) if cupy else None  # the same factors, serial, for cuSPARSE's CSR
        core, n = solver._core, A.shape[0]
        nnz_lu = int(solver.nnz_LU)
        for nrhs in (int(v) for v in args.nrhs.split(",")):
            B = np.ascontiguousarray(np.random.default_rng(1).standard_normal((n, nrhs)))
            rec = {"matrix": spec, "rows": n, "nnz_LU": nnz_lu, "nrhs": nrhs}
            core.to_device("cpu")
            core.set_threads(1)
            rec["cpu_1"], X1 = core_times(core, B, args.repeat)
            core.set_threads(args.threads)
            rec["cpu_threads"], XT = core_times(core, B, args.repeat)
            rec["cpu_threads"]["threads"] = args.threads
            rec["cpu_threads"]["max_rel_diff_vs_1"] = float(np.abs(XT - X1).max() / np.abs(X1).max())
            core.set_threads(1)
            if cupy:
                core.to_device("cuda")
                rec["gpu"], XG = core_times(core, B, args.repeat)
                rec["gpu"]["max_rel_diff_vs_1"] = float(np.abs(XG - X1).max() / np.abs(X1).max())
                core.to_device("cpu")
                Bf = np.asfortranarray(np.random.default_rng(2).standard_normal((n, nrhs)))
                Xf = Bf.copy(order="F")
                lu._core.solve(Xf)
                rec["cusparse"] = cusparse_run(cupy, lu, Bf, Xf, args.repeat)
                assert rec["cusparse"]["nnz_L_plus_U"] == nnz_lu, "cuSPARSE was given other factors than ours"
                rec["gpu_vs_cusparse"] = rec["cusparse"]["solve_s"] / rec["gpu"]["kernel_s"]
                rec["gpu_bandwidth_of_copy"] = 8 * nnz_lu / rec["gpu"]["kernel_s"] / copy_bw
                rec["cusparse_bandwidth_of_copy"] = 8 * nnz_lu / rec["cusparse"]["solve_s"] / copy_bw
            else:
                rec["gpu"] = rec["cusparse"] = {"skipped": why}
            print(f"{spec} nrhs {nrhs}: ranks", file=sys.stderr, flush=True)
            rec["cpu_ranks"] = ranks_run(spec, args.ranks, nrhs, args.repeat)
            for key in ("cpu_1", "cpu_threads", "cpu_ranks", "gpu", "cusparse"):
                t = rec[key].get("kernel_s", rec[key].get("solve_s", rec[key].get("phases_s")))
                if t:
                    rec[key]["gbs"] = 8 * nnz_lu / t / 1e9
            results.append(rec)
            write_results(args.out, document(gpu_name, why, copy_bw, results))  # each record: a cut run keeps them
            print(json.dumps({k: rec[k] for k in ("matrix", "nrhs")} | {
                k: rec[k].get("kernel_s", rec[k].get("solve_s", rec[k].get("phases_s")))
                for k in ("cpu_1", "cpu_threads", "cpu_ranks", "gpu", "cusparse")}), flush=True)
    write_results(args.out, document(gpu_name, why, copy_bw, results))


def document(gpu_name, why, copy_bw, results):
    return {"benchmark": "sptrsv_gpu", "machine": machine(), "gpu": gpu_name, "gpu_skipped": why,
            "device_copy_gbs": copy_bw / 1e9 if copy_bw else None, "results": results}


if __name__ == "__main__":
    main()
