"""The 2.5D dense algorithms without MPI (issue 33): grids and layouts, plans counted for
every rank against counts made here from the algorithms' definitions and against the
formulas' leading terms, and the simulator's replay (its messages are the plan's; a 2.5D
grid moves fewer words per rank than a 2D one at scale)."""

import numpy as np
import pytest

from commsolve import _core, dense
from commsolve.model.profile import load_profile
from commsolve.sim import simulate_dense
from commsolve.sim.dense import square_grids
from commsolve.topology import Topology


def words(stats, roles):
    return np.array([s.words_received(roles) for s in stats], dtype=float)


def panel_roles(kind):
    return [i for i, r in enumerate(dense.ROLES[kind]) if r.startswith("panel")]


def test_grids_are_parsed_and_checked():
    assert dense.parse_grid25("2x2x2", 8) == (2, 2, 2)
    assert dense.parse_grid25("2x3", 6) == (2, 3, 1)
    assert dense.parse_grid25(None, 6) == (2, 3, 1)
    assert dense.default_grid25(7) == (1, 7, 1)
    for bad, msg in (("2x2x2", "has 8 ranks, the communicator 4"), ("2xa", "expected PRxPCxC"),
                     ("0x4x1", "three positive")):
        with pytest.raises(ValueError, match=msg):
            dense.parse_grid25(bad, 4)


def test_block_cyclic_indices_as_scalapack_lays_them_out():
    # 10 indices in blocks of 3 over 2 processes: blocks 0 and 2 on process 0, 1 and 3 on 1
    assert _core.cyclic_indices(10, 3, 2, 0).tolist() == [0, 1, 2, 6, 7, 8]
    assert _core.cyclic_indices(10, 3, 2, 1).tolist() == [3, 4, 5, 9]
    assert _core.cyclic_indices(2, 5, 3, 2).tolist() == []
    with pytest.raises(ValueError):
        _core.cyclic_indices(10, 0, 2, 0)


def test_bad_sizes_are_refused_naming_them():
    with pytest.raises(ValueError, match="extents must be >= 0"):
        _core.dense_plan("matmul", -1, 2, 2, 4, (1, 1, 1))
    with pytest.raises(ValueError, match="block and piece sizes >= 1"):
        _core.dense_plan("lu", 8, 8, 8, 0, (1, 1, 1))
    with pytest.raises(ValueError, match="square"):
        _core.dense_plan("lu", 8, 6, 8, 2, (1, 1, 1))
    with pytest.raises(ValueError, match="every extent must be at least 1"):
        _core.dense_plan("matmul", 8, 8, 8, 2, (1, 0, 1))


@pytest.mark.parametrize("grid", [(4, 4, 2), (4, 4, 4), (8, 8, 2), (8, 8, 4)])
def test_multiply_moves_the_leading_term_exactly_on_divisible_sizes(grid):
    q, _, c = grid
    n = 64 * q
    w = words(dense.virtual_stats("matmul", n, n, n, grid, nb=32), panel_roles("matmul"))
    # 2 n^2 / sqrt(c p) words of panels reach the ranks that own none of their layer's panels
    assert w.max() == dense.words_leading_term("matmul", n, n, n, grid) == 2 * n * n / np.sqrt(c * q * q * c)


def test_replication_cuts_the_words_per_rank_by_sqrt_c():
    n, p = 4096, 256
    got = {c: words(dense.virtual_stats("matmul", n, n, n, g, nb=64), panel_roles("matmul")).max()
           for g in square_grids(p, (1, 4, 16)) for c in [g[2]]}
    # c = 1: each rank owns 1 of its q panels (1 - 1/q of the leading term); c = 4, 16: exactly it
    assert got[1] / got[4] == pytest.approx(2 * (1 - 1 / 16)) and got[4] / got[16] == pytest.approx(2)


def test_lu_panel_words_equal_a_count_from_the_algorithm():
    n, nb, grid = 640, 32, (4, 4, 2)
    pr, pc, c = grid
    K = n // nb
    w = words(dense.virtual_stats("lu", n, n, n, grid, nb=nb), panel_roles("lu"))

    def after(p, k, proc):  # indices proc holds in blocks > k
        return sum(nb for b in range(k + 1, K) if b % p == proc)

    for r in range(pr * pc * c):
        z, x, y = r // (pr * pc), (r % (pr * pc)) // pc, r % pc
        hand = 0
        for k in range(K):
            zk, xk, yk = k % c, k % pr, k % pc
            ra, ca = after(pr, k, x), after(pc, k, y)
            if z == zk:  # the eliminating layer: L along rows, U along columns, to ranks with a trailing share
                hand += (y != yk and ra > 0 and ca > 0) * ra * nb + (x != xk and ra > 0 and ca > 0) * ca * nb
            elif z == 0:  # layer 0 gathers the factors eliminated elsewhere
                hand += (y == yk) * ra * nb + (x == xk) * ca * nb
        assert w[r] == hand, r


