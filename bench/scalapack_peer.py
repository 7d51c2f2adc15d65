"""ScaLAPACK 2.2.1 (Debian's libscalapack-openmpi-dev) as the peer of commsolve's 2.5D dense
multiply and LU: its pdgemm and pdgetrf on block-cyclic N x N matrices, through
bench/scalapack_dense.c (built with mpicc into ~/.cache/commsolve/peers, never into the
project), one thread per rank.

    from scalapack_peer import build, run
    build()                                   # once; rebuilt when the source is newer
    rec = run("gemm", 1000, 64, 1, 2)         # {"op", "n", "nb", "grid", "times", "median", "gflops"}

The ranks form a PR x PC grid in row-major order (rank r at (r // PC, r % PC)), as on
commsolve's layer 0; each run's time is the slowest rank's, between barriers; see the
driver's header for the matrices and the checks it makes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "scalapack_dense.c")
PEER = os.path.expanduser("~/.cache/commsolve/peers/scalapack_dense")
# ScaLAPACK's library and the BLAS/LAPACK it was built against (Debian's alternatives:
# OpenBLAS here), and gfortran's runtime for its Fortran parts.
LIBS = ["-lscalapack-openmpi", "-llapack", "-lblas", "-lgfortran", "-lm"]
INSTALL_HINT = ("install Debian's libscalapack-openmpi-dev (with libopenmpi-dev and "
                "libopenblas-dev): bash scripts/install-deps --peers")


def build(force=False):
    """The driver's path, compiled once with ``mpicc -O2 -std=c99`` into the cache; rebuilt
    when ``force`` or when the source is newer than the binary. A RuntimeError (with the
    compiler's output and which package to install) if it cannot be built."""
    if not force and os.path.exists(PEER) and os.path.getmtime(PEER) >= os.path.getmtime(SOURCE):
        return PEER
    mpicc = shutil.which("mpicc")
    if mpicc is None:
        raise RuntimeError(f"cannot build the ScaLAPACK peer: no mpicc on PATH; {INSTALL_HINT}")
    os.makedirs(os.path.dirname(PEER), exist_ok=True)
    # Built beside the target and renamed into place, so a failed or concurrent build never
    # leaves a half-written binary under PEER.
    fd, tmp = tempfile.mkstemp(prefix=".scalapack_dense.", dir=os.path.dirname(PEER))
    os.close(fd)
    try:
        proc = subprocess.run([mpicc, "-O2", "-std=c99", "-o", tmp, SOURCE, *LIBS],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"cannot build the ScaLAPACK peer ({os.path.basename(SOURCE)}): "
                               f"{INSTALL_HINT}\n{proc.stderr[-3000:]}")
        os.chmod(tmp, 0o755)  # mkstemp made it private
        os.replace(tmp, PEER)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return PEER


def run(op, n, nb, pr, pc, repeat=3, oversubscribe=False, timeout=600):
    """``repeat`` runs of ScaLAPACK's ``op`` ("gemm": C = A B; "getrf": A = P L U, A
    diagonally dominant; "getrf-random": the same, A random) on N x N
    matrices in nb x nb blocks on a pr x pc grid, under ``mpiexec -n pr*pc`` with one thread
    per rank (``--oversubscribe`` when asked, for more ranks than cores): the driver's JSON
    record, {"op", "n", "nb", "grid": [pr, pc], "times": [seconds per run], "median",
    "gflops"} (flops 2 n^3 for gemm, 2 n^3 / 3 for getrf, over the median). A RuntimeError
    with the driver's stderr if it fails or runs past ``timeout`` seconds."""
    if op not in ("gemm", "getrf", "getrf-random"):
        raise ValueError(f"op must be 'gemm', 'getrf' or 'getrf-random', not {op!r}")
    for name, value in (("n", n), ("nb", nb), ("pr", pr), ("pc", pc), ("repeat", repeat)):
        if isinstance(value, bool) or not hasattr(value, "__index__") or value < 1:
            raise ValueError(f"{name} must be a positive integer, not {value!r}")
    n, nb, pr, pc, repeat = (int(v) for v in (n, nb, pr, pc, repeat))
    peer = build()
    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        raise RuntimeError("no mpiexec on PATH: install Open MPI (bash scripts/install-deps)")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    cmd = [mpiexec, "-n", str(pr * pc), "--bind-to", "none", *(["--oversubscribe"] if oversubscribe else []),
           peer, op, str(n), str(nb), str(pr), str(pc), str(repeat)]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        raise RuntimeError(f"scalapack_dense {op} n={n} nb={nb} grid={pr}x{pc} ran past {timeout} s:\n"
                           f"{err[-3000:]}") from None
    if proc.returncode != 0:
        raise RuntimeError(f"scalapack_dense {op} n={n} nb={nb} grid={pr}x{pc} exited {proc.returncode}:\n"
                           f"{proc.stderr[-3000:]}")
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"scalapack_dense {op} printed no JSON:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return json.loads(lines[-1])
