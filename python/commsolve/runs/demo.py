"""``commsolve demo`` (``make demo``): the main job on built-in problems — distributed SpMV
with its communication, then the flagship triangular solves (:mod:`commsolve.runs.flagship`)."""

from __future__ import annotations

import time

from .. import gallery, virtual
from .flagship import run_flagship
from ..partition import partition
from .spmv import format_spmv, run_spmv
from ..stats import summarize
from ..topology import make_topology

CASES = (
    ("poisson3d:48", "contiguous"),
    ("poisson3d:48", "metis"),
    ("aniso2d:400,eps=0.001,theta=30", "strided"),
    ("random:rows=40000,nnz_per_row=12", "contiguous"),
)
VIRTUAL = ("poisson3d:64", 1024, 16)  # matrix, virtual ranks, ranks per node


def run_demo(comm, echo=None):
    """Collective. Runs every SpMV case with one rank per (virtual) node, so that all traffic
    counts as inter-node; on rank 0, builds a matrix's plans for 1,024 virtual ranks; then
    the flagship solves. Returns the results on rank 0 (with ``ok``), None elsewhere."""
    say = echo if (echo is not None and comm.rank == 0) else (lambda *_: None)
    results = []
    for gen, part in CASES:
        r = run_spmv(comm, gen=gen, partition=part, ppn=1, repeat=30)
        if comm.rank == 0:
            results.append(r)
            say(format_spmv(r))
            say("")
    summary = None
    if comm.rank == 0:
        spec, P, ppn = VIRTUAL
        t0 = time.perf_counter()
        A = gallery.from_spec(spec)
        plans = virtual.plans(A, partition(A, P, "contiguous"))
        summary = summarize(virtual.plan_stats(plans, make_topology(size=P, ppn=ppn)))
        elapsed = time.perf_counter() - t0
        say(f"virtual world: {spec} on {P} ranks, {ppn} per node (built in one process, {elapsed:.2f} s)")
        say(f"  max per rank: {summary['max']['msgs_sent_inter']} inter-node messages, "
            f"{summary['max']['bytes_sent_inter']:,} inter-node bytes, "
            f"{summary['max']['msgs_sent_intra']} intra-node messages")
        say("")
    flagship = run_flagship(comm, say)
    if comm.rank != 0:
        return None
    spec, P, ppn = VIRTUAL
    ok = all(r["rel_error_vs_scipy"] is not None and r["rel_error_vs_scipy"] <= 1e-12
             and r["stats_recorded_equal_planned"] for r in results) and flagship["ok"]
    say("all results match scipy and recorded statistics equal planned ones" if ok else "CHECKS FAILED")
    return {"ok": ok, "runs": results, "virtual": {"matrix": spec, "nranks": P, "ppn": ppn, "stats": summary},
            "flagship": flagship}
