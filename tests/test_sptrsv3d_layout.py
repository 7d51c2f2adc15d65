"""The 3D layout and the solve plans, without MPI: forest partitions (nd, greedy), the
programs of the three algorithms, the phases' collectives, and the virtual world's counts
against counts made here by hand from the structure (inter-grid volume, replicated work,
where b's rows go)."""

import numpy as np
import pytest

from mpi4py import MPI

from commsolve import _core, direct, gallery, sim, workloads
from commsolve.topology import make_topology

SPECS = ["poisson2d9:40", "poisson3d:10", "random:rows=600,nnz_per_row=5"]


@pytest.fixture(scope="module", params=SPECS)
def structure(request):
    return direct.symbolic(gallery.from_spec(request.param), pz=8, max_supernode=16, relax_subtree=8)


def etree(S):
    return _core.supernodal_etree(S)


def heap_ancestors(f):
    out = {f}
    while f > 0:
        f = (f - 1) // 2
        out.add(f)
    return out


def chain(z, pz):
    """Grid z's forests, leaf first."""
    f, out = pz - 1 + z, []
    while True:
        out.append(f)
        if f == 0:
            return out
        f = (f - 1) // 2


@pytest.mark.parametrize("method", ["nd", "greedy"])
@pytest.mark.parametrize("pz", [1, 2, 4, 8])
def test_forests_cover_every_supernode_and_keep_parents_above(structure, method, pz):
    f = direct.forest_partition(structure, pz, method)
    assert f.shape == (structure.nsuper,) and f.min() >= 0 and f.max() < 2 * pz - 1
    parent = etree(structure)
    for s, p in enumerate(parent):
        if p >= 0:
            assert f[p] in heap_ancestors(f[s]), (s, p, f[s], f[p])
    _core.validate_forests(structure, f, pz)  # the core's own check agrees


def test_nd_forests_are_the_top_separator_levels(structure):
    t = structure.tree
    f = direct.forest_partition(structure, 4, "nd")
    root = t.root
    assert set(f[t.sn_first[root]:t.sn_last[root]]) <= {0}
    for child, heap in ((t.left[root], 1), (t.right[root], 2)):
        a, b = t.subtree_columns(child)
        lo, hi = np.searchsorted(structure.sn_start, [a, b])
        assert set(f[t.sn_first[child]:t.sn_last[child]]) <= {heap}  # the child separator
        assert set(f[lo:hi]) <= {heap, 2 * heap + 1, 2 * heap + 2}  # and everything below it


def test_greedy_forests_balance_the_leaves():
    S = direct.symbolic(gallery.poisson2d9(60), pz=4, max_supernode=16)
    f = direct.forest_partition(S, 4, "greedy")
    w = np.diff(S.sn_start).astype(float)
    depth = np.zeros(S.nsuper)
    parent = etree(S)
    for s in range(S.nsuper - 1, -1, -1):
        if parent[s] >= 0:
            depth[s] = depth[parent[s]] + w[parent[s]]
    leaf = np.array([np.sum((w * depth)[f == 3 + z]) for z in range(4)])
    pairs = [leaf[0:2], leaf[2:4]]
    assert all(abs(a - b) <= 0.2 * (a + b) for a, b in pairs), leaf


@pytest.mark.parametrize("pz,bad,msg", [
    (3, None, "Pz must be a power of two, got 3"),
    (2, lambda f: np.where(f == 0, 2, f), "which is not an ancestor forest"),
    (2, lambda f: f + 5, "outside [0, 3)"),
])
def test_bad_forests_are_refused(structure, pz, bad, msg):
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        f = direct.forest_partition(structure, 2, "greedy")
        _core.validate_forests(structure, bad(f) if bad else f, pz)


