"""Recorded statistics against an independent referee: Open MPI's own pml_monitoring
counters (DESIGN.md rule 2). Each workload runs twice, 1 and 3 repetitions after a warm-up,
with --mca pml_monitoring_enable 2 (point-to-point only: MPI's collectives are counted
apart); the difference of the two jobs' per-peer counts — what two more repetitions sent,
setup cancelled out — must equal twice what our plans say one repetition sends, per rank,
intra-node and inter-node (the virtual ppn-2 nodes), messages and bytes.

Open MPI 4.1's pml_monitoring does not count persistent requests; the jobs run with
COMMSOLVE_PERSISTENT=0, which makes the halo executor post the same sends and receives as
ordinary non-blocking requests (everything else is unchanged).
"""

import os
import re
import shutil
import subprocess
import sys

import pytest
from conftest import MPI_DIR, MPI_TIMEOUT, json_lines

from commsolve.launch import mpi_env

NP = 4


def monitored(tmp, workload, k):
    prefix = os.path.join(tmp, f"{workload}{k}")
    cmd = [shutil.which("mpiexec"), "--mca", "pml_monitoring_enable", "2", "--mca", "pml_monitoring_enable_output",
           "3", "--mca", "pml_monitoring_filename", prefix, "-n", str(NP), sys.executable, "-m", "mpi4py",
           os.path.join(MPI_DIR, "monitored.py"), str(NP), workload, str(k)]
    env = dict(mpi_env(NP), COMMSOLVE_PERSISTENT="0")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=MPI_TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    sent = {}  # (src, dst) -> [bytes, msgs], user point-to-point ("E" lines)
    for r in range(NP):
        with open(f"{prefix}.{r}.prof") as f:
            for line in f:
                m = re.match(r"E\s+(\d+)\s+(\d+)\s+(\d+) bytes\s+(\d+) msgs sent", line)
                if m:
                    src, dst, nbytes, msgs = map(int, m.groups())
                    sent[src, dst] = [nbytes, msgs]
    return json_lines(proc.stdout), sent


@pytest.mark.parametrize("workload", ["halo", "trees", "sptrsv", "spgemm", "factor3d", "sparsified", "selinv", "dense",
                                      "mgcg"])
def test_recorded_traffic_matches_open_mpi_counters(tmp_path, workload):
    plan1, sent1 = monitored(tmp_path, workload, 1)
    plan3, sent3 = monitored(tmp_path, workload, 3)
    assert plan1 == plan3
    nodes = plan1[0]["nodes"]
    measured = {r: [0, 0, 0, 0] for r in range(NP)}  # msgs intra, msgs inter, bytes intra, bytes inter
    for (src, dst), (nbytes, msgs) in sent3.items():
        b1, m1 = sent1.get((src, dst), [0, 0])
        inter = int(nodes[src] != nodes[dst])
        measured[src][inter] += msgs - m1
        measured[src][2 + inter] += nbytes - b1
    for rec in plan1:
        r = rec["rank"]
        assert measured[r] == [2 * v for v in rec["planned"]], (workload, r, measured[r], rec["planned"])
    assert sum(sum(m) for m in measured.values()) > 0
