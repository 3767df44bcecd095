"""``gdln sweep``: identities first (the batched pieces against their one-point originals), then
the sweep against ``race``/``verify`` at the same points, then bad input."""

import json
import tomllib

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from gdln.cli import main
from gdln.derive.spec import load_spec, task_from_dict
from gdln.numeric.training import initial_relu_weights, train_relu, train_relu_points
from gdln.verify.following import verify_report
from gdln.verify.progress import shown_progress
from gdln.verify.race import race_report
from gdln.verify.sweep import parse_axis, sweep_report
from gdln.verify.sweep_checks import check_points

from .helpers import FUZZ, ROOT, XOR_SPEC, run_cli

#: the sweep's crossing times against race's: closed forms bisected to ~1e-13, ODE races solved at
#: the sweep's SWEEP_RTOL (1e-8) against race's 1e-10 (on Section 4 within 5e-10 of each other)
CROSSING_RTOL = 1e-6
#: the sweep's final loss against race's: a race that settles stops within SETTLED_TOLERANCE (1e-10)
#: of the initial loss above the least loss, the sweep at the first such step, race at a segment's end
FINAL_ATOL = 1e-9


@pytest.fixture(scope="module")
def xor():
    return load_spec(XOR_SPEC)


def test_batched_training_is_train_relu(xor):
    """Runs that differ in data, init scale and step train as train_relu trains each alone."""
    from gdln.numeric.prediction import TaskPredictions

    models = TaskPredictions(xor)
    points = [(0.5, 1e-3, 0.01), (2.0, 1e-2, 0.02)]
    w1, w2 = (np.asarray(w) for w in initial_relu_weights(16, 3, 1, 1.0, range(2)))
    inputs, targets, w1s, w2s, rates, expected = [], [], [], [], [], []
    for delta, scale, rate in points:
        x, y = (np.asarray(a) for a in models.dataset([delta]))
        run = train_relu(x, y, 16, scale, rate, 300, range(2))
        expected.append(np.asarray(run.losses))
        for seed in range(2):
            inputs.append(x)
            targets.append(y)
            w1s.append(scale * w1[seed])
            w2s.append(scale * w2[seed])
            rates.append(rate)
    got = train_relu_points(np.stack(inputs), np.stack(targets), np.stack(w1s), np.stack(w2s), np.array(rates), 300)
    np.testing.assert_allclose(got, np.concatenate(expected), rtol=1e-12, atol=0)


def test_batched_chain_starts_are_the_aligned_maps_seed_by_seed():
    """The sweep's starts of depth-2 chains (numeric.sweep.aligned_maps_batch, then
    GatedChains.starts) are verify's seed by seed: the maps of the units that start each
    pathway, factored balanced, on Section 4's networks (pathways on some of the inputs)."""
    from gdln.numeric.alignment import align
    from gdln.numeric.data import NumericDataset
    from gdln.numeric.gated_chains import GatedChains
    from gdln.numeric.initial_conditions import aligned_maps
    from gdln.numeric.sweep import aligned_maps_batch

    task = load_spec(ROOT / "examples" / "section4_context.toml")
    x, y = (np.asarray(a) for a in NumericDataset(task)([]))
    w1, w2 = (np.asarray(w) for w in initial_relu_weights(16, task.num_inputs, task.num_outputs, 1e-2, range(2)))
    phase = align(x, y, w1, w2, 0.01, horizon=200)
    for network in task.networks:
        maps = aligned_maps_batch(network, phase)
        first, last = GatedChains(network, x, y).starts(maps)
        for seed in range(2):
            for p, expected in enumerate(aligned_maps(network, phase, seed)):
                pathway = network.pathways[p]
                np.testing.assert_allclose(maps[p][seed], expected, rtol=1e-12, atol=1e-15)
                product = last[seed, p] @ first[seed, p]
                np.testing.assert_allclose(product[np.ix_(pathway.outputs, pathway.inputs)], expected, atol=1e-14)
                assert not product[:, np.setdiff1d(range(task.num_inputs), pathway.inputs)].any()
                balance = first[seed, p] @ first[seed, p].T - last[seed, p].T @ last[seed, p]
                np.testing.assert_allclose(balance, 0.0, atol=1e-14)


def test_sweep_crossings_are_the_race_at_each_point(xor):
    axes = [parse_axis("Delta=0.5:3:4", xor), parse_axis("init_scale=1e-6:1e-2:3:log", xor)]
    report = sweep_report(xor, axes)
    assert len(report["points"]) == 12
    for point in report["points"][::5]:
        trained = xor.with_training(init_scale=point["values"]["init_scale"])
        race = race_report(trained, {"Delta": point["values"]["Delta"]})
        assert point["winner"] == race["winner"]
        for mine, theirs in zip(point["networks"], race["networks"]):
            assert mine["name"] == theirs["name"]
            for key in ("t_half", "t_90"):
                assert mine[key] == pytest.approx(theirs[key], rel=CROSSING_RTOL)
            assert mine["final_loss"] == pytest.approx(theirs["final_loss"], abs=1e-12)


def test_width_seeded_xor_boundary_is_the_derived_delta_star(xor):
    """THEORY section 9: on XoR the width-seeded race switches exactly at Delta* at every init."""
    axes = [parse_axis("Delta=1.5:1.8:13", xor), parse_axis("init_scale=1e-6:1e-2:3:log", xor)]
    report = sweep_report(xor, axes)
    (crossover,) = report["crossovers"]
    delta_star = crossover["value"]
    assert delta_star == pytest.approx(2 * np.sqrt(6) / 3, rel=1e-12)
    for point in report["points"]:
        expected = "xor" if point["values"]["Delta"] < delta_star else "linear"
        assert point["winner"] == expected


def test_check_points_reach_the_boundary():
    labels = np.array([0, 0, 0, 1, 1, 1, 1, 1] * 8)  # 8 x 8 grid, boundary between columns 2 and 3
    chosen = check_points(labels, (8, 8), 6, np.ones(64, dtype=bool))
    assert len(chosen) == 6
    near = [i for i in chosen if i % 8 in (2, 3)]
    assert len(near) >= 3


def test_check_points_on_the_boundary_only_where_it_is_claimed():
    """The boundary half stays where the theory claims the boundary (its assumptions hold); the
    spread half still reaches the rest of the grid."""
    labels = np.array([0, 0, 0, 1, 1, 1, 1, 1] * 8)  # boundary between columns 2 and 3 on every row
    claimed = np.repeat(np.arange(8) < 4, 8)  # rows 0-3 (flat index row * 8 + column)
    chosen = check_points(labels, (8, 8), 8, np.ones(64, dtype=bool), claimed=claimed)
    near = [i for i in chosen if i % 8 in (2, 3)]
    assert len(near) >= 4 and all(claimed[i] for i in near)
    assert any(not claimed[i] for i in chosen)
    # where the theory claims none of the boundary, the checks still go next to it
    nowhere = check_points(labels, (8, 8), 8, np.ones(64, dtype=bool), claimed=np.zeros(64, dtype=bool))
    assert len([i for i in nowhere if i % 8 in (2, 3)]) >= 4


