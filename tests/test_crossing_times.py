"""Crossing times solved on the dynamics, not read off a grid; seeds far below float range.

Identities first (the log-space logistic is formulas.mode_strength, its inversion is
the half time of the closed form, a fine grid agrees), then the race's answers: the same for every
horizon that contains them, right for init scales down to 1e-200 (against an independent
40-digit mpmath evaluation), for closed forms, the race ODE and the exact reduced flow."""

import json
import math
import tomllib

import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gdln.derive import formulas
from gdln.derive.derivation import NetworkDerivation
from gdln.derive.spec import task_from_dict
from gdln.numeric.initial_conditions import (
    expected_log_initial_strengths,
    log_expected_initial_strength,
    pathway_log_initial_strengths,
)
from gdln.numeric.integrate import integrate_ode
from gdln.numeric.prediction import TaskPredictions
from gdln.numeric.race import CompiledNetwork, crossing_time, log_mode_strength
from gdln.verify.entries import epoch_grid, theory_stride
from gdln.verify.race import race_report

from .helpers import XOR_SPEC
from .references import mode_crossing_time, mode_half_time

TAU = 100.0
DELTAS = (1e-6, 1.0, 1000.0)
INIT_SCALES = (0.1, 1e-4, 1e-40, 1e-100, 1e-160, 1e-200)
HORIZONS = (12000, 10**6, 10**8)


# --- identities ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "s, d, a0",
    [(0.25, 0.125, 1e-6), (0.9, 2.0, 1e-3), (0.4, 0.7, 0.3), (0.4, 0.7, 2.0), (1.0, 1.0, 1.0), (3.0, 0.5, 1e-300)],
)
def test_log_space_logistic_is_mode_strength(s, d, a0):
    ts = np.linspace(0.0, 20 * TAU / s * max(1.0, math.log(s / (d * a0))), 101)
    expected = formulas.mode_strength(s, d, a0, ts, TAU, np)
    got = np.asarray(log_mode_strength(s, d, math.log(a0), ts, TAU))
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-300)


def test_log_space_logistic_below_float_range():
    """a0 = e^-1000: the half time is tau/(2s) (log(s/d) + 1000) up to e^-1000, and the strength
    there is s/(2d); where a(t) is representable it is a0 e^(2st/tau) to first order."""
    s, d, log_a0 = 0.5, 0.25, -1000.0
    half = TAU / (2 * s) * (math.log(s / d) - log_a0)
    assert float(log_mode_strength(s, d, log_a0, half, TAU)) == pytest.approx(s / (2 * d), rel=1e-12)
    assert mode_crossing_time(s, d, log_a0, TAU, s / (2 * d)) == pytest.approx(half, rel=1e-14)
    early = TAU / (2 * s) * (-log_a0 - 700.0)  # a ~ e^-700, deep in the exponential phase
    assert float(log_mode_strength(s, d, log_a0, early, TAU)) == pytest.approx(math.exp(-700.0), rel=1e-9)
    assert float(log_mode_strength(s, d, -math.inf, 1e9, TAU)) == 0.0


@pytest.mark.parametrize("ratio", [1e-15, 1e-20, 2e-25, 1e-40])
def test_log_space_logistic_of_a_seed_far_above_its_end_is_exact(ratio):
    """A seed ``a0 = 3.2e-7`` far above ``s/d`` (the XoR task at Delta = 1e25 has ``s/d = 2e-25``):
    ``1 + c`` with ``c = s/(d a0) - 1`` cancelled to 0, an infinite strength at t = 0 and every
    network raced as ``never`` (issue 49). Against a 100-digit evaluation of the same logistic (at
    40 digits the reference itself loses the 1e-40 case to the same cancellation)."""
    s, a0 = 1.0, 3.2e-7
    d = s / ratio
    ts = np.array([0.0, 1e-3, 0.5, 5.0, 50.0]) * TAU / s
    got = np.asarray(log_mode_strength(s, d, math.log(a0), ts, TAU))
    with mpmath.workdps(100):
        expected = [
            float(mpmath.mpf(s / d) / (1 + (mpmath.mpf(s / d) / a0 - 1) * mpmath.exp(-2 * s * mpmath.mpf(t) / TAU)))
            for t in ts
        ]
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=0.0)