def test_programs_of_the_three_algorithms():
    L = lambda lo, hi: ("L", lo, hi, 0)  # noqa: E731
    U = lambda lo, hi: ("U", lo, hi, 0)  # noqa: E731
    R = lambda s: ("Z-reduce", 0, 0, s)  # noqa: E731
    B = lambda s: ("Z-broadcast", 0, 0, s)  # noqa: E731
    Ls = lambda lo, hi: ("L-sync", lo, hi, 0)  # noqa: E731
    Us = lambda lo, hi: ("U-sync", lo, hi, 0)  # noqa: E731
    # ICS'19 on 4 grids: climb with a reduction after each level, the upper partner goes idle;
    # the leaf forests message-driven, those above one supernode at a time (pdgstrs3d).
    assert workloads.solve_program("3d-baseline", 0, 4) == (
        [L(0, 0), R(1), Ls(1, 1), R(2), Ls(2, 2), Us(2, 2), B(2), Us(1, 1), B(1), U(0, 0)], 4)
    assert workloads.solve_program("3d-baseline", 1, 4) == ([L(0, 0), R(1), B(1), U(0, 0)], 1)
    assert workloads.solve_program("3d-baseline", 2, 4) == (
        [L(0, 0), R(1), Ls(1, 1), R(2), B(2), Us(1, 1), B(1), U(0, 0)], 3)
    # The same levels, every forest message-driven.
    assert workloads.solve_program("3d-baseline-async", 0, 4) == (
        [L(0, 0), R(1), L(1, 1), R(2), L(2, 2), U(2, 2), B(2), U(1, 1), B(1), U(0, 0)], 4)
    # SC'23: every forest solved without waiting for another grid (the leaf forest, then the
    # ancestors), the sparse allreduce, the U-solve back down.
    assert workloads.solve_program("3d", 0, 4) == ([L(0, 0), L(1, 2), R(1), R(2), B(2), B(1), U(1, 2), U(0, 0)], 1)
    assert workloads.solve_program("3d", 3, 4) == ([L(0, 0), L(1, 2), R(1), B(1), U(1, 2), U(0, 0)], 1)
    assert workloads.solve_program("2d", 0, 1) == ([L(0, 0), U(0, 0)], 0)
    for pz in (2, 4, 8, 16, 32):
        for base in ("3d-baseline", "3d-baseline-async"):
            assert max(workloads.solve_program(base, z, pz)[1] for z in range(pz)) == 2 * (pz.bit_length() - 1)
        assert max(workloads.solve_program("3d", z, pz)[1] for z in range(pz)) == 1
    with pytest.raises(ValueError, match="the 2d algorithm needs Pz = 1"):
        workloads.solve_program("2d", 0, 2)
    # pdgstrs3d: 3d-baseline with the leaf forests' counter allreduces (before the L and the
    # U leaf forest) and the barrier after the L one; leaf_sync adds them to any algorithm.
    C, Cu, W = ("L-counters", 0, 0, 0), ("U-counters", 0, 0, 0), ("barrier", 0, 0, 0)
    assert workloads.solve_program("3d-baseline-pdgstrs", 1, 4) == ([C, L(0, 0), W, R(1), B(1), Cu, U(0, 0)], 1)
    assert workloads.solve_program("3d-baseline", 1, 4, leaf_sync=True) == workloads.solve_program(
        "3d-baseline-pdgstrs", 1, 4)
    assert workloads.solve_program("2d", 0, 1, leaf_sync=True) == ([C, L(0, 0), W, Cu, U(0, 0)], 0)
    assert workloads.solve_program("3d", 0, 4, leaf_sync=True)[0][:3] == [C, L(0, 0), W]


def blocks(S):
    """(row supernode, column supernode) of every off-diagonal block."""
    out = []
    for k in range(S.nsuper):
        rows, _ = S.block_rows(k)
        out += [(int(i), k) for i in rows]
    return out


