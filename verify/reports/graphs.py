"""The reports of graph networks trained against the theory: `GraphVerifyReport` (the Eq. 6
race), `ZeroShotReport` (the routing task) and `DepthReport` (two hidden layers)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gdln.derive.words import plural

from .base import Report, list_cell, markdown_table, table_cell


@dataclass(frozen=True)
class GraphVerifyReport(Report):
    """`graph_verify_report`'s result (``gdln verify`` on a task whose networks share edges):
    the Eq. 6 race against gated graph networks trained from decoupled and from random weights.

    Attributes:
        parameters: the spec's parameters at the values used (name -> value).
        epochs: the epochs trained (one gradient step each).
        seeds: the random-weight seeds trained.
        learning_rate: the training's step.
        init_scale: the standard deviation of the random initial weights.
        networks: per candidate: ``name``, ``theory`` (its ``t_90``/``t_half``), ``trained``
            (the same per seed, from random weights), ``max_deviation_decoupled`` (from decoupled
            weights, where the reduction is exact), ``max_deviation`` (per seed), ``final_loss``
            (``theory`` and ``trained`` per seed), ``layer_singular_values`` (by the edges'
            place: ``trained`` and ``theory``), and ``curves`` where asked for.
        ranking: the candidates by the theory's ``t_90`` (``theory``) and by the trained
            networks' mean (``trained``), fastest first.
    """

    parameters: dict[str, float]
    epochs: int
    seeds: int
    learning_rate: float
    init_scale: float
    networks: list[dict[str, Any]]
    ranking: dict[str, list[str]]

    def _repr_markdown_(self) -> str:
        rows = [
            {
                "name": n["name"],
                "theory": n["theory"]["t_90"],
                "trained": ", ".join(table_cell(t) for t in n["trained"]["t_90"]),
                "decoupled": n["max_deviation_decoupled"],
                "random": max(n["max_deviation"]),
            }
            for n in self.networks
        ]
        columns = [
            ("name", "network"),
            ("theory", "t_90 theory (epochs)"),
            ("trained", "t_90 trained, per seed"),
            ("decoupled", "max deviation, decoupled weights"),
            ("random", "max deviation, random weights (largest seed)"),
        ]
        ranking = self.ranking
        head = f"**ranking: theory {', '.join(ranking['theory'])}; trained {', '.join(ranking['trained'])}**"
        return head + "\n\n" + markdown_table(rows, columns)


@dataclass(frozen=True)
class ZeroShotReport(Report):
    """`zero_shot_report`'s result (``gdln zero-shot``): the routing task's error on trained and
    untrained routes, over the number of trained domains and over the init scale.

    Attributes:
        data: the items routed: ``hierarchy`` or ``digits``.
        domains: the number of input (and output) domains M.
        network: the candidate trained.
        seeds: the seeds trained per point.
        epochs: the epochs trained.
        learning_rate: the training's step.
        scale_trained_domains: the K of the init-scale sweep.
        by_trained: per K: ``trained_domains``, ``fraction`` (K / M), ``trained`` and
            ``untrained`` (per seed, the loss over a zero output's on those routes),
            ``similarity`` (per seed, of one item's representations across input domains), and
            ``curves`` where asked for.
        by_init_scale: per init scale: ``init_scale`` and the same per-seed entries.
    """

    data: str
    domains: int
    network: str
    seeds: int
    epochs: int
    learning_rate: float
    scale_trained_domains: int
    by_trained: list[dict[str, Any]]
    by_init_scale: list[dict[str, Any]]

    def _repr_markdown_(self) -> str:
        def mean(values: list[float]) -> float | None:
            finite = [v for v in values if math.isfinite(v)]
            return sum(finite) / len(finite) if finite else None

        def rows(entries: list[dict], key: str) -> list[dict]:
            return [{key: e[key], "trained": mean(e["trained"]), "untrained": mean(e["untrained"])} for e in entries]

        errors = [("trained", "trained routes (mean)"), ("untrained", "untrained routes (mean)")]
        head = (
            f"**{self.network} on the routing task ({self.data})**, M = {self.domains}, "
            f"{plural(self.seeds, 'seed')}: loss over the loss of a zero output"
        )
        return "\n\n".join(
            [
                head,
                markdown_table(rows(self.by_trained, "trained_domains"), [("trained_domains", "K"), *errors]),
                markdown_table(
                    rows(self.by_init_scale, "init_scale"),
                    [("init_scale", f"init scale (K = {self.scale_trained_domains})"), *errors],
                ),
            ]
        )


@dataclass(frozen=True)
class DepthReport(Report):
    """`depth_report`'s result (paper Section 6): a ReLU network with two hidden layers against a
    GDLN graph, both trained from random weights over the same seeds.

    Attributes:
        network: the GDLN compared.
        seeds: the seeds trained.
        epochs: the epochs trained.
        hidden_units: the ReLU network's units per hidden layer.
        init_scale: the standard deviation of the random initial weights.
        initial_loss: the ReLU network's mean loss at epoch 0.
        mean: per model (``relu``, ``gdln``), the loss per epoch, mean over seeds.
        spread: per model, its standard deviation over seeds.
        nearest_the_mean: per model, the seed whose curve is nearest the mean.
        typical: per model, that seed's loss per epoch.
        max_deviation_typical: the largest difference of the two typical curves, over the initial loss.
        max_deviation_mean: the same for the means.
        max_spread: per model, the largest spread over the initial loss.
        first_layer_always_on: per seed, the fraction of first-layer units on at every datapoint.
        second_layer_patterns: per seed, the distinct on-patterns of second-layer units that carry output.
        second_layer_patterns_one_layer_cannot_make: per seed, how many of those one ReLU unit on
            the inputs could not make (where depth breaks Lemma 4.1).
    """

    network: str
    seeds: int
    epochs: int
    hidden_units: int
    init_scale: float
    initial_loss: float
    mean: dict[str, list[float]]
    spread: dict[str, list[float]]
    nearest_the_mean: dict[str, int]
    typical: dict[str, list[float]]
    max_deviation_typical: float
    max_deviation_mean: float
    max_spread: dict[str, float]
    first_layer_always_on: list[float]
    second_layer_patterns: list[int]
    second_layer_patterns_one_layer_cannot_make: list[int]

    def _repr_markdown_(self) -> str:
        rows: list[dict[str, Any]] = [
            {"measure": "max deviation of the typical runs (of the initial loss)", "value": self.max_deviation_typical},
            {"measure": "max deviation of the means", "value": self.max_deviation_mean},
            *({"measure": f"max spread over seeds, {m}", "value": v} for m, v in self.max_spread.items()),
            {"measure": "first-layer units on everywhere, per seed", "value": list_cell(self.first_layer_always_on)},
            {"measure": "second-layer patterns, per seed", "value": list_cell(self.second_layer_patterns)},
            {
                "measure": "of them, not made by one ReLU unit on the inputs",
                "value": list_cell(self.second_layer_patterns_one_layer_cannot_make),
            },
        ]
        head = (
            f"**ReLU network with two hidden layers of {self.hidden_units} units against {self.network}** "
            f"({plural(self.seeds, 'seed')}, {self.epochs} epochs)"
        )
        return head + "\n\n" + markdown_table(rows, [("measure", "measure"), ("value", "value")])
