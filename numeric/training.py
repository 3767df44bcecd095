"""Full-batch gradient descent on real networks: one-hidden-layer ReLU networks and GDLNs
with explicit gates. ``lax.scan`` over epochs, ``vmap`` over seeds; seeds are explicit
integers, so every run is reproducible.

Loss: ``L = 1/2 mean_n ||y_n - yhat_n||^2``. Initial weights: i.i.d. normal with
standard deviation ``init_scale``. Returned losses hold epochs ``0..epochs`` (the
loss before each update and after the last one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from gdln.derive.spec import Network

from .types import ArrayLike, Float


@dataclass(frozen=True)
class TrainingRun:
    """Losses ``(seeds, epochs + 1)`` and the initial and final weights, stacked over seeds."""

    losses: jax.Array
    initial: object
    final: object


def mean_squared_loss(predictions, targets):
    return 0.5 * jnp.mean(jnp.sum((targets - predictions) ** 2, axis=1))


def gradient_steps(loss_fn, params, learning_rate, epochs):
    """``epochs`` steps of full-batch gradient descent: the final parameters and the loss before each step."""
    value_and_grad = jax.value_and_grad(loss_fn)

    def step(p, _):
        value, grads = value_and_grad(p)
        return jax.tree_util.tree_map(lambda w, g: w - learning_rate * g, p, grads), value

    return jax.lax.scan(step, params, None, length=epochs)


def descend(loss_fn, params, learning_rate, epochs):
    """:func:`gradient_steps`, with the loss after the last step appended (``epochs + 1`` losses)."""
    final, history = gradient_steps(loss_fn, params, learning_rate, epochs)
    return final, jnp.concatenate([history, loss_fn(final)[None]])


def relu_forward(params, inputs):
    w1, w2 = params
    return jax.nn.relu(inputs @ w1.T) @ w2.T


def init_relu(key, hidden_units: int, num_inputs: int, num_outputs: int, init_scale: float):
    k1, k2 = jax.random.split(key)
    return (
        init_scale * jax.random.normal(k1, (hidden_units, num_inputs), dtype=jnp.float64),
        init_scale * jax.random.normal(k2, (num_outputs, hidden_units), dtype=jnp.float64),
    )


@partial(jax.jit, static_argnames=("hidden_units", "num_inputs", "num_outputs"))
def _initial_relu(keys, hidden_units, num_inputs, num_outputs, init_scale):
    return jax.vmap(lambda key: init_relu(key, hidden_units, num_inputs, num_outputs, init_scale))(keys)


@partial(jax.jit, static_argnames=("epochs",))
def _descend_relu(w1s, w2s, inputs, targets, learning_rate, epochs):
    def one(w1, w2):
        loss_fn = lambda p: mean_squared_loss(relu_forward(p, inputs), targets)  # noqa: E731
        final, losses = descend(loss_fn, (w1, w2), learning_rate, epochs)
        return losses, final

    return jax.vmap(one)(w1s, w2s)


def _stacked_relu_losses(params, inputs, targets):
    """Every seed's loss, with the seeds' hidden units side by side: the first layer is one
    matrix product ``(N, I) @ (I, S H)`` instead of ``S`` products of width ``H``."""
    w1s, w2s = params
    seeds, hidden, count = w1s.shape[0], w1s.shape[1], inputs.shape[0]
    activity = jax.nn.relu(inputs @ w1s.reshape(seeds * hidden, -1).T).reshape(count, seeds, hidden)
    outputs = jnp.einsum("nsh,soh->sno", activity, w2s)
    per_seed = 0.5 * jnp.mean(jnp.sum((targets[None] - outputs) ** 2, axis=2), axis=1)
    return jnp.sum(per_seed), per_seed


@partial(jax.jit, static_argnames=("epochs",))
def _descend_relu_stacked(w1s, w2s, inputs, targets, learning_rate, epochs):
    # the seeds' losses are independent, so the gradient of their sum is each seed's own gradient
    value_and_grad = jax.value_and_grad(_stacked_relu_losses, has_aux=True)

    def step(p, _):
        (_, per_seed), grads = value_and_grad(p, inputs, targets)
        return jax.tree_util.tree_map(lambda w, g: w - learning_rate * g, p, grads), per_seed

    final, history = jax.lax.scan(step, (w1s, w2s), None, length=epochs)
    last = _stacked_relu_losses(final, inputs, targets)[1]
    return jnp.concatenate([history, last[None]]).T, final


#: how seeds are laid out in training: ``"vmap"`` (a batched product per layer, one batch entry
#: per seed) or ``"stacked"`` (the seeds' hidden units side by side in the first layer). Both give
#: each seed exactly its own gradient; ``python -m bench`` measures them.
RELU_LAYOUTS = {"vmap": _descend_relu, "stacked": _descend_relu_stacked}
#: seeds trained together in one batched descent; more seeds run as consecutive groups of this
#: many inside the same compiled program. On 2 cores, 8 at a time beat 32 at once by 1.5x
#: (the batch no longer fits the caches; ``python -m bench``).
SEED_CHUNK = 8


@partial(jax.jit, static_argnames=("epochs", "layout", "chunk"))
def _descend_relu_chunked(w1s, w2s, inputs, targets, learning_rate, epochs, layout, chunk):
    groups = w1s.shape[0] // chunk
    descend_layout = RELU_LAYOUTS[layout]

    def group(weights):
        return descend_layout(weights[0], weights[1], inputs, targets, learning_rate, epochs)

    losses, final = jax.lax.map(
        group, (w1s.reshape(groups, chunk, *w1s.shape[1:]), w2s.reshape(groups, chunk, *w2s.shape[1:]))
    )
    return losses.reshape(groups * chunk, -1), tuple(w.reshape(groups * chunk, *w.shape[2:]) for w in final)


@partial(jax.jit, static_argnames=("epochs",))
def _descend_relu_points(w1s, w2s, inputs, targets, learning_rates, epochs):
    """Groups of runs ``(groups, chunk, ...)``, one group after another in one program."""

    def one(w1, w2, inputs, targets, learning_rate):
        loss_fn = lambda p: mean_squared_loss(relu_forward(p, inputs), targets)  # noqa: E731
        return descend(loss_fn, (w1, w2), learning_rate, epochs)[1]

    return jax.lax.map(lambda group: jax.vmap(one)(*group), (w1s, w2s, inputs, targets, learning_rates))


def train_relu_points(
    inputs: Float[ArrayLike, "runs N inp"],
    targets: Float[ArrayLike, "runs N out"],
    w1s: Float[ArrayLike, "runs units inp"],
    w2s: Float[ArrayLike, "runs out units"],
    learning_rates: Float[ArrayLike, " runs"],
    epochs: int,
    *,
    devices: int | None = None,
) -> np.ndarray:
    """Losses ``(runs, epochs + 1)`` of ReLU runs that differ in data, initial weights and step
    (grid points times seeds), trained in one program as :func:`train_relu` trains seeds: the
    same descent, :data:`SEED_CHUNK` runs at a time on each of ``devices`` JAX devices (default
    all of them; the runs of a group are split over the devices, as
    :func:`numeric.sharding.shard_seeds` splits seeds). Every run's losses are the same whatever
    the grouping and the device count, bit for bit (tested)."""
    from .sharding import device_count, shard_runs

    runs = np.shape(w1s)[0]
    used = device_count(devices)
    chunk = SEED_CHUNK * used
    groups = -(-runs // chunk)
    # pad with copies of the last run to whole groups; their losses are dropped
    order = np.minimum(np.arange(groups * chunk), runs - 1)

    def grouped(x):
        x = np.asarray(x, dtype=np.float64)[order]
        return x.reshape(groups, chunk, *x.shape[1:])

    arrays = shard_runs(tuple(grouped(x) for x in (w1s, w2s, inputs, targets, learning_rates)), used)
    losses = _descend_relu_points(*arrays, epochs)
    return np.asarray(losses).reshape(groups * chunk, -1)[:runs]


#: dtypes training may run in; the theory always runs in float64
TRAINING_DTYPES = {"float64": jnp.float64, "float32": jnp.float32}


def seed_keys(seeds: Sequence[int]):
    return jnp.stack([jax.random.PRNGKey(int(seed)) for seed in seeds])


def initial_relu_weights(
    hidden_units: int, num_inputs: int, num_outputs: int, init_scale: float, seeds: Sequence[int]
) -> tuple[jax.Array, jax.Array]:
    """``(W1s, W2s)`` stacked over seeds: exactly the initial weights :func:`train_relu` starts
    from with the same seeds, without training (predictions need nothing else)."""
    return _initial_relu(seed_keys(seeds), hidden_units, num_inputs, num_outputs, float(init_scale))


def train_relu(
    inputs: Float[ArrayLike, "N inp"],
    targets: Float[ArrayLike, "N out"],
    hidden_units: int,
    init_scale: float,
    learning_rate: float,
    epochs: int,
    seeds: Sequence[int],
    *,
    dtype: str = "float64",
    layout: str = "vmap",
    devices: int | None = None,
) -> TrainingRun:
    """Train ``yhat = W2 relu(W1 x)`` (no biases, linear output) once per seed, from
    :func:`initial_relu_weights`.

    ``dtype`` is what the descent runs in (the initial weights are drawn in float64 and rounded,
    so both dtypes start from the same network); ``layout`` one of :data:`RELU_LAYOUTS`;
    ``devices`` how many JAX devices the seeds are sharded over (default all of them,
    :func:`numeric.sharding.shard_seeds`); on one device, more than :data:`SEED_CHUNK` seeds run
    in consecutive groups. Every seed's descent is the same whatever the grouping, bit for bit
    (tested). Losses come back in float64."""
    from .sharding import device_count, pad_seeds, shard_seeds

    kind = TRAINING_DTYPES[dtype]
    seeds = list(seeds)
    initial = initial_relu_weights(hidden_units, jnp.shape(inputs)[1], jnp.shape(targets)[1], init_scale, seeds)
    sharded, count = shard_seeds(initial, devices)
    data = (jnp.asarray(inputs, kind), jnp.asarray(targets, kind), kind(learning_rate))
    if device_count(devices) == 1 and count > SEED_CHUNK:  # one device: consecutive groups of seeds
        w1s, w2s = (jnp.asarray(w, kind) for w in pad_seeds(sharded, SEED_CHUNK))
        losses, final = _descend_relu_chunked(w1s, w2s, *data, epochs, layout, SEED_CHUNK)
    else:
        w1s, w2s = (w.astype(kind) for w in sharded)
        losses, final = RELU_LAYOUTS[layout](w1s, w2s, *data, epochs)
    return TrainingRun(
        jnp.asarray(losses[:count], jnp.float64), initial, tuple(jnp.asarray(w[:count], jnp.float64) for w in final)
    )


@dataclass(frozen=True)
class GdlnLayout:
    """Static structure of a GDLN with one module per pathway: gates over datapoints, the
    input and target features each pathway uses, its width and its number of hidden layers."""

    gates: tuple[tuple[float, ...], ...]
    inputs: tuple[tuple[int, ...], ...]
    outputs: tuple[tuple[int, ...], ...]
    units: tuple[int, ...]
    hidden_layers: tuple[int, ...]


def gdln_layout(network: Network, num_datapoints: int) -> GdlnLayout:
    return GdlnLayout(
        gates=tuple(tuple(float(n in p.active) for n in range(num_datapoints)) for p in network.pathways),
        inputs=tuple(p.inputs for p in network.pathways),
        outputs=tuple(p.outputs for p in network.pathways),
        units=tuple(p.units for p in network.pathways),
        hidden_layers=tuple(p.hidden_layers for p in network.pathways),
    )


def gdln_forward(params, inputs, layout: GdlnLayout, num_outputs: int):
    output = jnp.zeros((inputs.shape[0], num_outputs), dtype=inputs.dtype)
    for p, weights in enumerate(params):
        hidden = inputs[:, jnp.array(layout.inputs[p])]
        for w in weights:
            hidden = hidden @ w.T
        gate = jnp.array(layout.gates[p], dtype=inputs.dtype)[:, None]
        output = output.at[:, jnp.array(layout.outputs[p])].add(gate * hidden)
    return output


def init_gdln(key, layout: GdlnLayout, init_scale: float):
    params = []
    for p in range(len(layout.units)):
        widths = [len(layout.inputs[p])] + [layout.units[p]] * layout.hidden_layers[p] + [len(layout.outputs[p])]
        keys = jax.random.split(jax.random.fold_in(key, p), len(widths) - 1)
        params.append(
            [
                init_scale * jax.random.normal(k, (widths[i + 1], widths[i]), dtype=jnp.float64)
                for i, k in enumerate(keys)
            ]
        )
    return params


@partial(jax.jit, static_argnames=("layout", "epochs"))
def _train_gdln(keys, inputs, targets, layout, init_scale, learning_rate, epochs):
    def one(key):
        params = init_gdln(key, layout, init_scale)
        loss_fn = lambda p: mean_squared_loss(gdln_forward(p, inputs, layout, targets.shape[1]), targets)  # noqa: E731
        final, losses = descend(loss_fn, params, learning_rate, epochs)
        return losses, params, final

    return jax.vmap(one)(keys)


def train_gdln(
    inputs: Float[ArrayLike, "N inp"],
    targets: Float[ArrayLike, "N out"],
    layout: GdlnLayout,
    init_scale: float,
    learning_rate: float,
    epochs: int,
    seeds: Sequence[int],
    *,
    devices: int | None = None,
) -> TrainingRun:
    """Train a GDLN with its explicit gates once per seed, the seeds sharded over ``devices``
    devices (default all, :func:`numeric.sharding.shard_seeds`)."""
    from .sharding import shard_seeds

    keys, count = shard_seeds(seed_keys(seeds), devices)
    losses, initial, final = _train_gdln(
        keys,
        jnp.asarray(inputs, jnp.float64),
        jnp.asarray(targets, jnp.float64),
        layout,
        init_scale,
        learning_rate,
        epochs,
    )
    return TrainingRun(*jax.tree_util.tree_map(lambda a: a[:count], (losses, initial, final)))


def relu_hidden(params, inputs):
    """Hidden activity ``relu(W1 x)`` of a ReLU network, rows are datapoints."""
    return jax.nn.relu(jnp.asarray(inputs) @ params[0].T)


def gdln_hidden(params, inputs, layout: GdlnLayout):
    """Last hidden layer of every module, gated, side by side (rows are datapoints)."""
    columns = []
    for p, weights in enumerate(params):
        hidden = jnp.asarray(inputs)[:, jnp.array(layout.inputs[p])]
        for w in weights[:-1]:
            hidden = hidden @ w.T
        columns.append(jnp.array(layout.gates[p])[:, None] * hidden)
    return jnp.concatenate(columns, axis=1)


def deep_relu_forward(params, inputs):
    """``yhat = W_L relu(... relu(W_1 x))``: ReLU after every hidden layer, linear output, no biases."""
    hidden = inputs
    for w in params[:-1]:
        hidden = jax.nn.relu(hidden @ w.T)
    return hidden @ params[-1].T


@partial(jax.jit, static_argnames=("widths",))
def _initial_deep(keys, widths, init_scale):
    def one(key):
        parts = jax.random.split(key, len(widths) - 1)
        return [
            init_scale * jax.random.normal(k, (widths[i + 1], widths[i]), dtype=jnp.float64)
            for i, k in enumerate(parts)
        ]

    return jax.vmap(one)(keys)


@partial(jax.jit, static_argnames=("epochs",))
def _descend_deep(initial, inputs, targets, learning_rate, epochs):
    def one(params):
        loss_fn = lambda p: mean_squared_loss(deep_relu_forward(p, inputs), targets)  # noqa: E731
        final, losses = descend(loss_fn, params, learning_rate, epochs)
        return losses, final

    return jax.vmap(one)(initial)


def train_deep_relu(
    inputs: Float[ArrayLike, "N inp"],
    targets: Float[ArrayLike, "N out"],
    hidden: Sequence[int],
    init_scale: float,
    learning_rate: float,
    epochs: int,
    seeds: Sequence[int],
) -> TrainingRun:
    """Train a ReLU network with hidden layers of widths ``hidden`` once per seed (i.i.d. normal
    initial weights of standard deviation ``init_scale``)."""
    inputs = jnp.asarray(inputs, jnp.float64)
    targets = jnp.asarray(targets, jnp.float64)
    widths = (inputs.shape[1], *hidden, targets.shape[1])
    initial = _initial_deep(seed_keys(seeds), widths, float(init_scale))
    losses, final = _descend_deep(initial, inputs, targets, float(learning_rate), epochs)
    return TrainingRun(losses, initial, final)
