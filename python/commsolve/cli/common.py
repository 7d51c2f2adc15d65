"""What the commands share: running under MPI (the ``-np`` relaunch, errors reported once or
the job aborted), JSON output, progress bars, and option decorators whose choices come from
the library's own lists (so the CLI never spells out a list the library keeps)."""

from __future__ import annotations

import json
import math
import os
import sys

import click

from .. import partition, trees
from ..direct import ALGORITHMS, ALLREDUCE, FOREST_PARTITIONS, KERNELS, LU_DEFAULTS
from .. import _watchdog
from ..launch import DEFAULT_TIMEOUT, OVERSUBSCRIBE_FACTOR, check_rank_count, default_timeout, relaunch, under_mpiexec
from ..parcsr import STRATEGIES

__all__ = ["relaunch_or_check", "report", "fail", "guarded", "as_json_text", "tolerance", "progress",
           "check_plot_path", "split_list", "load_matrix", "need_one_source", "grid_spelling", "grid_2d",
           "WorkloadGroup", "workload_hint", "refuse", "agglomerate_option", "fail_unless_solved", "matrix_options",
           "launch_options", "ppn_option", "show_progress", "bar", "json_option", "tree_seed_options",
           "strategy_option", "row_partition_option", "forest_partition_option", "allreduce_option",
           "max_supernode_option", "ROW_PARTITIONS", "TREE", "input_checks"]

ROW_PARTITIONS = partition.METHODS  # how rows are split over ranks (contiguous, strided, metis)
TREE = trees.TreeShape()  # the tree options' defaults, as C++ sets them


# ---- running under MPI -------------------------------------------------------------

def relaunch_or_check(nprocs, oversubscribe=False, timeout=None, threads=1, before_launch=None):
    """Returns normally when this process should do the work (as an MPI rank): without
    mpiexec around it, runs the same command line as ``mpiexec -n N python -m mpi4py -m
    commsolve ...`` (:func:`commsolve.launch.relaunch`: the watchdog on, with ``timeout`` or
    :func:`~commsolve.launch.default_timeout`; a rank's death reported) and exits with its status; started by
    mpiexec, checks that the world has N ranks and switches the watchdog on if ``timeout``
    is given. ``threads`` per rank (> 1: ranks bound to no core, :func:`~commsolve.launch.mpi_env`).
    ``before_launch(N)``, if given, runs here first: the checks the ranks would make of the
    input (the same functions), so that a ValueError is said at once, without starting MPI."""
    if timeout is not None and not timeout >= 0:  # NaN fails too
        raise click.BadParameter(f"must be a number of seconds >= 0 (0: off), got {timeout}", param_hint="--timeout")
    if nprocs is None:
        if timeout is not None and under_mpiexec():
            _watchdog.configure(timeout, os.environ.get("COMMSOLVE_WATCHDOG_DIR"))
        return
    if nprocs < 1:
        raise click.BadParameter(f"must be at least 1, got {nprocs}", param_hint="-np")
    if under_mpiexec():
        from mpi4py import MPI

        if timeout is not None and not _watchdog.enabled():
            _watchdog.configure(timeout, os.environ.get("COMMSOLVE_WATCHDOG_DIR"))
        if MPI.COMM_WORLD.size != nprocs:
            fail(f"-np {nprocs} given, but mpiexec started {MPI.COMM_WORLD.size} ranks", collective=True)
        return
    try:
        check_rank_count(nprocs, oversubscribe)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="-np") from None
    if timeout is None:
        try:
            timeout = default_timeout()
        except ValueError as e:
            raise click.UsageError(str(e)) from None
    if before_launch is not None:
        try:
            before_launch(nprocs)
        except ValueError as e:
            _say_failure(str(e), EXIT_ERROR)
            sys.exit(EXIT_ERROR)
    # The same arguments, -np included: under mpiexec it is checked against the world size.
    sys.exit(relaunch(nprocs, ["-m", "commsolve", *sys.argv[1:]], timeout=timeout, threads=threads))


def show_progress():
    """Whether progress bars show on this process: on rank 0 of a job whose launching
    terminal is one (the relaunch says so in COMMSOLVE_PROGRESS: a rank's own stderr is a
    pipe), or in one process writing to a terminal."""
    MPI = sys.modules.get("mpi4py.MPI")
    if MPI is not None and MPI.Is_initialized() and MPI.COMM_WORLD.rank != 0:
        return False
    return os.environ.get("COMMSOLVE_PROGRESS") == "1" or sys.stderr.isatty()


