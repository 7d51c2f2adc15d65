"""The discrete-event simulator: tiny schedules whose times are worked out by hand from the
model's parameters, what goes through the simulated network equal to the plans' statistics,
and clear errors."""

import json
import subprocess
import sys

import numpy as np
import pytest

import commsolve as cs
from commsolve import gallery
from commsolve.direct import ALGORITHMS, symbolic
from commsolve.model.profile import ProfileError, load_profile
from commsolve.topology import make_topology
from commsolve.direct import SupernodalStructure
from commsolve.workloads import sptrsv3d_stats

ALPHA, RATE, O = 2.0e-6, 1.0e9, 0.3e-6  # intra-node short messages; overhead o per message end
MSG = 16  # bytes of a one-value solve message: the key (8) and the value (8)


def profile_text(flop_rate=1e30, bandwidth=1e30, call_overhead=0.0, overhead=O, compute=True, copy_rate=1e30,
                 cache=None, triangular_rate=None):
    """Every intra-node protocol with ALPHA and RATE (inter-node 10x slower); compute free by
    default, so that a schedule's time is its messages' alone. ``cache``: (bytes per node,
    bandwidth) of a last-level cache."""
    lines = ['name = "handmade"', "short_max = 512", "eager_max = 8192", "gamma = 0.0", "delta = 0.0", "ppn = 64",
             f"overhead = {overhead!r}", "[intra_node]"]
    lines += [f"{p} = {{ alpha = {ALPHA!r}, rate = {RATE!r} }}" for p in ("short", "eager", "rend")]
    lines += ["[inter_node]"] + [f"{p} = {{ alpha = {10 * ALPHA!r}, rate = {RATE / 10!r} }}"
                                 for p in ("short", "eager", "rend")]
    if compute:
        lines += ["[compute]", f"flop_rate = {flop_rate!r}", f"bandwidth = {bandwidth!r}",
                  f"call_overhead = {call_overhead!r}", f"copy_rate = {copy_rate!r}"]
        if cache is not None:
            lines += [f"cache_bytes = {cache[0]!r}", f"cache_bandwidth = {cache[1]!r}"]
        if triangular_rate is not None:
            lines += [f"triangular_rate = {triangular_rate!r}"]
    return "\n".join(lines) + "\n"


def load_profile_text(tmp_path, text, name="handmade"):
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return load_profile(str(path))


@pytest.fixture
def profile(tmp_path):
    return load_profile_text(tmp_path, profile_text())


def structure(n, below):
    """Width-1 supernodes 0..n-1; ``below[s]``: the rows of L under supernode s."""
    rows_ptr = np.cumsum([0] + [len(below.get(s, ())) for s in range(n)]).astype(np.int64)
    rows = np.array([r for s in range(n) for r in sorted(below.get(s, ()))], np.int32)
    return SupernodalStructure(perm=np.arange(n, dtype=np.int32), parent=np.full(n, -1, np.int32),
                               sn_start=np.arange(n + 1, dtype=np.int64), rows_ptr=rows_ptr, rows=rows,
                               nnz_L=n + rows.size)


def simulate(S, grid, profile, tree="flat", **options):
    P = int(np.prod(grid))
    sched = cs.sim.solve_schedule(S, grid, "2d", tree=tree, distribute_rhs=False, **options)
    return cs.sim.simulate(sched, make_topology(nodes=[0] * P, size=P), profile), sched


def test_chain_is_four_hops(profile):
    # L(1,0), L(2,1) on a 1x2 grid: column k on rank k mod 2, so the lower solve passes a
    # partial sum 0 -> 1 -> 0 and the upper solve (U = L^T) 0 -> 1 -> 0: four messages in a
    # row, each alpha + s / R after the last (o at both ends is inside alpha).
    r, _ = simulate(structure(3, {0: [1], 1: [2]}), (1, 2, 1), profile)
    assert r.predicted_s == pytest.approx(4 * (ALPHA + MSG / RATE), rel=1e-9)
    assert int(r.messages[:, 0].sum()) == 4
    assert [h[0] for h in r.critical_path] == [0, 1, 0, 1, 0]  # back from the last receiver


def test_flat_broadcast(profile):
    # L(1,0), L(2,0), L(3,0) on a 4x1 grid: column 0's blocks on ranks 1..3 (row mod 4). The
    # lower solve broadcasts x0 from rank 0 to three ranks: the k-th send (k = 1, 2, 3) leaves
    # at k o + s/R and lands at k o + s/R + alpha - 2o; its receiver pays o, solves its own
    # unknown and, in the upper solve, sends it back to rank 0 (which holds U(0, 1..3)): o to
    # post, s/R, alpha - 2o on the way, so it lands at k o + 2 s/R + 2 alpha - 2o. Rank 0,
    # idle since 3o, takes the three o apart: the third at 3o + 2 s/R + 2 alpha - 2o, plus o:
    # rank 0 ends at 2 alpha + 2 s/R + 2 o.
    r, _ = simulate(structure(4, {0: [1, 2, 3]}), (4, 1, 1), profile)
    assert r.predicted_s == pytest.approx(2 * (ALPHA + MSG / RATE) + 2 * O, rel=1e-9)
    assert int(r.messages[:, 0].sum()) == 6


def test_flat_reduction(profile):
    # L(3,0), L(3,1), L(3,2) on a 1x4 grid: columns on ranks 0..2 each send a partial sum of
    # row 3 to rank 3 at once (arriving alpha + s/R - o after time 0; rank 3 pays o for each),
    # which solves x3 and, holding U(0..2, 3), sends three partial sums back o apart.
    r, _ = simulate(structure(4, {0: [3], 1: [3], 2: [3]}), (1, 4, 1), profile)
    assert r.predicted_s == pytest.approx(2 * (ALPHA + MSG / RATE) + 4 * O, rel=1e-9)
    assert int(r.messages[:, 0].sum()) == 6


