"""SELL-C-sigma storage (issue 31): the same SpMV as scipy's CSR to rounding for every C and
sigma (ELL and sliced ELL among them), padding as the definition counts it, bad input refused."""

import numpy as np
import pytest
import scipy.sparse as sp

from commsolve import _core, gallery


def sell(A, C, sigma):
    A = sp.csr_matrix(A)
    return _core.SellMatrix(A.indptr.astype(np.int32), A.indices.astype(np.int32), A.data, A.shape[1], C, sigma)


def ragged(n=500, seed=3):
    """Rows of 0 to 40 entries (some empty), unsorted lengths."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 41, n)
    lengths[::17] = 0
    rows = np.repeat(np.arange(n), lengths)
    cols = rng.integers(0, n + 7, lengths.sum())
    return sp.csr_matrix((rng.standard_normal(lengths.sum()), (rows, cols)), shape=(n, n + 7))


MATRICES = {"poisson2d": lambda: gallery.from_spec("poisson2d:30"), "poisson3d27": lambda: gallery.from_spec("poisson3d27:9"),
            "ragged": ragged}
SHAPES = [(1, 1), (4, 1), (8, 1), (8, 32), (8, 1 << 20), (16, 64), (32, 256), (5, 7), (3, 1)]


@pytest.mark.parametrize("name", list(MATRICES))
@pytest.mark.parametrize("C,sigma", SHAPES)
def test_sell_spmv_equals_scipy(name, C, sigma):
    A = sp.csr_matrix(MATRICES[name]())
    x = np.random.default_rng(1).standard_normal(A.shape[1])
    S = sell(A, C, sigma)
    y = np.full(A.shape[0], np.nan)
    S.spmv(x, y)
    ref = A @ x
    assert np.abs(y - ref).max() <= 1e-13 * max(np.abs(ref).max(), 1.0)  # NaN fails
    # padding as defined: each chunk of C rows (sorted within windows of sigma) stored to its longest row
    lengths = np.diff(A.indptr)
    order = np.concatenate([np.argsort(-lengths[w:w + sigma], kind="stable") + w
                            for w in range(0, len(lengths), sigma)]) if sigma > 1 else np.arange(len(lengths))
    chunks = [lengths[order[c:c + C]].max() * C for c in range(0, len(order), C)]
    assert (S.nnz, S.stored) == (A.nnz, int(sum(chunks)))


def test_ell_is_one_chunk_and_sorting_cuts_padding():
    A = ragged()
    n = A.shape[0]
    ell = sell(A, n, 1)
    assert ell.stored == n * np.diff(A.indptr).max()
    unsorted, windowed, whole = sell(A, 8, 1), sell(A, 8, 64), sell(A, 8, n)
    assert whole.stored <= windowed.stored < unsorted.stored < ell.stored
    y = np.zeros(n)
    ell.spmv(np.ones(A.shape[1]), y)
    assert np.allclose(y, A @ np.ones(A.shape[1]))


def test_empty_and_bad_input():
    E = sp.csr_matrix((0, 4))
    S = sell(E, 8, 1)
    S.spmv(np.ones(4), np.zeros(0))
    A = sp.csr_matrix(np.eye(3))
    with pytest.raises(ValueError, match="row 2 has column 3, outside \\[0, 3\\)"):
        _core.SellMatrix(A.indptr.astype(np.int32), np.array([0, 1, 3], dtype=np.int32), A.data, 3, 8, 1)
    with pytest.raises(ValueError, match="C and sigma must be >= 1"):
        sell(A, 0, 1)
    with pytest.raises(ValueError, match="x has"):
        sell(A, 8, 1).spmv(np.ones(2), np.zeros(3))
