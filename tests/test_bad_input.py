"""Bad input gets a clear error, never a crash, a hang or a silent wrong answer (issue 11,
item 2): each case here was seen to misbehave before."""

import gzip
import json
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from commsolve import gallery, io
from commsolve.launch import mpi_env


def cli(*args, timeout=180):
    return subprocess.run([sys.executable, "-m", "commsolve", *args], capture_output=True, text=True,
                          timeout=timeout, env=mpi_env(4))


def strict_json(text):
    """json.loads that refuses NaN and infinities (which JSON does not have)."""
    def bad(c):
        raise ValueError(f"not JSON: {c}")
    return json.loads(text, parse_constant=bad)


@pytest.mark.parametrize("command", [["sptrsv", "-np", "2"], ["trees", "--grid", "2x2"], ["spmv", "-np", "2"]])
def test_empty_matrix_is_refused_not_a_segfault(tmp_path, command):
    path = tmp_path / "empty.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n0 0 0\n")
    p = cli(command[0], "--matrix", str(path), *command[1:])
    assert p.returncode not in (0, -11, 139), p.stderr  # an error, not success and not SIGSEGV
    assert "no rows" in p.stderr or "0 x 0" in p.stderr or "more ranks than rows" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
def test_non_finite_values_in_a_file_name_the_line(tmp_path, value):
    path = tmp_path / "bad.mtx"
    path.write_text(f"%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.0\n2 2 {value}\n")
    with pytest.raises(ValueError, match=f"bad.mtx:4: value {value} is not finite"):
        io.mmread(path)


def test_gzipped_file_says_so(tmp_path):
    path = tmp_path / "a.mtx.gz"
    with gzip.open(path, "wt") as f:
        f.write("%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 2.0\n")
    with pytest.raises(ValueError, match="gzip-compressed file: decompress it first"):
        io.mmread(path)


@pytest.mark.parametrize("spec,message", [
    ("aniso2d:10,eps=nan", "eps must be finite, got nan"),
    ("convdiff2d:10,pe=inf", "pe must be finite, got inf"),
    ("poisson2d:abc", "the grid size must be a whole number, got 'abc'"),
    ("random:rows=10,nnz_per_row=x", "nnz_per_row must be a whole number, got 'x'"),
    ("poisson3d:700", "would take about .* GiB to build, more than this machine's memory allows"),
])
def test_bad_generator_parameters(spec, message):
    with pytest.raises(ValueError, match=message):
        gallery.from_spec(spec)


def test_spmv_json_is_valid_without_timing():
    p = cli("spmv", "--gen", "poisson2d:10", "-np", "2", "--repeat", "0", "--json")
    assert p.returncode == 0, p.stderr
    r = strict_json(p.stdout)  # no bare NaN
    assert r["spmv_median_s"] is None


def test_spmv_check_is_scale_aware(tmp_path):
    """Rows that cancel: y is tiny, its rounding is not; the old check (divided by ||y||)
    failed a correct product."""
    n = 60
    rng = np.random.default_rng(0)
    A = sp.random(n, n, density=0.2, random_state=1, format="csr")
    A = A - sp.diags(np.asarray(A.sum(axis=1)).ravel() / 1.0)  # every row sums to zero
    A = sp.csr_matrix(A * 1e3 + sp.diags(rng.random(n) * 1e-12))
    path = tmp_path / "cancel.mtx"
    io.mmwrite(path, A)
    p = cli("spmv", "--matrix", str(path), "-np", "2", "--repeat", "2", "--json")
    assert p.returncode == 0, p.stderr
    assert strict_json(p.stdout)["rel_error_vs_scipy"] <= 1e-12


def test_sptrsv_judges_by_backward_error(tmp_path):
    """A Hilbert matrix: the relative residual is large for any solver, the backward error is not."""
    n = 10
    H = sp.csr_matrix(1.0 / (np.arange(n)[:, None] + np.arange(n)[None, :] + 1.0))
    path = tmp_path / "hilbert.mtx"
    io.mmwrite(path, H)
    p = cli("sptrsv", "--matrix", str(path), "-np", "2", "--repeat", "1", "--json")
    assert p.returncode == 0, p.stderr
    r = strict_json(p.stdout)
    assert r["backward_error"] <= 1e-14 and max(r["berr"]) <= 1e-14


