"""Running SuperLU_DIST's example drivers (8.1.2: Debian's libsuperlu-dist-dev; 9.2.1, which
has the SC'23 3D solve, built from ../shared/peers into a cache folder by :func:`superlu9`) and
commsolve's CLI side by side: one thread per rank, each run's printed phase times parsed, and the peak
resident memory of the largest process of the run (from ``wait4``: the launcher and every
rank it reaped)."""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import tempfile
import threading

from commsolve.launch import mpi_env

EXAMPLES = "/usr/lib/x86_64-linux-gnu/superlu-dist/tests/EXAMPLE"
PDDRIVE, PDDRIVE3D = f"{EXAMPLES}/pddrive", f"{EXAMPLES}/pddrive3d"
FIELDS = {"factor_s": r"FACTOR time\s+([\d.]+)", "solve_s": r"SOLVE time\s+([\d.]+)",
          "colperm_s": r"COLPERM time\s+([\d.]+)", "symbfact_s": r"SYMBFACT time\s+([\d.]+)",
          "distribute_s": r"DISTRIBUTE time\s+([\d.]+)",
          "nnz_LU": r"nonzeros in L\+U\s+(\d+)", "error": r"\|\|X ?- ?Xtrue\|\| ?/ ?\|\|X\|\| = ([\d.eE+-]+)",
          "equil_s": r"EQUIL time\s+([\d.]+)", "rowperm_s": r"ROWPERM time\s+([\d.]+)"}
# Printed by some versions only: 9.2.1 prints no nnz(L+U) (None then); 8.1.2 no EQUIL/ROWPERM (0 then).
OPTIONAL = {"nnz_LU": None, "equil_s": 0.0, "rowperm_s": 0.0}
# What each code spends before its first solve (ordering, symbolic, distribution, numeric).
SETUP = ("equil_s", "rowperm_s", "colperm_s", "symbfact_s", "distribute_s", "factor_s")


def superlu9():
    """The folder of SuperLU_DIST 9.2.1's pddrive and pddrive3d, built once by
    ../shared/peers/build-superlu-dist.sh into its cache folder (never into the project)."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "peers",
                          "build-superlu-dist.sh")
    if not os.path.exists(script):
        raise RuntimeError(f"no SuperLU_DIST 9.2.1 build script at {os.path.normpath(script)}")
    out = subprocess.run(["bash", script], capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def run(nprocs, argv, timeout=1800, threads=1, env=None):
    """``argv`` under ``mpiexec -n nprocs`` (None: as it is; it launches itself), ``threads``
    OpenMP threads per rank (OMP_NUM_THREADS; BLAS always one), ``env`` added to the
    environment: (stdout, peak resident bytes of the largest process)."""
    cmd = argv if nprocs is None else [shutil.which("mpiexec"), "-n", str(nprocs), *argv]
    env = dict(mpi_env(nprocs or 1, threads=threads), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS=str(threads),
               **(env or {}))
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err, text=True)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)  # the rusage of the whole reaped tree
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        text, errors = out.read(), err.read()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:3])}... exited {proc.returncode}:\n{text[-2000:]}\n{errors[-2000:]}")
    return text, usage.ru_maxrss * 1024


def superlu_run(path, grid, driver=PDDRIVE, threads=1, env=None, options=()):
    """One run of ``driver`` on the Matrix Market file ``path`` on ``grid`` ((px, py) for
    pddrive, (px, py, pz) for pddrive3d), ``threads`` OpenMP threads per rank, ``env`` (e.g.
    NEW3DSOLVE) added to the environment, ``options`` more of the driver's flags (e.g.
    ``("-p", "0")``: no row permutation): its phase times, nnz(L+U), error and peak memory."""
    px, py, *pz = grid
    argv = [driver, "-r", str(px), "-c", str(py), *(["-d", str(pz[0])] if pz else []), *options, path]
    text, rss = run(px * py * (pz[0] if pz else 1), argv, threads=threads, env=env)
    rec = {}
    for key, pattern in FIELDS.items():
        m = re.search(pattern, text)
        if m is None and key in OPTIONAL:
            rec[key] = OPTIONAL[key]
            continue
        if m is None:
            raise RuntimeError(f"{os.path.basename(driver)} printed no {key}:\n{text[-3000:]}")
        rec[key] = float(m.group(1))
    rec["setup_s"] = sum(rec[k] for k in SETUP)
    rec["peak_rss_bytes"] = rss
    return rec


def summarize(runs):
    """Runs of :func:`superlu_run` and their medians."""
    med = {k: statistics.median(r[k] for r in runs) for k in ("solve_s", "factor_s", "setup_s", "peak_rss_bytes")}
    nnz = runs[0]["nnz_LU"]
    return {"runs": runs, **med, "nnz_LU": None if nnz is None else int(nnz),
            "error_vs_xtrue": max(r["error"] for r in runs)}


def superlu(path, grid, runs, driver=PDDRIVE, threads=1, env=None):
    """``runs`` runs of :func:`superlu_run`, summarized."""
    return summarize([superlu_run(path, grid, driver, threads, env) for _ in range(runs)])
