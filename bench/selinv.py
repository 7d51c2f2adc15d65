"""Parallel selected inversion (issue 32; the PSelInv paper) against a real peer, against
solving with unit vectors, and at scale in the simulator.

Measured here (1 and 2 ranks, one thread each, side by side in one run; medians of --repeat):
  - commsolve: the distributed factorization and its selected inverse, every entry of A^-1
    in the pattern of the factors, gathered on rank 0 (bench/selinv_run.py): the symmetric
    form for the SPD matrices, the unsymmetric one (row matching and scaling) for the
    convection-diffusion matrix;
  - MUMPS 5.5.1 (Debian's libmumps-dev): analysis, factorization and its computation of
    requested entries of A^-1 (ICNTL(30) = 1) with the sparsity pattern of A requested,
    through bench/mumps_selinv.c (built with mpicc into ~/.cache/commsolve/peers); MUMPS
    computes fewer entries (A's pattern, not the factors'); both are checked against each
    other at A's pattern (independent codes);
  - commsolve's own triangular solves with unit vectors (every column of A^-1, --unit-block
    at a time, the same factors), for the matrices up to --unit-max-rows rows.
Per-rank volumes (the paper's Table I: Col-Bcast sent, Row-Reduce received; min, max,
median, std) of the real plan on the --table-grids virtual grids, per tree shape, for the
gallery's surrogates of the paper's matrices (elasticity3d for audikw_1, dg3d for
DG_PNF14000). Simulated strong scaling: the same schedules replayed by the discrete-event
simulator (commsolve.sim.simulate_selinv) on --grids with the --profile machine (edison:
Cray XC30, 24 ranks a node), per tree shape: predicted time, speedup over flat trees,
communication/computation ratio, beside the paper's reported figures; and the same schedule
with the computation, the network's rates or its latencies scaled (--sense-matrix on
--sense-grid), to show which regime favours trees.

    python3 bench/selinv.py [--procs 1,2] [--repeat 3] [--table-grids 46x46,110x110]
                            [--grids 16x16,32x32,46x46,64x64,110x110] [--profile edison]
                            [--parts measured,table1,simulated,sensitivity]

writes bench/results/selinv.json (with the machine) and bench/results/selinv.png; with
--parts, only those parts are run and replace theirs in an existing JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.sparse as sp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from spmv_local import machine, mpi_job, write_results  # noqa: E402

from commsolve import _core, direct, gallery  # noqa: E402
from commsolve.direct.selinv import role_volumes  # noqa: E402
from commsolve.stats import CommStats  # noqa: E402
from commsolve.topology import blocked_topology  # noqa: E402
from commsolve.trees import tree_shape  # noqa: E402

PEER = os.path.expanduser("~/.cache/commsolve/peers/mumps_selinv")
SHAPES = ("flat", "binary", "shifted-binary")
# The paper's figures (pselinv-tree-based-asynchronous-communication, Section V)
PAPER = {"table1_audikw_46x46_colbcast_std_mb": {"flat": 8.25, "shifted-binary": 3.33},
         "speedup_over_flat_avg": {"binary": 2.4, "shifted-binary": 3.0},
         "speedup_over_flat_12100_dg_pnf14000": {"binary": 6.15, "shifted-binary": 8.0},
         "comm_comp_ratio_4096": {"flat": 11.8, "shifted-binary": 1.9}}


def build_peer():
    """MUMPS's driver, compiled once into the cache (never into the project)."""
    src = os.path.join(HERE, "mumps_selinv.c")
    if os.path.exists(PEER) and os.path.getmtime(PEER) >= os.path.getmtime(src):
        return PEER
    os.makedirs(os.path.dirname(PEER), exist_ok=True)
    subprocess.run([shutil.which("mpicc"), "-O2", "-std=c99", "-o", PEER, src, "-ldmumps", "-lmumps_common"],
                   check=True)
    return PEER


