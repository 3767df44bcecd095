"""Builders of item-feature structures (Saxe et al. 2019) and of the context task
(paper Sections 4-5), producing spec dictionaries for :func:`derive.spec.task_from_dict`.

Items are columns of a structure ``F`` (features x items); datapoints of the context
task are ordered context-major: datapoint ``n = c * P + i`` is item ``i`` in context ``c``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from fractions import Fraction
from itertools import combinations
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is imported by the digits builders that use it: `gdln task --help` lists STRUCTURES
    import numpy as np

from ..errors import SpecError
from .limits import MAX_DATA_ENTRIES

PAPER_RING_BUMP = (0, Fraction(33, 100), Fraction(66, 100), 1, 1, Fraction(66, 100), Fraction(33, 100), 0)


def hierarchy(items: int) -> list[list]:
    """Binary tree over ``items = 2^n`` leaves: one feature per tree node (1 + 2 + ... + P rows)."""
    if items < 1 or items & (items - 1):
        raise SpecError("hierarchy", "items", f"needs a power of two items, got {items}")
    rows, groups = [], 1
    while groups <= items:
        size = items // groups
        rows += [[int(i // size == g) for i in range(items)] for g in range(groups)]
        groups *= 2
    return rows


def ring(items: int) -> list[list]:
    """The paper's ring block (8 items): a row of ones, the bump in all 8 cyclic shifts,
    then the first 6 shifts again (15 rows)."""
    if items != len(PAPER_RING_BUMP):
        raise SpecError(
            "ring", "items", f"the paper's ring block is defined for {len(PAPER_RING_BUMP)} items, got {items}"
        )
    shifts = [list(PAPER_RING_BUMP[k:] + PAPER_RING_BUMP[:k]) for k in range(items)]
    return [[1] * items] + shifts + shifts[:6]


def cross(items: int) -> list[list]:
    """The hierarchy with its quarter rows replaced by the item pairs {1,3}, {2,4}, {5,7}, {6,8}."""
    if items != 8:
        raise SpecError("cross", "items", f"the paper's cross block is defined for 8 items, got {items}")
    rows = hierarchy(items)
    pairs = [(0, 2), (1, 3), (4, 6), (5, 7)]
    rows[3:7] = [[int(i in pair) for i in range(items)] for pair in pairs]
    return rows


def chain(items: int) -> list[list]:
    """Saxe et al. 2019's chain (linear order): feature ``k`` is on for items ``k`` and ``k + 1``,
    so neighbours share a feature and the ends share none (``items - 1`` rows)."""
    if items < 2:
        raise SpecError("chain", "items", f"needs at least 2 items, got {items}")
    return [[int(i in (k, k + 1)) for i in range(items)] for k in range(items - 1)]


def clusters(items: int) -> list[list]:
    """Saxe et al. 2019's clusters: items in groups of two, one feature per group and one per item."""
    if items < 2 or items % 2:
        raise SpecError("clusters", "items", f"needs an even number of items, got {items}")
    groups = [[int(i // 2 == g) for i in range(items)] for g in range(items // 2)]
    return groups + [[int(i == k) for i in range(items)] for k in range(items)]


STRUCTURES = {"hierarchy": hierarchy, "ring": ring, "cross": cross, "chain": chain, "clusters": clusters}


def context_task(items: int, contexts: int, blocks: list[str], candidates: str | None = None) -> dict:
    """Spec dictionary of the context task: common hierarchy block plus one block per context.

    Training follows the paper's Appendix H (700 ReLU units, init scale 1e-4) except for
    the step: the paper's 0.001 goes with a loss summed over datapoints, and THEORY's loss
    is a mean, so the same speed needs about ``0.001 N``; 0.01 with ``500 N`` epochs keeps
    discrete steps close to the continuous-time theory and lets every candidate finish."""
    if contexts < 2:
        raise SpecError("context_task", "contexts", f"the context task needs at least 2 contexts, got {contexts}")
    if len(blocks) != contexts:
        raise SpecError(
            "context_task", "blocks", f"expected {contexts} block names (one per context), got {len(blocks)}"
        )
    for name in blocks:
        if name not in STRUCTURES:
            raise SpecError(
                "context_task", "blocks", f"{name}: unknown structure (known: {', '.join(sorted(STRUCTURES))})"
            )
    common = hierarchy(items)
    per_context = [STRUCTURES[name](items) for name in blocks]
    inputs, targets = [], []
    for c in range(contexts):
        for i in range(items):
            inputs.append([int(k == i) for k in range(items)] + [int(k == c) for k in range(contexts)])
            row = [f[i] for f in common]
            for k, block in enumerate(per_context):
                row += [f[i] if k == c else 0 for f in block]
            targets.append(row)
    spec: dict[str, Any] = {
        "title": f"Context task: {items} items, {contexts} contexts, blocks {', '.join(blocks)}",
        "data": {
            "inputs": inputs,
            "targets": targets,
            "contexts": [c + 1 for c in range(contexts) for _ in range(items)],
        },
        "training": {
            "learning_rate": 0.01,
            "init_scale": 1e-4,
            "epochs": 500 * items * contexts,
            "hidden_units": 700,
            "seeds": 3,
        },
        "network": [],
    }
    if candidates == "context-subsets":
        spec["network"] = context_subset_candidates(items, contexts)
    elif candidates is not None:
        raise SpecError(
            "context_task", "candidates", f"{candidates}: unknown candidate family (known: context-subsets)"
        )
    return spec


def context_subset_candidates(items: int, contexts: int) -> list[dict]:
    """``common+j`` for j = 1..K-1 and ``common+all``: a common pathway on every datapoint
    with item and context inputs, plus one item-input pathway per j-subset of contexts."""

    def subset_pathways(size):
        return [
            {
                "name": "contexts-" + "-".join(str(c + 1) for c in subset),
                "active": [c * items + i for c in subset for i in range(items)],
                "inputs": list(range(items)),
            }
            for subset in combinations(range(contexts), size)
        ]

    common = {"name": "common"}
    networks = [{"name": f"common+{j}", "pathway": [common] + subset_pathways(j)} for j in range(1, contexts)]
    networks.append(
        {"name": "common+all", "pathway": [common] + [p for j in range(1, contexts) for p in subset_pathways(j)]}
    )
    return networks


def to_toml(spec: dict) -> str:
    """TOML text of a spec dictionary (numbers, strings, lists, tables, arrays of tables)."""

    def value(v):
        if isinstance(v, bool):
            return str(v).lower()
        if isinstance(v, Fraction):
            return repr(float(v)) if v.denominator != 1 else str(v.numerator)
        if isinstance(v, (int, float)):
            return repr(v)
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"
        raise TypeError(type(v))

    lines = [f"title = {value(spec['title'])}", ""]
    if spec.get("parameters"):
        lines.append("[parameters]")
        lines += [f"{k} = {value(v)}" for k, v in spec["parameters"].items()]
        lines.append("")
    lines.append("[data]")
    lines.append("inputs = [")
    lines += [f"  {value(row)}," for row in spec["data"]["inputs"]]
    lines.append("]")
    lines.append("targets = [")
    lines += [f"  {value(row)}," for row in spec["data"]["targets"]]
    lines.append("]")
    if "contexts" in spec["data"]:
        lines.append(f"contexts = {value(spec['data']['contexts'])}")
    for label, column in spec["data"].get("labels", {}).items():
        lines.append(f"labels.{label} = {value(column)}")
    lines += ["", "[training]"]
    lines += [f"{k} = {value(v)}" for k, v in spec["training"].items()]
    for network in spec["network"]:
        lines += ["", "[[network]]", f"name = {value(network['name'])}"]
        for kind in ("pathway", "node", "edge"):  # modules, or a graph
            for table in network.get(kind, []):
                lines.append(f"[[network.{kind}]]")
                lines += [f"{k} = {value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def xor_task() -> dict:
    """Spec dictionary of the paper's Section 3 task (Figure 2): XoR on two inputs with a third
    input ``+-Delta/2`` that makes the classes linearly separable, and its two candidate ReLNs,
    ``linear`` (one pathway per class) and ``xor`` (one pathway per datapoint). The same task as
    ``examples/xor.toml`` (a test keeps them equal)."""
    return {
        "title": "XoR with a linearly separable third dimension",
        "parameters": {"Delta": 1.0},
        "data": {
            "inputs": [[1, 1, "Delta/2"], [1, -1, "-Delta/2"], [-1, 1, "-Delta/2"], [-1, -1, "Delta/2"]],
            "targets": [[1], [-1], [-1], [1]],
        },
        "training": {"learning_rate": 0.01, "init_scale": 1e-4, "epochs": 12000, "hidden_units": 128, "seeds": 3},
        "network": [
            {
                "name": "linear",
                "pathway": [{"name": "positive", "active": [0, 3]}, {"name": "negative", "active": [1, 2]}],
            },
            {"name": "xor", "pathway": [{"name": f"point{n}", "active": [n]} for n in range(4)]},
        ],
    }


ROUTING_SCHEMES = ("share-1", "share-4", "share-all")


def routing_task(
    domains: int,
    trained: int,
    items: int = 4,
    seed: int = 0,
    hidden: int = 64,
    init_scale: float = 0.02,
    learning_rate: float = 0.3,
    epochs: int = 3000,
) -> dict:
    """Spec dictionary of the routing task (Saxe, Sodhani & Lewallen 2022, Figures 4-5).

    ``M = domains`` input domains, each a bank of ``items`` units, and ``M`` output domains, each
    holding the ``2 items - 1`` features of a hierarchy over the items. Input domain ``i`` is
    trained with the ``K = trained`` output domains ``i, i+1, ..., i+K-1`` (mod M), so every output
    domain is trained from K input domains and the other routes are never seen. Each domain
    codes the items by the rows of its own random signed permutation matrix (seeded): random
    orthogonal inputs that keep the data rational and the derivation exact.

    Candidates (``ROUTING_SCHEMES``), all with two hidden layers of ``hidden`` units per hidden
    node, gated on the input domain at input nodes and on the output domain at output nodes:
    ``share-1`` one private chain per trained route; ``share-4`` hidden layers shared by pairs of
    input domains and pairs of output domains (up to 4 routes each); ``share-all`` one pair of
    hidden layers through which all M^2 routes run.

    The slides' step (0.02) goes with a loss summed over datapoints; THEORY's loss is a mean over
    the ``M K items`` datapoints, so the default step is larger (0.3), with ``epochs`` enough for
    every candidate of M = 4 and M = 7 to learn."""
    _check_routes(domains, trained, "routing_task")
    tree = hierarchy(items)
    _check_route_data(domains, trained, "routing_task", items, items, len(tree))
    rng = random.Random(seed)
    codes = []
    for _ in range(domains):
        order = rng.sample(range(items), items)
        signs = [rng.choice((-1, 1)) for _ in range(items)]
        codes.append([[int(signs[a]) if order[a] == k else 0 for k in range(items)] for a in range(items)])
    features = [[[f[a] for f in tree] for a in range(items)]] * domains
    title = f"Routing task: {domains} domains, {trained} trained output domains per input domain, {items} items"
    return _routing_spec(title, trained, codes, features, hidden, init_scale, learning_rate, epochs)


def _check_routes(domains: int, trained: int, where: str) -> None:
    if domains < 2:
        raise SpecError(where, "domains", f"needs at least 2 domains, got {domains}")
    if not 1 <= trained <= domains:
        raise SpecError(where, "trained", f"needs 1 <= trained <= domains ({domains}), got {trained}")


def _check_route_data(domains: int, trained: int, where: str, items: int, width: int, outputs: int) -> None:
    """The size of the routes' data (``domains * trained * items`` datapoints of ``domains * width``
    inputs and ``domains * outputs`` targets) against the spec limit on data entries, before the
    rows are built: the rows of a thousand domains take longer to build than to refuse."""
    entries = domains * trained * items * domains * max(width, outputs)
    if entries > MAX_DATA_ENTRIES:
        raise SpecError(
            where,
            "domains",
            f"{domains} domains with {trained} trained each give {entries} data entries,"
            f" above the limit of {MAX_DATA_ENTRIES}",
        )


def _routing_spec(
    title: str,
    trained: int,
    codes: list,
    features: list,
    hidden: int,
    init_scale: float,
    learning_rate: float,
    epochs: int,
) -> dict:
    """The routing task's spec from per-domain codes: ``codes[i][a]`` is item ``a``'s input in
    input domain ``i``, ``features[j][a]`` its target in output domain ``j``. Input domain ``i`` is
    trained with output domains ``i, ..., i+K-1`` (mod M); candidates are ``ROUTING_SCHEMES``."""
    domains, items = len(codes), len(codes[0])
    width, outputs = len(codes[0][0]), len(features[0][0])
    routes = [(i, (i + r) % domains) for i in range(domains) for r in range(trained)]
    inputs, targets, source_labels, target_labels, item_labels = [], [], [], [], []
    for i, j in routes:
        for a in range(items):
            row = [0] * (domains * width)
            row[i * width : (i + 1) * width] = codes[i][a]
            out = [0] * (domains * outputs)
            out[j * outputs : (j + 1) * outputs] = features[j][a]
            inputs.append(row)
            targets.append(out)
            source_labels.append(i)
            target_labels.append(j)
            item_labels.append(a)
    return {
        "title": title,
        "data": {
            "inputs": inputs,
            "targets": targets,
            "labels": {"input_domain": source_labels, "output_domain": target_labels, "item": item_labels},
        },
        "training": {
            "learning_rate": learning_rate,
            "init_scale": init_scale,
            "epochs": epochs,
            "hidden_units": hidden,
            "seeds": 3,
        },
        "network": [_routing_network(scheme, domains, width, outputs, hidden, routes) for scheme in ROUTING_SCHEMES],
    }


def _routing_network(scheme, domains, items, features, hidden, routes) -> dict:
    nodes: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []
    for i in range(domains):
        nodes.append({"name": f"in{i}", "inputs": list(range(i * items, (i + 1) * items)), "when": {"input_domain": i}})
    for j in range(domains):
        nodes.append(
            {"name": f"out{j}", "outputs": list(range(j * features, (j + 1) * features)), "when": {"output_domain": j}}
        )
    if scheme == "share-all":
        groups = [(list(range(domains)), list(range(domains)))]
    elif scheme == "share-4":
        pairs = [list(range(start, min(start + 2, domains))) for start in range(0, domains, 2)]
        groups = [(a, b) for a in pairs for b in pairs]
    else:
        groups = [([i], [j]) for i, j in routes]
    for g, (sources, targets) in enumerate(groups):
        first, second = f"h{g}a", f"h{g}b"
        nodes += [{"name": first, "size": hidden}, {"name": second, "size": hidden}]
        edges += [{"source": f"in{i}", "target": first} for i in sources]
        edges.append({"source": first, "target": second})
        edges += [{"source": second, "target": f"out{j}"} for j in targets]
    if scheme == "share-1":  # input and output nodes of routes never trained have no edges: leave them out
        used = {e["source"] for e in edges} | {e["target"] for e in edges}
        nodes = [n for n in nodes if n["name"] in used]
    return {"name": scheme, "node": nodes, "edge": edges}


def section6_task(hidden: int = 128, init_scale: float = 0.02, seeds: int = 5) -> dict:
    """Spec dictionary of the paper's Section 6: the Section 4 context task (8 items, contexts with
    hierarchy, ring and cross blocks) for a ReLU network with two hidden layers, and the GDLN the
    paper reads off it (Figure 6a): a first hidden layer always on, shared by every path, under a
    gated second layer of a common pathway and one pathway per pair of contexts.

    Two ReLU layers from the single-layer task's init (1e-4) would sit on a plateau for ever (a path
    of three layers starts at ``init^3``); ``init_scale`` 0.02 with ``hidden`` units per layer learns
    in a few thousand epochs at the Section 4 step."""
    contexts = 3
    spec = context_task(8, contexts, ["hierarchy", "ring", "cross"])
    spec["title"] = "Section 6: the context task for two hidden layers"
    spec["training"].update({"init_scale": init_scale, "hidden_units": hidden, "seeds": seeds, "epochs": 6000})
    labels = spec["data"]["contexts"]
    second = hidden // (1 + contexts)
    nodes: list[dict[str, Any]] = [
        {"name": "x", "inputs": list(range(len(spec["data"]["inputs"][0])))},
        {"name": "layer1", "size": hidden},
        {"name": "common", "size": second},
        {"name": "y", "outputs": list(range(len(spec["data"]["targets"][0])))},
    ]
    edges: list[dict[str, Any]] = [
        {"source": "x", "target": "layer1"},
        {"source": "layer1", "target": "common"},
        {"source": "common", "target": "y"},
    ]
    for pair in combinations(range(1, contexts + 1), 2):
        name = "contexts-" + "".join(str(c) for c in pair)
        nodes.append({"name": name, "size": second, "active": [n for n, c in enumerate(labels) if c in pair]})
        edges += [{"source": "layer1", "target": name}, {"source": name, "target": "y"}]
    spec["network"] = [{"name": "shared-layer1", "node": nodes, "edge": edges}]
    return spec


#: decimals kept of the digits' centred and scaled pixels: exact, short rationals for the spec
DIGITS_DECIMALS = 4


def _digit_pixels(
    classes: list[int], per_class: int, projection: int | None, seed: int, where: str
) -> tuple[np.ndarray, list[int], list[int]]:
    """The first ``per_class`` images of each of ``classes`` from scikit-learn's bundled digits:
    pixels centred over them, constant pixels dropped, optionally projected onto ``projection``
    seeded Gaussian directions, scaled to mean squared norm 1; with each image's class position and digit."""
    import numpy as np
    from sklearn.datasets import load_digits

    if not classes or len(set(classes)) != len(classes) or not all(0 <= c <= 9 for c in classes):
        raise SpecError(where, "classes", f"expected distinct digits 0-9, got {classes}")
    digits = load_digits()
    chosen = []
    for c in classes:
        found = np.flatnonzero(digits.target == c)
        if per_class < 1 or per_class > len(found):
            raise SpecError(where, "per-class", f"between 1 and {len(found)} images of digit {c}")
        chosen.extend(found[:per_class].tolist())
    pixels = digits.data[chosen].astype(float)
    pixels = pixels - pixels.mean(axis=0)
    pixels = pixels[:, np.any(pixels != 0, axis=0)]
    if projection is not None:
        if projection < 1 or projection > 64:
            raise SpecError(where, "projection", f"between 1 and 64 dimensions, got {projection}")
        matrix = np.random.default_rng(seed).normal(size=(pixels.shape[1], projection)) / np.sqrt(projection)
        pixels = pixels @ matrix
    pixels = pixels / np.sqrt(np.mean(np.sum(pixels**2, axis=1)))
    digit_of = [int(digits.target[n]) for n in chosen]
    return pixels, [classes.index(d) for d in digit_of], digit_of


def digits_task(
    classes: Sequence[int] = (0, 1, 2),
    per_class: int = 50,
    projection: int | None = None,
    seed: int = 0,
    hidden: int = 64,
    init_scale: float = 0.01,
    learning_rate: float = 0.1,
    epochs: int = 2000,
    seeds: int = 3,
) -> dict:
    """Spec dictionary of real data: scikit-learn's bundled 8x8 digits (no download).

    The first ``per_class`` images of each of ``classes``, in class order; one-hot targets.
    Pixels are centred over the chosen images, pixels constant over them are dropped, and the
    inputs are scaled so that the mean squared input norm is 1, then rounded to
    :data:`DIGITS_DECIMALS` decimals (the spec's numbers are exact decimals). With ``projection
    = D`` the centred pixels are first projected onto ``D`` dimensions by a seeded Gaussian
    matrix. Candidates: ``linear`` (one pathway on every image) and ``by-class`` (one pathway per
    class, active on its images)."""
    import numpy as np

    classes = [int(c) for c in classes]
    pixels, labels, digit_of = _digit_pixels(classes, per_class, projection, seed, "digits_task")
    inputs = np.round(pixels, DIGITS_DECIMALS)
    targets = np.eye(len(classes), dtype=int)[labels]
    images = list(range(len(labels)))
    return {
        "title": f"digits {','.join(map(str, classes))}, {per_class} images each"
        + ("" if projection is None else f", projected to {projection} dimensions"),
        "data": {
            "inputs": [[float(v) for v in row] for row in inputs],
            "targets": targets.tolist(),
            "labels": {"digit": digit_of},
        },
        "training": {
            "learning_rate": learning_rate,
            "init_scale": init_scale,
            "epochs": epochs,
            "hidden_units": hidden,
            "seeds": seeds,
        },
        "network": [
            {"name": "linear", "pathway": [{"name": "all", "active": images}]},
            {
                "name": "by-class",
                "pathway": [
                    {"name": f"digit{c}", "active": [n for n in images if labels[n] == k]}
                    for k, c in enumerate(classes)
                ],
            },
        ],
    }


def digits_routing_task(
    domains: int,
    trained: int,
    classes: Sequence[int] = (0, 1, 2),
    per_class: int = 10,
    seed: int = 0,
    hidden: int = 64,
    init_scale: float = 0.02,
    learning_rate: float = 0.1,
    epochs: int = 3000,
) -> dict:
    """Spec dictionary of the slides' naturalistic routing task (Neural Race Reduction, Figure 7)
    on scikit-learn's bundled digits.

    Input domain ``i`` shows every chosen image (:func:`digits_task`'s pixels) through its own
    fixed random rotation of the pixels; output domain ``j`` names the class through its own fixed
    permutation of the labels (both seeded), as ``C e_k - 1`` over the ``C`` classes: one-hot
    scaled and centred, so that a network without biases can fit it. The routes, labels and candidates are
    :func:`routing_task`'s: input domain ``i`` is trained with output domains ``i, ..., i+K-1``
    (mod M), and ``item`` is the image."""
    import numpy as np

    _check_routes(domains, trained, "digits_routing_task")
    classes = [int(c) for c in classes]
    pixels, labels, _ = _digit_pixels(classes, per_class, None, seed, "digits_routing_task")
    _check_route_data(domains, trained, "digits_routing_task", len(pixels), pixels.shape[1], len(classes))
    rng = np.random.default_rng(seed)
    width, count = pixels.shape[1], len(classes)
    codes = []
    for _ in range(domains):
        q, r = np.linalg.qr(rng.normal(size=(width, width)))
        rotated = np.round(pixels @ (q * np.sign(np.diag(r))), DIGITS_DECIMALS)
        codes.append([[float(v) for v in row] for row in rotated])
    # centred targets (count e_k - 1): the bias-free network cannot output the mean 1/count,
    # so with one-hot targets every route would keep a floor of 1/count of its loss
    features = []
    for _ in range(domains):
        permutation = rng.permutation(count)
        features.append([[count - 1 if k == permutation[label] else -1 for k in range(count)] for label in labels])
    title = (
        f"Routing task on digits {','.join(map(str, classes))} ({per_class} images each): "
        f"{domains} domains, {trained} trained output domains per input domain"
    )
    return _routing_spec(title, trained, codes, features, hidden, init_scale, learning_rate, epochs)
