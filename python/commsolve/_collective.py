"""Errors under MPI: make every rank agree before anyone raises, so nothing hangs."""

from __future__ import annotations


def mpi():
    """mpi4py.MPI, imported on first use: importing commsolve does not initialize MPI, so
    the virtual world and the CLI's relaunching parent run without it."""
    from mpi4py import MPI

    return MPI


class CollectiveError(ValueError):
    """An error found on some rank, raised on every rank of the communicator."""


def agree(comm, error):
    """Collective. ``error`` is this rank's message or None; raises on all ranks if any failed.

    The message is the lowest failing rank's, prefixed with that rank.
    """
    if comm is None or comm.size == 1:
        if error:
            raise CollectiveError(error)
        return
    errors = comm.allgather(error)
    for r, e in enumerate(errors):
        if e:
            raise CollectiveError(e if comm.size == 1 else f"[rank {r}] {e}")


def run_agreed(comm, fn, *args, **kwargs):
    """Collective. Runs ``fn`` on every rank; if it raises a ValueError anywhere, every rank raises."""
    result, error = None, None
    try:
        result = fn(*args, **kwargs)
    except CollectiveError:
        raise  # already agreed on every rank
    except (ValueError, OSError) as e:
        error = str(e)
    agree(comm, error)
    return result