def _covering_radius(chosen, shape) -> float:
    """The largest distance from a grid point to its nearest chosen point, in index units."""
    every = np.stack(np.unravel_index(np.arange(np.prod(shape)), shape), axis=1)
    points = np.stack(np.unravel_index(np.asarray(chosen), shape), axis=1)
    return float(np.sqrt(((every[:, None, :] - points[None]) ** 2).sum(-1)).min(axis=1).max())


@pytest.mark.parametrize(("count", "lattice"), [(16, (4, 4)), (32, (4, 8))])
def test_spread_points_cover_the_plane(count, lattice):
    """Farthest-point sampling leaves no grid point farther from a chosen one than twice the
    covering radius of a regular lattice of as many points (its guarantee against the best
    placement, which is no worse than the lattice); points evenly spaced in flat index lie on
    diagonals and miss that at 32 points (radius 27.8 against 17.9). None is taken twice, none
    where it may not be, and none next to the points already taken."""
    from gdln.verify.sweep_checks import spread_points

    shape = (64, 64)
    free = np.ones(64 * 64, dtype=bool)
    free[:64] = False  # the first row of the first axis may not be chosen
    chosen = spread_points(shape, count, free, np.zeros(0, dtype=int))
    assert len(set(chosen.tolist())) == count and free[chosen].all()
    rows, columns = 64 / np.array(lattice)[:, None] * (np.arange(max(lattice)) + 0.5)
    centres = [(r, c) for r in rows[: lattice[0]] for c in columns[: lattice[1]]]
    every = np.stack(np.unravel_index(np.arange(4096), shape), axis=1)
    lattice_radius = np.sqrt(((every[:, None, :] - np.array(centres)[None]) ** 2).sum(-1)).min(axis=1).max()
    assert _covering_radius(chosen, shape) <= 2 * lattice_radius
    taken = np.ravel_multi_index((np.arange(64), np.full(64, 30)), shape)  # a boundary down column 30
    free[taken] = False
    away = spread_points(shape, 4, free, taken)
    assert np.min(np.abs(np.unravel_index(away, shape)[1] - 30)) >= 16


#: the sweep's alignment-seeded t_half against verify's predicted t_half at the same point: the
#: sweep runs init scales as members of one phase run (numeric.alignment.run_phase: a member's
#: answer is its own up to the rounding of a logarithm, ~1e-16), sums the units that start a
#: pathway as masked products and descends runs batched; on XoR and Section 4 the two agree to
#: 2e-14 (measured), and t_half is a crossing of the mean of smooth curves
ALIGNED_RTOL = 1e-9


def _verify_aligned_t_half(task, models, values: dict, init_scale: float) -> dict:
    """Each candidate's t_half as ``gdln verify --initial-conditions alignment`` predicts it at a
    point (the phase of the point's own seeds, then verify's curves), without training."""
    from gdln.verify.entries import epoch_grid, theory_stride
    from gdln.verify.following import candidate_predictions, predicted_relu_curves, relu_alignment
    from gdln.verify.following import relu_initial_weights as point_weights
    from gdln.verify.rules import finite_crossing

    trained = task.with_training(init_scale=init_scale)
    values = trained.values(values)
    initial = point_weights(trained, trained.training)
    alignment = relu_alignment(models, initial, values, trained.training)
    ts = epoch_grid(trained.training.epochs, theory_stride(trained.training.epochs))
    curves = predicted_relu_curves(
        models, candidate_predictions(models), initial, values, trained.training, ts, alignment=alignment
    )
    return {name: finite_crossing(ts, curve, 0.5) for name, curve in curves.items()}


def _same_aligned_t_half(point: dict, expected: dict) -> None:
    for entry in point["networks"]:
        theirs = expected[entry["name"]]
        assert (entry["aligned_t_half"] is None) == (theirs is None), (point["values"], entry, theirs)
        if theirs is not None:
            assert entry["aligned_t_half"] == pytest.approx(theirs, rel=ALIGNED_RTOL), (point["values"], entry)


@pytest.mark.slow
def test_aligned_race_and_check_are_verify_at_the_point(xor):
    """At a checked point the sweep's alignment-seeded t_half is verify's predicted t_half, and the
    candidate it says the trained network follows is verify's."""
    # init scales share one phase per seed, scaled (numeric.alignment.run_phase): not the smallest too
    axes = [parse_axis("Delta=1.0:1.9:2", xor), parse_axis("init_scale=1e-5:1e-3:2:log", xor)]
    report = sweep_report(xor, axes, check=4)
    for point in report["points"]:
        trained = xor.with_training(init_scale=point["values"]["init_scale"])
        verified = verify_report(trained, {"Delta": point["values"]["Delta"]}, representations=False)
        by_name = {n["name"]: n for n in verified["networks"]}
        for entry in point["networks"]:
            assert entry["aligned_t_half"] == pytest.approx(
                by_name[entry["name"]]["t_half_predicted"], rel=ALIGNED_RTOL
            )
        assert point["checked"]["follows"] == verified["follows"]
        assert point["checked"]["max_deviation"] == pytest.approx(
            by_name[verified["follows"]]["max_deviation"], rel=1e-6
        )


#: a point's floats in a grid against the point alone: the batches differ in size (vmapped runs,
#: parts per core, descent chunks), which may round the last bits differently; margins are
#: differences of two times, so they are compared to the same number absolutely too
ALONE_RTOL = 1e-12


def _same_entry(mine, theirs, where="point"):
    """Every field of two JSON point entries: floats to :data:`ALONE_RTOL`, everything else equal."""
    assert type(mine) is type(theirs), (where, mine, theirs)
    if isinstance(mine, dict):
        assert mine.keys() == theirs.keys(), where
        for key in mine:
            _same_entry(mine[key], theirs[key], f"{where}.{key}")
    elif isinstance(mine, list):
        assert len(mine) == len(theirs), where
        for k, (a, b) in enumerate(zip(mine, theirs)):
            _same_entry(a, b, f"{where}[{k}]")
    elif isinstance(mine, float):
        assert mine == pytest.approx(theirs, rel=ALONE_RTOL, abs=ALONE_RTOL), (where, mine, theirs)
    else:
        assert mine == theirs, (where, mine, theirs)


#: the point every drawn grid holds, and its init scale's exponent span: float64's whole range
#: up to the spec's largest init scale (issue 40: a span above 1e77 corrupted every point)
FIXED_POINT = {"init_scale": 1e-4, "Delta": 1.0}


@st.composite
def grid_around_fixed_point(draw):
    """Axes of a grid that holds :data:`FIXED_POINT` exactly (as an axis' start or stop): an
    init-scale axis to anywhere from 1e-300 to 1e3, and at times a Delta axis."""
    other = 10.0 ** draw(st.floats(-300, 3))
    start, stop = sorted((FIXED_POINT["init_scale"], other))
    axes = [_axis("init_scale", repr(start), repr(stop), draw(st.integers(2, 3)), draw(st.sampled_from(["", ":log"])))]
    if draw(st.booleans()):
        start, stop = sorted((FIXED_POINT["Delta"], draw(st.floats(0.25, 4.0))))
        axes.append(_axis("Delta", repr(start), repr(stop), draw(st.integers(1, 2))))
    return axes


