"""The local pieces of the AMG setup, by hand and against pyamg: strength of connection,
the partition-free random weights, and the truncation of interpolation."""

import numpy as np
import pyamg
import pytest
import scipy.sparse as sp

from commsolve import amg, gallery
from commsolve.amg.classical import hash_uniform, strength, truncate


@pytest.mark.parametrize("spec", ["poisson2d:12", "aniso2d:12,eps=0.01,theta=30", "poisson3d27:5",
                                  "random:rows=150,nnz_per_row=6,seed=1"])
@pytest.mark.parametrize("theta", [0.25, 0.5])
def test_strength_matches_pyamg(spec, theta):
    """On one rank the local block is the matrix: the strong entries are pyamg's classical
    strength with norm='min' (-a_ij >= theta max_k -a_ik; rows with no negative entries
    have none)."""
    A = sp.csr_matrix(gallery.from_spec(spec))
    A.sort_indices()
    if spec.startswith("random"):  # make the diagonal positive and dominant
        A = sp.csr_matrix(A + sp.diags(abs(A).sum(axis=1).A.ravel() + 1.0))
    mask = strength(A, theta)
    rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
    ours = set(zip(rows[mask].tolist(), A.indices[mask].tolist()))
    ref = sp.coo_matrix(pyamg.strength.classical_strength_of_connection(A, theta=theta, norm="min"))
    ref = {(i, j) for i, j, v in zip(ref.row.tolist(), ref.col.tolist(), ref.data) if i != j and v != 0}
    assert ours and ours == ref


def test_hash_weights_are_uniform_and_deterministic():
    g = np.arange(200_000)
    u = hash_uniform(g, seed=3)
    assert np.array_equal(u, hash_uniform(g, seed=3)) and not np.array_equal(u, hash_uniform(g, seed=4))
    assert 0 <= u.min() and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.005 and np.unique(u).size == g.size
    assert np.array_equal(hash_uniform(g[1000:2000], seed=3), u[1000:2000])  # any rank, any slice


def test_hash_is_splitmix64():
    """The weights' hash is SplitMix64 (Steele, Lea, Flood 2014): index 0 with seed 0 is the
    generator's first output from state 0, 0xE220A8397B1DCDAF, kept to 53 bits."""
    assert hash_uniform(np.array([0]), seed=0)[0] == (0xE220A8397B1DCDAF >> 11) / 2.0**53


def test_truncation_by_hand():
    P = sp.csr_matrix(np.array([[0.5, 0.2, 0.2, 0.05, 0.05], [1, 0, 0, 0, 0], [0.1, -0.3, 0.3, 0.3, 0.2]]))
    T = truncate(P, 0.0, 2).toarray()
    # Row 0 keeps 0.5 and both 0.2 (tied at the limit), scaled by 1 / 0.9; row 2 keeps the three
    # entries of magnitude 0.3, which sum to 0.3, scaled by 0.6 / 0.3.
    np.testing.assert_allclose(T[0], np.array([0.5, 0.2, 0.2, 0, 0]) / 0.9)
    np.testing.assert_allclose(T[1], [1, 0, 0, 0, 0])
    np.testing.assert_allclose(T[2], [0, -0.6, 0.6, 0.6, 0])
    # ties up to rounding count as ties; a clear gap does not
    T = truncate(sp.csr_matrix(np.array([[0.5, 0.2, 0.2 * (1 + 1e-15), 0.1], [0.5, 0.2, 0.2 * (1 + 1e-6), 0.1]])), 0, 2)
    assert T.getnnz(axis=1).tolist() == [3, 2]
    # a limit that falls on explicit zeros keeps none of them
    assert truncate(sp.csr_matrix(np.array([[0.5, 0.3, 0.2, 0, 0, 0]])), 0, 4).nnz == 3
    T = truncate(P, 0.5, 0).toarray()
    np.testing.assert_allclose(T[0], [1, 0, 0, 0, 0])
    np.testing.assert_allclose(T[2], [0, -0.3, 0.3, 0.3, 0.2] * np.array(0.6 / 0.5))


