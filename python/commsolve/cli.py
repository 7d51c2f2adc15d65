"""The ``commsolve`` command line.

Every command that runs under MPI takes ``-np N``: without mpiexec around it, the command
relaunches itself as ``mpiexec -n N python -m mpi4py -m commsolve ...``; started by
mpiexec, it checks that the world has N ranks. Errors found on all ranks print once and
exit with status 1; an error on one rank aborts the whole job (no hang).
"""

from __future__ import annotations

import json
import math
import os
import sys

import click

from .amg.classical import COARSENINGS
from .amg.cycle import SMOOTHERS
from .amg.hierarchy import INTERPOLATIONS
from .direct import ALGORITHMS
from .launch import mpi_env, mpiexec_command, under_mpiexec

PARTITIONS = ("contiguous", "strided", "metis")


def _relaunch_or_check(nprocs):
    """Returns normally when this process should do the work (as an MPI rank)."""
    if nprocs is None:
        return
    if nprocs < 1:
        raise click.BadParameter(f"must be at least 1, got {nprocs}", param_hint="-np")
    if under_mpiexec():
        from mpi4py import MPI

        if MPI.COMM_WORLD.size != nprocs:
            _fail(f"-np {nprocs} given, but mpiexec started {MPI.COMM_WORLD.size} ranks", collective=True)
        return
    # The same arguments, -np included: under mpiexec it is checked against the world size.
    cmd = mpiexec_command(nprocs, ["-m", "commsolve", *sys.argv[1:]])
    os.execvpe(cmd[0], cmd, mpi_env(nprocs))


def _report(text):
    """A command's result on rank 0, and below it any advice on this machine's BLAS."""
    from .spmv_run import blas_advice

    click.echo(text)
    advice = blas_advice()
    if advice:
        click.echo(f"note: {advice}", err=True)


def _fail(message, collective):
    """Report an error and end the job: once (rank 0) and cleanly when every rank has it,
    otherwise from this rank with MPI_Abort so the others do not wait forever."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank = comm.rank
    if collective or comm.size == 1:
        if rank == 0:
            click.echo(f"commsolve: error: {message}", err=True)
        # Every rank knows: finish MPI cleanly (python -m mpi4py would turn a non-zero
        # SystemExit into MPI_Abort); rank 0 carries the failing status.
        sys.stdout.flush()
        sys.stderr.flush()
        MPI.Finalize()
        os._exit(1 if rank == 0 else 0)
    click.echo(f"commsolve: error on rank {rank}: {message}", err=True)
    sys.stderr.flush()
    comm.Abort(1)


def _guarded(fn, *args, **kwargs):
    from ._collective import CollectiveError

    try:
        return fn(*args, **kwargs)
    except CollectiveError as e:
        _fail(str(e), collective=True)
    except (ValueError, OSError, RuntimeError) as e:
        _fail(str(e), collective=False)
    except MemoryError:
        _fail("out of memory (try a smaller problem, or more ranks)", collective=False)


def _finite(obj):
    """``obj`` with every non-finite float (and numpy scalar) made JSON-safe: NaN and
    infinities become null, which JSON has, instead of the bare NaN it has not."""
    if hasattr(obj, "tolist") and not isinstance(obj, (str, bytes)):  # numpy arrays and scalars
        obj = obj.tolist()
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def _json(obj):
    return json.dumps(_finite(obj), indent=2, allow_nan=False)


def _tolerance(value):
    if not (0 < value < 1):  # NaN fails too
        raise click.BadParameter(f"must lie in (0, 1), got {value}", param_hint="--tol")
    return value


def _progress(enabled, desc="SpMV"):
    from mpi4py import MPI

    if not enabled or MPI.COMM_WORLD.rank != 0:
        return None
    from tqdm import tqdm

    return lambda it: tqdm(it, desc=desc, unit="run", leave=False, file=sys.stderr, disable=None)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="commsolve")
def main():
    """commsolve: communication-optimized distributed sparse linear algebra on MPI."""


def _tree_options(f):
    f = click.option("--flat-threshold", type=click.IntRange(1), default=8, show_default=True,
                     help="auto trees: flat up to this many participants.")(f)
    return click.option("--seed", type=int, default=0, show_default=True, help="Seed of the shifted trees.")(f)


def _common_spmv_options(f):
    f = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (rank 0).")(f)
    f = click.option("--repeat", default=50, show_default=True, type=click.IntRange(0), help="Timed SpMVs.")(f)
    f = click.option("--strategy", type=click.Choice(["standard", "node-aware", "node-aware-2step", "auto"]),
                     default="standard", show_default=True, help="Halo-exchange strategy.")(f)
    f = click.option("--partition", type=click.Choice(PARTITIONS), default="contiguous", show_default=True)(f)
    f = click.option("--ppn", type=click.IntRange(1), default=None,
                     help="Virtual ranks per node (default: the real node layout).")(f)
    f = click.option("-np", "--np", "nprocs", type=int, default=None, help="Number of MPI ranks.")(f)
    return f


@main.command()
@click.option("--gen", metavar="SPEC", help="Gallery matrix, e.g. poisson2d:512, random:rows=10000,nnz_per_row=7.")
@click.option("--matrix", type=click.Path(dir_okay=False), help="Matrix Market file.")
@_common_spmv_options
@click.option("--no-check", is_flag=True, help="Skip the comparison with scipy.")
@click.option("--profile", help="Machine profile for --strategy auto (bundled name or TOML file).")
def spmv(gen, matrix, nprocs, ppn, partition, strategy, repeat, as_json, no_check, profile):
    """Distributed sparse matrix-vector product: time, rate and communication statistics."""
    if (gen is None) == (matrix is None):
        raise click.UsageError("give exactly one of --gen SPEC or --matrix FILE")
    _relaunch_or_check(nprocs)
    from mpi4py import MPI

    from .spmv_run import run_spmv

    result = _guarded(run_spmv, MPI.COMM_WORLD, gen=gen, matrix=matrix, partition=partition, ppn=ppn,
                      strategy=strategy, repeat=repeat, check=not no_check, progress=_progress(not as_json),
                      profile=profile)
    if result is not None:
        from .spmv_run import format_spmv

        _report(_json(result) if as_json else format_spmv(result))
        if result["rel_error_vs_scipy"] is not None and not result["rel_error_vs_scipy"] <= 1e-12:  # NaN fails
            _fail(f"result differs from scipy (relative error {result['rel_error_vs_scipy']:.2e})", True)
        if not result["stats_recorded_equal_planned"]:
            _fail("recorded communication statistics differ from the plan's", True)


@main.command()
@click.option("--gen", metavar="SPEC", help="Gallery matrix, e.g. random:rows_per_rank=1000,nnz_per_row=100.")
@click.option("--matrix", type=click.Path(dir_okay=False), help="Matrix Market file.")
@click.option("--procs", type=click.IntRange(1), required=True, help="Virtual ranks.")
@click.option("--ppn", type=click.IntRange(1), required=True, help="Virtual ranks per node.")
@click.option("--layout", type=click.Choice(["smp", "round-robin"]), default="smp", show_default=True)
@click.option("--partition", type=click.Choice(PARTITIONS), default="contiguous", show_default=True)
@click.option("--strategy", default="standard,node-aware,node-aware-2step", show_default=True,
              help="Comma-separated strategies to compare.")
@click.option("--plot", type=click.Path(dir_okay=False), help="PNG of the strategies' per-rank traffic.")
@click.option("--heatmap", type=click.Path(dir_okay=False), help="PNG of the volume between nodes (or ranks).")
@click.option("--heatmap-level", type=click.Choice(["node", "rank"]), default="node", show_default=True)
@click.option("--profile", help="Machine profile (bundled name such as bluewaters, or a TOML file): adds the "
              "modelled exchange time and makes auto choose by it.")
@click.option("--workload", type=click.Choice(["spmv", "amg"]), default="spmv", show_default=True,
              help="spmv: one matrix's halo exchange; amg: every level of its AMG hierarchy (SpMV and the "
              "Galerkin product's exchanges).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def analyze(gen, matrix, procs, ppn, layout, partition, strategy, plot, heatmap, heatmap_level, profile, workload,
            as_json):
    """Every rank's halo plan at virtual scale, per strategy, built in one process (no MPI)."""
    if (gen is None) == (matrix is None):
        raise click.UsageError("give exactly one of --gen SPEC or --matrix FILE")
    _check_plot_path(plot, "--plot")
    _check_plot_path(heatmap, "--heatmap")
    if workload == "amg":
        return _analyze_amg(gen, matrix, procs, ppn, layout, partition, strategy, plot, heatmap, profile, as_json)
    from tqdm import tqdm

    from .analysis import analyze as run_analysis
    from .analysis import format_analysis

    bars = {}

    def progress(stage, done, total):
        if stage not in bars:
            bars[stage] = tqdm(total=total, desc=stage, unit="rank" if stage == "patterns" else "strategy",
                               leave=False, file=sys.stderr, disable=None)
        bars[stage].update(done - bars[stage].n)

    try:
        result = run_analysis(procs, ppn, [s.strip() for s in strategy.split(",") if s.strip()], gen=gen,
                              matrix=matrix, partition_method=partition, layout=layout,
                              heatmap_level=heatmap_level if heatmap else None, profile=profile,
                              progress=progress)
    except (ValueError, OSError) as e:
        raise click.ClickException(str(e)) from None
    except MemoryError:
        raise click.ClickException("out of memory: try fewer ranks or a smaller matrix") from None
    finally:
        for b in bars.values():
            b.close()
    if plot:
        from .plots import plot_strategies

        plot_strategies(result, plot)
    if heatmap:
        from .plots import plot_volumes

        plot_volumes(result, heatmap)
    result.pop("volumes", None)
    click.echo(_json(result) if as_json else format_analysis(result))


