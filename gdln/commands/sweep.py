"""gdln sweep: the race over a grid of parameters (phase diagram)."""

from __future__ import annotations

import os
import sys

from gdln.derive.errors import GdlnError, SpecError
from gdln.verify.files import PLOT_SUFFIXES

from .arguments import load, printable, training_settings, with_spec
from .output import check_output, emit, value_text
from .processes import add_process_arguments, join_from_arguments, process_settings


def cmd_sweep(args):
    from gdln.numeric.processes import is_first_process
    from gdln.verify.sweep import parse_axis, sweep_report

    shard = _shard(args)  # before any work, as the other flags
    check_output(args.plot, "--plot", PLOT_SUFFIXES)
    task = load(args).with_training(seeds=args.seeds)
    axes = [parse_axis(text, task) for text in args.grid]
    clash = [axis.name for axis in axes if axis.name in training_settings(args)]
    if clash:  # as sweep_report refuses a parameter given both ways
        raise SpecError("--grid", clash[0], "is both an axis and a --set value")
    # --check below 0 is refused by sweep_report, as for a caller in Python
    report = sweep_report(task, axes, check=args.check, agf=args.agf, shard=shard)
    if not is_first_process():  # of several processes, process 0 alone writes the figure and the report
        return
    _say_resumed(report, shard)
    if shard is not None:  # a slice's report is partial: the run without --shard assembles the whole
        return
    if args.plot is not None:
        from gdln.figures.sweep_figure import write_sweep_figure

        write_sweep_figure(report, args.plot, "--plot")
        print(f"wrote {printable(str(args.plot))}", file=sys.stderr)  # escaped, as in errors
    emit(report, args.json, _render_sweep, markdown=args.markdown, fixed=task.fixed, training=training_settings(args))


#: ``--shard auto``: the slice from a SLURM job array's variables
SHARD_AUTO = "auto"
ARRAY_ID_ENV, ARRAY_MIN_ENV, ARRAY_COUNT_ENV = "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_COUNT"


def _shard(args):
    """The slice that ``--shard`` names, checked with the flags it needs; ``None`` without it."""
    from gdln.derive import cache
    from gdln.verify.sweep_store import Shard

    if args.shard is None:
        return None
    shard = Shard(*parse_shard(args.shard))
    if args.check <= 0:
        raise GdlnError(f"--shard {shard}: a slice trains its share of the checked points: give --check N")
    if args.plot is not None:
        raise GdlnError(f"--shard {shard}: a slice writes no figure; give --plot to the run without --shard")
    if cache.cache_root() is None:  # --no-cache, or a folder that cannot be used: the slice's work would be lost
        raise GdlnError(f"--shard {shard}: a slice keeps its points in the cache folder, which is not in use")
    return shard


def _join_unless_sharded(args) -> None:
    """Join a run of several processes (before JAX's backend starts, so the refusal comes first):
    a slice is one process, its share of the points the slice's alone."""
    if args.shard is not None and process_settings(args) is not None:
        raise GdlnError(f"--shard {args.shard}: a slice runs as one process; give no --processes")
    join_from_arguments(args)


def parse_shard(text: str, environ=None) -> tuple[int, int]:
    """``(I, N)`` from ``I/N``, ``auto/N`` or ``auto``: ``auto`` takes ``I`` as the SLURM array task's
    position in its array (``SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN + 1``, so ``--array=0-2``
    and ``--array=1-3`` both give 1 to 3) and ``N`` from ``SLURM_ARRAY_TASK_COUNT``."""
    environ = os.environ if environ is None else environ
    index, sep, count = text.strip().partition("/")
    if not sep and index != SHARD_AUTO:
        raise GdlnError(f"--shard: {text!r} is not I/N, auto/N or auto")
    total = _whole(count, None, text) if sep else _whole(environ.get(ARRAY_COUNT_ENV), ARRAY_COUNT_ENV, text)
    if index.strip() != SHARD_AUTO:
        return _whole(index, None, text), total
    task = _whole(environ.get(ARRAY_ID_ENV), ARRAY_ID_ENV, text)
    first = _whole(environ.get(ARRAY_MIN_ENV, "0"), ARRAY_MIN_ENV, text)
    return task - first + 1, total


