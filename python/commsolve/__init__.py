"""commsolve: communication-optimized distributed sparse linear algebra on MPI.

What must move (a pattern) is kept apart from how it moves (a strategy, built into a
plan); every plan can be run on MPI, counted into CommStats, and built for all ranks in
one process (the virtual world) to study scale.
"""

from . import (amg, dense, direct, gallery, io, krylov, mg, model, partition, redistribute, sim, stats, trees, tune,
               virtual, workloads)
import os as _os

from . import _core, _watchdog
from ._collective import CollectiveError, install_abort_hook
from ._core import CommPlan, Distribution, HaloPattern, PlanStep
from .io import mminfo, mmread, mmwrite
from .parcsr import ParCSR
from .products import galerkin, spgemm
from .stats import CommStats
from .topology import Topology, make_topology

__version__ = "0.1.0"

install_abort_hook()  # one rank's uncaught exception aborts the job, even under a plain mpiexec
_watchdog.configure()  # COMMSOLVE_TIMEOUT: a rank stuck in one collective call aborts the job
# Freed memory stays in the process for the next array instead of being mapped and zeroed anew
# (core/memory.hpp: a fifth of a large AMG setup's time); COMMSOLVE_KEEP_MEMORY=0 leaves malloc as it was.
KEEPS_FREED_MEMORY = _os.environ.get("COMMSOLVE_KEEP_MEMORY", "1") != "0" and _core.keep_freed_memory()

__all__ = [
    "CollectiveError", "CommPlan", "amg", "CommStats", "dense", "Distribution", "HaloPattern", "ParCSR", "direct", "krylov",
    "model", "mg", "redistribute", "sim", "trees", "tune", "workloads",
    "PlanStep", "Topology", "gallery", "io", "make_topology", "mminfo", "mmread", "mmwrite",
    "partition", "stats", "virtual", "galerkin", "spgemm",
]