@main.command()
@click.option("--gen", metavar="SPEC", help="Gallery matrix, e.g. poisson2d9:1024.")
@click.option("--matrix", type=click.Path(dir_okay=False), help="Matrix Market file (read in parallel).")
@click.option("-np", "--np", "nprocs", type=int, default=None, help="Number of MPI ranks.")
@click.option("--grid", default=None,
              help="Process grid PxQ or PxQxR (R = Pz layers, a power of two) with all ranks (default: the "
              "squarest 2D grid, P <= Q); 'auto': the grid and algorithm the simulator predicts fastest "
              "with --profile.")
@click.option("--profile", default=None,
              help="With --grid auto: the machine profile to simulate with (commsolve calibrate writes one).")
@click.option("--algorithm", type=click.Choice(ALGORITHMS), default=None,
              help="Triangular solve: 2d (Pz = 1), 3d-baseline (ICS'19, upper levels one supernode at a time), "
              "3d-baseline-async (its levels, every one message-driven) or 3d (SC'23) "
              "[default: 2d if Pz = 1, else 3d].")
@click.option("--partition", type=click.Choice(["nd", "greedy"]), default="nd", show_default=True,
              help="Forests of the 3D layout: top separator-tree levels, or SuperLU_DIST's greedy balance.")
@click.option("--allreduce", type=click.Choice(["packed", "per-supernode"]), default="packed", show_default=True,
              help="Inter-grid messages: one per pair and step, or one per supernode.")
@click.option("--tree", type=click.Choice(["flat", "binary", "shifted-binary", "need-ordered", "node-aware", "auto"]),
              default=None, help="Broadcast and reduction tree shape inside a grid [default: binary; with --grid "
              "auto, binary and flat are compared].")
@click.option("--nrhs", type=click.IntRange(1), default=1, show_default=True, help="Right-hand sides.")
@click.option("--repeat", type=click.IntRange(1), default=5, show_default=True, help="Timed solves.")
@click.option("--max-supernode", type=click.IntRange(1), default=128, show_default=True,
              help="Most columns in one supernode.")
@click.option("--relax-subtree", type=click.IntRange(0), default=32, show_default=True,
              help="Elimination subtrees of at most this many columns become one supernode.")
@click.option("--ppn", type=click.IntRange(1), default=None,
              help="Virtual ranks per node (default: the real node layout).")
@click.option("--equil/--no-equil", default=True, show_default=True,
              help="Equilibrate (row and column scaling) where the matrix is badly scaled.")
@click.option("--row-perm", type=click.Choice(["mc64", "none"]), default="mc64", show_default=True,
              help="Row permutation for a large diagonal (MC64's job, with its scaling), or none.")
@click.option("--replace-tiny", is_flag=True, help="Replace tiny pivots by sqrt(eps) ||A|| instead of failing.")
@click.option("--refine/--no-refine", default=True, show_default=True,
              help="Iterative refinement after each solve (timed apart).")