_output = {"json": False, "reported": False}  # --json given; a result printed (report)


def report(text):
    """A command's result on rank 0, and below it any advice on this machine's BLAS."""
    from ..runs.spmv import blas_advice

    _output["reported"] = True
    click.echo(text)
    advice = blas_advice()
    if advice:
        click.echo(f"note: {advice}", err=True)


EXIT_ERROR = 1     # bad input, a failed check, a solve that did not converge
EXIT_SINGULAR = 3  # the matrix is numerically singular (sptrsv; --allow-singular accepts it)


def fail(message, collective, code=EXIT_ERROR, label="error"):
    """Report an error and end the job: once (rank 0) and cleanly when every rank has it
    (exit status ``code``), otherwise from this rank with MPI_Abort so the others do not wait
    forever."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank = comm.rank
    if collective or comm.size == 1:
        if rank == 0:
            _say_failure(message, code, label)
        # Every rank knows: finish MPI cleanly (python -m mpi4py would turn a non-zero
        # SystemExit into MPI_Abort); rank 0 carries the failing status.
        sys.stdout.flush()
        sys.stderr.flush()
        MPI.Finalize()
        os._exit(code if rank == 0 else 0)
    _say_failure(message, 1, rank=rank, as_json=rank == 0)
    sys.stdout.flush()
    sys.stderr.flush()
    comm.Abort(1)


def _say_failure(message, code, label="error", rank=None, as_json=True):
    """The failure on stderr; with --json, as a JSON object on stdout too, unless the result
    was printed already (a check of it failed: the result stays the one JSON document) or
    ``as_json`` is False (a rank other than 0 failing alone: ranks failing at once must not
    print a document each)."""
    click.echo(f"commsolve: {label}{'' if rank is None else f' on rank {rank}'}: {message}", err=True)
    if as_json and _output["json"] and not _output["reported"]:
        click.echo(as_json_text({"error": message, "kind": label, "exit_status": code,
                                 **({} if rank is None else {"rank": rank})}))


def guarded(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` on an MPI rank, its errors reported by :func:`fail`."""
    from .._collective import CollectiveError

    try:
        return fn(*args, **kwargs)
    except CollectiveError as e:
        fail(str(e), collective=True)
    except (ValueError, OSError, RuntimeError) as e:
        fail(str(e), collective=False)
    except MemoryError:
        fail("out of memory (try a smaller problem, or more ranks)", collective=False)


def offline(fn, *args, oom="try a smaller problem", **kwargs):
    """``fn(*args, **kwargs)`` in one process (no MPI): its errors as clean CLI errors."""
    try:
        return fn(*args, **kwargs)
    except (ValueError, OSError) as e:  # ProfileError is a ValueError
        raise click.ClickException(str(e)) from None
    except MemoryError:
        raise click.ClickException(f"out of memory: {oom}") from None


# ---- output ------------------------------------------------------------------------

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


def as_json_text(obj):
    return json.dumps(_finite(obj), indent=2, allow_nan=False)


def tolerance(value):
    if not (0 < value < 1):  # NaN fails too
        raise click.BadParameter(f"must lie in (0, 1), got {value}", param_hint="--tol")
    return value


def progress(enabled, desc="SpMV"):
    """A wrapper that shows a progress bar over an iterable where bars show (None elsewhere)."""
    if not enabled or not show_progress():
        return None
    from tqdm import tqdm

    return lambda it: tqdm(it, desc=desc, unit="run", leave=False, file=sys.stderr)


def bar(**kwargs):
    """A tqdm bar on stderr, shown where :func:`show_progress` says."""
    from tqdm import tqdm

    return tqdm(leave=False, file=sys.stderr, disable=not show_progress(), **kwargs)


PLOT_FORMATS = ("png", "pdf", "svg", "eps", "ps", "jpg", "jpeg", "tif", "tiff", "webp")  # what matplotlib writes


def check_plot_path(path, option="--plot", formats=PLOT_FORMATS):
    """A plot's file must be writable, in a format it can be written in, before the work
    (not found wrong after it): the folder exists and takes a file, the suffix is known."""
    if path is None:
        return
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise click.BadParameter(f"folder {folder} does not exist", param_hint=option)
    suffix = os.path.splitext(path)[1].lower().lstrip(".")
    if formats and suffix not in formats:
        raise click.BadParameter(f"{path}: the format is named by the suffix, one of {', '.join(formats)} "
                                 f"(got {'.' + suffix if suffix else 'none'})", param_hint=option)
    import tempfile

    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".commsolve-"):
            pass
    except OSError as e:
        raise click.BadParameter(f"cannot write in folder {folder} ({e.strerror})", param_hint=option) from None


