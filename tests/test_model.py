"""Cost models: hand-computed values of every formula, profiles, pricing of plans."""

import math

import pytest
import scipy.sparse as sp

import commsolve as cs
from commsolve.model import (CostModel, ProfileError, binomial_multicast, contention,
                             load_profile, max_rate, postal, queue_search, rectangular_multicast,
                             rectangular_reduction)

BW = load_profile("bluewaters")


def test_postal_and_max_rate():
    assert postal(2e-6, 1e9, 1000) == pytest.approx(2e-6 + 1e-6)
    # ppn * R_b below injection: the postal model
    assert max_rate(3e-6, 2.9e9, 2.9e6, 2, 6.6e9) == pytest.approx(3e-6 + 2 * 2.9e6 / 5.8e9)
    # 16 processes saturate the NIC: ppn s / R_N
    assert max_rate(3e-6, 2.9e9, 2.9e6, 16, 6.6e9) == pytest.approx(3e-6 + 16 * 2.9e6 / 6.6e9)


def test_thesis_figure_2_4_orderings():
    """Moving 16s bytes between two nodes (max-rate, Blue Waters rendezvous parameters):
    one process sending 16 messages of s > one message of 16s > 16 processes sending s."""
    a, rb, rn = BW.alpha["inter_node", "rend"], BW.rate["inter_node", "rend"], BW.injection["rend"]
    s = 1 << 20
    sixteen_messages = 16 * max_rate(a, rb, s, 1, rn)
    one_big = max_rate(a, rb, 16 * s, 1, rn)
    sixteen_senders = max_rate(a, rb, s, 16, rn)
    assert sixteen_messages == pytest.approx(16 * (3e-6 + s / 2.9e9))
    assert one_big == pytest.approx(3e-6 + 16 * s / 2.9e9)
    assert sixteen_senders == pytest.approx(3e-6 + 16 * s / 6.6e9)
    assert sixteen_messages > one_big > sixteen_senders


def test_penalties():
    assert queue_search(8.4e-9, 100) == pytest.approx(8.4e-5)
    # eq. 3.5: l = 2 h^3 b ppn; T = delta l
    assert contention(1e-10, 2.0, 1000.0, 16) == pytest.approx(1e-10 * 2 * 8 * 1000 * 16)


def test_multicasts():
    m, P, B, o, L = 1e6, 4096, 2e9, 1e-6, 2e-6
    assert binomial_multicast(m, P, B, o, L) == pytest.approx(12 * (5e-4 + 4e-6))
    # d = 3: P^(1/3) = 16
    assert rectangular_multicast(m, P, 3, B, o, L) == pytest.approx(5e-4 + 8e-6 + 6e-6 + 48 * 4e-6)
    red = rectangular_reduction(m, P, 3, B, o, L, flop_rate=1e9, memory_bandwidth=1e10)
    assert red == pytest.approx(max(1e6 / 8e9, 3e6 / 1e10, 5e-4) + 8e-6 + 6e-6 + 48 * 4e-6)
    assert rectangular_multicast(m, P, 3, B, o, L) < binomial_multicast(m, P, B, o, L)


def test_bluewaters_profile_values():
    assert BW.alpha["intra_node", "eager"] == 1.2e-6 and BW.rate["inter_node", "short"] == 1.3e9
    assert BW.gamma == 8.4e-9 and BW.delta == 1e-10
    assert list(BW.protocol([0, 512, 513, 8192, 8193])) == [0, 0, 1, 1, 2]


def test_profile_round_trip(tmp_path):
    path = tmp_path / "m.toml"
    BW.save(path)
    assert load_profile(path) == BW


@pytest.mark.parametrize("edit,msg", [
    (lambda t: t.replace('rend = { alpha = 3e-06, rate = 2900000000.0, injection = 6600000000.0 }', ''),
     "missing field 'inter_node.rend'"),
    (lambda t: t.replace("gamma = 8.4e-09\n", ""), "missing field 'gamma'"),
    (lambda t: t.replace("eager = { alpha = 1.2e-06, rate = 960000000.0 }", 'eager = { alpha = 1.2e-06, rate = "fast" }'),
     "field 'intra_node.eager.rate' must be a number"),
    (lambda t: t.replace("rate = 480000000.0", "rate = -1.0"), "must be positive"),
    (lambda t: t.replace("[inter_node]", "[inter_node"), "not valid TOML"),
    (lambda t: t.replace("short_max = 512", "short_max = 99999"), "short_max <= eager_max"),
    (lambda t: "intra_node = 5\n" + t[:t.index("[intra_node]")] + t[t.index("[inter_node]"):],
     "'intra_node' must be a table"),
])
def test_bad_profiles(tmp_path, edit, msg):
    path = tmp_path / "bad.toml"
    text = BW.to_toml()
    bad = edit(text)
    assert bad != text
    path.write_text(bad)
    with pytest.raises(ProfileError, match=msg) as e:
        load_profile(path)
    assert str(path) in str(e.value)


