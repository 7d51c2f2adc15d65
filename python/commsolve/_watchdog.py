"""A watchdog for collective calls: a rank that has waited too long in one aborts the job.

What agreement cannot catch is a rank that never calls: the others wait for it forever. With
``COMMSOLVE_TIMEOUT=seconds`` (the CLI's ``--timeout``; its ``-np`` runs set a generous
default), a thread on every rank watches the collective operations the rank is in; once the
rank has made no progress for that long (no watched operation begun or finished: a rank
working through a long setup keeps finishing products and exchanges), it prints which
operation each rank was last in and aborts the job (``MPI_Abort``, exit status 124). A job of
one rank has nobody to wait for: its watchdog never aborts.

MPI cannot tell a rank what its peers are doing, so each rank records its own state, locally:
the operations it is in (innermost last), since when, and the last it finished. Where the
ranks share a folder (``COMMSOLVE_WATCHDOG_DIR``: the CLI's ``-np`` relaunch makes one),
each rank's watchdog also writes that state there every second, and the rank that times out
prints every rank's (states of this job only: of ranks below the world's size, written since
the job began); otherwise it prints its own.

Only commsolve's own collective calls are watched. A rank stuck in a plain mpi4py call
while another has ended its program is seen by the CLI's ``-np`` launcher alone (it reads
every rank's state: :func:`stuck`); under a plain ``mpiexec`` such a job waits.

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
_progress = 0.0     # monotonic time of the last operation begun or finished
_progress_wall = 0.0  # the same, wall-clock (other processes compare it)
_started = 0.0      # wall-clock time the watchdog was switched on (older state files are stale)
_thread = None
STALE_SLACK = 60.0  # seconds: ranks of one job start within this of each other
FINALIZE = "MPI_Finalize (the end of the program: waiting for the other ranks)"


def enabled():
    return _timeout is not None


def timeout_from_env(default=None):
    """``COMMSOLVE_TIMEOUT`` in seconds (0: off), ``default`` where it is not set; a
    ValueError naming it when it is not a number."""
    text = os.environ.get("COMMSOLVE_TIMEOUT", "").strip()
    if not text:
        return default
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"COMMSOLVE_TIMEOUT must be a number of seconds, got {text!r}") from None


def configure(timeout=None, folder=None):
    """Switch the watchdog on for ``timeout`` seconds (None or <= 0: off), with the shared
    state ``folder``, if any. Reads ``COMMSOLVE_TIMEOUT`` and ``COMMSOLVE_WATCHDOG_DIR``
    when called without arguments (as importing commsolve does)."""
    global _timeout, _folder, _thread, _started, _progress, _progress_wall
    if timeout is None:
        try:
            timeout = timeout_from_env()
        except ValueError as e:  # importing commsolve must not fail over it: said, and left off
            sys.stderr.write(f"commsolve: {e}: the watchdog is off\n")
        folder = os.environ.get("COMMSOLVE_WATCHDOG_DIR") or None
    _timeout = float(timeout) if timeout is not None and float(timeout) > 0 else None
    _folder = folder
    if _timeout is not None and _thread is None:
        _started, _progress = time.time(), time.monotonic()
        _progress_wall = _started
        _write_state()  # at once: the launcher reads the ranks' pids from here
        _thread = threading.Thread(target=_watch, name="commsolve-watchdog", daemon=True)
        _thread.start()
        atexit.register(_finalizing)


_finished = False


def _finalizing():
    """At the end of the program (before mpi4py's MPI_Finalize, which holds the interpreter,
    so the watchdog thread cannot write any more): the state says so, written now."""
    global _finished
    enter(FINALIZE)
    _finished = True
    _write_state()


def enter(operation):
    """This rank is now in ``operation`` (a collective call)."""
    global _progress, _progress_wall
    if _timeout is not None:
        _progress, _progress_wall = time.monotonic(), time.time()
        _stack.append((operation, _progress, time.time()))


def leave():
    """This rank has finished its innermost operation."""
    global _last, _progress, _progress_wall
    if _timeout is not None and _stack:
        _last = _stack.pop()[0]
        _progress, _progress_wall = time.monotonic(), time.time()


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


def _world():
    MPI = sys.modules.get("mpi4py.MPI")
    # The watchdog's thread may look while mpi4py.MPI is still being imported (a module without
    # its functions yet): MPI is then not started, as far as it can tell.
    if not all(hasattr(MPI, f) for f in ("Is_initialized", "Is_finalized", "COMM_WORLD")):
        return None
    if not MPI.Is_initialized() or MPI.Is_finalized():
        return None
    return MPI.COMM_WORLD


def _rank():
    world = _world()
    return None if world is None else world.rank


def _size():
    world = _world()
    return None if world is None else world.size


def state():
    """This rank's state as a dict: rank, pid, the operations it is in (outermost first) with
    their wall-clock start, the last it finished, when it last made progress (wall clock),
    whether its program has ended."""
    stack = list(_stack)
    return {"rank": _rank(), "pid": os.getpid(), "operations": [[op, since] for op, _, since in stack],
            "last": _last, "progress": _progress_wall, "finished": _finished, "written": time.time()}


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


def read_states(folder, size=None, since=None):
    """Rank -> state dict, from the state files in ``folder`` (none if it is gone): only
    ranks below ``size`` and files written since ``since`` (wall-clock) when given, so a
    folder shared with an earlier or a larger job does not mislead."""
    states = {}
    names = os.listdir(folder) if folder and os.path.isdir(folder) else ()
    for name in sorted(names):
        if not (name.startswith("rank-") and name.endswith(".json")):
            continue
        try:
            with open(os.path.join(folder, name)) as f:
                s = json.load(f)
            rank = int(s["rank"])
            int(s["pid"])
            if (size is None or 0 <= rank < size) and (since is None or float(s["written"]) >= since):
                states[rank] = s
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return states


def report(rank, operation, waited):
    """The lines the watchdog prints before it aborts the job."""
    now = time.time()
    lines = [f"commsolve: watchdog: rank {rank} has made no progress for {waited:.1f} s in {operation} (timeout "
             f"{_timeout:g} s, COMMSOLVE_TIMEOUT or --timeout): a rank that never made the matching call? Aborting "
             "the job.",
             "commsolve: watchdog: what each rank was last in:"]
    states = read_states(_folder, _size(), _started - STALE_SLACK)
    if isinstance(rank, int):
        states[rank] = state()
    for r in sorted(states):
        lines.append(f"  rank {r}: {_describe(states[r], now)}")
    if _folder is None:
        lines.append("  (other ranks: each one's own watchdog reports it; set COMMSOLVE_WATCHDOG_DIR to a shared "
                     "folder to see all here)")
    return lines


def stuck(states, size, timeout, now=None):
    """The report lines when a job of ``size`` ranks is stuck, else None: some rank's program
    has ended, some other's has not, and no rank has made progress for ``timeout`` seconds
    (the ranks still running wait for a call the ended ones never make). ``states``: rank
    -> state (:func:`read_states`)."""
    now = time.time() if now is None else now
    if len(states) < size or not timeout:
        return None
    finished = [r for r, s in states.items() if s.get("finished")]
    if not finished or len(finished) == size:
        return None
    idle = [now - float(s.get("progress") or 0.0) for s in states.values()]
    if min(idle) < timeout:
        return None
    running = sorted(set(states) - set(finished))
    lines = [f"commsolve: watchdog: rank{'s' if len(finished) > 1 else ''} {', '.join(map(str, sorted(finished)))} "
             f"ended {'their' if len(finished) > 1 else 'its'} program, and no rank has made progress for "
             f"{min(idle):.1f} s (timeout {timeout:g} s): rank{'s' if len(running) > 1 else ''} "
             f"{', '.join(map(str, running))} must be waiting for a call the others never make. Ending the job.",
             "commsolve: watchdog: what each rank was last in:"]
    lines += [f"  rank {r}: {_describe(states[r], now)}" for r in sorted(states)]
    return lines


def _watch():
    while True:
        time.sleep(max(0.05, min(1.0, _timeout / 5)))
        _write_state()
        stack = list(_stack)
        if not stack:
            continue
        operation = stack[-1][0]
        waited = time.monotonic() - _progress
        if waited < _timeout or (_size() or 1) == 1:
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
