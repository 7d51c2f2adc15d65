"""Jobs sharing a COMMSOLVE_MPIEXEC_LOCK file take turns (commsolve.launch.taking_turns): a
second launcher waits while the first holds the lock; one-rank jobs and launchers without the
variable never wait."""

import threading
import time

from commsolve.launch import run_mpi, taking_turns


def held_by_another(nprocs, hold=0.4, job=None):
    """Seconds the main thread waits to enter taking_turns(nprocs) (or to end ``job``) while
    another thread holds it (a 2-rank job) for ``hold`` seconds."""
    entered = threading.Event()

    def first():
        with taking_turns(2):
            entered.set()
            time.sleep(hold)

    t = threading.Thread(target=first)
    t.start()
    assert entered.wait(10)
    t0 = time.perf_counter()
    if job is not None:
        job()
        waited = time.perf_counter() - t0
    else:
        with taking_turns(nprocs):
            waited = time.perf_counter() - t0
    t.join()
    return waited


def test_a_second_job_waits_for_the_first(tmp_path, monkeypatch):
    monkeypatch.setenv("COMMSOLVE_MPIEXEC_LOCK", str(tmp_path / "lock"))
    assert held_by_another(4) >= 0.2
    # run_mpi takes its turn too: a 2-rank job that starts at once ends before 3 s
    assert held_by_another(2, hold=3.0, job=lambda: run_mpi(2, ["-c", "pass"], timeout=60)) >= 3.0


def test_a_process_started_by_mpiexec_never_waits(tmp_path, monkeypatch):
    """Its own job holds the turn: a job it started would wait for it forever."""
    monkeypatch.setenv("COMMSOLVE_MPIEXEC_LOCK", str(tmp_path / "lock"))
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
    assert held_by_another(4) < 0.2


def test_one_rank_jobs_and_unset_variable_do_not_wait(tmp_path, monkeypatch):
    monkeypatch.setenv("COMMSOLVE_MPIEXEC_LOCK", str(tmp_path / "lock"))
    assert held_by_another(1) < 0.2
    monkeypatch.delenv("COMMSOLVE_MPIEXEC_LOCK")
    assert held_by_another(4) < 0.2
