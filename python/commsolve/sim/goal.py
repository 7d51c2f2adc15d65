"""Export of a simulated run to LogGOPSim's GOAL text format (Hoefler, Schneider,
Lumsdaine, "LogGOPSim", HPDC'10; github.com/spcl/LogGOPSim), so that the same schedule can
be cross-checked with that simulator: per rank, the operations in the order the rank did
them — ``calc`` (nanoseconds of computation, LogGOPSim's time unit), ``send`` and ``recv``
(bytes, peer, and as tag the message's sequence number, so every receive matches exactly
its send) — each requiring the one before. Message overheads, latencies and waits are left
to LogGOPSim's own parameters (L, o, g, G)."""

from __future__ import annotations

import numpy as np

__all__ = ["write_goal", "MAX_GOAL_OPS"]

MAX_GOAL_OPS = 50_000_000  # a text line each: a few GB


def write_goal(result, path):
    """Writes ``result``'s trace to ``path`` in GOAL text format.

    Parameters
    ----------
    result : SimResult
        A :class:`~commsolve.sim.SimResult` simulated with ``trace=True``.
    path : str or path
        The file to write (overwritten).

    Returns
    -------
    int
        The number of operations written (computations below a nanosecond are left out).

    Raises
    ------
    ValueError
        When the result has no trace (simulated without ``trace=True``), or when it holds
        more than ``MAX_GOAL_OPS`` operations (more than a GOAL file should hold).
    """
    tr = result.trace
    if tr.shape[0] == 0 and result.events > 0:
        raise ValueError("the result has no trace: simulate with trace=True (commsolve simulate --goal)")
    if tr.shape[0] > MAX_GOAL_OPS:
        raise ValueError(f"{tr.shape[0]:,} operations: more than a GOAL file should hold ({MAX_GOAL_OPS:,})")
    ranks = tr[:, 0].astype(int)
    bounds = np.searchsorted(ranks, np.arange(result.nranks + 1))  # each rank's rows are contiguous
    written = 0
    with open(path, "w") as f:
        f.write(f"num_ranks {result.nranks}\n")
        for r in range(result.nranks):
            ops = []
            for _, kind, peer, nbytes, tag, seconds in tr[bounds[r]:bounds[r + 1]]:
                if kind == 0:
                    ns = round(seconds * 1e9)
                    if ns > 0:  # below a nanosecond: nothing for LogGOPSim to wait for
                        ops.append(f"calc {ns}")
                elif kind == 1:
                    ops.append(f"send {int(nbytes)}b to {int(peer)} tag {int(tag)}")
                else:
                    ops.append(f"recv {int(nbytes)}b from {int(peer)} tag {int(tag)}")
            f.write(f"\nrank {r} {{\n")
            for k, op in enumerate(ops, start=1):
                f.write(f"l{k}: {op}\n" + (f"l{k} requires l{k - 1}\n" if k > 1 else ""))
            f.write("}\n")
            written += len(ops)
    return written
