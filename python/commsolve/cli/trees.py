"""``commsolve trees selinv|sptrsv|sptrsv3d``: the restricted collectives of a supernodal
factor on a virtual grid, per tree shape, or whole 2D and 3D solves per algorithm."""

from __future__ import annotations

import click

from ..trees import SHAPES
from .common import (WorkloadGroup, allreduce_option, as_json_text, bar, check_plot_path,
                     forest_partition_option, grid_2d, json_option, load_matrix, matrix_options, max_supernode_option,
                     need_one_source, offline, refuse, split_list, tree_seed_options, workload_hint)

ALL_SHAPES = ",".join(s for s in SHAPES if s != "auto")


@click.group(cls=WorkloadGroup, legacy={"selinv": "selinv", "sptrsv": "sptrsv", "sptrsv3d": "sptrsv3d"},
             default="selinv")
def trees():
    """Restricted collectives of a supernodal factor on a virtual grid, per tree shape (selected
    inversion's, or the 2D solves'), or whole 2D and 3D triangular solves (sptrsv3d)."""


def _collective_options(f):
    """The options of the two collective workloads (selinv, sptrsv)."""
    f = click.option("--plot", type=click.Path(dir_okay=False),
                     help="PNG: heat maps of per-rank broadcast volume on the grid.")(f)
    f = tree_seed_options(f)
    f = max_supernode_option(f)
    f = click.option("--ppn", type=click.IntRange(1), default=16, show_default=True,
                     help="Ranks per node (consecutive ranks; the last node may be partly filled).")(f)
    f = click.option("--shape", default=ALL_SHAPES, show_default=True, help="Comma-separated tree shapes to compare.")(f)
    f = click.option("--grid", default="46x46", show_default=True, help="Process grid PrxPc.")(f)
    f = matrix_options("poisson3d:40", "Matrix Market file instead of --gen.")(f)
    return refuse("--algorithm", "--partition", "--allreduce",
                  message=lambda ctx, name: f"{name} belongs to {workload_hint(ctx, 'trees', 'sptrsv3d', 'sptrsv3d')}")(f)


def _collectives(workload, gen, matrix, grid, shape, ppn, max_supernode, seed, flat_threshold, plot, as_json):
    need_one_source(gen, matrix)
    check_plot_path(plot)
    from ..runs.sptrsv_analysis import MAX_VIRTUAL_RANKS

    Pr, Pc = grid_2d(grid, MAX_VIRTUAL_RANKS)
    from .. import trees as rc
    from .. import workloads
    from ..direct import symbolic
    from ..stats import CommStats
    from ..topology import blocked_topology

    shapes = split_list(shape)

    def run():
        for s in shapes:
            rc.check_shape(s)
        A = load_matrix(gen, matrix)
        S = symbolic(A, max_supernode=max_supernode)
        if workload == "selinv":
            sets = [workloads.selinv_collectives(S, (Pr, Pc))]
        else:  # the factor the solver itself would build
            sets = [workloads.sptrsv_collectives(S, (Pr, Pc), upper) for upper in (False, True)]
        topo = blocked_topology(Pr * Pc, ppn)
        results = {}
        for s in bar(iterable=shapes, desc="tree shapes"):
            per_set = [rc.virtual_stats(C, topo, s, seed, flat_threshold) for C in sets]
            results[s] = rc.volume_summary([CommStats(sum(st.array for st in rank)) for rank in zip(*per_set)])
        return A, S, sets, results

    A, S, sets, results = offline(run, oom="try a smaller grid or matrix")
    if plot:
        from ..runs.plots import plot_grid_volumes

        plot_grid_volumes({s: r["broadcast_sent"]["per_rank_bytes"] for s, r in results.items()}, (Pr, Pc), plot,
                          f"Col-Bcast volume sent per rank, {gen or matrix} on {Pr}x{Pc}")
    for r in results.values():
        for k in ("broadcast_sent", "reduce_received"):
            r[k].pop("per_rank_bytes")
    out = {"matrix": gen or str(matrix), "rows": int(A.shape[0]), "grid": [Pr, Pc], "ppn": ppn, "workload": workload,
           "supernodes": int(S.nsuper), "nnz_L": int(S.nnz_L), "collectives": sum(len(C) for C in sets),
           "shapes": results}
    if as_json:
        click.echo(as_json_text(out))
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