@pytest.mark.slow
@settings(max_examples=5, **FUZZ)
@given(grids=grid_around_fixed_point())
def test_a_point_s_answer_does_not_depend_on_the_rest_of_the_grid(xor, grids):
    """Issue 40: the entry of a fixed point in a drawn grid is the entry of that point alone,
    field by field (winners, margins, crossings, alignment-seeded times, the phase's epochs)."""
    axes = [parse_axis(text, xor) for text in grids]
    names = [a.name for a in axes]
    alone = sweep_report(xor, [parse_axis(f"{n}={FIXED_POINT[n]!r}:{FIXED_POINT[n]!r}:1", xor) for n in names])
    found = [p for p in sweep_report(xor, axes)["points"] if p["values"] == {n: FIXED_POINT[n] for n in names}]
    assert len(found) == 1, grids
    _same_entry(found[0], alone["points"][0])


def _same_race(point: dict, race: dict) -> None:
    """The sweep's entries at a point are race's at that point: winner, crossings, final loss."""
    assert point["winner"] == race["winner"]
    for mine, theirs in zip(point["networks"], race["networks"], strict=True):
        assert mine["name"] == theirs["name"]
        for key in ("t_half", "t_90"):
            assert (mine[key] is None) == (theirs[key] is None), (key, mine, theirs)
            if theirs[key] is not None:
                assert mine[key] == pytest.approx(theirs[key], rel=CROSSING_RTOL)
        assert mine["final_loss"] == pytest.approx(theirs["final_loss"], rel=CROSSING_RTOL, abs=FINAL_ATOL)


@pytest.fixture(scope="module")
def ode_task():
    """XoR data and two candidates without closed forms: XoR's pathways two hidden layers deep
    (the race ODE), and an always-on pathway with one on datapoints 0 and 3 (the reduced flow)."""
    from gdln.numeric.prediction import TaskPredictions

    with open(XOR_SPEC, "rb") as handle:
        document = tomllib.load(handle)
    deep = next(n for n in document["network"] if n["name"] == "xor")
    deep["name"] = "deep"
    for pathway in deep["pathway"]:
        pathway["hidden_layers"] = 2
    document["network"] = [deep, {"name": "overlap", "pathway": [{"name": "all"}, {"name": "pos", "active": [0, 3]}]}]
    task = task_from_dict(document, "<odes>")
    models = TaskPredictions(task)
    assert [models.prediction(n).kind for n in ("deep", "overlap")] == ["race ODE", "reduced flow"]
    return task, models


@pytest.mark.slow
def test_ode_sweep_is_the_race_at_each_point(ode_task, capsys):
    """The batched solve of race ODEs and reduced flows gives race's answers at every point: init
    scales from a plain start to seeds below float range (the flow's linear phase, past the
    horizon at 1e-100), at two values of Delta. The alignment-seeded race runs too, on weight
    chains (interacting depth-2 pathways, and pathways two hidden layers deep), and gives
    verify's predicted t_half where the phase ends within the horizon (init 1e-2) and none
    where it does not."""
    task, models = ode_task
    axes = [parse_axis("Delta=0.5:2:2", task), parse_axis("init_scale=1e-100:1e-2:4:log", task)]
    with shown_progress():  # as `gdln sweep` runs it
        report = sweep_report(task, axes, models=models)
    assert report["seeds"]["aligned"] is not None
    progress = capsys.readouterr().err
    assert "sweep 1/2: width-seeded race at 8 points" in progress
    assert "sweep 2/2: alignment-seeded race at 8 points" in progress
    for point in report["points"]:
        trained = task.with_training(init_scale=point["values"]["init_scale"])
        _same_race(point, race_report(trained, {"Delta": point["values"]["Delta"]}, models=models))
        if point["values"]["init_scale"] == 1e-2:
            assert point["assumptions"]["small_init"] and point["aligned_winner"] is not None
            expected = _verify_aligned_t_half(task, models, {"Delta": point["values"]["Delta"]}, 1e-2)
            _same_aligned_t_half(point, expected)
        elif point["values"]["init_scale"] == 1e-100:
            # the phase runs to the horizon: its output never reaches its share of the targets
            assert point["assumptions"]["phase_epochs"] == [task.training.epochs] * task.training.seeds
            assert [n["aligned_t_half"] for n in point["networks"]] == [None, None]


def test_batched_ode_crossings_ignore_the_horizon(ode_task):
    """As race's: the steps do not depend on the horizon, so neither do the crossings; a horizon
    of 1e8 epochs ends once the loss has settled."""
    from gdln.numeric.sweep import ode_race_points

    _, models = ode_task
    for name in ("deep", "overlap"):
        prediction = models.prediction(name)
        scales = np.array([1e-2, 1e-4])
        logs = np.stack([np.asarray(prediction.log_initial_strengths(s)) for s in scales])
        values, tau = np.array([[1.0], [1.5]]), np.array([100.0, 50.0])
        short, long = (ode_race_points(prediction.engine, values, logs, tau, h) for h in (12000, 10**8))
        within = np.isfinite(short.crossings)  # null: after 12000 epochs
        assert within.any() and np.all(np.isfinite(long.crossings)) and np.all(long.crossings[~within] > 12000)
        np.testing.assert_array_equal(short.crossings[within], long.crossings[within])
        assert np.all(long.final_loss < 1e-9)


def test_batched_race_stops_as_race_does(ode_task):
    """A point that runs out of steps stops there, its crossings after it unknown and its final
    loss read there; a point whose initial loss is not positive has no race; neither changes
    what the other points of its batch compute."""
    from dataclasses import replace

    from gdln.numeric.batched_race import ode_races

    _, models = ode_task
    prediction = models.prediction("overlap")
    problems = [
        prediction.flow.race_ode(np.asarray(prediction.log_initial_strengths(s)), 100.0, [1.0]) for s in (1e-2, 1e-4)
    ]
    whole = ode_races(problems, (0.5, 0.1), 12000)
    assert np.all(np.isnan(whole.stopped_at)) and np.all(np.isfinite(whole.crossings))
    short = ode_races(problems, (0.5, 0.1), 12000, budget=20)
    np.testing.assert_array_equal(short.steps, [20, 20])
    assert np.all(short.stopped_at < whole.crossings[:, 0]) and np.all(np.isnan(short.crossings))
    assert np.all((short.final_loss > 0.5) & (short.final_loss <= 1.0))
    mixed = ode_races([problems[0], replace(problems[1], initial_loss=0.0)], (0.5, 0.1), 12000)
    np.testing.assert_array_equal(mixed.crossings[0], whole.crossings[0])
    assert mixed.final_loss[0] == whole.final_loss[0]
    assert np.all(np.isnan(mixed.crossings[1])) and np.isnan(mixed.final_loss[1])


