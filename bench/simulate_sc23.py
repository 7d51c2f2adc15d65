"""The SC'23 paper's Cori Haswell experiment (its Section 4.1, Figure 4), predicted by the
simulator: the 2D solve, the ICS'19 3D baseline and the SC'23 3D solve of one matrix for
P = 128 .. 2,048 ranks and Pz = 1 .. 32 (Px ~ Py, as the paper sets them), with the bundled
cori-haswell profile (32 ranks per node), every rank's schedule the one the MPI code runs.

The ICS'19 baseline (SuperLU_DIST's pdgstrs3d) solves its leaf forests message-driven with
flat broadcasts and reductions inside each grid (the SC'23 paper counts the trees among its
improvements) and the forests above, and every phase's ancestors, one supernode at a time
over whole process rows and columns: it is simulated both ways, flat (``3d-baseline-flat``,
the paper's baseline) and with the same binary trees as the new solve (``3d-baseline``).
``3d-baseline-async`` (binary trees) runs the baseline's levels and inter-grid steps with
every forest message-driven: what the synchronous upper levels cost.

Reported per (P, Pz): predicted time and the slowest rank's breakdown (floating point, XY
communication, Z communication, b/x moves, idle) per algorithm; per P: the best Pz of each
3D algorithm; and the speedups the paper reports, beside its figures: "up to" 3D new over
3D baseline (the largest ratio at any P and Pz) and over 2D (the new solve at its best Pz
against Pz = 1, per P, largest). The matrices stand in for the paper's: poisson2d9:2048 is
its s2D9pt2048 itself (a 9-point Laplacian on a 2048^2 grid); kkt3d:70 (1.03M rows, a KKT
matrix of a 3D PDE-constrained problem with a zero block, symmetric indefinite) for
nlpkkt80 (1.06M rows, the same kind), not available here.

    python bench/simulate_sc23.py [--matrices poisson2d9:2048,kkt3d:70] [--procs 128,256,512,1024,2048]
                                  [--profile cori-haswell] [--out bench/results/simulate_sc23.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json

import numpy as np
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from spmv_local import machine  # noqa: E402

from commsolve import direct, gallery  # noqa: E402
from commsolve.sim.models import simulation_profile  # noqa: E402
from commsolve.sim.study import simulate_algorithms  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PAPER = {  # SC'23 Section 4.1, Cori Haswell, P = 128 .. 2,048, Pz = 1 .. 32: "up to" speedups
    "s2D9pt2048": {"rows": 4194304, "new_vs_baseline": 3.45, "new_vs_2d": 2.2},
    "nlpkkt80": {"rows": 1062400, "new_vs_baseline": 1.87, "new_vs_2d": 1.1},
}
STAND_IN = {"poisson2d9:2048": "s2D9pt2048", "kkt3d:70": "nlpkkt80"}
PZ = (1, 2, 4, 8, 16, 32)
BASELINES = ("3d-baseline", "3d-baseline-flat", "3d-baseline-async")


def matrix_study(spec, pz=32):
    """The symbolic structure of ``spec`` for grids of up to ``pz`` layers, and the record a
    study at the paper's scale starts from (the matrix, what it stands for, its size)."""
    t0 = time.perf_counter()
    A = gallery.from_spec(spec)
    S = direct.symbolic(A, pz)
    return S, {"matrix": spec, "stands_for": STAND_IN.get(spec), "rows": int(A.shape[0]), "nnz_L": int(S.nnz_L),
               "supernodes": int(S.nsuper), "symbolic_s": time.perf_counter() - t0, "runs": []}


