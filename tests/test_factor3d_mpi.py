"""The distributed factorization (direct/factor3d.hpp, direct/factor_grid.hpp) under mpiexec:
grids 1x1x2, 1x1x4, 1x2x1, 2x1x1, 1x2x2, 2x2x1, 2x2x2 and 3x2x1 (up to 8 ranks,
oversubscribed), from a row-distributed ParCSR. Every rank's blocks equal the serial
(multifrontal) factorization's to rounding, each grid's ranks hold exactly its forests'
supernodes, each rank holds what the virtual world counts and, with more than one rank per
grid, less than the whole factor; the recorded messages equal the plan on every rank, solves
through factor() match the serial solve, and a tiny pivot on one grid is an error on every
rank. Without MPI: the planned inter-grid traffic against a count written out here."""

import numpy as np
import pytest
from conftest import json_lines, mpirun

from commsolve import _core, gallery, trees
from commsolve.direct import SparseLU, forest_partition, make_layout
from commsolve.direct.factor3d import planned_factor_stats
from commsolve.topology import make_topology

GRIDS = [(1, 1, 2), (1, 1, 4), (1, 2, 1), (2, 1, 1), (1, 2, 2), (2, 2, 1), (2, 2, 2), (3, 2, 1)]
FAMILIES = ["poisson2d9", "convdiff2d", "poisson3d", "kkt3d", "random"]
_cache = {}


def results(grid):
    if grid not in _cache:
        P = grid[0] * grid[1] * grid[2]
        _cache[grid] = {r["family"]: r for r in json_lines(mpirun(P, "factor3d_cases.py", P,
                                                                  "x".join(map(str, grid))).stdout)}
    return _cache[grid]


def ident(grid):
    return "x".join(map(str, grid))


@pytest.mark.parametrize("grid", GRIDS, ids=ident)
@pytest.mark.parametrize("family", FAMILIES)
def test_blocks_equal_the_serial_factors_and_messages_the_plan(grid, family):
    r = results(grid)[family]
    assert r["block_diff"] <= 1e-11  # fan-out vs multifrontal: the same sums in another order
    assert r["held_ok"] and r["size_ok"] and r["stats_ok"]
    assert r["here_ok"]  # the plan counted from each rank's own rows equals the whole matrix's
    assert r["narrow_diff"] <= 1e-11  # the same with one message at a time in MPI's hands
    # every rank of every grid but the first sends its ancestors' updates once and receives
    # its ancestors once, from the same place in another grid (a header, and the payload
    # unless it is empty)
    pairs = (grid[2] - 1) * grid[0] * grid[1]
    assert 2 * pairs <= r["inter_grid_msgs"] <= 4 * pairs
    assert (r["in_grid_msgs"] > 0) == (grid[0] * grid[1] > 1)
    assert r["resid"] <= 1e-12 and r["diff"] <= 1e-12
    assert r["phases"] == sorted(["ordering", "redistribute", "allocate", "numeric", "distribute", "total"])


@pytest.mark.parametrize("grid", GRIDS, ids=ident)
def test_flops_are_the_serial_kernels_plus_the_inversions(grid):
    """The same updates and panels as the serial kernel (TRMM by an inverse does the work of a
    TRSM), and each diagonal block's two triangles inverted: 2/3 w^3 more per supernode."""
    r = results(grid)["poisson2d9"]
    spec = "poisson2d9:24"
    st = SparseLU(gallery.from_spec(spec), max_supernode=16, levels=3).structure
    w = np.diff(st.sn_start).astype(float)
    assert r["flops"] == pytest.approx(r["serial_flops"] + (2.0 / 3.0 * w ** 3).sum(), rel=1e-12)


@pytest.mark.parametrize("grid", GRIDS, ids=ident)
def test_a_tiny_pivot_on_the_last_grid_is_its_error_on_every_rank(grid):
    """The last grid's message (pivot and column) reaches every rank, not a relay."""
    r = results(grid)["tiny-pivot"]
    assert len(r["errors"]) == grid[0] * grid[1] * grid[2]
    for e in r["errors"]:
        assert e is not None and "tiny pivot" in e
        column = int(e.split("permuted column ")[1].split()[0])
        assert r["leaf"][0] <= column <= r["leaf"][1]
    assert r["replaced"] == r["replaced_serial"] > 0


@pytest.mark.parametrize("grid", GRIDS, ids=ident)
def test_stored_zeros_outside_the_pattern_are_left_behind(grid):
    assert results(grid)["stored-zeros"]["resid"] <= 1e-12


