"""Hypothesis strategies for specs, valid and broken, and the tests' own TOML writer (independent
of gdln's :func:`derive.spec.to_toml`), shared by the fuzzing tests."""

from __future__ import annotations

import json
import math

from hypothesis import strategies as st

# --- TOML rendering ---------------------------------------------------------------------


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{"
            + ", ".join(f"{json.dumps(str(k), ensure_ascii=False)} = {toml_value(v)}" for k, v in value.items())
            + "}"
        )
    raise TypeError(type(value))


def to_toml(document: dict) -> str:
    return _nesting(_to_toml(document))


def _nesting(text: str) -> str:
    """Strings of brackets around 1 stand for nested arrays (TOML nesting tests)."""
    import re

    return re.sub(r'"(\[+)1(\]+)"', lambda m: m.group(1) + "1" + m.group(2), text)


def _to_toml(document: dict) -> str:
    lines = []
    for key, value in document.items():
        if key not in ("parameters", "data", "training", "network"):
            lines.append(f"{json.dumps(key, ensure_ascii=False)} = {toml_value(value)}")
    for table in ("parameters", "data", "training"):
        if table in document:
            value = document[table]
            if not isinstance(value, dict):
                lines.append(f"{table} = {toml_value(value)}")
                continue
            lines.append(f"[{table}]")
            lines += [f"{json.dumps(str(k), ensure_ascii=False)} = {toml_value(v)}" for k, v in value.items()]
    for network in document.get("network", []):
        lines.append("[[network]]")
        for key, value in network.items():
            if key != "pathway":
                lines.append(f"{json.dumps(key)} = {toml_value(value)}")
        for pathway in network.get("pathway", []):
            lines.append("[[network.pathway]]")
            lines += [f"{json.dumps(k)} = {toml_value(v)}" for k, v in pathway.items()]
    return "\n".join(lines) + "\n"


# --- strategies ---------------------------------------------------------------------------

NASTY_EXPRESSIONS = [
    "((((64**64)**64)**64)**64)",
    "(2**64)**64",
    "64**(64**64)",
    "exp(exp(exp(10)))",
    "2**sin(exp(exp(100)))",
    "exp(1000)",
    "exp(700)*exp(700)",
    "1e200",
    "(-1)**0.5",
    "(-8)**(1/3)",
    "log(-Delta)",
    "log(0)",
    "sqrt(-Delta)",
    "sqrt(-1)",
    "0**-1",
    "1/(Delta-1)",
    "1/(Delta-Delta)",
    "9" * 400,
    "(" * 250 + "1" + ")" * 250,
    "-" * 300 + "1",
    "+".join(["Delta"] * 120),
    "__import__('os').system('true')",
    "Delta.real",
    "[1][0]",
    "lambda: 1",
    "1 +",
    "",
    "Delta if 1 else 2",
    "tan(Delta)",
    "sin(Delta)",
    "Delta**64*Delta",
    "Delta*1e-40",
    "1e-320",
]
ATOMS = ["Delta", "alpha", "1", "2", "0", "0.5", "3", "64", "pi", "E", "Gamma", "t", "1e-5", "1e300", "1e-300"]


@st.composite
def expression_text(draw, depth: int = 0) -> str:
    if depth >= 3 or draw(st.integers(0, 2)) == 0:
        return draw(st.sampled_from(ATOMS + NASTY_EXPRESSIONS))
    kind = draw(st.sampled_from(["binary", "binary", "function", "negate"]))
    a = draw(expression_text(depth + 1))
    if kind == "binary":
        b = draw(expression_text(depth + 1))
        return f"({a}){draw(st.sampled_from(['+', '-', '*', '/', '**']))}({b})"
    if kind == "function":
        return f"{draw(st.sampled_from(['sqrt', 'exp', 'log', 'sin', 'cos', 'abs', 'open']))}({a})"
    return f"-({a})"


NUMBERS = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([0.5, -1.5, 1e-300, 1e300, 1e-40, 1e40, 10**400, -(10**400), 2**1023, float("nan"), float("inf")]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(),
)
BAD_ENTRIES = st.one_of(NUMBERS, expression_text(), st.sampled_from([True, "x", [1], {"a": 1}, [[[[1]]]]]))
NAMES = st.sampled_from(
    [
        "Delta",
        "alpha",
        "k",
        "t",
        "tau",
        "\uff54",
        "\uff24elta",
        "a_1",
        "b0_x",
        "exp",
        "pi",
        "x0",
        "\u0394",
        "lambda",
        "1x",
        "",
        "I",
        "select",
    ]
)
TRAINING = st.fixed_dictionaries(
    {},
    optional={
        "learning_rate": st.one_of(st.sampled_from([0.01, 0.1, 100.0, 1e300, 0.0, -1.0, 10**400]), NUMBERS),
        "init_scale": st.one_of(st.sampled_from([1e-4, 0.1, 1e-160, 1e300, 0.0]), NUMBERS),
        "epochs": st.one_of(st.sampled_from([1, 50, 10**8, 10**9, 10**30, 0, -5, 2.5]), st.integers()),
        "hidden_units": st.one_of(st.sampled_from([1, 8, 10**5, 10**12, 0]), st.integers()),
        "seeds": st.one_of(st.sampled_from([1, 2, 1000, 1001, 10**20, 0]), st.integers()),
        "bogus": st.just(1),
    },
)


