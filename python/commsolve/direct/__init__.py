"""Sparse direct solvers: supernodal LU with static pivoting, and its distributed triangular solves.

:class:`SparseLU` factors serially (multifrontal over the supernodes). :func:`factor` does
the same on one rank, spreads the factors over a Px x Py x Pz process grid and returns a
:class:`DistributedLU`, whose :meth:`~DistributedLU.solve` runs one of five distributed
triangular solves (``algorithm``):

``2d``
    the message-driven 2D solve (SC'23 paper, Algorithm 3; Pz = 1): per
    supernode a broadcast tree of its solution down a process column and a
    reduction tree of partial sums along a process row, trees of any shape
    (``flat``, ``binary``, ``shifted-binary``, ``auto``, ...; :mod:`commsolve.trees`)
``3d-baseline``
    the 3D solve of Sao et al. (ICS'19): Pz grids each hold a forest of the
    elimination tree and its ancestors; the L-solve climbs level by level with
    an inter-grid exchange of partial sums after each, the U-solve comes back
    down (2 log2 Pz inter-grid synchronisations). As SuperLU_DIST's
    ``pdgstrs3d`` (the SC'23 paper's baseline), the leaf forests are solved
    message-driven and those above one supernode at a time: a reduction over
    the whole process row, the diagonal solve, a broadcast down the whole
    process column (its MPI_Reduce and MPI_Bcast per supernode)
``3d-baseline-async``
    the same levels and inter-grid steps, every forest message-driven
    over the restricted trees of the 2D solve
``3d``
    the SC'23 solve (Algorithms 1 and 2): every grid solves all its forests
    without waiting for another (the leaf forest, then the ancestors), one
    sparse allreduce of the ancestors' partial solutions over the grids, then
    every grid's U-solve (one synchronisation)
``3d-baseline-pdgstrs``
    ``3d-baseline`` paying what ``pdgstrs3d`` pays besides: flat trees
    in the leaf forests, its kernels (``dtrsm`` on the diagonal blocks, one
    ``dgemm`` per block, U blocks packed), the leaf forests' counter allreduce
    and barrier, one blocking inter-grid message per supernode; each is also a
    switch of :class:`SolveOptions` (``tree``, ``kernels``, ``leaf_sync``,
    ``allreduce``), for the SC'23 ablation (``bench/sc23_ablation.py``)

b and x are distributed by rows, as a :class:`~commsolve.ParCSR` distributes them (or, with
``replicated=True``, given whole on the root and returned whole on every rank).

Static pivoting as SuperLU_DIST's ``pdgssvx`` (:mod:`commsolve.direct.pivoting`):
equilibration, a row permutation for a large diagonal (MC64's job), no pivoting during
the factorization (a zero pivot is an error unless ``replace_tiny``), and iterative
refinement with the componentwise backward error after every solve
(:mod:`commsolve.direct.refinement`). The ordering keeps the nested-dissection separator
tree (``ordering="tree"``), so the factor's supernodes map onto the 2D and 3D layouts.

Example
-------
>>> from commsolve import gallery, direct
>>> import numpy as np
>>> A = gallery.poisson2d9(50)
>>> lu = direct.SparseLU(A)
>>> x = lu.solve(np.ones(A.shape[0]))
>>> bool(lu.berr.max() <= 1e-15)
True
"""

from .. import _core
from ..partition import Distribution
from .distributed import Analysis, FactorReport, factor, register_tuner
from .options import (ALGORITHMS, ALLREDUCE, AUTO, KERNELS, ProcessGrid3D, SolveOptions, is_auto, make_layout,
                      parse_grid, solve_options)
from .pivoting import ROW_PERMS, StaticPivoting, static_pivoting
from .refinement import ITMAX
from .serial import PIVOTING_DEFAULTS, SparseLU
from .solver import REDISTRIBUTE_STEPS, SOLVE_STEPS, TIME_PARTS, XY_STEPS, Z_STEPS, DistributedLU, device_available
from .symbolic import (FOREST_PARTITIONS, LU_DEFAULTS, ORDERINGS, SupernodalStructure, SymbolicOptions,
                       forest_partition, supernodal_structure, symbolic)

SolveLayout = _core.SolveLayout
RhsMap = _core.RhsMap

__all__ = ["SparseLU", "factor", "DistributedLU", "device_available", "register_tuner", "Analysis", "FactorReport",
           "symbolic", "supernodal_structure", "forest_partition", "SupernodalStructure", "SymbolicOptions",
           "make_layout", "SolveLayout", "SolveOptions", "RhsMap", "ProcessGrid3D", "parse_grid", "solve_options",
           "is_auto", "static_pivoting", "StaticPivoting", "Distribution",
           "SOLVE_STEPS", "XY_STEPS", "Z_STEPS", "REDISTRIBUTE_STEPS", "TIME_PARTS", "ALGORITHMS", "FOREST_PARTITIONS",
           "ALLREDUCE", "KERNELS", "AUTO", "ORDERINGS", "ROW_PERMS", "LU_DEFAULTS", "PIVOTING_DEFAULTS", "ITMAX"]