def test_compute_priced_by_flops_bytes_and_calls(tmp_path):
    # One rank, one supernode of width 1: the lower and upper diagonal solves are one call
    # each (2 w^2 flops, 8 (w^2 + 2 w) bytes), so with a slow flop rate the time is 2 (c + 2 / F).
    path = tmp_path / "slow.toml"
    path.write_text(profile_text(flop_rate=1e3, bandwidth=1e30, call_overhead=1e-3))
    r, _ = simulate(structure(1, {}), (1, 1, 1), load_profile(str(path)))
    assert r.predicted_s == pytest.approx(2 * (1e-3 + 2 / 1e3), rel=1e-9)
    assert r.breakdown()["fp_s"] == pytest.approx(r.predicted_s, rel=1e-12)


@pytest.mark.parametrize("nodes, cache_bytes, fits", [([0], 16, True), ([0], 15, False), ([0, 0], 32, True),
                                                       ([0, 0], 31, False), ([0, 1], 16, True)])
def test_cache_decides_each_ranks_bandwidth(tmp_path, nodes, cache_bytes, fits):
    # Width-1 supernodes, one per rank, no messages: a rank's factor is its diagonal block,
    # stored as 2 w^2 values = 16 bytes, and its solve is two calls of 8 (w^2 + 2 w) = 24
    # bytes each. It streams them at the cache's rate if 16 bytes fit its share of its
    # node's cache (cache_bytes / ranks on the node), else at the memory's: 48 / B.
    prof = load_profile_text(tmp_path, profile_text(bandwidth=1e3, cache=(float(cache_bytes), 1e4)))
    P = len(nodes)
    sched = cs.sim.solve_schedule(structure(P, {}), (1, P, 1), "2d", tree="flat", distribute_rhs=False)
    r = cs.sim.simulate(sched, make_topology(nodes=nodes, size=P), prof)
    assert r.in_cache.tolist() == [fits] * P
    assert r.predicted_s == pytest.approx(48 / (1e4 if fits else 1e3), rel=1e-9)
    assert r.to_dict()["ranks_in_cache"] == (P if fits else 0)


def test_profile_cache_fields_come_together(tmp_path):
    prof = load_profile_text(tmp_path, profile_text(cache=(6.4e7, 2e10)))
    again = load_profile_text(tmp_path, prof.to_toml(), "again")
    assert again.compute["cache_bytes"] == 6.4e7 and again.compute["cache_bandwidth"] == 2e10
    with pytest.raises(ProfileError, match="cache_bytes without cache_bandwidth"):
        load_profile_text(tmp_path, profile_text() + "cache_bytes = 1e6\n", "half")
    with pytest.raises(ProfileError, match="compute.cache_bandwidth"):
        load_profile_text(tmp_path, profile_text(cache=(1e6, float("nan"))), "nan")


def test_inter_node_messages_use_inter_node_figures(profile):
    S = structure(3, {0: [1], 1: [2]})
    sched = cs.sim.solve_schedule(S, (1, 2, 1), "2d", tree="flat", distribute_rhs=False)
    r = cs.sim.simulate(sched, make_topology(nodes=[0, 1], size=2), profile)
    assert r.predicted_s == pytest.approx(4 * (10 * ALPHA + MSG / (RATE / 10)), rel=1e-9)


@pytest.mark.parametrize("grid,algorithm,allreduce", [
    ((2, 2, 1), "2d", "packed"), ((1, 3, 1), "2d", "packed"), ((2, 2, 2), "3d-baseline", "packed"),
    ((2, 1, 4), "3d-baseline", "packed"), ((2, 2, 2), "3d", "packed"), ((2, 2, 2), "3d", "per-supernode"),
    ((1, 2, 4), "3d", "packed"), ((1, 1, 8), "3d", "per-supernode")])
