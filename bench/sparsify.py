"""Sparsified AMG (issue 30; thesis Chapter 4) against plain AMG and against hypre's own
non-Galerkin coarse operators, on problems shaped as the thesis' two: the 3D 27-point
Laplacian (commsolve's 26 / -1 stencil, not the thesis' Q1 finite elements) and 2D rotated
anisotropic diffusion (theta = pi/8, eps = 0.001; central differences, 9 points, not Q1).

hypre's non-Galerkin (par_nongalerkin.c) differs from commsolve's in details the comparison
keeps: it keeps an entry only when |a_ij| > gamma x the row's largest off-diagonal one (the
thesis and commsolve: >=, so gamma = 1 keeps each row's largest here and not in hypre), and
it lumps with weights of its own.

Measured here, at 1 and 2 ranks (one thread each; median of --repeat runs, side by side in
one job): iterations of AMG-PCG to rtol 1e-8, setup and solve time, time per iteration, the
nonzeros of every level before and after sparsification, for commsolve's Galerkin,
non-Galerkin, sparse and hybrid Galerkin hierarchies (bench/sparsify_run.py) and for hypre
2.26's BoomerAMG-PCG with and without HYPRE_BoomerAMGSetLevelNonGalerkinTol at the same
tolerances (bench/hypre_amg.c, built with mpicc into ~/.cache/commsolve/peers: PETSc 3.18's
PCHYPRE has no option for it). Both: PMIS, extended+i with at most 4 entries per row,
strength 0.25, hybrid Gauss-Seidel forward down and backward up.

Modelled at scale (the model problems are larger: 100,000 ranks need more rows than
ranks): each hierarchy is set up once in this process and one AMG-CG iteration's halo
exchanges (every level's operator and P) are replayed by the simulator on 8,192 and 100,000
virtual ranks with a machine profile (commsolve.sim.amg), next to CG's iterations here.

    python3 bench/sparsify.py [--size-3d 40] [--size-2d 256] [--model-3d 100] [--model-2d 1000]
                              [--procs 1,2] [--repeat 3] [--ranks 8192,100000] [--profile cori-haswell]

writes bench/results/sparsify.json (with the machine).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.sparse as sp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from spmv_local import machine, mpi_job  # noqa: E402

from commsolve import gallery  # noqa: E402

PEER = os.path.expanduser("~/.cache/commsolve/peers/hypre_amg")
# (label, method, lumping) of commsolve's hierarchies; gamma per problem below
METHODS = (("galerkin", None, None), ("non-galerkin", "non-galerkin", None), ("sparse", "sparse", "diagonal"),
           ("hybrid", "hybrid", "diagonal"))


def problems(args):
    """name -> (measured spec, model spec, {label: gamma}): the thesis' tolerances (Laplace:
    nothing dropped on the first coarse level, 1.0 after, its 'ideal'; anisotropic: later and
    gentler, 0.1 from the second coarse level) and an aggressive one (1.0 everywhere)."""
    aniso = "eps=0.001,theta=22.5"
    return {"laplace27": (f"poisson3d27:{args.size_3d}", f"poisson3d27:{args.model_3d}",
                          {"thesis": "0,1", "aggressive": "1"}),
            "aniso": (f"aniso2d:{args.size_2d},{aniso}", f"aniso2d:{args.model_2d},{aniso}",
                      {"thesis": "0,0.1", "aggressive": "1"})}


def build_peer():
    """hypre's driver, compiled once into the cache (never into the project)."""
    src = os.path.join(HERE, "hypre_amg.c")
    if os.path.exists(PEER) and os.path.getmtime(PEER) >= os.path.getmtime(src):
        return PEER
    os.makedirs(os.path.dirname(PEER), exist_ok=True)
    subprocess.run([shutil.which("mpicc"), "-O2", "-o", PEER, src, "-I/usr/include/hypre", "-lHYPRE", "-lm"],
                   check=True)
    return PEER


