"""The 3D factorization on the grids (direct/factor3d.hpp) under mpiexec: grids 1x1x2,
1x1x4, 1x2x2, 2x2x1 and 2x2x2 (up to 8 ranks, oversubscribed), from a row-distributed
ParCSR. Every grid's blocks equal the serial factorization's to rounding, each grid holds
exactly its forests' supernodes, the recorded messages equal the plan on every rank, solves
through factor() match the serial solve, and a tiny pivot on one grid is an error on every
rank. Without MPI: the planned inter-grid traffic against a count written out here."""

import numpy as np
import pytest
from conftest import json_lines, mpirun

from commsolve import _core, gallery
from commsolve.direct import SparseLU
from commsolve.direct.factor3d import planned_factor_stats
from commsolve.topology import make_topology
from commsolve.workloads import forest_partition

GRIDS = [(1, 1, 2), (1, 1, 4), (1, 2, 2), (2, 2, 1), (2, 2, 2)]
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
    assert r["block_diff"] <= 1e-12  # the same arithmetic up to the order of the extend-adds
    assert r["held_ok"] and r["stats_ok"]
    # every grid but the first sends its pending updates once and receives its ancestors once
    # (a header, and the payload unless it is empty)
    assert 2 * (grid[2] - 1) <= r["inter_grid_msgs"] <= 4 * (grid[2] - 1)
    assert r["resid"] <= 1e-12 and r["diff"] <= 1e-12
    assert r["phases"] == sorted(["ordering", "redistribute", "allocate", "numeric", "distribute", "total"])


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
    """Grid z sends at level l (z mod 2^l = 2^(l-1)) the updates of the supernodes its
    subtree of forests factored whose parent lies above that subtree, and receives the
    blocks of its forests at levels >= l."""
    A = gallery.from_spec("poisson2d9:60")
    lu = SparseLU(A, max_supernode=16, levels=5)
    st = lu.structure
    forests = forest_partition(st, pz, "nd")
    topo = make_topology(ppn=min(4, pz), size=pz)
    planned = planned_factor_stats(A.tocsr(), np.zeros(A.shape[0], dtype=np.int64), lu.pivoting, lu.row_order,
                                   lu.col_order, st, forests, (1, 1, pz), topo)
    widths, below = np.diff(st.sn_start), np.diff(st.rows_ptr)
    parent = np.array([st.sn_of[st.rows[st.rows_ptr[s]]] if below[s] else -1 for s in range(st.nsuper)])

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
        below_forests = subtree(((pz + z) >> (level - 1)) - 1)
        mine = np.isin(forests, list(below_forests))
        waiting = [s for s in np.flatnonzero(mine) if parent[s] >= 0 and not mine[parent[s]]]
        sent = planned[z].array[1]  # Z reduce: (msgs, bytes) sent intra/inter
        payload = 8 * int(sum(below[s] ** 2 for s in waiting))
        assert sent[0] + sent[1] == 1 + (payload > 0)  # a header (status, length), the payload
        assert sent[2] + sent[3] == 16 + payload
        path, f = set(), ((pz + z) >> level) - 1
        while f >= 0:
            path.add(f)
            f = (f - 1) // 2 if f > 0 else -1
        ancestors = np.isin(forests, list(path))
        got = planned[z].array[2]  # ancestor broadcast received
        payload = 8 * int((widths ** 2 + 2 * widths * below)[ancestors].sum())
        assert got[4] + got[5] == 1 + (payload > 0)
        assert got[6] + got[7] == 16 + payload
    total = sum(p.array[1:3] for p in planned)
    assert total[:, 0:4].sum() == total[:, 4:8].sum() and (total[:, 2] + total[:, 3]).sum() > 0
    assert _core.factor_3d_planned(*st.core_arrays(), np.asarray(forests, np.int32), 1, 1, pz, topo).shape == (pz, 4, 8)
