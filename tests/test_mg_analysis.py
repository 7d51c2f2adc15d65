"""MGCG's virtual-scale analysis (issue 31): its per-dimension message counts against the
virtual world's real plans of the same levels (stencil, interpolation and move patterns built
as matrices, distributed by the same owners), and the seed's reason for hCGA at 65,536 ranks."""

import json
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from commsolve import gallery, virtual
from commsolve.mg.analysis import (Level, analyze_mgcg, interpolation_messages, level_messages, move_messages,
                                   process_grid)
from commsolve.partition import Distribution
from commsolve.topology import make_topology


def _owner(level):
    ox, oy, oz = level.owners
    px, py, _ = level.procs
    nx, ny, nz = level.grid
    g = np.arange(nx * ny * nz)
    return (ox[g % nx] + px * (oy[(g // nx) % ny] + py * oz[g // (nx * ny)])).astype(np.int32)


def _stencil(grid, points):
    offs = [o for o in np.ndindex(3, 3, 3)]
    offs = [np.array(o) - 1 for o in offs if points == 27 or sum(abs(np.array(o) - 1)) <= 1]
    return sp.csr_matrix(gallery.stencil_matrix(grid, offs, np.ones(len(offs))))


def _aggregation(fine, coarse):
    nx, ny, nz = fine.grid
    cx, cy, _ = coarse.grid
    g = np.arange(nx * ny * nz)
    agg = (g % nx) // 2 + cx * (((g // nx) % ny) // 2 + cy * ((g // (nx * ny)) // 2))
    return sp.csr_matrix((np.ones(g.size), (g, agg)), shape=(g.size, coarse.rows))


def _per_rank(msgs, P):
    recv, send, nbytes = msgs
    return np.bincount(recv, minlength=P), np.bincount(send, nbytes, minlength=P).astype(np.int64)


def _planned(A, rows, cols, P):
    topo = make_topology(size=P, ppn=1)
    stats = virtual.plan_stats(virtual.plans(A, rows, cols, topology=topo), topo)
    got = np.array([s.total()["msgs_recv_intra"] + s.total()["msgs_recv_inter"] for s in stats])
    sent = np.array([s.total()["bytes_sent_intra"] + s.total()["bytes_sent_inter"] for s in stats])
    return got, sent


@pytest.mark.parametrize("procs,per_rank,stencil", [(8, 4, 7), (12, 2, 7), (8, 4, 27), (12, 3, 27)])
def test_counts_match_the_virtual_worlds_plans(procs, per_rank, stencil):
    dims = process_grid(procs)
    grid = tuple(per_rank * p for p in dims)
    level = Level(grid, tuple((np.arange(g) // per_rank).astype(np.int64) for g in grid), dims)
    checked = 0
    while True:
        P = level.nranks
        dist = Distribution.from_owners(_owner(level), P)
        want = _planned(_stencil(level.grid, stencil), dist, dist, P)
        got = _per_rank(level_messages(level, stencil), P)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), (level.grid, got, want)
        if level.rows == 1:
            break
        coarse = level.coarser()
        cdist = Distribution.from_owners(_owner(coarse), P)
        want = _planned(_aggregation(level, coarse), dist, cdist, P)  # interpolation: P x_c needs coarse values
        got = _per_rank(interpolation_messages(level, coarse), P)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), ("P", level.grid)
        level = coarse
        checked += 1
    assert checked >= 2


@pytest.mark.parametrize("group", [2, 4, 8])
def test_move_counts_match_the_redistributions_plan(group):
    from commsolve.redistribute import _target_distributions

    dims = (4, 2, 2)
    grid = (8, 4, 4)
    level = Level(grid, tuple((np.arange(g) // 2).astype(np.int64) for g in grid), dims)
    P = level.nranks
    src = Distribution.from_owners(_owner(level), P)
    target, _ = _target_distributions(src, group)  # the library's own groups of consecutive ranks
    R = sp.identity(level.rows, format="csr")
    want = _planned(R, target, src, P)
    got = _per_rank(move_messages(level, group), P)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    moved = level.moved(group)
    assert np.array_equal(_owner(moved), np.asarray(target.owners_of(np.arange(level.rows)), dtype=np.int32) // group)


def test_the_seeds_reason_for_hcga_at_65536_ranks():
    r = analyze_mgcg(65536, 16, profile="bluewaters")
    assert r["process_grid"] == [64, 32, 32] and r["grid"] == [4096, 2048, 2048]
    flat, hier, none = (r["modes"][m] for m in ("flat", "hierarchical", "none"))
    moves = lambda m: [(lv["level"], lv["move"]["from"], lv["ranks"], lv["move"]["recv_max"])  # noqa: E731
                       for lv in m["levels"] if "move" in lv]
    # CGA: level 6 has one cell per rank (64^3 / 2^18), below 8: all 65,536 onto rank 0, which receives 65,535
    assert moves(flat) == [(6, 65536, 1, 65535)]
    # hCGA: level 5 (8 per rank, below 64) onto one rank per node (15 messages each); the leaders form a
    # 4 x 32 x 32 grid holding 16 x 1 x 1 cells each at level 6 (16 per rank: kept), and at level 7 (32 x 16 x 16
    # cells, aggregates owned by their first cell's rank) 1,024 of them hold 8 cells each (2 per rank, below 8):
    # onto one rank, which receives 1,023 messages
    assert moves(hier) == [(5, 65536, 4096, 15), (7, 4096, 1, 1023)]
    assert not moves(none)
    assert [lv["halo"]["recv_max"] for lv in none["levels"][:10]] == [6] * 10  # interior ranks: 6 faces
    assert flat["total"]["comm_s"] > 100 * hier["total"]["comm_s"]  # the gather onto one rank dominates
    for m in (flat, hier, none):
        assert np.isfinite(m["total"]["cycle_s"]) and m["total"]["cycle_s"] > 0


def test_auto_placement_is_the_cheapest_and_each_walk_costs_what_the_search_priced():
    r = analyze_mgcg(512, 16, per_rank=8, profile="intrepid-bgp", modes=("none", "flat", "hierarchical", "auto"))
    a, n = r["auto"], len(r["modes"]["none"]["levels"])
    modes = [c["mode"] for c in a["candidates"]]
    assert [modes.count(m) for m in ("none", "flat", "subset", "hierarchical")] == [1, n - 1, n - 1,
                                                                                     (n - 1) * (n - 2) // 2]
    assert a["chosen"] == min(a["candidates"], key=lambda c: c["cycle_s"])
    # The level-by-level walk of a placement (moving each level as it comes) costs what the search priced from
    # every level on all ranks, on the leaders and on one rank: the fixed modes and the chosen one alike.
    def moved_at(m):
        return [lv["level"] for lv in r["modes"][m]["levels"] if "move" in lv]

    priced = {(c["mode"], tuple(c["levels"])): c["cycle_s"] for c in a["candidates"]}
    walks = {("none", ()): "none", ("flat", tuple(moved_at("flat"))): "flat",
             ("hierarchical", tuple(moved_at("hierarchical"))): "hierarchical",
             (a["chosen"]["mode"], tuple(a["chosen"]["levels"])): "auto"}
    for key, mode in walks.items():
        assert r["modes"][mode]["total"]["cycle_s"] == pytest.approx(priced[key], rel=1e-9), key
    assert moved_at("auto") == a["chosen"]["levels"]


def test_a_move_commutes_with_coarsening():
    fine = Level((32, 16, 16), tuple(np.arange(e) // 4 for e in (32, 16, 16)), (8, 4, 4))
    for group in (2, 8, 32):
        a, b = fine.moved(group), fine
        for _ in range(4):
            a, b = a.coarser(), b.coarser()
            assert a.procs == b.moved(group).procs
            assert all(np.array_equal(x, y) for x, y in zip(a.owners, b.moved(group).owners))


def test_cli_analyze_mgcg():
    proc = subprocess.run([sys.executable, "-m", "commsolve", "analyze", "mgcg", "--procs", "4096", "--ppn", "16",
                           "--per-rank", "16", "--profile", "bluewaters", "--json"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    r = json.loads(proc.stdout)
    assert r["procs"] == 4096 and set(r["modes"]) == {"none", "flat", "hierarchical", "auto"}  # auto: priced
    assert r["modes"]["auto"]["total"]["cycle_s"] == pytest.approx(min(c["cycle_s"] for c in r["auto"]["candidates"]))
    text = subprocess.run([sys.executable, "-m", "commsolve", "analyze", "mgcg", "--procs", "64", "--ppn", "4",
                           "--per-rank", "8", "--cga", "hierarchical", "--hcga-group", "4"],
                          capture_output=True, text=True, timeout=300)
    assert text.returncode == 0 and "CGA hierarchical" in text.stdout, text.stderr[-2000:]
    legacy = subprocess.run([sys.executable, "-m", "commsolve", "analyze", "--workload", "mgcg", "--procs", "4096",
                             "--per-rank", "8", "--cga", "flat"], capture_output=True, text=True, timeout=300)
    assert legacy.returncode == 0 and "4,096 ranks (16 per node)" in legacy.stdout, legacy.stderr[-2000:]
    bad = subprocess.run([sys.executable, "-m", "commsolve", "analyze", "mgcg", "--procs", "64", "--ppn", "4",
                          "--hcga-group", "3"], capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and "do not tile" in bad.stderr


def test_amg_analysis_with_agglomeration():
    from commsolve.amg.analysis import analyze_amg, format_amg_analysis

    plain = analyze_amg(64, 4, gen="poisson3d:16", strategies=("standard",))
    moved = analyze_amg(64, 4, gen="poisson3d:16", strategies=("standard",), agglomerate=[(40, 4), (10, 1)],
                        profile="bluewaters")
    assert [lv["rows"] for lv in moved["levels"]] == [lv["rows"] for lv in plain["levels"]]
    moves = [(lv["level"], lv["move"]) for lv in moved["levels"] if "move" in lv]
    assert len(moves) == 2
    (k1, m1), (k2, m2) = moves
    rows = [lv["rows"] for lv in plain["levels"]]
    # the first level under 40 rows per rank moves onto 4 ranks (groups of 16), the first under 10 per rank of
    # those 4 onto 1; by hand: a leader receives from the other ranks of its group that hold rows
    assert rows[k1] < 40 * 64 <= rows[k1 - 1] and m1["ranks_to"] <= 4 and m1["ranks_from"] == plain["levels"][k1][
        "active_ranks"]
    assert rows[k2] < 10 * 4 and m2["ranks_to"] == 1 and m2["recv_msgs_max"] == m2["ranks_from"] - 1
    assert m1["recv_msgs_max"] <= 15 and m1["model_s"] > 0
    assert all(lv["active_ranks"] <= 4 for lv in moved["levels"][k1:])
    assert all(lv["active_ranks"] == 1 for lv in moved["levels"][k2:])
    assert "moved from" in format_amg_analysis(moved)
