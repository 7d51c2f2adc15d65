"""MPI script, run under a plain ``mpiexec -n 2 python raise_one.py`` (not ``-m mpi4py``):
rank 1 raises after a collective; importing commsolve must make the job abort instead of
leaving rank 0 waiting in the next collective."""

from mpi4py import MPI

import commsolve  # noqa: F401  (installs the abort hook)

comm = MPI.COMM_WORLD
assert comm.size == 2
comm.Barrier()
if comm.rank == 1:
    raise RuntimeError("rank 1 fails alone")
comm.Barrier()  # rank 0 would wait here forever without the hook
print("rank 0 got past the barrier", flush=True)
