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
# # XoR end to end
#
# The paper's first task (Section 3): XoR with a linearly separable third dimension of size
# `Delta`. Two candidate gatings compete: `linear` (one pathway per class) and `xor` (one
# pathway per datapoint). This notebook derives both exactly, races them, checks the race
# against a trained ReLU network, and draws the phase diagram.

# %%
import tomllib
from importlib.resources import files

import gdln

gdln.use_x64()  # gdln computes in 64-bit JAX
spec = tomllib.loads((files("gdln.examples") / "xor.toml").read_text())
task = gdln.task_from_dict(spec, source="xor.toml")
print(task.title, "|", [network.name for network in task.networks])

# %% [markdown]
# ## The derivation
#
# Each network's derivation is a SymPy object. Its properties are the paper's products:
# the effective correlations of each pathway, their singular values and input variances,
# the race ODEs and their closed forms, and the loss.

# %%
linear = gdln.NetworkDerivation(task, "linear")
xor = gdln.NetworkDerivation(task, "xor")
for derivation in (linear, xor):
    pathway = derivation.pathways[0]
    mode = pathway.modes[0]
    print(derivation.network.name, pathway.name, "s =", mode.s, " d =", mode.d)

# %% [markdown]
# The speeds tie at the crossover `Delta*`, which is derived exactly:

# %%
delta = task.parameter("Delta")
(crossover,) = gdln.crossovers(linear, xor, delta, task.values())
print("Delta* =", crossover.expr, "=", float(crossover.expr))
print("below it", crossover.faster_below, "learns first; above it", crossover.faster_above)

# %% [markdown]
# The derivation also exports itself as LaTeX: `to_latex` gives the body that
# `gdln derive --latex-fragment` writes (`--latex` wraps it into a document). Its last three
# displayed equations are the race ODE of `xor`'s four pathways (one class of equal modes),
# its closed form and the loss, shown here as equations (`gather*` and `align*` become
# `gathered` and `aligned` inside one displayed formula):

# %%
import re

from IPython.display import Math, display

from gdln.derive.latex import to_latex

displayed = re.findall(r"\\begin\{(equation|gather|align)\*\}(.*?)\\end\{\1\*\}", to_latex(xor), re.S)
for environment, body in displayed[-3:]:
    display(Math(body if environment == "equation" else rf"\begin{{{environment}ed}}{body}\end{{{environment}ed}}"))

# %% [markdown]
# ## The race
#
# `t_half` and `t_90` are the epochs at which each network's predicted loss falls to 50%
# and 10% of the initial loss, solved on its dynamics.

# %%
for value in (1.0, 2.0):
    race = gdln.race_report(task, {"Delta": value})
    times = {n["name"]: round(n["t_90"], 1) for n in race.networks}
    print(f"Delta = {value}: winner {race.winner}, t_90 {times}")

# %% [markdown]
# ## Checked by training
#
# One seed of the ReLU network, trained for the spec's 12000 epochs. The prediction of each
# candidate comes from the run's initial weights alone; `max_deviation` is a fraction of
# the initial loss.

# %%
report = gdln.verify_report(task, {"Delta": 1.0}, seeds=1, representations=False)
print("follows:", report.follows)
for network in report.networks:
    print(f"  {network['name']:<8} max deviation {network['max_deviation']:.4f}")

# %% [markdown]
# ## The phase diagram
#
# The race over 12 values of Delta, checked by training at 4 of them. The figure shows which
# network wins where, and the derived crossover. `sweep_figure` returns a matplotlib `Figure`,
# drawn without pyplot; `%matplotlib inline` lets the notebook's `display` show it as an image.

# %%
# %matplotlib inline
from gdln.figures.sweep_figure import sweep_figure

sweep = gdln.sweep_report(task, [gdln.parse_axis("Delta=0.25:4:12", task)], check=4)
print("agreement:", {k: v for k, v in sweep.agreement.items() if k != "disagree_points"})
display(sweep_figure(sweep))