def mpirun(nprocs, argv, timeout=3600):
    """The JSON line a job prints last."""
    return json.loads([line for line in mpi_job(nprocs, argv, timeout).splitlines() if line.startswith("{")][-1])


def write_coo(A, path):
    """MUMPS's input: n, nnz, then rows, columns (int32, 0-based) and values, in CSR order."""
    C = sp.csr_matrix(A).tocoo()
    with open(path, "wb") as f:
        np.array([A.shape[0], C.nnz], dtype=np.int64).tofile(f)
        C.row.astype(np.int32).tofile(f)
        C.col.astype(np.int32).tofile(f)
        C.data.astype(np.float64).tofile(f)


def read_values(path):
    with open(path, "rb") as f:
        n = int(np.fromfile(f, dtype=np.int64, count=1)[0])
        return np.fromfile(f, dtype=np.float64, count=n)


def measured(args, tmp):
    peer = build_peer()
    out = []
    for spec, form in args.matrices:
        A = gallery.from_spec(spec)
        coo = os.path.join(tmp, "A.bin")
        write_coo(A, coo)
        for p in args.procs:
            print(f"  {spec} on {p} rank(s)", file=sys.stderr, flush=True)
            ours_path, peer_path = os.path.join(tmp, "ours.npy"), os.path.join(tmp, "mumps.bin")
            unit = args.unit_block if A.shape[0] <= args.unit_max_rows else 0
            ours = mpirun(p, [sys.executable, "-m", "mpi4py", os.path.join(HERE, "selinv_run.py"), spec,
                              str(args.repeat), args.tree, form, ours_path, str(unit)])
            mumps = mpirun(p, [peer, coo, peer_path, str(args.repeat)])
            mine, theirs = np.load(ours_path), read_values(peer_path)
            agree = float(np.abs(mine - theirs).max() / np.abs(theirs).max())
            ours_total = ours["factor_s"] + ours["selinv_s"]
            mumps_total = mumps["analysis_s"] + mumps["factor_s"] + mumps["inverse_s"]
            out.append({"matrix": spec, "procs": p, "commsolve": ours, "mumps": mumps,
                        "agreement_at_A_pattern": agree,
                        "speedup_over_mumps": {"total": mumps_total / ours_total,
                                               "inverse_phase": mumps["inverse_s"] / ours["selinv_s"]},
                        "unit_vectors_over_selinv": (ours["unit_vectors"]["seconds"] / ours["selinv_s"]
                                                     if ours["unit_vectors"] else None)})
    return out


def table1(args):
    out = {}
    for spec in args.table_matrices:
        S = direct.symbolic(gallery.from_spec(spec))
        out[spec] = {"rows": int(S.n), "supernodes": int(S.nsuper), "nnz_L": int(S.nnz_L), "grids": {}}
        for grid in args.table_grids:
            print(f"  Table I: {spec} on {grid}", file=sys.stderr, flush=True)
            pr, pc = (int(v) for v in grid.split("x"))
            layout = direct.make_layout(S, (pr, pc, 1))
            topo = blocked_topology(pr * pc, 24)
            rows = {}
            for shape in SHAPES:
                per = [CommStats(a) for a in _core.selinv_stats_virtual(layout, tree_shape(shape), topo, True)]
                rows[shape] = {"col_bcast_sent_bytes": role_volumes(per, "col_bcast"),
                               "row_reduce_received_bytes": role_volumes(per, "row_reduce", received=True)}
            std = lambda s: rows[s]["col_bcast_sent_bytes"]["std"]  # noqa: E731
            out[spec]["grids"][grid] = {"shapes": rows, "colbcast_std_shifted_over_flat":
                                        std("shifted-binary") / std("flat") if std("flat") else None}
    return out


