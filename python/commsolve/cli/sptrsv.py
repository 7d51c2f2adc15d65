"""``commsolve sptrsv``: supernodal LU on a 2D or 3D process grid and the distributed
triangular solves, under MPI."""

from __future__ import annotations

import click

from ..direct import AUTO, LU_DEFAULTS, ORDERINGS, ROW_PERMS, is_auto
from ..runs.sptrsv import SINGULAR_RESIDUAL
from .common import (ALGORITHM_CHOICE, EXIT_SINGULAR, TREE_CHOICE, allreduce_option, as_json_text, bar, fail,
                     forest_partition_option, grid_spelling, guarded, input_checks, json_option, launch_options,
                     matrix_options, max_supernode_option, need_one_source, ppn_option, progress, relaunch_or_check,
                     report, tolerance)


@click.command()
@matrix_options("poisson2d9:1024", "Matrix Market file (read in parallel).")
@launch_options()
@click.option("--grid", default=None, callback=grid_spelling(),
              help="Process grid PxQ or PxQxR (R = Pz layers, a power of two) with all ranks (default: the "
              f"squarest 2D grid, P <= Q); '{AUTO}': the grid and algorithm the simulator predicts fastest "
              "with --profile.")
@click.option("--profile", default=None,
              help=f"With --grid {AUTO}: the machine profile to simulate with (commsolve calibrate writes one).")
@click.option("--algorithm", type=ALGORITHM_CHOICE, default=None,
              help="Triangular solve: 2d (Pz = 1), 3d-baseline (ICS'19, upper levels one supernode at a time), "
              "3d-baseline-async (its levels, every one message-driven) or 3d (SC'23) "
              "[default: 2d if Pz = 1, else 3d].")
@forest_partition_option()
@allreduce_option
@click.option("--tree", type=TREE_CHOICE, default=None,
              help=f"Broadcast and reduction tree shape inside a grid [default: binary; with --grid {AUTO}, binary "
              "and flat are compared].")
@click.option("--nrhs", type=click.IntRange(1), default=1, show_default=True, help="Right-hand sides.")
@click.option("--threads", type=click.IntRange(1), default=None,
              help="Threads per rank for the solves: above 1 each phase runs on them, sync-free on grids 1x1xPz "
                   "(SC'23 Algorithm 4), message-driven on others (not 3d-baseline). Default: OMP_NUM_THREADS on a "
                   "1x1xPz grid, else 1.")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True,
              help="Where the solve phases run: cuda runs them sync-free on each rank's GPU (grids 1x1xPz; a build "
                   "with COMMSOLVE_CUDA=ON).")
@click.option("--repeat", type=click.IntRange(1), default=5, show_default=True, help="Timed solves.")
@max_supernode_option
@click.option("--ordering", type=click.Choice(ORDERINGS), default=LU_DEFAULTS["ordering"], show_default=True,
              help="Fill-reducing ordering: auto (ptscotch on a 2D mesh, ptscotch-metis on a 3D one: the "
                   "faster setup), tree (METIS separators kept as a tree, on rank 0; the leaves ordered each on its own "
                   "rank), nd (METIS nested "
                   "dissection, rank 0), ptscotch (PT-Scotch's separators on the distributed matrix, on the "
                   "largest power of two of ranks, each leaf ordered by Scotch on its own rank), ptscotch-metis (the "
                   "same separators, each leaf ordered by METIS), natural.")
@click.option("--relax-subtree", type=click.IntRange(0), default=LU_DEFAULTS["relax_subtree"], show_default=True,
              help="Elimination subtrees of at most this many columns become one supernode.")
@ppn_option()
@click.option("--equil/--no-equil", default=True, show_default=True,
              help="Equilibrate (row and column scaling) where the matrix is badly scaled.")
@click.option("--row-perm", type=click.Choice(ROW_PERMS), default=ROW_PERMS[0], show_default=True,
              help="Row permutation for a large diagonal (MC64's job, with its scaling), or none.")