def _whole(text, variable: str | None, shard: str) -> int:
    """A whole number from the flag (``variable`` ``None``) or from that environment variable."""
    if text is None:
        raise GdlnError(f"--shard {shard}: ${variable} is not set (not a SLURM array task?); give --shard I/N")
    try:
        return int(str(text).strip())
    except ValueError:
        if variable is None:
            raise GdlnError(f"--shard: {shard!r} is not I/N, auto/N or auto with whole numbers I and N") from None
        raise GdlnError(f"--shard {shard}: ${variable} is {str(text)[:40]!r}, not a whole number") from None


def _say_resumed(report, shard) -> None:
    """One line on stderr: the checked points read back from the cache, and what a slice wrote."""
    from gdln.derive import cache
    from gdln.derive.words import plural

    checked = sum(p["checked"] is not None for p in report["points"])
    root = cache.cache_root()
    if root is None or not checked:
        return
    resumed = report["timing"]["resumed"]
    if shard is None:
        theory = " and the grid's theory" if report["timing"].get("theory_resumed") else ""
        print(f"gdln: resumed {resumed} of {checked} checked points{theory} from the cache", file=sys.stderr)
        return
    print(
        f"gdln: slice {shard}: {plural(checked, 'checked point')} in {printable(str(root / 'points'))}"
        f" ({checked - resumed} trained, {resumed} there already); run without --shard to assemble the sweep",
        file=sys.stderr,
    )


def _render_predicted_follows(points, names) -> None:
    """One line: where each candidate is predicted to be followed, and where that is undecided."""
    found = [p.get("predicted_follows") for p in points]
    if not any(found):
        return
    counts = {name: sum((f or {}).get("network") == name for f in found) for name in names}
    undecided = sum(f is not None and not f["decided"] for f in found)
    print(f"  predicted to be followed (no training, verify's rule): {_shares(counts)}; undecided at {undecided}")


def _shares(counts: dict[str, int]) -> str:
    """``name at N points`` for each name, comma-separated."""
    from gdln.derive.words import plural

    return ", ".join(f"{name} at {plural(count, 'point')}" for name, count in counts.items())


def _render_sweep(report):
    """The sweep as text: the grid, each race's and the prediction's share of it, the derived
    crossovers, the training's agreement, what failed, and the seconds."""
    axes = " x ".join(f"{a['name']} ({len(a['values'])}{' log' if a['log'] else ''})" for a in report["axes"])
    points = report["points"]
    print(f"grid: {axes}, {len(points)} points")
    names = [n["name"] for n in points[0]["networks"]]
    _render_races(report, points, names)
    _render_predicted_follows(points, names)
    _render_crossovers(report["crossovers"])
    predicted = [p["predicted_validity"] for p in points if p.get("predicted_validity") is not None]
    if predicted:
        within = sum(p["within_validity"] for p in predicted)
        print(
            f"  predicted without training (the theory's frozen gates, gdln verify's verdict): within "
            f"{report['validity']:.0%} at {within} of {len(predicted)} points"
        )
    if report["agreement"]["checked"]:
        render_agreement(report, points)
    _render_failures(report, points)
    timing = report["timing"]
    trained = f", training {timing['training_s']:.2f}" if report["agreement"]["checked"] else ""
    read = " (the theory read back from the cache)" if timing.get("theory_resumed") else ""
    print(f"  seconds: theory {timing['theory_s']:.2f}, alignment-seeded race {timing['aligned_s']:.2f}{trained}{read}")


def _render_races(report, points, names) -> None:
    """Each race's winners over the grid."""
    for key, what in (("winner", "width-seeded race"), ("aligned_winner", "alignment-seeded race")):
        counts = {name: sum(p[key] == name for p in points) for name in names}
        if key == "aligned_winner" and report["seeds"]["aligned"] is None:
            print(f"  {what}: not run")
            continue
        print(f"  {what}: {_shares(counts)}")


def _render_crossovers(crossovers) -> None:
    """Each derived crossover: its value, or its curve along the other axis."""
    for crossover in crossovers:
        first, second = crossover["networks"]
        value = (
            value_text(crossover)
            if crossover.get("value") is not None
            else f"{crossover['expr']}, along {crossover['curve']['along']}"
            if "curve" in crossover
            else crossover["expr"]
        )
        print(f"  derived crossover of {first} and {second}: {crossover['parameter']}* = {value}")