@click.option("--tol", type=float, default=1e-10, show_default=True, callback=lambda ctx, p, v: _tolerance(v),
              help="Largest normwise backward error ||Ax-b|| / (||A|| ||x|| + ||b||) accepted (exit 1 above).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (rank 0).")
def sptrsv(gen, matrix, nprocs, grid, profile, algorithm, partition, allreduce, tree, nrhs, repeat, max_supernode,
           relax_subtree, ppn, equil, row_perm, replace_tiny, refine, tol, as_json):
    """Supernodal LU on a 2D or 3D process grid and the distributed triangular solves: factor
    and solve times (L, inter-grid, U, b/x moves), residual and backward error, nnz(L+U) and
    the solve's communication per rank inside the grids (XY) and between them (Z)."""
    if (gen is None) == (matrix is None):
        raise click.UsageError("give exactly one of --gen SPEC or --matrix FILE")
    if (grid is not None and grid.strip().lower() == "auto") != (profile is not None):
        raise click.UsageError("--grid auto needs --profile (a machine profile to simulate with; 'commsolve "
                               "calibrate' writes one), and --profile goes with --grid auto")
    _relaunch_or_check(nprocs)
    from mpi4py import MPI

    from .sptrsv_run import format_sptrsv, run_sptrsv

    result = _guarded(run_sptrsv, MPI.COMM_WORLD, gen=gen, matrix=matrix, grid=grid, tree=tree, nrhs=nrhs,
                      repeat=repeat, ppn=ppn, max_supernode=max_supernode, relax_subtree=relax_subtree,
                      algorithm=algorithm, partition=partition, allreduce=allreduce, equil=equil, row_perm=row_perm,
                      replace_tiny=replace_tiny, refine=refine, profile=profile,
                      progress=_progress(not as_json, desc="solve"))
    if result is not None:
        _report(_json(result) if as_json else format_sptrsv(result))
        if not result["backward_error"] <= tol:  # NaN fails too
            _fail(f"backward error {result['backward_error']:.2e} above --tol {tol:.0e}", True)
        if not result["stats_recorded_equal_planned"]:
            _fail("recorded communication statistics differ from the plan's", True)


def _analyze_amg(gen, matrix, procs, ppn, layout, partition, strategy, plot, heatmap, profile, as_json):
    if heatmap or layout != "smp" or partition != "contiguous":
        raise click.UsageError("--workload amg distributes every level as a run does (contiguous rows, SMP "
                               "layout); --heatmap, --layout and --partition are for --workload spmv")
    from tqdm import tqdm

    from .amg.analysis import analyze_amg, format_amg_analysis

    bar = tqdm(desc="AMG levels", unit="level", leave=False, file=sys.stderr, disable=None)
    try:
        result = analyze_amg(procs, ppn, gen=gen, matrix=matrix, profile=profile,
                             strategies=[s.strip() for s in strategy.split(",") if s.strip()],
                             progress=lambda k, n: (setattr(bar, "total", n), bar.update(k - bar.n)))
    except (ValueError, OSError) as e:
        raise click.ClickException(str(e)) from None
    except MemoryError:
        raise click.ClickException("out of memory: try fewer ranks or a smaller matrix") from None
    finally:
        bar.close()
    if plot:
        from .plots import plot_amg_levels

        plot_amg_levels(result, plot)
    click.echo(_json(result) if as_json else format_amg_analysis(result))


@main.command(name="amg")
@click.option("--gen", metavar="SPEC", help="Gallery matrix, e.g. poisson3d:64.")
@click.option("--matrix", type=click.Path(dir_okay=False), help="Matrix Market file (symmetric positive definite).")
@click.option("-np", "--np", "nprocs", type=int, default=None, help="Number of MPI ranks.")
@click.option("--ppn", type=click.IntRange(1), default=None, help="Virtual ranks per node (default: the real layout).")
@click.option("--partition", type=click.Choice(PARTITIONS), default="contiguous", show_default=True)
@click.option("--method", type=click.Choice(["classical", "sa"]), default="classical", show_default=True,
              help="classical (PMIS, extended+i) or sa (smoothed aggregation, MIS-2 aggregates).")
@click.option("--strategy", type=click.Choice(["standard", "node-aware", "node-aware-2step", "auto"]),
              default="auto", show_default=True, help="Exchange strategy of every level (auto: chosen per level).")
@click.option("--profile", help="Machine profile that auto prices the strategies with (default: fewest "
              "inter-node messages).")
@click.option("--smoother", type=click.Choice(list(SMOOTHERS)),
              default="hybrid-gs",
              show_default=True)
@click.option("--theta", type=float, default=None, help="Strength threshold (default: 0.25 classical, 0 sa).")
@click.option("--max-coarse", type=click.IntRange(1), default=10, show_default=True)
@click.option("--coarsening", type=click.Choice(list(COARSENINGS)), default=None,
              help="Classical C/F splitting (default pmis: the same hierarchy on any partition; hmis: "
              "Ruge-Stueben within each rank first, hypre's default).")
@click.option("--interpolation", type=click.Choice(list(INTERPOLATIONS)), default=None,
              help="Classical interpolation (default ext+i, truncated to 4 entries per row).")
