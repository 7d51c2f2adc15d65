"""The runs behind ``commsolve gemm`` and ``commsolve lu``: the 2.5D multiply or LU of random
matrices made by each rank alone, timed over repetitions, counted per role against the
plan and the formula's words, and checked by random matrix-vector products computed by numpy
on each rank's blocks (Freivalds' test: C x against A (B x); L (U x) against A x)."""

from __future__ import annotations

import numpy as np

from .. import dense
from .._collective import run_agreed
from ..dense import DistributedDense
from .spmv import machine_info

__all__ = ["run_dense", "format_dense"]


def _relative(a, b):
    den = float(np.linalg.norm(b))
    return float(np.linalg.norm(a - b)) / den if den > 0 else float("nan")


def run_dense(comm, kind, *, n, m=None, k=None, nb=dense.matrix.DEFAULT_NB, grid=None, tree="binary", repeat=3,
              ppn=None, seed=0, pivoting="none", progress=None):
    """Collective. ``kind`` "gemm": C = A B, A m x k, B k x n (m and k default to n); "lu": A
    n x n random, with ``pivoting`` "tournament" as it is, with "none" n added to its
    diagonal (diagonally dominant: no pivoting needed). Runs
    ``repeat`` times on ``grid`` ("PRxPCxC"; default the squarest 2D grid); reports the run
    of median time (its slowest rank). Returns the result dict on rank 0, None elsewhere."""
    if kind not in ("gemm", "lu"):
        raise ValueError(f"kind must be gemm or lu, got {kind!r}")
    m = n if m is None else m
    k = n if k is None else k

    def check_args():
        if min(m, n, k) < 1 or nb < 1 or repeat < 1:
            raise ValueError(f"sizes, block size and repeat must be >= 1, got m={m} n={n} k={k} nb={nb} "
                             f"repeat={repeat}")
        if kind == "lu" and m != n:
            raise ValueError("lu factors a square matrix: give --n only")
        dense.algorithms.check_pivoting(pivoting)
        return dense.parse_grid25(grid, comm.size)

    g = run_agreed(comm, check_args)
    rng = np.random.default_rng(seed)
    runs = []
    if kind == "gemm":
        A = DistributedDense.random(m, k, comm, g, nb, seed=seed)
        B = DistributedDense.random(k, n, comm, g, nb, seed=seed + 1)
        plan = dense.MatmulPlan(m, n, k, comm, g, nb, tree=tree, topology=ppn)  # planned once, run `repeat` times
        for _ in (range(repeat) if progress is None else progress(range(repeat))):
            C, rep = plan.run(A, B)
            runs.append(rep)
        x = rng.standard_normal(n)
        check = _relative(C.matvec(x), A.matvec(B.matvec(x)))
        check_name = "Freivalds: ||C x - A (B x)|| / ||A (B x)||, x random"
        extra = {}
    else:
        A = DistributedDense.random(n, n, comm, g, nb, seed=seed)
        if pivoting == "none":
            rows, cols = A.global_indices()
            A.local += n * (rows[:, None] == cols[None, :])
        plan = dense.LUPlan(n, comm, g, nb, tree=tree, topology=ppn, pivoting=pivoting)
        for _ in (range(repeat) if progress is None else progress(range(repeat))):
            f = plan.factor(A)
            runs.append(f.report)
        x = rng.standard_normal(n)
        F = f.factors
        Ux = F.matvec(x, keep=lambda r, c: r <= c)
        LUx = F.matvec(Ux, keep=lambda r, c: r > c) + Ux
        check = _relative(LUx, A.matvec(x)[f.perm()])
        check_name = "||L (U x) - P A x|| / ||P A x||, x random"
        extra = {"pivoting": pivoting}
    rep = runs[int(np.argsort([r.seconds for r in runs])[len(runs) // 2])]
    if comm.rank != 0:
        return None
    d = rep.to_dict()
    d.update({"kind": kind, "nranks": comm.size, "repeat": repeat, "runs_s": [r.seconds for r in runs],
              "check_error": check, "check": check_name, "stats_recorded_equal_planned": all(r.planned_equal for r in runs),
              "roles": list(dense.ROLES["matmul" if kind == "gemm" else "lu"]), "machine": machine_info(), **extra})
    return d


def format_dense(r):
    """The text report of :func:`run_dense`'s result."""
    m, n, k = r["shape"]
    how = "no pivoting" if r.get("pivoting") == "none" else f"{r.get('pivoting')} pivoting"
    what = f"C = A B, A {m:,} x {k:,}, B {k:,} x {n:,}" if r["kind"] == "gemm" else f"LU of {n:,} x {n:,} ({how})"
    w, pw = r["words_received"], r["panel_words_received"]
    lines = [
        f"problem     {what}, blocks of {r['nb']}",
        f"layout      {r['nranks']} rank{'s' if r['nranks'] > 1 else ''}, grid {r['grid']} (rows x columns x layers), "
        f"tree {r['tree']}",
        f"time        {r['seconds']:.4f} s (the run of median time of {r['repeat']}, its slowest rank; local BLAS "
        f"{r['compute_seconds']:.4f} s; plan and trees {r['setup_seconds']:.4f} s before it), "
        f"{r['flops'] / 1e9:.2f} GFlop at {r['gflops']:.2f} GFlop/s",
        f"panels      words received per rank: max {pw['max']:,.0f}, mean {pw['mean']:,.0f}; formula's leading term "
        f"{pw['formula']:,.0f}",
        f"all moves   words received per rank: max {w['max']:,.0f}, mean {w['mean']:,.0f} (with replication, sums "
        f"along z and layer 0's copy of the factors)",
        f"check       {r['check']} = {r['check_error']:.2e}",
        f"CommStats   recorded == planned: {'yes' if r['stats_recorded_equal_planned'] else 'NO'}"
        + (" (row swaps follow the pivots: recorded only)" if r.get("pivoting") == "tournament" else ""),
    ]
    if r.get("growth") is not None:
        lines.insert(5, f"growth      max |U| / max |A| = {r['growth']:.3g}")
    lines += [f"WARNING     {w}" for w in r["warnings"]]
    if r["nranks"] > 1:
        lines.append(f"  {'role':<14}{'max words received':>20}")
        lines += [f"  {role:<14}{v:>20,.0f}" for role, v in r["words_received_per_role_max"].items()]
    return "\n".join(lines)