@click.option("--replace-tiny", is_flag=True, help="Replace tiny pivots by sqrt(eps) ||A|| instead of failing.")
@click.option("--refine/--no-refine", default=True, show_default=True,
              help="Iterative refinement after each solve (timed apart).")
@click.option("--allow-singular", is_flag=True,
              help=f"Exit 0 on a numerically singular matrix (a relative residual above {SINGULAR_RESIDUAL:g}) "
              f"instead of {EXIT_SINGULAR}; the --tol check of the backward error still applies. Replaced tiny "
              "pivots alone are a warning.")
@click.option("--tol", type=float, default=1e-10, show_default=True, callback=lambda ctx, p, v: tolerance(v),
              help="Largest normwise backward error ||Ax-b|| / (||A|| ||x|| + ||b||) accepted (exit 1 above).")
@json_option()
def sptrsv(gen, matrix, nprocs, oversubscribe, timeout, grid, profile, algorithm, partition, allreduce, tree, nrhs,
           threads, device, repeat, max_supernode, ordering, relax_subtree, ppn, equil, row_perm, replace_tiny, refine,
           allow_singular, tol, as_json):
    """Supernodal LU on a 2D or 3D process grid and the distributed triangular solves: factor
    and solve times (L, inter-grid, U, b/x moves), residual and backward error, nnz(L+U) and
    the solve's communication per rank inside the grids (XY) and between them (Z)."""
    need_one_source(gen, matrix)
    if is_auto(grid) != (profile is not None):
        raise click.UsageError(f"--grid {AUTO} needs --profile (a machine profile to simulate with; 'commsolve "
                               f"calibrate' writes one), and --profile goes with --grid {AUTO}")
    from .. import _core

    def before_launch(n):  # what the ranks check first, said at once
        input_checks(n, matrix, ppn, solve=True)
        if not is_auto(grid):
            from ..direct.distributed import checked_request

            checked_request(n, grid, tree, algorithm, partition, allreduce, seed=None, flat_threshold=None,
                            root=0, profile=profile,
                            lu_options=dict(max_supernode=max_supernode, ordering=ordering, relax_subtree=relax_subtree,
                                            equil=equil, row_perm=row_perm, replace_tiny=replace_tiny))

    relaunch_or_check(nprocs, oversubscribe, timeout, threads=threads or _core.default_threads(),
                      before_launch=before_launch)
    from mpi4py import MPI

    from ..runs.sptrsv import format_sptrsv, run_sptrsv

    from ..direct.distributed import FACTOR_STAGES

    stages = None if as_json else bar(total=len(FACTOR_STAGES), desc="factor", unit="stage")
    result = guarded(run_sptrsv, MPI.COMM_WORLD, gen=gen, matrix=matrix, grid=grid, tree=tree, nrhs=nrhs,
                     repeat=repeat, ppn=ppn, max_supernode=max_supernode, ordering=ordering,
                     relax_subtree=relax_subtree,
                     algorithm=algorithm, partition=partition, allreduce=allreduce, equil=equil, row_perm=row_perm,
                     replace_tiny=replace_tiny, refine=refine, profile=profile, threads=threads,
                     device=device,
                     progress=progress(not as_json, desc="solve"),
                     factor_progress=None if stages is None else lambda stage: (stages.set_postfix_str(stage),
                                                                                 stages.update()))
    if stages is not None:
        stages.close()
    if result is None:
        return
    report(as_json_text(result) if as_json else format_sptrsv(result))
    if not result["backward_error"] <= tol:  # NaN fails too
        fail(f"backward error {result['backward_error']:.2e} above --tol {tol:.0e}", True)
    if not result["stats_recorded_equal_planned"]:
        fail("recorded communication statistics differ from the plan's", True)
    if result["singular"] and not allow_singular:
        fail("the matrix is numerically singular: " + "; ".join(result["warnings"]) + " (--allow-singular accepts it)",
             True, EXIT_SINGULAR, label="singular")
