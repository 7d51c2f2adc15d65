"""``commsolve simulate sptrsv|spmv|amg|trees|selinv``: predicted times at scale, every rank's schedule
(the one the MPI code runs) replayed by the discrete-event simulator with a machine
profile's network and compute models."""

from __future__ import annotations

import os
import click

from ..direct import AUTO, KERNELS, is_auto
from ..parcsr import STRATEGIES
from .common import (TREE, WorkloadGroup, ablation_options, allreduce_option, as_json_text, bar, check_plot_path,
                     check_sparsify, forest_partition_option,
                     grid_2d, json_option, load_matrix, matrix_options, max_supernode_option, need_one_source,
                     offline, refuse, sparsify_options, split_list, tree_seed_options, workload_hint, ROW_PARTITIONS)
from .trees import ALL_SHAPES


@click.group(cls=WorkloadGroup, legacy={"sptrsv3d": "sptrsv", "spmv": "spmv", "trees": "trees", "amg": "amg"},
             default="sptrsv")
def simulate():
    """Predict at scale: the 2D and 3D triangular solves (sptrsv), the SpMV's halo exchange
    per strategy (spmv), an AMG-CG iteration plain and sparsified (amg), selected
    inversion's main collectives all in flight at once per tree shape (trees), parallel
    selected inversion whole, in order, per tree shape (selinv), the 2.5D multiply and LU per
    replication factor (gemm, lu), or one multicast over a torus per tree shape (multicast),
    every rank's schedule replayed with a machine profile."""


def _common(f):
    """Options every workload of the simulator takes: the matrix, the profile, the ranks per
    node, the plots, the GOAL export, JSON."""
    f = json_option("Print the result as JSON.")(f)
    f = click.option("--goal", type=click.Path(dir_okay=False),
                     help="Write each simulated schedule in LogGOPSim's GOAL text format (several: NAME-<case>.goal)."
                     )(f)
    f = click.option("--timeline", type=click.Path(dir_okay=False),
                     help="PNG: Gantt chart of every rank (small runs only).")(f)
    f = click.option("--plot", type=click.Path(dir_okay=False), help="PNG: every rank's predicted time by category.")(f)
    f = click.option("--ppn", type=click.IntRange(1), default=None, help="Ranks per node [default: the profile's].")(f)
    f = click.option("--profile", default="cori-haswell", show_default=True,
                     help="Machine profile: a bundled name or a TOML file with [compute] and overhead "
                     "(commsolve calibrate writes them).")(f)
    return matrix_options("poisson2d9:2048")(f)


def _outputs(plot, timeline, goal, nranks):
    from ..sim.study import MAX_TIMELINE_RANKS

    check_plot_path(plot)
    check_plot_path(timeline, "--timeline")
    check_plot_path(goal, "--goal", formats=None)
    if timeline and nranks is not None and nranks > MAX_TIMELINE_RANKS:
        raise click.BadParameter(f"a timeline of {nranks:,} ranks is unreadable; at most {MAX_TIMELINE_RANKS}",
                                 param_hint="--timeline")
    return {"plot": plot, "timeline": timeline, "goal": goal}


def _write_outputs(results, outputs, title):
    """--plot, --timeline and --goal of a simulation (results: {name: SimResult})."""
    from ..sim import write_goal
    from ..sim.study import plot_balance, plot_timeline

    if outputs["plot"]:
        plot_balance(results, outputs["plot"], title)
    if outputs["timeline"]:
        plot_timeline(results, outputs["timeline"], title)
    if outputs["goal"]:
        stem, ext = os.path.splitext(outputs["goal"])
        for name, r in results.items():
            path = outputs["goal"] if len(results) == 1 else f"{stem}-{name}{ext or '.goal'}"
            n = offline(write_goal, r, path)
            click.echo(f"GOAL schedule of {name}: {n:,} operations written to {path}", err=True)


@simulate.command(name="sptrsv")
@_common
@click.option("--grid", required=True, help=f"Px x Py x Pz grid of the 3D solves, e.g. 16x16x8 (2d runs on the "
              f"squarest 2D grid of as many ranks); '{AUTO}' ranks every grid of --procs ranks.")
