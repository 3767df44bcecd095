"""Long work reports progress on stderr: a line per stage where stderr is not a terminal (a log,
a pipe, CI), as each stage begins, and a tqdm bar on a terminal. No figure is drawn here: the
figures' stages are checked with stand-ins that record what the log held when each one ran."""

import io

import pytest

from gdln import figures
from gdln.verify.progress import Stages, progress, shown_progress

from .helpers import XOR_SPEC


class Terminal(io.StringIO):
    def isatty(self):
        return True


def _lines(stream):
    return stream.getvalue().splitlines()


def test_a_log_gets_each_stage_before_its_work():
    log = io.StringIO()
    items = ["alpha", "beta", "gamma"]
    seen = []
    for k, item in enumerate(progress(items, "work", stream=log)):
        seen.append(_lines(log))
        # the stage's line is already there while its work runs, and it names the stage
        assert len(seen[-1]) == k + 1 and item in seen[-1][-1]
        assert all(other not in seen[-1][-1] for other in items if other != item)
    assert len(_lines(log)) == len(items) + 1  # and one line when the work is done


def test_a_terminal_gets_a_bar_redrawn_in_place_not_a_line_per_stage():
    terminal = Terminal()
    items = [f"item{k}" for k in range(20)]
    assert list(progress(items, "work", stream=terminal)) == items
    written = terminal.getvalue()
    assert "\r" in written  # tqdm redraws its bar in place
    assert written.count("\n") < len(items)


def test_nested_work_sits_under_the_stage_it_belongs_to():
    log = io.StringIO()
    for _ in progress(["a", "b"], "outer", stream=log):
        for _ in progress(["x", "y", "z"], "inner", stream=log):
            pass
    lines = _lines(log)
    outer = [n for n, line in enumerate(lines) if line.startswith("outer")]
    inner = [n for n, line in enumerate(lines) if line.lstrip().startswith("inner")]
    assert len(outer) == 3 and len(inner) == 6  # 2 stages and a closing line; 2 x 3 stages
    assert all(lines[n] != lines[n].lstrip() for n in inner)  # indented: inside a stage
    assert outer[0] < inner[0] < inner[2] < outer[1] < inner[3]  # each inside its own stage


def test_work_abandoned_by_an_error_leaves_no_trace_on_later_work():
    log = io.StringIO()

    def failing():
        step = Stages("failing", 2, stream=log)
        step("first")
        raise RuntimeError

    with pytest.raises(RuntimeError):
        failing()
    later = io.StringIO()
    for _ in progress([1], "later", stream=later):
        pass
    assert [line for line in _lines(later) if line != line.lstrip()] == []  # not indented under the failed work
    assert len(_lines(log)) == 1  # the failed work did not claim to be done


def test_stages_number_the_stages_and_say_when_done():
    log = io.StringIO()
    with Stages("steps", 2, stream=log) as step:
        step("one")
        step("two")
    first, second, done = _lines(log)
    assert "1/2" in first and "2/2" in second and "done" in done


def test_figures_write_a_line_per_figure_to_a_log_before_drawing_it(monkeypatch, tmp_path):
    log = io.StringIO()
    monkeypatch.setattr("sys.stderr", log)
    held = {}

    def stand_in(name):
        def make(out, quick=False):
            held[name] = _lines(log)
            path = out / f"{name}.png"
            path.write_bytes(b"")
            return path

        return make

    names = ["figure2", "figure3", "routing"]
    monkeypatch.setattr(figures, "FIGURES", {name: stand_in(name) for name in names})
    with shown_progress():  # as `gdln figures` runs it
        paths = figures.regenerate(tmp_path, quick=True)
    assert [p.name for p in paths] == [f"{name}.png" for name in names]
    for k, name in enumerate(names):
        assert len(held[name]) == k + 1 and name in held[name][-1]


# --- the library prints nothing unless asked; the command shows its stages (issue 37) -----------


def test_a_report_called_from_python_writes_nothing_to_stderr(capfd):
    from gdln.derive.spec import load_spec
    from gdln.verify.race import race_report
    from gdln.verify.uniqueness import unique_report

    task = load_spec(XOR_SPEC)
    race_report(task)
    unique_report(task)
    assert capfd.readouterr().err == ""
    with shown_progress():  # asked for: the stages come back
        unique_report(task)
    assert "unique 1/3: automorphisms of the data" in capfd.readouterr().err


def test_the_command_still_shows_its_stages(capfd):
    from gdln.cli import main

    assert main(["unique", str(XOR_SPEC), "--json"]) == 0
    err = capfd.readouterr().err
    assert "unique 1/3: automorphisms of the data" in err and "race 1/2: linear" in err