@pytest.mark.parametrize("s, d, a0", [(0.25, 0.125, 1e-6), (0.9, 2.0, 1e-3), (0.4, 0.7, 0.3), (0.4, 0.7, 1e-200)])
def test_logistic_inversion_is_mode_half_time(s, d, a0):
    assert mode_crossing_time(s, d, math.log(a0), TAU, s / (2 * d)) == pytest.approx(
        float(mode_half_time(s, d, a0, TAU)), rel=1e-12
    )
    for fraction in (0.1, 0.5, 0.9):
        strength = a0 + fraction * (s / d - a0)
        t = mode_crossing_time(s, d, math.log(a0), TAU, strength)
        assert float(log_mode_strength(s, d, math.log(a0), t, TAU)) == pytest.approx(strength, rel=1e-11)


def test_log_initial_strengths_match_formulas(xor_models):
    for units, init in [(32, 1e-4), (700, 0.1), (1, 1e-150)]:
        assert log_expected_initial_strength(units, init) == pytest.approx(
            math.log(formulas.expected_initial_strength(units, init)), rel=1e-14
        )
    assert log_expected_initial_strength(32, 1e-200) == pytest.approx(math.log(16) - 400 * math.log(10), rel=1e-14)
    compiled = xor_models.prediction("xor").compiled
    assert np.all(np.isfinite(np.asarray(expected_log_initial_strengths(compiled, 1e-200))))


def _lone_mode_task():
    data = {"inputs": [[1.0], [2.0]], "targets": [[1.0], [2.0]]}
    return task_from_dict({"data": data, "network": [{"name": "dln", "pathway": [{}]}]}, "<lone>")


def test_lone_mode_race_inverts_the_logistic_exactly():
    """One mode, s = d = 5/2 and L(a) = 5/4 (1 - a)^2: the loss falls to f L(a0) at
    a = 1 - sqrt(f) (1 - a0), reached at tau/(2s) (log(s/(d a0) - 1) - log(s/(d a) - 1))."""
    task = _lone_mode_task()
    compiled = CompiledNetwork(NetworkDerivation(task, "dln"))
    ((s, d, _, _),) = compiled.modes([])
    assert float(s) == pytest.approx(2.5) and float(d) == pytest.approx(2.5)
    for init in (1e-4, 1e-2):
        log_a0 = np.asarray(expected_log_initial_strengths(compiled, init))
        a0 = math.exp(float(log_a0[0]))
        result = compiled.race(log_a0, TAU, [], 10**6)
        for fraction in (0.5, 0.1):
            a = 1 - math.sqrt(fraction) * (1 - a0)
            expected = TAU / 5.0 * (math.log(1 / a0 - 1) - math.log(1 / a - 1))
            assert result.crossings[fraction] == pytest.approx(expected, rel=1e-11)
        if init == 1e-4:  # at 1/2 of the strength: mode_half_time
            half_strength = TAU / 5.0 * math.log(1 / a0 - 1)
            assert half_strength == pytest.approx(float(mode_half_time(2.5, 2.5, a0, TAU)), rel=1e-14)


@pytest.mark.parametrize("network", ["linear", "xor"])
def test_closed_form_crossing_agrees_with_a_fine_grid(xor_models, network):
    compiled = xor_models.prediction(network).compiled
    log_a0 = expected_log_initial_strengths(compiled, 1e-4)
    result = compiled.race(log_a0, TAU, [1.0], 12000)
    ts = np.linspace(0.0, 4000.0, 400_001)
    curve = np.asarray(compiled.loss_curve(ts, jnp.exp(log_a0), TAU, [1.0]))
    for fraction in (0.5, 0.1):
        assert result.crossings[fraction] == pytest.approx(crossing_time(ts, curve, fraction), rel=1e-8)


def test_log_space_closed_forms_match_the_compiled_derivation(xor_models):
    for network in ("linear", "xor"):
        compiled = xor_models.prediction(network).compiled
        a0 = expected_log_initial_strengths(compiled, 1e-3)
        ts = jnp.linspace(0.0, 6000.0, 61)
        np.testing.assert_allclose(
            compiled.strengths_from_log(ts, a0, TAU, [0.7]), compiled.strengths(ts, jnp.exp(a0), TAU, [0.7]), rtol=1e-12
        )


