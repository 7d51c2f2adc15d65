"""The README's Python examples run as written, on 2 ranks."""

import os
import re

from commsolve.launch import run_mpi

README = os.path.join(os.path.dirname(__file__), "..", "README.md")


def run_example(tmp_path, marker=None):
    """The README's first python block (containing ``marker`` if given), run on 2 ranks."""
    with open(README) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert blocks, "README has no python example"
    script = tmp_path / "example.py"
    script.write_text(blocks[0] if marker is None else next(b for b in blocks if marker in b))
    proc = run_mpi(2, [str(script)], timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_readme_python_example_runs(tmp_path):
    proc = run_example(tmp_path)
    # One stats dict per rank (print writes text and newline apart, so ranks' lines may merge).
    assert proc.stdout.count("'msgs_sent_intra'") == 2


def test_readme_direct_solver_example_runs(tmp_path):
    proc = run_example(tmp_path, "direct.factor")
    # each rank prints the backward errors of its solve: two right-hand sides, at machine precision
    # (ranks' lines may merge: print writes text and newline apart)
    berrs = [b.split() for b in re.findall(r"\[([^\]]*)\]", proc.stdout)]
    assert len(berrs) == 2 and all(len(b) == 2 and all(float(v) <= 1e-15 for v in b) for b in berrs)


def test_readme_dense_example_runs(tmp_path):
    proc = run_example(tmp_path, "cs.dense")
    assert "matmul True" in proc.stdout and "lu True" in proc.stdout and "pivoted True" in proc.stdout, proc.stdout
