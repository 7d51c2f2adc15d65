"""The 2.5D multiply and LU (issue 33): measured against ScaLAPACK, counted at virtual
scale, simulated at 65,536 ranks.

Parts (--parts, all by default):
  measured   commsolve gemm / lu against ScaLAPACK's pdgemm / pdgetrf (Debian's 2.2.1, built by
             bench/scalapack_peer.py into ~/.cache/commsolve/peers; the same n and block size,
             one thread per rank, random matrices; "lu" without pivoting on diagonally dominant
             ones (ScaLAPACK pivots but swaps no row), "lu-tournament" with tournament pivoting
             on random ones (ScaLAPACK's partial pivoting swaps rows too)), alternated --rounds
             times, medians: 1x1(x1), 1x2(x1), 2x1(x1) (pivoted LU) and 1x1x2 for commsolve (2
             ranks on this 2-core machine: reported apart). commsolve's
             time includes its plan's setup; both sides time between barriers, b and x (here
             A, B, C) already distributed.
  words      the words of panels each rank receives, counted from the plans of every rank
             (no MPI), against the leading term n^2 / sqrt(c p) (LU) and 2 n^2 / sqrt(c p)
             (multiply), for c = 1, 4, 16 at p = 1,024 and 4,096.
  simulated  strong scaling at 65,536 simulated ranks (intrepid-bgp: BG/P, 4 ranks per node,
             16,384 nodes on a 16x32x32 torus whose links the messages share) for c = 1, 4,
             16, beside the seed's 2.6x (multiply) and 2.7x (LU) of 2.5D over 2D; LU without
             pivoting and with tournament pivoting (the pivots modelled: a random matrix's).
  growth     tournament pivoting's growth max|U| / max|A| on random matrices (n = 1,000 to 3,000 on
             2 ranks) beside partial pivoting's (scipy) on the same matrices.
  lu-trees   LU with need-ordered trees (its plans list each broadcast's receivers in need order)
             against binary ones, simulated at 16,384 ranks on a torus and 4,096 without one; and
             the grid placed layers-first on the torus's nodes (z fastest) against rank order.
  multicast  one 1 MB multicast to every node of an 8x8x8 and a 16x16x16 torus, binomial and
             rectangular trees, simulated with shared links, beside the seed's models and its
             120x (1/30 of a link's bandwidth on Cray XE6 against 4x on BG/P).

Writes bench/results/dense25d.json (with the machine) and bench/results/dense25d.png.
Run: python3 bench/dense25d.py [--parts measured,growth,words,simulated,lu-trees,multicast] (simulated-lu: only
the LU cases of simulated, the multiply's kept; simulated-16k: only the pivoted and unpivoted LU in blocks
of 64 at 16,384 ranks)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from spmv_local import machine, mpi_job, write_results  # noqa: E402

import scalapack_peer  # noqa: E402
from commsolve import dense  # noqa: E402
from commsolve.sim.dense import replication_study  # noqa: E402

RESULTS = os.path.join(HERE, "results", "dense25d.json")


def ours(op, n, nb, grid):
    """One run of commsolve gemm / lu: seconds with the plan's setup (plan, trees, engine) and
    without it, and the whole report."""
    p = int(np.prod([int(v) for v in grid.split("x")]))
    pivoting = ["--pivoting", "tournament"] if op == "lu-tournament" else []
    out = mpi_job(p, [sys.executable, "-m", "mpi4py", "-m", "commsolve", "gemm" if op == "gemm" else "lu", "--n", str(n),
                      "--nb", str(nb), "--grid", grid, "--repeat", "1", "--json", "-np", str(p), *pivoting])
    r = json.loads(out[out.index("{"):])
    return r["seconds"] + r["setup_seconds"], r


def measured(sizes, nb, rounds):
    rows = []
    peer_op = {"gemm": "gemm", "lu": "getrf", "lu-tournament": "getrf-random"}
    notes = {"gemm": "commsolve's seconds include its plan's setup",
             "lu": "commsolve's seconds include its plan's setup; its LU does not pivot, ScaLAPACK's pdgetrf does "
                   "(no row moves on these diagonally dominant matrices, but it searches)",
             "lu-tournament": "commsolve's seconds include its plan's setup; both pivot on the same random matrix "
                              "(tournament against partial pivoting: the same pivots on one process row)"}
    for op, n in sizes:
        for grid in ("1x1x1", "1x2x1", "2x1x1", "1x1x2") if op == "lu-tournament" else ("1x1x1", "1x2x1", "1x1x2"):
            pr, pc, c = (int(v) for v in grid.split("x"))
            mine, peer, last = [], [], None
            for _ in range(rounds):  # alternated: the machine's drift hits both sides alike
                t, last = ours(op, n, nb, grid)
                mine.append(t)
                if c == 1:
                    peer.append(scalapack_peer.run(peer_op[op], n, nb, pr, pc, repeat=1, oversubscribe=True)["median"])
            row = {"op": op, "n": n, "nb": nb, "grid": grid, "ranks": pr * pc * c, "commsolve_s": mine,
                   "note": notes[op], "growth": last.get("growth"),
                   "commsolve_median_s": float(np.median(mine)), "check_error": last["check_error"],
                   "panel_words_received_max": last["panel_words_received"]["max"],
                   "panel_words_formula": last["panel_words_received"]["formula"],
                   "stats_recorded_equal_planned": last["stats_recorded_equal_planned"]}
            if peer:
                row.update({"scalapack_s": peer, "scalapack_median_s": float(np.median(peer)),
                            "speed_vs_scalapack": float(np.median(peer) / np.median(mine))})
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def words(n=16384, nb=32):
    rows = []
    for p in (1024, 4096):
        for c in (1, 4, 16):
            q = int(round((p / c) ** 0.5))
            if q * q * c != p:
                continue
            for kind in ("matmul", "lu"):
                st = dense.virtual_stats(kind, n, n, n, (q, q, c), nb=nb)
                roles = dense.ROLES[kind]
                panels = [roles.index(r) for r in roles if r.startswith("panel")]
                w = np.array([s.words_received(panels) for s in st], dtype=float)
                allw = np.array([s.words_received() for s in st], dtype=float)
                f = dense.words_leading_term(kind, n, n, n, (q, q, c))
                off0 = w[q * q:] if c > 1 else w  # ranks off layer 0: no gathering of the results there
                rows.append({"kind": kind, "n": n, "nb": nb, "p": p, "c": c, "grid": f"{q}x{q}x{c}",
                             "panel_words_max": float(w.max()), "formula": f, "ratio": float(w.max() / f),
                             "panel_words_max_off_layer0": float(off0.max()),
                             "ratio_off_layer0": float(off0.max() / f), "all_words_max": float(allw.max())})
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def simulated(cases, p=65536, torus=(16, 32, 32)):
    out = []
    for kind, n, nb, piece, tree, pivoting in cases:
        t = time.time()
        s = replication_study(kind, n, p, "intrepid-bgp", replications=(1, 4, 16), nb=nb, piece=piece, tree=tree,
                              torus=list(torus), pivoting=pivoting)
        s["wall_s"] = time.time() - t
        out.append(s)
        print(json.dumps({k: v for k, v in s.items() if k != "runs"}),
              {c: (round(r["predicted_s"], 3), round(r["speedup"], 2)) for c, r in s["runs"].items()},
              file=sys.stderr, flush=True)
    return out


def growth(cases=((1000, "2x1x1"), (2000, "2x1x1"), (2000, "1x2x1"), (3000, "2x1x1")), nb=64):
    """Tournament pivoting's growth max|U| / max|A| on the random matrices commsolve lu makes
    (seed 0), against partial pivoting's (scipy's getrf) on the same matrix."""
    import scipy.linalg

    from commsolve.dense import random_entries

    rows = []
    for n, grid in cases:
        _, r = ours("lu-tournament", n, nb, grid)
        A = random_entries(np.arange(n), np.arange(n), 0)
        U = np.triu(scipy.linalg.lu_factor(A, check_finite=False)[0])
        rows.append({"n": n, "nb": nb, "grid": grid, "tournament_growth": r["growth"],
                     "partial_pivoting_growth": float(np.abs(U).max() / np.abs(A).max()),
                     "check_error": r["check_error"]})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def lu_trees(n=16384, p=16384, torus=(16, 16, 16), nb=64):
    """LU's broadcasts and sums in need order (need-ordered trees: the next steps' owners first,
    the late layer's share straight to the root) against binary trees, simulated."""
    out = []
    for tree in ("binary", "need-ordered"):
        s = replication_study("lu", n, p, "intrepid-bgp", replications=(1, 4), nb=nb, piece=8192, tree=tree,
                              torus=list(torus))
        out.append({"tree": tree, "n": n, "nranks": p, "nb": nb, "torus": list(torus),
                    "predicted_s": {c: r["predicted_s"] for c, r in s["runs"].items()}})
        print(json.dumps(out[-1]), file=sys.stderr, flush=True)
    s = replication_study("lu", n, p, "intrepid-bgp", replications=(4, 16), nb=nb, piece=8192, tree="binary",
                          torus=list(torus), placement="layers")
    out.append({"tree": "binary", "placement": "layers", "n": n, "nranks": p, "nb": nb, "torus": list(torus),
                "predicted_s": {c: r["predicted_s"] for c, r in s["runs"].items()}})
    print(json.dumps(out[-1]), file=sys.stderr, flush=True)
    s = replication_study("lu", 8192, 4096, "intrepid-bgp", replications=(1, 4, 16), nb=nb, piece=8192,
                          tree="need-ordered")
    out.append({"tree": "need-ordered", "n": 8192, "nranks": 4096, "nb": nb, "torus": None,
                "predicted_s": {c: r["predicted_s"] for c, r in s["runs"].items()}})
    s = replication_study("lu", 8192, 4096, "intrepid-bgp", replications=(1, 4, 16), nb=nb, piece=8192, tree="binary")
    out.append({"tree": "binary", "n": 8192, "nranks": 4096, "nb": nb, "torus": None,
                "predicted_s": {c: r["predicted_s"] for c, r in s["runs"].items()}})
    return out