# --- the XoR race: epochs only set the horizon; init scales from 1e-200 to 0.1 --------------------
def _exact_race(compiled, delta, init_scale, horizon):
    """Crossings and the loss at the horizon from the lone-mode logistics at 40 digits (mpmath):
    a0 = units init^2 / 2 never underflows there. XoR's pathways do not interact, so
    L(a) = L_0 - sum s a + 1/2 sum d a^2 with (s, d) from the compiled modes."""
    mpmath.mp.dps = 40
    network = compiled.derivation.network
    modes = [(mpmath.mpf(float(s)), mpmath.mpf(float(d))) for s, d, _, _ in compiled.modes([delta])]
    seeds = [
        mpmath.mpf(network.pathways[ref.pathway].units) * mpmath.mpf(init_scale) ** 2 / 2
        for ref in compiled.derivation.mode_refs
    ]
    power = mpmath.mpf(float(compiled.derivation.initial_loss.subs(compiled.parameters[0], delta)))

    def loss(t):
        total = power
        for (s, d), a0 in zip(modes, seeds):
            a = (s / d) / (1 + (s / (d * a0) - 1) * mpmath.exp(-2 * s * t / TAU))
            total += -s * a + d * a**2 / 2
        return total

    initial = loss(mpmath.mpf(0))
    crossings = {}
    for fraction in (0.5, 0.1):
        level = fraction * initial
        if loss(mpmath.mpf(horizon)) > level:
            crossings[fraction] = None
            continue
        low, high = mpmath.mpf(0), mpmath.mpf(1e-3)
        while loss(high) > level:
            low, high = high, 2 * high
        for _ in range(200):
            middle = (low + high) / 2
            low, high = (middle, high) if loss(middle) > level else (low, middle)
        crossings[fraction] = float((low + high) / 2)
    return crossings


class _Races(dict):
    """``race_report`` of examples/xor.toml by ``(Delta, init_scale, epochs)``, computed once."""

    def __init__(self, task, models):
        super().__init__()
        self.task, self.models = task, models

    def __missing__(self, key):
        delta, init, horizon = key
        self[key] = race_report(
            self.task.with_training(epochs=horizon, init_scale=init), {"Delta": delta}, models=self.models
        )
        return self[key]


@pytest.fixture(scope="module")
def xor_races(xor_task, xor_models):
    return _Races(xor_task, xor_models)


@pytest.mark.parametrize("delta", DELTAS)
def test_race_is_the_same_for_every_horizon_and_exact_for_every_seed(xor_races, xor_models, delta):
    for init in INIT_SCALES:
        exact = {
            name: _exact_race(xor_models.prediction(name).compiled, delta, init, HORIZONS[-1])
            for name in ("linear", "xor")
        }
        for horizon in HORIZONS:
            report = xor_races[delta, init, horizon]
            assert report["horizon"] == horizon
            for entry in report["networks"]:
                for key, fraction in (("t_half", 0.5), ("t_90", 0.1)):
                    expected = exact[entry["name"]][fraction]
                    if expected is None or expected > horizon:
                        assert entry[key] is None, (delta, init, horizon, entry["name"], key)
                    else:
                        assert entry[key] == pytest.approx(expected, rel=1e-9), (
                            delta,
                            init,
                            horizon,
                            entry["name"],
                            key,
                        )
            reached = {
                name: times[0.1] for name, times in exact.items() if times[0.1] is not None and times[0.1] <= horizon
            }
            if reached:
                assert report["winner"] == min(reached, key=reached.get), (delta, init, horizon)
                assert report["ranking"][0] == report["winner"]


def test_the_issue_cases(xor_task, xor_races, xor_models):
    """epochs = 1e6 at init 0.1 and Delta = 1000: linear wins (the grid named xor); init 1e-200
    at Delta = 1: finite crossings near 1.2e5 and 1.8e5; init 1e-160: crossings near 1e5."""
    assert xor_races[1000.0, 0.1, 10**6]["winner"] == "linear"
    for init, low, high in ((1e-200, 1.2e5, 1.9e5), (1e-160, 9e4, 1.5e5)):
        report = xor_races[1.0, init, 10**6]
        times = {n["name"]: n["t_90"] for n in report["networks"]}
        assert low < times["xor"] < times["linear"] < high and report["winner"] == "xor"
    # epochs = 10**30 (beyond the spec's limit, so through the API): the faster network wins
    huge = race_report(xor_task.with_training(epochs=10**30), {"Delta": 1.0}, models=xor_models)
    assert huge["winner"] == "xor" and huge["horizon"] == 10**30
    assert [n["t_90"] for n in huge["networks"]] == [n["t_90"] for n in xor_races[1.0, 1e-4, 12000]["networks"]]
    json.dumps(huge.to_json(), allow_nan=False)