def study(spec, procs, profile, ppn):
    S, out = matrix_study(spec, max(PZ))
    for P in procs:
        for pz in PZ:
            if pz > P:
                continue
            grid = direct.parse_grid(None, P // pz)[:2] + (pz,)
            # the 2D solve and the 3D solves with binary trees; and the baseline with flat
            # trees, as ICS'19 had it (the trees are one of the SC'23 paper's improvements)
            variants = [("binary", ["2d"] if pz == 1 else ["3d-baseline", "3d-baseline-async", "3d"])]
            if pz > 1:
                variants.append(("flat", ["3d-baseline"]))
            results = {}
            for tree, algorithms in variants:
                r, _ = simulate_algorithms(None, grid, algorithms, profile, ppn=ppn, tree=tree, structure=S)
                for a, res in r["algorithms"].items():
                    results[a if tree == "binary" else f"{a}-flat"] = res
            for a, res in results.items():
                row = {"P": P, "pz": pz, "algorithm": a, "grid": res["grid"], "predicted_s": res["predicted_s"],
                       "breakdown": res["breakdown"], "messages": res["messages"], "events": res["events"],
                       "events_per_s": res["events_per_s"], "simulate_s": res["simulate_s"],
                       "build_s": res["build_s"]}
                out["runs"].append(row)
                print(f"{spec} P={P:5d} {'x'.join(map(str, res['grid'])):>10} {a:<18} "
                      f"{res['predicted_s'] * 1e3:9.3f} ms  ({res['events']:,} events, "
                      f"{res['events_per_s']:.2e}/s)", file=sys.stderr, flush=True)
    return out


def speedups(out):
    t = {(r["P"], r["pz"], r["algorithm"]): r["predicted_s"] for r in out["runs"]}
    per_p = []
    for P in sorted({r["P"] for r in out["runs"]}):
        best = {}
        for a in BASELINES + ("3d",):
            cand = [(t[P, pz, a], pz) for pz in PZ if (P, pz, a) in t]
            if cand:
                best[a] = min(cand)
        two_d = t.get((P, 1, "2d"))
        row = {"P": P, "t_2d_s": two_d,
               **{f"best_{a}": {"t_s": v[0], "pz": v[1]} for a, v in best.items()}}
        if "3d" in best and two_d:
            row["new_vs_2d"] = two_d / min(best["3d"][0], two_d)  # the new solve at Pz = 1 is the 2D solve
        for base in BASELINES:
            if "3d" in best and base in best:
                row[f"best_new_vs_best_{base}"] = best[base][0] / best["3d"][0]
            row[f"new_vs_{base}_same_pz"] = {pz: t[P, pz, base] / t[P, pz, "3d"] for pz in PZ if (P, pz, "3d") in t}
        per_p.append(row)

    def up_to(base):
        return max((v for row in per_p for v in row[f"new_vs_{base}_same_pz"].values()), default=None)

    return {"per_P": per_p, "up_to_new_vs_baseline": up_to("3d-baseline"),
            "up_to_new_vs_baseline_flat": up_to("3d-baseline-flat"),
            "up_to_new_vs_baseline_async": up_to("3d-baseline-async"),
            "up_to_new_vs_2d": max((row.get("new_vs_2d", 0) for row in per_p), default=None)}


def plot(doc, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from matplotlib.ticker import NullFormatter

    studies = doc["studies"]
    fig, axes = plt.subplots(1, len(studies), figsize=(7 * len(studies), 5.2), squeeze=False)
    colors = plt.get_cmap("viridis")(np.linspace(0, 0.9, len(PZ) - 1))
    for ax, s in zip(axes[0], studies):
        runs = s["runs"]
        procs = sorted({r["P"] for r in runs})
        for color, pz in zip(colors, PZ[1:]):
            for a, style in (("3d", "-"), ("3d-baseline", "--"), ("3d-baseline-flat", ":"), ("3d-baseline-async", "-.")):
                pts = [(r["P"], r["predicted_s"] * 1e3) for r in runs if r["pz"] == pz and r["algorithm"] == a]
                if pts:
                    ax.plot(*zip(*pts), style, color=color, marker="o" if a == "3d" else None, ms=3,
                            label=f"{a} Pz={pz}")
        pts = [(r["P"], r["predicted_s"] * 1e3) for r in runs if r["algorithm"] == "2d"]
        ax.plot(*zip(*pts), "k-", lw=2, marker="s", label="2d (Pz=1)")
        sp = s["speedups"]
        ax.set(xscale="log", yscale="log", xlabel="ranks P", ylabel="predicted solve time (ms)",
               title=f"{s['matrix']} (standing for {s['stands_for']}), profile {doc['profile']}\n"
                     f"3d over 3d-baseline: up to {sp['up_to_new_vs_baseline']:.2f}x (flat trees "
                     f"{sp['up_to_new_vs_baseline_flat']:.2f}x, all message-driven "
                     f"{sp['up_to_new_vs_baseline_async']:.2f}x); over 2d: {sp['up_to_new_vs_2d']:.2f}x")
        ax.set_xticks(procs)
        ax.set_xticklabels([str(p) for p in procs])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.title.set_fontsize(9)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=6, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def paper_scale_arguments(doc, out, plot):
    """The command line of a study at the paper's scale (this one and sc23_ablation.py): the
    matrices, P, the profile (``args.prof``: loaded, with --engine-overhead applied) and ranks
    per node, the output; with --replot, only the PNG is drawn again from --out (by ``plot``)
    and None is returned."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--matrices", default="poisson2d9:2048,kkt3d:70")
    ap.add_argument("--procs", default="128,256,512,1024,2048")
    ap.add_argument("--profile", default="cori-haswell")
    ap.add_argument("--ppn", type=int, default=32)
    ap.add_argument("--engine-overhead", type=float, default=None,
                    help="seconds per message end in commsolve's message engine beyond o (the profile's otherwise: "
                         "0 for cori-haswell; 'commsolve calibrate' fits 0.8-1.9e-6 on this project's VM)")
    ap.add_argument("--out", default=os.path.join(HERE, "results", out))
    ap.add_argument("--replot", action="store_true", help="only draw the PNG again from --out")
    args = ap.parse_args()
    if args.replot:
        with open(args.out) as f:
            plot(json.load(f), os.path.splitext(args.out)[0] + ".png")
        return None
    args.prof = simulation_profile(args.profile)
    if args.engine_overhead is not None:
        args.prof = dataclasses.replace(args.prof, engine_overhead=args.engine_overhead)
    return args


def main():
    args = paper_scale_arguments(__doc__, "simulate_sc23.json", plot)
    if args is None:
        return
    procs = [int(v) for v in args.procs.split(",")]
    studies = []
    for spec in filter(None, args.matrices.split(",")):
        s = study(spec, procs, args.prof, args.ppn)
        s["speedups"] = speedups(s)
        s["paper"] = PAPER.get(s["stands_for"])
        studies.append(s)
    doc = {"benchmark": "simulate_sc23", "machine": machine(), "profile": args.profile, "ppn": args.ppn,
           "engine_overhead": args.prof.engine_overhead,
           "studies": studies}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=2)
    plot(doc, os.path.splitext(args.out)[0] + ".png")
    for s in studies:
        print(f"{s['matrix']}: up to {s['speedups']['up_to_new_vs_baseline_flat']:.2f}x over the 3D baseline with flat "
              f"trees ({s['speedups']['up_to_new_vs_baseline']:.2f}x with binary), "
              f"{s['speedups']['up_to_new_vs_2d']:.2f}x over 2D (paper, {s['stands_for']}: "
              f"{(s['paper'] or {}).get('new_vs_baseline')}x, {(s['paper'] or {}).get('new_vs_2d')}x)", file=sys.stderr)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