def write_csr(A, path):
    A = sp.csr_matrix(A)
    with open(path, "wb") as f:
        np.array([A.shape[0], A.nnz], dtype=np.int64).tofile(f)
        A.indptr.astype(np.int64).tofile(f)
        A.indices.astype(np.int64).tofile(f)
        A.data.astype(np.float64).tofile(f)


def summary(runs, levels):
    """Medians over the repetitions; the levels of the first."""
    ok = [r for r in runs if r.get("iterations")]
    med = {k: statistics.median(r[k] for r in runs) for k in ("setup_s", "solve_s")}
    its = [r["iterations"] for r in runs]
    per_it = statistics.median(r["solve_s"] / r["iterations"] for r in ok) if ok else None
    return {"iterations": its, "converged": all(r["converged"] for r in runs), **med, "iteration_s": per_it,
            "rel_residual": max(r["rel_residual"] for r in runs),
            "failure": next((r.get("failure") for r in runs if r.get("failure")), None), "levels": levels}


def commsolve_run(spec, nprocs, repeat, method, gamma, lumping):
    argv = [sys.executable, "-m", "mpi4py", os.path.join(HERE, "sparsify_run.py"), spec, str(repeat)]
    if method:
        argv += [method, gamma, *([lumping] if lumping else [])]
    out = json.loads([line for line in mpi_job(nprocs, argv).splitlines() if line.startswith("{")][-1])
    return summary(out["runs"], out["levels"])