@pytest.mark.parametrize("upper", [False, True])
def test_phase_collectives_involve_exactly_the_active_blocks(structure, upper):
    S, px, py, base = structure, 2, 3, 12
    f = direct.forest_partition(S, 4, "nd")
    solve = np.isin(f, [1]).astype(np.int8)            # grid 0's level-1 forest
    context = np.isin(f, [0]).astype(np.int8)          # and its ancestor
    C = _core.phase_collectives(S, px, py, base, upper, solve, context)
    ns = S.nsuper
    owner = lambda i, j: base + (i % px) * py + (j % py)  # noqa: E731
    want = {}
    for i, k in blocks(S):
        if not solve[k]:
            continue  # only blocks of solved columns (L) / rows (U) take part
        use, add = (i, k) if upper else (k, i)  # U(k, i) uses x(i); L(i, k) uses y(k)
        o = owner(k, i) if upper else owner(i, k)
        want.setdefault(("b", use), set()).add(o)
        want.setdefault(("r", add), set()).add(o)
    ids = C.id.tolist()
    id0 = 2 * ns if upper else 0
    got = {}
    for c, cid in enumerate(ids):
        key = cid - id0
        k = key if key < ns else key - ns
        kind = "b" if key < ns else "r"
        part = set(C.part[C.part_ptr[c]:C.part_ptr[c + 1]].tolist())
        assert C.root[c] == owner(k, k)
        got[kind, k] = part - {owner(k, k)}
    for (kind, k), ranks in want.items():
        assert got[kind, k] == ranks - {owner(k, k)}, (kind, k)
    for (kind, k) in got:
        if (kind, k) not in want:  # no block: only a solved supernode has a collective then
            assert solve[k] and got[kind, k] == set()


@pytest.mark.parametrize("upper", [False, True])
def test_phase_collectives_list_participants_in_need_order(structure, upper):
    """As SuperLU_DIST orders its trees' ranks (pddistribute.c): a broadcast's receivers by
    the first supernode each needs the solution for (L: its smallest block row, ascending;
    U, solved downwards: its largest, descending), a reduction's contributors latest first
    (L: its largest block column, descending; U: its smallest block row, ascending). Keys
    per rank from the blocks here; ties (one rank's two keys) cannot happen (a key is the
    rank's own extreme). Need-ordered trees keep this order; binary trees sort it away."""
    S, px, py, base = structure, 2, 3, 12
    solve = np.ones(S.nsuper, dtype=np.int8)
    C = _core.phase_collectives(S, px, py, base, upper, solve, np.zeros(S.nsuper, dtype=np.int8))
    ns, id0 = S.nsuper, (2 * S.nsuper if upper else 0)
    owner = lambda i, j: base + (i % px) * py + (j % py)  # noqa: E731
    keys = {}  # (kind, supernode) -> {rank: the supernodes of its blocks there}
    for i, k in blocks(S):  # L(i, k), i > k; in U its transpose U(k, i)
        if upper:  # x(i) is used by U(k, i) (broadcast of i); U(k, i) adds to k's sum
            o = owner(k, i)
            keys.setdefault(("b", i), {}).setdefault(o, []).append(k)
            keys.setdefault(("r", k), {}).setdefault(o, []).append(i)
        else:  # y(k) is used by L(i, k); L(i, k) adds to i's sum
            o = owner(i, k)
            keys.setdefault(("b", k), {}).setdefault(o, []).append(i)
            keys.setdefault(("r", i), {}).setdefault(o, []).append(k)
    reordered = 0
    for c, cid in enumerate(C.id.tolist()):
        key = cid - id0
        kind, k = ("b", key) if key < ns else ("r", key - ns)
        root = owner(k, k)
        part = C.part[C.part_ptr[c]:C.part_ptr[c + 1]].tolist()
        assert part[0] == root
        per_rank = {r: v for r, v in keys.get((kind, k), {}).items() if r != root}
        if upper == (kind == "r"):   # L broadcast, U reduction: smallest first
            want = sorted(per_rank, key=lambda r: min(per_rank[r]))
        else:                        # L reduction, U broadcast: largest first
            want = sorted(per_rank, key=lambda r: -max(per_rank[r]))
        assert part[1:] == want, (kind, k, part, per_rank)
        reordered += want != sorted(want)
    assert reordered > 0  # need order is not rank order here (binary trees' order)


@pytest.mark.parametrize("upper", [False, True])
def test_synchronous_phases_span_whole_process_rows_and_columns(structure, upper):
    """As MPI_Reduce over the row communicator and MPI_Bcast over the column communicator:
    the same collectives as the restricted phase, each over every rank of the diagonal
    owner's process column (broadcasts) or row (reductions), rooted at the diagonal owner."""
    S, px, py, base = structure, 2, 3, 12
    f = direct.forest_partition(S, 4, "nd")
    solve, context = np.isin(f, [1]).astype(np.int8), np.isin(f, [0]).astype(np.int8)
    args = (S, px, py, base, upper, solve, context)
    restricted, whole = _core.phase_collectives(*args), _core.phase_collectives(*args, whole_lines=True)
    assert whole.id.tolist() == restricted.id.tolist()
    ns, id0 = S.nsuper, (2 * S.nsuper if upper else 0)
    for c, cid in enumerate(whole.id.tolist()):
        key = cid - id0
        k = key % ns
        row, col = k % px, k % py
        if key < ns:
            want = {base + r * py + col for r in range(px)}
        else:
            want = {base + row * py + q for q in range(py)}
        part = whole.part[whole.part_ptr[c]:whole.part_ptr[c + 1]].tolist()
        assert whole.root[c] == base + row * py + col and part[0] == whole.root[c]
        assert sorted(part) == sorted(want), (key, part)


