"""Errors under MPI: make every rank agree before anyone raises, so nothing hangs."""

from __future__ import annotations

from . import _watchdog


def mpi():
    """mpi4py.MPI, imported on first use: importing commsolve does not initialize MPI, so
    the virtual world and the CLI's relaunching parent run without it."""
    from mpi4py import MPI

    return MPI


class CollectiveError(ValueError):
    """An error found on some rank, raised on every rank of the communicator."""


def agree(comm, error, where="agree", value=None):
    """Collective. ``error`` is this rank's message or None; raises on all ranks if any failed.

    The message is the lowest failing rank's, prefixed with that rank. ``where`` names the
    call: ranks that reach agreements of different calls (say, one rank in a solve while
    another changes its options) raise a CollectiveError saying so instead of pairing up
    unrelated collectives. Returns every rank's ``value``.
    """
    if comm is None or comm.size == 1:
        if error:
            raise CollectiveError(error)
        return [value]
    _watchdog.enter(f"the agreement of {where}")
    try:
        records = comm.allgather((where, error, value))
    finally:
        _watchdog.leave()
    places = [w for w, _, _ in records]
    if len(set(places)) > 1:
        raise CollectiveError("the ranks are in different collective calls: "
                              + ", ".join(f"{w} on rank {r}" for r, w in enumerate(places)))
    for r, (_, e, _) in enumerate(records):
        if e:
            raise CollectiveError(f"[rank {r}] {e}")
    return [v for _, _, v in records]


def describe(value):
    """A small comparable stand-in for an argument: objects by their kind and size (a
    Topology by its node map, a Distribution by its sizes, a profile by its name), arrays
    and sparse matrices by :func:`fingerprint`, everything else as it is."""
    import numpy as np

    kind = type(value).__name__
    if kind == "Topology":  # digested: its node map has an entry per rank
        return ("Topology", fingerprint(np.asarray(value.node_of_rank)))
    if kind == "Distribution":
        return ("Distribution", value.global_size, value.nranks, value.is_contiguous)
    if kind == "MachineProfile":
        return ("MachineProfile", value.name)
    if isinstance(value, np.ndarray) or hasattr(value, "tocsr"):
        return fingerprint(value)
    return value


def fingerprint(A):
    """A cheap digest of a scipy sparse matrix or an array (shape, pattern and values, as
    canonical CSR: the same matrix in any format gives the same digest), to check that every
    rank passed the same replicated input without moving it."""
    import hashlib

    import numpy as np

    h = hashlib.blake2b(digest_size=12)
    if hasattr(A, "tocsr"):
        M = A.tocsr(copy=True)
        M.sum_duplicates()
        M.sort_indices()
        parts = (np.asarray(M.shape, np.int64), M.indptr.astype(np.int64), M.indices.astype(np.int64),
                 np.asarray(M.data))
    else:
        a = np.ascontiguousarray(A)
        parts = (np.asarray(a.shape, np.int64), a)
    for part in parts:
        h.update(str(part.dtype).encode())
        h.update(np.ascontiguousarray(part).tobytes())
    return f"{type(A).__name__} {'x'.join(map(str, A.shape))} #{h.hexdigest()}"


def agree_args(comm, where, **args):
    """Collective. Every rank of ``comm`` must pass the same ``args`` (each compared by its
    :func:`describe`); otherwise a CollectiveError on every rank naming ``where``, the first
    argument that differs and every rank's value. Call it before communicating: ranks that
    disagree then fail together instead of hanging in mismatched messages."""
    mine, error = {}, None
    for k, v in args.items():
        try:
            mine[k] = describe(v)
        except Exception as e:  # noqa: BLE001 -- any rank's failure is every rank's, never a hang
            error = f"{where}: argument {k} cannot be read ({type(e).__name__}: {e})"
    every = agree(comm, error, where=where, value=mine)
    for name in args:
        values = [v[name] for v in every]
        if any(not _same(v, values[0]) for v in values[1:]):
            raise CollectiveError(f"{where}: the ranks passed different {name} ("
                                  + ", ".join(f"{v!r} on rank {r}" for r, v in enumerate(values)) + ")")
    return args


def _same(a, b):
    try:
        if bool(a == b):
            return True
    except (ValueError, TypeError):  # values that do not compare to one truth value
        pass
    return repr(a) == repr(b)  # NaN is NaN


def run_agreed(comm, fn, *args, **kwargs):
    """Collective. Runs ``fn`` on every rank; if it raises a ValueError, OSError or TypeError
    (a bad argument: a wrong type is one too) anywhere, every rank raises."""
    result, error = None, None
    try:
        result = fn(*args, **kwargs)
    except CollectiveError:
        raise  # already agreed on every rank
    except (ValueError, OSError, TypeError) as e:
        error = str(e)
    agree(comm, error, where=getattr(fn, "__qualname__", "a collective call"))
    return result


def or_abort(comm, where, fn, *args):
    """``fn(*args)`` on this rank; if it raises (a failure of this rank alone, after which the
    others would wait forever for its messages), the reason on stderr and the job aborted
    (MPI_Abort, exit 1) on more than one rank; re-raised on one."""
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 -- any local failure strands the other ranks
        if comm is None or comm.size == 1:
            raise
        import sys

        sys.stderr.write(f"commsolve: {where} failed on rank {comm.rank} ({type(e).__name__}: {e}); the other ranks "
                         "wait for its messages: aborting the job\n")
        sys.stderr.flush()
        comm.Abort(1)


def install_abort_hook():
    """Make an uncaught exception on one rank abort the whole MPI job (MPI_Abort) instead of
    leaving the other ranks waiting forever, as ``python -m mpi4py`` does, for scripts run
    under a plain ``mpiexec -n K python script.py``. Chains to the hook already installed;
    does nothing unless mpi4py has initialized MPI with more than one rank."""
    import sys

    previous = sys.excepthook

    def hook(kind, value, tb):
        previous(kind, value, tb)
        MPI = sys.modules.get("mpi4py.MPI")
        if MPI is None or not MPI.Is_initialized() or MPI.Is_finalized() or MPI.COMM_WORLD.size == 1:
            return
        sys.stderr.write(f"commsolve: uncaught {kind.__name__} on rank {MPI.COMM_WORLD.rank}: aborting the job\n")
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)

    if getattr(previous, "__name__", "") != "hook" or getattr(previous, "__module__", "") != __name__:
        sys.excepthook = hook