#: a race ODE solved in batches at rtol 1e-8 against its closed forms: within 7.2e-9 on XoR's
#: candidates over init scales 1e-8 to 3e-2 (python -m bench.bench_tolerance has the sweep's errors)
BATCHED_RTOL = 1e-7


def test_crossing_interpolant_is_diffrax_dense_output():
    """The batched race reads a crossing off its step's interpolant
    (:func:`numeric.batched_race.tsit5_step`): diffrax's dense output of the same step, to
    rounding, and the step's end is diffrax's."""
    import diffrax
    import jax.numpy as jnp

    from gdln.numeric.batched_race import tsit5_step

    def pendulum(t, y, args):
        return jnp.stack([y[1], -args * jnp.sin(y[0]) + 0.1 * t])

    t0, t1, y0, pull = 0.2, 0.5, jnp.array([1.0, -0.3]), 2.0
    solution = diffrax.diffeqsolve(
        diffrax.ODETerm(pendulum),
        diffrax.Tsit5(),
        t0=t0,
        t1=t1,
        dt0=t1 - t0,
        y0=y0,
        args=pull,
        saveat=diffrax.SaveAt(t1=True, dense=True),
        stepsize_controller=diffrax.ConstantStepSize(),
    )
    end, along = tsit5_step(pendulum, t0, t1, y0, pull)
    np.testing.assert_allclose(end, solution.ys[-1], rtol=1e-14, atol=1e-15)
    for t in np.linspace(t0, t1, 7):
        np.testing.assert_allclose(along(t), solution.evaluate(t), rtol=1e-14, atol=1e-15)
    assert np.max(np.abs(along(0.35) - y0)) > 0.05  # a step that moves: the comparison can fail


def test_batched_race_steps_back_where_the_field_overflows(xor):
    """The race ODE in ``log a`` overflows to -inf on too long a step. The batched solve rejects
    such a step and shrinks it, as diffrax rejects a NaN; before, the infinite end gave the step
    size controller inf/inf = NaN, and XoR's linear race ODE at init scales near 1e-7 stopped at
    epoch 1747 with its loss still the initial loss and no crossings."""
    from gdln.numeric.batched_race import ode_races
    from gdln.numeric.prediction import TaskPredictions

    prediction = TaskPredictions(xor).prediction("linear")
    compiled, tau, values = prediction.compiled, 100.0, [1.0]
    scales = np.logspace(-8, np.log10(3e-2), 12)[1:5]
    logs = [np.asarray(prediction.log_initial_strengths(s)) for s in scales]
    batch = ode_races([compiled.race_ode(log, tau, values, 1e-8) for log in logs], (0.5, 0.1), xor.training.epochs)
    assert np.all(np.isnan(batch.stopped_at))
    for log, crossings in zip(logs, batch.crossings):
        exact = compiled.race(log, tau, values, xor.training.epochs, (0.5, 0.1)).crossings  # closed forms
        np.testing.assert_allclose(crossings, [exact[0.5], exact[0.1]], rtol=BATCHED_RTOL)


def test_points_the_batch_stops_short_are_raced_alone(ode_task, monkeypatch):
    """A point whose batched solve stops short of the horizon (here a budget of 20 steps) is
    what ``race`` says there: its crossings and final loss, not the batch's unfinished ones."""
    import gdln.numeric.sweep as sweep

    _, models = ode_task
    prediction = models.prediction("deep")
    logs = np.stack([np.asarray(prediction.log_initial_strengths(s)) for s in (1e-2, 1e-4)])
    values, tau = np.array([[1.0], [1.5]]), np.array([100.0, 50.0])
    budgeted = sweep.ode_races
    monkeypatch.setattr(sweep, "ode_races", lambda *args: budgeted(*args, budget=20))
    got = sweep.ode_race_points(prediction.engine, values, logs, tau, 12000)
    assert np.isfinite(got.crossings).sum() >= 2
    for k in range(2):
        race = prediction.engine.race(logs[k], tau[k], values[k], 12000, (0.5, 0.1))
        expected = [np.nan if race.crossings[f] is None else race.crossings[f] for f in (0.5, 0.1)]
        np.testing.assert_allclose(got.crossings[k], expected, rtol=CROSSING_RTOL)
        assert got.final_loss[k] == pytest.approx(race.final_loss, rel=CROSSING_RTOL, abs=FINAL_ATOL)


def test_on_cores_yields_in_order_and_holds_few_results(monkeypatch):
    """``numeric.sharding.on_cores``: results in the items' order; the first item done before any
    other starts with ``first_alone``; and no more than one result beyond the cores waits for a
    caller that consumes slowly."""
    import threading
    import time

    import gdln.numeric.sharding as sharding

    monkeypatch.setattr(sharding, "CORES", 2)
    started, lock = [], threading.Lock()

    def work(item):
        with lock:
            started.append(item)
        time.sleep(0.002 * (5 - item % 5))  # later items finish sooner
        return item * item

    results = []
    for result in sharding.on_cores(work, range(10), first_alone=True):
        with lock:
            # items started but not yet handed to this loop: at most the cores plus one
            assert len(started) - len(results) <= sharding.CORES + 1
        results.append(result)
        if len(results) == 1:
            assert started == [0]  # the first ran alone
        time.sleep(0.01)
    assert results == [k * k for k in range(10)]


def test_batched_race_in_threads_is_the_race_in_one_batch(ode_task, monkeypatch):
    """Batches of one point each, run in threads (one per core), give every point the result
    it has in one batch of all of them, bit for bit."""
    import gdln.numeric.batched_race as batched
    import gdln.numeric.sharding as sharding

    _, models = ode_task
    prediction = models.prediction("overlap")
    problems = [
        prediction.flow.race_ode(np.asarray(prediction.log_initial_strengths(s)), tau, [1.0])
        for s in (1e-2, 1e-3, 1e-4, 1e-5)
        for tau in (50.0, 100.0)
    ]
    together = batched.ode_races(problems, (0.5, 0.1), 12000)
    monkeypatch.setattr(batched, "BATCH_BYTES", 1)  # one point per batch
    monkeypatch.setattr(sharding, "CORES", 2)
    apart = batched.ode_races(problems, (0.5, 0.1), 12000)
    np.testing.assert_array_equal(apart.crossings, together.crossings)
    np.testing.assert_array_equal(apart.final_loss, together.final_loss)
    np.testing.assert_array_equal(apart.steps, together.steps)


@pytest.fixture(scope="module")
def section4():
    """Section 4 (interacting pathways: every candidate a reduced flow of depth-2 chains) swept
    over init scales 1e-5, 1e-3 and 1e-1, the last past the alignment phase (the initial output
    already reaches 1% of the targets); its derivations kept for the checks. One seed of the
    spec's 3: the phase and the frozen-gate continuation run per seed (700 units each), and the
    sweep's batching over seeds is checked on XoR's 3."""
    from gdln.numeric.prediction import TaskPredictions

    task = load_spec(ROOT / "examples" / "section4_context.toml").with_training(seeds=1)
    models = TaskPredictions(task)
    return task, models, sweep_report(task, [parse_axis("init_scale=1e-5:1e-1:3:log", task)], models=models)


