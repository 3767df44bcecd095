"""Initial mode strengths for predictions, from a stated formula or from initial weights;
never fitted to the curves they predict.

Three models, named in ``verify``'s JSON as ``"initial_conditions"`` (:data:`MODELS`):

- ``"alignment"`` (the default): each pathway starts, at the end of the alignment phase
  (:mod:`numeric.alignment`), from the units whose settled gate pattern is its gate (or, when it is no
  gate, the nearest one: :func:`starting_units`),
  with ``P = sum_i (b_i + c_i)^2`` and ``Q = sum_i (b_i - c_i)^2`` per mode, so ``a = (P - Q)/4``
  (:func:`aligned_mode_seeds`); the clock starts at that epoch.
- ``"weights"``: the initial weights themselves, as below.
- ``"width"``: ``a0 = units * init_scale^2 / 2`` from the pathway's width.

For ``"weights"`` (THEORY section 2): a mode ``(u, v)`` of pathway ``p`` starts at
``a0 = sum_i share_ip (b_i + c_i)^2 / 4`` with ``b_i = u . W2[outputs_p, i]`` and
``c_i = W1[i, inputs_p] . v``. Unit ``i`` takes part in pathway ``p`` when its initial
gate ``[W1_i . x_n > 0]`` is on at every datapoint of ``p``; a unit that takes part in
``k`` pathways of the candidate network is shared between them, ``share = 1/k``.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from gdln.derive import formulas
from gdln.derive.spec import Network

from .alignment import Alignment
from .options import InitialConditions
from .race import CompiledNetwork

ALIGNMENT, WEIGHTS, WIDTH = InitialConditions.ALIGNMENT, InitialConditions.WEIGHTS, InitialConditions.WIDTH
MODELS = tuple(InitialConditions)


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


def gate_distances(active: tuple[int, ...], gates) -> np.ndarray:
    """``(units,)`` on how many datapoints each unit's gate pattern ``gates`` ``(N, units)`` differs from ``active``."""
    gates = np.asarray(gates, dtype=bool)
    wanted = np.zeros(gates.shape[0], dtype=bool)
    wanted[list(active)] = True
    return np.sum(gates != wanted[:, None], axis=0)


def starting_units(network: Network, gates) -> list[np.ndarray]:
    """Per pathway, ``(units,)`` whether a unit with settled patterns ``gates`` ``(N, units)`` starts it:
    every unit active somewhere starts the pathway(s) whose gate is nearest to its pattern (fewest
    datapoints differing; all of them on ties). This is Algorithm 1's own rule, a unit belongs to
    its nearest centroid, so a network of rounded centroids (``gdln find-gates``) starts from the
    units it was found from; a unit whose pattern is a gate starts exactly the pathways with it."""
    gates = np.asarray(gates, dtype=bool)
    if not network.pathways:
        return []
    distances = np.stack([gate_distances(p.active, gates) for p in network.pathways])
    nearest = distances.min(axis=0)
    return list((distances == nearest) & np.any(gates, axis=0))


def aligned_mode_seeds(
    network: Network, modes: list[tuple[int, np.ndarray, np.ndarray]], alignment: Alignment, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(P, Q)`` per mode at the end of the alignment phase of ``seed``.

    ``modes`` lists ``(pathway index, u, v)``. Only the units that start the pathway count
    (:func:`starting_units`: settled pattern its gate, or nearest to it): ``b_i = u . W2[outputs, i]``, ``c_i = W1[i, inputs] . v``,
    ``P = sum (b_i + c_i)^2``, ``Q = sum (b_i - c_i)^2``. A balanced mode has ``a = (P - Q)/4``."""
    gates, w1, w2 = alignment.gates[seed], alignment.w1[seed], alignment.w2[seed]
    matched = starting_units(network, gates)
    ps, qs = [], []
    for index, u, v in modes:
        pathway = network.pathways[index]
        b = np.asarray(u) @ w2[np.array(pathway.outputs)][:, matched[index]]
        c = w1[matched[index]][:, np.array(pathway.inputs)] @ np.asarray(v)
        ps.append(float(np.sum((b + c) ** 2)))
        qs.append(float(np.sum((b - c) ** 2)))
    return np.array(ps), np.array(qs)


def aligned_maps(network: Network, alignment: Alignment, seed: int) -> list[np.ndarray]:
    """Per pathway, the map ``sum_i W2[outputs, i] W1[i, inputs]`` of the units that start it
    (:func:`starting_units`, seed ``seed``): where its weight chain starts."""
    gates, w1, w2 = alignment.gates[seed], alignment.w1[seed], alignment.w2[seed]
    maps = []
    for pathway, matched in zip(network.pathways, starting_units(network, gates)):
        maps.append(w2[np.array(pathway.outputs)][:, matched] @ w1[matched][:, np.array(pathway.inputs)])
    return maps


def unmatched_units(network: Network, alignment: Alignment) -> list[int]:
    """Per seed, the units that are on somewhere but start no pathway (:func:`starting_units`)."""
    counts = []
    for gates in alignment.gates:
        matched = np.zeros(gates.shape[1], dtype=bool)
        for starts in starting_units(network, gates):
            matched |= starts
        counts.append(int(np.sum(~matched & np.any(gates, axis=0))))
    return counts