@click.option("--procs", type=click.IntRange(1), default=None, help=f"Ranks, with --grid {AUTO}.")
@click.option("--algorithm", default=None, help="Comma-separated solve algorithms [default: 2d,3d-baseline,3d; 2d "
              "alone on a 2D grid].")
@click.option("--nrhs", type=click.IntRange(1), default=1, show_default=True, help="Right-hand sides.")
@click.option("--tree", default=None, help=f"Broadcast/reduction tree shape [default: {TREE.name}]; with --grid "
              f"{AUTO}, comma-separated shapes to compare [default: binary,flat].")
@forest_partition_option()
@allreduce_option
@ablation_options
@max_supernode_option
@tree_seed_options
@refuse("--strategy", message=lambda ctx, name: f"--strategy belongs to {workload_hint(ctx, 'simulate', 'spmv', 'spmv')}")
def simulate_sptrsv(gen, matrix, profile, ppn, plot, timeline, goal, as_json, grid, procs, algorithm, nrhs, tree,
                    partition, allreduce, kernels, leaf_sync, max_supernode, seed, flat_threshold):
    """The 2D and 3D triangular solves on a grid: predicted time, the slowest rank's breakdown,
    critical path. With --grid auto --procs N, every grid of N ranks (Pz a power of two up to
    32, Px <= Py <= 4 Px) and algorithm, fastest first."""
    need_one_source(gen, matrix)
    if is_auto(grid) != (procs is not None):
        raise click.UsageError(f"--grid {AUTO} needs --procs" if procs is None else f"--procs goes with --grid {AUTO}")
    if is_auto(grid):
        if plot or timeline or goal:
            raise click.UsageError("--plot, --timeline and --goal show one grid: simulate the chosen grid with them")
        if kernels != KERNELS[0] or leaf_sync:
            raise click.UsageError(f"--kernels and --leaf-sync are the SC'23 ablation's switches: the grid {AUTO} "
                                   "ranking runs the solves as they run by default (simulate one grid with them)")
        return _simulate_auto(gen, matrix, procs, algorithm, profile, ppn, nrhs, tree, partition, allreduce,
                              max_supernode, seed, flat_threshold, as_json)
    if tree is not None and "," in tree:
        raise click.BadParameter(f"one tree shape (several go with 'commsolve simulate trees' or --grid {AUTO})",
                                 param_hint="--tree")
    from ..direct import parse_grid
    from ..sim.study import format_simulation, simulate_algorithms

    dims = offline(parse_grid, grid, None)
    algorithms = split_list(algorithm or ("2d,3d-baseline,3d" if dims[2] > 1 else "2d"))
    outputs = _outputs(plot, timeline, goal, dims[0] * dims[1] * dims[2])

    def run():
        A = load_matrix(gen, matrix)
        with bar(total=len(algorithms), desc="simulating") as shown:
            return simulate_algorithms(A, dims, algorithms, profile, ppn=ppn, tree=tree, partition=partition,
                                       allreduce=allreduce, nrhs=nrhs, seed=seed, flat_threshold=flat_threshold,
                                       timeline=bool(timeline), trace=bool(goal), progress=lambda _: shown.update(),
                                       kernels=kernels, leaf_sync=leaf_sync, max_supernode=max_supernode)

    out, results = offline(run, oom="try a smaller grid or matrix")
    name = gen or str(matrix)
    out = {"matrix": name, "workload": "sptrsv3d", **out}
    _write_outputs(results, outputs, f"{name} on {out['nranks']:,} ranks, profile {out['profile']}")
    click.echo(as_json_text(out) if as_json else format_simulation(out, name))