def test_tentative_prolongator_fits_the_candidate_by_hand():
    """One rank: aggregates {0, 1, 2} and {3, 4}, point 5 in none, candidate B = (1, 2, 2, 3,
    4, 5). Each aggregate's part of B normalised (norms 3 and 5) gives P0, the norms are the
    coarse candidate, and P0 B_c = B on the aggregated points (pyamg's fit_candidates); a
    coarse level that kept the constant instead would not reproduce B."""
    from mpi4py import MPI

    from commsolve import ParCSR
    from commsolve.amg.aggregation import tentative_prolongator
    from commsolve.partition import Distribution

    A = ParCSR.from_global(sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(6, 6), format="csr"), MPI.COMM_SELF)
    agg = np.array([0, 0, 0, 1, 1, -1])
    B = np.array([1.0, 2, 2, 3, 4, 5])
    P0, Bc = tentative_prolongator(A, agg, Distribution.from_offsets(np.array([0, 2])), B)
    np.testing.assert_allclose(P0.toarray(), [[1 / 3, 0], [2 / 3, 0], [2 / 3, 0], [0, 3 / 5], [0, 4 / 5], [0, 0]])
    np.testing.assert_allclose(Bc, [3, 5])
    np.testing.assert_allclose(P0 @ Bc, [1, 2, 2, 3, 4, 0])


@pytest.mark.parametrize("degree", [None, 1, 4])
@pytest.mark.parametrize("zero", [False, True])
def test_chebyshev_smoother_is_the_scaled_chebyshev_polynomial(zero, degree):
    """One rank: after one Chebyshev sweep the error is T_k((theta - t) / delta) /
    T_k(theta / delta) at each eigenvalue t of D^-1 A (the closed form, evaluated by numpy's
    Chebyshev series in the eigenbasis, independent of the smoother's three-term recurrence),
    and the interval's top lies above the largest eigenvalue."""
    from mpi4py import MPI

    from commsolve import ParCSR
    from commsolve.amg.cycle import CHEBYSHEV_DEGREE, CHEBYSHEV_FRACTION, Smoother

    G = sp.csr_matrix(gallery.from_spec("aniso2d:8,eps=0.1,theta=30"))
    A = ParCSR.from_global(G, MPI.COMM_SELF)
    sm = Smoother(A, "chebyshev", degree=degree)
    k = CHEBYSHEV_DEGREE if degree is None else degree
    lo, hi = sm.interval
    d = G.diagonal()
    lam, V = np.linalg.eigh(G.toarray() / np.sqrt(d)[:, None] / np.sqrt(d)[None, :])
    assert lam.max() <= hi and lo == pytest.approx(CHEBYSHEV_FRACTION * hi)
    theta, delta = (hi + lo) / 2, (hi - lo) / 2
    factor = np.polynomial.chebyshev.chebval((theta - lam) / delta, [0] * k + [1])
    factor /= np.polynomial.chebyshev.chebval(theta / delta, [0] * k + [1])
    rng = np.random.default_rng(3)
    b = rng.standard_normal(G.shape[0])
    x = np.zeros(G.shape[0]) if zero else rng.standard_normal(G.shape[0])
    e0 = x - np.linalg.solve(G.toarray(), b)
    sm.pre(b, x, zero=zero)
    # D^-1 A = D^-1/2 V diag(lam) V^T D^1/2, so the error map is D^-1/2 V diag(factor) V^T D^1/2.
    want = (V @ (factor * (V.T @ (np.sqrt(d) * e0)))) / np.sqrt(d)
    np.testing.assert_allclose(x - np.linalg.solve(G.toarray(), b), want, rtol=0, atol=1e-12 * np.abs(e0).max())


