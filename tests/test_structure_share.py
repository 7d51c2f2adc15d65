"""One rank's share of the supernodal structure (issue 35; C++ direct/structure_share.hpp):
rank (x, y) of a Px x Py layer keeps the blocks (I, K) with I mod Px = x or I mod Py = y,
and per supernode the process rows and columns its blocks lie on where the rank takes part
in its broadcasts. Checked here against the whole structure's blocks, listed block by block
in Python; that the factorization reading shares gives the serial factors, with every
message as the whole structure's plan says, is test_factor3d_mpi.py's (every distributed
factorization reads its share)."""

import pickle

import numpy as np
import pytest

from commsolve import _core, gallery
from commsolve.direct import make_layout, symbolic

SPECS = ["poisson3d:9", "convdiff2d:30", "kkt3d:4"]
GRIDS = [(1, 1), (2, 2), (2, 3), (3, 1), (1, 4), (4, 4)]


def blocks_of(sym):
    """Per supernode K: [(I, rows of block (I, K))], ascending I."""
    out = []
    for k in range(sym.nsuper):
        sn, count = sym.block_rows(k)
        rows = np.asarray(sym.rows[sym.rows_ptr[k]:sym.rows_ptr[k + 1]])
        ends = np.cumsum(count)
        out.append([(int(i), rows[e - c:e].tolist()) for i, c, e in zip(sn, count, ends)])
    return out


@pytest.fixture(scope="module", params=SPECS)
def whole(request):
    sym = symbolic(gallery.from_spec(request.param), max_supernode=8)
    return sym, blocks_of(sym)


@pytest.mark.parametrize("grid", GRIDS, ids=lambda g: f"{g[0]}x{g[1]}")
def test_a_share_holds_the_blocks_of_its_row_and_column_and_their_lines(whole, grid):
    sym, blocks = whole
    px, py = grid
    held = np.zeros(sym.rows.size, dtype=np.int64)  # how many shares hold each row of the whole
    for x in range(px):
        for y in range(py):
            share = _core.structure_share(sym, px, py, x, y)
            h = share.share
            assert h["grid"] == (px, py) and h["place"] == (x, y)
            assert np.array_equal(share.sn_start, sym.sn_start) and np.array_equal(share.perm, sym.perm)
            assert np.array_equal(_core.supernodal_etree(share), _core.supernodal_etree(sym))
            for k in range(sym.nsuper):
                kept = [r for i, rows in blocks[k] if i % px == x or i % py == y for r in rows]
                assert share.rows[share.rows_ptr[k]:share.rows_ptr[k + 1]].tolist() == kept, (x, y, k)
                # in the order K's rows reach them
                on_rows = list(dict.fromkeys(i % px for i, _ in blocks[k]))
                on_cols = list(dict.fromkeys(i % py for i, _ in blocks[k]))
                takes_part = (x in on_rows or k % px == x) and (y in on_cols or k % py == y)
                rows_k = h["rows"][h["rows_ptr"][k]:h["rows_ptr"][k + 1]].tolist()
                cols_k = h["cols"][h["cols_ptr"][k]:h["cols_ptr"][k + 1]].tolist()
                assert (rows_k, cols_k) == ((on_rows, on_cols) if takes_part else ([], [])), (x, y, k)
            for k in range(sym.nsuper):  # count the whole's rows each share holds
                lo = sym.rows_ptr[k]
                for i, rows in blocks[k]:
                    if i % px == x or i % py == y:
                        held[lo:lo + len(rows)] += 1
                    lo += len(rows)
    # every block on its row's Py ranks and its column's Px, once on the rank in both
    assert held.min() >= 1 and held.max() <= px + py - 1
    assert held.sum() == sym.rows.size * (px + py - 1)


def test_a_share_is_a_fraction_of_the_whole_on_a_square_grid():
    """On average (Px + Py - 1) / (Px Py) of the rows (the count above); the largest share,
    where the large separator blocks fall, measured 0.59 of them on 4 x 4 and 0.36 on 8 x 8."""
    sym = symbolic(gallery.from_spec("poisson3d:24"))
    for p, most in ((4, 0.65), (8, 0.4)):
        sizes = [_core.structure_share(sym, p, p, x, y).rows.size for x in range(p) for y in range(p)]
        assert max(sizes) <= most * sym.rows.size, (p, max(sizes), sym.rows.size)
    assert _core.structure_share(sym, 1, 4, 0, 2).rows.size == sym.rows.size  # a 1 x P grid keeps all


def test_what_needs_the_whole_structure_refuses_a_share():
    sym = symbolic(gallery.from_spec("poisson2d:12"))
    share = _core.structure_share(sym, 2, 2, 1, 0)
    for needs_whole in (lambda: share.nnz_L, lambda: pickle.dumps(share),
                        lambda: _core.factor_entries_per_rank(make_layout(share, (2, 2, 1))),  # every rank's blocks
                        lambda: _core.structure_share(share, 2, 2, 0, 0)):
        with pytest.raises(ValueError, match=r"whole supernodal structure, not rank \(1, 0\)'s share"):
            needs_whole()


@pytest.mark.parametrize("args", [(0, 2, 0, 0), (2, 2, 2, 0), (2, 2, 0, -1)])
def test_a_place_outside_the_grid_is_an_error(args):
    sym = symbolic(gallery.from_spec("poisson2d:6"))
    with pytest.raises(ValueError, match="outside a"):
        _core.structure_share(sym, *args)
