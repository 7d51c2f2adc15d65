"""Aggressive coarsening (``aggressive=``, hypre's agg_num_levels) under mpiexec -n k,
k = 1..4 (tests/mpi/amg_aggressive_cases.py): the second split and the multipass
interpolation against the test's own serial references written from the algorithms'
descriptions (pyamg's strength of the gathered matrix; sets and loops, not the library's
kernels); every configuration converges with the true residual checked by scipy; PMIS's
coarse grids do not depend on the rank count; the level's exchanges are what the virtual
world plans."""

import numpy as np
import pyamg
import pytest
import scipy.sparse as sp

import commsolve as cs
from aggressive_matrices import CASES, matrix

LAYOUTS = ((1, 1), (2, 1), (3, 1), (4, 2))
IDS = [f"np{k}-ppn{p}" for k, p in LAYOUTS]
MASK = (1 << 64) - 1


def result(mpi_cache, k, ppn, case):
    found = {r["case"]: r for r in mpi_cache("amg_aggressive_cases.py", k, ppn)}
    return found[case]


def weight_hash(i, seed=0):
    """splitmix64 of a point's fine-grid index, as a number in [0, 1) (the documented PMIS
    weights' random part), in Python integers."""
    golden = 0x9E3779B97F4A7C15
    z = (i + seed * golden + golden) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    z ^= z >> 31
    return (z >> 11) / float(1 << 53)


def strength_sets(A, theta=0.25):
    """Each point's strong dependencies, from pyamg's classical strength (sign-aware)."""
    S = pyamg.strength.classical_strength_of_connection(sp.csr_matrix(A), theta=theta, norm="min").tocsr()
    return [set(S.indices[S.indptr[i]:S.indptr[i + 1]].tolist()) - {i} for i in range(A.shape[0])]


def pmis_reference(S, ids):
    """PMIS on the dependency sets S (point i depends on S[i]) with weights |S^T_i| +
    hash(ids[i]): points nobody depends on start fine; each round, an undecided point whose
    weight no undecided neighbour (either direction) beats becomes coarse, then undecided
    points depending on a coarse point become fine. The coarse points' positions."""
    n = len(S)
    dependants = [set() for _ in range(n)]
    for i, row in enumerate(S):
        for j in row:
            dependants[j].add(i)
    w = [len(dependants[i]) + weight_hash(ids[i]) for i in range(n)]
    state = ["F" if not dependants[i] else "U" for i in range(n)]
    while "U" in state:
        winners = [i for i in range(n) if state[i] == "U"
                   and not any(state[k] == "U" and w[k] > w[i] for k in S[i] | dependants[i])]
        for i in winners:
            state[i] = "C"
        for i in range(n):
            if state[i] == "U" and any(state[k] == "C" for k in S[i]):
                state[i] = "F"
    return [i for i in range(n) if state[i] == "C"]


def second_split_reference(S, first):
    """The coarse points kept by the second split over ``first``: PMIS on the first coarse
    points' dependencies through paths of length one or two in S, and the first coarse
    points with no such dependency either way."""
    position = {g: k for k, g in enumerate(first)}
    S2 = []
    for g in first:
        reach = set(S[g]) | {c for j in S[g] for c in S[j]}
        S2.append({position[c] for c in reach if c in position and c != g})
    linked = set().union(*S2) | {k for k, row in enumerate(S2) if row}
    alone = [k for k in range(len(first)) if k not in linked]
    return sorted(first[k] for k in set(pmis_reference(S2, first)) | set(alone))


def multipass_reference(A, S, coarse):
    """Stueben's multipass interpolation onto the sorted ``coarse`` points: pass 0 the
    coarse points, pass k the points with a strong dependency of pass k - 1 (and none
    earlier); a pass-k row is sum_j a_ij P_j over those dependencies j, times
    -(sum_{j != i} a_ij) / (a_ii sum_j a_ij). Also each point's pass (-1: none)."""
    A = sp.csr_matrix(A)
    n = A.shape[0]
    column = {g: k for k, g in enumerate(coarse)}
    rows = [dict(zip(A.indices[A.indptr[i]:A.indptr[i + 1]].tolist(), A.data[A.indptr[i]:A.indptr[i + 1]].tolist()))
            for i in range(n)]
    P = {g: {column[g]: 1.0} for g in coarse}
    level = {g: 0 for g in coarse}
    for k in range(1, 11):
        new = [i for i in range(n) if i not in level and any(level.get(j) == k - 1 for j in S[i])]
        for i in new:
            w, total = {}, 0.0
            for j in S[i]:
                if level.get(j) == k - 1:
                    total += rows[i][j]
                    for c, v in P[j].items():
                        w[c] = w.get(c, 0.0) + rows[i][j] * v
            outside = sum(v for j, v in rows[i].items() if j != i)
            P[i] = {c: -outside / (rows[i][i] * total) * v for c, v in w.items()} if total else {}
        for i in new:
            level[i] = k
        if not new:
            break
    M = sp.lil_matrix((n, len(coarse)))
    for i, row in P.items():
        for c, v in row.items():
            M[i, c] = v
    return sp.csr_matrix(M), np.array([level.get(i, -1) for i in range(n)])


