# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # A gating of your own
#
# A task written in Python, not in a file: four items in two contexts. Each item has a
# feature shared by both contexts, and each context asks for its own second feature. Two
# candidate gatings compete:
#
# - `shared`: one pathway that is on everywhere, and one pathway for each context;
# - `separate`: one pathway for each context only.
#
# The spec is a plain dictionary with the same layout as a TOML spec file. No string in it
# is evaluated as code: expressions are parsed by gdln's own reader.

# %%
import gdln

gdln.use_x64()

items = 4
context_a = [[1 if i == j else 0 for j in range(items)] + [1, 0] for i in range(items)]
context_b = [[1 if i == j else 0 for j in range(items)] + [0, 1] for i in range(items)]
shared_targets = [[1, 1, -1, -1][i] for i in range(items)]
spec = {
    "title": "Two contexts, one shared feature",
    "parameters": {"g": 1.0},
    "data": {
        "inputs": context_a + context_b,
        "targets": [[shared_targets[i], "g" if i < 2 else "-g", 0] for i in range(items)]
        + [[shared_targets[i], 0, "g" if i % 2 == 0 else "-g"] for i in range(items)],
    },
    "training": {"learning_rate": 0.01, "init_scale": 1e-4, "epochs": 6000, "hidden_units": 64, "seeds": 2},
    "network": [
        {
            "name": "shared",
            "pathway": [
                {"name": "common", "active": list(range(2 * items))},
                {"name": "a", "active": list(range(items))},
                {"name": "b", "active": list(range(items, 2 * items))},
            ],
        },
        {
            "name": "separate",
            "pathway": [
                {"name": "a", "active": list(range(items))},
                {"name": "b", "active": list(range(items, 2 * items))},
            ],
        },
    ],
}
task = gdln.task_from_dict(spec, source="two contexts")
print(task.num_datapoints, "datapoints,", task.num_inputs, "inputs,", task.num_outputs, "outputs")

# %% [markdown]
# ## Derive
#
# The pathways of `shared` interact: the common pathway and a context pathway see the same
# datapoints. The derivation says so, and says which dynamics predict the network.

# %%
for name in ("shared", "separate"):
    derivation = gdln.NetworkDerivation(task, name)
    assumptions = derivation.assumptions
    print(name, "| pathways interact:", assumptions["pathways_interact"], "| closed form:", assumptions["closed_form"])
    for pathway in derivation.pathways:
        print("   ", pathway.name, "singular values", [mode.s for mode in pathway.modes])

# %% [markdown]
# The coupling shows in the race ODEs of `shared`, as its LaTeX export writes them (`to_latex`,
# or `gdln derive --latex`): each pathway's strengths `a` are slowed by the others'.

# %%
import re

from IPython.display import Math, display

from gdln.derive.latex import to_latex

latex = to_latex(gdln.NetworkDerivation(task, "shared"))
(odes,) = re.findall(r"\\begin\{align\*\}(.*?)\\end\{align\*\}", latex, re.S)[:1]
display(Math(rf"\begin{{aligned}}{odes}\end{{aligned}}"))

# %% [markdown]
# ## Race
#
# The candidate that reaches 10% of its initial loss first wins, and the derived crossovers
# in `g` say where that changes.

# %%
race = gdln.race_report(task)
print("winner:", race.winner)
for network in race.networks:
    print(f"  {network['name']:<9} t_90 {network['t_90']:.1f}   dynamics: {network['dynamics']}")

# %% [markdown]
# ## Is the winner unique?
#
# The candidates are grouped into orbits under the data's symmetries, and the orbits are
# raced.

# %%
from gdln.verify.uniqueness import unique_report

unique = unique_report(task)
print(unique.automorphisms, "automorphisms; fastest orbit unique:", unique.unique)

# %% [markdown]
# ## Verify
#
# Two seeds of the ReLU network; the candidate it follows, and how closely, as a fraction
# of the initial loss.

# %%
report = gdln.verify_report(task, seeds=2, representations=False)
print("follows:", report.follows)
for network in report.networks:
    print(f"  {network['name']:<9} max deviation {network['max_deviation']:.4f}")

# %% [markdown]
# Here the ReLU network follows neither candidate closely: both deviate by a large fraction
# of the initial loss. The candidate `aligned` is the GDLN of the gate patterns that the
# ReLU network's units settle on in its alignment phase (`gdln align`), and it comes
# closest. To race it against yours, write it into the spec with
# `gdln align SPEC --write-spec FILE`, or cluster the trained network's gates with
# `gdln find-gates`. Where no candidate follows the network, the gating is the question.
