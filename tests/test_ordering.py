"""Orderings given to the symbolic analysis (issue 35): PT-Scotch's nested dissection on one
process (ordering="ptscotch"), an ordering computed elsewhere (symbolic_for_ordering,
ordering_from_perm), and their errors. The distributed PT-Scotch ordering is
test_ordering_mpi.py's."""

import numpy as np
import pytest
import scipy.sparse.linalg as spla
from mpi4py import MPI  # noqa: F401  PT-Scotch needs MPI initialized

from commsolve import _core, direct, gallery
from commsolve.direct import symbolic
from commsolve.partition import adjacency_graph


@pytest.mark.parametrize("ordering", ["ptscotch", "ptscotch-metis"])
@pytest.mark.parametrize("spec", ["poisson3d:8", "convdiff2d:24", "kkt3d:4", "random:rows=300,nnz_per_row=5"])
def test_sparse_lu_with_ptscotch_matches_scipy(spec, ordering):
    A = gallery.from_spec(spec).tocsc()
    b = np.random.default_rng(3).standard_normal(A.shape[0])
    lu = direct.SparseLU(A, ordering=ordering, max_supernode=16)
    x = lu.solve(b)
    assert np.abs(x - spla.spsolve(A, b)).max() <= 1e-10 * np.abs(x).max()
    assert np.max(lu.berr) <= 1e-14  # NaN fails too
    assert sorted(np.asarray(lu.structure.perm).tolist()) == list(range(A.shape[0]))


def test_ptscotch_is_the_same_run_after_run():
    A = gallery.from_spec("poisson3d:10")
    first, second = (np.asarray(symbolic(A, ordering="ptscotch").perm) for _ in range(2))
    assert np.array_equal(first, second)


def filled_nnz(A, perm):
    """nnz of the Cholesky factor of the pattern of A + A^T in the order ``perm`` (diagonal
    included), by eliminating a dense boolean matrix: each pivot joins its later neighbours."""
    n = A.shape[0]
    P = ((abs(A) + abs(A).T)[perm][:, perm]).toarray() != 0
    np.fill_diagonal(P, True)
    for k in range(n):
        later = np.nonzero(P[k + 1:, k])[0] + k + 1
        P[np.ix_(later, later)] = True
    return int(np.tril(P).sum())


@pytest.mark.parametrize("spec", ["poisson2d9:20", "kkt3d:4", "random:rows=200,nnz_per_row=4"])
def test_a_given_permutation_gives_the_structure_of_that_ordering(spec):
    """Any permutation handed over (ordering_from_perm): the structure holds exactly the fill
    that eliminating in that order creates, counted here by dense elimination, and equals
    what the "nd" ordering builds from the same (METIS) permutation."""
    A = gallery.from_spec(spec).tocsr()
    G = adjacency_graph(A)
    own = _core.symbolic_analysis(G.indptr, G.indices, _core.SymbolicOptions(ordering="nd", relax=0, relax_subtree=0))
    order = np.asarray(own.perm, dtype=np.int32)  # no relaxation: no renumbering beyond METIS's
    shuffled = np.random.default_rng(2).permutation(A.shape[0]).astype(np.int32)
    for perm in (order, shuffled):
        given = symbolic(A, ordered=_core.ordering_from_perm(perm), relax=0, relax_subtree=0)
        assert given.nnz_L == filled_nnz(A, np.asarray(given.perm))
    given = symbolic(A, ordered=_core.ordering_from_perm(order), relax=0, relax_subtree=0)
    assert np.array_equal(np.asarray(given.sn_start), np.asarray(own.sn_start))


@pytest.mark.parametrize("perm,message", [([0, 1, 1, 3], "not a permutation"), ([0, 1, 2], "3 entries for 4"),
                                          ([0, 1, 2, 7], "not a permutation")])
def test_a_bad_permutation_is_a_clear_error(perm, message):
    A = gallery.from_spec("poisson2d:2")
    with pytest.raises(ValueError, match=message):
        symbolic(A, ordered=_core.ordering_from_perm(np.array(perm, dtype=np.int32)))