def hand_z_bytes(S, f, pz, nrhs):
    """Inter-grid bytes sent in one solve, counted from the forests: at step l every pair of
    grids (z, z + 2^(l-1)) with z mod 2^l = 0 moves, once each way (reduce, broadcast), the
    columns of the forests they share (z's forests at levels >= l)."""
    cols = np.bincount(f, weights=np.diff(S.sn_start), minlength=2 * pz - 1)
    total = 0
    for l in range(1, pz.bit_length()):
        for z in range(0, pz, 2 ** l):
            total += 2 * 8 * nrhs * sum(cols[g] for g in chain(z, pz)[l:])
    return total


@pytest.mark.parametrize("algorithm", ["3d-baseline", "3d-baseline-async", "3d"])
@pytest.mark.parametrize("pz,nrhs", [(2, 1), (4, 3), (8, 1)])
def test_virtual_inter_grid_volume_matches_a_hand_count(structure, algorithm, pz, nrhs):
    grid = (2, 2, pz)
    topo = make_topology(size=4 * pz, ppn=4)
    f = direct.forest_partition(structure, pz, "nd")
    stats = workloads.sptrsv3d_stats(structure, grid, algorithm, "binary", topo, forests=f, nrhs=nrhs)
    arr = np.stack([s.array for s in stats])
    assert arr[:, 4:6, 2:4].sum() == hand_z_bytes(structure, f, pz, nrhs)
    assert arr[:, 4:6, 2:4].sum() == arr[:, 4:6, 6:8].sum()  # every byte sent is received
    assert arr[:, 6:8].sum() == 0  # no distribution given: b and x not counted
    # ppn 4 = one layer per node: the inter-grid traffic is all inter-node, XY all intra-node
    assert arr[:, 4:6, [0, 2]].sum() == 0 and arr[:, 0:4, [1, 3]].sum() == 0


@pytest.mark.parametrize("tree", ["binary", "flat"])
def test_one_layer_3d_is_refused_as_factor_refuses_it(structure, tree):
    """The 3D algorithms on one layer would run the 2D solve's schedule; factor refuses them
    (a 2D grid runs the 2d algorithm), and so do the virtual-world count and the simulator:
    one rule (C++ check_algorithm_grid)."""
    topo = make_topology(size=6, ppn=2)
    f = np.zeros(structure.nsuper, np.int32)
    assert workloads.sptrsv3d_stats(structure, (2, 3, 1), "2d", tree, topo, forests=f)
    for alg in ("3d", "3d-baseline", "3d-baseline-async"):
        with pytest.raises(ValueError, match=f"the {alg} algorithm needs a 3D grid"):
            workloads.sptrsv3d_stats(structure, (2, 3, 1), alg, tree, topo, forests=f)
        with pytest.raises(ValueError, match=f"the {alg} algorithm needs a 3D grid"):
            sim.solve_schedule(structure, (2, 3, 1), alg, tree=tree)
        with pytest.raises(ValueError, match=f"the {alg} algorithm needs a 3D grid"):
            direct.factor(gallery.poisson2d(6), MPI.COMM_SELF, grid=(1, 1, 1), algorithm=alg)
    # and the 2d algorithm on two layers, which factor refuses with this message on 2 ranks
    # (tests/test_errors_mpi.py, case "algorithm")
    for refuses in (lambda: sim.solve_schedule(structure, (1, 1, 2), "2d", tree=tree),
                    lambda: workloads.sptrsv3d_stats(structure, (1, 1, 2), "2d", tree, make_topology(size=2, ppn=2))):
        with pytest.raises(ValueError, match="the 2d algorithm needs Pz = 1, the grid has Pz = 2"):
            refuses()