def hypre_levels(text):
    """hypre's 'Operator Matrix Information' table: rows and entries per level."""
    block = text.split("Operator Matrix Information:")[1].split("Interpolation Matrix Information")[0]
    return [{"rows": int(m.group(2)), "nnz": int(m.group(3))}
            for m in re.finditer(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+[\d.]+\s", block, re.M)]


def hypre_run(path, nprocs, repeat, gamma=None):
    text = mpi_job(nprocs, [build_peer(), path, str(repeat), *(gamma.split(",") if gamma else [])])
    runs = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    for r in runs:
        r["converged"] = r["rel_residual"] <= 1e-8
    return summary(runs, hypre_levels(text))


def modelled(spec, gammas, ranks, profile):
    """Each hierarchy of the model matrix (one process): CG's iterations here and one
    iteration's halo exchanges simulated on each rank count."""
    from mpi4py import MPI

    from commsolve.amg import solver
    from commsolve.sim import simulation_profile
    from commsolve.sim.amg import simulate_amg_iteration

    prof = simulation_profile(profile)
    A = sp.csr_matrix(gallery.from_spec(spec))
    b = np.ones(A.shape[0])
    out = {"matrix": spec, "rows": A.shape[0], "nnz": int(A.nnz), "profile": prof.name, "ppn": prof.ppn,
           "hierarchies": {}}
    for label, method, lumping in METHODS:
        for name, gamma in ({"": None} if method is None else gammas).items():
            key = label if method is None else f"{label} {name}"
            t0 = time.perf_counter()
            ml = solver(A, MPI.COMM_SELF, strategy="standard",
                        **({} if method is None else {"sparsify": method, "gamma": gamma, "lumping": lumping}))
            try:
                ml.solve(b, tol=1e-8, maxiter=300)
                its, converged = ml.last_solve["iterations"], ml.last_solve["converged"]
            except ValueError as e:  # CG broke down
                its, converged = None, str(e)
            entry = {"gamma": gamma, "iterations": its, "converged": converged, "levels": len(ml.levels),
                     "operator_complexity": ml.operator_complexity, "per_ranks": {}}
            for P in ranks:
                sim = simulate_amg_iteration(ml, P, prof.ppn, prof)
                entry["per_ranks"][str(P)] = {"iteration_s": sim["total_s"],
                                              "levels": [{k: lv[k] for k in ("level", "rows", "nnz", "iteration_s",
                                                                             "exchange_s")}
                                                         for lv in sim["levels"]]}
            entry["wall_s"] = time.perf_counter() - t0
            out["hierarchies"][key] = entry
            print(f"  model {spec} {key}: {its} it, " + ", ".join(
                f"{P:,} ranks {entry['per_ranks'][str(P)]['iteration_s'] * 1e6:.0f} us/it" for P in ranks), flush=True)
    return out


def plot(results, ranks, path):
    """Per problem: each level's modelled halo time per iteration on ``ranks`` ranks, per
    hierarchy (the thesis' Figure 4.7 at our scale)."""
    from commsolve._plotting import finish, pyplot

    plt = pyplot()
    names = [n for n in results if "modelled" in results[n]]
    fig, axes = plt.subplots(1, len(names), figsize=(6 * len(names), 4.2), squeeze=False)
    for ax, name in zip(axes[0], names):
        hier = results[name]["modelled"]["hierarchies"]
        keys = [k for k in hier if k == "galerkin" or k.endswith("thesis")]
        width = 0.8 / len(keys)
        for i, key in enumerate(keys):
            levels = hier[key]["per_ranks"][str(ranks)]["levels"]
            ax.bar([lv["level"] + (i - (len(keys) - 1) / 2) * width for lv in levels],
                   [lv["iteration_s"] * 1e6 for lv in levels], width, label=f"{key} ({hier[key]['iterations']} it)")
        ax.set(xlabel="level", ylabel="halo time per iteration (us)",
               title=f"{results[name]['modelled']['matrix']} on {ranks:,} ranks")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return finish(fig, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-3d", type=int, default=40)
    ap.add_argument("--size-2d", type=int, default=256)
    ap.add_argument("--model-3d", type=int, default=100)
    ap.add_argument("--model-2d", type=int, default=1000)
    ap.add_argument("--procs", default="1,2")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ranks", default="8192,100000")
    ap.add_argument("--profile", default="cori-haswell")
    ap.add_argument("--skip-model", action="store_true")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "sparsify.json"))
    args = ap.parse_args()
    procs = [int(p) for p in args.procs.split(",")]
    ranks = [int(p) for p in args.ranks.split(",")]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (spec, model_spec, gammas) in problems(args).items():
            A = gallery.from_spec(spec)
            path = os.path.join(tmp, "A.csr")
            write_csr(A, path)
            entry = {"matrix": spec, "rows": A.shape[0], "nnz": int(A.nnz), "gammas": gammas, "measured": {}}
            for P in procs:
                runs = {}
                for label, method, lumping in METHODS:
                    for gname, gamma in ({"": None} if method is None else gammas).items():
                        key = label if method is None else f"{label} {gname}"
                        runs[key] = commsolve_run(spec, P, args.repeat, method, gamma, lumping)
                runs["hypre galerkin"] = hypre_run(path, P, args.repeat)
                for gname, gamma in gammas.items():
                    runs[f"hypre non-galerkin {gname}"] = hypre_run(path, P, args.repeat, gamma)
                entry["measured"][str(P)] = runs
                for key, r in runs.items():
                    its = r["iterations"][0]
                    print(f"{spec} P={P} {key:<26} {its} it, setup {r['setup_s']:.3f} s, solve {r['solve_s']:.3f} s"
                          + (f", {r['iteration_s'] * 1e3:.2f} ms/it" if r["iteration_s"] else "")
                          + f", nnz per level {[lv['nnz'] for lv in r['levels']]}"
                          + (f"  FAILED: {r['failure'][:60]}" if r["failure"] else ""), flush=True)
            if not args.skip_model:
                entry["modelled"] = modelled(model_spec, gammas, ranks, args.profile)
            results[name] = entry
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"benchmark": "sparsify", "machine": machine(), "repeat": args.repeat, "procs": procs,
                   "ranks": ranks, "results": results}, f, indent=2)
    print(f"wrote {args.out}")
    if not args.skip_model:
        png = os.path.splitext(args.out)[0] + ".png"
        plot(results, ranks[-1], png)
        print(f"wrote {png}")


if __name__ == "__main__":
    main()
