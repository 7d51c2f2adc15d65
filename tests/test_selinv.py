"""Selected inversion (issue 32, the numerical method; serial): the entries of A^-1 in the
pattern of the factors, against numpy's dense inverse on every gallery family, symmetric
and unsymmetric, with and without row permutation and scaling, supernodes narrow and wide."""

import numpy as np
import pytest
import scipy.sparse as sp

import commsolve as cs

FAMILIES = ["poisson2d:14", "poisson2d9:12", "poisson3d:6", "poisson3d27:6", "aniso2d:12,eps=0.001,theta=22.5",
            "convdiff2d:12,pe=50,theta=30", "kkt3d:4,alpha=1"]


@pytest.mark.parametrize("spec", FAMILIES)
@pytest.mark.parametrize("options", [{}, {"max_supernode": 4, "relax": 0}, {"row_perm": "none", "equil": False}],
                         ids=["defaults", "narrow", "unpivoted"])
def test_selected_entries_equal_the_dense_inverse(spec, options):
    A = sp.csr_matrix(cs.gallery.from_spec(spec))
    if spec.startswith("kkt") and options.get("row_perm") == "none":  # a zero (2,2) block needs the row matching:
        with pytest.raises(ValueError, match="zero pivot"):  # this ordering meets one of its zero pivots
            cs.direct.SparseLU(A, levels=2, **options)
        return
    lu = cs.direct.SparseLU(A, **options)
    S = lu.selected_inverse().tocoo()
    Z = np.linalg.inv(A.toarray())
    err = np.abs(S.data - Z[S.row, S.col]).max() / np.abs(Z).max()
    assert err <= 1e-12, err
    # it holds the pattern of A^T and the diagonal, and is a small part of the dense inverse
    have = set(zip(S.row.tolist(), S.col.tolist()))
    At = sp.coo_matrix(A.T)
    assert all((i, j) in have for i, j in zip(At.row.tolist(), At.col.tolist()))
    assert all((i, i) in have for i in range(A.shape[0]))
    assert S.nnz <= lu.nnz_LU < A.shape[0] ** 2


def test_selected_inverse_of_a_larger_matrix_on_sampled_columns():
    """poisson2d9:60 (3,600 rows, several supernode levels): columns of A^-1 by solves
    (scipy's splu, independent of our factors) against the selected entries in them."""
    from scipy.sparse.linalg import splu

    A = sp.csc_matrix(cs.gallery.from_spec("poisson2d9:60"))
    S = cs.direct.SparseLU(A).selected_inverse().tocsc()
    ref = splu(A)
    for j in (0, 1799, 3599):
        e = np.zeros(A.shape[0])
        e[j] = 1.0
        col = ref.solve(e)
        rows = S.indices[S.indptr[j]:S.indptr[j + 1]]
        assert rows.size > 0
        assert np.abs(S.data[S.indptr[j]:S.indptr[j + 1]] - col[rows]).max() <= 1e-12 * np.abs(col).max()


# ---- the simulator's replay of parallel selected inversion ----------------------------------

SIM_SHAPES = ["flat", "binary", "shifted-binary", "node-aware"]


@pytest.mark.parametrize("symmetric", [True, False], ids=["symmetric", "unsymmetric"])
@pytest.mark.parametrize("shape", SIM_SHAPES)
def test_simulated_selected_inversion_sends_what_the_plan_says(shape, symmetric):
    """Every rank's simulated traffic, per role, equals its plan counted without the
    simulator (the same counts the MPI run's recorded statistics are tested against)."""
    from commsolve import _core, make_topology
    from commsolve.trees import tree_shape

    S = cs.direct.symbolic(cs.gallery.from_spec("poisson3d:10"), max_supernode=16)
    schedule = cs.sim.selinv_schedule(S, (3, 4), symmetric, shape, seed=2)
    topo = make_topology(nodes=[r // 4 for r in range(12)], size=12)
    r = cs.sim.simulate(schedule, topo, "edison")
    planned = _core.selinv_stats_virtual(schedule.layout, tree_shape(shape, 2), topo, symmetric)
    for got, want in zip(r.recorded, planned):
        np.testing.assert_array_equal(got.array, want)
    assert np.isfinite(r.predicted_s) and r.predicted_s > 0
    assert r.categories == ("compute", "comm", "idle")
    assert r.info["symmetric"] == symmetric and r.info["shape"] == shape


def test_simulated_selected_inversion_prices_the_products():
    """The unsymmetric form does twice the products of the symmetric one: its compute time,
    summed over the ranks, is larger; a faster flop rate shrinks it."""
    from commsolve import make_topology
    from commsolve.model import load_profile

    S = cs.direct.symbolic(cs.gallery.from_spec("poisson3d:12"), max_supernode=32)
    topo = make_topology(nodes=[0] * 4, size=4)
    sym, uns = (cs.sim.simulate(cs.sim.selinv_schedule(S, (2, 2), f), topo, "edison") for f in (True, False))
    compute = lambda r: r.per_rank()["compute"].sum()  # noqa: E731
    assert compute(uns) > 1.5 * compute(sym)
    fast = load_profile("edison")
    fast.compute["flop_rate"] *= 10
    assert compute(cs.sim.simulate(cs.sim.selinv_schedule(S, (2, 2), True), topo, fast)) < compute(sym)


def test_simulated_selected_inversion_refuses_a_3d_grid_or_a_wrong_world():
    from commsolve import _core, make_topology
    from commsolve.direct import make_layout
    from commsolve.sim.models import compute_model, network_model
    from commsolve.trees import tree_shape

    S = cs.direct.symbolic(cs.gallery.from_spec("poisson3d:6"))
    with pytest.raises(ValueError, match="Pz = 1"):
        _core.simulate_selinv(make_layout(S, (1, 2, 2)), tree_shape(), True, make_topology(nodes=[0] * 4, size=4),
                              network_model("edison", 4), compute_model("edison"), False)
    with pytest.raises(ValueError, match="the topology 6"):
        _core.simulate_selinv(make_layout(S, (2, 2, 1)), tree_shape(), True, make_topology(nodes=[0] * 6, size=6),
                              network_model("edison", 6), compute_model("edison"), False)


def test_role_volumes_by_hand():
    from commsolve.direct.selinv import ROLES, role_volumes

    a = np.zeros((2, len(ROLES), 8), dtype=np.int64)
    a[0, ROLES.index("col_bcast"), 2:4] = (100, 20)  # bytes sent intra, inter
    a[1, ROLES.index("col_bcast"), 2] = 40
    a[1, ROLES.index("row_reduce"), 6:8] = (8, 8)  # bytes received
    v = role_volumes([cs.CommStats(x) for x in a], "col_bcast")
    assert v == {"min": 40.0, "max": 120.0, "median": 80.0, "std": 40.0}
    assert role_volumes([cs.CommStats(x) for x in a], "row_reduce", received=True)["max"] == 16.0