def test_replicated_work_per_grid(structure):
    pz = 4
    f = direct.forest_partition(structure, pz, "greedy")
    w = np.diff(structure.sn_start).astype(float)
    r = np.diff(structure.rows_ptr).astype(float)
    cost = 2 * 2 * w * (w + r)  # L and U
    new = _core.grid_flops(direct.make_layout(structure, (1, 1, pz), f), "3d")
    base = _core.grid_flops(direct.make_layout(structure, (1, 1, pz), f), "3d-baseline")
    for z in range(pz):
        assert new[z] == pytest.approx(cost[np.isin(f, chain(z, pz))].sum())
    # the baseline solves each forest once, on its lowest grid: no replication
    assert base.sum() == pytest.approx(cost.sum())
    for z in range(pz):
        own = [g for l, g in enumerate(chain(z, pz)) if z % 2 ** l == 0]
        assert base[z] == pytest.approx(cost[np.isin(f, own)].sum())


def test_b_goes_to_the_diagonal_owner_on_the_lowest_grid(structure):
    px, py, pz, P = 2, 2, 4, 16
    f = direct.forest_partition(structure, pz, "nd")
    dist = direct.Distribution.contiguous(int(structure.sn_start[-1]), P)
    topo = make_topology(size=P, ppn=4)
    stats = workloads.sptrsv3d_stats(structure, (px, py, pz), "3d", "binary", topo, forests=f,
                                     distribution=dist)
    # hand count: rows whose owner differs from the rank solving their column
    nlev = pz.bit_length() - 1
    level = lambda g: nlev - ((int(g) + 1).bit_length() - 1)  # noqa: E731  (heap depth -> level)
    sn_of = np.repeat(np.arange(structure.nsuper), np.diff(structure.sn_start))
    received = np.zeros(P, int)
    for j, g in enumerate(structure.perm):
        k = sn_of[j]
        lowest = ((f[k] + 1) << level(f[k])) - pz
        solver = lowest * px * py + (k % px) * py + (k % py)
        if dist.owners_of(np.array([g]))[0] != solver:
            received[solver] += 1
    got = np.array([s.array[6, 6] + s.array[6, 7] for s in stats])  # b bytes received
    assert np.array_equal(got, 8 * received)
    assert all(np.array_equal(s.array[7], s.array[6][[4, 5, 6, 7, 0, 1, 2, 3]]) for s in stats)  # x: reverse


def test_synchronous_parts_keep_binary_trees_whatever_the_shape():
    # L(4, k) for k = 0..3 on a 1x4x2 grid, every supernode in the root forest: in grid 0
    # each supernode goes one at a time (3d-baseline), its sums reduced over the whole
    # process row as MPI_Reduce does, on a binary tree whatever the shape asked for (MPI's
    # are binomial); message-driven (3d-baseline-async), flat and binary trees differ.
    S = structure_of(5, {0: [4], 1: [4], 2: [4], 3: [4]})
    topo = make_topology(nodes=[0] * 8, size=8)
    forests = np.zeros(5, np.int32)

    def per_rank(algorithm, tree):
        stats = workloads.sptrsv3d_stats(S, (1, 4, 2), algorithm, tree, topo, forests=forests)
        return [s.array[:4, 4:6].sum() for s in stats]  # messages received inside the grids, per rank

    assert per_rank("3d-baseline", "flat") == per_rank("3d-baseline", "binary")
    assert per_rank("3d-baseline-async", "flat") != per_rank("3d-baseline-async", "binary")


def structure_of(n, below):
    """Width-1 supernodes 0..n-1; ``below[s]``: the rows of L under supernode s."""
    rows_ptr = np.cumsum([0] + [len(below.get(s, ())) for s in range(n)]).astype(np.int64)
    rows = np.array([r for s in range(n) for r in sorted(below.get(s, ()))], np.int32)
    return direct.SupernodalStructure(perm=np.arange(n, dtype=np.int32), parent=np.full(n, -1, np.int32),
                                      sn_start=np.arange(n + 1, dtype=np.int64), rows_ptr=rows_ptr, rows=rows,
                                      nnz_L=n + rows.size)
