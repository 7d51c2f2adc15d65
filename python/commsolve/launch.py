"""Starting MPI jobs: the environment Open MPI needs here (root, oversubscription), the
mpiexec command line, and the CLI's ``-np`` relaunch, which watches the job from outside: it
passes the launching terminal and the watchdog's settings to the ranks and, when a rank dies
of a signal, says which rank, which signal and the likely cause. Used by the CLI and the
tests."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys

__all__ = ["mpi_env", "mpiexec_command", "under_mpiexec", "run_mpi", "relaunch", "oom_evidence",
           "OVERSUBSCRIBE_FACTOR", "DEFAULT_TIMEOUT", "check_rank_count"]

OVERSUBSCRIBE_FACTOR = 4  # the most ranks per core a run starts without --oversubscribe
DEFAULT_TIMEOUT = 900.0   # the watchdog's timeout in the CLI's -np runs (seconds in one collective call)


def under_mpiexec():
    """True when this process was started by mpiexec/mpirun (Open MPI, MPICH, PMIx)."""
    return any(v in os.environ for v in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"))


def mpi_env(nprocs, base=None, threads=1):
    """Environment for ``nprocs`` ranks on this machine: Open MPI may run as root, may place
    more ranks than cores, and then yields instead of busy-polling; with ``threads`` > 1 per
    rank it binds ranks to no core (Open MPI binds each to one by default, where its threads
    would share that core)."""
    env = dict(os.environ if base is None else base)
    if threads > 1:
        env.setdefault("OMPI_MCA_hwloc_base_binding_policy", "none")  # Open MPI 4
        env.setdefault("PRTE_MCA_hwloc_default_binding_policy", "none")  # Open MPI 5 (PRRTE)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")  # Open MPI 4
    env.setdefault("PRTE_MCA_rmaps_default_mapping_policy", ":oversubscribe")  # Open MPI 5 (PRRTE)
    if nprocs > (os.cpu_count() or 1):
        env.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")
    return env


@functools.lru_cache(maxsize=None)
def _quiet_flags(mpiexec):
    """``["-q"]`` for Open MPI up to 4.x (its quiet option); later ones (PRRTE) and MPICH's
    hydra refuse it."""
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    m = re.search(r"\((?:Open MPI|OpenRTE)\)\s+(\d+)\.", out)  # 4.x says OpenRTE, 5.x Open MPI
    return ("-q",) if m and int(m.group(1)) <= 4 else ()


def mpiexec_command(nprocs, args, python=None, quiet=True):
    """``mpiexec [-q] -n N python -m mpi4py ARGS``: ``-m mpi4py`` makes an uncaught exception
    on any rank abort the whole job instead of leaving the others waiting; ``-q`` (Open MPI
    4; ``quiet``) keeps Open MPI's own banners (job exited non-zero, MPI_ABORT was invoked)
    out of the error output, which already says what went wrong. The CLI's relaunch keeps
    them (:func:`relaunch` reads them: they say which rank died of which signal)."""
    mpiexec = shutil.which("mpiexec") or shutil.which("mpirun")
    if mpiexec is None:
        raise RuntimeError("mpiexec not found: install Open MPI (scripts/install-deps)")
    quiet_flags = _quiet_flags(mpiexec) if quiet else ()
    return [mpiexec, *quiet_flags, "-n", str(int(nprocs)), python or sys.executable, "-m", "mpi4py", *args]


def run_mpi(nprocs, args, timeout=300, **kwargs):
    """Run ``python -m mpi4py ARGS`` on ``nprocs`` ranks; returns the CompletedProcess.
    A job past ``timeout`` seconds is killed (subprocess.TimeoutExpired)."""
    return subprocess.run(
        mpiexec_command(nprocs, args), env=mpi_env(nprocs), timeout=timeout,
        capture_output=True, text=True, **kwargs,
    )


def check_rank_count(nprocs, oversubscribe=False):
    """A ValueError for more ranks than :data:`OVERSUBSCRIBE_FACTOR` per core here, unless
    ``oversubscribe``: a mistyped ``-np 1000`` would start a thousand processes."""
    cores = os.cpu_count() or 1
    if nprocs > OVERSUBSCRIBE_FACTOR * cores and not oversubscribe:
        raise ValueError(f"{nprocs} ranks on {cores} core{'s' if cores > 1 else ''}: at most "
                         f"{OVERSUBSCRIBE_FACTOR * cores} ({OVERSUBSCRIBE_FACTOR} per core) without --oversubscribe")


# Open MPI's banners: blocks between lines of dashes. The ones below say what our own error
# output already says (or what we say better); a rank's death is parsed out of its banner.
_BANNER = re.compile(r"^-{20,}\s*$")
_SILENT = ("MPI_ABORT was invoked", "Primary job  terminated normally", "Primary job terminated normally",
           "detected that one or more processes exited with non-zero status")
# Open MPI's help-message aggregation lines, outside any banner: noise after our own report.
_SILENT_LINES = re.compile(r"^\[[^\]]*\] \d+ more process(es)? (has|have) sent help message|"
                           r"^\[[^\]]*\] Set MCA parameter \"orte_base_help_aggregate\"")
_DEATH = re.compile(r"process rank (\d+) with PID (\d+) on node (\S+) exited on signal (\d+)(?: \(([^)]*)\))?")


class _Relay:
    """Copies the job's stderr to ours as it comes (progress bars' carriage returns
    included), holding back Open MPI's banners: known ones are dropped or parsed, unknown
    ones printed as they were."""

    def __init__(self, out):
        self.out, self.pending, self.banner, self.deaths = out, b"", None, []

    def feed(self, chunk):
        self.pending += chunk
        while b"\n" in self.pending:
            line, self.pending = self.pending.split(b"\n", 1)
            self._line(line + b"\n")
        if self.pending and self.banner is None and not self.pending.startswith(b"-"):
            self.out.write(self.pending)  # a partial line (a progress bar's update)
            self.pending = b""
        self.out.flush()

    def _line(self, line):
        text = line.decode(errors="replace")
        if _BANNER.match(text):
            if self.banner is None:
                self.banner = []
                return
            self._close_banner()
            return
        if self.banner is not None:
            self.banner.append(text)
        elif not _SILENT_LINES.match(text):
            self.out.write(line)

    def _close_banner(self):
        body = "".join(self.banner)
        self.banner = None
        m = _DEATH.search(" ".join(body.split()))
        if m:
            self.deaths.append((int(m.group(1)), int(m.group(4)), m.group(5) or ""))
        elif not any(s in body for s in _SILENT):
            self.out.write(("-" * 74 + "\n" + body + "-" * 74 + "\n").encode())

    def close(self):
        if self.banner is not None:
            self.out.write("".join(self.banner).encode())
        if self.pending:
            self.out.write(self.pending)
        self.out.flush()


def oom_evidence(pid, since_uptime, log=None):
    """What the kernel says about an out-of-memory kill of ``pid`` (or of any process, when
    the pid is unknown: then it may be another's, and the text says so) since
    ``since_uptime`` (seconds since boot), where it can be read: its log (``dmesg``, or the
    text ``log``). None when the log says nothing of it; a sentence saying so when the log
    cannot be read."""
    if log is None:
        try:
            done = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            done = None
        if done is None or done.returncode != 0:
            return UNREADABLE_LOG
        log = done.stdout
    for line in log.splitlines():
        m = re.match(r"\[\s*([\d.]+)\]\s*(.*)", line)
        if not m or float(m.group(1)) < since_uptime:
            continue
        text = m.group(2)
        about_pid = pid is None or re.search(rf"(process|pid[=: ])\s*{pid}\b", text)
        if re.search(r"Out of memory|oom-kill|Killed process", text) and about_pid:
            whose = "" if pid is not None else " (of a process this job could not name: perhaps another's)"
            return f"the kernel's log says{whose}: {text.strip()}"
    return None


UNREADABLE_LOG = "the kernel's log cannot be read here (dmesg refused), so whether it was is unknown"


def _uptime():
    try:
        with open("/proc/uptime") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError):
        return 0.0


def _signal_name(number):
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def default_timeout():
    """The watchdog's timeout for a relaunched job: ``COMMSOLVE_TIMEOUT`` where it is set (0:
    off), else :data:`DEFAULT_TIMEOUT`."""
    from ._watchdog import timeout_from_env

    return timeout_from_env(DEFAULT_TIMEOUT)


_FORWARDED = ("SIGTERM", "SIGINT", "SIGHUP")


def _forward_signals(proc):
    """Signals to this launcher go on to the job (mpiexec passes them to the ranks): a batch
    system's or a test's kill ends the job, not only its launcher. Returns the previous
    handlers."""
    import signal

    previous = {}
    for name in _FORWARDED:
        num = getattr(signal, name)
        previous[num] = signal.signal(num, lambda signum, frame: proc.poll() is None and proc.send_signal(signum))
    return previous


def _stop(proc, grace=5.0):
    """The job ended, whatever is left of it: mpiexec asked to stop, then killed."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _relay_until_done(proc, relay, folder, nprocs, timeout):
    """Relays the job's stderr until it closes (the job is over); every second meanwhile,
    reads the ranks' states: the watchdog's report when the job is stuck (some rank has
    ended its program, another waits for it, none has made progress for ``timeout``), which
    ends the relay; else None."""
    import select

    from . import _watchdog

    fd = proc.stderr.fileno()
    while True:
        try:
            ready, _, _ = select.select([fd], [], [], 1.0)
        except InterruptedError:
            continue
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            relay.feed(chunk)
        stuck = _watchdog.stuck(_watchdog.read_states(folder, size=nprocs), nprocs, timeout)
        if stuck:
            return stuck