def test_the_simulator_sends_what_the_plans_say():
    prof = load_profile("intrepid-bgp")
    for kind, grid in (("matmul", (2, 2, 2)), ("lu", (3, 3, 1)), ("lu", (2, 2, 4))):
        r = simulate_dense(kind, 300, grid, prof, nb=32, ppn=4, tree="binary")
        planned = dense.virtual_stats(kind, 300, 300, 300, grid, nb=32, ppn=4)
        assert all(np.array_equal(a.array, b.array) for a, b in zip(r.recorded, planned)), (kind, grid)
        assert r.predicted_s > 0


def test_the_simulated_pivoted_lu_sends_what_the_plans_say_and_swaps_rows():
    prof = load_profile("intrepid-bgp")
    swap = dense.ROLES["lu"].index("swap")
    for grid in ((3, 3, 1), (2, 2, 4), (1, 4, 1)):
        r = simulate_dense("lu", 300, grid, prof, nb=32, ppn=4, tree="binary", pivoting="tournament")
        planned = dense.virtual_stats("lu", 300, 300, 300, grid, nb=32, ppn=4, pivoting="tournament")
        assert all(np.array_equal(np.delete(a.array, swap, 0), np.delete(b.array, swap, 0))
                   for a, b in zip(r.recorded, planned)), grid
        swapped = sum(s.words_received([swap]) for s in r.recorded)
        assert (swapped > 0) == (grid[0] > 1), grid  # one process row: every swap stays on its rank
        plain = simulate_dense("lu", 300, grid, prof, nb=32, ppn=4, tree="binary")
        assert r.predicted_s > plain.predicted_s > 0, grid  # the tournament and the swaps cost time


def test_the_simulated_2_5d_grid_moves_fewer_words_per_rank():
    prof = load_profile("intrepid-bgp")
    got = {}
    for g in square_grids(256, (1, 4)):
        r = simulate_dense("matmul", 2048, g, prof, nb=64)
        got[g[2]] = words(r.recorded, panel_roles("matmul")).max()
    assert got[1] / got[4] == pytest.approx(2 * (1 - 1 / 16))


@pytest.mark.parametrize("kind,tournament", [("matmul", False), ("lu", False), ("lu", True)])
def test_an_mpi_ranks_plan_is_its_part_of_the_whole(kind, tournament):
    grid, whole = (2, 3, 2), _core.dense_plan(kind, 90, 90, 90, 8, (2, 3, 2), piece=50, tournament=tournament)
    S = whole["set"]
    members = [set(S.part[S.part_ptr[c]:S.part_ptr[c + 1]].tolist()) for c in range(len(S))]
    for rank in range(12):
        mine = _core.dense_plan(kind, 90, 90, 90, 8, grid, piece=50, rank=rank, tournament=tournament)
        assert mine["set"].id.tolist() == [c for c in range(len(S)) if rank in members[c]]
        assert mine["set"].count.tolist() == S.count[mine["set"].id].tolist()


def test_layers_first_placement_keeps_the_sums_along_z_inside_nodes():
    prof = load_profile("intrepid-bgp")
    roles = [dense.ROLES["lu"].index(r) for r in ("reduce_col", "reduce_row")]

    def inter_node_bytes(placement, torus=None):
        r = simulate_dense("lu", 256, (2, 2, 4), prof, nb=16, ppn=4, placement=placement, torus=torus)
        return sum(int(s.array[roles, 3].sum()) for s in r.recorded)  # bytes sent to other nodes

    assert inter_node_bytes("ranks") > 0 and inter_node_bytes("layers") == 0
    assert inter_node_bytes("layers", torus=[2, 2, 1]) == 0
    with pytest.raises(ValueError, match="placement must be one of ranks, layers"):
        simulate_dense("lu", 256, (2, 2, 4), prof, nb=16, ppn=4, placement="diagonal")
    with pytest.raises(ValueError, match="placed on node 9, outside the torus's"):
        Topology.torus_placed([2, 2], [0, 1, 9])
