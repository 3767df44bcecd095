"""Training layouts, dtypes and sharded sweeps: every layout gives each seed its own descent;
float32 follows float64 to 1e-4 of the initial loss on the paper's tasks; a sweep sharded over
four CPU devices gives the unsharded results bit for bit."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from gdln.derive.spec import load_spec
from gdln.numeric.data import NumericDataset
from gdln.numeric.training import train_relu

from .helpers import ROOT, XOR_SPEC

#: float32 against float64, as a fraction of the initial loss, anywhere along the curve (the
#: issue's allowance; measured 2e-7 on XoR and 1e-5 on Section 4)
FLOAT32_TOLERANCE = 1e-4
#: the two layouts compute the same products in another order
LAYOUT_TOLERANCE = 1e-12


def _run(spec, seeds, epochs=None, **options):
    task = load_spec(spec)
    training = task.training
    inputs, targets = NumericDataset(task)(list(task.parameters.values()))
    return np.asarray(
        train_relu(
            inputs,
            targets,
            training.hidden_units,
            training.init_scale,
            training.learning_rate,
            epochs or training.epochs,
            range(seeds),
            **options,
        ).losses
    )


def test_layouts_agree_seed_for_seed():
    vmapped = _run(XOR_SPEC, 3, 3000, layout="vmap")
    stacked = _run(XOR_SPEC, 3, 3000, layout="stacked")
    assert vmapped.shape == stacked.shape == (3, 3001)
    assert np.max(np.abs(vmapped - stacked)) <= LAYOUT_TOLERANCE * vmapped[0, 0]
    single = _run(XOR_SPEC, 1, 3000, layout="stacked")
    np.testing.assert_allclose(single[0], stacked[0], rtol=0, atol=LAYOUT_TOLERANCE * vmapped[0, 0])


@pytest.mark.slow
@pytest.mark.parametrize("spec", [XOR_SPEC, ROOT / "examples" / "section4_context.toml"], ids=["xor", "section4"])
def test_float32_follows_float64(spec):
    exact = _run(spec, 1)
    single = _run(spec, 1, dtype="float32")
    assert np.all(np.isfinite(single))
    assert np.max(np.abs(single - exact)) <= FLOAT32_TOLERANCE * exact[0, 0]


SHARDED = """
import json, sys
import numpy as np
from gdln.numeric.precision import use_x64
use_x64()
import jax
from tests.test_training_layouts import _run, XOR_SPEC
assert jax.device_count() == 4
out = {}
for layout in ("vmap", "stacked"):
    one = _run(XOR_SPEC, 12, 400, layout=layout, devices=1)  # two groups of 8 seeds, padded
    four = _run(XOR_SPEC, 12, 400, layout=layout, devices=4)  # 3 seeds per device, no groups
    out[layout] = [bool(np.array_equal(one, four)), list(one.shape)]
print(json.dumps(out))
"""


def test_sharded_sweep_is_bitwise_the_unsharded_one():
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", SHARDED], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"vmap": [True, [12, 401]], "stacked": [True, [12, 401]]}


SHARDED_POINTS = """
import json
import numpy as np
from gdln.numeric.precision import use_x64
use_x64()
import jax
from gdln.numeric.training import initial_relu_weights, train_relu_points
assert jax.device_count() == 4
rng = np.random.default_rng(0)
runs = 13  # not a multiple of 4 devices x 8 runs: padded
w1, w2 = (np.asarray(w) for w in initial_relu_weights(16, 3, 1, 1e-3, range(runs)))
inputs = rng.normal(size=(runs, 4, 3))
targets = rng.normal(size=(runs, 4, 1))
rates = np.linspace(0.005, 0.05, runs)
one = train_relu_points(inputs, targets, w1, w2, rates, 300, devices=1)
four = train_relu_points(inputs, targets, w1, w2, rates, 300, devices=4)
print(json.dumps([bool(np.array_equal(one, four)), list(four.shape)]))
"""


def test_sharded_points_are_bitwise_the_unsharded_ones():
    """Checked training at grid points (gdln sweep --check) splits its runs over the devices
    and gives every run the losses it has on one device."""
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", SHARDED_POINTS], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [True, [13, 301]]