@pytest.mark.slow
def test_section4_sweep_crossings_are_the_race(section4):
    task, models, report = section4
    for point in report["points"]:
        _same_race(point, race_report(task.with_training(init_scale=point["values"]["init_scale"]), models=models))


@pytest.mark.slow
def test_section4_aligned_race_is_verify_s_prediction(section4):
    """On a context task the alignment-seeded race is verify's prediction at the point: every
    candidate's chains from the aligned maps, descended at the training step (the phase ends
    near epoch 240 at init 1e-3, and at 0 at init 1e-1, where the chains start from the initial
    units). Init 1e-5 shares the phase's run with the others and is left out: its verify
    prediction costs most."""
    task, models, report = section4
    for point in report["points"][1:]:
        _same_aligned_t_half(point, _verify_aligned_t_half(task, models, {}, point["values"]["init_scale"]))


@pytest.mark.slow
def test_section4_assumptions_are_judged_at_every_point(section4):
    """Every assumption is judged on a context task (none null): the phase runs at the two small
    init scales and not at 1e-1, where they do not hold; the learning rate is stable at all
    three; and the alignment-seeded race names a winner at every point."""
    task, _, report = section4
    assert report["seeds"]["aligned"] is not None
    found = [p["assumptions"] for p in report["points"]]
    assert [a["small_init"] for a in found] == [True, True, False]
    assert [a["stable_learning_rate"] for a in found] == [True, True, True]
    assert [a["hold"] for a in found] == [True, True, False]
    assert all(len(a["phase_epochs"]) == task.training.seeds for a in found)
    assert found[2]["phase_epochs"] == [0] * task.training.seeds
    assert all(p["aligned_winner"] is not None for p in report["points"])


def test_sweep_cli_json_and_plot(tmp_path, capsys):
    plot = tmp_path / "phase.png"
    argv = ["sweep", str(XOR_SPEC), "--grid", "Delta=0.5:3:5", "--grid", "init_scale=1e-4:1e-2:3:log"]
    assert main([*argv, "--plot", str(plot), "--json"]) == 0
    printed = capsys.readouterr()
    report = json.loads(printed.out)  # the JSON alone on stdout; the file written said on stderr
    assert f"wrote {plot}" in printed.err.splitlines()
    assert report["training"] == {
        "learning_rate": 0.01,
        "init_scale": 1e-4,
        "hidden_units": 128,
        "epochs": 12000,
        "seeds": 3,
    }
    assert [a["name"] for a in report["axes"]] == ["Delta", "init_scale"]
    assert report["axes"][1]["log"] is True
    assert {p["winner"] for p in report["points"]} == {"xor", "linear"}
    assert all(p["checked"] is None for p in report["points"])
    assert report["timing"]["training_s"] == 0.0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "grids",
    [
        ["Gamma=1:2:3"],
        ["Delta=1:2"],
        ["Delta=a:2:3"],
        ["Delta=1:2:0"],
        ["Delta=1:2:100000"],
        ["Delta=2:1:3"],
        ["init_scale=0:1e-2:3:log"],
        ["Delta=1:2:3:lin"],
        ["Delta=1:2:3", "Delta=1:3:3"],
        ["Delta=1:2:3", "init_scale=1e-3:1e-2:3", "learning_rate=0.01:0.02:2"],
        ["Delta=1:2:256", "init_scale=1e-3:1e-2:256"],
        ["Delta=nan:2:3"],
    ],
)
def test_bad_grids_are_one_line_errors(grids, capsys):
    argv = ["sweep", str(XOR_SPEC)]
    for grid in grids:
        argv += ["--grid", grid]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gdln: error:"), lines


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        ("init_scale=1e300:1e300:1", "--grid: init_scale: 1e+300 is above the limit of 1000"),
        ("init_scale=1e-3:2e3:2:log", "--grid: init_scale: 2000.0 is above the limit of 1000"),
        ("learning_rate=1e7:1e8:2", "--grid: learning_rate: 10000000.0 is above the limit of 1e+06"),
        ("hidden_units=10000000:10000000:1", "--grid: hidden_units: 10000000 is above the limit of 100000"),
        ("hidden_units=0.2:0.4:2", "--grid: hidden_units: expected a positive integer, got 0"),
        ("Delta=1e160:1e161:2", "--grid: Delta: data.inputs[0][2] = 5e+159 at Delta = 1e+160 is outside the range"),
        ("Delta=1e300:1e300:1", "is outside the range 1e-30 to 1e+30 in size"),
        ("Delta=1e-35:1:2", "data.inputs[0][2] = 5e-36 at Delta = 1e-35 is outside the range 1e-30 to 1e+30"),
    ],
)
def test_grid_values_obey_the_spec_s_limits_before_any_work(grid, message, capsys, monkeypatch):
    """Issue 40: an axis' training values obey the spec's limits (derive.spec.limits, by the spec
    reader's own check), and its parameter values keep the data within the spec's range of sizes
    at every point; refused in one line naming the key and the limit, before any race."""
    import gdln.verify.sweep as sweep

    def no_work(*args, **kwargs):
        raise AssertionError("the race started")

    monkeypatch.setattr(sweep, "width_race", no_work)
    code, out, err = run_cli(capsys, ["sweep", str(XOR_SPEC), "--grid", grid])
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--grid", "Delta=0.5:3:128", "--grid", "init_scale=1e-5:1e-3:128:log", "--seeds", "1000"],
            "--seeds: seeds x grid points: 1000 x 16384 = 16384000 runs of the alignment phase is above the limit"
            " of 49152",
        ),
        (  # checked points are grid points: the alignment phase's limit comes first
            ["--grid", "Delta=0.5:1:64", "--seeds", "1000", "--check", "1000000"],
            "--seeds: seeds x grid points: 1000 x 64 = 64000 runs of the alignment phase is above the limit of 49152",
        ),
    ],
)
def test_sweep_size_limits_before_any_work(flags, message, capsys, monkeypatch):
    """Issue 40: seeds x grid points (the alignment phase) and checked points x seeds (training)
    have limits (derive.spec.limits), refused in one line before any race (it was killed out of
    memory, or trained for minutes)."""
    import gdln.verify.sweep as sweep

    def no_work(*args, **kwargs):
        raise AssertionError("the race started")

    monkeypatch.setattr(sweep, "width_race", no_work)
    code, out, err = run_cli(capsys, ["sweep", str(XOR_SPEC), *flags])
    assert (code, out, err.strip()) == (2, "", f"gdln: error: {message}")