def scaling(args):
    from commsolve.sim import selinv_schedule
    from commsolve.sim.selinv import shape_study

    out = {}
    for spec in args.scale_matrices:
        S = direct.symbolic(gallery.from_spec(spec))
        runs = {}
        for g in args.grids:
            pr, pc = (int(v) for v in g.split("x"))
            print(f"  simulated: {spec} on {g}", file=sys.stderr, flush=True)
            t = time.perf_counter()
            study, _ = shape_study(selinv_schedule(S, (pr, pc), True), blocked_topology(pr * pc, 24), SHAPES,
                                   args.profile)
            runs[g] = {"ranks": pr * pc, "wall_s": time.perf_counter() - t,
                       "shapes": {s: {k: v[k] for k in ("predicted_s", "speedup_over_flat", "comm_compute_ratio",
                                                          "breakdown", "messages", "col_bcast_sent_bytes",
                                                          "row_reduce_received_bytes")}
                                  for s, v in study["shapes"].items()}}
        out[spec] = {"rows": int(S.n), "supernodes": int(S.nsuper), "grids": runs}
    return out


def sensitivity(args):
    """Why the simulated trees differ from the paper's: the same schedule on --sense-grid with
    the profile as it is, with computation 100x faster (communication alone), with every
    network rate 100x lower (bandwidth-bound) and with every latency 10x lower."""
    from commsolve.model import load_profile
    from commsolve.sim import selinv_schedule, simulate

    S = direct.symbolic(gallery.from_spec(args.sense_matrix))
    pr, pc = (int(v) for v in args.sense_grid.split("x"))
    topo = blocked_topology(pr * pc, 24)

    def variant(change):
        prof = load_profile(args.profile)
        change(prof)
        times = {s: simulate(selinv_schedule(S, (pr, pc), True, s), topo, prof).predicted_s for s in SHAPES}
        return {"predicted_s": times, "speedup_over_flat": {s: times["flat"] / t for s, t in times.items()}}

    def scale(d, f):
        for k in d:
            d[k] *= f

    def slow_network(p):
        scale(p.rate, 0.01)
        scale(p.injection, 0.01)

    def fast_latency(p):
        scale(p.alpha, 0.1)
        p.overhead *= 0.1

    def fast_compute(p):
        for k in ("flop_rate", "bandwidth", "copy_rate"):
            p.compute[k] *= 100

    print(f"  sensitivity: {args.sense_matrix} on {args.sense_grid}", file=sys.stderr, flush=True)
    return {"matrix": args.sense_matrix, "grid": args.sense_grid,
            "as_is": variant(lambda p: None), "compute_100x_faster": variant(fast_compute),
            "network_rates_100x_lower": variant(slow_network), "latency_10x_lower": variant(fast_latency)}