def _simulate_auto(gen, matrix, procs, algorithm, profile, ppn, nrhs, tree, partition, allreduce, max_supernode,
                   seed, flat_threshold, as_json):
    from ..direct import symbolic
    from ..sim import simulation_profile
    from ..sim.study import check_ranks
    from ..topology import blocked_topology
    from ..tune import AUTO_TREES, auto_max_pz, candidate_grids, format_ranking, rank_grids

    def run():
        shapes = split_list(tree) if tree else list(AUTO_TREES)
        check_ranks(procs)
        prof = simulation_profile(profile)
        A = load_matrix(gen, matrix)
        S = symbolic(A, auto_max_pz(procs), max_supernode=max_supernode)
        topo = blocked_topology(procs, ppn or prof.ppn)
        with bar(total=len(candidate_grids(procs)), desc="grids") as shown:
            ranking = rank_grids(S, topo, prof, split_list(algorithm or "2d,3d-baseline,3d"), trees=shapes, partition=partition,
                                 allreduce=allreduce, nrhs=nrhs, seed=seed, flat_threshold=flat_threshold,
                                 progress=lambda _: shown.update())
        return S, topo, prof, shapes, ranking

    S, topo, prof, shapes, ranking = offline(run)
    name = gen or str(matrix)
    out = {"matrix": name, "nranks": procs, "ppn": topo.max_ppn, "profile": prof.name, "trees": shapes,
           "best": ranking[0], "ranking": ranking}
    if as_json:
        click.echo(as_json_text(out))
        return
    click.echo(f"{name}: {int(S.n):,} rows on {procs:,} ranks, {topo.max_ppn} per node, profile {prof.name}; "
               f"{len(ranking)} configurations simulated")
    click.echo(format_ranking(ranking))
    b = ranking[0]
    click.echo(f"best: --grid {'x'.join(map(str, b['grid']))} --algorithm {b['algorithm']} --tree {b['tree']}")


_SOLVE_OPTIONS = ("--algorithm", "--tree", "--allreduce", "--max-supernode", "--seed", "--flat-threshold")


@simulate.command(name="spmv")
@_common
@click.option("--procs", type=click.IntRange(1), required=True, help="Ranks the rows are split over.")
@click.option("--strategy", default=",".join(s for s in STRATEGIES if s != "auto"), show_default=True,
              help="Comma-separated halo strategies.")
@click.option("--nrhs", type=click.IntRange(1), default=1, show_default=True, help="Vectors exchanged at once.")
@click.option("--partition", type=click.Choice(ROW_PARTITIONS), default="contiguous", show_default=True,
              help="How rows are split over the ranks.")
@refuse("--grid", message=lambda ctx, name: f"{workload_hint(ctx, 'simulate', 'spmv', 'spmv')} takes --procs N "
        "(rows split over N ranks), not --grid")
@refuse(*_SOLVE_OPTIONS, message=lambda ctx, name: f"{name} belongs to "
        f"{workload_hint(ctx, 'simulate', 'sptrsv', 'sptrsv3d')}")
def simulate_spmv(gen, matrix, profile, ppn, plot, timeline, goal, as_json, procs, strategy, nrhs, partition):
    """The SpMV's halo exchange on --procs ranks per --strategy: each rank's plan, step by
    step, as the MPI executor runs it."""
    need_one_source(gen, matrix)
    from ..sim.study import format_halo, simulate_strategies

    outputs = _outputs(plot, timeline, goal, procs)
    out, results = offline(lambda: simulate_strategies(load_matrix(gen, matrix), procs, split_list(strategy), profile,
                                                       ppn=ppn, partition=partition, block=nrhs,
                                                       timeline=bool(timeline), trace=bool(goal)))
    name = gen or str(matrix)
    out = {"matrix": name, "workload": "spmv", **out}
    _write_outputs(results, outputs, f"{name} halo exchange on {procs:,} ranks, profile {out['profile']}")
    click.echo(as_json_text(out) if as_json else format_halo(out, name))


@simulate.command(name="amg")
@matrix_options("poisson3d27:40")
@click.option("--procs", type=click.IntRange(1), required=True, help="Ranks every level's rows are split over.")
@click.option("--ppn", type=click.IntRange(1), default=None, help="Ranks per node [default: the profile's].")
@click.option("--profile", default="cori-haswell", show_default=True,
              help="Machine profile: a bundled name or a TOML file (commsolve calibrate writes them).")
