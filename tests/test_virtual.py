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
    with pytest.raises(ValueError, match="unknown communication strategy 'telepathy'"):
        virtual.plans(A, partition(A, 2), strategy="telepathy")
    with pytest.raises(ValueError, match="topology has 4 ranks, the distribution 2"):
        virtual.plans(A, partition(A, 2), topology=make_topology(size=4, ppn=2))
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


def thesis_example_5_1():
    """Thesis Example 5.1: 6 ranks on 3 nodes, one row each; rank r sends v_r to the ranks
    of Table 5.1."""
    sends_to = {0: [3, 4, 5], 1: [0, 3], 2: [3, 4], 3: [0, 2], 4: [1], 5: [0]}
    rows, cols = list(range(6)), list(range(6))
    for r, ts in sends_to.items():
        rows += ts
        cols += [r] * len(ts)
    A = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(6, 6))
    return A, partition(A, 6), make_topology(size=6, ppn=2)


def messages(plan, step):
    """{peer: [space indices packed]} of one step."""
    st = plan.steps[step]
    return {int(q): [int(i) for i in st.send_idx[st.send_ptr[j]:st.send_ptr[j + 1]]]
            for j, q in enumerate(st.send_peers)}


def test_node_aware_reproduces_thesis_example_5_1():
    A, d, topo = thesis_example_5_1()
    plans = virtual.plans(A, d, strategy="node-aware", topology=topo)
    # Table 5.8: the one inter-node message of every node pair, sender -> receiver, and the
    # global indices it carries (E(n, m), eq. 5.14). Each rank owns one row, so a value a rank
    # owns is its space index 0; the rest are where earlier steps left them.
    inter = {p.rank: {q: len(v) for q, v in messages(p, 1).items()} for p in plans}
    assert inter == {0: {3: 2}, 1: {5: 1}, 2: {1: 1}, 3: {4: 1}, 4: {0: 2}, 5: {}}
    # Tables 5.11 and 5.15: gathers to the pair's sender merged with the fully local values.
    gather = {p.rank: sorted(messages(p, 0)) for p in plans}
    assert gather == {0: [1], 1: [0], 2: [3], 3: [2], 4: [], 5: [4]}
    # Redistribution on the receiving node (step 3): rank 0 forwards v4 to rank 1, rank 1
    # forwards v3 to rank 0, rank 5 forwards v0 to rank 4.
    redistribute = {p.rank: sorted(messages(p, 2)) for p in plans}
    assert redistribute == {0: [1], 1: [0], 2: [], 3: [], 4: [], 5: [4]}
    # Each node pair crosses the network once: 5 inter-node messages in all (standard: 8).
    stats = virtual.plan_stats(plans, topo)
    assert sum(s.total()["msgs_sent_inter"] for s in stats) == 5
    std = virtual.plan_stats(virtual.plans(A, d, topology=topo), topo)
    assert sum(s.total()["msgs_sent_inter"] for s in std) == 8


def test_node_aware_2step_sends_each_value_once_per_node():
    A, d, topo = thesis_example_5_1()
    plans = virtual.plans(A, d, strategy="node-aware-2step", topology=topo)
    # Rank 0's v0 is needed by ranks 3 (node 1) and 4, 5 (node 2): once to each node's
    # partner of local rank 0 (ranks 2 and 4), not three times.
    assert messages(plans[0], 0) == {2: [0], 4: [0]}
    # Standard sends 8 values across nodes (v0 to both ranks 4 and 5 on node 2); 2-step 7.
    assert sum(s.total()["bytes_sent_inter"] for s in virtual.plan_stats(plans, topo)) == 8 * 7


@pytest.mark.parametrize("strategy", ["standard", "node-aware", "node-aware-2step"])
@pytest.mark.parametrize("layout", ["smp", "round-robin"])
def test_every_halo_entry_arrives_once(strategy, layout):
    A = gallery.random_fixed_nnz(3000, 9, seed=4)
    d = partition(A, 12, "strided")
    topo = make_topology(size=12, ppn=3, layout=layout)
    for plan in virtual.plans(A, d, strategy=strategy, topology=topo):
        plan.validate()  # the builder's own check already refuses holes and double arrivals
        filled = np.zeros(plan.n_halo, dtype=int)
        for st in plan.steps:
            for off, cnt in zip(st.recv_offset, st.recv_count):
                if off < plan.n_owned + plan.n_halo:
                    filled[off - plan.n_owned: off - plan.n_owned + cnt] += 1
        np.add.at(filled, plan.copy_dst - plan.n_owned, 1)
        assert np.all(filled == 1)


def test_auto_picks_fewest_inter_node_messages():
    A = gallery.random_fixed_nnz(4000, 30, seed=1)
    d, topo = partition(A, 16), make_topology(size=16, ppn=4)
    best = {}
    for s in ["standard", "node-aware-2step", "node-aware"]:
        stats = virtual.plan_stats(virtual.plans(A, d, strategy=s, topology=topo), topo)
        best[s] = max(st.total()["msgs_sent_inter"] for st in stats)
    chosen = virtual.plans(A, d, strategy="auto", topology=topo)[0].strategy
    assert best[chosen] == min(best.values())
