"""The direct solver's options and right-hand sides are checked in one place each, before any
work (found by probing the API as a user would): a misspelt option is refused, not ignored;
a wrong type or a NaN is a clear ValueError, not a TypeError on one rank or NaN results; and
the watchdog's thread does not fail while mpi4py is still being imported."""

import sys
import types

import numpy as np
import pytest
from mpi4py import MPI

from commsolve import _watchdog, direct, gallery
from commsolve.direct.serial import checked_lu_options, rhs_array


@pytest.mark.parametrize("options,message", [
    ({"ordring": "nd"}, "unknown option(s) ordring (known: max_supernode, ordering, levels"),
    ({"max_supernode": 2.5}, "max_supernode must be a whole number, got 2.5"),
    ({"max_supernode": True}, "max_supernode must be a whole number, got True"),
    ({"max_supernode": 0}, "max_supernode must be at least 1, got 0"),
    ({"levels": -1}, "levels must be >= 0, got -1"),
    ({"relax": "0.3"}, "relax must be a number, got '0.3'"),
    ({"zero_pivot": float("nan")}, "zero_pivot must be finite and >= 0, got nan"),
    ({"zero_pivot": -1.0}, "zero_pivot must be finite and >= 0, got -1.0"),
    ({"equil": "no"}, "equil must be True or False, got 'no'"),
    ({"replace_tiny": 1}, "replace_tiny must be True or False, got 1"),
    ({"row_perm": "mc65"}, "unknown row permutation 'mc65' (known: mc64, none, auto)"),
    ({"ordering": 3}, "ordering must be a name, got 3"),
    ({"ordering": "amd"}, "unknown ordering 'amd' (known: "),
])
def test_bad_options_are_refused_by_name(options, message):
    with pytest.raises(ValueError) as e:
        checked_lu_options(options)
    assert message in str(e.value)


def test_good_options_pass_and_none_means_the_default():
    given = checked_lu_options({"max_supernode": np.int64(64), "ordering": None, "equil": np.bool_(False),
                                "zero_pivot": 0, "relax": 1})
    assert given == {"max_supernode": 64, "equil": False, "zero_pivot": 0.0, "relax": 1.0}
    assert type(given["max_supernode"]) is int and type(given["relax"]) is float


def test_sparse_lu_checks_its_options_too():
    with pytest.raises(ValueError, match="zero_pivot must be finite"):
        direct.SparseLU(gallery.poisson2d(4), zero_pivot=float("inf"))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_right_hand_sides_are_refused(bad):
    b = np.ones((6, 2))
    b[4, 1] = bad
    with pytest.raises(ValueError, match=r"b holds non-finite values \(NaN or Inf\), first in row 4 \(1 row"):
        rhs_array(b, 6)
    for empty in (np.ones(0), np.ones((0, 3))):  # a rank that holds no rows
        assert rhs_array(empty, 0)[0].shape == (0, 1 if empty.ndim == 1 else 3)
    solver = direct.factor(gallery.poisson2d(4), MPI.COMM_SELF)
    with pytest.raises(ValueError, match="non-finite"):
        solver.solve(np.full(16, bad))


def test_watchdog_reads_a_half_imported_mpi4py_as_not_started(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py.MPI", types.ModuleType("mpi4py.MPI"))  # no functions yet
    assert _watchdog._world() is None and _watchdog._rank() is None
    monkeypatch.undo()
    assert _watchdog._world() is not None  # the real module: MPI is initialized in this process