@click.option("--strategy", type=click.Choice([s for s in STRATEGIES if s != "auto"]), default="standard",
              show_default=True, help="Halo strategy of every level.")
@click.option("--method", type=click.Choice(["classical", "sa"]), default="classical", show_default=True)
@sparsify_options
@json_option("Print the result as JSON.")
def simulate_amg(gen, matrix, procs, ppn, profile, strategy, method, sparsify, gamma, lumping, as_json):
    """One AMG-preconditioned CG iteration's halo exchanges on --procs ranks, plain Galerkin
    against the --sparsify'd hierarchy: every level's exchanges (counted by running an
    iteration) replayed by the simulator with the profile."""
    need_one_source(gen, matrix)
    if sparsify is None:
        raise click.UsageError("simulate amg compares plain AMG with a sparsified one: give --sparsify and --gamma")
    check_sparsify(sparsify, gamma, lumping)
    from ..sim import simulation_profile
    from ..sim.amg import compare_sparsified, format_amg_iteration

    levels = bar(desc="levels simulated", unit="level")
    try:
        prof = offline(simulation_profile, profile)
        out = offline(compare_sparsified, load_matrix(gen, matrix), procs, ppn or prof.ppn, prof, strategy=strategy,
                      sparsify=sparsify, gamma=gamma, lumping=lumping, method=method,
                      progress=lambda k, n: (setattr(levels, "total", n), levels.update(k - levels.n)),
                      oom="try fewer ranks or a smaller matrix")
    finally:
        levels.close()
    name = gen or str(matrix)
    out = {"matrix": name, "workload": "amg", "sparsify": sparsify, "gamma": gamma, "lumping": lumping, **out}
    click.echo(as_json_text(out) if as_json else format_amg_iteration(out, name))


def _per_tree_shape(workload, title, study, format_out, gen, matrix, profile, ppn, plot, timeline, goal, as_json, grid,
                    tree, max_supernode):
    """The subcommands that compare tree shapes on a supernodal factor's PrxPc grid:
    ``study(A, S, (pr, pc), topology, shapes, profile, timeline, trace)`` returns the summary
    and {shape: SimResult}."""
    need_one_source(gen, matrix)
    from .. import trees as rc
    from ..direct import symbolic
    from ..sim import simulation_profile
    from ..sim.study import MAX_SIM_RANKS
    from ..topology import blocked_topology

    shapes = split_list(tree)
    pr, pc = grid_2d(grid, MAX_SIM_RANKS)
    outputs = _outputs(plot, timeline, goal, pr * pc)

    def run():
        for s in shapes:
            rc.check_shape(s)
        prof = simulation_profile(profile)
        A = load_matrix(gen, matrix)
        S = symbolic(A, max_supernode=max_supernode)
        return study(A, S, (pr, pc), blocked_topology(pr * pc, ppn or prof.ppn), shapes, prof, bool(timeline),
                     bool(goal))

    out, results = offline(run)
    name = gen or str(matrix)
    out = {"matrix": name, "workload": workload, "grid": [pr, pc], **out}
    _write_outputs(results, outputs, f"{name}: {title} on {pr}x{pc}, profile {out['profile']}")
    click.echo(as_json_text(out) if as_json else format_out(out, name))


@simulate.command(name="trees")
@_common
@click.option("--grid", required=True, help="Process grid PrxPc.")
@click.option("--tree", default=ALL_SHAPES, show_default=True, help="Comma-separated tree shapes.")
@max_supernode_option
@tree_seed_options
@refuse("--procs", "--strategy", "--algorithm", "--nrhs", "--partition", "--allreduce",
        message=lambda ctx, name: f"{name} is not an option of "
        f"{workload_hint(ctx, 'simulate', 'trees', 'trees')}")