def test_a_weight_for_a_smoother_that_takes_none_is_refused_before_the_setup():
    from mpi4py import MPI

    from commsolve import amg

    A = sp.csr_matrix(gallery.from_spec("poisson2d:10"))
    with pytest.raises(ValueError, match="omega weights the Jacobi smoothers; the chebyshev smoother takes none"):
        amg.solver(A, MPI.COMM_SELF, smoother="chebyshev", omega=0.8)


def _first_pass_reference(S):
    """Ruge-Stueben's first pass on S (scipy CSR, no diagonal; row i: what i depends on),
    written out plainly: measure = how many undecided or fine points depend on a point;
    points with measure 0 fine first in index order (what they depend on +1); then the
    largest measure, ties to the point whose measure changed longest ago, becomes coarse,
    its undecided dependants fine (+1 to what they depend on), what it depends on -1 (at 0:
    fine, +1 to what that depends on)."""
    n = S.shape[0]
    T = S.T.tocsr()
    measure = np.diff(T.indptr).astype(int)
    state = np.zeros(n, dtype=int)  # 0 undecided, 1 coarse, -1 fine
    stamp = np.zeros(n, dtype=int)
    clock = [0]

    def bump(k, d):
        measure[k] += d
        clock[0] += 1
        stamp[k] = clock[0]

    def fine(i, bumps):
        state[i] = -1
        for k in S.indices[S.indptr[i]:S.indptr[i + 1]]:
            if state[k] == 0:
                bump(k, 1) if bumps else measure.__setitem__(k, measure[k] + 1)

    for i in range(n):
        if measure[i] == 0:
            fine(i, False)
    for i in range(n):  # entered in index order
        clock[0] += 1
        stamp[i] = clock[0]
    while True:
        live = np.flatnonzero((state == 0) & (measure > 0))
        if live.size == 0:
            return state == 1
        i = live[np.lexsort((stamp[live], -measure[live]))[0]]
        state[i] = 1
        for j in T.indices[T.indptr[i]:T.indptr[i + 1]]:
            if state[j] == 0:
                fine(j, True)
        for k in S.indices[S.indptr[i]:S.indptr[i + 1]]:
            if state[k] == 0:
                bump(k, -1)
                if measure[k] == 0:
                    fine(k, True)


@pytest.mark.parametrize("spec", ["poisson2d:15", "aniso2d:14,eps=0.01,theta=30", "convdiff2d:14,pe=200",
                                  "poisson3d:6"])
def test_ruge_stueben_first_pass_matches_a_written_out_reference(spec):
    """HMIS's first stage (C++ bucket lists) against the plain O(n^2) reference above, exactly
    (convdiff: a nonsymmetric strength matrix, where measures drop to 0)."""
    from mpi4py import MPI

    from commsolve import ParCSR, _core
    from commsolve.amg.classical import strength_graphs

    A = ParCSR.from_global(gallery.from_spec(spec).tocsr(), MPI.COMM_SELF)
    L = A.local_block()
    S, _, _ = strength_graphs(A, L, strength(L, 0.25), "standard")
    got = _core.rs_first_pass(S._core) == 1
    Sg = S.local_matrix().tocsr()
    ref = _first_pass_reference(Sg)
    assert got.sum() > 0 and np.array_equal(got, ref)


