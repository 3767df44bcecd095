"""Theory against really trained networks (in the style of neural-tangents' predict_test).

Stated tolerances: max |predicted - trained loss| / initial loss.
- GDLN trained with its explicit gates vs the closed form, a0 from its own initial weights: 0.02.
- ReLU network vs the followed ReLN from the alignment phase, gradient descent (the default):
  0.01, and t_half to 1%.
- The same with a0 from the ReLU's initial weights and gradient flow: 0.05 in the linear
  regime; 0.065 in the XoR regime, where ReLU units reach their final gates with the
  alignment phase's head start, which that model leaves out (see README).
"""

import jax.numpy as jnp
import numpy as np
import pytest

from gdln.derive import formulas
from gdln.numeric.training import gdln_layout, train_gdln
from gdln.verify.entries import epoch_grid
from gdln.verify.following import verify_report


@pytest.mark.parametrize("network, delta", [("xor", 0.8), ("linear", 3.0)])
def test_gdln_with_explicit_gates_follows_closed_form(xor_task, xor_models, network, delta):
    values = [delta]
    inputs, targets = xor_models.dataset(values)
    epochs = 4000
    run = train_gdln(inputs, targets, gdln_layout(xor_task.network(network), 4), 1e-4, 0.01, epochs, seeds=[0, 1])
    compiled = xor_models.prediction(network).compiled
    ts = epoch_grid(epochs)
    modes = compiled.modes(values)
    for seed in range(2):
        a0 = []
        for ref, (_, _, u, v) in zip(compiled.derivation.mode_refs, modes):
            w_in, w_out = (w[seed] for w in run.initial[ref.pathway])
            pathway = compiled.derivation.network.pathways[ref.pathway]
            a0.append(formulas.initial_strength_from_weights(u @ w_out, w_in @ v, 1.0))
            assert pathway.units == w_in.shape[0]
        predicted = compiled.loss_curve(ts, jnp.stack(a0), 100.0, values)
        trained = np.asarray(run.losses[seed])
        assert np.max(np.abs(predicted - trained)) / trained[0] < 0.02


@pytest.mark.parametrize(
    "delta, follows, initial_conditions, tolerance, t_half_rtol",
    [
        (0.5, "xor", "alignment", 0.01, 0.01),
        (3.0, "linear", "alignment", 0.01, 0.01),
        (0.5, "xor", "weights", 0.065, 0.03),
        (3.0, "linear", "weights", 0.05, 0.03),
    ],
)
def test_relu_network_follows_the_faster_reln(
    xor_task, xor_models, delta, follows, initial_conditions, tolerance, t_half_rtol
):
    report = verify_report(xor_task, {"Delta": delta}, models=xor_models, initial_conditions=initial_conditions)
    assert report["follows"] == follows
    by_name = {n["name"]: n for n in report["networks"] if not n["from_alignment"]}
    assert by_name[follows]["max_deviation"] <= tolerance
    other = next(n for n in by_name if n != follows)
    assert by_name[other]["max_deviation"] > 0.3
    assert by_name[follows]["t_half_predicted"] == pytest.approx(by_name[follows]["t_half_relu"], rel=t_half_rtol)


def test_training_is_bitwise_reproducible_and_seed_s_does_not_depend_on_the_seed_count(xor_models):
    """A seed gives bitwise the same run, and seed s is the same whatever the number of seeds."""
    from gdln.numeric.training import train_relu

    inputs, targets = xor_models.dataset([1.0])
    three = train_relu(inputs, targets, 16, 1e-2, 0.01, 50, seeds=[0, 1, 2])
    again = train_relu(inputs, targets, 16, 1e-2, 0.01, 50, seeds=[0, 1, 2])
    alone = train_relu(inputs, targets, 16, 1e-2, 0.01, 50, seeds=[2])
    np.testing.assert_array_equal(np.asarray(three.losses), np.asarray(again.losses))
    np.testing.assert_array_equal(np.asarray(three.losses)[2], np.asarray(alone.losses)[0])
    assert not np.array_equal(np.asarray(three.losses)[0], np.asarray(three.losses)[1])
