"""Tree shapes (no MPI): the PSelInv paper's examples, spanning trees, depth, statistics."""

import numpy as np
import pytest

from commsolve import make_topology, trees


def links(C, topo, shape, **kw):
    """{rank: (parent, children)} of collective 0."""
    out = {}
    for p in trees.plans(C, topo, shape=shape, **kw):
        for i, c in enumerate(p.index):
            if c == 0:
                out[p.rank] = (int(p.parents[i]), p.children(i))
    return out


def test_binary_tree_of_the_paper():
    # Figure 3(b): P1..P6, root P4: P4 -> P1, P5; P1 -> P2, P3; P5 -> P6.
    C = trees.Collectives.from_list([(0, "broadcast", 4, [1, 2, 3, 4, 5, 6], 1)])
    t = links(C, make_topology(size=7, ppn=1), "binary")
    assert t[4] == (-1, [1, 5]) and t[1] == (4, [2, 3]) and t[5] == (4, [6])
    assert t[2] == (1, []) and t[6] == (5, [])


def test_flat_tree():
    C = trees.Collectives.from_list([(0, "reduce", 2, [0, 1, 2, 3], 1)])
    t = links(C, make_topology(size=4, ppn=1), "flat")
    assert t[2] == (-1, [0, 1, 3]) and all(t[r] == (2, []) for r in (0, 1, 3))


def test_shifted_binary_rotates_receivers_deterministically():
    C = trees.Collectives.from_list([(c, "broadcast", 0, list(range(16)), 1) for c in range(40)])
    topo = make_topology(size=16, ppn=1)
    a = trees.plans(C, topo, shape="shifted-binary", seed=3)
    b = trees.plans(C, topo, shape="shifted-binary", seed=3)
    assert all(np.array_equal(x.parents, y.parents) for x, y in zip(a, b))
    first_children = {tuple(a[0].children(i)) for i in range(40)}
    assert len(first_children) > 5  # different collectives pick different internal nodes
    binary = trees.plans(C, topo, shape="binary")
    assert {tuple(binary[0].children(i)) for i in range(40)} == {(1, 9)}


def test_need_ordered_puts_early_consumers_near_the_root():
    C = trees.Collectives.from_list([(0, "broadcast", 0, [0, 7, 3, 5, 1, 2, 4, 6], 1)])
    t = links(C, make_topology(size=8, ppn=1), "need-ordered")
    assert t[0][1] == [7, 2]  # need order 7, 3, 5, 1 | 2, 4, 6: heads of the halves


def test_node_aware_crosses_each_node_once():
    C = trees.Collectives.from_list([(0, "broadcast", 5, list(range(16)), 1)])
    topo = make_topology(size=16, ppn=4)
    stats = trees.stats(trees.plans(C, topo, shape="node-aware"), C, topo)
    inter = sum(s.total()["msgs_sent_inter"] for s in stats)
    assert inter == 3  # one message into each of the other three nodes


@pytest.mark.parametrize("shape", trees.SHAPES)
def test_every_participant_reached_once_and_binary_depth_is_logarithmic(shape):
    C = trees.random_collectives(64, 60, seed=2)
    topo = make_topology(size=64, ppn=8)
    plans = trees.plans(C, topo, shape=shape, flat_threshold=4)
    for c in range(len(C)):
        parent = {}
        for p in plans:
            for i, cc in enumerate(p.index):
                if cc == c:
                    parent[p.rank] = int(p.parents[i])
        assert set(parent) == set(C.participants[c])
        assert [r for r, q in parent.items() if q < 0] == [C.roots[c]]
        for r in parent:  # every participant reaches the root: a spanning tree
            seen, depth = set(), 0
            while parent[r] >= 0:
                assert r not in seen
                seen.add(r)
                r, depth = parent[r], depth + 1
            if shape in ("binary", "shifted-binary", "need-ordered"):
                assert depth <= np.ceil(np.log2(len(C.participants[c]) + 1))


def test_stats_balance_sent_and_received():
    C = trees.random_collectives(32, 200, seed=1)
    topo = make_topology(size=32, ppn=4)
    for shape in trees.SHAPES:
        arr = np.array([s.array for s in trees.stats(trees.plans(C, topo, shape=shape), C, topo)])
        assert np.array_equal(arr[:, :, 0:4].sum(axis=0), arr[:, :, 4:8].sum(axis=0))


@pytest.mark.parametrize("records,msg", [
    ([(0, "broadcast", 3, [0, 1], 1)], "root 3 is not a participant"),
    ([(0, "broadcast", 0, [0, 1, 1], 1)], "participant 1 repeated"),
    ([(0, "reduce", 0, [0, 9], 1)], "participant 9 outside"),
    ([(0, "reduce", 0, [0, 1], -2)], "negative count"),
])
def test_bad_collectives(records, msg):
    with pytest.raises(ValueError, match=msg):
        trees.plans(trees.Collectives.from_list(records), make_topology(size=4, ppn=1))


def test_unknown_shape_and_kind():
    C = trees.Collectives.from_list([(0, "broadcast", 0, [0, 1], 1)])
    with pytest.raises(ValueError, match="unknown tree shape 'star'"):
        trees.plans(C, make_topology(size=2, ppn=1), shape="star")
    with pytest.raises(ValueError, match="kind must be 'broadcast' or 'reduce', got 'gossip'"):
        trees.Collectives.from_list([(0, "gossip", 0, [0, 1], 1)])


@pytest.mark.parametrize("shape", trees.SHAPES)
def test_streaming_stats_equal_plan_stats(shape):
    C = trees.random_collectives(24, 150, seed=7)
    topo = make_topology(size=24, ppn=4)
    a = trees.stats(trees.plans(C, topo, shape=shape, seed=1), C, topo)
    b = trees.virtual_stats(C, topo, shape=shape, seed=1)
    assert a == b


def test_model_prices_trees_and_chooses_the_auto_threshold():
    C = trees.random_collectives(64, 120, seed=3, max_count=2000)
    topo = make_topology(size=64, ppn=8)
    best, times = trees.choose_threshold(C, topo, "bluewaters", candidates=(1, 8, 64))
    assert best == min(times, key=times.get) and len(times) == 3
    # threshold 64 makes every tree flat, 1 makes every tree shifted-binary
    flat = trees.price(trees.plans(C, topo, "flat"), C, topo, "bluewaters").time
    shifted = trees.price(trees.plans(C, topo, "shifted-binary"), C, topo, "bluewaters").time
    assert times[64] == pytest.approx(flat) and times[1] == pytest.approx(shifted)