# ---- inputs ------------------------------------------------------------------------

def split_list(text):
    """A comma-separated list, blanks dropped."""
    return [v.strip() for v in text.split(",") if v.strip()]


def need_one_source(gen, matrix):
    if (gen is None) == (matrix is None):
        raise click.UsageError("give exactly one of --gen SPEC or --matrix FILE")


def input_checks(nranks, matrix=None, ppn=None, solve=False):
    """What the ranks check first of --matrix FILE (its header) and --ppn, for
    :func:`relaunch_or_check`'s ``before_launch``: ValueError as they would raise it. With
    ``solve`` (commands that solve A x = b), a header whose entries cannot fill every row is
    refused at once: such a matrix is singular, and a typo in its sizes would otherwise cost
    the reading of the file into arrays of that many rows first."""
    from ..io import mminfo
    from ..topology import make_topology

    if ppn is not None:
        make_topology(ppn=ppn, size=nranks)
    if matrix is not None:
        h = mminfo(matrix)
        rows_covered = h.nnz if h.symmetry == "general" else 2 * h.nnz  # symmetric: an entry stands for two
        if solve and rows_covered < h.nrows:
            raise ValueError(f"{matrix}: the header declares {h.nrows} rows but only {h.nnz} entries "
                             f"({h.symmetry}): some row is empty, so the matrix is singular (a typo in the header?)")


def load_matrix(gen, matrix):
    """The whole matrix of --gen SPEC or --matrix FILE, in this process."""
    from .. import gallery
    from ..io import mmread

    return gallery.from_spec(gen) if gen else mmread(matrix)


def grid_spelling(rule=None):
    """Click callback of the direct solvers' --grid: its spelling checked by ``rule(grid,
    None)`` (default: :func:`~commsolve.direct.parse_grid`'s grid rule, PxQ or PxQxR, positive,
    R a power of two) before anything starts, a usage error (exit 2) when broken; the rank
    count is checked later, against -np or the world. None and ``auto`` pass."""
    from ..direct import is_auto, parse_grid

    def check(ctx, param, value):
        if value is None or is_auto(value):
            return value
        try:
            (rule or parse_grid)(value, None)
        except ValueError as e:
            raise click.BadParameter(str(e)) from None
        return value

    return check


def grid_2d(grid, most):
    """(Pr, Pc) from --grid "PrxPc" by the grid rule (one layer), at most ``most`` ranks."""
    from ..direct import parse_grid

    if len(grid.lower().split("x")) != 2:
        raise click.BadParameter(f"expected PrxPc such as 46x46, got '{grid}'", param_hint="--grid")
    try:
        pr, pc, _ = parse_grid(grid, None, most, "the virtual world")
    except ValueError as e:
        raise click.BadParameter(f"expected PrxPc such as 46x46: {e}", param_hint="--grid") from None
    return pr, pc


# ---- command groups by workload, and the spellings they replace ---------------------