@trees.command(name="selinv")
@_collective_options
@json_option("Print the result as JSON.")
def trees_selinv(gen, matrix, grid, shape, ppn, max_supernode, seed, flat_threshold, plot, as_json):
    """Selected inversion's Col-Bcast and Row-Reduce collectives (the PSelInv paper's Tables I
    and II): broadcast volume sent, reduction volume received, per tree shape."""
    _collectives("selinv", gen, matrix, grid, shape, ppn, max_supernode, seed, flat_threshold, plot, as_json)


@trees.command(name="sptrsv")
@_collective_options
@json_option("Print the result as JSON.")
def trees_sptrsv(gen, matrix, grid, shape, ppn, max_supernode, seed, flat_threshold, plot, as_json):
    """The collectives of the 2D L- and U-solves (what sptrsv runs under MPI, per right-hand
    side), per tree shape."""
    _collectives("sptrsv", gen, matrix, grid, shape, ppn, max_supernode, seed, flat_threshold, plot, as_json)


@trees.command(name="sptrsv3d")
@matrix_options("poisson2d9:2048")
@click.option("--grid", default="16x16x8", show_default=True, help="Process grid PxQxR (R = Pz layers, a power of two).")
@click.option("--shape", type=click.Choice(SHAPES), default="binary", show_default=True,
              help="Broadcast and reduction tree shape inside a grid.")
@click.option("--ppn", type=click.IntRange(1), default=16, show_default=True,
              help="Ranks per node (consecutive ranks; the last node may be partly filled).")
@max_supernode_option
@tree_seed_options
@click.option("--algorithm", default=None,
              help="Comma-separated solve algorithms, 2d running on the squarest 2D grid of as many ranks "
              "[default: 3d-baseline,3d; on a 2D grid, 2d].")
@forest_partition_option()
@allreduce_option
@click.option("--plot", type=click.Path(dir_okay=False), help="PNG: messages per rank and work per grid.")
@json_option("Print the result as JSON.")
def trees_sptrsv3d(gen, matrix, grid, shape, ppn, max_supernode, seed, flat_threshold, algorithm, partition,
                   allreduce, plot, as_json):
    """Whole 2D and 3D triangular solves per algorithm at virtual scale: XY and Z traffic per
    rank, synchronisation points, work per grid; and the 3D factorization's messages."""
    need_one_source(gen, matrix)
    check_plot_path(plot)
    from ..direct import parse_grid
    from ..runs.sptrsv_analysis import MAX_VIRTUAL_RANKS, analyse_sptrsv3d, format_sptrsv3d, plot_sptrsv3d

    def run():
        pz = parse_grid(grid, None, MAX_VIRTUAL_RANKS, "the virtual world")[2]
        algorithms = split_list(algorithm or ("3d-baseline,3d" if pz > 1 else "2d"))
        A = load_matrix(gen, matrix)
        with bar(total=len(algorithms), desc="algorithms") as shown:
            return analyse_sptrsv3d(A, grid, algorithms, tree=shape, ppn=ppn, partition=partition,
                                    allreduce=allreduce, seed=seed, flat_threshold=flat_threshold,
                                    progress=lambda _: shown.update(), max_supernode=max_supernode)

    out = offline(run, oom="try a smaller grid or matrix")
    out = {"matrix": gen or str(matrix), "workload": "sptrsv3d", "tree": shape, **out}
    if plot:
        plot_sptrsv3d(out, plot, out["matrix"])
    for s in out["algorithms"].values():
        for part in ("xy", "z"):
            s[part].pop("per_rank_msgs")
    click.echo(as_json_text(out) if as_json else format_sptrsv3d(out, out["matrix"]))
