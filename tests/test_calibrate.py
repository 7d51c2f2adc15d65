"""Calibration: the fits recover known parameters from synthetic timings made by the model
itself plus noise. The calibrate command itself (a loadable profile and a picture) runs in
the calibration tutorial's test (tests/test_tutorials.py)."""

import numpy as np
import pytest

from commsolve.model.calibrate import (CACHE_SHAPES, SIZES, STREAM_SHAPES, SWEEP_SHAPE, choose_thresholds, fit_cache,
                                       fit_compute, fit_gamma, fit_injection, fit_postal, fit_profile)

TRUE = {"short": (1.0e-6, 2.0e9), "eager": (3.0e-6, 5.0e9), "rend": (2.0e-5, 1.0e10)}
SHORT_MAX, EAGER_MAX = 1024, 65536


def synthetic(rng, noise=0.01):
    s = np.array(SIZES, float)
    proto = np.where(s <= SHORT_MAX, "short", np.where(s <= EAGER_MAX, "eager", "rend"))
    t = np.array([TRUE[p][0] + x / TRUE[p][1] for x, p in zip(s, proto)])
    return s, t * (1 + noise * rng.standard_normal(s.size))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_postal_fit_recovers_parameters(seed):
    s, t = synthetic(np.random.default_rng(seed))
    fits = fit_postal(s, t, SHORT_MAX, EAGER_MAX)
    for proto in ("eager", "rend"):
        assert fits[proto]["alpha"] == pytest.approx(TRUE[proto][0], rel=0.15)
        assert fits[proto]["rate"] == pytest.approx(TRUE[proto][1], rel=0.1)
        assert fits[proto]["rel_error"] < 0.03
    assert fits["short"]["alpha"] == pytest.approx(TRUE["short"][0], rel=0.05)  # latency-bound range


def test_thresholds_found_from_timings():
    s, t = synthetic(np.random.default_rng(3), noise=0.002)
    assert choose_thresholds(s, t) == (SHORT_MAX, EAGER_MAX)


def test_injection_fit():
    alpha, rb, rn, ppn = 2e-6, 4e9, 6e9, 4
    sizes = np.array([1 << k for k in range(14, 23)], float)
    t = alpha + ppn * sizes / min(rn, ppn * rb)
    assert fit_injection(ppn, sizes, t * 1.001, alpha, rb) == pytest.approx(rn, rel=0.01)
    unlimited = alpha + ppn * sizes / (ppn * rb)
    assert fit_injection(ppn, sizes, unlimited, alpha, rb) == np.inf


def test_gamma_fit():
    rng = np.random.default_rng(4)
    n = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024], float)
    matched = 1e-6 * n
    reversed_ = matched + 8.4e-9 * n * n * (1 + 0.01 * rng.standard_normal(n.size))
    assert fit_gamma(n, matched, reversed_) == pytest.approx(8.4e-9, rel=0.02)
    assert fit_gamma(n, matched, matched * 0.99) == 0.0  # never negative


def test_fit_profile_copies_missing_level_and_notes_it():
    s, t = synthetic(np.random.default_rng(5))
    meas = {"nranks": 2, "ppn": 1, "host": "h", "inter": {"sizes": list(s), "times": list(t)},
            "hvpp": {"counts": [1, 2, 4], "matched": [1e-6, 2e-6, 4e-6], "reversed": [1e-6, 2e-6, 4e-6]}}
    prof, report = fit_profile(meas, "syn", SHORT_MAX, EAGER_MAX)
    assert prof.alpha["intra_node", "rend"] == prof.alpha["inter_node", "rend"]
    assert "intra_node copied from inter_node" in prof.description
    assert prof.rate["inter_node", "rend"] == pytest.approx(1e10, rel=0.1)


def test_compute_fit_recovers_parameters():
    # Timings made by the simulator's compute model: c + max(flops / F, bytes / B), with F
    # binding in cache (B there is the cache's, 10x memory's) and B streaming from memory.
    c, F, B = 2e-8, 4e9, 1.5e10

    def t(m, w, b):
        return c + max(2.0 * m * w / F, 8.0 * (m * w + m + w) / b)

    kernels = {"unit": c, "cache": [(m, w, t(m, w, 10 * B)) for m, w in CACHE_SHAPES],
               "stream": [(m, w, t(m, w, B)) for m, w in STREAM_SHAPES], "pack": [(100, 16 * 100 / 2e10)]}
    assert "triangular_rate" not in fit_compute(kernels)
    kernels["triangular"] = [(w, c + w * w / 1.5e9) for w in (16, 32, 64)]  # dtrsm: w^2 flops at 1.5 GF/s
    fit = fit_compute(kernels)
    assert fit["call_overhead"] == c
    assert fit["flop_rate"] == pytest.approx(F, rel=1e-9) and fit["bandwidth"] == pytest.approx(B, rel=1e-9)
    assert fit["copy_rate"] == pytest.approx(2e10, rel=1e-9)
    assert fit["triangular_rate"] == pytest.approx(1.5e9, rel=1e-9)
    with pytest.raises(ValueError, match="cannot fit"):
        fit_compute({"unit": 1.0, "cache": [(8, 8, 0.5)], "stream": [(8, 8, 0.5)], "pack": [(8, 1.0)]})


MIB = 1 << 20


