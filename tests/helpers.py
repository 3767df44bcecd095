"""What several test files share: the repository's paths, the in-process CLI runner whose outcome
must be exit 0 with strict JSON or exit 2 with one line, trained reference times, and a race whose
compiled solve the disk cache has stored (to garble or plant)."""

from __future__ import annotations

import json
import math
import resource
import signal
from contextlib import contextmanager
from pathlib import Path

from hypothesis import HealthCheck

from gdln.cli import main

#: the settings of the generated-input tests: the same examples every run, no deadline
FUZZ = dict(
    derandomize=True, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)

ROOT = Path(__file__).resolve().parent.parent
XOR_SPEC = ROOT / "examples" / "xor.toml"

#: issue 47's task, one definition for the tests that use it: four items with a tree of features
#: (a root, two branch features scaled by b, four leaves) in two contexts; context 1 adds
#: cross-cutting targets scaled by a, context 2 targets aligned with the tree; defaults a = 1, b = 1,
#: where the generic derivation fails (a = 1 for dense, a = b for common+ctx). ``TREE_DATA`` holds
#: all but the candidates, ``TREE_NETWORKS`` each candidate's tables, ``TREE_SPEC`` the whole spec.
TREE_DATA = """title = "a tree of features in two contexts"

[parameters]
a = 1.0
b = 1.0

[data]
inputs = [
  [1, 0, 0, 0, 1, 0], [0, 1, 0, 0, 1, 0], [0, 0, 1, 0, 1, 0], [0, 0, 0, 1, 1, 0],
  [1, 0, 0, 0, 0, 1], [0, 1, 0, 0, 0, 1], [0, 0, 1, 0, 0, 1], [0, 0, 0, 1, 0, 1],
]
targets = [
  [1, "b", 0, 1, 0, 0, 0, "a", 0, 0, 0],
  [1, "b", 0, 0, 1, 0, 0, 0, "a", 0, 0],
  [1, 0, "b", 0, 0, 1, 0, "a", 0, 0, 0],
  [1, 0, "b", 0, 0, 0, 1, 0, "a", 0, 0],
  [1, "b", 0, 1, 0, 0, 0, 0, 0, 1, 0],
  [1, "b", 0, 0, 1, 0, 0, 0, 0, 1, 0],
  [1, 0, "b", 0, 0, 1, 0, 0, 0, 0, 1],
  [1, 0, "b", 0, 0, 0, 1, 0, 0, 0, 1],
]
contexts = [1, 1, 1, 1, 2, 2, 2, 2]

[training]
learning_rate = 0.01
init_scale = 0.0001
epochs = 4000
hidden_units = 64
seeds = 2
"""
TREE_NETWORKS = {
    "dense": """
[[network]]
name = "dense"
[[network.pathway]]
name = "all"
""",
    "common+ctx": """
[[network]]
name = "common+ctx"
[[network.pathway]]
name = "common"
inputs = [0, 1, 2, 3]
[[network.pathway]]
name = "context-1"
active = [0, 1, 2, 3]
inputs = [0, 1, 2, 3]
[[network.pathway]]
name = "context-2"
active = [4, 5, 6, 7]
inputs = [0, 1, 2, 3]
""",
    "ctx-only": """
[[network]]
name = "ctx-only"
[[network.pathway]]
name = "context-1"
active = [0, 1, 2, 3]
[[network.pathway]]
name = "context-2"
active = [4, 5, 6, 7]
""",
}
TREE_SPEC = TREE_DATA + "".join(TREE_NETWORKS.values())

#: CPU seconds one fuzzed command may take: about 10x the slowest measured alone (a derive of
#: 2.9 s). CPU time, not wall-clock time: a machine busy with other work slows the wall clock of a
#: run, not its CPU time, so the limit holds under load (README, "Tests").
CPU_SECONDS_PER_RUN = 30
#: wall-clock seconds after which a run counts as hung: 10x the CPU limit, so only a run that
#: would never end trips it, however loaded the machine is
HANG_SECONDS = 10 * CPU_SECONDS_PER_RUN


def cpu_seconds() -> float:
    """CPU time of this process and its threads so far (user and system)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@contextmanager
def time_limit(seconds: int):
    def expire(signum, frame):
        raise TimeoutError(f"run took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _reject_constant(text):
    raise ValueError(f"non-finite number {text} in JSON")


def _finite(value) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


def run_cli(capsys, argv: list[str]) -> tuple[int, str, str]:
    """Run ``gdln argv`` in-process; the outcome must be exit 0 + finite JSON or exit 2 + one line."""
    capsys.readouterr()
    start = cpu_seconds()
    with time_limit(HANG_SECONDS):
        try:
            code = main(argv)
        except SystemExit as exit:  # argparse
            code = exit.code
    elapsed = cpu_seconds() - start
    out, err = capsys.readouterr()
    assert elapsed < CPU_SECONDS_PER_RUN, (argv, elapsed)
    assert "Traceback" not in err, err
    if code == 0:
        if "--json" in argv:
            report = json.loads(out, parse_constant=_reject_constant)
            assert _finite(report)
    else:
        assert code == 2, (argv, code, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert lines[0].startswith("gdln: error: "), err
    return code, out, err


def trained_t90(task, networks, seeds: int = 2) -> dict[str, float]:
    """Per network, the epoch at which explicit-gate GDLNs trained by gradient descent from the
    task's init (``seeds`` seeds, mean loss) reach 10% of the initial loss."""
    import numpy as np

    from gdln.numeric.race import crossing_time
    from gdln.numeric.training import gdln_layout, train_gdln
    from gdln.verify.entries import epoch_grid

    x, y = np.array(task.inputs, float), np.array(task.targets, float)
    ts = np.asarray(epoch_grid(task.training.epochs))
    times = {}
    for network in networks:
        run = train_gdln(
            x,
            y,
            gdln_layout(network, task.num_datapoints),
            task.training.init_scale,
            task.training.learning_rate,
            task.training.epochs,
            range(seeds),
        )
        times[network.name] = crossing_time(ts, np.asarray(run.losses).mean(axis=0), 0.1)
    return times


class StoredSolve:
    """A race of XoR's ``linear`` network (3000 epochs) whose compiled solve the disk cache has
    just written under ``jax/executables``: the files, the race's result, and the same race run
    again by a process that has forgotten its compiled solves (and must read or rebuild them)."""

    def __init__(self, cache_folder: Path):
        from gdln.derive.spec import load_spec
        from gdln.numeric.prediction import TaskPredictions

        task = load_spec(XOR_SPEC).with_training(epochs=3000)
        self.prediction = TaskPredictions(task).prediction("linear")
        training = task.training
        self.arguments = (
            self.prediction.log_initial_strengths(training.init_scale),
            training.tau,
            list(task.parameters.values()),
            training.epochs,
        )
        self.first = self.prediction.flow.race(*self.arguments)
        self.files = sorted((cache_folder / "jax" / "executables").glob("*.pickle"))
        assert self.files, "the race wrote no compiled solve"

    def race_again(self):
        """The race after this process forgets its compiled solves, as a new process would."""
        from gdln.numeric import integrate

        integrate._EXECUTABLES.clear()
        return self.prediction.flow.race(*self.arguments)

    def same_race(self, again) -> bool:
        return again.crossings == self.first.crossings and again.final_loss == self.first.final_loss