def relaunch(nprocs, args, timeout=None, out=None, threads=1):
    """Runs ``python -m mpi4py ARGS`` on ``nprocs`` ranks as a child job and returns its exit
    status. The ranks learn whether the launching terminal shows progress bars
    (``COMMSOLVE_PROGRESS``), the watchdog's ``timeout`` (``COMMSOLVE_TIMEOUT``; 0: off;
    None: :func:`default_timeout`) and a folder to share their states in
    (``COMMSOLVE_WATCHDOG_DIR``). SIGTERM, SIGINT and SIGHUP to the launcher go on to the job,
    and the job never outlives the launcher. The job's stderr is relayed without Open MPI's
    banners; a rank that died of a signal is reported by rank, signal and, for SIGKILL,
    whether the kernel killed it for memory. A job whose ranks wait for one that has ended
    its program is ended after ``timeout`` (exit status 124; :func:`commsolve._watchdog.stuck`).
    ``threads`` per rank: see :func:`mpi_env`."""
    import signal
    import tempfile

    from . import _watchdog

    timeout = default_timeout() if timeout is None else timeout
    out = out or sys.stderr.buffer
    folder = tempfile.mkdtemp(prefix="commsolve-job-")
    env = mpi_env(nprocs, threads=threads)
    env["COMMSOLVE_WATCHDOG_DIR"] = folder
    env["COMMSOLVE_TIMEOUT"] = str(timeout or 0)
    if sys.stderr.isatty():
        env["COMMSOLVE_PROGRESS"] = "1"
    start = _uptime()
    relay = _Relay(out)
    proc, previous = None, {}
    try:
        proc = subprocess.Popen(mpiexec_command(nprocs, args, quiet=False), env=env, stderr=subprocess.PIPE)
        previous = _forward_signals(proc)
        stuck = _relay_until_done(proc, relay, folder, nprocs, timeout)
        if stuck:
            out.write(("\n".join(stuck) + "\n").encode())
            _stop(proc)
        rc = _watchdog.TIMEOUT_EXIT if stuck else proc.wait()
        relay.close()
        states = _watchdog.read_states(folder, size=nprocs)
        for rank, signum, what in relay.deaths:
            pid = states[rank]["pid"] if rank in states else None
            line = (f"commsolve: rank {rank}{f' (pid {pid})' if pid else ''} died of signal {signum} "
                    f"({_signal_name(signum)}{': ' + what if what else ''})")
            if signum == 9:
                evidence = oom_evidence(pid, start)
                line += (f": {evidence}" if evidence == UNREADABLE_LOG else
                         f": most likely out of memory; {evidence}" if evidence else
                         ": killed from outside (the kernel's out-of-memory killer does this too; its log says "
                         "nothing of it here)")
            out.write((line + "\n").encode())
        out.flush()
        return rc
    finally:
        if proc is not None:
            _stop(proc)
        for num, handler in previous.items():
            signal.signal(num, handler)
        shutil.rmtree(folder, ignore_errors=True)