def render_agreement(report, points) -> None:
    """How often the trained networks followed each race's winner and the prediction, overall
    and where the assumptions hold or the seeds decide."""
    from gdln.verify.rules import DECIDED_STANDARD_ERRORS

    agreement = report["agreement"]
    checked = agreement["checked"]
    print(
        f"  trained at {checked} point{'s' if checked != 1 else ''}: the width-seeded winner is followed at "
        f"{agreement['agree']}, the alignment-seeded winner at {agreement['aligned_agree']}"
    )
    holds = sum(
        p["checked"]["max_deviation"] is not None and p["checked"]["max_deviation"] <= report["validity"]
        for p in points
        if p["checked"]
    )
    print(f"  the followed network stays within {report['validity']:.0%} of the initial loss at {holds} of them")
    if agreement.get("predicted_decided"):
        print(
            f"  the network predicted to be followed is followed at {agreement['predicted_agree']} of the"
            f" {agreement['predicted_decided']} where that prediction decides"
        )
    predicted = agreement.get("predicted_validity")
    if predicted is not None:
        print(
            f"  the validity predicted without training is the measured one at {predicted['agree']} of "
            f"{predicted['checked']}"
        )
    subsets = {
        "within_assumptions": "where the theory's assumptions hold",
        "decided": "where the seeds decide which candidate is followed (its lead at least"
        f" {DECIDED_STANDARD_ERRORS:g} standard errors of their mean loss)",
    }
    for key, where in subsets.items():
        counts = agreement.get(key)
        if counts is not None and counts["checked"] == 0:
            print(f"  none of the checked points is one {where}")
        elif counts is not None and counts["checked"] < checked:
            print(
                f"  of the {counts['checked']} checked points {where}: the width-seeded winner is followed at"
                f" {counts['agree']}, the alignment-seeded winner at {counts['aligned_agree']}"
            )


def _render_failures(report, points) -> None:
    """Where training diverged, where the assumptions fail, and points whose data are not finite."""
    from gdln.derive.words import plural

    diverged = [p for p in points if p["checked"] and p["checked"].get("reason")]
    if diverged:
        shown = "; ".join(
            f"{', '.join(f'{k} = {v:g}' for k, v in p['values'].items())}: {p['checked']['reason']}"
            for p in diverged[:5]
        )
        more = f"; and {len(diverged) - 5} more" if len(diverged) > 5 else ""
        print(f"  training diverged at {plural(len(diverged), 'checked point')} (a loss not finite): {shown}{more}")
    failing = [p["assumptions"] for p in points if p["assumptions"] is not None and not p["assumptions"]["hold"]]
    if failing:
        fraction = report["assumptions"]["output_fraction"]
        reasons = {
            f"no alignment phase (the initial output already reaches {fraction:.0%} of the targets)": sum(
                a["small_init"] is False for a in failing
            ),
            "a learning rate above 2/curvature": sum(a["stable_learning_rate"] is False for a in failing),
            "a learning rate not judged (the curvature is not finite)": sum(
                a["stable_learning_rate"] is None for a in failing
            ),
        }
        said = "; ".join(f"{reason} at {count}" for reason, count in reasons.items() if count)
        print(f"  the theory's assumptions fail at {len(failing)} points, judged before any training: {said}")
    if report["invalid_points"]:
        print(f"  {len(report['invalid_points'])} points with data that are not finite (null in --json)")


def add_parser(sub) -> None:
    p = with_spec(
        sub,
        "sweep",
        "the race over a grid of parameters (phase diagram), optionally checked by training",
        markdown=True,
    )
    p.add_argument(
        "--grid",
        action="append",
        required=True,
        metavar="NAME=START:STOP:NUM[:log]",
        help="an axis: a spec parameter or init_scale, learning_rate, hidden_units (once or twice)",
    )
    p.add_argument("--check", type=int, default=0, metavar="N", help="train ReLU networks at N grid points (default 0)")
    p.add_argument(
        "--seeds",
        type=int,
        help="ReLU seeds for the alignment-seeded race and the checks (default: the spec's); more seeds"
        " decide which candidate is followed closer to the boundary",
    )
    p.add_argument(
        "--agf",
        action="store_true",
        help="at the checked points, also the Alternating Gradient Flows model's deviation (needs --check)",
    )
    p.add_argument("--plot", metavar="FILE.png", help="write the phase diagram (.png, .pdf or .svg)")
    p.add_argument(
        "--shard",
        metavar="I/N|auto/N|auto",
        help="train only slice I of N of the checked points (1 <= I <= N) and keep them in the cache folder,"
        " for a job array; 'auto' reads I (and N) from SLURM_ARRAY_TASK_ID, _MIN and _COUNT. The same command"
        " without --shard, on the same cache folder, then assembles the sweep",
    )
    add_process_arguments(p)
    p.set_defaults(run=cmd_sweep, join_processes=_join_unless_sharded)
