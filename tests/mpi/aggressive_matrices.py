"""The matrices of the aggressive-coarsening tests (tests/test_amg_aggressive.py and the MPI
script tests/mpi/amg_aggressive_cases.py build them alike)."""

import numpy as np
import scipy.sparse as sp

import commsolve as cs

CASES = ("poisson2d:40", "poisson3d:10", "aniso2d:40,eps=0.01,theta=30", "poisson2d:30+pairs")
PAIR = sp.csr_matrix(np.array([[2.0, -1.0], [-1.0, 2.0]]))


def matrix(case):
    """The case's matrix: a gallery spec, or (+pairs) the 2D Laplacian beside three
    decoupled 2 x 2 blocks, whose first coarse points have no neighbour in the second split."""
    if case.endswith("+pairs"):
        return sp.block_diag([cs.gallery.from_spec(case[: -len("+pairs")])] + [PAIR] * 3, format="csr")
    return cs.gallery.from_spec(case)