@pytest.mark.parametrize("pz", [2, 8, 32])
def test_planned_inter_grid_traffic_matches_a_count_by_hand(pz):
    """On 1x1 layers, grid z sends at level l (z mod 2^l = 2^(l-1)) the parts of the supernodes
    above its subtree of forests that the updates of the supernodes inside it touch: an update
    of S writes blocks (I, J), I and J among the supernodes of S's rows, each in supernode
    min(I, J): K's diagonal block for every such K, K's L and U parts unless K is the largest.
    It receives the blocks of its forests at levels >= l (diagonal blocks as two inverses)."""
    A = gallery.from_spec("poisson2d9:60")
    lu = SparseLU(A, max_supernode=16, levels=5)
    st = lu.structure
    forests = forest_partition(st, pz, "nd")
    topo = make_topology(ppn=min(4, pz), size=pz)
    planned = planned_factor_stats(A.tocsr(), np.zeros(A.shape[0], dtype=np.int64), lu.pivoting, lu.row_order,
                                   lu.col_order, make_layout(st, (1, 1, pz), forests), topo)
    widths, below = np.diff(st.sn_start), np.diff(st.rows_ptr)
    row_sns = [np.unique(st.sn_of[st.rows[st.rows_ptr[s]:st.rows_ptr[s + 1]]]) for s in range(st.nsuper)]

    def subtree(f):  # heap descendants of forest f, f included
        out, todo = set(), [f]
        while todo:
            g = todo.pop()
            if g < 2 * pz - 1:
                out.add(g)
                todo += [2 * g + 1, 2 * g + 2]
        return out

    for z in range(1, pz):
        level = (z & -z).bit_length()  # z mod 2^l = 2^(l-1)
        mine = np.isin(forests, list(subtree(((pz + z) >> (level - 1)) - 1)))
        parts = set()
        for s in np.flatnonzero(mine):
            for k in row_sns[s]:
                if not mine[k]:
                    parts.add((k, "diag"))
                    if k < row_sns[s][-1]:
                        parts |= {(k, "L"), (k, "U")}
        payload = 8 * sum(int(widths[k]) ** 2 if p == "diag" else int(widths[k] * below[k]) for k, p in parts)
        sent = planned[z].array[3]  # Z reduce: (msgs, bytes) sent intra/inter
        assert sent[0] + sent[1] == 1 + (payload > 0)  # a header (status, length), the payload
        assert sent[2] + sent[3] == 16 + payload
        path, f = set(), ((pz + z) >> level) - 1
        while f >= 0:
            path.add(f)
            f = (f - 1) // 2 if f > 0 else -1
        ancestors = np.isin(forests, list(path))
        got = planned[z].array[4]  # ancestor broadcast received
        payload = 8 * int((2 * widths ** 2 + 2 * widths * below)[ancestors].sum())
        assert got[4] + got[5] == 1 + (payload > 0)
        assert got[6] + got[7] == 16 + payload
    total = sum(p.array[3:5] for p in planned)
    assert total[:, 0:4].sum() == total[:, 4:8].sum() and (total[:, 2] + total[:, 3]).sum() > 0
    assert not sum(p.array[1:3] for p in planned).any()  # one rank per grid: nothing inside the grids
    f = np.asarray(forests, np.int32)
    assert _core.factor_3d_planned(make_layout(st, (1, 1, pz), f), topo, trees.TreeShape("binary", 0, 8)).shape == (
        pz, 5, 8)


def test_planned_panel_broadcasts_match_a_count_by_hand():
    """Flat trees on a 2x3 grid: per supernode K, the rank (x, K mod 3) holding K's L blocks
    of process row x sends them (after inv(L11) on K's own row) once to each other rank
    (x, J mod 3), J among K's row supernodes; U rows likewise down the columns."""
    A = gallery.from_spec("convdiff2d:30")
    lu = SparseLU(A, max_supernode=16, levels=3)
    st = lu.structure
    px, py = 2, 3
    topo = make_topology(ppn=6, size=6)
    planned = planned_factor_stats(A.tocsr(), np.zeros(A.shape[0], dtype=np.int64), lu.pivoting, lu.row_order,
                                   lu.col_order, make_layout(st, (px, py, 1), np.zeros(st.nsuper, np.int32)), topo,
                                   trees.TreeShape("flat", 0, 8))
    msgs, nbytes = np.zeros((2, 6), int), np.zeros((2, 6), int)  # [L, U] sent per rank
    for k in range(st.nsuper):
        w = int(st.sn_start[k + 1] - st.sn_start[k])
        sns = st.sn_of[st.rows[st.rows_ptr[k]:st.rows_ptr[k + 1]]]
        xs, ys = set(sns % px) | {k % px}, set(sns % py) | {k % py}
        for x in xs:
            root, count = x * py + k % py, w * int((sns % px == x).sum()) + (w * w if x == k % px else 0)
            for y in set(sns % py) - {k % py}:
                msgs[0, root] += 1
                nbytes[0, root] += 8 + 8 * count
        for y in ys:
            root, count = (k % px) * py + y, w * int((sns % py == y).sum()) + (w * w if y == k % py else 0)
            for x in set(sns % px) - {k % px}:
                msgs[1, root] += 1
                nbytes[1, root] += 8 + 8 * count
    for r in range(6):
        sent = planned[r].array[1:3]
        assert list(sent[:, 0] + sent[:, 1]) == list(msgs[:, r])
        assert list(sent[:, 2] + sent[:, 3]) == list(nbytes[:, r])