@click.option("--accel", type=click.Choice(["cg", "none"]), default="cg", show_default=True)
@click.option("--tol", type=float, default=1e-8, show_default=True, callback=lambda c, p, v: _tolerance(v))
@click.option("--maxiter", type=click.IntRange(1), default=200, show_default=True)
@click.option("--plot", type=click.Path(dir_okay=False), help="PNG of the hierarchy's sizes and messages per level.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (rank 0).")
def amg_cmd(gen, matrix, nprocs, ppn, partition, method, strategy, profile, smoother, theta, max_coarse,
            coarsening, interpolation, accel, tol, maxiter, plot, as_json):
    """Algebraic multigrid (classical or smoothed aggregation) as the preconditioner of CG:
    the hierarchy with each level's strategy and messages, iterations, setup and solve time."""
    if (gen is None) == (matrix is None):
        raise click.UsageError("give exactly one of --gen SPEC or --matrix FILE")
    if theta is not None and not (0 < theta < 1 or (method == "sa" and theta == 0)):
        raise click.BadParameter(f"must lie in (0, 1) ([0, 1) for sa), got {theta}", param_hint="--theta")
    for name, value in (("--coarsening", coarsening), ("--interpolation", interpolation)):
        if value is not None and method != "classical":
            raise click.UsageError(f"{name} is an option of --method classical")
    _check_plot_path(plot, "--plot")
    _relaunch_or_check(nprocs)
    from mpi4py import MPI

    from .amg_run import format_amg, plot_levels, run_amg

    bar = _progress(not as_json, desc="AMG setup")
    progress = None
    if bar is not None:
        from tqdm import tqdm

        levels_bar = tqdm(desc="AMG setup", unit="level", leave=False, file=sys.stderr, disable=None)
        progress = lambda k, nc: levels_bar.update(1)  # noqa: E731
    result = _guarded(run_amg, MPI.COMM_WORLD, gen=gen, matrix=matrix, partition=partition, ppn=ppn, method=method,
                      strategy=strategy, profile=profile, smoother=smoother, tol=tol,
                      accel=None if accel == "none" else accel, maxiter=maxiter, progress=progress, theta=theta,
                      max_coarse=max_coarse, coarsening=coarsening, interpolation=interpolation)
    if progress is not None:
        levels_bar.close()
    if result is not None:
        if plot:
            plot_levels(result, plot)
        _report(_json(result) if as_json else format_amg(result))
        if not result["converged"]:
            _fail(f"AMG-{accel} did not converge to {tol:g} in {maxiter} iterations "
                  f"(reached {result['residuals'][-1] / result['residuals'][0]:.2e} relative)", True)
        res = result["rel_residual_vs_scipy"]
        if res is not None and not res <= 10 * tol:  # NaN fails
            _fail(f"the solution's residual checked by scipy is {res:.2e}, above the tolerance", True)
        if not result["stats_recorded_equal_planned"]:
            _fail("recorded communication statistics differ from the plans'", True)


@main.command(name="trees")
@click.option("--gen", metavar="SPEC", help="Gallery matrix whose supernodal factor induces the collectives.")
@click.option("--matrix", type=click.Path(dir_okay=False), help="Matrix Market file instead of --gen.")
@click.option("--grid", default="46x46", show_default=True,
              help="Process grid PrxPc (sptrsv3d: PxQxR, R = Pz layers, a power of two).")
@click.option("--shape", default=None,
              help="Comma-separated tree shapes to compare [default: flat,binary,shifted-binary,need-ordered,"
              "node-aware; sptrsv3d: binary].")
@click.option("--ppn", type=click.IntRange(1), default=16, show_default=True,
              help="Ranks per node (consecutive ranks; the last node may be partly filled).")
@click.option("--max-supernode", type=click.IntRange(1), default=None,
              help="Most columns per supernode [default: 32 for selinv, the solver's 128 for the solves].")
@_tree_options
@click.option("--workload", type=click.Choice(["selinv", "sptrsv", "sptrsv3d"]), default="selinv", show_default=True,
              help="selinv: selected inversion's Col-Bcast/Row-Reduce; sptrsv: the 2D L- and U-solves "
              "(one right-hand side); sptrsv3d: whole 2D/3D solves per --algorithm, XY and Z traffic.")
@click.option("--algorithm", default=None,
              help="sptrsv3d: comma-separated solve algorithms, 2d running on the squarest 2D grid of as many "
              "ranks [default: 3d-baseline,3d].")
@click.option("--partition", type=click.Choice(["nd", "greedy"]), default=None,
              help="sptrsv3d: forests of the 3D layout [default: nd].")
@click.option("--allreduce", type=click.Choice(["packed", "per-supernode"]), default=None,
              help="sptrsv3d: inter-grid messages [default: packed].")
@click.option("--plot", type=click.Path(dir_okay=False),
              help="PNG: heat maps of per-rank volume on the grid (sptrsv3d: messages per rank and work per grid).")
@click.option("--json", "as_json", is_flag=True)
def trees_cmd(gen, matrix, grid, shape, ppn, max_supernode, seed, flat_threshold, workload, algorithm, partition,
              allreduce, plot, as_json):
    """Restricted collectives of a supernodal factor on a virtual grid, per tree shape: those
    of selected inversion (the PSelInv paper's Tables I and II) or of the 2D triangular solves
    (broadcast volume sent, reduction volume received); or, with --workload sptrsv3d, whole
    2D and 3D triangular solves per algorithm."""
    if (gen is None) == (matrix is None):
        raise click.UsageError("give exactly one of --gen SPEC or --matrix FILE")
    _check_plot_path(plot)
    if workload == "sptrsv3d":
        return _trees_sptrsv3d(gen, matrix, grid, shape or "binary", ppn, max_supernode, algorithm or "3d-baseline,3d",
                               partition or "nd", allreduce or "packed", seed, flat_threshold, plot, as_json)
    for name, value in (("--algorithm", algorithm), ("--partition", partition), ("--allreduce", allreduce)):
        if value is not None:
            raise click.UsageError(f"{name} belongs to --workload sptrsv3d")
    from .sptrsv_analysis import MAX_VIRTUAL_RANKS

    Pr, Pc = _grid_2d(grid, MAX_VIRTUAL_RANKS)
    from tqdm import tqdm

    from . import gallery, trees, workloads
    from .direct import symbolic
    from .io import mmread
    from .stats import CommStats
    from .topology import blocked_topology

    shapes = [s.strip() for s in (shape or "flat,binary,shifted-binary,need-ordered,node-aware").split(",")
              if s.strip()]
    try:
        for s in shapes:
            trees.check_shape(s)
        A = gallery.from_spec(gen) if gen else mmread(matrix)
        if workload == "selinv":
            S = workloads.supernodal_structure(A, max_supernode or 32)
            sets = [workloads.selinv_collectives(S, (Pr, Pc))]
        else:  # the factor the solver itself would build
            S = symbolic(A) if max_supernode is None else symbolic(A, max_supernode=max_supernode)
            sets = [workloads.sptrsv_collectives(S, (Pr, Pc), upper) for upper in (False, True)]
        P = Pr * Pc
        topo = blocked_topology(P, ppn)
        results = {}
        for s in tqdm(shapes, desc="tree shapes", leave=False, file=sys.stderr, disable=None):
            per_set = [trees.virtual_stats(C, topo, s, seed, flat_threshold) for C in sets]
            results[s] = trees.volume_summary([CommStats(sum(st.array for st in rank)) for rank in zip(*per_set)])
    except (ValueError, OSError) as e:
        raise click.ClickException(str(e)) from None
    except MemoryError:
        raise click.ClickException("out of memory: try a smaller grid or matrix") from None
    if plot:
        from .plots import plot_grid_volumes

        plot_grid_volumes({s: r["broadcast_sent"]["per_rank_bytes"] for s, r in results.items()}, (Pr, Pc), plot,
                          f"Col-Bcast volume sent per rank, {gen or matrix} on {Pr}x{Pc}")
    for r in results.values():
        for k in ("broadcast_sent", "reduce_received"):
            r[k].pop("per_rank_bytes")
    out = {"matrix": gen or str(matrix), "rows": int(A.shape[0]), "grid": [Pr, Pc], "ppn": ppn, "workload": workload,
           "supernodes": int(S.nsuper), "nnz_L": int(S.nnz_L), "collectives": sum(len(C) for C in sets),
           "shapes": results}
    if as_json:
        click.echo(_json(out))
        return
    click.echo(f"{out['matrix']}: {out['rows']:,} rows, {out['supernodes']:,} supernodes, nnz(L) {out['nnz_L']:,}; "
               f"{out['collectives']:,} {workload} collectives on a {Pr}x{Pc} grid, {ppn} ranks per node")
    for part in ("broadcast_sent", "reduce_received"):
        click.echo(f"\n{part.replace('_', ' ')} per rank (MB)")
        click.echo(f"{'shape':<16}{'min':>9}{'max':>9}{'median':>9}{'std':>9}{'max msgs':>10}")
        for s, r in results.items():
            v = r[part]
            click.echo(f"{s:<16}{v['min_bytes'] / 2**20:>9.2f}{v['max_bytes'] / 2**20:>9.2f}"
                       f"{v['median_bytes'] / 2**20:>9.2f}{v['std_bytes'] / 2**20:>9.2f}{v['max_messages']:>10,}")