def test_profile_that_is_not_text(tmp_path):
    path = tmp_path / "binary.toml"
    path.write_bytes(b"name = \"x\"\n\xff\xfe\x00 rubbish\n")
    with pytest.raises(ProfileError, match="not UTF-8 text"):
        load_profile(path)


def test_unknown_profile():
    with pytest.raises(ProfileError, match="no bundled profile"):
        load_profile("deep-thought")


def test_price_hand_computed_plan():
    # 4 ranks, 2 per node, 1D tridiagonal over 4 rows: rank 1 sends 8 B to rank 0 (intra) and
    # 8 B to rank 2 (inter), receives one message from each.
    A = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(4, 4), format="csr")
    topo = cs.make_topology(size=4, ppn=2)
    plans = cs.virtual.plans(A, cs.partition.partition(A, 4), topology=topo)
    pred = CostModel(BW).price(plans, topo)
    intra = BW.alpha["intra_node", "short"] + 8 / BW.rate["intra_node", "short"]
    inter = BW.alpha["inter_node", "short"] + 8 / BW.rate["inter_node", "short"]  # one sender per node
    assert pred.breakdown["latency"][1] + pred.breakdown["bandwidth"][1] == pytest.approx(intra + inter)
    assert pred.breakdown["queue"][1] == pytest.approx(BW.gamma * 4)  # 2 receives: gamma * 2^2
    # contention: ranks 1 and 2 talk across adjacent nodes (1 hop), b = 16 B / 4 ranks, ppn 2
    assert pred.breakdown["contention"][1] == pytest.approx(BW.delta * 2 * 1 * 4.0 * 2)
    assert pred.time == pytest.approx(pred.per_rank.max())  # one step


def test_stats_pricing_matches_plan_pricing_when_sizes_are_uniform():
    A = cs.gallery.poisson3d(16)
    topo = cs.make_topology(size=8, ppn=2)
    plans = cs.virtual.plans(A, cs.partition.partition(A, 8), topology=topo)
    m = CostModel(BW.__class__(**{**BW.__dict__, "delta": 0.0}))
    exact = m.price(plans, topo)
    approx = m.price_stats(cs.virtual.plan_stats(plans, topo), topo)
    assert approx.time == pytest.approx(exact.time, rel=1e-12)


def test_analyze_with_profile_auto_picks_cheapest():
    from commsolve.runs.analysis import analyze
    r = analyze(64, 8, ["standard", "node-aware", "node-aware-2step", "auto"],
                gen="random:rows=6400,nnz_per_row=25", profile="bluewaters")
    times = {s: r["strategies"][s]["model"]["time_s"] for s in ("standard", "node-aware", "node-aware-2step")}
    assert r["strategies"]["auto"]["model"]["time_s"] == pytest.approx(min(times.values()))
    assert all(math.isfinite(t) and t > 0 for t in times.values())


@pytest.mark.parametrize("spec", ["random:rows=8000,nnz_per_row=20", "poisson2d:100"])
def test_mpi_auto_by_model_matches_virtual_choice(spec):
    import json
    import subprocess
    import sys

    from commsolve.runs.analysis import analyze
    from commsolve.launch import mpi_env

    p = subprocess.run([sys.executable, "-m", "commsolve", "spmv", "--gen", spec, "-np", "4", "--ppn", "2",
                        "--strategy", "auto", "--profile", "bluewaters", "--repeat", "3", "--json"],
                       capture_output=True, text=True, timeout=300, env=mpi_env(4))
    assert p.returncode == 0, p.stderr
    chosen_mpi = json.loads(p.stdout)["strategy"].split("->")[-1]
    chosen_virtual = analyze(4, 2, ["auto"], gen=spec, profile="bluewaters")["strategies"]["auto"]["chosen"]
    assert chosen_mpi == chosen_virtual


def test_bundled_profiles_load():
    from commsolve.model import bundled_profiles
    assert {"bluewaters", "bluewaters-spmv"} <= set(bundled_profiles())
    spmv = load_profile("bluewaters-spmv")
    assert spmv.alpha["inter_node", "rend"] == 2.0e-5 and spmv.injection["rend"] == 5.5e9  # Table 5.3
    assert spmv.rate["intra_node", "eager"] == 7.4e8  # Table 5.4
    assert not spmv.has_level("intra_socket")