def test_a_diverged_check_says_so(capsys):
    """Issue 40: a checked point whose training diverges (learning rate 100 on XoR) says so: the
    check's ``reason`` is the first epoch at which some seed's loss is not finite, in strict JSON
    and as a line of the text output."""
    from gdln.verify.sweep import trained_points

    xor = load_spec(XOR_SPEC)
    argv = ["sweep", str(XOR_SPEC), "--grid", "learning_rate=100:100:1", "--check", "1"]
    code, out, _ = run_cli(capsys, [*argv, "--json"])
    assert code == 0
    checked = json.loads(out)["points"][0]["checked"]
    (point,) = trained_points(xor, [parse_axis("learning_rate=100:100:1", xor)])
    assert np.isfinite(point.losses[:, 0]).all() and point.diverged_at is not None and point.diverged_at > 0
    assert checked["reason"] == f"diverged at epoch {point.diverged_at}"
    assert checked["follows"] is None
    code, out, _ = run_cli(capsys, argv)
    assert code == 0
    assert f"training diverged at 1 checked point (a loss not finite): learning_rate = 100: {checked['reason']}" in out
    assert "alignment-seeded race: linear at 0 points, xor at 0 points" in out


@pytest.mark.slow
def test_checked_points_stream_in_chunks_with_the_same_answers(xor, monkeypatch):
    """A checked sweep holds one chunk of training arrays at a time (CHECK_CHUNK_BYTES, issue 39):
    one point per program gives every checked entry exactly as all points in one program do (a
    run's losses do not depend on the runs beside it), and the chunk size keeps within the bound."""
    import gdln.verify.sweep_training as sweep

    small = xor.with_training(epochs=3000, hidden_units=32)
    axes = [parse_axis("Delta=0.5:2:3", small)]
    together = sweep_report(small, axes, check=2)
    monkeypatch.setattr(sweep, "CHECK_CHUNK_BYTES", 1)
    assert sweep.points_per_chunk(small, 32) == 1
    alone = sweep_report(small, axes, check=2)
    checked = [p["checked"] for p in together["points"]]
    assert sum(c is not None for c in checked) == 2
    assert [p["checked"] for p in alone["points"]] == checked
    monkeypatch.undo()
    # XoR's 12000 epochs of 128 units: about 100 kB a run, so 223 points of 3 seeds fill 64 MiB
    per_point = 8 * (12001 + 128 * 4 + 4 * 4) * 3
    assert sweep.points_per_chunk(xor, 128) == sweep.CHECK_CHUNK_BYTES // per_point == 223
    huge = xor.with_training(epochs=10**7, seeds=10)
    assert sweep.points_per_chunk(huge, 128) == 1  # a point alone above the bound is one program


# --- generated grids (issue 29): valid ones end in finite JSON, broken ones in one line --------

#: generated cases: valid grids (each a small sweep, seconds), broken grids (refused at once)
VALID_GRIDS, BROKEN_GRIDS = 4, 60

_RANGES = {  # name -> (low, high, log): bounds that give a small, meaningful XoR sweep
    "Delta": (0.2, 5.0, False),
    "init_scale": (1e-6, 1e-1, True),
    "learning_rate": (1e-3, 0.05, True),
    "hidden_units": (8, 64, False),
}


@st.composite
def valid_grid(draw):
    names = draw(st.lists(st.sampled_from(sorted(_RANGES)), min_size=1, max_size=2, unique=True))
    axes = []
    for name in names:
        low, high, log = _RANGES[name]
        start = draw(st.floats(low, high))
        stop = draw(st.floats(start, high))
        count = draw(st.integers(1, 3))
        axes.append(f"{name}={start!r}:{stop!r}:{count}" + (":log" if log and draw(st.booleans()) else ""))
    return axes


def _axis(name, start, stop, count, log=""):
    return f"{name}={start}:{stop}:{count}{log}"


@st.composite
def broken_grid(draw):
    """A grid with one defect of the kinds the sweep refuses, the rest drawn at random."""
    number = st.floats(0.01, 10.0).map(repr)
    defect = draw(
        st.sampled_from(
            [
                "unknown name",
                "malformed",
                "zero points",
                "too many points",
                "start above stop",
                "log bound",
                "twice",
                "three axes",
                "grid too large",
                "not finite",
                "no equals",
            ]
        )
    )
    event(defect)
    good = _axis("Delta", draw(number), "12", draw(st.integers(1, 3)))
    if defect == "unknown name":
        name = draw(
            st.text(st.characters(codec="utf-8", exclude_characters="=:"), min_size=1, max_size=8).filter(
                lambda s: s.strip() not in _RANGES and s.strip()
            )
        )
        return [_axis(name, 1, 2, 2)]
    if defect == "malformed":
        return [
            "Delta="
            + draw(st.sampled_from(["1:2", "1:2:3:4:5", "1::3", ":2:3", "1:2:x", "1:2:3:lin", "a:b:c", "1:2:2.5"]))
        ]
    if defect == "zero points":
        return [_axis("Delta", 1, 2, draw(st.integers(-5, 0)))]
    if defect == "too many points":
        return [_axis("Delta", 1, 2, draw(st.integers(257, 10**6)))]
    if defect == "start above stop":
        stop = draw(st.floats(0.01, 5.0))
        return [_axis("Delta", stop + draw(st.floats(0.01, 5.0)), stop, 2)]
    if defect == "log bound":
        return [_axis("init_scale", draw(st.sampled_from(["0", "-1", "-1e-3"])), "1e-2", 3, ":log")]
    if defect == "twice":
        return [good, good]
    if defect == "three axes":
        return [good, _axis("init_scale", "1e-4", "1e-3", 2), _axis("learning_rate", "0.01", "0.02", 2)]
    if defect == "grid too large":
        return [_axis("Delta", 1, 2, 256), _axis("init_scale", "1e-4", "1e-2", draw(st.integers(65, 256)))]
    if defect == "not finite":
        return [_axis("Delta", draw(st.sampled_from(["nan", "inf", "-inf", "1e999"])), 2, 2)]
    return ["Delta" + draw(st.sampled_from(["", ":1:2:3", " 1:2:3"]))]


def _sweep_argv(grids):
    argv = ["sweep", str(XOR_SPEC), "--json"]
    for grid in grids:
        argv += ["--grid", grid]
    return argv


@settings(max_examples=BROKEN_GRIDS, **FUZZ)
@given(grids=broken_grid())
def test_generated_broken_grids_are_one_line_errors(capsys, grids):
    code, _, err = run_cli(capsys, _sweep_argv(grids))
    assert code == 2, (grids, err)


@pytest.mark.slow
@settings(max_examples=VALID_GRIDS, **FUZZ)
@given(grids=valid_grid())
def test_generated_valid_grids_give_finite_json(capsys, grids):
    code, out, err = run_cli(capsys, _sweep_argv(grids))
    assert code == 0, (grids, err)
    report = json.loads(out)
    assert len(report["points"]) == np.prod([len(a["values"]) for a in report["axes"]])


