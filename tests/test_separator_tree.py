"""Nested dissection with an explicit separator tree (issue 6, item 1)."""

import numpy as np
import pytest
import scipy.sparse as sp

from commsolve import gallery
from commsolve.direct import supernodal_structure

CASES = [("poisson2d9:60", 3), ("poisson3d:14", 2), ("aniso2d:50,theta=30", 4), ("random:rows=800,nnz_per_row=5", 2)]


def structure(spec, levels, relax_subtree, max_size=16):
    A = gallery.from_spec(spec)
    return A, supernodal_structure(A, max_size, "tree", levels, relax=0, relax_subtree=relax_subtree)


RELAX = pytest.mark.parametrize("relax_subtree", [0, 16])  # 16: postorder renumbering too


@RELAX
@pytest.mark.parametrize("spec,levels", CASES)
def test_tree_shape_and_column_ranges(spec, levels, relax_subtree):
    A, S = structure(spec, levels, relax_subtree)
    T = S.tree
    n = A.shape[0]
    assert sorted(S.perm) == list(range(n))
    assert T.parent[T.root] == -1 and T.level[T.root] == 0
    covered = np.zeros(n, dtype=int)
    for k in range(T.num_nodes):
        covered[T.col_start[k]:T.col_end[k]] += 1
        for child in (T.left[k], T.right[k]):
            if child >= 0:
                assert child < k and T.parent[child] == k and T.level[child] == T.level[k] + 1
        assert (T.left[k] < 0) == (T.right[k] < 0)  # binary: two children or none
        if T.left[k] >= 0:  # postorder: left subtree, right subtree, then the separator
            lo, _ = T.subtree_columns(T.left[k])
            _, hi = T.subtree_columns(T.right[k])
            assert (lo, T.col_end[k]) == T.subtree_columns(k) and hi == T.col_start[k]
    assert np.all(covered == 1)
    assert T.level.max() <= levels


@RELAX
@pytest.mark.parametrize("spec,levels", CASES)
def test_separators_separate(spec, levels, relax_subtree):
    A, S = structure(spec, levels, relax_subtree)
    T = S.tree
    position = np.empty(A.shape[0], dtype=np.int64)
    position[S.perm] = np.arange(A.shape[0])
    G = sp.coo_matrix(abs(A) + abs(A).T)
    pi, pj = position[G.row], position[G.col]
    for k in range(T.num_nodes):
        if T.left[k] < 0:
            continue
        l0, l1 = T.subtree_columns(T.left[k])
        r0, r1 = T.subtree_columns(T.right[k])
        crossing = ((pi >= l0) & (pi < l1) & (pj >= r0) & (pj < r1))
        assert not crossing.any(), f"edge across separator node {k}"


@RELAX
@pytest.mark.parametrize("spec,levels", CASES)
def test_supernodes_stay_inside_tree_nodes(spec, levels, relax_subtree):
    _, S = structure(spec, levels, relax_subtree)
    T = S.tree
    assert T.sn_first[0] == 0 and T.sn_last[T.root] == S.nsuper
    for k in range(T.num_nodes):
        for s in range(T.sn_first[k], T.sn_last[k]):
            assert T.col_start[k] <= S.sn_start[s] and S.sn_start[s + 1] <= T.col_end[k]


def test_fill_close_to_metis_nested_dissection():
    A = gallery.poisson2d9(120)
    tree = supernodal_structure(A, 32, "tree", 4, relax=0, relax_subtree=0).nnz_L
    nd = supernodal_structure(A, 32, "nd", relax=0, relax_subtree=0).nnz_L
    assert tree <= 1.25 * nd


def test_zero_levels_is_one_subdomain_and_disconnected_graphs_work():
    A = gallery.poisson2d(10)
    S = supernodal_structure(A, 8, "tree", 0, relax=0, relax_subtree=0)
    assert S.tree.num_nodes == 1 and S.tree.col_end[0] == 100
    two_blocks = sp.block_diag([gallery.poisson2d(8), gallery.poisson2d(8)]).tocsr()
    S2 = supernodal_structure(two_blocks, 8, "tree", 3, relax=0, relax_subtree=0)
    assert sorted(S2.perm) == list(range(128))
    with pytest.raises(ValueError, match="levels must be >= 0"):
        supernodal_structure(A, 8, "tree", -1)
