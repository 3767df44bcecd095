"""Every size a spec can state, and the sizes of the work it asks for, with their limits.

One place for each number: the spec reader (:mod:`derive.spec`), the graph reader
(:mod:`derive.spec.graph`), the data-file reader (:mod:`derive.spec.data_files`) and the training checks
(:mod:`verify.checks`) import them from here, and the README's "Limits and checks" table gives
the same numbers (``tests/test_docs.py`` compares them). Each is checked before any work,
with a one-line :class:`~derive.errors.SpecError` naming the key. The limits of an expression
(its length, depth and exponents) live with the expression reader, :mod:`derive.spec.expressions`.
"""

from __future__ import annotations

# --- the spec file -----------------------------------------------------------------------
MAX_SPEC_BYTES = 2 * 2**20  # size of a spec file
MAX_NESTING = 32  # levels of tables and arrays in a spec
MAX_PARAMETERS = 100  # entries of [parameters]: crossovers are solved in each
# digits of an integer literal: 2**1024, the end of the float range, has 309. A longer one is
# refused naming its key (beyond the float range), or naming its line where the TOML reader
# cannot convert it (Python's int() stops at 4300 digits with a ValueError)
MAX_INTEGER_DIGITS = 309

# --- data ----------------------------------------------------------------------------------
MAX_DATA_ENTRIES = 100_000  # entries of data.inputs, and of data.targets (inline or from a file)
MAX_DATA_FILE_BYTES = 64 * 2**20  # size of a data file (data.file)
MAX_LABELS = 100  # labels per datapoint: data.labels, with data.contexts counted as one
DATA_MAGNITUDE = (1e-30, 1e30)  # every non-zero data value, at the parameter values in use

# --- networks --------------------------------------------------------------------------------
MAX_NETWORKS = 100
MAX_PATHWAYS = 1000  # per network in the module form
MAX_UNITS = 100_000  # training.hidden_units, a pathway's units, a graph node's size
MAX_HIDDEN_LAYERS = 100  # per pathway, and hidden nodes on any path of a graph
MAX_NODES = 1000  # per network in the graph form
MAX_EDGES = 10_000  # per network in the graph form
MAX_PATHS = MAX_PATHWAYS  # per network in the graph form: its paths are the module form's pathways
# paths of a graph whose paths share edges that `gdln derive` writes out: its Eq. 6 system holds a
# term for every pair of paths into an output node, each path's drive repeated on every edge of
# the path (100 paths: 133 kB of text in 23 s; 1000 paths: over 600 s). race and verify read the
# same system as arrays, and take MAX_PATHS (race of 1000 paths: 13 s)
MAX_DERIVED_PATHS = 100
# gate values a network holds, one per datapoint for each pathway (module form), or for each
# node, edge and path (graph form): a gate that is always on is stored too
MAX_GATE_VALUES = 10**7

# --- training ---------------------------------------------------------------------------------
MAX_SEEDS = 1000
MAX_EPOCHS = 10**8
MAX_LEARNING_RATE = 1e6
MAX_INIT_SCALE = 1e3
# a training run, so that its arrays fit in memory (verify.checks.check_training_size)
MAX_LOSS_VALUES = 10**8  # seeds x (epochs + 1) recorded losses
MAX_WEIGHTS = 10**7  # seeds x weights of the trained network
MAX_ACTIVATIONS = 10**8  # seeds x datapoints x hidden units

# --- gdln sweep -------------------------------------------------------------------------------
# seeds x grid points: the runs of the alignment phase and of the descents that follow it (the
# largest grid, 16384 points, at the spec's default of 3 seeds)
MAX_SWEEP_RUNS = 49_152
# checked points x seeds: the checks' training runs, as many as the alignment phase's. They are
# trained a chunk at a time (verify.sweep.CHECK_CHUNK_BYTES), so memory does not grow with them,
# and shared over processes where there are several (gdln sweep --processes)
MAX_SWEEP_TRAINING_RUNS = MAX_SWEEP_RUNS
