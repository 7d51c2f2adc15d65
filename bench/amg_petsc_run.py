"""One peer AMG-PCG run for bench/amg_vs_hypre.py, under Debian's python3 (petsc4py):
PETSc CG (unpreconditioned residual norm, rtol 1e-8, x0 = 0, b = 1) with BoomerAMG (hypre's
defaults through PCHYPRE; ``hypre-hmis``: hypre's own recommended settings instead — HMIS
coarsening, extended+i interpolation, at most 4 entries per row of P — the algorithms of
commsolve's classical AMG with ``coarsening="hmis"``, which keeps entries tied with the 4th
where hypre picks among them) or GAMG (PETSc's defaults) on a matrix
in PETSc binary format.
Each repetition builds a fresh KSP; setup (KSPSetUp) and solve (KSPSolve) are each timed
between barriers (so the slowest rank's time); hypre's statistics (for its operator
complexity) come from one more, untimed setup. Rank 0 prints one JSON line.

    mpiexec -n P python3 bench/amg_petsc_run.py MATRIX.petsc hypre|hypre-hmis|gamg REPEAT
"""

import json
import sys
import time

import petsc4py

petsc4py.init([])
from petsc4py import PETSc  # noqa: E402

path, pc_type, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
comm = PETSc.COMM_WORLD
HYPRE_HMIS = {"pc_hypre_boomeramg_coarsen_type": "HMIS", "pc_hypre_boomeramg_interp_type": "ext+i",
              "pc_hypre_boomeramg_P_max": 4}
if pc_type == "hypre-hmis":
    for key, value in HYPRE_HMIS.items():
        PETSc.Options()[key] = value


def timed(fn):
    comm.barrier()
    t0 = time.perf_counter()
    fn()
    comm.barrier()
    return time.perf_counter() - t0


viewer = PETSc.Viewer().createBinary(path, "r", comm=comm)
A = PETSc.Mat().create(comm=comm)
A.setType("aij")
A.load(viewer)
b, x = A.createVecs()
b.set(1.0)


def make_ksp(statistics=False):
    """A fresh CG + AMG solver; ``statistics``: hypre prints its hierarchy (and operator
    complexity) during the setup, extra work kept out of the timed runs."""
    ksp = PETSc.KSP().create(comm=comm)
    ksp.setOperators(A)
    ksp.setType("cg")
    ksp.setNormType(PETSc.KSP.NormType.UNPRECONDITIONED)
    ksp.setTolerances(rtol=1e-8, atol=0.0, max_it=500)
    pc = ksp.getPC()
    if pc_type.startswith("hypre"):
        if statistics:
            PETSc.Options()["pc_hypre_boomeramg_print_statistics"] = 1
        pc.setType("hypre")
        pc.setHYPREType("boomeramg")
        pc.setFromOptions()
        if statistics:
            PETSc.Options().delValue("pc_hypre_boomeramg_print_statistics")
    else:
        pc.setType("gamg")
    return ksp


runs = []
for _ in range(repeat):
    ksp = make_ksp()
    x.set(0.0)
    setup = timed(ksp.setUp)
    solve = timed(lambda: ksp.solve(b, x))
    r = b.duplicate()
    A.mult(x, r)
    r.aypx(-1.0, b)
    runs.append({"setup_s": setup, "solve_s": solve, "iterations": ksp.getIterationNumber(),
                 "converged": ksp.getConvergedReason() > 0, "rel_residual": r.norm() / b.norm()})
    ksp.destroy()
if pc_type.startswith("hypre"):  # one more setup, untimed, for the operator complexity hypre prints
    ksp = make_ksp(statistics=True)
    ksp.setUp()
    ksp.destroy()
if comm.getRank() == 0:
    print(json.dumps({"peer": "PETSc " + ".".join(map(str, PETSc.Sys.getVersion())) + " " + pc_type,
                      "nranks": comm.getSize(), "runs": runs}), flush=True)
