"""The theory's own verdict on where it holds (numeric.gate_hold, verify.rules.predicted_validity).

First the pieces against independent computations: the frozen-gate continuation against a plain
numpy loop of gradient descent, the floor against a numerical minimisation; then the rule; then
the verdict against trained ReLU networks on XoR, inside and outside where the theory holds.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from gdln.derive.spec import load_spec
from gdln.numeric.gate_hold import HORIZON, PARTED, SETTLED, GateHold, gate_hold, gated_floor
from gdln.verify.following import verify_report
from gdln.verify.rules import VALIDITY, predicted_validity

from .helpers import XOR_SPEC

#: the jitted continuation and the numpy loop take the same float64 steps; they differ by rounding
LOOP_RTOL = 1e-10
#: the floor against a numerical minimisation (BFGS's gradient tolerance, not the floor's)
FLOOR_RTOL = 1e-6


def _problem(seed: int, units: int = 6):
    rng = np.random.default_rng(seed)
    inputs = rng.normal(size=(8, 3))
    targets = rng.normal(size=(8, 2))
    w1 = 0.3 * rng.normal(size=(units, 3))
    w2 = 0.3 * rng.normal(size=(2, units))
    return inputs, targets, w1, w2


def _numpy_continuation(inputs, targets, w1, w2, rate, epochs):
    """Per epoch before its step: the frozen-gate loss, the strength-weighted share of moved gates
    and the loss of a ReLU network holding the same weights."""
    gates = (inputs @ w1.T > 0).astype(float)
    losses, shares, relu_losses = [], [], []
    for _ in range(epochs + 1):
        pre = inputs @ w1.T
        hidden = pre * gates
        residual = targets - hidden @ w2.T
        losses.append(0.5 * np.mean(np.sum(residual**2, axis=1)))
        relu_losses.append(0.5 * np.mean(np.sum((targets - np.maximum(pre, 0) @ w2.T) ** 2, axis=1)))
        strength = np.linalg.norm(w1, axis=1) * np.linalg.norm(w2, axis=0)
        moved = np.mean(np.abs((pre > 0) - gates), axis=0)
        shares.append(np.sum(moved * strength) / np.sum(strength))
        w1, w2 = (
            w1 + rate * ((residual @ w2) * gates).T @ inputs / len(inputs),
            w2 + rate * residual.T @ hidden / len(inputs),
        )
    return np.array(losses), np.array(shares), np.array(relu_losses)


def _hold(problems, rate, epochs, level, margin, gap_limit=np.inf):
    stack = [np.stack(a) for a in zip(*problems)]
    inputs, targets, w1, w2 = stack
    gates = np.einsum("rni,rui->rnu", inputs, w1) > 0
    initial = 0.5 * np.mean(np.sum(targets**2, axis=2), axis=1)
    runs = len(problems)
    return gate_hold(
        inputs,
        targets,
        w1,
        w2,
        gates,
        np.full(runs, rate),
        np.full(runs, epochs),
        initial,
        level=level,
        gap_limit=gap_limit,
        margin=margin,
    )


def test_the_continuation_stops_where_a_numpy_loop_sees_the_relu_gap_pass_its_limit():
    problems = [_problem(seed) for seed in range(3)]
    level, gap_limit, rate, epochs = 0.02, 0.01, 0.05, 600
    hold = _hold(problems, rate, epochs, level, margin=0.0, gap_limit=gap_limit)
    for run, problem in enumerate(problems):
        losses, shares, relu_losses = _numpy_continuation(*problem, rate, epochs)
        initial = 0.5 * np.mean(np.sum(problem[1] ** 2, axis=1))
        gaps = np.maximum.accumulate(np.abs(relu_losses - losses))
        parted = np.flatnonzero(gaps > gap_limit * initial)
        assert len(parted), "the problem must part from its ReLU network within the epochs"
        assert hold.reasons[run] == PARTED
        assert hold.epochs[run] == parted[0]
        assert hold.losses[run] == pytest.approx(losses[parted[0]], rel=LOOP_RTOL)
        assert hold.gaps[run] == pytest.approx(gaps[parted[0]], rel=LOOP_RTOL)
        moved = np.flatnonzero(shares[: parted[0] + 1] >= level)
        assert hold.moved_at[run] == (moved[0] if len(moved) else -1)


def test_the_continuation_runs_to_the_horizon_where_nothing_stops_it():
    problem = _problem(7)
    hold = _hold([problem], 0.05, 300, level=2.0, margin=-1.0)  # a share never reaches 2
    losses, _, relu_losses = _numpy_continuation(*problem, 0.05, 300)
    assert hold.reasons[0] == HORIZON and hold.epochs[0] == 300 and hold.moved_at[0] == -1
    assert hold.losses[0] == pytest.approx(losses[300], rel=LOOP_RTOL)
    assert hold.gaps[0] == pytest.approx(np.max(np.abs(relu_losses - losses)), rel=LOOP_RTOL)


def test_the_continuation_settles_when_the_loss_nears_its_floor():
    problem = _problem(3)
    margin = 0.5
    hold = _hold([problem], 0.05, 600, level=2.0, margin=margin)
    losses, _, _ = _numpy_continuation(*problem, 0.05, 600)
    initial = 0.5 * np.mean(np.sum(problem[1] ** 2, axis=1))
    first = np.flatnonzero(losses <= hold.floors[0] + margin * initial)[0]
    assert hold.reasons[0] == SETTLED and hold.epochs[0] == first


def test_runs_that_stop_leave_the_batch_and_end_as_each_run_alone(monkeypatch):
    """Runs whose horizons differ tenfold, in one batch that shrinks as they stop (to one row
    with the smallest batch patched to 1), stop where each run alone does, with its loss."""
    import gdln.numeric.sharding as sharding

    problems = [_problem(seed) for seed in range(6)]
    stack = [np.stack(a) for a in zip(*problems)]
    inputs, targets, w1, w2 = stack
    gates = np.einsum("rni,rui->rnu", inputs, w1) > 0
    initial = 0.5 * np.mean(np.sum(targets**2, axis=2), axis=1)
    horizons = np.array([60, 120, 240, 600, 1200, 2400])
    rates = np.full(6, 0.01)
    alone = [
        gate_hold(
            inputs[[r]],
            targets[[r]],
            w1[[r]],
            w2[[r]],
            gates[[r]],
            rates[[r]],
            horizons[[r]],
            initial[[r]],
            level=2.0,
            gap_limit=np.inf,
            margin=-1.0,
        )
        for r in range(6)
    ]
    monkeypatch.setattr(sharding, "SMALLEST_BATCH", 1)
    together = gate_hold(
        inputs, targets, w1, w2, gates, rates, horizons, initial, level=2.0, gap_limit=np.inf, margin=-1.0
    )
    assert list(together.reasons) == [HORIZON] * 6 and list(together.epochs) == list(horizons)
    for r, run in enumerate(alone):
        assert together.losses[r] == pytest.approx(run.losses[0], rel=LOOP_RTOL)
        assert together.gaps[r] == pytest.approx(run.gaps[0], rel=LOOP_RTOL)


def test_the_floor_is_the_least_loss_of_maps_gated_by_the_patterns():
    inputs, targets, w1, _ = _problem(11, units=4)
    gates = inputs @ w1.T > 0
    patterns = np.unique(gates.T, axis=0)
    patterns = patterns[patterns.any(axis=1)]
    shape = (len(patterns), targets.shape[1], inputs.shape[1])

    def loss(flat):
        maps = flat.reshape(shape)
        output = sum((inputs * p[:, None]) @ m.T for p, m in zip(patterns, maps))
        return 0.5 * np.mean(np.sum((targets - output) ** 2, axis=1))

    found = minimize(loss, np.zeros(int(np.prod(shape))), method="BFGS", options={"gtol": 1e-12})
    assert gated_floor(inputs, targets, gates) == pytest.approx(found.fun, rel=FLOOR_RTOL)


def _verdict(gaps, moved_at, starts, initial=1.0):
    runs = len(gaps)
    hold = GateHold(
        epochs=np.full(runs, 100),
        losses=np.full(runs, 0.1),
        floors=np.zeros(runs),
        reasons=np.full(runs, SETTLED),
        gaps=np.asarray(gaps, dtype=float),
        moved_at=np.asarray(moved_at),
    )
    return predicted_validity(hold, np.asarray(starts), np.full(runs, initial))


def test_the_rule_judges_the_largest_relu_gap_of_the_seeds_in_units_of_the_initial_loss():
    verdict = _verdict([0.2, 0.9], [-1, 100], [50, 60], initial=20.0)
    assert verdict["gates_move_at"] == 160
    assert verdict["relu_gap"] == pytest.approx(0.9 / 20.0)
    assert verdict["small_init"] and verdict["within_validity"] is True
    # one seed past the threshold is enough
    assert _verdict([0.0, 1.1], [-1, -1], [50, 60], initial=20.0)["within_validity"] is False
    held = _verdict([0.0], [-1], [10])
    assert held["gates_move_at"] is None and held["within_validity"]


def test_without_an_alignment_phase_at_every_seed_the_rule_says_outside():
    """Where a seed's phase ends at epoch 0 (init too large for the gates to settle), the
    theory's premise fails whatever its gap."""
    verdict = _verdict([0.0, 0.0], [-1, -1], [0, 60])
    assert verdict["small_init"] is False and verdict["within_validity"] is False


@pytest.mark.slow
def test_xor_above_its_valid_init_is_predicted_and_measured_outside():
    """At init 3e-2 (three times past the XoR phase diagram's edge) the trained ReLU networks
    leave the theory by more than the threshold, and the theory, before training, says so."""
    task = load_spec(XOR_SPEC).with_training(init_scale=3e-2)
    report = verify_report(task, representations=False)
    assert report["within_validity"] is False
    assert report["predicted_validity"]["within_validity"] is False
    assert report["predicted_validity"]["relu_gap"] > VALIDITY
