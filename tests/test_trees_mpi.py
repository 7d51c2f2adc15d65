"""Restricted collectives under mpiexec -n k: 300 random overlapping collectives per shape
(random roots, subsets, sizes including 0 values and single participants). Every receiver
gets the root's exact values, every reduction root the exact sum; recorded statistics equal
planned ones; every rank's tree equals the virtual world's; nothing deadlocks (timeout)."""

import pytest
from conftest import json_lines, mpirun

from commsolve.trees import SHAPES

RANKS = (2, 3, 4, 8)
CASES = [(k, s) for k in RANKS for s in SHAPES]
_cache = {}


def result(k, shape):
    if k not in _cache:
        _cache[k] = {r["shape"]: r for r in json_lines(mpirun(k, "trees_cases.py", k).stdout)}
    return _cache[k][shape]


@pytest.mark.parametrize("k,shape", CASES, ids=[f"np{k}-{s}" for k, s in CASES])
def test_values_exact(k, shape):
    assert result(k, shape)["values_ok"]


@pytest.mark.parametrize("k,shape", CASES, ids=[f"np{k}-{s}" for k, s in CASES])
def test_recorded_equals_planned(k, shape):
    assert result(k, shape)["stats_ok"]


@pytest.mark.parametrize("k,shape", CASES, ids=[f"np{k}-{s}" for k, s in CASES])
def test_trees_equal_virtual_world(k, shape):
    assert result(k, shape)["virtual_ok"]
