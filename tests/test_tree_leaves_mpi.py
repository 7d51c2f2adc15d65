"""The ordering "tree" on several ranks (issue 35, the serial path): the root computes the
separator tree's top levels, each leaf is ordered by METIS on a rank of its own
(direct/leaf_ordering.hpp). On 2-4 ranks (3 and 4 oversubscribed), for six gallery families
(tests/mpi/tree_leaves_cases.py): the tree keeps log2 of the ranks as levels, the ordering
equals the one the separator tree computes alone on one process (so the fill is the serial
one), also with one level more (two leaves a rank); every rank that holds a leaf spent time
in METIS and the others none; factor()'s structure is the one for that ordering, and its
solve has a backward error of at most 1e-14 (computed in numpy from the matrix)."""

import pytest
from conftest import json_lines, mpirun

RANKS = [2, 3, 4]


@pytest.mark.parametrize("nprocs", RANKS)
def test_leaves_on_their_ranks_give_the_serial_ordering(nprocs):
    rows = json_lines(mpirun(nprocs, "tree_leaves_cases.py", nprocs).stdout)
    assert len(rows) == 6
    levels = nprocs.bit_length() - 1
    for r in rows:
        what = f"{r['family']} on {nprocs} ranks"
        assert r["levels"] == levels and r["leaves"] == 2 ** levels, what
        assert r["permutation"] and r["by_hand_equals_alone"] and r["factor_equals_alone"], what
        assert r["deeper_leaves"] == 2 * r["leaves"] and r["two_a_rank_equal_alone"], what
        # leaf i on rank (root + i) mod P, and only there
        seconds, holders = r["metis_seconds"], {(r["root"] + i) % nprocs for i in range(r["leaves"])}
        assert len(seconds) == nprocs and r["root"] == nprocs - 1, what
        assert all((s > 0) == (rank in holders) for rank, s in enumerate(seconds)), what
        # factor() on rank 0 went the same way: log2 P levels, the leaves ordered by the collective
        assert r["factor_levels"] == levels, what
        assert {"graph", "nested_dissection", "leaf_ordering", "permute", "symbolic"} <= set(r["ordering_parts"]), what
        assert r["berr"] <= 1e-14, what  # NaN fails too
        assert r["err"] <= 1e-9, what


def test_on_one_rank_and_its_refusals():
    """In this process (MPI_COMM_SELF): one leaf, or four on the one rank, are ordered as
    separator_tree alone orders them; a root without its graph is refused in words."""
    import numpy as np
    from mpi4py import MPI

    from commsolve import _core, gallery
    from commsolve.partition import adjacency_graph

    G = adjacency_graph(gallery.poisson2d(12))
    alone = _core.separator_tree(G.indptr, G.indices, 0)
    tree, seconds = _core.order_leaves_on_ranks(MPI.COMM_SELF.py2f(), 0, G.indptr, G.indices,
                                                _core.separator_tree(G.indptr, G.indices, 0, order_leaves=False))
    assert np.array_equal(np.asarray(tree.perm), np.asarray(alone.perm)) and seconds > 0
    alone = _core.separator_tree(G.indptr, G.indices, 2)  # 4 leaves on one rank
    tree, _ = _core.order_leaves_on_ranks(MPI.COMM_SELF.py2f(), 0, G.indptr, G.indices,
                                          _core.separator_tree(G.indptr, G.indices, 2, order_leaves=False))
    assert np.array_equal(np.asarray(tree.perm), np.asarray(alone.perm))
    with pytest.raises(ValueError, match="the root needs the graph and tree"):
        _core.order_leaves_on_ranks(MPI.COMM_SELF.py2f(), 0)
