"""Numeric data arrays of a task at given parameter values (compiled once per task)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from gdln.derive.spec import Task

from .compile import compile_expressions


class NumericDataset:
    """``dataset(values) -> (inputs, targets)`` as float64 arrays, values in parameter order."""

    def __init__(self, task: Task):
        self.task = task
        entries = list(task.inputs) + list(task.targets)
        self._evaluate = compile_expressions(entries, list(task.parameters), "dataset")

    def __call__(self, values):
        flat = self._evaluate(*values) if self.task.parameters else self._evaluate()
        rows, cols, outs = self.task.num_datapoints, self.task.num_inputs, self.task.num_outputs
        return jnp.reshape(flat[: rows * cols], (rows, cols)), jnp.reshape(flat[rows * cols :], (rows, outs))

    def batch(self, values) -> tuple[np.ndarray, np.ndarray]:
        """Inputs ``(points, N, in)`` and targets ``(points, N, out)`` at every row of ``values``
        ``(points, parameters)``, in one call of the compiled entries."""
        values = np.asarray(values, dtype=np.float64)
        rows, cols, outs = self.task.num_datapoints, self.task.num_inputs, self.task.num_outputs
        flat = np.asarray(self._evaluate(*values.T) if self.task.parameters else self._evaluate(), dtype=np.float64)
        flat = np.broadcast_to(flat.reshape(rows * (cols + outs), -1), (rows * (cols + outs), len(values))).T
        return flat[:, : rows * cols].reshape(-1, rows, cols), flat[:, rows * cols :].reshape(-1, rows, outs)