@pytest.mark.parametrize("args,message", [
    (["trees", "--gen", "poisson2d:8", "--grid", "100000x100000"], "ranks at most"),
    (["trees", "--gen", "poisson2d:8", "--workload", "sptrsv3d", "--grid", "1x1x2147483648"],
     "more ranks than the virtual world handles"),
    (["trees", "--gen", "poisson2d:8", "--workload", "sptrsv3d", "--grid", "1x1x2048"], "at most 1024 layers"),
    (["trees", "--gen", "poisson2d:8", "--workload", "sptrsv3d", "--grid", "2x2x2", "--algorithm", ","],
     "no algorithm given"),
    (["trees", "--gen", "poisson2d:8", "--grid", "2x2", "--algorithm", "3d"], "--algorithm belongs to --workload"),
    (["analyze", "--gen", "poisson2d:200", "--procs", "20000", "--ppn", "4", "--heatmap", "h.png",
      "--heatmap-level", "rank"], "rank-level heat map of 20,000 ranks"),
    (["analyze", "--gen", "poisson2d:8", "--procs", "4", "--ppn", "2", "--plot", "/nonexistent/x.png"],
     "folder /nonexistent does not exist"),
    (["trees", "--gen", "poisson2d:8", "--grid", "2x2", "--plot", "/nonexistent/x.png"],
     "folder /nonexistent does not exist"),
    (["sptrsv", "--gen", "poisson2d:8", "--tol", "nan"], "must lie in (0, 1)"),
    (["sptrsv", "--gen", "poisson2d:8", "-np", "2", "--grid", "1x2", "--algorithm", "3d"],
     "the 3d algorithm needs a 3D grid"),
    (["sptrsv", "--gen", "poisson2d:8", "-np", "4", "--grid", "2x2x1", "--ppn", "3"],
     "ppn 3 does not divide the world size 4"),
])
def test_clear_errors_up_front(args, message):
    p = cli(*args, timeout=120)
    assert p.returncode != 0
    assert message in p.stderr, p.stderr
    assert "Traceback" not in p.stderr
    assert p.stderr.count(message) == 1  # once, not once per rank


@pytest.mark.parametrize("command", ["sptrsv", "amg", "selinv"])
def test_a_header_too_large_for_its_entries_is_refused_before_reading(tmp_path, command):
    """A typo in the sizes (10^8 rows, one entry) used to read the file into arrays of 10^8
    rows (7 GB) before "row 1 is zero"; a solve refuses the header at once."""
    path = tmp_path / "typo.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n100000000 100000000 1\n1 1 2.0\n")
    p = cli(command, "--matrix", str(path), "-np", "2", timeout=60)
    assert p.returncode != 0
    assert "declares 100000000 rows but only 1 entries (general): some row is empty" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_mmwrite_refuses_complex_and_non_finite(tmp_path):
    with pytest.raises(ValueError, match="complex matrices cannot be written"):
        io.mmwrite(tmp_path / "c.mtx", sp.csr_matrix(np.array([[1 + 2j, 0], [0, 1]])))
    with pytest.raises(ValueError, match="non-finite values"):
        io.mmwrite(tmp_path / "n.mtx", sp.csr_matrix(np.array([[np.nan, 0], [0, 1.0]])))


@pytest.mark.parametrize("case,message", [
    ("complex x", "x is complex; ParCSR holds real values"),
    ("2-D x", "x must be a 1-D array of this rank's 18 entries, got shape (18, 2)"),
    ("out aliases x", "out must not share memory with x"),
    ("float32 out", "out must be a writable C-contiguous float64 array of 18 values, got float32"),
    ("strided out", "out must be a writable C-contiguous float64 array of 18 values"),
    ("strings x", "x holds values that are not numbers"),
    ("complex matrix", "the matrix is complex; ParCSR holds real values"),
])
def test_parcsr_refuses_bad_vectors(case, message):
    from conftest import json_lines, mpirun

    if not hasattr(test_parcsr_refuses_bad_vectors, "out"):
        test_parcsr_refuses_bad_vectors.out = {r["case"]: r for r in json_lines(
            mpirun(2, "vector_checks.py", 2).stdout)}
    r = test_parcsr_refuses_bad_vectors.out[case]
    assert r["error"] is not None and message in r["error"], r
    assert r["still_works"]