def simulate_trees(gen, matrix, profile, ppn, plot, timeline, goal, as_json, grid, tree, max_supernode, seed,
                   flat_threshold):
    """Selected inversion's Col-Bcast and Row-Reduce collectives per tree shape, all in flight
    at once (the engine's own logic)."""
    from .. import workloads
    from ..sim.study import format_shapes, simulate_shapes

    def study(A, S, grid, topo, shapes, prof, timeline, trace):
        return simulate_shapes(workloads.selinv_collectives(S, grid), topo, shapes, prof, seed=seed,
                               flat_threshold=flat_threshold, timeline=timeline, trace=trace)

    _per_tree_shape("trees", "selected inversion's collectives", study, format_shapes, gen, matrix, profile, ppn,
                    plot, timeline, goal, as_json, grid, tree, max_supernode)


@simulate.command(name="selinv")
@_common
@click.option("--grid", required=True, help="Process grid PrxPc.")
@click.option("--tree", default="flat,binary,shifted-binary", show_default=True, help="Comma-separated tree shapes.")
@click.option("--form", type=click.Choice(["auto", "symmetric", "unsymmetric"]), default="auto", show_default=True,
              help="The symmetric form (A = A^T: half the products, transposes across the diagonal), the "
              "unsymmetric one, or auto: symmetric if A = A^T.")
@max_supernode_option
@tree_seed_options
@refuse("--procs", "--strategy", "--algorithm", "--nrhs", "--partition", "--allreduce",
        message=lambda ctx, name: f"{name} is not an option of {workload_hint(ctx, 'simulate', 'selinv', 'selinv')}")
def simulate_selinv(gen, matrix, profile, ppn, plot, timeline, goal, as_json, grid, tree, form, max_supernode, seed,
                    flat_threshold):
    """Parallel selected inversion per tree shape: both phases, each rank's supernodes in the
    order the MPI run takes them, its products priced; predicted time, speedup over flat
    trees, communication/computation ratio and the Col-Bcast and Row-Reduce volumes per rank
    (the PSelInv paper's Table I and Figures 7-8)."""
    from ..sim import selinv_schedule
    from ..sim.selinv import format_shape_study, shape_study

    def study(A, S, grid, topo, shapes, prof, timeline, trace):
        symmetric = (A != A.T).nnz == 0 if form == "auto" else form == "symmetric"
        schedule = selinv_schedule(S, grid, symmetric, seed=seed, flat_threshold=flat_threshold)
        out, results = shape_study(schedule, topo, shapes, prof, timeline=timeline, trace=trace)
        return {"rows": int(A.shape[0]), "supernodes": int(S.nsuper), "nnz_L": int(S.nnz_L), **out}, results

    _per_tree_shape("selinv", "parallel selected inversion", study, format_shape_study, gen, matrix, profile, ppn,
                    plot, timeline, goal, as_json, grid, tree, max_supernode)


