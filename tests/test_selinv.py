"""Selected inversion (issue 32, the numerical method; serial): the entries of A^-1 in the
pattern of the factors, against numpy's dense inverse on every gallery family, symmetric
and unsymmetric, with and without row permutation and scaling, supernodes narrow and wide."""

import numpy as np
import pytest
import scipy.sparse as sp

import commsolve as cs

FAMILIES = ["poisson2d:14", "poisson2d9:12", "poisson3d:6", "poisson3d27:6", "aniso2d:12,eps=0.001,theta=22.5",
            "convdiff2d:12,pe=50,theta=30", "kkt3d:4,alpha=1"]


@pytest.mark.parametrize("spec", FAMILIES)
@pytest.mark.parametrize("options", [{}, {"max_supernode": 4, "relax": 0}, {"row_perm": "none", "equil": False}],
                         ids=["defaults", "narrow", "unpivoted"])
def test_selected_entries_equal_the_dense_inverse(spec, options):
    A = sp.csr_matrix(cs.gallery.from_spec(spec))
    if spec.startswith("kkt") and options.get("row_perm") == "none":  # a zero (2,2) block needs the row matching
        with pytest.raises(ValueError, match="zero pivot"):
            cs.direct.SparseLU(A, **options)
        return
    lu = cs.direct.SparseLU(A, **options)
    S = lu.selected_inverse().tocoo()
    Z = np.linalg.inv(A.toarray())
    err = np.abs(S.data - Z[S.row, S.col]).max() / np.abs(Z).max()
    assert err <= 1e-12, err
    # it holds the pattern of A^T and the diagonal, and is a small part of the dense inverse
    have = set(zip(S.row.tolist(), S.col.tolist()))
    At = sp.coo_matrix(A.T)
    assert all((i, j) in have for i, j in zip(At.row.tolist(), At.col.tolist()))
    assert all((i, i) in have for i in range(A.shape[0]))
    assert S.nnz <= lu.nnz_LU < A.shape[0] ** 2


def test_selected_inverse_of_a_larger_matrix_on_sampled_columns():
    """poisson2d9:60 (3,600 rows, several supernode levels): columns of A^-1 by solves
    (scipy's splu, independent of our factors) against the selected entries in them."""
    from scipy.sparse.linalg import splu

    A = sp.csc_matrix(cs.gallery.from_spec("poisson2d9:60"))
    S = cs.direct.SparseLU(A).selected_inverse().tocsc()
    ref = splu(A)
    for j in (0, 1799, 3599):
        e = np.zeros(A.shape[0])
        e[j] = 1.0
        col = ref.solve(e)
        rows = S.indices[S.indptr[j]:S.indptr[j + 1]]
        assert rows.size > 0
        assert np.abs(S.data[S.indptr[j]:S.indptr[j + 1]] - col[rows]).max() <= 1e-12 * np.abs(col).max()
