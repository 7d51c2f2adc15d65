"""``commsolve calibrate``: measure this machine under MPI and fit a machine profile."""

from __future__ import annotations

import os
import click

from .common import (as_json_text, bar, check_plot_path, fail, guarded, json_option, launch_options, ppn_option,
                     relaunch_or_check)


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
    lines += [f"WARNING: {w}" for w in report.get("warnings", [])]
    return "\n".join(lines)


def measure_until_trusted(attempt, accept_noisy, announce):
    """Runs ``attempt()`` (a tuple whose last item lists the result's problems); when it has
    problems and not ``accept_noisy``, says so (``announce(problems)``) and runs it once more
    (a loaded machine often is one for a while only). Returns the last result and whether it
    must be refused (problems twice, not accepted)."""
    result = attempt()
    if result[-1] and not accept_noisy:
        announce(result[-1])
        result = attempt()
    return result, bool(result[-1]) and not accept_noisy

@click.command()
@launch_options(default=2)
@ppn_option()
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True, help="Profile TOML to write.")
@click.option("--name", default=None, help="Profile name (default: the output file's stem).")
@click.option("--plot", type=click.Path(dir_okay=False), help="PNG of measured versus modelled times.")
@click.option("--short-max", type=click.IntRange(0), default=None,
              help="Largest short-protocol message in bytes (default: found from the timings).")
@click.option("--eager-max", type=click.IntRange(0), default=None,
              help="Largest eager-protocol message in bytes (default: found from the timings).")
@click.option("--quick", is_flag=True, help="Fewer sizes, samples and training solves (about half a minute).")
@click.option("--accept-noisy", is_flag=True,
              help="Write the profile even when it looks untrustworthy (a loaded machine, fits at their bounds), "
              "with what is wrong in its description; otherwise such a calibration is measured once more and "
              "then refused.")
@json_option("Print measurements and fits as JSON.")
def calibrate(nprocs, oversubscribe, timeout, ppn, output, name, plot, short_max, eager_max, quick, accept_noisy,
              as_json):
    """Measure this machine (ping-pong, injection, HighVolumePingPong, message overhead, the
    solve's kernels and 1-rank solves) and fit a profile."""
    if nprocs is not None and nprocs < 2:
        raise click.BadParameter(f"calibration times messages between ranks: 2 at least, got {nprocs}",
                                 param_hint="-np")
    if short_max is not None and eager_max is not None and short_max > eager_max:
        raise click.BadParameter("--short-max must not exceed --eager-max")
    check_plot_path(plot)
    check_plot_path(output, "--output", formats=None)
    relaunch_or_check(nprocs, oversubscribe, timeout)
    from mpi4py import MPI

    from ..model.calibrate import fit_profile, measure, plot_calibration
    from ..parcsr import resolve_topology
    from ..sim.calibration import (QUICK_TRAINING, TRAINING, assess, fit_engine_overhead, fit_solve_compute,
                                   measure_engine_solve, measure_solves)

    comm = MPI.COMM_WORLD
    topo = guarded(resolve_topology, ppn, comm)
    shown = None if as_json else bar(desc="calibrating", unit="test")

    def progress(done, total):
        if shown is not None:
            shown.total = total
            shown.update(done - shown.n)

    def attempt():
        """Measure everything, fit on rank 0; (meas, profile, report, problems) there."""
        meas = guarded(measure, comm, topo, quick=quick, progress=progress)
        solves = guarded(measure_solves, comm, QUICK_TRAINING if quick else TRAINING, 5 if quick else 9)
        engine = guarded(measure_engine_solve, comm, repeat=5 if quick else 9)
        if comm.rank != 0:
            return None, None, None, comm.bcast(None, root=0)
        stem = os.path.splitext(os.path.basename(output))[0]
        prof, report = fit_profile(meas, name or stem, short_max, eager_max)
        prof.compute, report["solve_fit"] = fit_solve_compute(prof, solves, meas["kernels"]["sharing"])
        if engine is not None:
            prof.engine_overhead, report["engine_fit"] = fit_engine_overhead(prof, engine)
        return meas, prof, report, comm.bcast(assess(meas, report), root=0)

    def announce(problems):
        if comm.rank == 0:
            click.echo("calibrate: this calibration looks untrustworthy (" + "; ".join(problems) + "): measuring "
                       "again", err=True)

    (meas, prof, report, problems), refused = measure_until_trusted(attempt, accept_noisy, announce)
    if shown is not None:
        shown.close()
    if refused:
        fail("the calibration looks untrustworthy twice (" + "; ".join(problems) + "); nothing written. Calibrate "
             "on a quiet machine, or pass --accept-noisy to write it with these flags", True)
    if comm.rank != 0:
        return
    report["warnings"] = problems
    if problems:
        prof.description += "; UNTRUSTWORTHY: " + "; ".join(problems)
    prof.save(output)
    if plot:
        plot_calibration(meas, prof, plot)
    click.echo(as_json_text({"measurements": meas, "fits": report, "profile": output}) if as_json
               else format_calibration(prof, report, output))
