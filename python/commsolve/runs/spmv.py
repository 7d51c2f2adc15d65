"""The distributed SpMV run behind ``commsolve spmv`` and ``commsolve demo``."""

from __future__ import annotations

import platform
import time

import numpy as np
import scipy.sparse as sp

from .. import _core
from .._collective import mpi
from ..gallery import parse_spec
from ..io import mmread
from ..parcsr import ParCSR
from ..stats import CommStats, format_summary, summarize

__all__ = ["run_spmv", "format_spmv", "input_vector", "machine_info", "blas_advice", "CHECK_LIMIT"]

CHECK_LIMIT = 4_000_000  # rows up to which rank 0 rebuilds A and checks against scipy


def input_vector(g):
    """Entries of the input vector at global indices ``g`` (reproducible on any rank)."""
    g = np.asarray(g, dtype=np.float64)
    return np.sin(0.37 * g) + 0.5


def run_spmv(comm, *, gen=None, matrix=None, partition="contiguous", ppn=None, strategy="standard",
             repeat=50, check=True, progress=None, profile=None):
    """Collective. Builds the matrix, runs ``repeat`` timed SpMVs, checks the result against
    scipy on rank 0 (problems up to CHECK_LIMIT rows) and the recorded CommStats against the
    plan's on every rank. Returns a result dict on rank 0, None elsewhere.

    Timing: each SpMV is bracketed by barriers; its time is the slowest rank's; the median
    over repeats is reported.
    """
    if (gen is None) == (matrix is None):
        raise ValueError("give exactly one of a generator spec (--gen) or a matrix file (--matrix)")
    MPI = mpi()
    t0 = time.perf_counter()
    if gen is not None:
        A = ParCSR.from_spec(gen, comm, partition=partition, topology=ppn, strategy=strategy, profile=profile)
    else:
        A = ParCSR.from_file(matrix, comm, partition=partition, topology=ppn, strategy=strategy, profile=profile)
    setup = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)

    x = input_vector(A.owned_cols())
    y = np.empty(A.local_rows)
    A.matvec(x, y)  # warm-up: first touch of buffers and MPI connections
    A.reset_recorded()
    times = []
    iterator = range(repeat) if progress is None else progress(range(repeat))
    for _ in iterator:
        comm.Barrier()
        t = time.perf_counter()
        A.matvec(x, y)
        times.append(time.perf_counter() - t)
    times = np.array(times)
    comm.Allreduce(MPI.IN_PLACE, times, op=MPI.MAX)

    planned = A.planned_stats()
    recorded = A.recorded_stats()
    stats_match = comm.allreduce(int(recorded == planned.scaled(repeat)), op=MPI.MIN) == 1
    all_planned = comm.gather(planned.array, root=0)
    nnz = A.global_nnz()
    spmv_bytes = comm.allreduce(A.spmv_bytes)
    nodes = A.topology.num_nodes

    error = None
    y_global = A.gather(y) if check and A.shape[0] <= CHECK_LIMIT else None
    if comm.rank == 0 and y_global is not None:
        G = parse_spec(gen).build(nprocs=comm.size) if gen is not None else mmread(matrix)
        G = sp.csr_matrix(G)
        x = input_vector(np.arange(A.shape[1]))
        ref = G @ x
        # relative to || |A| |x| ||, not ||y||: a correct product whose rows cancel has a
        # tiny y, and its rounding errors scale with |A| |x|
        error = float(np.linalg.norm(y_global - ref) / max(np.linalg.norm(abs(G) @ np.abs(x)), 1e-300))
    if comm.rank != 0:
        return None

    t_med = float(np.median(times)) if repeat else None  # JSON has no NaN
    return {
        "matrix": gen if gen is not None else str(matrix),
        "rows": int(A.shape[0]),
        "nnz": int(nnz),
        "nranks": comm.size,
        "nodes": nodes,
        "ppn": ppn,
        "partition": partition if isinstance(partition, str) else "custom",
        "strategy": strategy if A.plan.strategy == strategy else f"{strategy}->{A.plan.strategy}",
        "repeat": repeat,
        "setup_s": setup,
        "spmv_median_s": t_med,
        "spmv_min_s": float(np.min(times)) if repeat else None,
        "gflops": 2.0 * nnz / t_med / 1e9 if t_med else None,
        "bandwidth_gbs": spmv_bytes / t_med / 1e9 if t_med else None,
        "rel_error_vs_scipy": error,
        "stats_recorded_equal_planned": bool(stats_match),
        "comm": summarize([CommStats(a) for a in all_planned]),
        "machine": machine_info(),
    }


def machine_info():
    """Host, CPU, MPI library and BLAS kernels of this run, for results that travel."""
    return {"host": platform.node(), "cpu": platform.processor() or platform.machine(),
            "mpi": mpi().Get_library_version().replace("\x00", "").splitlines()[0].strip(), "blas_kernel": _core.blas_kernel()}


# OpenBLAS's kernels for CPUs without AVX2; a DYNAMIC_ARCH build falls back to them on a CPU
# it does not know (Debian's 0.3.21 on Sapphire Rapids picked Prescott).
GENERIC_BLAS = ("Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom", "Katmai", "Coppermine",
                "Northwood", "Banias", "Opteron", "Barcelona", "Bobcat", "Generic")


def blas_advice(kernel=None, cpu_flags=None):
    """A warning (or None) when OpenBLAS runs generic kernels on a CPU with AVX2 or AVX-512:
    the dense work of the factorization then runs 1.8-3.8x slower (measured,
    bench/results/factor_scaling_prescott.json). ``cpu_flags`` default: /proc/cpuinfo's."""
    kernel = _core.blas_kernel() if kernel is None else kernel
    if cpu_flags is None:
        try:
            with open("/proc/cpuinfo") as f:
                cpu_flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
        except OSError:
            cpu_flags = []
    best = "SkylakeX" if "avx512f" in cpu_flags else "Haswell" if "avx2" in cpu_flags else None
    if best is None or kernel.lower() not in {k.lower() for k in GENERIC_BLAS}:
        return None
    return (f"OpenBLAS runs its generic {kernel} kernels on a CPU with {'AVX-512' if best == 'SkylakeX' else 'AVX2'}; "
            f"OPENBLAS_CORETYPE={best} selects the right ones (dense work here runs 1.8-3.8x faster with them)")


def format_spmv(r):
    """The text report of :func:`run_spmv`'s result."""
    err = r["rel_error_vs_scipy"]
    lines = [
        f"matrix      {r['matrix']}: {r['rows']:,} rows, {r['nnz']:,} nonzeros",
        f"layout      {r['nranks']} ranks on {r['nodes']} node(s), partition {r['partition']}, "
        f"strategy {r['strategy']}",
        f"setup       {r['setup_s']:.3f} s",
        (f"SpMV        {r['spmv_median_s'] * 1e3:.3f} ms median of {r['repeat']} "
         f"(min {r['spmv_min_s'] * 1e3:.3f} ms)" if r["repeat"] else "SpMV        not timed (--repeat 0)"),
        (f"rate        {r['gflops']:.2f} GFLOP/s, effective bandwidth {r['bandwidth_gbs']:.2f} GB/s"
         if r["repeat"] else "rate        -"),
        "check       " + ("skipped (problem too large)" if err is None else
                          f"||y - scipy's|| / || |A| |x| || = {err:.2e}"),
        f"CommStats   recorded == planned: {'yes' if r['stats_recorded_equal_planned'] else 'NO'}",
        format_summary(r["comm"]),
    ]
    return "\n".join(lines)
