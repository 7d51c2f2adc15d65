"""Analysis at virtual scale: the analyze function and CLI, plots, and bad input."""

import json
import subprocess
import sys

import numpy as np
import pytest

from commsolve import gallery, make_topology, virtual
from commsolve.runs.analysis import analyze, volume_matrix
from commsolve.partition import partition


def test_analyze_matches_virtual_stats():
    r = analyze(32, 4, ["standard", "node-aware", "node-aware-2step", "auto"], gen="random:rows=4000,nnz_per_row=20")
    assert r["nodes"] == 8 and r["rows"] == 4000 and r["nnz"] == 80000
    A = gallery.random_fixed_nnz(4000, 20)
    topo = make_topology(size=32, ppn=4)
    for s in ["standard", "node-aware", "node-aware-2step"]:
        stats = virtual.plan_stats(virtual.plans(A, partition(A, 32), strategy=s, topology=topo), topo)
        assert r["strategies"][s]["max"]["msgs_sent_inter"] == max(x.total()["msgs_sent_inter"] for x in stats)
        assert r["strategies"][s]["steps"] == {"standard": 1, "node-aware": 3, "node-aware-2step": 2}[s]
    # A random matrix needs every node from every node: 3-step sends one message per node pair.
    assert r["strategies"]["node-aware"]["max"]["msgs_sent_inter"] <= 2  # 7 node pairs over 4 ranks
    assert r["strategies"]["standard"]["max"]["msgs_sent_inter"] == 28  # every off-node rank
    best = min(v["max"]["msgs_sent_inter"] for v in r["strategies"].values())
    assert r["strategies"]["auto"]["max"]["msgs_sent_inter"] == best


def test_volume_matrix_sums_to_bytes_sent():
    A = gallery.poisson2d(40)
    topo = make_topology(size=8, ppn=2, layout="round-robin")
    plans = virtual.plans(A, partition(A, 8), strategy="node-aware", topology=topo)
    stats = virtual.plan_stats(plans, topo)
    sent = sum(s.total()["bytes_sent_inter"] + s.total()["bytes_sent_intra"] for s in stats)
    N = volume_matrix(plans, topo, "node")
    R = volume_matrix(plans, topo, "rank")
    assert N.shape == (4, 4) and R.shape == (8, 8)
    assert N.sum() == R.sum() == sent
    assert np.trace(N) == sum(s.total()["bytes_sent_intra"] for s in stats)


@pytest.mark.parametrize("kwargs,msg", [
    (dict(nprocs=6, ppn=4, strategies=["standard"], gen="poisson2d:8"), "does not divide"),
    (dict(nprocs=4, ppn=8, strategies=["standard"], gen="poisson2d:8"), "larger than the world size"),
    (dict(nprocs=4, ppn=2, strategies=["smoke-signals"], gen="poisson2d:8"), "unknown communication strategy"),
    (dict(nprocs=100, ppn=2, strategies=["standard"], gen="poisson2d:8"), "more ranks than rows"),
])
def test_bad_input(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        analyze(**kwargs)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "commsolve", "analyze", *args], capture_output=True, text=True,
                          timeout=300)


def test_cli_json_and_pictures(tmp_path):
    plot, heat = tmp_path / "bars.png", tmp_path / "heat.png"
    p = run_cli("--gen", "poisson3d:24", "--procs", "64", "--ppn", "8", "--plot", str(plot), "--heatmap", str(heat),
                "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert set(r["strategies"]) == {"standard", "node-aware", "node-aware-2step"}
    for png in (plot, heat):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_cli_rank_heatmap_and_text(tmp_path):
    heat = tmp_path / "ranks.png"
    p = run_cli("--gen", "random:rows_per_rank=50,nnz_per_row=5", "--procs", "16", "--ppn", "4",
                "--heatmap", str(heat), "--heatmap-level", "rank", "--strategy", "standard,auto")
    assert p.returncode == 0, p.stderr
    assert "standard" in p.stdout and "auto->" in p.stdout
    assert heat.stat().st_size > 10_000


@pytest.mark.parametrize("args,msg", [
    (["--gen", "poisson2d:8", "--procs", "6", "--ppn", "4"], "ppn 4 does not divide the world size 6"),
    (["--gen", "poisson2d:8", "--procs", "4", "--ppn", "2", "--strategy", "nope"], "unknown communication strategy"),
    (["--procs", "4", "--ppn", "2"], "exactly one of --gen SPEC or --matrix FILE"),
])
def test_cli_errors(args, msg):
    p = run_cli(*args)
    assert p.returncode != 0 and msg in p.stderr
