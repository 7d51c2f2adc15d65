"""BoxGrid (commsolve.boxes): a structured grid numbered box by box, against hand counts."""

import numpy as np
import pytest

from commsolve.boxes import BoxGrid, box_process_grid


def test_box_numbering_is_a_permutation_and_round_trips():
    g = BoxGrid.blocks((7, 5, 6), (2, 2, 3))
    rows = np.arange(g.rows)
    lex = g.lexicographic(rows)
    assert np.array_equal(np.sort(lex), rows)  # every cell once
    assert np.array_equal(g.from_lexicographic(lex), rows)
    x, y, z = g.coords(rows)
    assert np.array_equal(g.index(x, y, z), rows)
    # box 0 is x < 3, y < 2, z < 2 (cuts 7 // 2 = 3, 5 // 2 = 2, 6 // 3 = 2): its 12 cells first, x fastest
    assert g.offsets().tolist()[:2] == [0, 12]
    assert list(zip(*(c[:4].tolist() for c in g.coords(rows[:4])))) == [(0, 0, 0), (1, 0, 0), (2, 0, 0), (0, 1, 0)]


def test_coarsening_keeps_each_aggregate_in_its_first_cells_box():
    g = BoxGrid.blocks((7, 5, 6), (2, 2, 3))
    c = g.coarser()
    assert c.extents == (4, 3, 3) and [k.tolist() for k in c.cuts] == [[0, 2, 4], [0, 1, 3], [0, 1, 2, 3]]
    rows = np.arange(g.rows)
    x, y, z = g.coords(rows)
    fine_box = np.searchsorted(g.box_start, rows, side="right") - 1
    agg = c.index(x // 2, y // 2, z // 2)
    root = (x % 2 == 0) & (y % 2 == 0) & (z % 2 == 0)
    coarse_box = np.searchsorted(c.box_start, agg, side="right") - 1
    assert np.array_equal(coarse_box[root], fine_box[root])  # the root's box owns the aggregate
    assert np.array_equal(np.sort(agg[root]), np.arange(c.rows))  # one root per aggregate


def test_moves_merge_consecutive_owners():
    g = BoxGrid.blocks((8, 8, 8), (2, 2, 2)).moved(4)
    assert g.nranks == 2 and g.owners.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert g.offsets().tolist() == [0, 256, 512]


@pytest.mark.parametrize("extents,nprocs,expected", [((64, 64, 128), 2, (1, 1, 2)), ((12, 12, 12), 4, (2, 2, 1)),
                                                      ((12, 12, 12), 8, (2, 2, 2)), ((12, 12, 12), 3, (3, 1, 1)),
                                                      ((4, 2, 1), 8, (4, 2, 1))])
def test_process_grid_of_least_surface(extents, nprocs, expected):
    assert box_process_grid(extents, nprocs) == expected


def test_bad_boxes_are_refused():
    with pytest.raises(ValueError, match="do not fit"):
        box_process_grid((2, 2, 2), 16)
    with pytest.raises(ValueError, match="do not split"):
        BoxGrid((4, 4, 4), [[0, 2, 5], [0, 4], [0, 4]])
    with pytest.raises(ValueError, match="never decrease"):
        BoxGrid((4, 4, 4), [[0, 2, 4], [0, 4], [0, 4]], owners=[1, 0])