def _grid_2d(grid, most):
    """(Pr, Pc) from --grid "PrxPc": positive, at most ``most`` ranks."""
    try:
        pr, pc = (int(v) for v in grid.lower().split("x"))
    except ValueError:
        raise click.BadParameter(f"expected PrxPc such as 46x46, got '{grid}'", param_hint="--grid") from None
    if pr < 1 or pc < 1 or pr * pc > most:
        raise click.BadParameter(f"a {pr}x{pc} grid: dimensions must be positive and the ranks at most {most:,}",
                                 param_hint="--grid")
    return pr, pc


def _check_plot_path(path, option="--plot"):
    """A plot's folder must exist before the work, not be found missing after it."""
    if path is not None and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise click.BadParameter(f"folder {os.path.dirname(os.path.abspath(path))} does not exist",
                                 param_hint=option)


def _trees_sptrsv3d(gen, matrix, grid, shape, ppn, max_supernode, algorithm, partition, allreduce, seed,
                    flat_threshold, plot, as_json):
    from tqdm import tqdm

    from . import gallery
    from .io import mmread
    from .sptrsv_analysis import analyse_sptrsv3d, format_sptrsv3d, plot_sptrsv3d

    algorithms = [a.strip() for a in algorithm.split(",") if a.strip()]
    if "," in shape:
        raise click.BadParameter("sptrsv3d takes one tree shape", param_hint="--shape")
    try:
        A = gallery.from_spec(gen) if gen else mmread(matrix)
        options = {} if max_supernode is None else {"max_supernode": max_supernode}
        with tqdm(total=len(algorithms), desc="algorithms", leave=False, file=sys.stderr, disable=None) as bar:
            out = analyse_sptrsv3d(A, grid, algorithms, tree=shape, ppn=ppn, partition=partition, allreduce=allreduce,
                                   seed=seed, flat_threshold=flat_threshold, progress=lambda _: bar.update(), **options)
    except (ValueError, OSError) as e:
        raise click.ClickException(str(e)) from None
    except MemoryError:
        raise click.ClickException("out of memory: try a smaller grid or matrix") from None
    out = {"matrix": gen or str(matrix), "workload": "sptrsv3d", "tree": shape, **out}
    if plot:
        plot_sptrsv3d(out, plot, out["matrix"])
    for s in out["algorithms"].values():
        for part in ("xy", "z"):
            s[part].pop("per_rank_msgs")
    click.echo(_json(out) if as_json else format_sptrsv3d(out, out["matrix"]))


@main.command()
@click.option("--gen", metavar="SPEC", help="Gallery matrix, e.g. poisson2d9:2048.")
@click.option("--matrix", type=click.Path(dir_okay=False), help="Matrix Market file.")
@click.option("--workload", type=click.Choice(["sptrsv3d", "spmv", "trees"]), default="sptrsv3d", show_default=True,
              help="sptrsv3d: the 2D and 3D triangular solves; spmv: the SpMV's halo exchange per --strategy; "
              "trees: selected inversion's restricted collectives per --tree shape.")
@click.option("--grid", default=None, help="sptrsv3d: Px x Py x Pz grid of the 3D solves, e.g. 16x16x8 (2d runs on "
              "the squarest 2D grid of as many ranks); 'auto' ranks every grid of --procs ranks. trees: PrxPc.")
@click.option("--procs", type=click.IntRange(1), default=None, help="Ranks (spmv, and sptrsv3d with --grid auto).")
@click.option("--strategy", default="standard,node-aware,node-aware-2step", show_default=True,
              help="spmv: comma-separated halo strategies.")
@click.option("--algorithm", default="2d,3d-baseline,3d", show_default=True,
              help="Comma-separated solve algorithms.")
@click.option("--profile", default="cori-haswell", show_default=True,
              help="Machine profile: a bundled name or a TOML file with [compute] and overhead "
              "(commsolve calibrate writes them).")
@click.option("--ppn", type=click.IntRange(1), default=None, help="Ranks per node [default: the profile's].")
@click.option("--nrhs", type=click.IntRange(1), default=1, show_default=True,
              help="Right-hand sides (spmv: vectors exchanged at once).")
@click.option("--tree", default=None,
              help="Broadcast/reduction tree shape [default: binary]; --grid auto: the shapes to compare [default: "
              "binary,flat]; trees: comma-separated shapes [default: flat,binary,shifted-binary,need-ordered,"
              "node-aware].")
@click.option("--partition", type=click.Choice(["nd", "greedy", *PARTITIONS]), default=None,
              help="sptrsv3d: forests of the 3D layout, nd or greedy [default: nd]; spmv: rows over ranks, "
              "contiguous, strided or metis [default: contiguous].")
