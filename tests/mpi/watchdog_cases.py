"""MPI script for the watchdog tests (run with COMMSOLVE_TIMEOUT set), one case per run:

- ``progress``: every rank spends several timeouts in one watched operation, but keeps
  beginning and finishing watched operations inside it (a long AMG setup does): the job
  must finish (exit 0);
- ``unwatched``: rank 0 waits in a plain mpi4py gather that rank 1 never makes (rank 1 ends
  its program and waits in MPI_Finalize): the job must end, not hang.
"""

import sys
import time

from mpi4py import MPI

from commsolve import _watchdog

comm = MPI.COMM_WORLD
case, timeout = sys.argv[1], float(sys.argv[2])
assert comm.size == 2, f"launched with {comm.size} ranks, expected 2"


@_watchdog.watched("a short step")
def step():
    time.sleep(timeout / 3)


@_watchdog.watched("a long setup")
def setup():
    for _ in range(12):  # four timeouts in all
        step()
    comm.Barrier()


if case == "progress":
    setup()
    print(f"rank {comm.rank} finished the long setup", flush=True)
elif case == "unwatched":
    if comm.rank == 0:
        comm.gather(1, root=0)
        print("rank 0 got past the gather", flush=True)
else:
    raise SystemExit(f"unknown case {case}")
