"""The sync-free solve on a GPU (DistributedLU.to_device("cuda"), direct/syncfree_cuda.cu).

Where nvcc is present, the CUDA sources compile through the project's CMake option
(COMMSOLVE_CUDA=ON) here and in CI. The tests that run the kernel need a build with CUDA and
a GPU, and skip, saying so, without them: on a GPU machine, under mpiexec -n 1 and 2 (grids
1x1x1 and 1x1x2; tests/mpi/syncfree_cases.py with "cuda"), x equals the one-thread CPU solve
of the same factors to 1e-12 for three gallery families, nrhs 1, 3 and 50, with scipy's
backward error at rounding level; CuPy arrays in, CuPy arrays out. Without a GPU: the errors
say what is missing."""

import os
import shutil
import subprocess

import numpy as np
import pytest
from mpi4py import MPI

import commsolve as cs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAVE_GPU = cs.direct.device_available("cuda")
needs_gpu = pytest.mark.skipif(not HAVE_GPU, reason="no CUDA build or no GPU here: the GPU solve was not run "
                                                    "(run on a GPU machine: scripts/gpu-run)")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not found: the CUDA sources were not compiled")
def test_cuda_sources_compile_through_cmake(tmp_path):
    cfg = subprocess.run(["cmake", "-S", ROOT, "-B", str(tmp_path), "-G", "Ninja", "-DCOMMSOLVE_CUDA=ON",
                          f"-DPython_EXECUTABLE={shutil.which('python3')}"],
                         capture_output=True, text=True, timeout=300)
    assert cfg.returncode == 0, cfg.stdout[-3000:] + cfg.stderr[-3000:]
    objects = [f"CMakeFiles/commsolve_core.dir/src/commsolve/direct/{f}.o"
               for f in ("syncfree_cuda.cu", "device_solve.cpp")]
    build = subprocess.run(["ninja", "-C", str(tmp_path), *objects], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stdout[-5000:]
    assert all((tmp_path / o).stat().st_size > 0 for o in objects)


@pytest.mark.skipif(HAVE_GPU, reason="a GPU is present")
def test_without_a_gpu_the_error_says_what_is_missing():
    solver = cs.direct.factor(cs.gallery.poisson2d(8), MPI.COMM_SELF)
    missing = "device 'cuda': (this build of commsolve has no CUDA backend|no CUDA device)"
    with pytest.raises(cs.CollectiveError, match=missing):  # on every rank, not on the one that lacks it alone
        solver.to_device("cuda")
    assert solver.device == "cpu" and np.isfinite(solver.solve(np.ones(64))).all()
    with pytest.raises(ValueError, match="unknown device 'tpu' \\(known: cuda\\)"):
        solver.to_device("tpu")


@needs_gpu
@pytest.mark.parametrize("k", (1, 2))
def test_gpu_solve_equals_the_cpu_solve(mpi_cache, k):
    rows = mpi_cache("syncfree_cases.py", k, "cuda")
    assert len(rows) == 3 * 3 * (1 if k == 1 else 3)  # families x nrhs x algorithms
    for r in rows:
        where = f"np{k} {r['family']} {r['algorithm']} nrhs={r['nrhs']}"
        assert r["used"] == "cuda", where
        assert r["diff"] <= 1e-12, where
        assert r["berr"] <= 1e-14, where
        assert r["stats_ok"], where


@needs_gpu
def test_gpu_grid_rule_and_cupy_arrays():
    A = cs.gallery.poisson2d9(40)
    solver = cs.direct.factor(A, MPI.COMM_SELF).to_device("cuda")
    assert solver.device == "cuda"
    b = np.sin(np.arange(A.shape[0]))
    x = solver.solve(b)
    assert np.abs(A @ x - b).max() <= 1e-12 * np.abs(b).max() * 100
    cupy = pytest.importorskip("cupy", reason="CuPy not installed: device arrays were not tried")
    xd = solver.solve(cupy.asarray(b))
    assert isinstance(xd, cupy.ndarray) and np.abs(cupy.asnumpy(xd) - x).max() <= 1e-12 * np.abs(x).max()