@pytest.mark.parametrize("k,ppn", LAYOUTS, ids=IDS)
@pytest.mark.parametrize("case", CASES)
def test_second_split_and_multipass_match_references(mpi_cache, k, ppn, case):
    r = result(mpi_cache, k, ppn, case)["pmis-1"]
    A = matrix(case)
    S = strength_sets(A)
    assert r["second"] == second_split_reference(S, r["first"])
    if case.endswith("+pairs"):  # each pair's first coarse point has no second-split neighbour: kept
        assert sum(g >= A.shape[0] - 6 for g in r["second"]) == 3
    assert 0 < len(r["second"]) < len(r["first"]) / 2  # the second split coarsens the first again, strongly
    P = sp.csr_matrix((r["P0"]["data"], r["P0"]["indices"], r["P0"]["indptr"]), shape=tuple(r["P0"]["shape"]))
    R, passes = multipass_reference(A, S, r["second"])
    assert P.shape == R.shape
    assert abs(P - R).max() <= 1e-13 * abs(R).max()
    assert passes.max() >= 2  # points interpolate through others' rows
    assert r["galerkin_err"] <= 1e-13
    assert r["stats_ok"]


@pytest.mark.parametrize("k,ppn", LAYOUTS, ids=IDS)
@pytest.mark.parametrize("case", CASES)
def test_converges_and_pmis_is_rank_independent(mpi_cache, k, ppn, case):
    r, one = result(mpi_cache, k, ppn, case), result(mpi_cache, 1, 1, case)
    plain = matrix(case).shape[0]
    for name in ("pmis-1", "hmis-1", "pmis-2", "pmis-1-w"):
        s = r[name]
        assert s["info"] == 0 and s["residual"] <= 1e-8, name
        assert s["rows"][1] < plain / 6, name  # aggressive: far fewer coarse points than the ~half of one split
    for name in ("pmis-1", "pmis-2", "pmis-1-w"):
        assert r[name]["rows"] == one[name]["rows"], name
    assert r["pmis-2"]["rows"][2] < r["pmis-1"]["rows"][2]  # the second level coarsened aggressively too
    assert r["pmis-1-w"]["iterations"] <= r["pmis-1"]["iterations"]


def test_options_are_checked():
    from mpi4py import MPI

    A = cs.ParCSR.from_spec("poisson2d:8", MPI.COMM_SELF)
    with pytest.raises(ValueError, match="aggressive"):
        cs.amg.solver(A, method="sa", aggressive=1)
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="aggressive"):
            cs.amg.solver(A, aggressive=bad)


def test_aggressive_levels_count_across_an_agglomeration(tmp_path):
    """The levels moved onto fewer ranks continue the hierarchy: aggressive=1 coarsens only
    the finest level aggressively, aggressive=2 also the moved level's first (it was coarsened
    aggressively again after every move)."""
    from conftest import mpirun

    script = tmp_path / "aggressive_agglomerated.py"
    script.write_text(
        "import numpy as np\nfrom mpi4py import MPI\nimport commsolve as cs\ncomm = MPI.COMM_WORLD\n"
        "assert comm.size == 2\nA = cs.ParCSR.from_spec('poisson2d:64', comm)\n"
        "for n in (1, 2):\n"
        "    ml = cs.amg.solver(A, aggressive=n, agglomerate=[(2000, 1)])\n"
        "    x, info = ml.solve(np.ones(A.local_rows), tol=1e-8)\n"
        "    inner = comm.bcast(None if ml.inner is None else [lvl.rows for lvl in ml.inner.levels], root=0)\n"
        "    if comm.rank == 0:\n"
        "        print('rows', n, info, *[lvl.rows for lvl in ml.levels], '|', *inner, flush=True)\n")
    out = mpirun(2, str(script), timeout=120).stdout
    found = {}
    for line in out.splitlines():
        if line.startswith("rows"):
            words = line.split()
            outer, inner = words[3:words.index("|")], words[words.index("|") + 1:]
            found[int(words[1])] = (int(words[2]), [int(v) for v in outer], [int(v) for v in inner])
    for n in (1, 2):
        info, outer, inner = found[n]
        assert info == 0 and outer[0] == 4096 and outer[1] < 4096 / 6  # the finest level: aggressive
    assert found[1][2][1] > found[1][2][0] / 5  # the moved level coarsened as usual
    assert found[2][2][1] < found[2][2][0] / 6  # ... or aggressively, when two levels are
