"""The README's Python example runs as written, on 2 ranks."""

import os
import re

from commsolve.launch import run_mpi

README = os.path.join(os.path.dirname(__file__), "..", "README.md")


def test_readme_python_example_runs(tmp_path):
    with open(README) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert blocks, "README has no python example"
    script = tmp_path / "example.py"
    script.write_text(blocks[0])
    proc = run_mpi(2, [str(script)], timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split("\n")
    assert sum("msgs_sent_intra" in line for line in lines) == 2  # one stats dict per rank
