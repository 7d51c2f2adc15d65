"""Topology and row partitions (no MPI)."""

import numpy as np
import pytest

from commsolve import Topology, gallery, make_topology
from commsolve.partition import owners, partition


def test_smp_and_round_robin():
    t = Topology.regular(6, 2)
    assert list(t.node_of_rank) == [0, 0, 1, 1, 2, 2]
    assert [t.local_rank(r) for r in range(6)] == [0, 1, 0, 1, 0, 1]
    rr = Topology.regular(6, 2, "round-robin")
    assert list(rr.node_of_rank) == [0, 1, 2, 0, 1, 2]
    assert rr.ranks_on_node(1) == [1, 4]
    assert rr.same_node(0, 3) and not rr.same_node(0, 1)


def test_node_list_renumbers_in_order_of_appearance():
    t = make_topology(nodes=[7, 7, 3, 9, 3], size=5)
    assert list(t.node_of_rank) == [0, 0, 1, 2, 1]
    assert t.num_nodes == 3 and t.max_ppn == 2


@pytest.mark.parametrize("call,msg", [
    (lambda: Topology.regular(6, 4), "does not divide the world size 6"),
    (lambda: Topology.regular(2, 4), "larger than the world size"),
    (lambda: Topology.regular(4, 0), "ppn must be at least 1"),
    (lambda: Topology.regular(4, 2, "zigzag"), "unknown layout"),
    (lambda: make_topology(nodes=[0, 1], size=3), "2 entries for 3 ranks"),
    (lambda: make_topology(nodes=[0, -1]), "negative"),
    (lambda: make_topology(ppn=2), "needs the world size"),
])
def test_topology_errors(call, msg):
    with pytest.raises(ValueError, match=msg):
        call()


def test_contiguous_is_balanced():
    d = partition(10, 4)
    assert list(d.offsets) == [0, 3, 6, 8, 10]
    assert list(d.owners_of(np.arange(10, dtype=np.int64))) == [0, 0, 0, 1, 1, 1, 2, 2, 3, 3]


def test_strided():
    d = partition(gallery.poisson2d(3), 4, "strided")
    assert list(d.owned(1)) == [1, 5]
    assert d.local_size(0) == 3


def edge_cut(A, own):
    A = A.tocoo()
    return int(np.sum(own[A.row] != own[A.col]))


def test_metis_is_balanced_and_cuts_less_than_strided():
    A = gallery.poisson2d(32)
    own = owners(A, 4, "metis", seed=1)
    sizes = np.bincount(own, minlength=4)
    assert sizes.min() > 0 and sizes.max() <= 1.1 * A.shape[0] / 4
    assert edge_cut(A, own) < edge_cut(A, owners(A, 4, "strided")) / 4
    assert np.array_equal(own, owners(A, 4, "metis", seed=1))  # deterministic


@pytest.mark.parametrize("method", ["contiguous", "strided", "metis"])
def test_more_ranks_than_rows(method):
    with pytest.raises(ValueError, match="more ranks than rows"):
        partition(gallery.poisson2d(3), 10, method)


def test_unknown_method():
    with pytest.raises(ValueError, match="unknown partition method"):
        partition(gallery.poisson2d(3), 2, "random")