def test_w_cycle_is_the_recursive_definition_and_symmetric():
    """One rank, Jacobi smoothing: the W-cycle applied to each unit vector equals the
    two-visit recursion written out with dense numpy matrices from the hierarchy's operators
    (the coarsest solved exactly, visited once), and the preconditioner is symmetric."""
    from mpi4py import MPI

    G = sp.csr_matrix(gallery.from_spec("poisson2d:12"))
    ml = amg.solver(G, MPI.COMM_SELF, smoother="jacobi", cycle="W", max_coarse=10)
    levels = ml.levels
    assert len(levels) >= 3
    As = [lvl.A.to_global(root=None).toarray() for lvl in levels]
    Ps = [lvl.P.to_global(root=None).toarray() for lvl in levels[:-1]]
    omega = 2.0 / 3.0

    def cycle(k, b):
        if k == len(levels) - 1:
            return np.linalg.solve(As[k], b)
        Dinv = omega / np.diag(As[k])
        x = Dinv * b
        bc = Ps[k].T @ (b - As[k] @ x)
        xc = cycle(k + 1, bc)
        if k + 1 < len(levels) - 1:
            xc = xc + cycle(k + 1, bc - As[k + 1] @ xc)
        x = x + Ps[k] @ xc
        return x + Dinv * (b - As[k] @ x)

    n = G.shape[0]
    M = np.column_stack([ml.cycle(e) for e in np.eye(n)])
    want = np.column_stack([cycle(0, e) for e in np.eye(n)])
    np.testing.assert_allclose(M, want, rtol=0, atol=1e-12 * np.abs(want).max())
    assert np.abs(M - M.T).max() <= 1e-12 * np.abs(M).max()


def test_bad_cycle_and_degree_are_refused():
    from mpi4py import MPI

    G = sp.csr_matrix(gallery.from_spec("poisson2d:6"))
    with pytest.raises(ValueError, match="unknown cycle 'F'"):
        amg.solver(G, MPI.COMM_SELF, cycle="F")
    with pytest.raises(ValueError, match="degree is the Chebyshev smoother's"):
        amg.solver(G, MPI.COMM_SELF, smoother="jacobi", degree=3)
    with pytest.raises(ValueError, match="degree is the Chebyshev smoother's"):
        amg.solver(G, MPI.COMM_SELF, smoother="chebyshev", degree=0)


def test_freed_memory_kept_unless_asked_not_and_setup_page_faults_counted():
    import subprocess
    import sys

    from mpi4py import MPI

    probe = "import commsolve; print(commsolve.KEEPS_FREED_MEMORY)"
    on = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    off = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                         env={**__import__("os").environ, "COMMSOLVE_KEEP_MEMORY": "0"})
    assert on.stdout.strip() == "True" and off.stdout.strip() == "False", (on.stderr, off.stderr)  # glibc here
    ml = amg.solver(sp.csr_matrix(gallery.from_spec("poisson2d:40")), MPI.COMM_SELF)
    assert isinstance(ml.setup_page_faults, int) and ml.setup_page_faults >= 0


@pytest.mark.parametrize("spec", ["poisson2d:30", "aniso2d:30,eps=0.01,theta=30", "poisson3d27:8",
                                  "convdiff2d:30"])
def test_direct_interpolation_is_pyamgs_for_the_same_split(spec):
    """Level 0's direct interpolation (built in C++ with the level) against pyamg's
    direct_interpolation on the same C/F split and pyamg's classical strength, entry for
    entry; the convection-diffusion rows have positive off-diagonal entries (beta, lumping)."""
    from mpi4py import MPI

    import commsolve as cs

    A = sp.csr_matrix(gallery.from_spec(spec))
    A.sort_indices()
    lvl = cs.amg.solver(cs.ParCSR.from_global(A, MPI.COMM_SELF), interpolation="direct", pmax=0,
                        max_levels=2).levels[0]
    P = lvl.P.to_global(root=None)
    C = sp.csr_matrix(pyamg.strength.classical_strength_of_connection(A, theta=0.25, norm="min"))
    C.setdiag(0)
    C.eliminate_zeros()
    R = sp.csr_matrix(pyamg.classical.interpolate.direct_interpolation(A, C, lvl.coarse.astype(np.intc)))
    assert P.shape == R.shape and R.nnz > A.shape[0]
    assert abs(P - R).max() <= 1e-14 * abs(R).max()
    if spec.startswith("convdiff"):
        assert (A - sp.diags(A.diagonal())).max() > 0  # the case has positive couplings