@click.option("--allreduce", type=click.Choice(["packed", "per-supernode"]), default="packed", show_default=True,
              help="Inter-grid messages of the 3d solve.")
@click.option("--max-supernode", type=click.IntRange(1), default=None,
              help="Most columns per supernode [default: the solver's].")
@_tree_options
@click.option("--plot", type=click.Path(dir_okay=False), help="PNG: every rank's predicted time by category.")
@click.option("--timeline", type=click.Path(dir_okay=False),
              help="PNG: Gantt chart of every rank (small runs only).")
@click.option("--goal", type=click.Path(dir_okay=False),
              help="Write each simulated schedule in LogGOPSim's GOAL text format (several: NAME-<algorithm>.goal).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def simulate(ctx, gen, matrix, workload, grid, procs, strategy, algorithm, profile, ppn, nrhs, tree, partition,
             allreduce, max_supernode, seed, flat_threshold, plot, timeline, goal, as_json):
    """Predict the 2D and 3D triangular solves at scale: every rank's schedule (the one the
    MPI solve runs) replayed by a discrete-event simulator with a machine profile's network
    and compute models; predicted time, per-rank breakdown, critical path. With --grid auto
    --procs N, every grid of N ranks (Pz a power of two up to 32, Px <= Py <= 4 Px) and
    algorithm, fastest first. With --workload spmv, the SpMV's halo exchange on --procs ranks
    per --strategy."""
    if (gen is None) == (matrix is None):
        raise click.UsageError("give exactly one of --gen SPEC or --matrix FILE")
    from click.core import ParameterSource

    foreign = {"sptrsv3d": ("strategy",), "spmv": ("algorithm", "tree", "allreduce", "max_supernode", "seed",
                                                   "flat_threshold"),
               "trees": ("procs", "strategy", "algorithm", "nrhs", "partition", "allreduce")}[workload]
    given = [n for n in foreign if ctx.get_parameter_source(n) != ParameterSource.DEFAULT]
    if given:
        raise click.UsageError(f"--workload {workload} does not take "
                               + ", ".join("--" + n.replace("_", "-") for n in given))
    _check_plot_path(plot)
    _check_plot_path(timeline, "--timeline")
    _check_plot_path(goal, "--goal")
    outputs = {"plot": plot, "timeline": timeline, "goal": goal}
    if workload == "trees":
        if grid is None or procs is not None:
            raise click.UsageError("--workload trees takes --grid PrxPc, not --procs")
        return _simulate_trees(gen, matrix, grid, tree or "flat,binary,shifted-binary,need-ordered,node-aware",
                               profile, ppn, max_supernode, seed, flat_threshold, outputs, as_json)
    if workload == "spmv":
        if grid is not None or procs is None:
            raise click.UsageError("--workload spmv takes --procs N (rows split over N ranks), not --grid")
        if partition not in (None, *PARTITIONS):
            raise click.BadParameter(f"spmv partitions rows {', '.join(PARTITIONS)}, not {partition}",
                                     param_hint="--partition")
        return _simulate_spmv(gen, matrix, procs, strategy, profile, ppn, nrhs, partition or "contiguous", outputs,
                              as_json)
    if partition not in (None, "nd", "greedy"):
        raise click.BadParameter(f"the solves' forests are nd or greedy, not {partition}", param_hint="--partition")
    partition = partition or "nd"
    if grid is None:
        raise click.UsageError("--workload sptrsv3d needs --grid (PxQxR, or auto with --procs)")
    grid = grid.strip()
    if (grid.lower() == "auto") != (procs is not None):
        raise click.UsageError("--grid auto needs --procs" if procs is None else "--procs goes with --grid auto")
    if grid.lower() == "auto":
        if plot or timeline or goal:
            raise click.UsageError("--plot, --timeline and --goal show one grid: simulate the chosen grid with them")
        return _simulate_auto(gen, matrix, procs, algorithm, profile, ppn, nrhs, tree, partition, allreduce,
                              max_supernode, seed, flat_threshold, as_json)
    if tree is not None and "," in tree:
        raise click.BadParameter("one tree shape (several go with --workload trees or --grid auto)",
                                 param_hint="--tree")
    tree = tree or "binary"
    from tqdm import tqdm

    from . import gallery, trees
    from .direct import parse_grid
    from .io import mmread
    from .sim.study import MAX_TIMELINE_RANKS, format_simulation, simulate_algorithms

    algorithms = [a.strip() for a in algorithm.split(",") if a.strip()]
    try:
        trees.check_shape(tree)
        dims = parse_grid(grid, None)
        if timeline and dims[0] * dims[1] * dims[2] > MAX_TIMELINE_RANKS:
            raise click.BadParameter(f"a timeline of {dims[0] * dims[1] * dims[2]:,} ranks is unreadable; at most "
                                     f"{MAX_TIMELINE_RANKS}", param_hint="--timeline")
        A = gallery.from_spec(gen) if gen else mmread(matrix)
        options = {} if max_supernode is None else {"max_supernode": max_supernode}
        with tqdm(total=len(algorithms), desc="simulating", leave=False, file=sys.stderr, disable=None) as bar:
            out, results = simulate_algorithms(A, dims, algorithms, profile, ppn=ppn, tree=tree, partition=partition,
                                               allreduce=allreduce, nrhs=nrhs, seed=seed,
                                               flat_threshold=flat_threshold, timeline=bool(timeline),
                                               trace=bool(goal), progress=lambda _: bar.update(), **options)
    except (ValueError, OSError) as e:  # ProfileError is a ValueError
        raise click.ClickException(str(e)) from None
    except MemoryError:
        raise click.ClickException("out of memory: try a smaller grid or matrix") from None
    name = gen or str(matrix)
    out = {"matrix": name, "workload": "sptrsv3d", **out}
    _simulation_outputs(results, outputs, f"{name} on {out['nranks']:,} ranks, profile {out['profile']}")
    click.echo(_json(out) if as_json else format_simulation(out, name))


def _simulation_outputs(results, outputs, title):
    """--plot, --timeline and --goal of a simulation (results: {name: SimResult})."""
    from .sim import write_goal
    from .sim.study import plot_balance, plot_timeline

    if outputs["plot"]:
        plot_balance(results, outputs["plot"], title)
    if outputs["timeline"]:
        plot_timeline(results, outputs["timeline"], title)
    if outputs["goal"]:
        stem, ext = os.path.splitext(outputs["goal"])
        for name, r in results.items():
            path = outputs["goal"] if len(results) == 1 else f"{stem}-{name}{ext or '.goal'}"
            try:
                n = write_goal(r, path)
            except (ValueError, OSError) as e:
                raise click.ClickException(str(e)) from None
            click.echo(f"GOAL schedule of {name}: {n:,} operations written to {path}", err=True)


