"""The documentation (issue 34). ``make docs``'s Sphinx build runs offline with warnings as
errors and renders the Python reference (from the docstrings), the command-line reference
(from the click commands) and the C++ declarations (from the headers); the reference covers
every public module; the README's links resolve; the README's and the Python guide's
examples run as written on 2 ranks (the tutorials: tests/test_tutorials.py)."""

import os
import re
import subprocess
import sys

import pytest

from commsolve.launch import run_mpi
from test_docstrings import public_modules

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DOCS = os.path.join(ROOT, "docs")


def python_blocks(path):
    with open(path) as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.S)


def run_block(tmp_path, path, marker=None):
    """The file's first python block (containing ``marker`` if given), run on 2 ranks."""
    blocks = python_blocks(path)
    assert blocks, f"{path} has no python example"
    script = tmp_path / "example.py"
    script.write_text(blocks[0] if marker is None else next(b for b in blocks if marker in b))
    proc = run_mpi(2, [str(script)], timeout=180, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_docs_build_offline_without_warnings(tmp_path):
    out = tmp_path / "html"
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-E", "-W", "--keep-going", "-q", "-b", "html", DOCS, str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-5000:]
    page = (out / "reference" / "python" / "krylov.html").read_text()
    assert 'id="commsolve.krylov.gmres"' in page and "Parameters" in page and "Returns" in page
    cli = (out / "reference" / "cli.html").read_text()
    assert 'id="commsolve-amg"' in cli and "--accel" in cli and "bicgstab" in cli
    cpp = (out / "reference" / "cpp.html").read_text()
    assert "ParCsr" in cpp and "find_package" in cpp and "HaloExecutor" in cpp
    for page in ("getting-started", "tutorials/matrix-market", "tutorials/predict", "tutorials/node-aware",
                 "tutorials/calibrate", "concepts", "benchmarks", "guide/python", "guide/cli", "layout"):
        assert (out / f"{page}.html").is_file(), page
    assert len(list((out / "_images").glob("*.png"))) >= 5  # the benchmarks' figures
    for html in out.rglob("*.html"):  # nothing fetched when a page is viewed: scripts, styles, images are local
        assert not re.search(r'(src|href)="https?://[^"]+\.(js|css|png|svg|woff2?)"', html.read_text()), html


def test_the_reference_covers_every_public_module():
    documented = set()
    for name in os.listdir(os.path.join(DOCS, "reference", "python")):
        with open(os.path.join(DOCS, "reference", "python", name)) as f:
            documented |= set(re.findall(r"^\.\. automodule:: (\S+)", f.read(), re.M))
    assert documented == set(public_modules())


def test_readme_links_resolve():
    with open(os.path.join(ROOT, "README.md")) as f:
        links = re.findall(r"\]\(([^)]+)\)", f.read())
    assert len(links) >= 10
    for link in links:
        if not link.startswith(("http://", "https://", "#")):
            assert os.path.exists(os.path.join(ROOT, link.split("#")[0])), link


def test_readme_example_runs(tmp_path):
    proc = run_block(tmp_path, os.path.join(ROOT, "README.md"))
    berrs = [float(v) for v in re.findall(r"\[([^\]\s]+)\]", proc.stdout)]
    assert len(berrs) == 2 and all(v <= 1e-15 for v in berrs), proc.stdout  # one per rank


GUIDE = os.path.join(DOCS, "guide", "python.md")


def test_guide_python_example_runs(tmp_path):
    proc = run_block(tmp_path, GUIDE)
    # One stats dict per rank (print writes text and newline apart, so ranks' lines may merge).
    assert proc.stdout.count("'msgs_sent_intra'") == 2


def test_guide_direct_solver_example_runs(tmp_path):
    proc = run_block(tmp_path, GUIDE, "print(solver.berr)")
    # each rank prints the backward errors of its solve: two right-hand sides, at machine precision
    berrs = [b.split() for b in re.findall(r"\[([^\]]*)\]", proc.stdout)]
    assert len(berrs) == 2 and all(len(b) == 2 and all(float(v) <= 1e-15 for v in b) for b in berrs)


def test_guide_krylov_example_runs(tmp_path):
    proc = run_block(tmp_path, GUIDE, "cs.krylov.gmres")
    # GMRES with the AMG cycle converged, with the LU inverse in one step (rank 0 prints)
    assert proc.stdout.count("gmres 0 ") == 1 and proc.stdout.count("lu 0 1\n") == 1, proc.stdout
    its = [int(v) for v in re.findall(r"gmres 0 (\d+)", proc.stdout)]
    assert all(3 <= k <= 40 for k in its), its


def test_guide_simulator_example_runs(tmp_path):
    proc = run_block(tmp_path, GUIDE, "cs.sim.solve_schedule")
    assert proc.stdout.count("fp_s") == 2, proc.stdout  # each rank simulates alone and prints its breakdown


def test_guide_dense_example_runs(tmp_path):
    proc = run_block(tmp_path, GUIDE, "cs.dense")
    assert "matmul True" in proc.stdout and "lu True" in proc.stdout and "pivoted True" in proc.stdout, proc.stdout


@pytest.mark.parametrize("page", ["getting-started.md", "tutorials/matrix-market.md", "guide/cli.md"])
def test_pages_name_only_commands_that_exist(page):
    """Every ``commsolve X`` a page shows as code is a command (or group) of the CLI."""
    from commsolve.cli import main

    with open(os.path.join(DOCS, page)) as f:
        used = set(re.findall(r"(?:^|`)commsolve ([a-z][a-z-]+)", f.read(), re.M))  # in code, not prose
    assert used and used <= set(main.commands), used - set(main.commands)
