"""Torus topologies, binomial and rectangular trees, and the simulator's shared links (issue
33): routes counted by hand, trees whose edges join torus neighbours, the wait a shared link
causes equal to one message's time on it, and a multicast study where rectangular trees beat
binomial ones as the seed's models say."""

import numpy as np
import pytest

from commsolve import _core, trees
from commsolve.model.profile import load_profile
from commsolve.sim import simulate_collectives
from commsolve.sim.collectives import CollectivesSchedule
from commsolve.sim.multicast import link_loads, multicast_set, multicast_study
from commsolve.topology import Topology


def test_torus_coordinates_and_dimension_ordered_routes():
    t = Topology.torus([4, 3, 2], 2)
    assert (t.size, t.num_nodes, t.torus_dims) == (48, 24, [4, 3, 2])
    # node 23 = (3, 2, 1): one hop back in x (wrap), one back in y (wrap), one up in z
    assert t.hops(0, 23) == 3
    assert t.route(0, 23).tolist() == [(0 * 3 + 0) * 2 + 1, (3 * 3 + 1) * 2 + 1, (11 * 3 + 2) * 2]
    assert t.route(5, 5).tolist() == [] and t.hops(5, 5) == 0
    assert t.node_of(3) == 1


def edges(collectives, topo, shape):
    out = []
    for p in _core.build_tree_plans_virtual(collectives.core, trees.tree_shape(shape), topo):
        out += [(int(par), p.rank) for par in p.parents if par >= 0]
    return out


@pytest.mark.parametrize("dims", [[4, 4], [4, 3, 2], [8]])
def test_rectangular_trees_join_torus_neighbours_and_reach_everyone(dims):
    topo = Topology.torus(dims, 1)
    S = multicast_set(topo, 8 * 100, 8 * 10)  # 10 pieces: different dimension orders
    assert len(S) == 10
    e = edges(S, topo, "rectangular")
    assert all(topo.hops(a, b) == 1 for a, b in e)  # every hop one link
    assert len(e) == len(S) * (topo.num_nodes - 1)  # a spanning tree per piece
    binomial = edges(S, topo, "binomial")
    assert max(topo.hops(a, b) for a, b in binomial) > 1


def test_rectangular_pieces_spread_over_the_roots_links():
    topo = Topology.torus([4, 4, 4], 1)
    S = multicast_set(topo, 8 * 60, 8 * 10)  # 6 pieces: one per tree (first dimension, direction)
    loads = link_loads(S, topo, "rectangular")
    root_links = [(0 * 3 + d) * 2 + way for d in range(3) for way in (0, 1)]  # node 0's six links
    # each tree leaves the root once per dimension, in its direction: 3 of the 6 pieces on each link
    assert loads[root_links].tolist() == [3 * 8 * 11] * 6


def test_binomial_trees_as_mpich_builds_them():
    S = trees.Collectives([0], ["broadcast"], [0], [list(range(8))], [1])
    p = {q.rank: q for q in _core.build_tree_plans_virtual(S.core, trees.tree_shape("binomial"), Topology.regular(8, 1))}
    assert p[0].children(0) == [4, 2, 1] and p[1].children(0) == [5, 3] and p[2].children(0) == [6]
    assert [int(p[r].parents[0]) for r in range(1, 8)] == [0, 0, 1, 0, 1, 2, 3]


def test_a_shared_link_delays_the_second_message_by_the_first_ones_time_on_it():
    prof = load_profile("intrepid-bgp")
    topo = Topology.torus([8], 1)
    n = 50_000  # values: 400 KB, far above any overhead

    def finish(src):  # node 0 -> 2 (links 0+, 1+) and node src -> 2 at the same time
        S = trees.Collectives([0, 1], ["broadcast"] * 2, [0, src], [[0, 2], [src, 2]], [n, n])
        return simulate_collectives(CollectivesSchedule(S, "flat"), topo, prof).predicted_s

    shared, apart = finish(1), finish(3)  # 1 -> 2 crosses link 1+ too; 3 -> 2 comes the other way
    # Apart, both arrive at T and rank 2 handles them one after the other: T + 2 (o + store);
    # shared, the second arrives s / B later, after the first is handled: T + s / B + o + store.
    store = 16 * n / prof.compute["copy_rate"]  # the values copied out of the message
    wait = 8 * (n + 1) / prof.torus["link_rate"]
    assert shared - apart == pytest.approx(wait - prof.overhead - store, rel=1e-9)
    assert wait > prof.overhead + store


def test_rectangular_multicast_beats_binomial_as_the_models_say():
    s = multicast_study([8, 8], 1 << 20, "intrepid-bgp", piece_bytes=32768)
    sim, model = s["rectangular_over_binomial"], s["models"]["rectangular_over_binomial"]
    assert sim > 3 and model > 3
    assert s["shapes"]["rectangular"]["max_link_bytes"] < s["shapes"]["binomial"]["max_link_bytes"]
    # the binomial tree's long edges load some links with several copies of the message
    loads = link_loads(multicast_set(Topology.torus([8, 8], 1), 1 << 20, 32768), Topology.torus([8, 8], 1), "binomial")
    assert loads.max() >= 2 * (1 << 20)