def _simulate_trees(gen, matrix, grid, shapes, profile, ppn, max_supernode, seed, flat_threshold, outputs, as_json):
    from . import gallery, trees, workloads
    from .io import mmread
    from .sim import simulation_profile
    from .sim.study import MAX_SIM_RANKS, MAX_TIMELINE_RANKS, format_shapes, simulate_shapes
    from .topology import blocked_topology

    shapes = [s.strip() for s in shapes.split(",") if s.strip()]
    try:
        for s in shapes:
            trees.check_shape(s)
        pr, pc = _grid_2d(grid, MAX_SIM_RANKS)
        if outputs["timeline"] and pr * pc > MAX_TIMELINE_RANKS:
            raise ValueError(f"a timeline of {pr * pc:,} ranks is unreadable; at most {MAX_TIMELINE_RANKS}")
        prof = simulation_profile(profile)
        ppn = ppn or prof.ppn
        A = gallery.from_spec(gen) if gen else mmread(matrix)
        S = workloads.supernodal_structure(A, max_supernode or 32)
        C = workloads.selinv_collectives(S, (pr, pc))
        topo = blocked_topology(pr * pc, ppn)
        out, results = simulate_shapes(C, topo, shapes, prof, seed=seed, flat_threshold=flat_threshold,
                                       timeline=bool(outputs["timeline"]), trace=bool(outputs["goal"]))
    except (ValueError, OSError) as e:
        raise click.ClickException(str(e)) from None
    name = gen or str(matrix)
    out = {"matrix": name, "workload": "trees", "grid": [pr, pc], **out}
    _simulation_outputs(results, outputs, f"{name}: selected inversion's collectives on {pr}x{pc}, profile "
                                          f"{out['profile']}")
    click.echo(_json(out) if as_json else format_shapes(out, name))


def _simulate_spmv(gen, matrix, procs, strategy, profile, ppn, block, partition, outputs, as_json):
    from . import gallery
    from .io import mmread
    from .sim.study import MAX_TIMELINE_RANKS, format_halo, simulate_strategies

    strategies = [a.strip() for a in strategy.split(",") if a.strip()]
    try:
        if outputs["timeline"] and procs > MAX_TIMELINE_RANKS:
            raise ValueError(f"a timeline of {procs:,} ranks is unreadable; at most {MAX_TIMELINE_RANKS}")
        A = gallery.from_spec(gen) if gen else mmread(matrix)
        out, results = simulate_strategies(A, procs, strategies, profile, ppn=ppn, partition=partition, block=block,
                                           timeline=bool(outputs["timeline"]), trace=bool(outputs["goal"]))
    except (ValueError, OSError) as e:
        raise click.ClickException(str(e)) from None
    name = gen or str(matrix)
    out = {"matrix": name, "workload": "spmv", **out}
    _simulation_outputs(results, outputs, f"{name} halo exchange on {procs:,} ranks, profile {out['profile']}")
    click.echo(_json(out) if as_json else format_halo(out, name))


def _simulate_auto(gen, matrix, procs, algorithm, profile, ppn, nrhs, tree, partition, allreduce, max_supernode,
                   seed, flat_threshold, as_json):
    from tqdm import tqdm

    from . import gallery, trees
    from .direct import symbolic
    from .io import mmread
    from .sim import simulation_profile
    from .sim.study import AUTO_TREES, MAX_AUTO_PZ, candidate_grids, check_ranks, format_ranking, rank_grids
    from .topology import blocked_topology

    algorithms = [a.strip() for a in algorithm.split(",") if a.strip()]
    try:
        shapes = [s.strip() for s in tree.split(",") if s.strip()] if tree else list(AUTO_TREES)
        for s in shapes:
            trees.check_shape(s)
        check_ranks(procs)
        prof = simulation_profile(profile)
        ppn = ppn or prof.ppn
        A = gallery.from_spec(gen) if gen else mmread(matrix)
        options = {} if max_supernode is None else {"max_supernode": max_supernode}
        S = symbolic(A, min(MAX_AUTO_PZ, 1 << (procs.bit_length() - 1)), **options)
        topo = blocked_topology(procs, ppn)
        with tqdm(total=len(candidate_grids(procs)), desc="grids", leave=False, file=sys.stderr, disable=None) as bar:
            ranking = rank_grids(S, topo, prof, algorithms, trees=shapes, partition=partition, allreduce=allreduce,
                                 nrhs=nrhs, seed=seed, flat_threshold=flat_threshold, progress=lambda _: bar.update())
    except (ValueError, OSError) as e:
        raise click.ClickException(str(e)) from None
    name = gen or str(matrix)
    ppn = topo.max_ppn
    out = {"matrix": name, "nranks": procs, "ppn": ppn, "profile": prof.name, "trees": shapes, "best": ranking[0],
           "ranking": ranking}
    if as_json:
        click.echo(_json(out))
        return
    click.echo(f"{name}: {int(S.sn_start[-1]):,} rows on {procs:,} ranks, {ppn} per node, profile {prof.name}; "
               f"{len(ranking)} configurations simulated")
    click.echo(format_ranking(ranking))
    b = ranking[0]
    click.echo(f"best: --grid {'x'.join(map(str, b['grid']))} --algorithm {b['algorithm']} --tree {b['tree']}")


