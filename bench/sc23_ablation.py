"""Where the SC'23 3D solve's speedup comes from: the paper's baseline, SuperLU_DIST's
pdgstrs3d (``3d-baseline-pdgstrs``), turned into the new solve one ingredient at a time,
every step simulated at the paper's scale (Cori Haswell, P = 128 .. 2,048, 32 ranks per
node, the bundled cori-haswell profile) with each P's best Pz.

The chain (each step adds one change to the one before; SolveOptions names in brackets):

  pdgstrs3d           3d-baseline-pdgstrs: flat trees in the leaf forests, dtrsm on the
                      diagonal blocks, one dgemm per L block, U blocks packed, the leaf
                      forests' counter allreduce and barrier, one blocking inter-grid
                      message per supernode, the upper levels one supernode at a time
  + binary trees      [tree=binary] the leaf forests' broadcasts and reductions on trees
  + inverted kernels  [kernels=inverted] one product with the inverted diagonal block,
                      one per L panel, no U packing
  + no leaf sync      [leaf_sync=False] no counter allreduce, no barrier
  + packed Z          [allreduce=packed] one inter-grid message per pair of ranks and step:
                      commsolve's 3d-baseline
  + async levels      3d-baseline-async: the upper levels message-driven too
  3d (SC'23)          one synchronisation between the grids instead of 2 log2 Pz

Reported per matrix and P: each step's best time over Pz = 2 .. 32 (and the 2D solve at
Pz = 1), each step's speedup over the step before and its slowest rank's breakdown
(floating point, XY communication, Z communication, b/x moves), and new over pdgstrs3d,
"up to" as the paper reports (the largest ratio at one P and Pz) and best against best;
beside the paper's 3.45x (s2D9pt2048) and 1.87x (nlpkkt80) over the baseline and 2.2x /
1.1x over 2D. poisson2d9:2048 is s2D9pt2048 itself; kkt3d:70 (1.03M rows) stands for
nlpkkt80 (1.06M rows), not available here.

    python bench/sc23_ablation.py [--matrices poisson2d9:2048,kkt3d:70] [--procs 128,...,2048]
                                  [--profile cori-haswell] [--out bench/results/sc23_ablation.json]
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from simulate_sc23 import PAPER, matrix_study, paper_scale_arguments  # noqa: E402
from spmv_local import machine  # noqa: E402

from commsolve import direct  # noqa: E402
from commsolve.direct.options import make_layout, solve_options  # noqa: E402
from commsolve.sim.solve import SolveSchedule, contiguous_rhs, simulate_solve  # noqa: E402
from commsolve.topology import blocked_topology  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PZ = (2, 4, 8, 16, 32)
PDGSTRS = dict(algorithm="3d-baseline", tree="flat", kernels="per-block", leaf_sync=True, allreduce="per-supernode")
CHAIN = [  # (step, what it changes, SolveOptions keywords)
    ("pdgstrs3d", "SuperLU_DIST's pdgstrs3d", dict(algorithm="3d-baseline-pdgstrs")),
    ("+ binary trees", "leaf forests on binary trees", dict(PDGSTRS, tree="binary")),
    ("+ inverted kernels", "inverted diagonal, one product per panel", dict(PDGSTRS, tree="binary",
                                                                             kernels="inverted")),
    ("+ no leaf sync", "no counter allreduce or barrier", dict(PDGSTRS, tree="binary", kernels="inverted",
                                                               leaf_sync=False)),
    ("+ packed Z", "one inter-grid message per step (3d-baseline)", dict(algorithm="3d-baseline")),
    ("+ async levels", "upper levels message-driven (3d-baseline-async)", dict(algorithm="3d-baseline-async")),
    ("3d (SC'23)", "one synchronisation between grids", dict(algorithm="3d")),
]


def study(spec, procs, prof, ppn):
    S, out = matrix_study(spec, max(PZ))
    for P in procs:
        topo = blocked_topology(P, ppn)
        rhs = contiguous_rhs(S, P)
        grids = [direct.parse_grid(None, P)] + [direct.parse_grid(None, P // pz)[:2] + (pz,) for pz in PZ if pz < P]
        for grid in grids:
            layout = make_layout(S, grid)
            steps = [("2d", "", dict(algorithm="2d"))] if grid[2] == 1 else CHAIN
            for name, _, kw in steps:
                sched = SolveSchedule(layout, solve_options(grid[2], **kw), 1, rhs)
                r = simulate_solve(sched, topo, prof)
                out["runs"].append({"P": P, "pz": grid[2], "grid": list(grid), "step": name,
                                    "predicted_s": r.predicted_s, "breakdown": r.breakdown(),
                                    "messages": int(r.messages[:, 0].sum()), "events": int(r.events),
                                    "simulate_s": r.run_s, "options": r.info})
                print(f"{spec} P={P:5d} {'x'.join(map(str, grid)):>10} {name:<20} {r.predicted_s * 1e3:9.3f} ms",
                      file=sys.stderr, flush=True)
    return out


def summarise(out):
    t = {(r["P"], r["pz"], r["step"]): r for r in out["runs"]}
    names = [c[0] for c in CHAIN]
    per_p = []
    for P in sorted({r["P"] for r in out["runs"]}):
        best = {}
        for name in names:
            cand = [t[P, pz, name] for pz in PZ if (P, pz, name) in t]
            if cand:
                best[name] = min(cand, key=lambda r: r["predicted_s"])
        two_d = t.get((P, 1, "2d"))
        chain = []
        for i, name in enumerate(names):
            r = best[name]
            step = {"step": name, "t_s": r["predicted_s"], "pz": r["pz"], "breakdown": r["breakdown"]}
            if i:
                step["speedup_over_previous"] = best[names[i - 1]]["predicted_s"] / r["predicted_s"]
            chain.append(step)
        same_pz = {pz: t[P, pz, names[0]]["predicted_s"] / t[P, pz, names[-1]]["predicted_s"]
                   for pz in PZ if (P, pz, names[-1]) in t}
        row = {"P": P, "t_2d_s": two_d["predicted_s"] if two_d else None, "chain": chain,
               "best_new_vs_best_pdgstrs": best[names[0]]["predicted_s"] / best[names[-1]]["predicted_s"],
               "best_new_vs_best_3d_baseline": best["+ packed Z"]["predicted_s"] / best[names[-1]]["predicted_s"],
               "new_vs_pdgstrs_same_pz": same_pz}
        if two_d:
            row["new_vs_2d"] = two_d["predicted_s"] / min(best[names[-1]]["predicted_s"], two_d["predicted_s"])
        per_p.append(row)
    return {"per_P": per_p,
            "up_to_new_vs_pdgstrs": max(v for row in per_p for v in row["new_vs_pdgstrs_same_pz"].values()),
            "best_new_vs_best_pdgstrs": max(row["best_new_vs_best_pdgstrs"] for row in per_p),
            "up_to_new_vs_2d": max((row.get("new_vs_2d", 0) for row in per_p), default=None)}


def plot(doc, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    studies = doc["studies"]
    fig, axes = plt.subplots(2, len(studies), figsize=(7.5 * len(studies), 9), squeeze=False)
    colors = plt.get_cmap("viridis")(np.linspace(0, 0.95, len(CHAIN)))
    engine = doc.get("engine_overhead") or 0.0
    where = doc["profile"] + (f" + engine {engine * 1e6:.1f} us/msg" if engine else "")
    for col, s in enumerate(studies):
        per_p = s["summary"]["per_P"]
        procs = [row["P"] for row in per_p]
        ax = axes[0, col]
        for i, (name, _, _) in enumerate(CHAIN):
            ax.plot(procs, [row["chain"][i]["t_s"] * 1e3 for row in per_p], "-o", ms=3, color=colors[i], label=name)
        ax.plot(procs, [row["t_2d_s"] * 1e3 for row in per_p], "k--s", ms=3, label="2d (Pz = 1)")
        paper = s.get("paper") or {}
        ax.set(xscale="log", yscale="log", xlabel="ranks P", ylabel="predicted solve time, best Pz (ms)",
               title=f"{s['matrix']} (for {s['stands_for']}), {where}: new over pdgstrs3d up to "
                     f"{s['summary']['up_to_new_vs_pdgstrs']:.2f}x (paper {paper.get('new_vs_baseline')}x)")
        ax.set_xticks(procs)
        ax.set_xticklabels([str(p) for p in procs])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.title.set_fontsize(9)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
        # the chain at the largest P: each step's time split by category
        ax = axes[1, col]
        last = per_p[-1]
        cats = ("fp_s", "xy_comm_s", "z_comm_s", "redistribute_s", "idle_s")
        bottom = np.zeros(len(CHAIN))
        for c, color in zip(cats, plt.get_cmap("tab10")(range(len(cats)))):
            vals = np.array([step["breakdown"].get(c, 0.0) * 1e3 for step in last["chain"]])
            ax.bar(range(len(CHAIN)), vals, bottom=bottom, color=color, label=c[:-2])
            bottom += vals
        for i, step in enumerate(last["chain"]):
            label = f"Pz={step['pz']}" + (f"\n{step['speedup_over_previous']:.2f}x" if i else "")
            ax.text(i, bottom[i], label, ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(CHAIN)))
        ax.set_xticklabels([c[0] for c in CHAIN], rotation=25, ha="right", fontsize=7)
        ax.set_ylim(top=1.2 * bottom.max())
        ax.set(ylabel="slowest rank's time (ms)",
               title=f"P = {last['P']}: the chain step by step (Pz, speedup over the step before)")
        ax.title.set_fontsize(9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    args = paper_scale_arguments(__doc__, "sc23_ablation.json", plot)
    if args is None:
        return
    procs = [int(v) for v in args.procs.split(",")]
    prof = args.prof
    studies = []
    for spec in filter(None, args.matrices.split(",")):
        s = study(spec, procs, prof, args.ppn)
        s["summary"] = summarise(s)
        s["paper"] = PAPER.get(s["stands_for"])
        studies.append(s)
    doc = {"benchmark": "sc23_ablation", "machine": machine(), "profile": args.profile, "ppn": args.ppn,
           "engine_overhead": prof.engine_overhead,
           "chain": [{"step": n, "changes": what, "options": kw} for n, what, kw in CHAIN], "studies": studies}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=2)
    plot(doc, os.path.splitext(args.out)[0] + ".png")
    for s in studies:
        sm, paper = s["summary"], s["paper"] or {}
        print(f"{s['matrix']}: new over pdgstrs3d up to {sm['up_to_new_vs_pdgstrs']:.2f}x (best against best "
              f"{sm['best_new_vs_best_pdgstrs']:.2f}x; paper {paper.get('new_vs_baseline')}x), over 2D "
              f"{sm['up_to_new_vs_2d']:.2f}x (paper {paper.get('new_vs_2d')}x)", file=sys.stderr)
        for step in sm["per_P"][-1]["chain"]:
            print(f"  P={sm['per_P'][-1]['P']} {step['step']:<20} {step['t_s'] * 1e3:8.3f} ms Pz={step['pz']:<3} "
                  f"{step.get('speedup_over_previous', 1.0):.2f}x", file=sys.stderr)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