@st.composite
def valid_spec(draw) -> dict:
    """Small tasks in the style of the XoR example: integer data with a last input column that
    may be linear in a parameter Delta, one to three pathways per network."""
    rows = draw(st.integers(2, 4))
    width = draw(st.integers(1, 3))
    outputs = draw(st.integers(1, 2))
    last = st.one_of(st.integers(-2, 2), st.sampled_from(["Delta", "-Delta", "Delta/2", "-Delta/2", "2*Delta"]))
    inputs = [[draw(st.integers(-2, 2)) for _ in range(width - 1)] + [draw(last)] for _ in range(rows)]
    targets = [[draw(st.integers(-1, 1)) for _ in range(outputs)] for _ in range(rows)]
    networks = []
    for k in range(draw(st.integers(1, 2))):
        pathways = []
        for _ in range(draw(st.integers(1, 3))):
            active = draw(st.lists(st.integers(0, rows - 1), min_size=1, max_size=rows, unique=True))
            pathways.append({"active": sorted(active)})
        networks.append({"name": f"n{k}", "pathway": pathways})
    training = {
        "learning_rate": draw(st.sampled_from([0.01, 0.05, 3.0])),
        "init_scale": draw(st.sampled_from([1e-4, 1e-2])),
        "epochs": draw(st.sampled_from([200, 2000])),
        "hidden_units": 16,
        "seeds": 1,
    }
    return {
        "parameters": {"Delta": draw(st.sampled_from([0.5, 1.0, 2.0]))},
        "data": {"inputs": inputs, "targets": targets},
        "training": training,
        "network": networks,
    }


@st.composite
def broken_spec(draw) -> dict:
    """A small valid task with one thing broken: an entry, the parameters, the training
    settings, a network, the shape of the data or its nesting."""
    document = draw(valid_spec())
    data = document["data"]
    how = draw(st.sampled_from(["entry", "entry", "entry", "parameters", "training", "network", "shape", "nesting"]))
    if how == "entry":
        matrix = data[draw(st.sampled_from(["inputs", "targets"]))]
        row = draw(st.integers(0, len(matrix) - 1))
        matrix[row][draw(st.integers(0, len(matrix[row]) - 1))] = draw(BAD_ENTRIES)
    elif how == "parameters":
        document["parameters"] = draw(st.dictionaries(NAMES, NUMBERS, min_size=1, max_size=3))
    elif how == "training":
        document["training"].update(draw(TRAINING))
    elif how == "network":
        network = document["network"][draw(st.integers(0, len(document["network"]) - 1))]
        change = draw(
            st.sampled_from(["active", "units", "hidden_layers", "inputs", "outputs", "colour", "name", "none"])
        )
        if change == "name":
            network["name"] = draw(st.sampled_from(["", "bad name", "n1" if network["name"] == "n0" else "n0"]))
        elif change == "none":
            network["pathway"] = []
        else:
            value = draw(st.one_of(NUMBERS, st.lists(st.integers(-1, 4), max_size=4)))
            network["pathway"][0][change] = value
    elif how == "shape":
        if draw(st.booleans()):
            data["inputs"][0] = data["inputs"][0][:-1] or [[]]
        else:
            data["targets"].append([1] * len(data["targets"][0]))
    else:
        depth = draw(st.sampled_from([5, 40, 3000]))
        data["inputs"][0][0] = "[" * depth + "1" + "]" * depth  # a string: becomes a real nesting below
    return document


@st.composite
def corrupted(draw, text: str) -> str:
    """The TOML text, sometimes cut short or with a stray character."""
    how = draw(st.sampled_from(["keep", "keep", "keep", "cut", "insert"]))
    if how == "keep" or not text:
        return text
    position = draw(st.integers(0, len(text) - 1))
    if how == "cut":
        return text[:position]
    return text[:position] + draw(st.sampled_from(["[", "]", "{", '"', "=", "\n", "\x00", "\u2028"])) + text[position:]
