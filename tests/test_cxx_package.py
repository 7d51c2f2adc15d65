"""The C++ package (issue 34): ``cmake --install`` of the build tree's "cxx" component puts the
headers, the static library and a CMake package in a prefix; the C++ example
(examples/cxx/halo_spmv, a halo-exchange SpMV) configures with ``find_package(commsolve
CONFIG)``, builds against that prefix alone and runs under ``mpiexec -n 2`` and 3, checking its
product against the stencil and its MPI traffic against its plan. The tree also configures
without Python (``-DCOMMSOLVE_PYTHON=OFF``), the standalone C++ build."""

import pathlib
import re
import shutil
import subprocess

import pytest

from commsolve.launch import mpi_env

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "cxx" / "halo_spmv"


def build_tree():
    """The CMake tree the package was built in (scripts/build.py: build/<wheel tag>)."""
    trees = [p.parent for p in (ROOT / "build").glob("*/CMakeCache.txt")
             if "CMAKE_PROJECT_NAME:STATIC=commsolve" in p.read_text()]
    assert trees, "no CMake build tree under build/: run `make build` (scripts/build.py) first"
    return max(trees, key=lambda p: (p / "CMakeCache.txt").stat().st_mtime)


def run(cmd, **kwargs):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=kwargs.pop("timeout", 300), **kwargs)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} exited {proc.returncode}\n{proc.stdout[-3000:]}\n" \
                                 f"{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cxx")
    prefix = tmp / "prefix"
    run(["cmake", "--install", build_tree(), "--component", "cxx", "--prefix", prefix])
    build = tmp / "halo_spmv"
    # only the installed prefix: no path into this repository's sources or build tree
    run(["cmake", "-S", EXAMPLE, "-B", build, "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={prefix}"])
    run(["cmake", "--build", build])
    return prefix, build / "halo_spmv"


def test_the_install_holds_headers_library_and_package(example):
    prefix, _ = example
    for path in ("include/commsolve/parcsr/par_csr.hpp", "include/commsolve/comm/comm_plan.hpp",
                 "include/commsolve/trees/tree_plan.hpp", "lib/libcommsolve.a",
                 "lib/cmake/commsolve/commsolveConfig.cmake", "lib/cmake/commsolve/commsolveConfigVersion.cmake",
                 "lib/cmake/commsolve/commsolveTargets.cmake"):
        assert (prefix / path).is_file(), path
    assert not list(prefix.rglob("bindings")) and not list(prefix.rglob("*.cpp"))
    targets = (prefix / "lib/cmake/commsolve/commsolveTargets.cmake").read_text()
    assert "commsolve::core" in targets and str(ROOT) not in targets  # relocatable: nothing from the tree
    # nothing of this machine's layout either: the libraries are found again where the package is used
    links = re.search(r'INTERFACE_LINK_LIBRARIES "([^"]*)"', targets).group(1).split(";")
    assert "commsolve::external" in links and not [x for x in links if x.startswith("/")], links
    assert re.search(r'INTERFACE_COMPILE_FEATURES "cxx_std_20"', targets)  # consumers get C++20
    includes = re.search(r'INTERFACE_INCLUDE_DIRECTORIES "([^"]*)"', targets).group(1).split(";")
    assert includes == ["${_IMPORT_PREFIX}/include"], includes  # not include/commsolve: no bare core/, comm/


@pytest.mark.parametrize("np_,args", [(2, ["40", "node-aware", "1"]), (3, ["33", "standard"]),
                                      (2, ["40", "node-aware-2step", "1"])])
def test_the_example_runs_under_mpiexec(example, np_, args):
    _, exe = example
    proc = run([shutil.which("mpiexec"), "-n", str(np_), exe, *args], env=mpi_env(np_), timeout=120)
    out = proc.stdout
    n = int(args[0])
    assert f"{n} x {n} grid, {n * n} rows on {np_} ranks" in out, out
    err = float(re.search(r"max \|y - A x\| = (\S+)", out).group(1))
    assert 0 <= err <= 1e-12, out
    sent = re.search(r"messages sent (\d+) \(plan (\d+)\), bytes (\d+) \(plan (\d+)\): as planned", out)
    assert sent and int(sent.group(1)) > 0 and sent.group(1) == sent.group(2) and sent.group(3) == sent.group(4), out
    assert out.rstrip().endswith("OK")


def test_a_bad_argument_is_an_error_not_a_hang(example):
    _, exe = example
    proc = subprocess.run([shutil.which("mpiexec"), "-n", "2", exe, "1"], env=mpi_env(2), capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode != 0 and "n must be >= 2" in proc.stderr


def test_the_core_configures_without_python(tmp_path):
    """The standalone C++ build: no Python, no nanobind asked for."""
    run(["cmake", "-S", ROOT, "-B", tmp_path, "-G", "Ninja", "-DCOMMSOLVE_PYTHON=OFF"])
    cache = (tmp_path / "CMakeCache.txt").read_text()
    assert "nanobind_DIR" not in cache and "COMMSOLVE_PYTHON:BOOL=OFF" in cache
    ninja = (tmp_path / "build.ninja").read_text()
    assert "libcommsolve.a" in ninja and "_core.cpython" not in ninja