def _dense_command(kind, name):
    @simulate.command(name=name)
    @click.option("--n", type=click.IntRange(1), required=True, help="Matrix size (square).")
    @click.option("--procs", type=click.IntRange(1), required=True, help="Simulated ranks.")
    @click.option("--c", "replications", default="1,4,16", show_default=True,
                  help="Comma-separated replication factors (layers); those with procs/c a perfect square run.")
    @click.option("--nb", type=click.IntRange(1), default=256, show_default=True, help="Block size.")
    @click.option("--profile", default="intrepid-bgp", show_default=True, help="Machine profile (name or file).")
    @click.option("--ppn", type=click.IntRange(1), default=None, help="Ranks per node [default: the profile's].")
    @click.option("--tree", type=click.Choice(ALL_SHAPES.split(",")), default="binary", show_default=True,
                  help="Shape of every broadcast and reduction tree.")
    @click.option("--piece", type=click.IntRange(1), default=8192, show_default=True,
                  help="Most values per message (longer moves go in pieces, pipelined).")
    @click.option("--torus", default=None,
                  help="Node torus extents (e.g. 16x32x32 for 65,536 ranks at 4 per node): messages share the "
                  "links of their routes (the profile's [torus] rates).")
    @click.option("--placement", type=click.Choice(["ranks", "layers"]), default="ranks", show_default=True,
                  help="Ranks on nodes: in rank order (a layer spans nodes), or layers first (a rank's copies "
                  "along z on its node and the next: the sums along z stay close).")
    @click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
    def command(n, procs, replications, nb, profile, ppn, tree, piece, torus, placement, as_json, pivoting="none"):
        from ..sim.dense import format_replication_study, replication_study

        try:
            cs = [int(v) for v in replications.split(",") if v.strip()]
        except ValueError:
            raise click.BadParameter(f"expected integers separated by commas, got {replications!r}",
                                     param_hint="--c") from None
        if not cs or min(cs) < 1:
            raise click.BadParameter(f"replication factors must be >= 1, got {replications!r}", param_hint="--c")
        dims = None
        if torus is not None:
            try:
                dims = [int(v) for v in torus.lower().split("x")]
            except ValueError:
                raise click.BadParameter(f"expected extents like 16x32x32, got {torus!r}", param_hint="--torus") from None
        out = offline(replication_study, kind, n, procs, profile, cs, nb=nb, ppn=ppn, tree=tree, piece=piece,
                      torus=dims, pivoting=pivoting, placement=placement,
                      progress=None if as_json else lambda it: bar(iterable=it, desc=name))
        click.echo(as_json_text(out) if as_json else format_replication_study(out))

    command.help = (f"The 2.5D {'multiply' if kind == 'matmul' else 'LU'} of n x n on --procs simulated ranks, "
                    "one run per replication factor c on a sqrt(p/c) x sqrt(p/c) x c grid: predicted time, "
                    "speedup over the first c, share of the flop rate, words per rank beside the formula "
                    "(Solomonik and Demmel's strong scaling at 65,536 cores)."
                    + (" With --pivoting tournament, the pivots of a random matrix are modelled (each step's "
                       "pivot rows drawn uniformly from the rows left)." if kind == "lu" else ""))
    if kind == "lu":
        command = click.option("--pivoting", type=click.Choice(["none", "tournament"]), default="none",
                               show_default=True, help="Without pivoting, or with tournament pivoting.")(command)
    return command


simulate_gemm = _dense_command("matmul", "gemm")
simulate_lu = _dense_command("lu", "lu")


@simulate.command(name="multicast")
@click.option("--torus", "dims", default="8x8x8", show_default=True, help="Node torus extents, e.g. 16x16x16.")
@click.option("--bytes", "nbytes", type=click.IntRange(8), default=1 << 20, show_default=True, help="Message size.")
@click.option("--piece", type=click.IntRange(8), default=32768, show_default=True,
              help="Bytes per piece (pieces are pipelined down the trees).")
@click.option("--tree", default="binomial,rectangular", show_default=True, help="Comma-separated tree shapes.")
@click.option("--profile", default="intrepid-bgp", show_default=True, help="Machine profile with a [torus] table.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def simulate_multicast(dims, nbytes, piece, tree, profile, as_json):
    """One multicast to every node of a torus, per tree shape, with the links of every route
    shared (contention): binomial (Cray's) against rectangular (Blue Gene's dimension-ordered
    trees), beside the seed's two models (Solomonik, Bhatele and Demmel, SC'11)."""
    from ..sim.multicast import format_multicast_study, multicast_study

    try:
        extents = [int(v) for v in dims.lower().split("x")]
    except ValueError:
        raise click.BadParameter(f"expected extents like 8x8x8, got {dims!r}", param_hint="--torus") from None
    if not extents or min(extents) < 1:
        raise click.BadParameter(f"extents must be >= 1, got {dims!r}", param_hint="--torus")
    shapes = split_list(tree)
    for s in shapes:
        if s not in ALL_SHAPES.split(","):
            raise click.BadParameter(f"unknown tree shape {s!r} (known: {ALL_SHAPES})", param_hint="--tree")
    out = offline(multicast_study, extents, nbytes, profile, piece_bytes=piece, shapes=shapes)
    click.echo(as_json_text(out) if as_json else format_multicast_study(out))
