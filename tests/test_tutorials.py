"""The documentation's tutorials (docs/tutorials/*.py) and its getting-started example
(docs/first_solve.py) run as shown, at small sizes, and the figures they print are checked:
backward errors at rounding level, recorded messages equal to planned ones, predictions
positive and ranked, a calibrated profile written and used."""

import math
import os
import re
import subprocess
import sys

import pytest

from commsolve.launch import mpi_env, run_mpi
from commsolve.model import load_profile

DOCS = os.path.join(os.path.dirname(__file__), "..", "docs")
TUTORIALS = os.path.join(DOCS, "tutorials")


def run(nprocs, script, *args, cwd=None, timeout=300):
    proc = run_mpi(nprocs, [os.path.join(TUTORIALS, script), *map(str, args)], timeout=timeout, cwd=cwd)
    assert proc.returncode == 0, f"{script} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def numbers(pattern, text):
    found = [float(v) for v in re.findall(pattern, text)]
    assert found and all(math.isfinite(v) for v in found), (pattern, text)
    return found


def test_solve_a_matrix_market_file(tmp_path):
    out = run(2, "solve_matrix_market.py", "--n", 40, cwd=tmp_path)
    assert (tmp_path / "demo.mtx").is_file() and "1600 x 1600" in out
    assert "grid 1x2x1 (2d)" in out and "grid 1x1x2 (3d)" in out, out
    assert all(v <= 1e-14 for v in numbers(r"backward error (\S+),", out))
    assert all(v <= 1e-10 for v in numbers(r"relative error (\S+),", out))
    assert out.count("messages as planned: True") == 2, out


def test_choose_and_predict(tmp_path):
    out = run(2, "predict_at_scale.py", "--n", 48, "--procs", 64, cwd=tmp_path)
    assert 0 < numbers(r"3d solve predicted (\S+) ms", out)[0] < 1e3, out
    ranked = [float(m) for m in re.findall(r"^\s*\d+\s+\d+x\d+x\d+\s+\S+\s+\S+\s+([\d.]+)\s+[\d.]+x", out, re.M)]
    assert len(ranked) == 5 and ranked == sorted(ranked), out
    line = next(x for x in out.splitlines() if x.startswith("grid=auto on 2 rank(s)"))
    assert numbers(r"backward error (\S+)", line)[0] <= 1e-14 and numbers(r"measured (\S+) ms", line)[0] > 0


def test_node_aware(tmp_path):
    out = run(4, "node_aware.py", "--n", 16, "--ppn", 2, "--procs", 256, cwd=tmp_path)
    for strategy in ("standard", "node-aware", "node-aware-2step"):
        line = next(x for x in out.splitlines() if x.startswith(strategy + " "))
        assert numbers(r"error vs scipy (\S+),", line)[0] <= 1e-14 and "recorded == planned: True" in line, line
    inter = {s: int(numbers(rf"256 ranks, {s}\s+busiest rank:\s+(\d+) inter", out)[0])
             for s in ("standard", "node-aware", "node-aware-2step")}
    assert inter["node-aware"] <= inter["standard"] and inter["node-aware-2step"] <= inter["standard"], inter
    assert len(re.findall(r"^AMG level \d+:", out, re.M)) >= 3 and "converged True" in out, out


@pytest.mark.serial  # it measures this machine: run alone
def test_calibrate_a_profile(tmp_path):
    """The tutorial runs `commsolve calibrate -np 2 --ppn 1 --plot ... --quick --accept-noisy` (a
    busy CI machine must not fail it), then uses the profile: what the simulator needs is in it,
    all measured."""
    path, png = tmp_path / "here.toml", tmp_path / "fit.png"
    # the environment as Python sees it: MPI, initialized in this process by earlier tests, may have
    # set variables of its own in the C one, which would make the command think mpiexec started it
    proc = subprocess.run([sys.executable, os.path.join(TUTORIALS, "calibrate_profile.py"), "--quick", "-o",
                           str(path), "--ppn", "1", "--plot", str(png)], capture_output=True, text=True, timeout=400,
                          env=mpi_env(2))
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    prof = load_profile(path)
    assert prof.name == "here" and prof.rate["inter_node", "rend"] > 1e8
    assert 0 < prof.overhead < 1e-4
    # the call overhead fitted to the training solves may be 0 (the bandwidth explains them)
    assert prof.compute["flop_rate"] > 1e7 and prof.compute["bandwidth"] > 1e7
    assert 0 <= prof.compute["call_overhead"] < 1e-5
    assert prof.compute["copy_rate"] > 1e7
    assert 1e7 < prof.compute["triangular_rate"] < 1e12  # dtrsm (the per-block diagonal solves) is timed too
    assert "rel. error" in out and "protocol thresholds" in out
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert path.is_file() and "profile here:" in out, out
    alpha = numbers(r"intra_node\.short\s+(\S+)", out)[0]
    assert 0 < alpha < 1e3, out  # microseconds
    here, bluewaters = numbers(r"at 1,024 ranks \(node-aware\): (\S+) us on", out)
    assert here > 0 and bluewaters > 0
    assert numbers(r"predicted for this machine: (\S+) ms", out)[0] > 0


def test_the_getting_started_example(tmp_path):
    proc = run_mpi(2, [os.path.join(DOCS, "first_solve.py")], timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    m = re.search(r"CG\+AMG on 2 ranks: (\d+) iterations, info 0, true relative residual (\S+)", proc.stdout)
    assert m and 3 <= int(m.group(1)) <= 30 and float(m.group(2)) <= 1e-8, proc.stdout
    assert "level 0:     40,000 rows" in proc.stdout


@pytest.mark.parametrize("script", sorted(f for f in os.listdir(TUTORIALS) if f.endswith(".py")))
def test_every_tutorial_script_is_on_a_page(script):
    pages = "".join(open(os.path.join(TUTORIALS, p)).read() for p in os.listdir(TUTORIALS) if p.endswith(".md"))
    assert f"literalinclude}} {script}" in pages, script