def plot(doc, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    specs = list(doc["simulated"])
    fig, axes = plt.subplots(1, len(specs) + 1, figsize=(5 * (len(specs) + 1), 4))
    for ax, spec in zip(axes, specs):
        grids = doc["simulated"][spec]["grids"]
        ranks = [g["ranks"] for g in grids.values()]
        for s in SHAPES:
            ax.loglog(ranks, [g["shapes"][s]["predicted_s"] for g in grids.values()], "o-", label=s)
        ax.set(title=f"{spec}: simulated, {doc['profile']}", xlabel="ranks", ylabel="predicted seconds")
        ax.legend()
    ax = axes[-1]
    rows = doc["measured"]
    labels = [f"{r['matrix']}\nP={r['procs']}" for r in rows]
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r["commsolve"]["factor_s"] + r["commsolve"]["selinv_s"] for r in rows], 0.4, label="commsolve")
    ax.bar(x + 0.2, [r["mumps"]["analysis_s"] + r["mumps"]["factor_s"] + r["mumps"]["inverse_s"] for r in rows], 0.4,
           label="MUMPS 5.5.1")
    ax.set_xticks(x, labels, rotation=60, fontsize=7)
    ax.set(title="measured here: factor + inverse entries", ylabel="seconds")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--procs", default="1,2")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tree", default="shifted-binary")
    ap.add_argument("--unit-block", type=int, default=256)
    ap.add_argument("--unit-max-rows", type=int, default=15000)
    ap.add_argument("--matrices", default="poisson3d:24:symmetric;elasticity3d:14:symmetric;"
                    "dg3d:10,dofs=8:symmetric;poisson2d9:200:symmetric;convdiff2d:150,pe=50:unsymmetric")
    ap.add_argument("--table-grids", default="46x46,110x110")
    ap.add_argument("--table-matrices", default="elasticity3d:40;dg3d:20,dofs=16")
    ap.add_argument("--scale-matrices", default="elasticity3d:40")
    ap.add_argument("--grids", default="16x16,32x32,46x46,64x64,110x110")
    ap.add_argument("--profile", default="edison")
    ap.add_argument("--sense-matrix", default="elasticity3d:30")
    ap.add_argument("--sense-grid", default="46x46")
    ap.add_argument("--parts", default="measured,table1,simulated,sensitivity")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "selinv.json"))
    args = ap.parse_args()
    args.procs = [int(p) for p in args.procs.split(",")]
    args.matrices = [tuple(m.rsplit(":", 1)) for m in args.matrices.split(";")]
    args.table_matrices = args.table_matrices.split(";")
    args.scale_matrices = args.scale_matrices.split(";")
    args.grids = args.grids.split(",")
    args.table_grids = args.table_grids.split(",")
    parts = args.parts.split(",")
    t0 = time.perf_counter()
    doc = {}
    if set(parts) != {"measured", "table1", "simulated", "sensitivity"} and os.path.exists(args.out):
        with open(args.out) as f:
            doc = json.load(f)
    doc.update({"benchmark": "selinv", "date": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": machine(),
                "profile": args.profile, "tree": args.tree, "repeat": args.repeat, "paper": PAPER})
    if "measured" in parts:
        with tempfile.TemporaryDirectory() as tmp:
            doc["measured"] = measured(args, tmp)
    if "table1" in parts:
        doc["table1"] = table1(args)
    if "simulated" in parts:
        doc["simulated"] = scaling(args)
    if "sensitivity" in parts:
        doc["sensitivity"] = sensitivity(args)
    doc[f"wall_s_{'_'.join(parts)}"] = time.perf_counter() - t0
    write_results(args.out, doc)
    plot(doc, os.path.splitext(args.out)[0] + ".png")
    for r in doc["measured"]:
        c, m = r["commsolve"], r["mumps"]
        print(f"{r['matrix']:<28} P={r['procs']}  commsolve factor {c['factor_s']:.3f} + selinv {c['selinv_s']:.3f} s"
              f" | MUMPS {m['analysis_s']:.3f} + {m['factor_s']:.3f} + inverse {m['inverse_s']:.3f} s"
              f" | total {r['speedup_over_mumps']['total']:.2f}x, inverse phase "
              f"{r['speedup_over_mumps']['inverse_phase']:.2f}x"
              + (f" | unit vectors {r['unit_vectors_over_selinv']:.1f}x selinv" if r["unit_vectors_over_selinv"]
                 else "") + f" | agree {r['agreement_at_A_pattern']:.1e}")
    for spec, t in doc["table1"].items():
        for grid, g in t["grids"].items():
            print(f"Table I {spec} on {grid}: Col-Bcast std shifted/flat "
                  f"{g['colbcast_std_shifted_over_flat']:.2f} (paper, audikw_1 on 46x46: 0.40)")
    for name, v in doc["sensitivity"].items():
        if isinstance(v, dict):
            print(f"sensitivity {doc['sensitivity']['matrix']} {doc['sensitivity']['grid']} {name}: " + ", ".join(
                f"{k} {t:.2f}x flat" for k, t in v["speedup_over_flat"].items()))
    for spec, s in doc["simulated"].items():
        for g, run in s["grids"].items():
            print(f"simulated {spec} {g}: " + ", ".join(
                f"{k} {v['predicted_s']:.3f} s ({v['speedup_over_flat']:.2f}x flat, comm/comp "
                f"{v['comm_compute_ratio']:.1f})" for k, v in run["shapes"].items()))


if __name__ == "__main__":
    main()
