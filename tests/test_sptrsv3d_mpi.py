"""The distributed 3D triangular solves under mpiexec: grids 1x1x2, 1x2x2, 2x1x2, 1x1x4 and
2x2x2 (up to 8 ranks, oversubscribed), both forest partitions, the three 3D algorithms (and,
apart, the pdgstrs3d-faithful baseline with each of its switches alone)
(3d-baseline with its synchronous upper levels, 3d-baseline-async, 3d), both inter-grid packings, two tree shapes, nrhs 1 and 3, three gallery families (one
nonsymmetric), b and x distributed by rows (strided). x equals the serial solve with the
same factors to 1e-12 (so the 3D solves agree with each other and with the 2D solve, which
tests/test_sptrsv_mpi.py checks against the same reference); recorded CommStats equal the
plan on every rank, and every rank's plan equals its twin in the virtual world."""

import pytest
from conftest import json_lines, mpirun

GRIDS = [(1, 1, 2), (1, 2, 2), (2, 1, 2), (1, 1, 4), (2, 2, 2)]
FAMILIES = ["poisson2d9", "poisson3d", "random"]
_cache = {}


def results(grid):
    if grid not in _cache:
        P = grid[0] * grid[1] * grid[2]
        out = mpirun(P, "sptrsv3d_cases.py", P, "x".join(map(str, grid))).stdout
        _cache[grid] = json_lines(out)
    return _cache[grid]


def ident(grid):
    return "x".join(map(str, grid))


@pytest.mark.parametrize("grid", GRIDS, ids=ident)
@pytest.mark.parametrize("family", FAMILIES)
def test_every_variant_solves_and_counts_exactly(grid, family):
    rows = [r for r in results(grid) if r["family"] == family]
    assert len(rows) == 2 * 3 * 2 * 2 * 2  # partitions x algorithms x packings x trees x nrhs
    for r in rows:
        where = f"{family} {ident(grid)} {r['partition']} {r['algorithm']} {r['allreduce']} {r['tree']} nrhs={r['nrhs']}"
        assert r["diff"] <= 1e-12, where  # the serial solve of the same factors
        assert r["resid"] <= 1e-10, where
        assert r["stats_ok"], where
        assert r["virtual_ok"], where
        assert r["shape"][1:] == ([] if r["nrhs"] == 1 else [3]), where
        assert r["bx_msgs"] > 0, where  # strided rows: b and x move to and from the diagonal owners


@pytest.mark.parametrize("grid", GRIDS, ids=ident)
def test_grids_talk_and_packing_saves_messages_not_bytes(grid):
    by = {(r["family"], r["partition"], r["algorithm"], r["allreduce"], r["tree"], r["nrhs"]): r
          for r in results(grid)}
    for (family, part, alg, packing, tree, nrhs), r in by.items():
        assert r["z_msgs"] > 0, (family, part, alg)
        if packing == "packed":
            other = by[family, part, alg, "per-supernode", tree, nrhs]
            assert r["z_bytes"] == other["z_bytes"]
            assert r["z_msgs"] <= other["z_msgs"]
        # The SC'23 solve moves the same inter-grid volume as the baseline, in one synchronisation.
        if alg == "3d":
            base = by[family, part, "3d-baseline", packing, tree, nrhs]
            assert (r["z_msgs"], r["z_bytes"]) == (base["z_msgs"], base["z_bytes"])
        # The synchronous upper levels run over whole process rows and columns: never fewer
        # messages inside the grids than the restricted trees, and more once a grid has two ranks.
        if alg == "3d-baseline":
            other = by[family, part, "3d-baseline-async", packing, tree, nrhs]
            assert (r["z_msgs"], r["z_bytes"]) == (other["z_msgs"], other["z_bytes"])
            assert r["xy_msgs"] >= other["xy_msgs"] if grid[:2] == (1, 1) else r["xy_msgs"] > other["xy_msgs"]


# --- the pdgstrs3d-faithful baseline and the SC'23 ablation's switches (tests/mpi/pdgstrs_cases.py)

_pdgstrs = {}


def pdgstrs_results(grid):
    if grid not in _pdgstrs:
        P = grid[0] * grid[1] * grid[2]
        _pdgstrs[grid] = json_lines(mpirun(P, "pdgstrs_cases.py", P, "x".join(map(str, grid))).stdout)
    return _pdgstrs[grid]


def allreduce_messages(p):
    """Messages of MPICH's recursive doubling among p ranks, counted by hand: the 2^k <= p
    ranks exchange once per round (k rounds), the p - 2^k others fold in and get the result
    back (one message each way)."""
    k = p.bit_length() - 1
    return (1 << k) * k + 2 * (p - (1 << k))


@pytest.mark.parametrize("grid", GRIDS, ids=ident)
def test_pdgstrs_baseline_and_each_switch_solve_and_count_exactly(grid):
    px, py, pz = grid
    rows = pdgstrs_results(grid)
    assert len(rows) == 2 * 6 * 2  # families x (plain + 5 variants) x nrhs
    plain = {(r["family"], r["nrhs"]): r for r in rows if not r["variant"]}
    # the steps each switch may change (SOLVE_STEPS order): trees the phases' messages,
    # kernels none, leaf_sync the grid synchronisations, per-supernode the inter-grid steps
    may_change = {"tree": {0, 1, 2, 3}, "kernels": set(), "leaf_sync": {8}, "allreduce": {4, 5}}
    for r in rows:
        where = f"{r['family']} {ident(grid)} {r['variant']} nrhs={r['nrhs']}"
        assert r["diff"] <= 1e-12, where
        assert r["resid"] <= 1e-10, where
        assert r["stats_ok"] and r["virtual_ok"], where
        base = plain[r["family"], r["nrhs"]]
        switch = [k for k in r["variant"] if k != "algorithm"]
        allowed = set().union(*may_change.values()) if not switch else may_change[switch[0]]
        for step in range(9):
            if step not in allowed:
                assert (r["msgs"][step], r["bytes"][step]) == (base["msgs"][step], base["bytes"][step]), (where, step)
        synced = r["variant"].get("leaf_sync", False) or r["variant"].get("algorithm") == "3d-baseline-pdgstrs"
        # per grid: the L and U leaf forests' counter allreduces over each process row, one barrier over the grid
        expected = pz * (2 * px * allreduce_messages(py) + allreduce_messages(px * py)) if synced else 0
        assert r["msgs"][8] == expected, where
        if r["variant"].get("allreduce") == "per-supernode":
            assert r["msgs"][4] > base["msgs"][4] and r["bytes"][4:6] == base["bytes"][4:6], where
