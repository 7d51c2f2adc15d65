"""A watchdog for collective calls: a rank that has waited too long in one aborts the job.

What agreement cannot catch is a rank that never calls: the others wait for it forever. With
``COMMSOLVE_TIMEOUT=seconds`` (the CLI's ``--timeout``; its ``-np`` runs set a generous
default), a thread on every rank watches the collective operation the rank is in; once the
rank has been in one for that long, it prints which operation each rank was last in and
aborts the job (``MPI_Abort``, exit status 124).

MPI cannot tell a rank what its peers are doing, so each rank records its own state, locally:
the operations it is in (innermost last), since when, and the last it finished. Where the
ranks share a folder (``COMMSOLVE_WATCHDOG_DIR``: the CLI's ``-np`` relaunch makes one),
each rank's watchdog also writes that state there every second, and the rank that times out
prints every rank's; otherwise it prints its own. A rank whose program has ended waits in
``MPI_Finalize`` for the others: that counts as an operation too.

Off (no thread, one flag test per operation) unless the variable is set.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import sys
import threading
import time

__all__ = ["configure", "enabled", "enter", "leave", "watched", "state", "TIMEOUT_EXIT"]

TIMEOUT_EXIT = 124  # the job's exit status when the watchdog ends it (as timeout(1)'s)
_timeout = None     # seconds; None: off
_folder = None
_stack = []         # (operation, monotonic start, wall-clock start), innermost last
_last = None        # the last operation finished
_thread = None


def enabled():
    return _timeout is not None


def configure(timeout=None, folder=None):
    """Switch the watchdog on for ``timeout`` seconds (None or <= 0: off), with the shared
    state ``folder``, if any. Reads ``COMMSOLVE_TIMEOUT`` and ``COMMSOLVE_WATCHDOG_DIR``
    when called without arguments (as importing commsolve does)."""
    global _timeout, _folder, _thread
    if timeout is None:
        text = os.environ.get("COMMSOLVE_TIMEOUT", "").strip()
        try:
            timeout = float(text) if text else None
        except ValueError:
            raise ValueError(f"COMMSOLVE_TIMEOUT must be a number of seconds, got {text!r}") from None
        folder = os.environ.get("COMMSOLVE_WATCHDOG_DIR") or None
    _timeout = float(timeout) if timeout is not None and float(timeout) > 0 else None
    _folder = folder
    if _timeout is not None and _thread is None:
        _write_state()  # at once: the launcher reads the ranks' pids from here
        _thread = threading.Thread(target=_watch, name="commsolve-watchdog", daemon=True)
        _thread.start()
        atexit.register(_finalizing)


def _finalizing():
    """At the end of the program (before mpi4py's MPI_Finalize, which holds the interpreter,
    so the watchdog thread cannot write any more): the state says so, written now."""
    enter("MPI_Finalize (the end of the program: waiting for the other ranks)")
    _write_state()


def enter(operation):
    """This rank is now in ``operation`` (a collective call)."""
    if _timeout is not None:
        _stack.append((operation, time.monotonic(), time.time()))


def leave():
    """This rank has finished its innermost operation."""
    global _last
    if _timeout is not None and _stack:
        _last = _stack.pop()[0]


def watched(operation):
    """A decorator: the function is a collective ``operation`` the watchdog times."""
    def decorate(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            if _timeout is None:
                return fn(*args, **kwargs)
            enter(operation)
            try:
                return fn(*args, **kwargs)
            finally:
                leave()
        return inner
    return decorate


def _rank():
    MPI = sys.modules.get("mpi4py.MPI")
    if MPI is None or not MPI.Is_initialized() or MPI.Is_finalized():
        return None
    return MPI.COMM_WORLD.rank


def state():
    """This rank's state as a dict: rank, pid, the operations it is in (outermost first) with
    their wall-clock start, the last it finished."""
    stack = list(_stack)
    return {"rank": _rank(), "pid": os.getpid(), "operations": [[op, since] for op, _, since in stack],
            "last": _last, "written": time.time()}


def _write_state():
    rank = _rank()
    if _folder is None or rank is None:
        return
    path = os.path.join(_folder, f"rank-{rank}.json")
    try:
        with open(path + ".tmp", "w") as f:
            json.dump(state(), f)
        os.replace(path + ".tmp", path)
    except OSError:
        pass  # a folder gone: the report falls back to this rank's own state


def _describe(s, now):
    ops = s.get("operations") or []
    where = (f"in {ops[-1][0]} for {now - ops[-1][1]:.1f} s" if ops else "between collective operations")
    if len(ops) > 1:
        where += " (inside " + " > ".join(op for op, _ in ops[:-1]) + ")"
    return where + (f"; last finished {s['last']}" if s.get("last") else "")


def report(rank, operation, waited):
    """The lines the watchdog prints before it aborts the job."""
    now = time.time()
    lines = [f"commsolve: watchdog: rank {rank} has waited {waited:.1f} s in {operation} (timeout {_timeout:g} s, "
             "COMMSOLVE_TIMEOUT or --timeout): a rank that never made the matching call? Aborting the job.",
             "commsolve: watchdog: what each rank was last in:"]
    states = {}
    if _folder is not None:
        for name in sorted(os.listdir(_folder)):
            if name.startswith("rank-") and name.endswith(".json"):
                try:
                    with open(os.path.join(_folder, name)) as f:
                        s = json.load(f)
                    states[int(s["rank"])] = s
                except (OSError, ValueError, KeyError, TypeError):
                    continue
    states[rank] = state()
    for r in sorted(states):
        lines.append(f"  rank {r}: {_describe(states[r], now)}")
    if _folder is None:
        lines.append("  (other ranks: each one's own watchdog reports it; set COMMSOLVE_WATCHDOG_DIR to a shared "
                     "folder to see all here)")
    return lines


def _watch():
    while True:
        time.sleep(max(0.05, min(1.0, _timeout / 5)))
        _write_state()
        stack = list(_stack)
        if not stack:
            continue
        operation, started, _ = stack[-1]
        waited = time.monotonic() - started
        if waited < _timeout:
            continue
        rank = _rank()
        _write_state()
        time.sleep(min(1.0, _timeout / 5))  # the others' latest states
        sys.stderr.write("\n".join(report(rank if rank is not None else "?", operation, waited)) + "\n")
        sys.stderr.flush()
        MPI = sys.modules.get("mpi4py.MPI")
        if MPI is not None and MPI.Is_initialized() and not MPI.Is_finalized():
            MPI.COMM_WORLD.Abort(TIMEOUT_EXIT)
        os._exit(TIMEOUT_EXIT)
