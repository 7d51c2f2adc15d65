"""Symbolic Cholesky under nested dissection against dense Cholesky; the selected-inversion
collectives on a block-cyclic grid; the trees command."""

import json
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from commsolve import gallery
from commsolve.direct import supernodal_structure
from commsolve.workloads import selinv_collectives


def spd(A):
    A = sp.csr_matrix(A)
    S = abs(A) + abs(A).T
    return (S + sp.diags(np.asarray(S.sum(axis=1)).ravel() + 1.0)).tocsr()


@pytest.mark.parametrize("spec,ordering", [("poisson2d:12", "nd"), ("poisson3d:6", "nd"), ("poisson2d9:9", "natural"),
                                           ("random:rows=150,nnz_per_row=4", "nd")])
@pytest.mark.parametrize("max_size", [1, 4, 64])
def test_structure_matches_dense_cholesky(spec, ordering, max_size):
    A = spd(gallery.from_spec(spec))
    S = supernodal_structure(A, max_size, ordering, relax=0, relax_subtree=0)  # the exact structure
    assert sorted(S.perm) == list(range(A.shape[0]))
    L = np.linalg.cholesky(A[S.perm][:, S.perm].toarray())
    dense = np.abs(L) > 1e-13
    symbolic = np.zeros_like(dense)
    for s in range(S.nsuper):
        f, l = S.sn_start[s], S.sn_start[s + 1]
        assert l - f <= max_size
        for j in range(f, l):
            symbolic[j:l, j] = True  # dense diagonal block
            symbolic[S.rows[S.rows_ptr[s]:S.rows_ptr[s + 1]], j] = True
    assert not np.any(dense & ~symbolic)  # the symbolic structure holds every nonzero of L
    # and exactly the structural fill of boolean elimination (numeric zeros may cancel)
    P = np.tril(A[S.perm][:, S.perm].toarray() != 0)
    for k in range(P.shape[0]):
        below = np.nonzero(P[k + 1:, k])[0] + k + 1
        P[np.ix_(below, below)] |= np.tril(np.ones((below.size, below.size), dtype=bool))
    assert np.array_equal(P, symbolic) and symbolic.sum() == S.nnz_L


def test_selinv_collectives_follow_the_grid():
    S = supernodal_structure(gallery.poisson2d(16), 8)
    Pr, Pc = 3, 4
    C = selinv_collectives(S, (Pr, Pc))
    # one Col-Bcast per process column and one Row-Reduce per process row holding blocks of K
    assert len(C) == sum(len(set(S.block_rows(k)[0] % Pc)) + len(set(S.block_rows(k)[0] % Pr))
                         for k in range(S.nsuper))
    for kind, root, part in zip(C.kinds, C.roots, C.participants):
        assert root in part and len(set(part)) == len(part)
        if kind == 0:
            assert {r % Pc for r in part} == {root % Pc}  # Col-Bcast stays in a grid column
        else:
            assert {r // Pc for r in part} == {root // Pc}  # Row-Reduce stays in a grid row


def test_bad_input():
    with pytest.raises(ValueError, match="square"):
        supernodal_structure(sp.random(5, 6, density=0.5), 4)
    with pytest.raises(ValueError, match="unknown ordering"):
        supernodal_structure(gallery.poisson2d(3), 4, "amd")
    with pytest.raises(ValueError, match="grid must be positive"):
        selinv_collectives(supernodal_structure(gallery.poisson2d(3), 4), (0, 2))


def test_trees_command(tmp_path):
    png = tmp_path / "heat.png"
    p = subprocess.run([sys.executable, "-m", "commsolve", "trees", "--gen", "poisson3d:12", "--grid", "6x6",
                        "--ppn", "4", "--plot", str(png), "--json"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert set(r["shapes"]) == {"flat", "binary", "shifted-binary", "need-ordered", "node-aware", "binomial",
                                "rectangular"}
    for s in r["shapes"].values():
        b = s["broadcast_sent"]
        assert 0 <= b["min_bytes"] <= b["median_bytes"] <= b["max_bytes"]
    flat = r["shapes"]["flat"]["broadcast_sent"]["max_messages"]
    assert r["shapes"]["binary"]["broadcast_sent"]["max_messages"] != flat or flat == 0
    assert png.read_bytes()[:4] == b"\x89PNG"
    bad = subprocess.run([sys.executable, "-m", "commsolve", "trees", "--gen", "poisson2d:8", "--grid", "4by4"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "expected PrxPc" in bad.stderr


def test_trees_command_sptrsv_workload():
    """The 2D solves' collectives at 64 virtual ranks: one broadcast and one reduction per
    supernode and solve; a flat broadcast root sends at most px - 1 messages per collective."""
    p = subprocess.run([sys.executable, "-m", "commsolve", "trees", "--gen", "poisson2d9:60", "--grid", "8x8",
                        "--workload", "sptrsv", "--shape", "flat,binary", "--json"], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["workload"] == "sptrsv" and r["collectives"] == 4 * r["supernodes"]
    flat, binary = (r["shapes"][s]["broadcast_sent"] for s in ("flat", "binary"))
    assert binary["max_bytes"] <= flat["max_bytes"] and flat["max_bytes"] > 0
