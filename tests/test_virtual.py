"""Virtual-world patterns, plans and statistics, checked against hand-computed values."""

import numpy as np
import pytest
import scipy.sparse as sp

from commsolve import _core, gallery, make_topology, virtual
from commsolve.partition import partition


def test_poisson_rows_per_rank_by_hand():
    # 4x4 grid, 4 ranks, one grid row each: rank r needs all of rows r-1 and r+1.
    A = gallery.poisson2d(4)
    pats = virtual.halo_patterns(A, partition(A, 4))
    p1 = pats[1]
    assert list(p1.halo_globals) == [0, 1, 2, 3, 8, 9, 10, 11]
    assert list(p1.recv_peers) == [0, 2] and list(p1.recv_ptr) == [0, 4, 8]
    assert list(p1.send_peers) == [0, 2] and list(p1.send_idx) == [0, 1, 2, 3, 0, 1, 2, 3]
    assert list(pats[0].recv_peers) == [1] and list(pats[3].send_peers) == [2]

    stats = virtual.plan_stats(virtual.plans(A, partition(A, 4)), make_topology(size=4, ppn=2))
    t1 = stats[1].total()  # rank 1: neighbour 0 on its node, neighbour 2 across
    assert (t1["msgs_sent_intra"], t1["bytes_sent_intra"]) == (1, 32)
    assert (t1["msgs_sent_inter"], t1["bytes_sent_inter"]) == (1, 32)
    t0 = stats[0].total()
    assert (t0["msgs_sent_intra"], t0["msgs_sent_inter"], t0["msgs_recv_intra"]) == (1, 0, 1)


def test_strided_tridiagonal_by_hand():
    n = 8
    A = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n), format="csr")
    plans = virtual.plans(A, partition(A, 2, "strided"))
    st = plans[0].steps[0]
    assert list(st.recv_peers) == [1] and list(st.recv_count) == [4]
    assert list(st.recv_offset) == [4]  # the halo starts after the 4 owned entries
    assert list(st.send_idx) == [0, 1, 2, 3]  # rank 1's rows 1,3,5,7 need 0,2,4,6 (and 8: absent)


def test_plan_is_single_step_standard():
    A = gallery.poisson3d(6)
    for plan in virtual.plans(A, partition(A, 5, "metis")):
        plan.validate()
        assert plan.strategy == "standard" and len(plan.steps) == 1 and plan.n_work == 0


def test_sent_equals_received_globally():
    A = gallery.random_fixed_nnz(2000, 11, seed=2)
    stats = virtual.plan_stats(virtual.plans(A, partition(A, 16)), make_topology(size=16, ppn=4))
    arr = np.array([s.array[0] for s in stats])
    assert arr[:, 0:4].sum(axis=0).tolist() == arr[:, 4:8].sum(axis=0).tolist()


def test_int64_indices_give_same_patterns():
    A = gallery.poisson2d(10)
    B = sp.csr_matrix((A.data, A.indices.astype(np.int64), A.indptr.astype(np.int64)), shape=A.shape)
    d = partition(A, 3)
    for pa, pb in zip(virtual.halo_patterns(A, d), virtual.halo_patterns(B, d)):
        assert np.array_equal(pa.halo_globals, pb.halo_globals)
        assert np.array_equal(pa.send_idx, pb.send_idx)


def test_progress_callback_sees_every_rank():
    A = gallery.poisson2d(8)
    seen = []
    virtual.halo_patterns(A, partition(A, 4), progress=seen.append)
    assert seen == [1, 2, 3, 4]


def test_errors():
    A = gallery.poisson2d(4)
    with pytest.raises(ValueError, match="unknown communication strategy"):
        _core.build_plan(virtual.halo_patterns(A, partition(A, 2))[0], "telepathy")
    with pytest.raises(ValueError, match="columns"):
        virtual.halo_patterns(A, partition(A, 2), partition(20, 2))
    with pytest.raises(ValueError, match="4 ranks, there are 2 plans"):
        virtual.plan_stats(virtual.plans(A, partition(A, 2)), make_topology(size=4, ppn=2))


def test_local_spmv_kernel_matches_scipy():
    A = gallery.random_fixed_nnz(5000, 13, seed=9)
    x = np.random.default_rng(0).standard_normal(A.shape[1])
    y = np.empty(A.shape[0])
    _core.spmv(A.indptr, A.indices, A.data, x, y)
    assert np.linalg.norm(y - A @ x) <= 1e-13 * np.linalg.norm(A @ x)
    with pytest.raises(ValueError, match="y has length 3"):
        _core.spmv(A.indptr, A.indices, A.data, x, np.empty(3))
