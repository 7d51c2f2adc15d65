"""Supernodal LU with static pivoting (serial): solves against scipy, several right-hand
sides, relaxed supernodes, and zero / tiny pivots."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from commsolve import direct, gallery

FAMILIES = ["poisson2d:30", "poisson2d9:25", "poisson3d:10", "poisson3d27:8", "aniso2d:30,eps=0.001,theta=30",
            "random:rows=500,nnz_per_row=6"]


@pytest.mark.parametrize("spec", FAMILIES)
@pytest.mark.parametrize("ordering,relax,subtree", [("tree", 0.0, 0), ("tree", 0.3, 0), ("tree", 0.3, 16),
                                                    ("nd", 0.3, 8), ("natural", 0.0, 0)])
def test_solves_match_scipy(spec, ordering, relax, subtree):
    A = gallery.from_spec(spec)
    lu = direct.SparseLU(A, max_supernode=16, ordering=ordering, levels=3, relax=relax, relax_subtree=subtree)
    rng = np.random.default_rng(1)
    B = rng.standard_normal((A.shape[0], 3))
    X = lu.solve(B)
    assert np.linalg.norm(A @ X - B) <= 1e-10 * np.linalg.norm(B)
    x1 = lu.solve(B[:, 0])  # one right-hand side, 1-D
    assert x1.shape == (A.shape[0],) and np.allclose(x1, X[:, 0], rtol=0, atol=1e-12 * np.abs(X).max())
    ref = spla.spsolve(A.tocsc(), B[:, 1])
    assert np.linalg.norm(X[:, 1] - ref) <= 1e-9 * np.linalg.norm(ref)
    # the ordering's seconds, part by part (static pivoting, A + A^T, METIS, the permuted graph, symbolic)
    parts = lu.ordering_parts
    assert set(parts) == {"pivoting", "graph", "nested_dissection", "permute", "symbolic"}
    assert all(v >= 0 for v in parts.values()) and sum(parts.values()) <= lu.ordering_seconds


def test_relaxation_keeps_structure_and_bounds_zeros():
    A = gallery.poisson3d(12)
    tight = direct.SparseLU(A, max_supernode=32, relax=0.0, relax_subtree=0)
    loose = direct.SparseLU(A, max_supernode=32, relax=0.3, relax_subtree=0)
    assert loose.structure.nsuper < tight.structure.nsuper
    assert tight.nnz_LU <= loose.nnz_LU <= 1.3 * tight.nnz_LU / (1 - 0.3)
    assert np.all(np.diff(loose.structure.sn_start) <= 32)


def test_zero_pivot_is_reported_and_can_be_replaced():
    A = sp.csr_matrix(np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 1.0, 2.0]]))
    with pytest.raises(ValueError, match="zero pivot at permuted column"):
        direct.SparseLU(A, ordering="natural", row_perm="none")  # no large-diagonal permutation
    lu = direct.SparseLU(A, ordering="natural", row_perm="none", replace_tiny=True)
    assert lu.tiny_pivots_replaced >= 1
    direct.SparseLU(A, ordering="natural")  # the default row permutation moves the zeros off


@pytest.mark.parametrize("spec", ["poisson3d27:12", "poisson2d9:80"])
def test_wide_supernodes_factor_without_refinement(spec):
    """Default supernodes (up to 128 columns) take the blocked path of the diagonal-block LU."""
    A = gallery.from_spec(spec)
    lu = direct.SparseLU(A, row_perm="none")
    assert np.diff(lu.structure.sn_start).max() > 64
    b = np.random.default_rng(2).standard_normal(A.shape[0])
    x = lu.solve(b, refine=False)
    assert np.linalg.norm(A @ x - b) <= 1e-12 * np.linalg.norm(b)


def test_zero_pivot_inside_a_wide_block_names_its_column():
    """A dense 40 x 40 block (one supernode) whose unpivoted LU has U(25, 25) = 0."""
    rng = np.random.default_rng(3)
    n = 40
    L = np.tril(rng.uniform(-0.1, 0.1, (n, n)), -1) + np.eye(n)
    U = np.triu(rng.uniform(-0.1, 0.1, (n, n)), 1) + np.diag(rng.uniform(1.0, 2.0, n))
    U[25, 25] = 0.0
    A = sp.csr_matrix(L @ U)
    with pytest.raises(ValueError, match=r"(zero|tiny) pivot.* at permuted column 25 "):
        direct.SparseLU(A, ordering="natural", row_perm="none", equil=False)
    lu = direct.SparseLU(A, ordering="natural", row_perm="none", equil=False, replace_tiny=True)
    assert lu.tiny_pivots_replaced == 1


def test_bad_input():
    with pytest.raises(ValueError, match="square"):
        direct.SparseLU(sp.random(4, 5, density=0.5, random_state=0))
    lu = direct.SparseLU(gallery.poisson2d(4))
    with pytest.raises(ValueError, match=r"b must have shape \(16,\) or \(16, nrhs\), got \(3,\)"):
        lu.solve(np.ones(3))


def test_relaxed_subtrees_make_fewer_larger_supernodes():
    A = gallery.poisson2d9(60)
    plain = direct.SparseLU(A, max_supernode=64, relax=0.0, relax_subtree=0)
    relaxed = direct.SparseLU(A, max_supernode=64, relax=0.0, relax_subtree=16)
    assert relaxed.structure.nsuper < 0.7 * plain.structure.nsuper
    assert sorted(relaxed.structure.perm) == list(range(A.shape[0]))
    b = np.ones(A.shape[0])
    assert np.linalg.norm(A @ relaxed.solve(b) - b) <= 1e-10 * np.linalg.norm(b)


@pytest.mark.parametrize("px,py", [(1, 1), (2, 3), (3, 2), (1, 4)])
@pytest.mark.parametrize("upper", [False, True])
def test_2d_solve_collectives_follow_the_block_cyclic_layout(px, py, upper):
    """Broadcast K: from K's diagonal owner down process column (K mod py); reduce K: along
    process row (K mod px); participants are exactly the owners of the blocks involved."""
    from commsolve import _core

    A = gallery.poisson2d9(20)
    st = direct.SparseLU(A, max_supernode=8, levels=3).structure
    C = _core.triangular_solve_collectives(st, px, py, upper)
    C.validate(px * py)
    ns = st.nsuper
    sn_of = st.sn_of
    owner = lambda i, j: (i % px) * py + (j % py)  # noqa: E731
    col_blocks = [set(sn_of[st.rows[st.rows_ptr[k]:st.rows_ptr[k + 1]]].tolist()) for k in range(ns)]
    row_blocks = [set() for _ in range(ns)]
    for k in range(ns):
        for i in col_blocks[k]:
            row_blocks[i].add(k)
    part_ptr, part, root, count, kind = C.part_ptr, C.part, C.root, C.count, C.kind
    assert len(C) == 2 * ns
    for c in range(2 * ns):
        k = c % ns
        parts = set(part[part_ptr[c]:part_ptr[c + 1]].tolist())
        assert root[c] == owner(k, k) and count[c] == st.sn_start[k + 1] - st.sn_start[k]
        assert kind[c] == (0 if c < ns else 1)
        if (c < ns) != upper:  # uses of K's solution in the L-solve, partial sums of K in the U-solve
            expected = {owner(i, k) if not upper else owner(k, i) for i in col_blocks[k]}
        else:
            expected = {owner(k, j) if not upper else owner(j, k) for j in row_blocks[k]}
        assert parts == expected | {owner(k, k)}
        if c >= ns:
            assert all(p // py == k % px for p in parts)  # reductions stay in K's process row
        else:
            assert all(p % py == k % py for p in parts)  # broadcasts stay in K's process column


def test_permuted_entries_are_the_scaled_permuted_matrix():
    """A's rows as entries of D_r P A Q D_c (direct/entry_move.hpp), against scipy's own
    permutation and scaling of the matrix: zeros left out, duplicates kept."""
    from commsolve import _core

    rng = np.random.default_rng(5)
    n = 40
    A = sp.random(n, n, density=0.2, random_state=6, format="csr")
    A.data[::7] = 0.0  # stored zeros
    rows = np.arange(10, 25)  # a rank's rows
    local = A[rows]
    row_order, col_order = rng.permutation(n).astype(np.int32), rng.permutation(n).astype(np.int32)
    r, c = rng.random(n) + 0.5, rng.random(n) + 0.5
    i, j, v = _core.permuted_entries(n, local.indptr.astype(np.int64), local.indices.astype(np.int32), local.data,
                                     rows.astype(np.int64), row_order, col_order, r, c)
    expected = (sp.diags(r) @ A @ sp.diags(c))[row_order][:, col_order].tocsr()  # factor row k: A's row_order[k]
    expected = expected[np.isin(row_order, rows)]
    got = sp.csr_matrix((v, (i, j)), shape=(n, n))[np.isin(row_order, rows)]
    assert v.size == np.count_nonzero(local.data) and np.all(v != 0)
    assert abs(got - expected).max() <= 1e-15 * abs(expected).max()
    with pytest.raises(ValueError, match="indptr must rise from 0"):
        _core.permuted_entries(n, np.array([0, 5, 1], dtype=np.int64), np.zeros(1, dtype=np.int32), np.ones(1),
                               np.arange(2, dtype=np.int64), row_order, col_order, r, c)
    with pytest.raises(ValueError, match="the row order is not a permutation"):
        _core.permuted_entries(n, local.indptr.astype(np.int64), local.indices.astype(np.int32), local.data,
                               rows.astype(np.int64), np.zeros(n, dtype=np.int32), col_order, r, c)
