"""Matrix Market reading and writing: round trips, agreement with scipy, and clear errors."""

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from commsolve import gallery, mminfo, mmread, mmwrite


@pytest.fixture
def rng():
    return np.random.default_rng(11)


def test_round_trip_general_bit_exact(tmp_path, rng):
    A = sp.random(40, 30, density=0.2, random_state=3, format="csr")
    A.data = rng.standard_normal(A.nnz) * 10.0 ** rng.integers(-300, 300, A.nnz)
    p = tmp_path / "a.mtx"
    mmwrite(p, A, comment="random test\nsecond line")
    B = mmread(p)
    assert B.shape == A.shape
    assert (A != B).nnz == 0  # every value reads back bit for bit


@pytest.mark.parametrize("symmetry", ["symmetric", "skew-symmetric"])
def test_round_trip_symmetric(tmp_path, symmetry):
    M = sp.random(25, 25, density=0.3, random_state=4, format="csr")
    A = M + M.T if symmetry == "symmetric" else M - M.T
    p = tmp_path / "s.mtx"
    mmwrite(p, A, symmetry=symmetry)
    h = mminfo(p)
    assert h.symmetry == symmetry
    assert h.nnz < A.nnz  # only one triangle stored
    assert abs(mmread(p) - A).max() == 0
    assert abs(sp.csr_matrix(scipy.io.mmread(p)) - A).max() == 0  # scipy reads our file


@pytest.mark.parametrize("symmetry", ["symmetric", "skew-symmetric"])
def test_upper_triangle_reads_as_scipy_reads_it(tmp_path, symmetry):
    """The format asks for the lower triangle; files that store the upper one (some writers
    do) read as scipy reads them."""
    p = tmp_path / "u.mtx"
    p.write_text(f"%%MatrixMarket matrix coordinate real {symmetry}\n3 3 3\n1 2 -1.5\n"
                 + ("1 1 4.0\n" if symmetry == "symmetric" else "1 3 2.0\n") + "2 3 0.25\n")
    expected = sp.csr_matrix(scipy.io.mmread(p))
    assert expected[1, 0] == (-1.5 if symmetry == "symmetric" else 1.5)  # the reference mirrors it
    assert abs(mmread(p) - expected).max() == 0


def test_pattern_and_integer(tmp_path):
    A = gallery.poisson2d(5)
    mmwrite(tmp_path / "p.mtx", A, field="pattern")
    P = mmread(tmp_path / "p.mtx")
    assert (P != (A != 0).astype(float)).nnz == 0
    mmwrite(tmp_path / "i.mtx", A, field="integer")
    assert abs(mmread(tmp_path / "i.mtx") - A).max() == 0


def test_reads_scipy_files(tmp_path):
    A = gallery.aniso2d(6, eps=0.1, theta=10)
    scipy.io.mmwrite(tmp_path / "x.mtx", A)
    assert abs(mmread(tmp_path / "x.mtx") - A).max() < 1e-15


def test_duplicates_summed_and_comments_blank_lines(tmp_path):
    p = tmp_path / "d.mtx"
    p.write_text("%%MatrixMarket matrix coordinate real general\n% c\n\n3 3 3\n1 1 1.5\n\n1 1 2.5\n3 2 -1e-3\r\n")
    A = mmread(p)
    assert A[0, 0] == 4.0 and A[2, 1] == -1e-3 and A.nnz == 2


def test_write_rejects_wrong_symmetry(tmp_path):
    with pytest.raises(ValueError, match="not symmetric"):
        mmwrite(tmp_path / "x.mtx", sp.csr_matrix(np.array([[1.0, 2.0], [0.0, 1.0]])), symmetry="symmetric")


HEADER = "%%MatrixMarket matrix coordinate real general\n"
SYM = "%%MatrixMarket matrix coordinate real symmetric\n"
# name: (file text, line the error must name or None, text the message must contain)
BAD = {
    "empty": ("", 1, "empty file"),
    "banner": ("%%MatrixMarket matrix\n1 1 1\n1 1 1\n", 1, "banner must read"),
    "no banner": ("1 1 1\n1 1 1.0\n", 1, "missing %%MatrixMarket banner"),
    "array": ("%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", 1, "format 'array' is not supported"),
    "complex": ("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", 1, "complex"),
    "size line": (HEADER + "% x\n3 3\n", 3, "size line must hold"),
    "size value": (HEADER + "3 x 2\n", 2, "three non-negative integers"),
    "no size": (HEADER + "% only comments\n", 3, "file ends before the size line"),
    "bad value": (HEADER + "3 3 2\n1 1 1.0\n2 2 abc\n", 4, "expected a real value"),
    "missing value": (HEADER + "3 3 2\n1 1 1.0\n2 2\n", 4, "expected a real value"),
    "bad index": (HEADER + "3 3 2\n1 1 1.0\nx 2 1.0\n", 4, "expected an integer row index"),
    "extra": (HEADER + "3 3 1\n1 1 1.0 5\n", 3, "too many values"),
    "range": (HEADER + "3 3 2\n1 1 1.0\n4 1 2.0\n", 4, "entry (4, 1) outside the 3 x 3 matrix"),
    "zero index": (HEADER + "3 3 1\n0 1 1.0\n", 3, "entry (0, 1) outside"),
    "truncated": (HEADER + "3 3 3\n1 1 1.0\n2 2 1.0\n", None, "declares 3 entries but the file holds 2 (truncated?)"),
    "too many": (HEADER + "3 3 1\n1 1 1.0\n2 2 1.0\n", None, "declares 1 entries but the file holds 2"),
    "both triangles": (SYM + "3 3 3\n2 1 1.0\n3 3 1.0\n1 3 1.0\n", 5,
                       "stores an entry above the diagonal after one below it (line 3)"),
    "both triangles, upper first": (SYM + "3 3 2\n1 2 1.0\n3 1 1.0\n", 4,
                                    "stores an entry below the diagonal after one above it (line 3)"),
    "skew diagonal": ("%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 1\n2 2 1.0\n", 3,
                      "skew-symmetric matrix with a diagonal entry"),
    "nonsquare symmetric": (SYM + "3 4 0\n", 2, "symmetric matrix must be square"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_files_name_file_and_line(tmp_path, name):
    text, line, expected = BAD[name]
    p = tmp_path / "bad.mtx"
    p.write_text(text)
    with pytest.raises(ValueError) as e:
        mmread(p)
    msg = str(e.value)
    assert msg.startswith(f"{p}:{line}: " if line else f"{p}: "), msg
    assert expected in msg, msg


def test_missing_file(tmp_path):
    with pytest.raises(ValueError, match="cannot open file"):
        mmread(tmp_path / "nope.mtx")
