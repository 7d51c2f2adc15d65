"""The SC'23 ablation measured here: commsolve's chain (bench/sc23_ablation.py's CHAIN, from
3d-baseline-pdgstrs to 3d, one change at a time) beside SuperLU_DIST 9.2.1's own chain
(pddrive3d with NEW3DSOLVE=0, the ICS'19 baseline pdgstrs3d; NEW3DSOLVE=1
NEW3DSOLVETREECOMM=0, the new solve with flat communication; 1/1, with trees), on the same
matrices and grids, one thread per rank on both sides.

Same work on both sides: pddrive3d's "SOLVE time" runs from a barrier after b has been moved
to the diagonal owners (and broadcast over the grids) to a barrier before x is gathered, so
commsolve's figure beside it is its L-solve + inter-grid steps + U-solve (slowest rank,
median of --repeat solves, one right-hand side; its total with the moves of b and x is
reported too). SuperLU_DIST's figure is the median of --runs runs (each factors again).
Grids 1x1x2 (a rank per core) and 1x2x2 (4 ranks on 2 cores: oversubscribed, reported apart).
SuperLU_DIST 9.2.1 is built once into a cache folder by ../shared/peers/build-superlu-dist.sh
when --peer superlu9 is given (Debian's 8.1.2 has no NEW3DSOLVE); without it only commsolve runs.

    python bench/sc23_ablation_measured.py [--matrices poisson2d9:1000,kkt3d:30] [--grids 1x1x2,1x2x2]
        [--repeat 5] [--runs 3] [--peer superlu9] [--out bench/results/sc23_ablation_measured.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from spmv_local import machine  # noqa: E402
from superlu_peer import run, superlu9  # noqa: E402

from commsolve import gallery, io  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SUPERLU_CHAIN = [("pdgstrs3d (NEW3DSOLVE=0)", {"NEW3DSOLVE": "0"}),
                 ("new, flat (NEW3DSOLVE=1, TREECOMM=0)", {"NEW3DSOLVE": "1", "NEW3DSOLVETREECOMM": "0"}),
                 ("new, trees (NEW3DSOLVE=1, TREECOMM=1)", {"NEW3DSOLVE": "1", "NEW3DSOLVETREECOMM": "1"})]


def nranks(grid):
    px, py, pz = (int(v) for v in grid.split("x"))
    return px * py * pz


def ours(spec, grid, repeat):
    text, _ = run(nranks(grid), [sys.executable, "-m", "mpi4py", os.path.join(HERE, "sc23_ablation_mpi.py"), spec,
                                 str(repeat), grid])
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def theirs(bin_dir, path, grid, env, runs):
    px, py, pz = (int(v) for v in grid.split("x"))
    out = []
    for _ in range(runs):
        text, _ = run(px * py * pz, [os.path.join(bin_dir, "pddrive3d"), "-r", str(px), "-c", str(py), "-d", str(pz),
                                     path], env=env)
        solve = re.search(r"SOLVE time\s+([\d.]+)", text)
        err = re.search(r"\|\|X - Xtrue\|\| / \|\|X\|\| = ([\d.eE+-]+)", text)
        if solve is None or err is None:
            raise RuntimeError(f"pddrive3d printed no SOLVE time or error:\n{text[-3000:]}")
        out.append({"solve_s": float(solve.group(1)), "error_vs_xtrue": float(err.group(1))})
    return {"runs": out, "solve_s": statistics.median(r["solve_s"] for r in out),
            "error_vs_xtrue": max(r["error_vs_xtrue"] for r in out)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--matrices", default="poisson2d9:1000,kkt3d:30")
    ap.add_argument("--grids", default="1x1x2,1x2x2")
    ap.add_argument("--repeat", type=int, default=5, help="commsolve solves per step (median)")
    ap.add_argument("--runs", type=int, default=3, help="pddrive3d runs per variant (median)")
    ap.add_argument("--peer", choices=["superlu9"], default=None, help="also run SuperLU_DIST 9.2.1's chain")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "sc23_ablation_measured.json"))
    args = ap.parse_args()
    bin_dir = superlu9() if args.peer else None
    studies = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in filter(None, args.matrices.split(",")):
            path = os.path.join(tmp, spec.replace(":", "_") + ".mtx")
            io.mmwrite(path, gallery.from_spec(spec))
            for grid in args.grids.split(","):
                print(f"{spec} {grid}: commsolve", file=sys.stderr, flush=True)
                rec = {"matrix": spec, "grid": grid, "oversubscribed": nranks(grid) > os.cpu_count(),
                       "commsolve": ours(spec, grid, args.repeat)}
                if bin_dir:
                    rec["superlu_dist"] = []
                    for name, env in SUPERLU_CHAIN:
                        print(f"{spec} {grid}: SuperLU_DIST {name}", file=sys.stderr, flush=True)
                        rec["superlu_dist"].append({"variant": name, "env": env,
                                                    **theirs(bin_dir, path, grid, env, args.runs)})
                studies.append(rec)
                for r in rec["commsolve"]:
                    print(f"  commsolve {r['step']:<20} L+Z+U {r['median_l_z_u_s'] * 1e3:9.2f} ms  total "
                          f"{r['median_s']['total'] * 1e3:9.2f} ms", file=sys.stderr)
                for r in rec.get("superlu_dist", []):
                    print(f"  SuperLU_DIST {r['variant']:<38} SOLVE {r['solve_s'] * 1e3:9.2f} ms", file=sys.stderr)
    doc = {"benchmark": "sc23_ablation_measured", "machine": machine(), "repeat": args.repeat, "runs": args.runs,
           "peer": "SuperLU_DIST 9.2.1 (1fd66dad) pddrive3d" if bin_dir else None, "studies": studies}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=2)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
