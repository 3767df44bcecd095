"""Benchmarks (not tests): ``python bench/bench_race.py``.

Prints wall times and ratios on this machine:
- closed-form loss curves over a parameter grid (one compile, vmap) vs a Python loop of
  per-value SymPy evaluation;
- ReLU training epochs per second, seeds vmapped.
"""

from __future__ import annotations

import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import sympy

from gdln.numeric.precision import use_x64

use_x64()  # an entry point: the benchmark computes as the CLI does

from gdln.derive.derivation import TAU, TIME  # noqa: E402
from gdln.derive.spec import load_spec  # noqa: E402
from gdln.numeric.prediction import TaskPredictions  # noqa: E402
from gdln.numeric.training import train_relu  # noqa: E402

SPEC = Path(__file__).resolve().parent.parent / "examples" / "xor.toml"


def timed(fn, repeat=3, clock=time.perf_counter):
    """The least time by ``clock`` (wall-clock by default; ``time.process_time`` for this
    process's CPU time, every thread) of ``repeat`` calls of ``fn``, each until its result is ready."""
    best = float("inf")
    for _ in range(repeat):
        start = clock()
        jax.block_until_ready(fn())
        best = min(best, clock() - start)
    return best


def training_seconds(run) -> float:
    """Seconds of one training run ``run()``: the best of three after one that compiles. The
    first runs after compiling take up to twice as long as the rest (Section 4: 2.8-3.0 s
    against 1.4-1.5 s on 2 cores), and a ratio against one of them would flatter the theory."""
    run()
    return timed(run, repeat=3)


def step_flops(count: int, inputs: int, hidden: int, outputs: int) -> int:
    """Matrix-product flops of one step of a ReLU network's training: forward ``X W1^T``,
    ``H W2^T``; backward ``R^T H``, ``R W2``, ``(dH * gate)^T X``."""
    return 2 * count * hidden * (2 * inputs + 3 * outputs)


def matmul_peak(dtype, size: int = 1024) -> float:
    """GFLOP/s of one large square matrix product in ``dtype`` on this machine, now."""
    a = jax.random.normal(jax.random.PRNGKey(0), (size, size), dtype=dtype)
    product = jax.jit(lambda m: m @ m)
    product(a).block_until_ready()
    return 2 * size**3 / timed(lambda: product(a), repeat=5) / 1e9


def main():
    task = load_spec(SPEC)
    models = TaskPredictions(task)
    compiled = models.prediction("xor").compiled
    ts = jnp.linspace(0, 12000, 1201)
    deltas = jnp.linspace(0.1, 4.0, 256)
    a0 = jnp.full(4, 1.6e-7)
    grid = jax.jit(jax.vmap(lambda d: compiled.loss_curve(ts, a0, 100.0, [d])))
    grid(deltas).block_until_ready()
    t_jax = timed(lambda: grid(deltas))

    derivation = models.derivation("xor")
    loss = derivation.loss.subs(dict(zip(derivation.initial_strengths, [1.6e-7] * 4))).subs(TAU, 100.0)
    delta = task.parameter("Delta")
    few = np.asarray(deltas[:4])
    start = time.perf_counter()
    for d in few:
        f = sympy.lambdify(TIME, loss.subs(delta, float(d)), "numpy")
        f(np.asarray(ts))
    t_sympy = (time.perf_counter() - start) / len(few) * len(deltas)
    print(
        f"loss curves, 256 Delta x 1201 epochs: jit+vmap {t_jax * 1e3:.2f} ms; "
        f"per-value SymPy (extrapolated) {t_sympy * 1e3:.0f} ms; ratio {t_sympy / t_jax:.0f}x"
    )

    inputs, targets = models.dataset([1.0])
    for seeds in (1, 8):
        run = lambda: train_relu(inputs, targets, 128, 1e-4, 0.01, 12000, range(seeds)).losses  # noqa: E731
        run()
        t = timed(run, repeat=2)
        print(f"ReLU training, 128 units, 12000 epochs, {seeds} seed(s): {t:.3f} s ({seeds * 12000 / t:,.0f} epochs/s)")


if __name__ == "__main__":
    main()