def test_crossing_beyond_the_horizon_is_null(xor_task, xor_models):
    report = race_report(xor_task.with_training(epochs=2000), {"Delta": 1.0}, models=xor_models)
    xor = next(n for n in report["networks"] if n["name"] == "xor")
    assert report["horizon"] == 2000 and xor["t_half"] == pytest.approx(1914.8338541, rel=1e-9) and xor["t_90"] is None
    assert report["winner"] == "xor"  # neither reaches 10%: the lower loss at the horizon wins
    assert 0.1 < xor["final_loss"] < next(n for n in report["networks"] if n["name"] == "linear")["final_loss"]


def test_predicted_curve_from_a_seed_below_float_range(xor_task, xor_models):
    times = {
        n["name"]: n["t_90"]
        for n in race_report(
            xor_task.with_training(epochs=10**6, init_scale=1e-160), {"Delta": 1.0}, models=xor_models
        )["networks"]
    }
    curve = xor_models.prediction("xor").loss_curve([0.0, times["xor"]], 1e-160, xor_task.training.tau, [1.0])
    assert curve[1] / curve[0] == pytest.approx(0.1, rel=1e-9)


def test_epoch_grid_counts_in_integers():
    np.testing.assert_array_equal(epoch_grid(12000), np.arange(12001, dtype=float))
    np.testing.assert_array_equal(epoch_grid(12000, 12), np.arange(0, 12001, 12, dtype=float))
    huge = epoch_grid(10**30, theory_stride(10**30))
    assert len(huge) == 1001 and huge[-1] == 1e30


# --- the race ODE (deeper pathways: no closed form) ----------------------------------------------
@pytest.fixture(scope="module")
def deep_xor():
    with open(XOR_SPEC, "rb") as handle:
        document = tomllib.load(handle)
    for network in document["network"]:
        for pathway in network["pathway"]:
            pathway["hidden_layers"] = 2
    task = task_from_dict(document, "<deep xor>")
    return task, TaskPredictions(task)


def test_log_race_ode_is_the_race_ode(deep_xor):
    _, models = deep_xor
    compiled = models.prediction("xor").compiled
    a = jnp.array([1e-3, 0.2, 0.5, 1.7])
    args = (jnp.float64(TAU), jnp.float64(0.8))
    np.testing.assert_allclose(
        np.asarray(compiled.log_ode(0.0, jnp.log(a), args)) * np.asarray(a),
        np.asarray(compiled.ode(0.0, a, args)),
        rtol=1e-13,
    )


def test_race_ode_crossings_agree_with_a_fine_grid_and_ignore_the_horizon(deep_xor):
    _, models = deep_xor
    compiled = models.prediction("xor").compiled
    assert not compiled.uses_closed_form
    log_a0 = expected_log_initial_strengths(compiled, 1e-2)
    results = [compiled.race(log_a0, TAU, [1.0], horizon) for horizon in HORIZONS]
    assert all(r.crossings == results[0].crossings for r in results)
    ts = np.linspace(0.0, 3000.0, 60_001)
    curve = np.asarray(
        compiled.loss_of_strengths(
            integrate_ode(compiled.ode, jnp.exp(log_a0), ts, (TAU, 1.0), rtol=1e-12, atol=1e-16), [1.0]
        )
    )
    for fraction in (0.5, 0.1):
        assert results[0].crossings[fraction] == pytest.approx(crossing_time(ts, curve, fraction), rel=1e-7)


# --- the exact reduced flow (interacting pathways without closed forms) ---------------------------
@pytest.fixture(scope="module")
def overlap():
    """XoR data, one always-on pathway and one on datapoints 0 and 3: they interact, and have no
    shared basis, so the race follows the exact reduced flow."""
    with open(XOR_SPEC, "rb") as handle:
        document = tomllib.load(handle)
    document["network"] = [{"name": "overlap", "pathway": [{"name": "all"}, {"name": "pos", "active": [0, 3]}]}]
    task = task_from_dict(document, "<overlap>")
    models = TaskPredictions(task)
    assert models.prediction("overlap").uses_flow
    return task, models


