#!/usr/bin/env python3
"""Builds and installs the package (pip, scikit-build-core, CMake, Ninja) and shows where the
build is: a line per stage with the time so far, and each compiled C++ file as Ninja reaches
it ("[12/45] direct/factor3d.cpp"), instead of pip's minutes of silence on a fresh machine.
pip's whole output is kept in build/pip-install.log and its tail shown if the build fails.

Usage: python3 scripts/build.py [pip install arguments...]   (default: --no-build-isolation
--no-deps .). Uses the running interpreter's pip."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

STAGES = (  # pip's / scikit-build-core's lines that begin a stage, and what to call it
    (re.compile(r"\*\*\* Configuring CMake"), "configuring (CMake)"),
    (re.compile(r"\*\*\* Building project"), "compiling the C++ core"),
    (re.compile(r"\*\*\* Installing project"), "installing into the wheel"),
    (re.compile(r"\*\*\* Making wheel"), "making the wheel"),
    (re.compile(r"^\s*Successfully installed"), "installed"),
)
STEP = re.compile(r"^\s*\[(\d+)/(\d+)\]\s+(Building CXX object|Linking CXX \S+ \S+)\s+(\S+)")


def progress_line(line):
    """What to show for one line of pip's output (None: nothing)."""
    for pattern, stage in STAGES:
        if pattern.search(line):
            return stage
    m = STEP.match(line)
    if m:
        k, n, what, target = m.groups()
        if what.startswith("Building"):
            name = re.sub(r"^.*?/src/commsolve/", "", target).removesuffix(".o")
            return f"[{k}/{n}] {name}"
        return f"[{k}/{n}] linking {os.path.basename(target)}"
    return None


def main(args):
    args = args or ["--no-build-isolation", "--no-deps", "."]
    os.makedirs("build", exist_ok=True)
    log_path = os.path.join("build", "pip-install.log")
    t0 = time.monotonic()
    print("build: pip install of commsolve (the C++ core compiles; a few minutes on a fresh machine)", flush=True)
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "pip", "install", "-v", *args], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, bufsize=1)
        for line in proc.stdout:
            log.write(line)
            shown = progress_line(line)
            if shown:
                print(f"build: {time.monotonic() - t0:6.1f} s  {shown}", flush=True)
        rc = proc.wait()
    if rc != 0:
        with open(log_path) as log:
            tail = log.readlines()[-40:]
        sys.stderr.write("".join(tail))
        sys.stderr.write(f"build: pip install failed (exit {rc}); its whole output is in {log_path}\n")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