def test_sweep_markdown_says_where_each_winner_changes(xor):
    """The Markdown form: one row per run of init scales with the same boundaries, each between the
    grid values of Delta that bracket where the winner changes; the width-seeded one brackets the
    derived Delta* = 2 sqrt(6)/3 = 1.633 at every init scale."""
    axes = [parse_axis("Delta=1:2.5:4", xor), parse_axis("init_scale=1e-6:1e-4:3:log", xor)]
    report = sweep_report(xor, axes)
    lines = report._repr_markdown_().splitlines()
    assert lines[0] == "no point checked by training (--check N)"
    rows = [line.strip("|").split("|") for line in lines if line.startswith("| 1e-06")]
    assert len(rows) == 1  # the three init scales share their boundaries
    at, predicted, aligned, width = (cell.strip() for cell in rows[0])
    assert at == "1e-06 to 0.0001"
    assert width == "1.5 to 2"
    assert aligned == "1.5 to 2"  # about 6-10% above Delta* at small init (docs/phase_diagrams.md)
    # the map's colour, the predicted followed network, changes where it is painted: between the
    # points whose decided networks (or undecided) differ, read from the points themselves
    line = [p for p in report["points"] if p["values"]["init_scale"] == 1e-6]
    painted = [p["predicted_follows"]["network"] if p["predicted_follows"]["decided"] else None for p in line]
    expected = "; ".join(
        f"{line[k]['values']['Delta']:g} to {line[k + 1]['values']['Delta']:g}"
        for k in range(len(line) - 1)
        if painted[k] != painted[k + 1]
    )
    assert predicted == (expected or "none")


def test_assumptions_are_the_alignment_phase_and_verify_warning_at_each_point(xor):
    """Each point's assumptions, judged before training, against their one-point originals: the
    seeds' phase ends are those of ``numeric.alignment.align`` on the point's own initial weights
    (``small_init`` fails where a phase ends at epoch 0, the initial output already at its
    fraction of the targets), and ``stable_learning_rate`` fails exactly where verify warns."""
    import warnings

    from gdln.numeric.alignment import align
    from gdln.numeric.prediction import TaskPredictions
    from gdln.verify.checks import GdlnWarning, warn_learning_rate

    report = sweep_report(xor, [parse_axis("Delta=0.5:3:2", xor), parse_axis("init_scale=1e-4:1e-1:2:log", xor)])
    models = TaskPredictions(xor)
    for point in report["points"]:
        delta, scale = point["values"]["Delta"], point["values"]["init_scale"]
        x, y = (np.asarray(a) for a in models.dataset([delta]))
        w1, w2 = initial_relu_weights(128, 3, 1, scale, range(xor.training.seeds))
        phase = align(x, y, np.asarray(w1), np.asarray(w2), xor.training.learning_rate, horizon=xor.training.epochs)
        assert point["assumptions"]["phase_epochs"] == [int(e) for e in phase.epochs]
        assert point["assumptions"]["small_init"] == bool(np.all(phase.epochs > 0))
    assert {p["assumptions"]["small_init"] for p in report["points"]} == {True, False}
    axes = [parse_axis("Delta=0.5:3:2", xor), parse_axis("learning_rate=0.01:3:2:log", xor)]
    report = sweep_report(xor, axes)
    for point in report["points"]:
        trained = xor.with_training(learning_rate=point["values"]["learning_rate"])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warn_learning_rate(trained, xor.values({"Delta": point["values"]["Delta"]}))
        warned = any(issubclass(w.category, GdlnWarning) for w in caught)
        assert point["assumptions"]["stable_learning_rate"] is not warned
        assert point["assumptions"]["hold"] is (point["assumptions"]["small_init"] and not warned)
    assert {p["assumptions"]["stable_learning_rate"] for p in report["points"]} == {True, False}


def test_agreement_where_the_assumptions_hold_counts_those_points():
    """``agreement.within_assumptions`` counts the checked points whose assumptions hold, and a
    disagreement says whether its point is one of them (sweep_report's bookkeeping, on a report
    whose checked points are set by hand)."""
    from gdln.verify.sweep_checks import agreement

    def point(winner, aligned, follows, hold, predicted=None):
        assumptions = {"hold": hold}
        return {
            "values": {"Delta": 1.0},
            "winner": winner,
            "aligned_winner": aligned,
            "assumptions": assumptions,
            "checked": {"follows": follows},
            # undecided where no network is named: counted in neither predicted count
            "predicted_follows": {"network": predicted, "decided": predicted is not None},
        }

    points = [
        point("a", "a", "a", True, "a"),
        point("a", "b", "b", True, "a"),
        point("b", "b", "a", False, "a"),
        point("a", "a", "b", True),
    ]
    for p in points:
        p["checked"]["max_deviation"] = 0.01
    found = agreement(points, near_boundary={3})
    assert (found["checked"], found["agree"], found["aligned_agree"]) == (4, 1, 2)
    assert (found["predicted_decided"], found["predicted_agree"]) == (3, 2)
    assert found["within_assumptions"] == {
        "checked": 3,
        "agree": 1,
        "aligned_agree": 2,
        "predicted_decided": 2,
        "predicted_agree": 1,
    }
    assert [
        (d["index"], d["outside_assumptions"], d["next_to_aligned_boundary"]) for d in found["disagree_points"]
    ] == [
        (2, True, False),
        (3, False, True),
    ]


def test_seed_standard_error_against_two_seeds_by_hand():
    """Two seeds ``a, b``: the standard error of their mean is ``|a - b| / 2`` at each sample;
    one seed has none, and identical seeds have zero."""
    from gdln.verify.rules import seed_standard_error

    a = np.array([2.0, 1.5, 0.4, 0.1])
    b = np.array([2.0, 1.1, 0.3, 0.1])
    assert seed_standard_error(np.stack([a, b])) == pytest.approx(np.max(np.abs(a - b) / 2) / 2.0, rel=1e-12)
    assert seed_standard_error(a[None]) is None
    assert seed_standard_error(np.stack([a, a, a])) == pytest.approx(0.0, abs=1e-15)


def test_follow_resolution_holds_the_lead_to_two_standard_errors():
    from gdln.verify.rules import DECIDED_STANDARD_ERRORS, follow_resolution

    losses = np.array([[1.0, 0.6, 0.2], [1.0, 0.4, 0.2]])  # standard error 0.1 of the initial loss
    networks = [
        {"name": "a", "max_deviation": 0.05, "from_alignment": False},
        {"name": "b", "max_deviation": 0.30, "from_alignment": False},
        {"name": "aligned", "max_deviation": 0.01, "from_alignment": True},  # never a rival
    ]
    found = follow_resolution(networks, "a", losses)
    assert found["seed_error"] == pytest.approx(0.1)
    assert found["lead"] == pytest.approx(0.25)
    assert found["lead_needed"] == pytest.approx(DECIDED_STANDARD_ERRORS * 0.1)
    assert found["decided"] is True
    networks[1]["max_deviation"] = 0.2  # lead 0.15 < 0.2
    assert follow_resolution(networks, "a", losses)["decided"] is False
    assert follow_resolution(networks, "a", losses[:1])["decided"] is None
    assert follow_resolution(networks[:1], "a", losses)["decided"] is None  # no rival