def multicast():
    from commsolve.sim.multicast import multicast_study

    out = []
    for dims in ([8, 8, 8], [16, 16, 16]):
        s = multicast_study(dims, 1 << 20, "intrepid-bgp", piece_bytes=32768)
        out.append(s)
        print(json.dumps({k: v for k, v in s.items() if k not in ("shapes",)}), file=sys.stderr, flush=True)
    return out


def plot(doc, path):
    """Simulated time per replication factor, and the multicasts' bandwidth per tree shape."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for s in doc.get("simulated", []):
        cs_ = sorted(int(c) for c in s["runs"])
        a.plot(cs_, [s["runs"][str(c)]["predicted_s"] for c in cs_], "o-",
               label=f"{s['workload']}{' pivoted' if s.get('pivoting') == 'tournament' else ''} n={s['n']:,} "
                     f"nb={s['nb']}, {s['tree']} trees")
    a.set_xscale("log", base=2)
    a.set_yscale("log")
    a.set_xlabel("replication c (grid sqrt(p/c) x sqrt(p/c) x c)")
    a.set_ylabel("simulated seconds")
    a.set_title("65,536 ranks, intrepid-bgp, 16x32x32 torus")
    a.legend(fontsize=8)
    for m in doc.get("multicast", []):
        names = list(m["shapes"])
        b.bar([f"{n}\n{'x'.join(map(str, m['dims']))}" for n in names],
              [m["shapes"][n]["link_bandwidths"] for n in names])
    b.set_ylabel("bandwidth reached / one link's")
    b.set_title("1 MB multicast to every node (simulated, shared links)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", default="measured,growth,words,simulated,lu-trees,multicast")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--nb", type=int, default=128)
    ap.add_argument("--plot-only", action="store_true", help="Redraw the PNG from the JSON.")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    doc = json.load(open(RESULTS)) if os.path.exists(RESULTS) else {}
    if args.plot_only:
        return plot(doc, os.path.splitext(RESULTS)[0] + ".png")
    doc["machine"] = machine()
    doc["seed_figures"] = {"matmul_2.5d_over_2d_65536": 2.6, "lu_2.5d_over_2d_65536": 2.7,
                           "rectangular_over_binomial_efficiency_4096_nodes": 120,
                           "source": "../shared/seeds/solomonik-topology-aware-collectives-25d.txt (2.5D MM and LU "
                                     "on 65,536 cores of BG/P)"}
    if "measured" in parts:
        scalapack_peer.build()
        doc["measured"] = measured([("gemm", 3000), ("lu", 3000), ("lu-tournament", 3000)], args.nb, args.rounds)
    if "growth" in parts:
        doc["growth"] = growth()
    if "words" in parts:
        doc["words"] = words()
    mm_cases = [("matmul", 32768, 128, 8192, "binary", "none"), ("matmul", 32768, 128, 8192, "rectangular", "none"),
                ("matmul", 65536, 256, 32768, "binary", "none")]
    # the pivoted LU in blocks of 128: its pivots' broadcasts to all 65,536 ranks every step make
    # the simulator's per-rank trees too large for this machine's memory at 512 steps
    lu_cases = [("lu", 32768, 64, 8192, "binary", "none"), ("lu", 32768, 128, 8192, "binary", "none"),
                ("lu", 32768, 128, 8192, "binary", "tournament")]
    # blocks of 64 with pivoting fit at 16,384 ranks (a 16x16x16 torus): the same comparison there
    lu_small = [("lu", 16384, 64, 8192, "binary", "none"), ("lu", 16384, 64, 8192, "binary", "tournament")]
    if "simulated" in parts:
        doc["simulated"] = simulated(mm_cases + lu_cases)
    elif "simulated-lu" in parts:  # the LU cases only, the others kept
        doc["simulated"] = [s for s in doc.get("simulated", []) if s["workload"] != "lu"] + simulated(lu_cases)
    if "simulated" in parts or "simulated-lu" in parts or "simulated-16k" in parts:
        doc["simulated_16384"] = simulated(lu_small, p=16384, torus=(16, 16, 16))
    if "lu-trees" in parts:
        doc["lu_trees"] = lu_trees()
    if "multicast" in parts:
        doc["multicast"] = multicast()
    write_results(RESULTS, doc)
    plot(doc, os.path.splitext(RESULTS)[0] + ".png")


if __name__ == "__main__":
    main()