@pytest.mark.slow
def test_reduced_flow_crossings_agree_with_a_fine_grid_and_ignore_the_horizon(overlap):
    task, models = overlap
    flow = models.prediction("overlap").flow
    log_a0 = pathway_log_initial_strengths(flow.derivation.network, 1e-4)
    results = [flow.race(log_a0, TAU, [1.0], horizon) for horizon in HORIZONS]
    assert all(r.crossings == results[0].crossings for r in results)
    ts = np.linspace(0.0, 2000.0, 20_001)
    curve = np.asarray(flow.trajectory(ts, jnp.exp(log_a0), TAU, [1.0], rtol=1e-12).loss)
    for fraction in (0.5, 0.1):
        assert results[0].crossings[fraction] == pytest.approx(crossing_time(ts, curve, fraction), rel=1e-7)
    report = race_report(task.with_training(epochs=10**8), {"Delta": 1.0}, models=models)
    assert (
        report["networks"][0]["dynamics"] == "reduced flow"
        and report["networks"][0]["t_90"] == results[0].crossings[0.1]
    )


@pytest.mark.parametrize("init", [1e-5, 1e-6])
def test_reduced_flow_tiny_factors_stay_under_relative_control(overlap, init):
    """A flow whose smallest starting layer factor lies below ``atol / rtol`` solves with its
    absolute tolerance lowered to ``rtol`` times that factor (``relative_floor``): its crossings
    agree with a solve at a hundred times tighter tolerances."""
    _, models = overlap
    flow = models.prediction("overlap").flow
    log_a0 = pathway_log_initial_strengths(flow.derivation.network, init)
    problem = flow.race_ode(log_a0, TAU, [1.0])
    scale = flow.start(log_a0, TAU, [1.0])[2]
    assert scale < 1e-14 / 1e-10 and problem.atol == pytest.approx(1e-10 * scale, rel=1e-12)
    default = flow.race(log_a0, TAU, [1.0], 10**6)
    tight = flow.race(log_a0, TAU, [1.0], 10**6, rtol=1e-12)
    for fraction in (0.5, 0.1):
        assert default.crossings[fraction] == pytest.approx(tight.crossings[fraction], rel=1e-9)


@pytest.mark.parametrize("init", [1e-8, 1e-100, 1e-200])
def test_reduced_flow_from_tiny_seeds(overlap, init):
    """Seeds below LINEAR_PHASE_END start the flow at the analytic end of the linear phase; the
    crossings agree with integrating the whole flow from t = 0 (possible for this small flow)."""
    _, models = overlap
    flow = models.prediction("overlap").flow
    log_a0 = pathway_log_initial_strengths(flow.derivation.network, init)
    t0, _, _ = flow.start(log_a0, TAU, [1.0])
    assert t0 > 0
    shifted = flow.race(log_a0, TAU, [1.0], 10**8)
    flow.LINEAR_PHASE_END = 0.0  # an instance attribute: no shift
    try:
        assert flow.start(log_a0, TAU, [1.0])[0] == 0.0
        whole = flow.race(log_a0, TAU, [1.0], 10**8)
    finally:
        del flow.LINEAR_PHASE_END
    for fraction in (0.5, 0.1):
        assert shifted.crossings[fraction] == pytest.approx(whole.crossings[fraction], rel=1e-8)
    if init == 1e-200:
        assert 9e4 < shifted.crossings[0.1] < 1e5