def test_cache_fit_finds_where_the_rate_falls():
    # rates (GB/s) over working sets of 1..128 MiB: L2 then a last-level plateau of 30 that
    # ends after 32 MiB, memory 14. From cache: the rates >= 1.5 x 14 = 21 (1..32 MiB), whose
    # median is 30; the cache ends at the largest read at >= 0.9 x 30 = 27: 32 MiB a rank,
    # timed by 2 ranks at once, so 64 MiB a node.
    sweep = [(b * MIB, r * 1e9) for b, r in zip([1, 2, 4, 8, 16, 32, 64, 128], [40, 30, 30, 30, 30, 29, 15, 14])]
    assert fit_cache(sweep, 14e9, 2) == (64 * MIB, pytest.approx(30e9))
    assert fit_cache(sweep, 14e9, 1)[0] == 32 * MIB
    # a rate that sags half-way down the cliff (45 MiB at 24 GB/s) is not counted as cache
    assert fit_cache(sorted(sweep + [(45 * MIB, 24e9)]), 14e9, 1)[0] == 32 * MIB
    assert fit_cache([(b, 14e9) for b, _ in sweep], 14e9, 2) is None  # no faster working set: no cache
    assert fit_cache([(b, float("nan")) for b, _ in sweep], 14e9, 2) is None  # NaN is never cache


def test_compute_fit_takes_the_cache_from_the_sweep():
    c, B = 1e-8, 1e10
    m, w = SWEEP_SHAPE

    def t(b, rate):
        return c + 8.0 * (m * w + m + w) / rate

    kernels = {"unit": c, "cache": [(m, w, t(0, 3 * B))], "stream": [(m, w, t(0, B))], "pack": [(100, 1e-8)],
               "sweep": [(b * MIB, t(b, 3 * B if b <= 16 else B)) for b in (1, 4, 16, 64, 256)], "sharing": 4}
    fit = fit_compute(kernels)
    assert fit["cache_bytes"] == 64 * MIB and fit["cache_bandwidth"] == pytest.approx(3 * B, rel=1e-9)
    kernels["sweep"] = [(b * MIB, t(b, B)) for b in (1, 4, 16, 64, 256)]
    assert "cache_bytes" not in fit_compute(kernels)


def test_compute_fits_refuse_nan():
    from commsolve.sim.calibration import fit_engine_overhead, fit_solve_compute

    bad = {"unit": 1e-8, "cache": [(8, 8, 1e-6)], "stream": [(8, 8, 1e-6)], "pack": [(8, float("nan"))]}
    with pytest.raises(ValueError, match="not finite"):
        fit_compute(bad)
    with pytest.raises(ValueError, match="not a positive time"):
        fit_solve_compute("cori-haswell", [("m", float("nan"), None, None)])
    with pytest.raises(ValueError, match="not a positive time"):
        fit_engine_overhead("cori-haswell", ("m", float("nan"), None, None))


def test_assess_flags_what_makes_a_calibration_untrustworthy():
    """Under load, calibrate wrote a profile with fit errors of 0.35-0.61, an eager rate 7x
    below the short one and engine_overhead at its upper bound, and said nothing."""
    from commsolve.sim.calibration import assess

    def fit(alpha, rate, err=0.05):
        return {"alpha": alpha, "rate": rate, "rel_error": err, "points": 6}

    clean_meas = {"noise": 0.1}
    clean = {"intra_node": {"short": fit(1e-6, 1e9), "eager": fit(2e-6, 3e9), "rend": fit(5e-6, 8e9)},
             "inter_node": {p: dict(fit(1e-6, 1e9), borrowed_from="intra_node") for p in ("short", "eager", "rend")},
             "solve_fit": {"at_bound": [], "rms_log_error": 0.05},
             "engine_fit": {"at_bound": False, "bound": 2e-5}}
    assert assess(clean_meas, clean) == []
    loaded = {"noise": 1.4}
    assert "the machine looks loaded" in " ".join(assess(loaded, clean))
    assert assess({"noise": float("nan")}, clean)  # NaN is not quiet
    bad = {**clean, "intra_node": {"short": fit(1e-6, 7e9, 0.61), "eager": fit(2e-6, 1e9, 0.35), "rend": fit(5e-6, 8e9)},
           "solve_fit": {"at_bound": ["call_overhead"], "rms_log_error": 0.05},
           "engine_fit": {"at_bound": True, "bound": 2e-5}}
    found = " | ".join(assess(clean_meas, bad))
    assert "intra_node.short fit is off by 61%" in found and "intra_node.eager fit is off by 35%" in found
    assert "the eager rate (1.00 GB/s) is 7x below the short one" in found
    assert "left call_overhead at the end of its search range" in found
    assert "engine_overhead sits at the fit's upper bound (20 us)" in found


def test_calibrate_measures_again_then_refuses_an_untrustworthy_result():
    from commsolve.cli.calibrate import measure_until_trusted

    def attempts(*problem_lists):
        results = iter(problem_lists)
        calls = []

        def attempt():
            calls.append(1)
            return ("profile", next(results))
        return attempt, calls

    said = []
    attempt, calls = attempts(["noisy"], ["noisy still"])
    (_, problems), refused = measure_until_trusted(attempt, False, said.append)
    assert refused and problems == ["noisy still"] and len(calls) == 2 and said == [["noisy"]]
    attempt, calls = attempts(["noisy"], [])  # quiet the second time: written
    (_, problems), refused = measure_until_trusted(attempt, False, said.append)
    assert not refused and problems == [] and len(calls) == 2
    attempt, calls = attempts(["noisy"])  # --accept-noisy: measured once, kept with its flags
    (_, problems), refused = measure_until_trusted(attempt, True, said.append)
    assert not refused and problems == ["noisy"] and len(calls) == 1
    attempt, calls = attempts([])
    assert measure_until_trusted(attempt, False, said.append)[1] is False and len(calls) == 1
