"""Initial mode strengths for predictions, from a stated formula or from initial weights;
never fitted to the curves they predict.

For a ReLU network (THEORY section 2): a mode ``(u, v)`` of pathway ``p`` starts at
``a0 = sum_i share_ip (b_i + c_i)^2 / 4`` with ``b_i = u . W2[outputs_p, i]`` and
``c_i = W1[i, inputs_p] . v``. Unit ``i`` takes part in pathway ``p`` when its initial
gate ``[W1_i . x_n > 0]`` is on at every datapoint of ``p``; a unit that takes part in
``k`` pathways of the candidate network is shared between them, ``share = 1/k``.
"""

from __future__ import annotations

import math

import jax.numpy as jnp

from derive import formulas
from derive.spec import Network

from .race import CompiledNetwork


def unit_shares(network: Network, initial_gates) -> jnp.ndarray:
    """``(pathways, units)`` shares of each hidden unit, from its gates ``(datapoints, units)``."""
    gates = jnp.asarray(initial_gates, dtype=bool)
    takes_part = jnp.stack([jnp.all(gates[jnp.array(p.active), :], axis=0) for p in network.pathways]).astype(
        jnp.float64
    )
    return takes_part / jnp.maximum(takes_part.sum(axis=0), 1.0)


def relu_initial_strengths(compiled: CompiledNetwork, w1, w2, inputs, values) -> jnp.ndarray:
    """One ``a0`` per mode of ``compiled`` from one ReLU network's initial weights."""
    network = compiled.derivation.network
    shares = unit_shares(network, jnp.asarray(inputs) @ w1.T > 0)
    strengths = []
    for ref, (_, _, u, v) in zip(compiled.derivation.mode_refs, compiled.modes(values)):
        pathway = network.pathways[ref.pathway]
        b = u @ w2[jnp.array(pathway.outputs), :]
        c = w1[:, jnp.array(pathway.inputs)] @ v
        strengths.append(formulas.initial_strength_from_weights(b, c, shares[ref.pathway]))
    return jnp.stack(strengths)


def expected_initial_strengths(compiled: CompiledNetwork, init_scale: float) -> jnp.ndarray:
    """``a0 = units * init_scale^2 / 2`` for every mode: the expectation for the GDLN itself."""
    network = compiled.derivation.network
    return jnp.array(
        [
            formulas.expected_initial_strength(network.pathways[ref.pathway].units, init_scale)
            for ref in compiled.derivation.mode_refs
        ]
    )


def pathway_initial_strengths(network: Network, init_scale: float) -> jnp.ndarray:
    """``a0 = units * init_scale^2 / 2`` per pathway, for the exact reduced flow."""
    return jnp.array([formulas.expected_initial_strength(p.units, init_scale) for p in network.pathways])


def log_expected_initial_strength(units: int, init_scale: float) -> float:
    """``log a0`` of :func:`derive.formulas.expected_initial_strength`, ``log(units * init_scale^2 / 2)``,
    written as ``log units + 2 log init_scale - log 2``: finite for init scales whose ``a0``
    underflows (below about 1e-154 the square is under float range)."""
    if init_scale <= 0:
        return -math.inf
    return math.log(units) + 2.0 * math.log(init_scale) - math.log(2.0)


def expected_log_initial_strengths(compiled: CompiledNetwork, init_scale: float) -> jnp.ndarray:
    """``log a0`` for every mode of ``compiled`` (see :func:`expected_initial_strengths`)."""
    network = compiled.derivation.network
    return jnp.array(
        [
            log_expected_initial_strength(network.pathways[ref.pathway].units, init_scale)
            for ref in compiled.derivation.mode_refs
        ]
    )


def pathway_log_initial_strengths(network: Network, init_scale: float) -> jnp.ndarray:
    """``log a0`` per pathway, for the exact reduced flow (see :func:`pathway_initial_strengths`)."""
    return jnp.array([log_expected_initial_strength(p.units, init_scale) for p in network.pathways])
