"""The documentation's Results page, regenerated: ``python -m bench.results [--list] [NAME ...]``.

Each table on the page is what one command prints with ``--markdown``, written to
``docs/results/NAME.md`` under the command line that produced it; the page includes those
files as they are. Nothing on the page is typed by hand, so a table changes only when its
command is run again (and ``tests/test_results_page.py`` re-runs the cheap ones and compares).

Run from the repository root; with names, only those entries are regenerated.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "docs" / "results"
#: the first line of every generated file; the test reads the command back from the second
HEADER = "<!-- written by `python -m bench.results`: do not edit -->"


@dataclass(frozen=True)
class Entry:
    name: str
    title: str
    command: tuple[str, ...]  # as a reader types it: `gdln ...` or `python -m ...`

    def argv(self) -> list[str]:
        """The command for this interpreter: ``gdln`` and ``python`` run as this Python."""
        program, *rest = self.command
        if program == "gdln":
            return [sys.executable, "-m", "gdln", *rest]
        if program == "python":
            return [sys.executable, *rest]
        raise ValueError(f"{self.name}: unknown program {program!r}")


XOR_GRID = ("--grid", "Delta=0.25:4:64", "--grid", "init_scale=1e-6:1e-1:64:log")
ENTRIES = [
    Entry("xor-race", "XoR: the race of the two ReLNs", ("gdln", "race", "examples/xor.toml", "--markdown")),
    *(
        Entry(
            f"xor-verify-{delta}",
            f"XoR at Delta = {delta}: trained ReLU network against the predictions",
            ("gdln", "verify", "examples/xor.toml", "--set", f"Delta={delta}", "--markdown"),
        )
        for delta in ("0.5", "1.8", "3")
    ),
    Entry(
        "xor-unique",
        "XoR: the candidates' orbits under the data's symmetries",
        ("gdln", "unique", "examples/xor.toml", "--markdown"),
    ),
    Entry(
        "section4-race",
        "Section 4 (context task): the race",
        ("gdln", "race", "examples/section4_context.toml", "--markdown"),
    ),
    Entry(
        "section4-verify",
        "Section 4: trained ReLU network against the predictions",
        ("gdln", "verify", "examples/section4_context.toml", "--markdown"),
    ),
    Entry(
        "xor-phase-init",
        "XoR phase diagram, Delta x init scale, checked by training at 24 points",
        ("gdln", "sweep", "examples/xor.toml", *XOR_GRID, "--check", "24", "--markdown"),
    ),
    Entry(
        "xor-phase-lr",
        "XoR phase diagram, Delta x learning rate, checked by training at 32 points",
        (
            "gdln",
            "sweep",
            "examples/xor.toml",
            "--grid",
            "Delta=0.25:4:32",
            "--grid",
            "learning_rate=0.002:0.2:16:log",
            "--check",
            "32",
            "--markdown",
        ),
    ),
    Entry(
        "sweep-tolerance",
        "The sweep's solver tolerance: crossings against tight solves, and Section 4's cost",
        ("python", "-m", "bench.bench_tolerance", "--markdown"),
    ),
    Entry("benchmarks", "Benchmarks", ("python", "-m", "bench", "--markdown")),
    Entry(
        "parametric",
        "Parametric specs: derived cold, swept over g against training",
        ("python", "-m", "bench.bench_parametric", "--markdown"),
    ),
]


def command_line(entry: Entry) -> str:
    return shlex.join(entry.command)


def regenerate(entry: Entry) -> Path:
    """Run the entry's command from the repository root and write its Markdown, under the
    command line, the date, the machine's CPU cores and load, and the command's wall-clock time
    (the README quotes the phase diagram's, checked by ``tests/test_docs.py``)."""
    load = os.getloadavg()[0]  # other jobs' load, which slows the command on a shared machine
    start = time.perf_counter()
    result = subprocess.run(entry.argv(), cwd=ROOT, capture_output=True, text=True, env=os.environ.copy())
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{command_line(entry)} failed ({result.returncode}):\n{result.stderr.strip()}")
    machine = f"{os.cpu_count()} CPU cores, load average {load:.1f} before it ran"
    measured = f"measured {datetime.date.today().isoformat()} on {machine}, {seconds:.1f} s wall-clock"
    text = f"{HEADER}\n`{command_line(entry)}` ({measured})\n\n{result.stdout.strip()}\n"
    path = FOLDER / f"{entry.name}.md"
    path.write_text(text, encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.results", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="entries to regenerate (default: all)")
    parser.add_argument("--list", action="store_true", help="list the entries and their commands")
    args = parser.parse_args(argv)
    known = {entry.name: entry for entry in ENTRIES}
    if args.list:
        for entry in ENTRIES:
            print(f"{entry.name}: {command_line(entry)}")
        return 0
    unknown = [name for name in args.names if name not in known]
    if unknown:
        parser.exit(2, f"python -m bench.results: unknown entries {', '.join(unknown)} (see --list)\n")
    FOLDER.mkdir(parents=True, exist_ok=True)
    for entry in [known[name] for name in args.names] or ENTRIES:
        print(f"{entry.name}: {command_line(entry)}", flush=True)
        regenerate(entry)
    return 0


if __name__ == "__main__":
    sys.exit(main())
