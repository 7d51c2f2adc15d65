"""Restricted-collective trees on the selected-inversion workload (PSelInv paper, Table I/II).

The Col-Bcast and Row-Reduce collectives of a supernodal factor (3D Poisson under nested
dissection) on a 46 x 46 virtual grid, 16 ranks per node: per tree shape, the min, max,
median and standard deviation over ranks of the volume each rank sends in broadcasts and
receives in reductions. Also records whether the paper's pattern holds: binary has the
smallest minimum but the largest maximum and deviation; shifted-binary has the smallest
deviation and a lower maximum than flat.

    python bench/trees.py [--gen poisson3d:40] [--grid 46x46] [--out bench/results/trees.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from spmv_local import machine  # noqa: E402

from commsolve import direct, gallery, make_topology, trees, workloads  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gen", default="poisson3d:40")
    ap.add_argument("--grid", default="46x46")
    ap.add_argument("--ppn", type=int, default=16)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "trees.json"))
    args = ap.parse_args()
    Pr, Pc = (int(v) for v in args.grid.split("x"))
    t0 = time.perf_counter()
    S = direct.supernodal_structure(gallery.from_spec(args.gen), 32, "nd", relax=0, relax_subtree=0)
    C = workloads.selinv_collectives(S, (Pr, Pc))
    topo = make_topology(nodes=[r // args.ppn for r in range(Pr * Pc)], size=Pr * Pc)
    shapes = ["flat", "binary", "shifted-binary", "need-ordered", "node-aware"]
    summary = {}
    for s in shapes:
        r = trees.volume_summary(trees.virtual_stats(C, topo, s))
        for k in ("broadcast_sent", "reduce_received"):
            r[k].pop("per_rank_bytes")
        summary[s] = r
    checks = {}
    for part in ("broadcast_sent", "reduce_received"):
        v = {s: summary[s][part] for s in shapes}
        checks[part] = {
            "binary_smallest_min": v["binary"]["min_bytes"] <= min(x["min_bytes"] for x in v.values()),
            "binary_largest_max": v["binary"]["max_bytes"] >= max(v[s]["max_bytes"] for s in ("flat", "shifted-binary")),
            "binary_largest_std": v["binary"]["std_bytes"] >= max(v[s]["std_bytes"] for s in ("flat", "shifted-binary")),
            "shifted_smallest_std": v["shifted-binary"]["std_bytes"] <= min(x["std_bytes"] for x in v.values()),
            "shifted_max_below_flat": v["shifted-binary"]["max_bytes"] < v["flat"]["max_bytes"],
        }
    out = {"benchmark": "trees", "date": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": machine(),
           "matrix": args.gen, "grid": [Pr, Pc], "ppn": args.ppn, "supernodes": int(S.nsuper), "nnz_L": int(S.nnz_L),
           "collectives": len(C), "wall_s": time.perf_counter() - t0, "shapes": summary, "paper_pattern": checks}
    with open(args.out, "w") as f:
        json.dump(out, f, indent=2)
    for part in ("broadcast_sent", "reduce_received"):
        print(f"{part} (MB)      min     max  median     std")
        for s in shapes:
            v = summary[s][part]
            print(f"  {s:<16}{v['min_bytes'] / 2**20:7.2f} {v['max_bytes'] / 2**20:7.2f} "
                  f"{v['median_bytes'] / 2**20:7.2f} {v['std_bytes'] / 2**20:7.2f}")
        print("  paper pattern:", checks[part])
    print(f"written to {args.out} ({out['wall_s']:.0f} s)")


if __name__ == "__main__":
    main()
