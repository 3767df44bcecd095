"""The one prediction object (numeric.prediction): identities first, then its kinds against each other."""

import jax
import numpy as np
import pytest

from gdln.derive.spec import context_task, task_from_dict
from gdln.numeric.initial_conditions import pathway_log_initial_strengths
from gdln.numeric.prediction import CLOSED_FORM, REDUCED_FLOW, Prediction, TaskPredictions
from gdln.verify.entries import epoch_grid, theory_stride
from gdln.verify.race import staged_report

RTOL = 1e-6  # integrator and assertion alike (reduced flow vs closed form)


def test_identities_at_zero_and_infinity(xor_task, xor_models):
    """L(0) is the initial loss 1/2 tr<yy^T>; L(t -> inf) is the network's minimum loss."""
    prediction = xor_models.prediction("xor")
    assert prediction.kind == CLOSED_FORM
    tau = xor_task.training.tau
    curve = prediction.loss_curve([0.0, 1e7], 1e-4, tau, [1.0])
    initial = float(prediction.derivation.initial_loss.subs(xor_task.parameter("Delta"), 1.0))
    assert curve[0] == pytest.approx(initial, rel=1e-6)
    assert curve[1] == pytest.approx(prediction.compiled.minimum_loss([1.0]), abs=1e-9)


def test_closed_form_and_reduced_flow_give_the_same_maps(xor_task, xor_models):
    """The closed-form maps ``sum_k a_k(t) u_k v_k^T`` equal the exact reduced flow's maps."""
    prediction = xor_models.prediction("linear")
    ts = np.linspace(0.0, 3000.0, 7)
    closed = prediction.maps(ts, 1e-3, xor_task.training.tau, [1.0])
    flow = prediction.flow
    chains = flow.solve(
        ts,
        None,
        xor_task.training.tau,
        [1.0],
        rtol=RTOL * 1e-3,
        atol=1e-14,
        log_a0=pathway_log_initial_strengths(flow.derivation.network, 1e-3),
    )
    for pathway, m in zip(flow.pathways, [np.asarray(x) for x in jax.vmap(flow.maps)(chains)]):
        np.testing.assert_allclose(np.asarray(closed[pathway.name]), m, rtol=RTOL, atol=RTOL * np.abs(m).max())


@pytest.mark.slow
def test_figure5_and_race_staged_share_one_staged_curve():
    """Section 5, K = 3: the staged curve Figure 5 draws and the one ``race --staged`` measures
    (``staged_report``, on the race's grid) agree to 1e-6 of the initial loss. Only common+2 is
    derived: racing the task's other candidates as well adds about 40 s and nothing to the check."""
    task = task_from_dict(context_task(8, 3, ["hierarchy"] * 3, "context-subsets"), "k3")
    models = TaskPredictions(task)
    training = task.training
    ts = epoch_grid(training.epochs, theory_stride(training.epochs))
    exact = models.prediction("common+2").loss_curve(ts, training.init_scale, training.tau, [])
    entry = staged_report(models, "common+2", ts, task.values(), np.asarray(exact))
    staged = models.staged_loss_curve("common+2", ts, training.init_scale, training.tau, [])
    assert models.prediction("common+2").kind == REDUCED_FLOW
    assert float(np.max(np.abs(staged - exact)) / exact[0]) == pytest.approx(entry["max_deviation"], abs=1e-6)
    assert isinstance(models.stages("common+2")[0], Prediction)