@pytest.mark.parametrize("distribute_rhs", [False, True])
def test_simulated_traffic_equals_the_plan(profile, grid, algorithm, allreduce, distribute_rhs):
    """Every message the simulated ranks send and receive, per rank and step, intra and
    inter node, equals the planned statistics of the MPI solve (which the MPI tests check
    against Open MPI's own counters)."""
    A = gallery.poisson2d9(24)
    S = symbolic(A, grid[2])
    sched = cs.sim.solve_schedule(S, grid, algorithm, allreduce=allreduce, distribute_rhs=distribute_rhs)
    P = sched.nranks
    topo = make_topology(nodes=[r // 3 for r in range(P)], size=P)
    r = cs.sim.simulate(sched, topo, profile)
    planned = sptrsv3d_stats(S, grid, algorithm, "binary", topo, forests=sched.forests, allreduce=allreduce,
                             distribution=sched.distribution)
    assert len(r.recorded) == len(planned) == P
    for got, want in zip(r.recorded, planned):
        np.testing.assert_array_equal(got.array, want.array)
    assert int(r.messages[:, 0].sum()) == sum(int(s.array[:, :2].sum()) for s in planned) > 0
    assert np.isfinite(r.predicted_s) and r.predicted_s > 0
    per = r.per_rank()  # the categories add up to the predicted time on every rank
    np.testing.assert_allclose(sum(per.values()), r.predicted_s, rtol=1e-9)


def test_more_right_hand_sides_take_longer(profile):
    S = symbolic(gallery.poisson2d9(24))
    t = [cs.sim.simulate(cs.sim.solve_schedule(S, (2, 2, 1), "2d", nrhs=k), make_topology(nodes=[0] * 4, size=4),
                         profile).predicted_s for k in (1, 8)]
    assert t[1] > t[0] > 0


def test_profile_without_compute_is_refused(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text(profile_text(compute=False))
    with pytest.raises(ProfileError, match=r"no \[compute\]"):
        cs.sim.simulation_profile(str(path))
    with pytest.raises(ProfileError, match=r"no \[compute\]"):
        cs.sim.simulation_profile("bluewaters")


def test_bad_compute_fields(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text(profile_text(flop_rate=-1.0))
    with pytest.raises(ProfileError, match="flop_rate"):
        load_profile(str(path))
    path.write_text(profile_text().replace("call_overhead = 0.0", 'call_overhead = "x"'))
    with pytest.raises(ProfileError, match="call_overhead"):
        load_profile(str(path))


def test_profile_round_trip_keeps_simulator_fields(tmp_path, profile):
    path = tmp_path / "again.toml"
    profile.save(str(path))
    again = load_profile(str(path))
    assert again.overhead == profile.overhead and again.compute == profile.compute


@pytest.mark.parametrize("name", ["cori-haswell", "perlmutter-cpu", "edison"])
def test_bundled_machine_profiles_simulate(name):
    prof = cs.sim.simulation_profile(name)
    assert prof.compute["flop_rate"] > 0 and prof.overhead > 0 and prof.ppn > 1
    sched = cs.sim.solve_schedule(structure(3, {0: [1], 1: [2]}), (1, 2, 1), "2d", tree="flat", distribute_rhs=False)
    on_node = cs.sim.simulate(sched, make_topology(nodes=[0, 0], size=2), prof).predicted_s
    across = cs.sim.simulate(sched, make_topology(nodes=[0, 1], size=2), prof).predicted_s
    assert 0 < on_node < across < 1e-3  # four hops: microseconds, slower between nodes


def test_schedule_and_topology_must_agree(profile):
    sched = cs.sim.solve_schedule(structure(3, {0: [1], 1: [2]}), (1, 2, 1), "2d")
    with pytest.raises(ValueError, match="topology has 3 ranks"):
        cs.sim.simulate(sched, make_topology(nodes=[0, 0, 0], size=3), profile)
    with pytest.raises(ValueError, match="2d solve runs on a Px x Py x 1 grid"):
        cs.sim.solve_schedule(structure(3, {}), (1, 1, 2), "2d")
    with pytest.raises(TypeError, match="SolveSchedule"):
        cs.sim.simulate("not a schedule", make_topology(nodes=[0], size=1), profile)


def cli(*args, timeout=180):
    return subprocess.run([sys.executable, "-m", "commsolve", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_cli_simulate_json_and_plots(tmp_path):
    p = cli("simulate", "--gen", "poisson2d9:40", "--grid", "2x2x2", "--profile", "cori-haswell", "--json",
            "--plot", str(tmp_path / "b.png"), "--timeline", str(tmp_path / "t.png"))
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert set(r["algorithms"]) == {"2d", "3d-baseline", "3d"} and r["nranks"] == 8
    assert r["algorithms"]["2d"]["grid"] == [2, 4, 1]
    for a in r["algorithms"].values():
        assert a["predicted_s"] > 0
        assert sum(a["breakdown"].values()) == pytest.approx(a["predicted_s"], rel=1e-9)
    assert r["fastest"] in ALGORITHMS
    assert (tmp_path / "b.png").stat().st_size > 0 and (tmp_path / "t.png").stat().st_size > 0


@pytest.mark.parametrize("args,message", [
    (["--grid", "2x2x3"], "power of two"),
    (["--grid", "2x2x2", "--algorithm", "4d"], "unknown solve algorithm"),
    (["--grid", "2x2x2", "--profile", "bluewaters"], r"no \[compute\]"),
    (["--grid", "2x2x2", "--profile", "nosuch"], "nosuch"),
    (["--grid", "32x32x1", "--timeline", "t.png"], "unreadable"),
    (["--grid", "auto", "--procs", "4", "--leaf-sync"], "ablation's switches"),
    (["--grid", "2x2x2", "--kernels", "blocked"], "Invalid value for '--kernels'"),
])
def test_cli_simulate_errors(args, message):
    p = cli("simulate", "--gen", "poisson2d9:16", *args)
    assert p.returncode != 0
    assert "Traceback" not in p.stderr
    assert __import__("re").search(message, p.stderr), p.stderr


def test_candidate_grids():
    from commsolve.tune import candidate_grids

    grids = candidate_grids(64)
    assert all(px * py * pz == 64 and px <= py <= 4 * px and pz & (pz - 1) == 0 and pz <= 32
               for px, py, pz in grids)
    assert {(8, 8, 1), (4, 8, 2), (4, 4, 4), (2, 4, 8), (2, 2, 16), (1, 2, 32)} <= set(grids)
    assert candidate_grids(6) == [(2, 3, 1), (1, 3, 2)]  # 6 = 2 x 3; 3 ranks per layer: 1 x 3 (squarest)
    assert candidate_grids(1) == [(1, 1, 1)]


def test_rank_grids_orders_by_the_simulated_time(profile):
    from commsolve.tune import candidate_grids, rank_grids

    S = symbolic(gallery.poisson2d9(32), 8)
    topo = make_topology(nodes=[r // 4 for r in range(8)], size=8)
    ranking = rank_grids(S, topo, profile)  # binary and flat trees
    assert len(ranking) == 2 * sum(1 if g[2] == 1 else 3 for g in candidate_grids(8))
    assert {r["tree"] for r in ranking} == {"binary", "flat"}
    assert ranking[0]["predicted_s"] < ranking[-1]["predicted_s"]  # the choice matters here
    for entry in (ranking[0], ranking[-1]):  # each time is that configuration's, simulated on its own
        sched = cs.sim.solve_schedule(S, entry["grid"], entry["algorithm"], tree=entry["tree"])
        assert cs.sim.simulate(sched, topo, profile).predicted_s == pytest.approx(entry["predicted_s"], rel=1e-12)


def test_cli_simulate_auto_ranks_every_grid():
    p = cli("simulate", "--gen", "poisson2d9:32", "--grid", "auto", "--procs", "8", "--profile", "cori-haswell",
            "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    # 2x4x1 (2d); 2x2x2, 1x4x2, 1x2x4 and 1x1x8 (3d-baseline and 3d each, --algorithm's default);
    # binary and flat trees
    assert r["best"] == r["ranking"][0] and len(r["ranking"]) == 18
    assert all(a["predicted_s"] <= b["predicted_s"] for a, b in zip(r["ranking"], r["ranking"][1:]))
    for args, message in ((["--grid", "auto"], "--grid auto needs --procs"),
                          (["--grid", "2x2x2", "--procs", "8"], "--procs goes with --grid auto")):
        p = cli("simulate", "--gen", "poisson2d9:16", *args)
        assert p.returncode == 2 and message in p.stderr, p.stderr


def test_sptrsv_grid_auto_runs_the_fastest_predicted(tmp_path):
    from commsolve.launch import mpi_env

    path = tmp_path / "handmade.toml"
    path.write_text(profile_text(flop_rate=4e9, bandwidth=1e10, call_overhead=2e-8))
    p = subprocess.run([sys.executable, "-m", "commsolve", "sptrsv", "--gen", "poisson2d9:40", "-np", "2", "--grid",
                        "auto", "--profile", str(path), "--repeat", "2", "--json"], capture_output=True, text=True,
                       timeout=300, env=mpi_env(2))
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    best = r["grid_ranking"][0]
    assert (r["grid"], r["algorithm"], r["tree"]) == (best["grid"], best["algorithm"], best["tree"])
    assert {tuple(q["grid"]) for q in r["grid_ranking"]} == {(1, 2, 1), (1, 1, 2)}
    assert r["backward_error"] <= 1e-10 and r["stats_recorded_equal_planned"]
    p = cli("sptrsv", "--gen", "poisson2d9:16", "--grid", "auto")
    assert p.returncode == 2 and "--grid auto needs --profile" in p.stderr


def test_halo_exchange_by_hand(profile):
    # poisson2d:8 in two contiguous halves: each rank sends the 8 values of its boundary row
    # to the other at once (64 bytes, short): both finish alpha + s / R after the start.
    topo = make_topology(nodes=[0, 0], size=2)
    sched = cs.sim.halo_schedule(gallery.poisson2d(8), 2, topo, "standard")
    r = cs.sim.simulate(sched, topo, profile)
    assert r.predicted_s == pytest.approx(ALPHA + 64 / RATE, rel=1e-9)
    again = cs.sim.simulate(cs.sim.halo_schedule(gallery.poisson2d(8), 2, topo, "standard", repeat=3), topo, profile)
    assert again.predicted_s == pytest.approx(3 * r.predicted_s, rel=1e-9)  # nothing overlaps: each waits


@pytest.mark.parametrize("nodes, entries", [([0, 0, 0, 0], 3), ([0, 1, 1, 0], 5)])
def test_queue_search_by_hand(tmp_path, nodes, entries):
    # An arrow matrix, a row per rank: rank 0 posts receives from ranks 1, 2, 3 in that
    # order. On one node the messages arrive in that order, each at the queue's head: 3
    # entries searched. With ranks 1 and 2 on another node, rank 3's message comes first and
    # searches past the receives for 1 and 2 (3 entries), then 1's and 2's find theirs at
    # the head: 5. Rank 0 spends gamma per entry (as calc in its trace; copies are free
    # here); ranks 1-3, each receiving rank 0's one message, one entry.
    import scipy.sparse as sp

    A = sp.csr_matrix(np.eye(4) * 4 + np.eye(4)[[0]].T @ np.ones((1, 4)) + np.ones((4, 1)) @ np.eye(4)[[0]])
    topo = make_topology(nodes=nodes, size=4)
    sched = cs.sim.halo_schedule(A, 4, topo, "standard")
    gamma = 1e-7
    prof = load_profile_text(tmp_path, profile_text().replace("gamma = 0.0", f"gamma = {gamma!r}"))
    r = cs.sim.simulate(sched, topo, prof, trace=True)
    calc = [r.trace[(r.trace[:, 0] == q) & (r.trace[:, 1] == 0), 5].sum() for q in range(4)]
    assert calc == pytest.approx([entries * gamma, gamma, gamma, gamma], rel=1e-6)
    base = cs.sim.simulate(sched, topo, load_profile_text(tmp_path, profile_text(), "free"))
    assert r.predicted_s > base.predicted_s


@pytest.mark.parametrize("strategy", ["standard", "node-aware", "node-aware-2step"])
@pytest.mark.parametrize("partition", ["contiguous", "metis"])
def test_simulated_halo_traffic_equals_the_plan(profile, strategy, partition):
    from commsolve import virtual

    A = gallery.poisson3d(12)
    topo = make_topology(nodes=[r // 4 for r in range(16)], size=16)
    sched = cs.sim.halo_schedule(A, 16, topo, strategy, partition, block=2, repeat=2)
    r = cs.sim.simulate(sched, topo, profile)
    for got, want in zip(r.recorded, virtual.plan_stats(sched.plans, topo)):
        # two exchanges of two values per entry: the messages twice, the bytes four times
        expect = want.scaled(2).array
        expect[:, [2, 3, 6, 7]] *= 2
        np.testing.assert_array_equal(got.array, expect)
    assert r.predicted_s > 0 and np.isfinite(r.predicted_s)


def test_cli_simulate_spmv(tmp_path):
    p = cli("simulate", "--workload", "spmv", "--gen", "poisson3d:16", "--procs", "64", "--ppn", "8", "--json",
            "--plot", str(tmp_path / "b.png"))
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert set(r["strategies"]) == {"standard", "node-aware", "node-aware-2step"} and r["nranks"] == 64
    # node-aware sends each value once per pair of nodes: no more inter-node messages on the busiest rank
    s = r["strategies"]
    assert s["node-aware"]["inter_node_msgs_max"] <= s["standard"]["inter_node_msgs_max"]
    p = cli("simulate", "--workload", "spmv", "--gen", "poisson3d:16", "--grid", "2x2x2")
    assert p.returncode == 2 and "--procs" in p.stderr


def test_collectives_by_hand(profile):
    from commsolve.trees import Collectives

    topo = make_topology(nodes=[0] * 4, size=4)
    # a flat broadcast of 3 values from rank 0 to ranks 1..3: o apart at the root, the last
    # lands alpha + s/R - o after the third send and takes o more: alpha + s/R + 2 o
    bcast = Collectives([7], ["broadcast"], [0], [[0, 1, 2, 3]], [3])
    r = cs.sim.simulate(cs.sim.CollectivesSchedule(bcast, "flat"), topo, profile)
    s = 8 * (3 + 1)  # the key and the values
    assert r.predicted_s == pytest.approx(ALPHA + s / RATE + 2 * O, rel=1e-9)
    # a binary tree over 4 ranks has depth 2: the root sends first to the child that forwards,
    # so the deepest leaf has its values two hops later, 2 (alpha + s/R)
    r = cs.sim.simulate(cs.sim.CollectivesSchedule(bcast, "binary"), topo, profile)
    assert r.predicted_s == pytest.approx(2 * (ALPHA + s / RATE), rel=1e-9)
    # a flat reduction to rank 3: three contributions at once, o each at the root
    red = Collectives([1], ["reduce"], [3], [[3, 0, 1, 2]], [3])
    r = cs.sim.simulate(cs.sim.CollectivesSchedule(red, "flat"), topo, profile)
    assert r.predicted_s == pytest.approx(ALPHA + s / RATE + 2 * O, rel=1e-9)


@pytest.mark.parametrize("shape", ["flat", "binary", "shifted-binary", "node-aware"])
def test_simulated_collectives_traffic_equals_the_plan(profile, shape):
    from commsolve import trees, workloads

    S = cs.direct.supernodal_structure(gallery.poisson3d(10), 16)
    C = workloads.selinv_collectives(S, (4, 4))
    topo = make_topology(nodes=[r // 4 for r in range(16)], size=16)
    r = cs.sim.simulate(cs.sim.CollectivesSchedule(C, shape), topo, profile)
    for got, want in zip(r.recorded, trees.virtual_stats(C, topo, shape)):
        np.testing.assert_array_equal(got.array, want.array)
    assert r.predicted_s > 0


def test_cli_simulate_trees():
    p = cli("simulate", "--workload", "trees", "--gen", "poisson3d:10", "--grid", "4x4", "--ppn", "4",
            "--tree", "flat,binary", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert set(r["shapes"]) == {"flat", "binary"} and r["grid"] == [4, 4]
    # every non-root member of a collective receives once, whatever the shape
    assert r["shapes"]["flat"]["messages"] == r["shapes"]["binary"]["messages"] > 0
    p = cli("simulate", "--workload", "trees", "--gen", "poisson3d:10", "--grid", "4x4", "--tree", "oak")
    assert p.returncode != 0 and "oak" in p.stderr and "Traceback" not in p.stderr


def test_goal_export_matches_every_send_with_its_receive(tmp_path, profile):
    import re

    S = symbolic(gallery.poisson2d9(20), 2)
    sched = cs.sim.solve_schedule(S, (2, 1, 2), "3d")
    r = cs.sim.simulate(sched, make_topology(nodes=[0, 0, 1, 1], size=4), profile, trace=True)
    path = tmp_path / "s.goal"
    n = cs.sim.write_goal(r, str(path))
    text = path.read_text()
    assert text.startswith("num_ranks 4\n") and text.count("rank ") == 4
    sends, recvs, rank = {}, {}, None
    for line in text.splitlines():
        if m := re.match(r"rank (\d+) \{", line):
            rank, last = int(m.group(1)), 0
        elif m := re.match(r"l(\d+): send (\d+)b to (\d+) tag (\d+)$", line):
            sends[int(m.group(4))] = (rank, int(m.group(3)), int(m.group(2)))
        elif m := re.match(r"l(\d+): recv (\d+)b from (\d+) tag (\d+)$", line):
            recvs[int(m.group(4))] = (int(m.group(3)), rank, int(m.group(2)))
        elif m := re.match(r"l(\d+) requires l(\d+)$", line):
            assert int(m.group(2)) == int(m.group(1)) - 1  # each operation after the one before
    assert sends == recvs and len(sends) == int(r.messages[:, 0].sum()) > 0
    assert n == text.count(": send ") + text.count(": recv ") + text.count(": calc ")
    with pytest.raises(ValueError, match="trace=True"):
        cs.sim.write_goal(cs.sim.simulate(sched, make_topology(nodes=[0, 0, 1, 1], size=4), profile),
                          str(tmp_path / "no.goal"))


def replay_goal(path, L, o, G):
    """LogGOPSim's model run over a GOAL file, written here apart from the C++ simulator:
    every rank does its operations in order; ``calc n`` takes n ns; a send takes o of the
    CPU, then its bytes s take s G of the rank's interface (after its earlier messages) and
    arrive L later; a receive waits for its message (matched by tag) and takes o.
    ``L(src, dst)`` and ``G(src, dst)`` by pair. Returns the last rank's finish, seconds."""
    import re

    ranks, r = {}, None
    for line in open(path):
        if m := re.match(r"rank (\d+) \{", line):
            r = int(m.group(1))
            ranks[r] = []
        elif m := re.match(r"l\d+: (calc|send|recv) (\d+)(?:b (?:to|from) (\d+) tag (\d+))?$", line.strip()):
            ranks[r].append((m.group(1), int(m.group(2)), int(m.group(3) or -1), int(m.group(4) or -1)))
    cpu = {q: 0.0 for q in ranks}
    nic = {q: 0.0 for q in ranks}
    at = {q: 0 for q in ranks}
    arrival = {}  # tag -> when the message is in
    moved = True
    while moved:  # run every rank as far as its messages allow
        moved = False
        for q, ops in ranks.items():
            while at[q] < len(ops):
                kind, n, peer, tag = ops[at[q]]
                if kind == "calc":
                    cpu[q] += n * 1e-9
                elif kind == "send":
                    cpu[q] += o
                    nic[q] = max(cpu[q], nic[q]) + n * G(q, peer)
                    arrival[tag] = nic[q] + L(q, peer)
                elif tag in arrival:
                    cpu[q] = max(cpu[q], arrival[tag]) + o
                else:
                    break
                at[q] += 1
                moved = True
    assert all(at[q] == len(ops) for q, ops in ranks.items()), "a receive whose send never comes"
    return max(cpu.values()), sum(op[0] == "calc" for ops in ranks.values() for op in ops)


@pytest.mark.parametrize("algorithm", ["2d", "3d-baseline", "3d"])
def test_goal_export_replays_to_the_simulated_time(tmp_path, algorithm):
    """The exported schedule, run by an independent LogGOP replay with the profile's figures
    as L = alpha - 2 o, o and G = 1 / R (one protocol, no engine or injection terms), ends
    when the simulator says: the file holds the whole run, in order, with its costs."""
    prof = load_profile_text(tmp_path, profile_text(flop_rate=4e9, bandwidth=1e10, call_overhead=2e-8,
                                                    copy_rate=2e10))
    grid = (2, 2, 1) if algorithm == "2d" else (2, 1, 2)
    nodes = [0, 0, 1, 1]
    sched = cs.sim.solve_schedule(symbolic(gallery.poisson2d9(20), grid[2]), grid, algorithm)
    r = cs.sim.simulate(sched, make_topology(nodes=nodes, size=4), prof, trace=True)
    cs.sim.write_goal(r, str(tmp_path / "s.goal"))
    inter = lambda a, b: nodes[a] != nodes[b]  # noqa: E731
    t, calcs = replay_goal(tmp_path / "s.goal", L=lambda a, b: (10 if inter(a, b) else 1) * ALPHA - 2 * O, o=O,
                           G=lambda a, b: 1 / (RATE / 10 if inter(a, b) else RATE))
    assert calcs > 0 and int(r.messages[:, 0].sum()) > 0
    assert abs(t - r.predicted_s) <= 1e-9 * calcs  # each calc rounded to a nanosecond in the file


@pytest.mark.parametrize("cached", [False, True])
def test_solve_fit_recovers_the_compute_model(tmp_path, cached):
    # "measured" times made by the simulator with a known call overhead and bandwidth (and a
    # cache 3x faster that holds the smaller factors, timed by 2 ranks at once, so each had
    # half of it): the fit finds a model that predicts them (to the grid's resolution) and
    # values near those, the cache's size and its ratio to memory kept
    from commsolve.sim.calibration import fit_solve_compute

    node_cache = 2 * 2e6  # per rank 2 MB: the factors of poisson2d9:40 and poisson3d:10 fit, the others not
    true = load_profile_text(tmp_path, profile_text(flop_rate=4e9, bandwidth=6e9, call_overhead=1.5e-7, copy_rate=3e10,
                                                    cache=(node_cache / 2, 1.8e10) if cached else None), "true")
    start = profile_text(flop_rate=4e9, bandwidth=1.2e10, call_overhead=1e-8, copy_rate=3e10,
                         cache=(node_cache, 3.6e10) if cached else None)
    topo = make_topology(nodes=[0], size=1)
    solves = []
    for spec in ("poisson2d9:40", "poisson3d:10", "poisson2d9:70", "poisson3d:14"):
        sched = cs.sim.solve_schedule(symbolic(gallery.from_spec(spec)), (1, 1, 1), "2d")
        solves.append((spec, cs.sim.simulate(sched, topo, true).predicted_s, sched, topo))
    fitted, report = fit_solve_compute(load_profile_text(tmp_path, start, "start"), solves, sharing=2 if cached else 1,
                                       points=16)
    assert all(0.9 < s["ratio"] < 1.1 for s in report["solves"]), report["solves"]
    assert sorted({s["in_cache"] for s in report["solves"]}) == ([False, True] if cached else [False])
    assert 0.5 * 6e9 < fitted["bandwidth"] < 2 * 6e9 and 0.3 * 1.5e-7 < fitted["call_overhead"] < 3 * 1.5e-7
    assert fitted["flop_rate"] == 4e9 and fitted["copy_rate"] == 3e10  # kept from the micro-benchmarks
    if cached:
        assert fitted["cache_bytes"] == node_cache
        assert fitted["cache_bandwidth"] / fitted["bandwidth"] == pytest.approx(3.0)


def test_engine_costs_apply_to_engine_messages_only(tmp_path):
    # the solve's phases go through the any-source engine: each of the chain's four hops
    # takes any_source longer on the wire and engine_overhead more at both ends; the halo
    # exchange receives from known sources without the engine: unchanged
    extra, h = 5e-7, 3e-7
    path = tmp_path / "match.toml"
    path.write_text(profile_text().replace(f"overhead = {O!r}",
                                           f"overhead = {O!r}\nany_source = {extra!r}\nengine_overhead = {h!r}"))
    prof = load_profile(str(path))
    assert (prof.any_source, prof.engine_overhead) == (extra, h)
    r, _ = simulate(structure(3, {0: [1], 1: [2]}), (1, 2, 1), prof)
    assert r.predicted_s == pytest.approx(4 * (ALPHA + MSG / RATE + extra + 2 * h), rel=1e-9)
    topo = make_topology(nodes=[0, 0], size=2)
    h = cs.sim.simulate(cs.sim.halo_schedule(gallery.poisson2d(8), 2, topo, "standard"), topo, prof)
    assert h.predicted_s == pytest.approx(ALPHA + 64 / RATE, rel=1e-9)
    # A 1x1x2 solve has no message inside a grid: its inter-grid steps and moves of b and x
    # are blocking or pre-posted receives from known sources, which pay neither.
    S = symbolic(gallery.poisson2d9(12), 2)
    sched = cs.sim.solve_schedule(S, (1, 1, 2), "3d")
    plain = cs.sim.simulate(sched, topo, load_profile_text(tmp_path, profile_text()))
    engine = cs.sim.simulate(sched, topo, prof)
    assert int(engine.messages[:, 0].sum()) > 0
    assert engine.predicted_s == pytest.approx(plain.predicted_s, rel=1e-12)


def test_node_injection_is_shared_in_time_order(tmp_path):
    # Ranks 0 and 1 share a node's injection (R_N); one packs a large broadcast (a long copy
    # first), the other sends one value at once. The small message goes first whichever rank
    # sends it: its receiver finishes at t + s/R_N + (alpha - 2o) + o + 16/C with
    # t = 16/C + o (pack, overhead) and s = 16 bytes, the same in both labellings.
    R_N, C, alpha, o = 1e9, 1e9, 2e-6, 1e-7
    text = "\n".join(['name = "inj"', "short_max = 512", "eager_max = 8192", "gamma = 0.0", "delta = 0.0",
                      "ppn = 2", f"overhead = {o!r}", "[intra_node]"]
                     + [f"{p} = {{ alpha = 1e-6, rate = 1e10 }}" for p in ("short", "eager", "rend")]
                     + ["[inter_node]"]
                     + [f"{p} = {{ alpha = {alpha!r}, rate = 1e10, injection = {R_N!r} }}"
                        for p in ("short", "eager", "rend")]
                     + ["[compute]", "flop_rate = 1e30", "bandwidth = 1e30", "call_overhead = 0.0",
                        f"copy_rate = {C!r}"]) + "\n"
    path = tmp_path / "inj.toml"
    path.write_text(text)
    from commsolve.trees import Collectives

    topo = make_topology(nodes=[0, 0, 1, 1], size=4)
    big = 100_000
    t = 16 / C + o
    small_done = t + 16 / R_N + (alpha - 2 * o) + o + 16 / C
    for roots, counts, small_receiver in (([0, 1], [big, 1], 3), ([1, 0], [big, 1], 2)):
        C_ = Collectives([1, 2], ["broadcast"] * 2, roots, [[roots[0], roots[0] + 2], [roots[1], roots[1] + 2]],
                         counts)
        r = cs.sim.simulate(cs.sim.CollectivesSchedule(C_, "flat"), topo, str(path))
        assert r.finish[small_receiver] == pytest.approx(small_done, rel=1e-9)
        # the large one waits for nothing but its pack and the injection: 16 N / C + o + 8 (N + 1) / R_N ...
        big_done = 16 * big / C + o + 8 * (big + 1) / R_N + (alpha - 2 * o) + o + 16 * big / C
        assert r.predicted_s == pytest.approx(big_done, rel=1e-9)


def test_interface_serializes_large_messages_and_protocols_have_their_own_figures(tmp_path):
    # A flat broadcast of 10,000 values (80,008 bytes: rendezvous, alpha 3x) to three ranks:
    # s/R = 80 us >> o, so the root's interface sends them one after the other and the
    # last arrives 3 s/R after the start, plus the rendezvous latency: 3 alpha + 3 s/R.
    from commsolve.trees import Collectives

    path = tmp_path / "p.toml"
    path.write_text(profile_text().replace(f"rend = {{ alpha = {ALPHA!r}", f"rend = {{ alpha = {3 * ALPHA!r}"))
    prof = load_profile(str(path))
    bcast = Collectives([1], ["broadcast"], [0], [[0, 1, 2, 3]], [10_000])
    s = 8 * 10_001
    r = cs.sim.simulate(cs.sim.CollectivesSchedule(bcast, "flat"), make_topology(nodes=[0] * 4, size=4), prof)
    assert r.predicted_s == pytest.approx(3 * ALPHA + 3 * s / RATE, rel=1e-9)
    # one value is a short message: alpha + s/R + 2 o as in test_collectives_by_hand
    small = Collectives([1], ["broadcast"], [0], [[0, 1, 2, 3]], [1])
    r = cs.sim.simulate(cs.sim.CollectivesSchedule(small, "flat"), make_topology(nodes=[0] * 4, size=4), prof)
    assert r.predicted_s == pytest.approx(ALPHA + 16 / RATE + 2 * O, rel=1e-9)


def test_halo_pack_is_priced_by_the_copy_rate(tmp_path):
    # packing the 8 boundary values costs 16 bytes each at C before the message leaves
    copy_rate = 1e8
    path = tmp_path / "p.toml"
    path.write_text(profile_text(copy_rate=copy_rate))
    topo = make_topology(nodes=[0, 0], size=2)
    r = cs.sim.simulate(cs.sim.halo_schedule(gallery.poisson2d(8), 2, topo, "standard"), topo, str(path))
    assert r.predicted_s == pytest.approx(16 * 8 / copy_rate + ALPHA + 64 / RATE, rel=1e-9)


def test_engine_overhead_fit_recovers_it(tmp_path, profile):
    from commsolve.sim.calibration import fit_engine_overhead

    true = tmp_path / "true.toml"
    true.write_text(profile_text().replace(f"overhead = {O!r}", f"overhead = {O!r}\nengine_overhead = 1.2e-06"))
    sched = cs.sim.solve_schedule(symbolic(gallery.poisson2d9(30)), (1, 2, 1), "2d")
    topo = make_topology(nodes=[0, 0], size=2)
    measured = cs.sim.simulate(sched, topo, str(true)).predicted_s
    h, report = fit_engine_overhead(profile, ("poisson2d9:30", measured, sched, topo))
    assert h == pytest.approx(1.2e-6, rel=1e-3) and report["predicted_s"] == pytest.approx(measured, rel=1e-6)
    assert profile.engine_overhead == 0.0  # the caller's profile is left as it was
    # a solve predicted slower than measured even without it: 0, never negative
    assert fit_engine_overhead(profile, ("x", 1e-9, sched, topo))[0] == 0.0


def test_synchronous_levels_take_one_supernode_at_a_time(profile):
    # L(2,0), L(2,1): supernodes 0 and 1 under 2, all in the root forest of a 1x2x2 grid, so
    # grid 1 only sends its (zero) sums up and waits for x, and grid 0 solves the three
    # supernodes with ICS'19's synchronous upper level: per supernode a reduction over the
    # whole process row (both ranks; root: column k mod 2) and a broadcast down its column
    # (one rank: no message), taken in order. Grid 0's ranks 0 and 1 start once grid 1's
    # packed sums (16 and 8 bytes) are in. L: rank 1 sends sum(0) to rank 0 (the first
    # message of every rank's order), then waits in reduction 1 for rank 0's, which rank 0
    # sends only after it solved 0 (A = 2 alpha + 24/R); rank 1 solves 1 at B = A + alpha +
    # 16/R, applies L(2,1) and sends sum(2): rank 0 solves 2 at C = B + alpha + 16/R. U (U =
    # L^T, both blocks on rank 0, descending): rank 1's empty sum(2) arrives at C, rank 0
    # solves 2 and sends sum(1) (D = C + o + alpha + 16/R at rank 1), rank 1 solves 1 and
    # sends its empty sum(0) (E = D + alpha + 16/R at rank 0), which then sends x(0), x(2)
    # (16 bytes) to grid 1: 7 alpha + 104/R + o. Message-driven, rank 0 would send sum(1)
    # at once and rank 1 need not wait for it in order.
    S = structure(3, {0: [2], 1: [2]})
    topo = make_topology(nodes=[0] * 4, size=4)
    forests = np.zeros(3, np.int32)
    sync = cs.sim.simulate(cs.sim.solve_schedule(S, (1, 2, 2), "3d-baseline", forests=forests, tree="flat",
                                                 distribute_rhs=False), topo, profile)
    assert sync.predicted_s == pytest.approx(7 * ALPHA + 104 / RATE + O, rel=1e-9)
    assert int(sync.messages[:, 0].sum()) == 6 + 4  # three sums each way inside grid 0; four inter-grid
    free = cs.sim.simulate(cs.sim.solve_schedule(S, (1, 2, 2), "3d-baseline-async", forests=forests, tree="flat",
                                                 distribute_rhs=False), topo, profile)
    assert free.predicted_s < sync.predicted_s - ALPHA


def test_leaf_synchronisation_by_hand(profile):
    # Two width-1 supernodes with no block between them on a 1x2 grid: the phases send
    # nothing, so the solve is leaf_sync's three grid synchronisations, each one exchange
    # between the two ranks (recursive doubling of two): the L counters (ceil(2 / 1) ints, 8
    # bytes), the barrier (0 bytes), the U counters, each alpha + s/R after the last.
    S = structure(2, {})
    free, _ = simulate(S, (1, 2, 1), profile)
    synced, _ = simulate(S, (1, 2, 1), profile, leaf_sync=True)
    assert free.predicted_s == pytest.approx(0.0, abs=1e-20)
    assert synced.predicted_s == pytest.approx(3 * ALPHA + 2 * 8 / RATE, rel=1e-9)
    assert int(synced.messages[:, 0].sum()) == 6


def test_per_block_kernels_priced_by_hand(tmp_path):
    # L(1,0) on one rank, compute at c + flops / rate: the inverted kernels make four
    # diagonal products (2 flops each: w = 1) and two block products (2 flops) at F; the
    # per-block ones four dtrsm (1 flop) at the triangular rate T and the same two products.
    c, F, T = 1e-7, 1e9, 0.25e9
    prof = load_profile_text(tmp_path, profile_text(flop_rate=F, call_overhead=c, triangular_rate=T))
    S = structure(2, {0: [1]})
    inverted, _ = simulate(S, (1, 1, 1), prof)
    per_block, _ = simulate(S, (1, 1, 1), prof, kernels="per-block")
    assert inverted.predicted_s == pytest.approx(6 * c + 12 / F, rel=1e-9)
    assert per_block.predicted_s == pytest.approx(6 * c + 4 / T + 4 / F, rel=1e-9)
    assert int(per_block.calls.sum()) == int(inverted.calls.sum()) == 6


def test_pdgstrs_baseline_by_hand(profile):
    # L(2,0), L(2,1), every supernode in the root forest of a 1x1x2 grid (compute free; grids
    # of one rank: the leaf forests' synchronisations have one participant, no message). Grid 1
    # reduces its three (zero) sums into grid 0 and gets the three solutions back. Packed
    # (3d-baseline): one 24-byte message each way, alpha + 24/R. Per supernode (pdgstrs3d):
    # three 8-byte messages posted o apart, the k-th landing at k o + 8/R + alpha - 2o, taken
    # o each by the receiver: the last done at alpha + 2o + 8/R; twice.
    S = structure(3, {0: [2], 1: [2]})
    topo = make_topology(nodes=[0, 0], size=2)
    forests = np.zeros(3, np.int32)

    def run(algorithm):
        return cs.sim.simulate(cs.sim.solve_schedule(S, (1, 1, 2), algorithm, forests=forests, distribute_rhs=False),
                               topo, profile)

    base, pdgstrs = run("3d-baseline"), run("3d-baseline-pdgstrs")
    assert base.predicted_s == pytest.approx(2 * (ALPHA + 24 / RATE), rel=1e-9)
    assert pdgstrs.predicted_s == pytest.approx(2 * (ALPHA + 2 * O + 8 / RATE), rel=1e-9)
    assert pdgstrs.info["tree"] == "flat" and pdgstrs.info["kernels"] == "per-block" and pdgstrs.info["leaf_sync"]
    assert (int(base.messages[:, 0].sum()), int(pdgstrs.messages[:, 0].sum())) == (2, 6)