def format_calibration(prof, report, path):
    lines = [f"profile '{prof.name}' written to {path}", f"{'fit':<28}{'alpha (us)':>12}{'rate (GB/s)':>13}"
             f"{'points':>8}{'rel. error':>12}"]
    for level in ("intra_node", "inter_node"):
        for proto in ("short", "eager", "rend"):
            f = report[level][proto]
            note = f"  (from {f['borrowed_from']})" if "borrowed_from" in f else ""
            lines.append(f"{level + '.' + proto:<28}{f['alpha'] * 1e6:>12.3f}{f['rate'] / 1e9:>13.3f}"
                         f"{f['points']:>8}{f['rel_error']:>12.3f}{note}")
    if "injection" in report:
        lines.append(f"injection R_N ({report['injection']['ppn']} senders): {report['injection']['rate'] / 1e9:.3f} GB/s")
    lines.append(f"protocol thresholds: short <= {prof.short_max} B, eager <= {prof.eager_max} B")
    lines.append(f"queue search gamma: {report['gamma']:.3e} s per step")
    if "solve_fit" in report:
        f = report["solve_fit"]
        micro, fitted = f["micro_benchmarks"], f["fitted"]
        lines.append(f"compute: flop rate {fitted['flop_rate'] / 1e9:.2f} GF/s, copy rate {fitted['copy_rate'] / 1e9:.1f} "
                     f"GB/s (micro-benchmarks); call overhead {fitted['call_overhead'] * 1e9:.0f} ns, memory bandwidth "
                     f"{fitted['bandwidth'] / 1e9:.2f} GB/s fitted to 1-rank solves (micro-benchmarks: "
                     f"{micro['call_overhead'] * 1e9:.0f} ns, {micro['bandwidth'] / 1e9:.2f} GB/s)")
        if "cache_bytes" in fitted:
            lines.append(f"  last-level cache: {fitted['cache_bytes'] / 2 ** 20:.0f} MiB per node, read at "
                         f"{fitted['cache_bandwidth'] / 1e9:.2f} GB/s (micro-benchmark "
                         f"{micro['cache_bandwidth'] / 1e9:.2f} GB/s, scaled as the memory's)")
        else:
            lines.append("  last-level cache: none found (no working set read much faster than memory): not modelled")
        lines.append("  solves: " + ", ".join(f"{s['matrix']} {s['ratio']:.2f}{' (in cache)' if s['in_cache'] else ''}"
                                              for s in f["solves"]) + " (predicted / measured)")
    if "engine_fit" in report:
        e = report["engine_fit"]
        lines.append(f"message engine: {e['engine_overhead'] * 1e6:.3f} us per message end beyond o, fitted to "
                     f"{e['matrix']} on {'x'.join(map(str, e['grid']))} ({e['measured_s'] * 1e3:.2f} ms measured, "
                     f"{e['predicted_without_s'] * 1e3:.2f} ms predicted without it)")
    if "overhead" in report:
        lines.append(f"message overhead o: {report['overhead'] * 1e6:.3f} us; through the any-source engine "
                     f"+{report['any_source'] * 1e6:.3f} us a message")
    lines.append(f"notes: {prof.description}")
    return "\n".join(lines)


@main.command()
@click.option("-np", "--np", "nprocs", type=int, default=2, show_default=True, help="Number of MPI ranks.")
@click.option("--ppn", type=click.IntRange(1), default=None,
              help="Virtual ranks per node (default: the real node layout).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True, help="Profile TOML to write.")
@click.option("--name", default=None, help="Profile name (default: the output file's stem).")
@click.option("--plot", type=click.Path(dir_okay=False), help="PNG of measured versus modelled times.")
@click.option("--short-max", type=click.IntRange(0), default=None,
              help="Largest short-protocol message in bytes (default: found from the timings).")
@click.option("--eager-max", type=click.IntRange(0), default=None,
              help="Largest eager-protocol message in bytes (default: found from the timings).")
@click.option("--quick", is_flag=True, help="Fewer sizes, samples and training solves (about half a minute).")
@click.option("--json", "as_json", is_flag=True, help="Print measurements and fits as JSON.")
def calibrate(nprocs, ppn, output, name, plot, short_max, eager_max, quick, as_json):
    """Measure this machine (ping-pong, injection, HighVolumePingPong, message overhead, the
    solve's kernels and 1-rank solves) and fit a profile."""
    if short_max is not None and eager_max is not None and short_max > eager_max:
        raise click.BadParameter("--short-max must not exceed --eager-max")
    _check_plot_path(plot)
    _check_plot_path(output, "--output")
    _relaunch_or_check(nprocs)
    from mpi4py import MPI

    from .model.calibrate import fit_profile, measure, plot_calibration
    from .parcsr import resolve_topology

    comm = MPI.COMM_WORLD
    topo = _guarded(resolve_topology, ppn, comm)
    bar = None
    if comm.rank == 0 and not as_json:
        from tqdm import tqdm

        bar = tqdm(desc="calibrating", unit="test", leave=False, file=sys.stderr, disable=None)

    def progress(done, total):
        if bar is not None:
            bar.total = total
            bar.update(done - bar.n)

    meas = _guarded(measure, comm, topo, quick=quick, progress=progress)
    from .sim.calibration import (QUICK_TRAINING, TRAINING, fit_engine_overhead, fit_solve_compute,
                                  measure_engine_solve, measure_solves)

    solves = _guarded(measure_solves, comm, QUICK_TRAINING if quick else TRAINING, 5 if quick else 9)
    engine = _guarded(measure_engine_solve, comm, repeat=5 if quick else 9)
    if bar is not None:
        bar.close()
    if comm.rank != 0:
        return
    stem = os.path.splitext(os.path.basename(output))[0]
    prof, report = fit_profile(meas, name or stem, short_max, eager_max)
    prof.compute, report["solve_fit"] = fit_solve_compute(prof, solves, meas["kernels"]["sharing"])
    if engine is not None:
        prof.engine_overhead, report["engine_fit"] = fit_engine_overhead(prof, engine)
    prof.save(output)
    if plot:
        plot_calibration(meas, prof, plot)
    if as_json:
        click.echo(_json({"measurements": meas, "fits": report, "profile": output}))
    else:
        click.echo(format_calibration(prof, report, output))


@main.command()
@click.option("-np", "--np", "nprocs", type=int, default=None,
              help="Number of MPI ranks [default: 4, or the ranks mpiexec started].")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
def demo(nprocs, as_json):
    """The main job: distributed SpMV on built-in problems, checked against scipy, with the
    communication each partition causes, plans built for 1,024 virtual ranks; then the
    flagship: the 2D and both 3D triangular solves on the same ranks, checked against scipy,
    and counted at 2,048 virtual ranks."""
    _relaunch_or_check(4 if nprocs is None and not under_mpiexec() else nprocs)
    from mpi4py import MPI

    from .demo import run_demo

    out = _guarded(run_demo, MPI.COMM_WORLD, echo=None if as_json else click.echo)
    if as_json and out is not None:
        click.echo(_json(out))
    if out is not None and not out["ok"]:
        _fail("demo checks failed (see above)", True)


if __name__ == "__main__":
    main()