class WorkloadGroup(click.Group):
    """A command whose workloads are subcommands (``commsolve simulate sptrsv``). The former
    spelling, one command with ``--workload NAME`` (``legacy`` maps each old NAME to its
    subcommand; ``default`` when it was left out), still works for one release: it is
    rewritten to the subcommand with a deprecation notice on stderr."""

    def __init__(self, *args, legacy=None, default=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.legacy, self.default = dict(legacy or {}), default

    def parse_args(self, ctx, args):
        # The group's own help alone, or a subcommand: as click has it; anything else is the
        # former spelling (whose --help asks for the subcommand's help).
        if args and args[0] not in self.commands and not set(args) <= set(ctx.help_option_names):
            args = self._rewrite(ctx, list(args))
        return super().parse_args(ctx, args)

    def _rewrite(self, ctx, args):
        old, rest = None, []
        it = iter(args)
        for a in it:
            if a == "--workload":
                old = next(it, None)
                if old is None or old.startswith("-"):
                    raise click.BadParameter("requires a workload name (" + ", ".join(self.legacy) + ")",
                                             param_hint="'--workload'")
            elif a.startswith("--workload="):
                old = a.split("=", 1)[1]
            else:
                rest.append(a)
        if old is not None and old not in self.legacy:
            raise click.BadParameter(f"'{old}' is not one of {', '.join(map(repr, self.legacy))}",
                                     param_hint="'--workload'")
        sub = self.legacy[old] if old is not None else self.default
        spelled = f"commsolve {ctx.info_name}" + (f" --workload {old}" if old is not None else "")
        click.echo(f"commsolve: '{spelled}' is deprecated and will be removed in the next release; "
                   f"use 'commsolve {ctx.info_name} {sub}'", err=True)
        ctx.meta["commsolve.legacy"] = True
        return [sub, *rest]


def workload_hint(ctx, group, sub, legacy_name):
    """How to name another workload in a message: ``--workload NAME`` to a user of the
    former spelling, ``'commsolve GROUP SUB'`` otherwise."""
    if ctx.meta.get("commsolve.legacy"):
        return f"--workload {legacy_name}"
    return f"'commsolve {group} {sub}'"


def refuse(*names, message, allowed=None):
    """Hidden options ``names`` that another workload takes: given here, a usage error
    saying where they belong (``message(ctx, name)``) instead of click's 'no such option'.
    ``allowed``: {name: value} a former spelling may still give (the value that changed
    nothing there, e.g. the default of an option of one workload only)."""
    allowed = allowed or {}

    def callback(ctx, param, value):
        name = param.opts[0]
        if value not in (None, False, ()) and not (name in allowed and value == allowed[name]):
            raise click.UsageError(message(ctx, name))
        return value

    def decorate(f):
        for name in names:
            f = click.option(name, hidden=True, expose_value=False, callback=callback, is_eager=False)(f)
        return f

    return decorate


# ---- options, their choices from the library ---------------------------------------

def matrix_options(example="poisson2d:512", file_help="Matrix Market file."):
    def decorate(f):
        f = click.option("--matrix", type=click.Path(dir_okay=False), help=file_help)(f)
        return click.option("--gen", metavar="SPEC", help=f"Gallery matrix, e.g. {example}.")(f)
    return decorate


def launch_options(default=None, help="Number of MPI ranks."):
    """-np N (relaunch under mpiexec), --oversubscribe, --timeout (the watchdog's)."""
    def decorate(f):
        f = click.option("--timeout", type=float, default=None,
                         help="Seconds a rank may wait in one collective call before the job is aborted with a "
                         f"report of where each rank is (0: off) [default with -np: COMMSOLVE_TIMEOUT, else "
                         f"{DEFAULT_TIMEOUT:g}].")(f)
        f = click.option("--oversubscribe", is_flag=True,
                         help=f"Allow more than {OVERSUBSCRIBE_FACTOR} ranks per core on this machine.")(f)
        return click.option("-np", "--np", "nprocs", type=int, default=default, show_default=default is not None,
                            help=help)(f)
    return decorate


def ppn_option(required=False, default=None, help="Virtual ranks per node (default: the real node layout)."):
    return click.option("--ppn", type=click.IntRange(1), required=required, default=default,
                        show_default=default is not None, help=help)


def json_option(help="Print the result as JSON (rank 0); a failure before the result as a JSON object with "
                "'error', 'kind' and 'exit_status'."):
    def remember(ctx, param, value):
        _output.update(json=bool(value), reported=False)  # a new command line
        return value

    return click.option("--json", "as_json", is_flag=True, callback=remember, help=help)


def tree_seed_options(f):
    f = click.option("--flat-threshold", type=click.IntRange(1), default=TREE.flat_threshold, show_default=True,
                     help="auto trees: flat up to this many participants.")(f)
    return click.option("--seed", type=int, default=TREE.seed, show_default=True, help="Seed of the shifted trees.")(f)


def strategy_option(default="standard", with_auto=True, help="Halo-exchange strategy."):
    choices = [s for s in STRATEGIES if with_auto or s != "auto"]
    return click.option("--strategy", type=click.Choice(choices), default=default, show_default=True, help=help)


def row_partition_option(f):
    return click.option("--partition", type=click.Choice(ROW_PARTITIONS), default="contiguous", show_default=True,
                        help="How rows are split over the ranks.")(f)


def forest_partition_option(default="nd", help="Forests of the 3D layout: top separator-tree levels, or "
                            "SuperLU_DIST's greedy balance."):
    return click.option("--partition", type=click.Choice(FOREST_PARTITIONS), default=default, show_default=True,
                        help=help)


def allreduce_option(f):
    return click.option("--allreduce", type=click.Choice(ALLREDUCE), default=ALLREDUCE[0], show_default=True,
                        help="Inter-grid messages: one per pair and step, or one per supernode.")(f)


def ablation_options(f):
    """The SC'23 ablation's switches of a solve (3d-baseline-pdgstrs turns them all on)."""
    f = click.option("--leaf-sync", is_flag=True, default=False,
                     help="The leaf forests' counter allreduce and barrier, as SuperLU_DIST's pdgstrs3d.")(f)
    return click.option("--kernels", type=click.Choice(KERNELS), default=KERNELS[0], show_default=True,
                        help="Dense kernels: the inverted diagonal and one product per L panel, or pdgstrs3d's "
                             "dtrsm and one dgemm per block.")(f)


def max_supernode_option(f):
    return click.option("--max-supernode", type=click.IntRange(1), default=LU_DEFAULTS["max_supernode"],
                        show_default=True, help="Most columns in one supernode (128 for solves on thousands of "
                        "ranks: see docs/concepts.md).")(f)


ALGORITHM_CHOICE = click.Choice(ALGORITHMS)
TREE_CHOICE = click.Choice(trees.SHAPES)


# ---- sparsified AMG (amg, analyze amg, simulate amg) ------------------------------------

def sparsify_options(f):
    """--sparsify, --gamma, --lumping (commsolve.amg.sparsify)."""
    from ..amg.sparsify import LUMPINGS, METHODS

    f = click.option("--lumping", type=click.Choice(LUMPINGS), default=None,
                     help="Where dropped entries go: the diagonal, or strong neighbours [default: strong for "
                     "non-galerkin, diagonal otherwise].")(f)
    f = click.option("--gamma", default=None, metavar="G1,G2,...",
                     help="Drop tolerance of coarse levels 1, 2, ... (the last repeated), e.g. 0,0.01,0.1,1; with "
                     "--sparsify.")(f)
    return click.option("--sparsify", type=click.Choice(METHODS), default=None,
                        help="Sparsified coarse operators (thesis Chapter 4): non-galerkin (the hierarchy built on "
                        "them), sparse or hybrid Galerkin (the Galerkin hierarchy kept, sparsified copies in smoothing "
                        "and residuals).")(f)


def _stages(text):
    """--agglomerate's stages: [(rows per rank, ranks), ...] (checked as the library does)."""
    from ..amg.agglomerate import parse_stages

    if text is None:
        return None
    try:
        stages = [(float(r), int(m)) for r, m in (item.split(":") for item in text.split(","))]
        return parse_stages(stages, max(m for _, m in stages) + 1)
    except ValueError as e:
        raise click.BadParameter(f"stages ROWS:RANKS, comma-separated ({e})" if ":" in text else
                                 f"stages ROWS:RANKS, comma-separated, got {text!r}", param_hint="--agglomerate")


def agglomerate_option(f):
    return click.option("--agglomerate", callback=lambda c, p, v: _stages(v), metavar="ROWS:RANKS[,ROWS:RANKS]",
                        help="Coarse levels on fewer ranks: the first level with fewer than ROWS rows per rank "
                        "moves onto RANKS ranks (stages in turn; 64:1 is Nakajima's CGA).")(f)


def fail_unless_solved(result, what, tol, maxiter):
    """Exit 1 (collectively) when a solver run did not converge, its answer's residual checked
    by scipy is above 10 tol (NaN too), or its recorded statistics differ from its plans'."""
    if not result["converged"]:
        fail(f"{what} did not converge to {tol:g} in {maxiter} iterations "
             f"(reached {result['residuals'][-1] / result['residuals'][0]:.2e} relative)", True)
    res = result["rel_residual_vs_scipy"]
    if res is not None and not res <= 10 * tol:  # NaN fails
        fail(f"the solution's residual checked by scipy is {res:.2e}, above the tolerance", True)
    if not result["stats_recorded_equal_planned"]:
        fail("recorded communication statistics differ from the plans'", True)


def check_sparsify(sparsify, gamma, lumping):
    """A click error for options that do not go together (the rules are
    :func:`commsolve.amg.sparsify.sparsification`'s), in the command line's words."""
    from ..amg.sparsify import sparsification

    try:
        sparsification(sparsify, gamma, lumping)
    except ValueError as e:
        text = str(e).replace("gamma and lumping are", "--gamma and --lumping are").replace("pass sparsify=", "pass "
                                                                                              "--sparsify ")
        raise click.UsageError(text.replace("sparsify='", "--sparsify ").replace("', '", ", ").replace("'", "")) \
            from None