def test_sweep_seeds_flag_and_each_check_s_resolution(capsys):
    """``--seeds`` sets the seeds of the phase and the checks; each checked point's lead is the
    runner-up's deviation less the followed one's, held to two standard errors of the seeds."""
    argv = ["sweep", str(XOR_SPEC), "--grid", "Delta=0.5:3:3", "--grid", "init_scale=1e-4:1e-3:2:log"]
    assert main([*argv, "--seeds", "2", "--check", "3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert all(len(p["assumptions"]["phase_epochs"]) == 2 for p in report["points"])
    checked = [p["checked"] for p in report["points"] if p["checked"]]
    assert len(checked) == 3 and all(c["seeds"] == 2 for c in checked)
    for c in checked:
        rival = min(v for k, v in c["deviations"].items() if k != c["follows"])
        assert c["lead"] == pytest.approx(rival - c["max_deviation"], abs=1e-15)
        assert c["decided"] is (c["lead"] >= c["lead_needed"])
    decided = report["agreement"]["decided"]
    assert decided["checked"] == sum(c["decided"] for c in checked)


def test_sweep_markdown_agreement_counts_each_subset():
    """The Markdown agreement table gives, per subset, the points and how many followed each
    winner, and counts the disagreements by where they lie (read back, not compared as text)."""
    import re

    from gdln.verify.reports import SweepReport

    counts = {"checked": 4, "agree": 1, "aligned_agree": 3}
    report = SweepReport(
        spec="<python>",
        axes=[],
        seeds={},
        training={},
        assumptions={},
        points=[],
        invalid_points=[],
        crossovers=[],
        timing={},
        validity=0.05,
        agreement={
            **counts,
            "within_assumptions": {"checked": 3, "agree": 1, "aligned_agree": 3},
            "decided": {"checked": 2, "agree": 0, "aligned_agree": 2},
            "disagree_points": [
                {
                    "next_to_aligned_boundary": True,
                    "outside_validity": False,
                    "outside_assumptions": True,
                    "decided": False,
                }
            ],
        },
    )
    rows = dict(line.strip("|").split("|")[:2] for line in report._agreement().splitlines()[2:])
    rows = {k.strip(): v.strip() for k, v in rows.items()}
    assert rows["followed each race's winner, at all checked points"].startswith("4 points:")
    assert re.findall(r"(\d+) \(", rows["followed each race's winner, at all checked points"]) == ["3", "1"]
    assert re.findall(r"(\d+) \(", rows["followed each race's winner, where the seeds decide which it follows"]) == [
        "2",
        "0",
    ]
    assert rows["disagreements where the assumptions fail"] == "1 of 1"
    assert rows["disagreements the seeds do not decide"] == "1 of 1"
    assert rows["disagreements outside validity (> 0.05)"] == "0 of 1"


# --- issue 37: a sweep over width keeps the task's seeds and splits pathway units again ----------


def test_width_axis_keeps_the_seeds_given(capsys):
    """``--grid hidden_units=... --seeds 2`` once read the spec file again for each width and lost
    ``--seeds`` (a shape mismatch traceback in the alignment-seeded race)."""
    code, out, _ = run_cli(
        capsys, ["sweep", str(XOR_SPEC), "--grid", "hidden_units=64:128:2", "--seeds", "2", "--json"]
    )
    assert code == 0
    report = json.loads(out)
    assert [len(p["assumptions"]["phase_epochs"]) for p in report["points"]] == [2, 2]
    assert "2 ReLU seeds" in report["seeds"]["aligned"]


def test_with_training_splits_pathway_units_as_the_spec_reader_does():
    """A task built in Python and one read from a file agree at any width: the pathways without
    stated units take their share of the new width; stated units stay."""
    document = tomllib.loads(XOR_SPEC.read_text(encoding="utf-8"))
    for width in (32, 128, 301):
        changed = task_from_dict(document, source="<python>").with_training(hidden_units=width)
        document_at_width = {**document, "training": {**document.get("training", {}), "hidden_units": width}}
        read = task_from_dict(document_at_width, source="<python>")
        assert [[p.units for p in n.pathways] for n in changed.networks] == [
            [p.units for p in n.pathways] for n in read.networks
        ]
        assert changed.training == read.training
    stated = {**document, "network": [{**document["network"][0], "pathway": [{"units": 7}]}]}
    assert task_from_dict(stated).with_training(hidden_units=500).networks[0].pathways[0].units == 7


def test_width_sweep_of_a_python_task_is_the_file_task():
    """The same sweep from a task built in Python and from the file: every point's half-times
    agree (the Python task once kept the spec's pathway units at every width)."""
    from_file = load_spec(XOR_SPEC)
    in_python = task_from_dict(tomllib.loads(XOR_SPEC.read_text(encoding="utf-8")))
    axis = "hidden_units=32:128:2"
    a = sweep_report(from_file, [parse_axis(axis, from_file)])
    b = sweep_report(in_python, [parse_axis(axis, in_python)])
    for p, q in zip(a["points"], b["points"]):
        assert [n["t_half"] for n in p["networks"]] == pytest.approx([n["t_half"] for n in q["networks"]], rel=1e-12)
    first, last = a["points"][0]["networks"], a["points"][-1]["networks"]
    assert [n["t_half"] for n in first] != pytest.approx([n["t_half"] for n in last], rel=1e-6)


#: the sweep's predicted followed network against ``race --predicted-validity``'s at one point:
#: the same curves from batched and single descents, the aligned GDLN at pattern resolution
#: against verify's chains at unit width (:mod:`numeric.aligned_model`)
FOLLOWS_RTOL = 1e-9


def test_each_point_s_predicted_follows_is_the_race_s_at_the_point(xor):
    """Without training: every sweep point's ``predicted_follows`` (network, nearest, margin and
    each candidate's deviation from the aligned GDLN) is what ``race --predicted-validity`` says
    at that point alone; both sides of the XoR crossover are decided (Delta 0.5: xor; 3: linear)."""
    report = sweep_report(xor, [parse_axis("Delta=0.5:3:3", xor)]).to_json()
    for point in report["points"]:
        alone = race_report(xor, point["values"], predict_validity=True).to_json()["predicted_follows"]
        ours = point["predicted_follows"]
        assert (ours["network"], ours["nearest"], ours["decided"]) == (
            alone["network"],
            alone["nearest"],
            alone["decided"],
        )
        assert ours["margin"] == pytest.approx(alone["margin"], rel=FOLLOWS_RTOL)
        for name, deviation in alone["deviations"].items():
            assert ours["deviations"][name] == pytest.approx(deviation, rel=FOLLOWS_RTOL, abs=1e-15)
    assert [p["predicted_follows"]["network"] for p in report["points"][::2]] == ["xor", "linear"]
    # on XoR the rule names the alignment-seeded race's winner wherever it decides (issue 48)
    for point in report["points"]:
        if point["predicted_follows"]["decided"]:
            assert point["predicted_follows"]["network"] == point["aligned_winner"], point["values"]
