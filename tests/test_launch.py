"""The CLI's -np relaunch seen from outside: a rank killed by a signal is reported by rank,
pid and signal (never a silent exit), the kernel's word on memory is read where it can be, and
a mistyped rank count is refused before any process starts."""

import os
import re
import signal
import subprocess
import sys
import time

import pytest

from commsolve.launch import DEFAULT_TIMEOUT, UNREADABLE_LOG, default_timeout, oom_evidence


pytestmark = pytest.mark.serial  # timings, timeouts, /tmp seen whole: run alone (pyproject.toml)


def commsolve(*args):
    # os.environ, not the process's own environment: MPI initialized in this process (by an
    # earlier test) may have set variables that would make the child think mpiexec started it
    return subprocess.Popen([sys.executable, "-m", "commsolve", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ))


def rank_pids(marker):
    """The pids of the ranks (python -m mpi4py -m commsolve ... marker), not the launcher's."""
    out = subprocess.run(["pgrep", "-f", rf"^\S*python\S* -m mpi4py -m commsolve .*{marker}"], capture_output=True,
                         text=True).stdout
    return [int(p) for p in out.split()]


def test_a_rank_killed_by_a_signal_is_reported():
    marker = "poisson2d:301"  # a spec no other test uses: it finds this job's ranks
    proc = commsolve("spmv", "--gen", marker, "-np", "2", "--repeat", "100000", "--no-check")
    try:
        deadline = time.monotonic() + 60
        pids = []
        while len(pids) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
            pids = rank_pids(marker)
        assert len(pids) == 2, "the ranks did not start"
        time.sleep(5.0)  # past MPI_Init and commsolve's import: the ranks have written their states (pids)
        victim = max(pids)
        subprocess.run(["kill", "-9", str(victim)])
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGKILL
    m = re.search(r"commsolve: rank ([01]) \(pid (\d+)\) died of signal 9 \(SIGKILL", err)
    assert m, err
    assert int(m.group(2)) == victim
    assert "killed from outside" in err or "out of memory" in err
    assert "mpiexec noticed" not in err  # Open MPI's own banner is replaced by the line above


def test_oom_evidence_reads_the_kernel_log():
    log = ("[  100.0] some driver message\n"
           "[  250.5] Out of memory: Killed process 4242 (python3) total-vm:9000000kB, anon-rss:8000000kB\n"
           "[  260.0] Out of memory: Killed process 5555 (other)\n")
    assert "Killed process 4242" in oom_evidence(4242, 200.0, log)
    assert oom_evidence(4242, 251.0, log) is None  # before the job started: not this job's
    assert oom_evidence(1234, 0.0, log) is None     # another process's kill
    unknown = oom_evidence(None, 0.0, log)  # pid unknown: any kill since the start, said to be perhaps another's
    assert "Killed process" in unknown and "perhaps another's" in unknown


def test_an_unreadable_kernel_log_is_not_called_silent(monkeypatch):
    def refused(*args, **kwargs):
        return subprocess.CompletedProcess(args, 1, "", "dmesg: read kernel buffer failed: Operation not permitted")

    monkeypatch.setattr(subprocess, "run", refused)
    assert oom_evidence(4242, 0.0) == UNREADABLE_LOG


def test_the_relaunch_takes_its_timeout_from_the_environment(monkeypatch):
    monkeypatch.delenv("COMMSOLVE_TIMEOUT", raising=False)
    assert default_timeout() == DEFAULT_TIMEOUT
    monkeypatch.setenv("COMMSOLVE_TIMEOUT", "0")  # off
    assert default_timeout() == 0.0
    monkeypatch.setenv("COMMSOLVE_TIMEOUT", "12.5")
    assert default_timeout() == 12.5
    p = subprocess.run([sys.executable, "-m", "commsolve", "spmv", "--gen", "poisson2d:8", "-np", "2"],
                       capture_output=True, text=True, timeout=60, env={**os.environ, "COMMSOLVE_TIMEOUT": "soon"})
    assert p.returncode == 2 and "COMMSOLVE_TIMEOUT must be a number of seconds, got 'soon'" in p.stderr


def test_killing_the_launcher_ends_the_job():
    """SIGTERM to the -np launcher (a batch system's or a test's timeout) goes on to the
    job: no rank is left running, and the launcher's state folder is removed."""
    import glob

    marker = "poisson2d:303"  # a spec no other test uses: it finds this job's ranks
    before = set(glob.glob("/tmp/commsolve-job-*"))
    proc = commsolve("spmv", "--gen", marker, "-np", "2", "--repeat", "100000", "--no-check")
    try:
        deadline = time.monotonic() + 60
        while len(rank_pids(marker)) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(rank_pids(marker)) == 2, "the ranks did not start"
        time.sleep(2.0)
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
        deadline = time.monotonic() + 30
        while rank_pids(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert rank_pids(marker) == [], "ranks outlived their launcher"
    finally:
        proc.kill()
        for pid in rank_pids(marker):
            os.kill(pid, signal.SIGKILL)
    assert proc.returncode != 0
    assert set(glob.glob("/tmp/commsolve-job-*")) - before == set()


def test_too_many_ranks_are_refused_before_any_process_starts():
    cores = os.cpu_count() or 1
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "commsolve", "spmv", "--gen", "poisson2d:8", "-np", str(1000 * cores)],
                       capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert p.returncode == 2 and "without --oversubscribe" in p.stderr and time.monotonic() - t0 < 20
    assert f"at most {4 * cores} (4 per core)" in p.stderr


def test_progress_bars_show_under_np_when_the_launching_terminal_is_one():
    """Under -np the ranks' stderr is a pipe, so tqdm turned itself off: no bar ever showed.
    The relaunch now tells rank 0 whether the launching terminal is one."""
    import pty

    def run(with_terminal):
        master, slave = pty.openpty() if with_terminal else (None, None)
        proc = subprocess.Popen([sys.executable, "-m", "commsolve", "sptrsv", "--gen", "poisson2d9:150", "-np", "2",
                                 "--repeat", "30"], stdout=subprocess.PIPE,
                                stderr=slave if with_terminal else subprocess.PIPE, env=dict(os.environ))
        if with_terminal:
            os.close(slave)
            chunks = []
            while True:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the terminal closed with the job
                    break
                if not chunk:
                    break
                chunks.append(chunk)
            os.close(master)
            proc.wait(timeout=120)
            return proc.returncode, b"".join(chunks).decode(errors="replace")
        _, err = proc.communicate(timeout=120)
        return proc.returncode, err.decode(errors="replace")

    rc, shown = run(True)
    assert rc == 0, shown
    assert "factor:" in shown and "stage" in shown and "solve:" in shown and "%|" in shown
    rc, piped = run(False)
    assert rc == 0 and "%|" not in piped  # into a file or a pipe: no bars