def test_reduced_flow_least_loss_is_the_quadratic_minimum():
    """The per-feature least squares of ReducedFlow._minimum_loss against the minimum of the whole
    quadratic (Hessian from jax) on a network that cannot fit every datapoint."""
    import jax
    from jax.flatten_util import ravel_pytree

    with open(XOR_SPEC, "rb") as handle:
        document = tomllib.load(handle)
    # datapoint 3 is in no pathway: the least loss is its share, 1/8 of the mean squared target
    document["network"] = [
        {"name": "partial", "pathway": [{"name": "a", "active": [0, 1]}, {"name": "b", "active": [1, 2]}]}
    ]
    task = task_from_dict(document, "<partial>")
    models = TaskPredictions(task)
    assert models.prediction("partial").uses_flow
    flow = models.prediction("partial").flow
    for delta in (0.3, 1.0, 3.0):
        sigma_yx, sigma_x, power = flow.correlations([delta])
        zero, unravel = ravel_pytree([jnp.zeros((len(p.outputs), len(p.inputs))) for p in flow.pathways])

        def loss(flat, sigma_yx=sigma_yx, sigma_x=sigma_x, power=power):
            return flow.loss(unravel(flat), sigma_yx, sigma_x, power)

        best = np.linalg.lstsq(np.asarray(jax.hessian(loss)(zero)), -np.asarray(jax.grad(loss)(zero)), rcond=None)[0]
        assert flow._minimum_loss([delta]) == pytest.approx(float(loss(jnp.asarray(best))), rel=1e-12, abs=1e-15)
        assert flow._minimum_loss([delta]) == pytest.approx(0.125, rel=1e-12)
    # its least loss is above 10% of the initial loss: t_90 is null at every horizon, t_half is not
    log_a0 = pathway_log_initial_strengths(flow.derivation.network, 1e-4)
    results = [flow.race(log_a0, TAU, [1.0], horizon) for horizon in (12000, 10**8)]
    assert [r.crossings[0.1] for r in results] == [None, None]
    assert results[0].crossings[0.5] == results[1].crossings[0.5] is not None
    assert results[1].final_loss == pytest.approx(flow._minimum_loss([1.0]) / results[1].initial_loss, rel=1e-8)


def test_group_closed_forms_in_log_space_match_the_exact_flow():
    """Interacting symmetric pathways with a group closed form (Section 5 residual, d from the
    group coupling): the log-space race agrees with the exact reduced flow's race."""
    from gdln.derive.spec import context_task
    from gdln.derive.staged import StagedDerivation
    from gdln.numeric.reduced_flow import ReducedFlow

    task = task_from_dict(context_task(8, 3, ["hierarchy"] * 3, "context-subsets"), "<section5>")
    second = StagedDerivation(task, "common+2").second_stage
    assert second.has_closed_form and second.cross_correlations
    compiled = CompiledNetwork(second)
    closed = compiled.race(expected_log_initial_strengths(compiled, 1e-4), TAU, [], 10**6)
    exact = ReducedFlow(second).race(pathway_log_initial_strengths(second.network, 1e-4), TAU, [], 10**6)
    for fraction in (0.5, 0.1):
        assert closed.crossings[fraction] == pytest.approx(exact.crossings[fraction], rel=1e-6)


def test_no_winner_when_nothing_is_learnt_within_the_horizon(xor_races):
    """init 1e-200 and 12000 epochs: neither network has moved at the horizon (both losses are
    1.0 in double precision), so the race names no winner rather than the first listed."""
    report = xor_races[1.0, 1e-200, 12000]
    assert [n["final_loss"] for n in report["networks"]] == [1.0, 1.0] and report["winner"] is None
    assert xor_races[1.0, 1e-200, 10**6]["winner"] == "xor"


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.lists(
        st.lists(st.floats(-1.0, 2.0) | st.just(math.nan) | st.just(math.inf), min_size=2, max_size=12),
        min_size=1,
        max_size=6,
    ).filter(lambda rows: len({len(r) for r in rows}) == 1),
    st.sampled_from([0.1, 0.5, 0.9]),
)
def test_finite_crossings_row_by_row(rows, fraction):
    """The batched crossing of sampled curves equals a plain loop over each row's samples."""
    from gdln.verify.rules import finite_crossings

    ts = np.cumsum(np.arange(1, len(rows[0]) + 1, dtype=float))
    got = finite_crossings(ts, np.array(rows), fraction)
    for row, value in zip(rows, got):
        expected = math.nan
        if math.isfinite(row[0]) and row[0] > 0:
            level = fraction * row[0]
            for k, sample in enumerate(row):
                if not math.isfinite(sample):
                    break
                if sample <= level:
                    if k == 0:
                        expected = ts[0]
                    else:
                        expected = ts[k - 1] + (row[k - 1] - level) / (row[k - 1] - sample) * (ts[k] - ts[k - 1])
                    break
        assert (math.isnan(expected) and math.isnan(value)) or value == pytest.approx(expected, rel=1e-12)
