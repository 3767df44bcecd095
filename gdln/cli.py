"""``gdln``: the command-line entry point.

Bad input ends with one line on stderr naming the file and key, and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from pathlib import Path

from gdln.derive import cache
from gdln.derive.errors import GdlnError, SpecError
from gdln.derive.expressions import EvaluationError, evaluate, parse_expression
from gdln.derive.spec import MAX_EPOCHS, MAX_SEEDS
from gdln.derive.tasks import STRUCTURES
from gdln.numeric.precision import use_compilation_cache, use_x64
from gdln.verify.checks import GdlnWarning
from gdln.verify.files import check_writable, finite_json, write_atomic


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, status 2, like every other input error
        print(f"gdln: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _assignment(text: str) -> tuple[str, float]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise SpecError("--set", text, "expected NAME=VALUE")
    try:
        number = evaluate(parse_expression(value, {}, "--set", name.strip()))
    except EvaluationError as error:
        raise SpecError("--set", name.strip(), f"value {value!r} has no finite value: {error}") from None
    if number.imag != 0 or not math.isfinite(number.real) or number.real <= 0:
        raise SpecError("--set", name.strip(), f"value {value!r} is not a positive finite real number")
    return name.strip(), number.real


def _overrides(args) -> dict[str, float]:
    return dict(_assignment(text) for text in (args.set or []))


def _load(args):
    from gdln.derive.spec import load_spec

    return load_spec(args.spec)


def _emit(report: dict, as_json: bool, render) -> None:
    if as_json:
        # strict JSON: a non-finite number becomes null, and the report lists where and what it was
        clean, replaced = finite_json(report)
        assert isinstance(clean, dict)  # a dict stays a dict
        if replaced:
            clean["non_finite"] = replaced
        json.dump(clean, sys.stdout, indent=2, allow_nan=False)
        sys.stdout.write("\n")
    else:
        render(report)


def _fmt(value) -> str:
    return "never" if value is None else f"{value:.6g}"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _plural(count: int, word: str, plural: str = "") -> str:
    return f"{count} {word if count == 1 else plural or word + 's'}"


def _yes(flag) -> str:
    return "yes" if flag else "no"


def _percent(fraction) -> str:
    return "never" if fraction is None else f"{100 * fraction:.3g}%"


def _parameters_line(parameters: dict) -> None:
    if parameters:  # nothing to say for a task without parameters
        print("parameters: " + ", ".join(f"{k} = {v:g}" for k, v in parameters.items()))


#: said once under any output that gives an algebraic number by its value
ALGEBRAIC_NOTE = (
    "algebraic: an exact number with no radical form, shown by its value; of degree n: a root of an "
    "irreducible polynomial of degree n over Q (--json gives it exactly)"
)


def _race_rows(report) -> tuple[list[tuple[str, ...]], str | None]:
    """The race's columns as text, and the speed they share when every network has the same."""
    networks = report["networks"]
    shared = networks[0]["speed"] if len({n["speed"]["expr"] for n in networks}) == 1 and len(networks) > 1 else None
    rows = [("network", *(() if shared else ("speed",)), "t_half", "t_90", "final loss", "dynamics")]
    for n in networks:
        speed = () if shared else (_value_text(n["speed"], "s"),)
        rows.append((n["name"], *speed, _fmt(n["t_half"]), _fmt(n["t_90"]), _percent(n["final_loss"]), n["dynamics"]))
    return rows, None if shared is None else _value_text(shared, "s")


def _render_race(report):
    _parameters_line(report["parameters"])
    rows, shared = _race_rows(report)
    if shared:
        print(f"every network has the same speed (largest singular value s): {shared}")
    widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
    for row in rows:
        print("  " + "   ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    print(
        f"t_half, t_90: epochs until the loss falls to 50% and 10% of its initial value; final loss: at epoch "
        f"{report['horizon']:g}, in % of the initial loss"
    )
    for n in report["networks"]:
        if "staged" in n:
            st = n["staged"]
            kind = "closed form" if st["rest_closed_form"] else "reduced flow"
            print(
                f"  {n['name']} staged ({st['first']} first, the rest on its residual, {kind}): "
                f"max deviation {_percent(st['max_deviation'])} of the initial loss"
            )
    print(f"ranking: {', '.join(report['ranking'])}")
    print(f"winner: {report['winner']}")
    for c in report["crossovers"]:
        a, b = c["networks"]
        print(
            f"crossover {a} / {b}: {c['parameter']}* = {_value_text(c)} (faster below: {c['faster_below']}, above: {c['faster_above']})"
        )
    if _has_algebraic(report):
        print(ALGEBRAIC_NOTE)


def _has_algebraic(report) -> bool:
    """Whether any value of a report is printed as an algebraic number (``algebraic`` entries)."""
    if isinstance(report, dict):
        return "algebraic" in report or any(_has_algebraic(v) for v in report.values())
    if isinstance(report, list):
        return any(_has_algebraic(v) for v in report)
    return False


def _indented(text: str, indent: str) -> str:
    """Every line of ``text`` (a pretty-printed equation has several) behind ``indent``."""
    return "\n".join(indent + line for line in text.splitlines())


def _render_derive_full(report):
    print(f"network {report['network']}")
    for p in report["pathways"]:
        print(f"  pathway {p['name']} (active on {p['active']})")
        print(f"    Sigma_yx = {p['sigma_yx']}")
        print(f"    Sigma_x  = {p['sigma_x']}")
        display = p.get("display") or {"odes": [f"da/dt = {r}" for r in p["odes"]], "closed_form": p["closed_form"]}
        for k, (s, d) in enumerate(zip(p["singular_values"], p["input_variances"])):
            print(f"    mode {k}: s = {_value_text(s, 's')}, d = {_value_text(d)}")
            print(_indented(display["odes"][k], "      "))
            if display["closed_form"]:
                print(_indented(display["closed_form"][k], "      "))
    system = report["system"]
    print(f"  reduced system ({system['kind']}): {system['equation']}")
    for c in system["coupling"]:
        print(f"    C[{c['row']}, {c['column']}] = {_value_text(c)}")
    a = report["assumptions"]
    print(
        f"  mutually diagonalisable: {_yes(a['mutually_diagonalisable'])}; pathways interact: {_yes(a['pathways_interact'])}"
    )
    for failure in a["failures"]:
        print(f"    {failure}")
    print(f"  loss L(t) = {report['loss']['expr']}")
    print(f"  speed (largest singular value s) = {_value_text(report['speed'], 's')}")


def _value_text(entry, name: str = "") -> str:
    """An exact value as text; an algebraic number with no radical form (``CRootOf``) as its
    value, kind and degree (``name``: what the number is, e.g. ``s`` for "s^2 of degree 8")."""
    algebraic = entry.get("algebraic")
    if algebraic is not None or "CRootOf" in entry["expr"]:
        return f"{entry['value']:.10g} ({_algebraic_kind(algebraic, name)})"
    if _is_number(entry["expr"]):
        return entry["expr"]
    return f"{entry['expr']} = {entry['value']:.6g}"


def _algebraic_kind(algebraic, name: str = "") -> str:
    if not algebraic:
        return "algebraic"
    degrees = ", ".join(map(str, algebraic["degrees"]))
    if algebraic["form"] == "root":
        return f"algebraic of degree {degrees}"
    if algebraic["form"] == "square root":
        return f"algebraic, {name + '^2' if name else 'its square'} of degree {degrees}"
    if len(algebraic["degrees"]) == 1:
        return f"algebraic, a polynomial in a root of degree {degrees}"
    return f"algebraic, a polynomial in roots of degrees {degrees}"


def _render_derive(report):
    """A summary that fits a screen or two; ``--full`` prints everything."""
    print(
        f"network {report['network']}: {_plural(len(report['pathways']), 'pathway')}; each lists its singular "
        "values s, how many modes share each, and their input variance d"
    )
    most = max((c["multiplicity"] for p in report["pathways"] for c in p["classes"]), default=1)
    width = len(_plural(most, "mode")) + 1
    for p in report["pathways"]:
        rows, cols = p["shape"]
        print(f"  {p['name']}: on {p['gate']}; Sigma_yx {rows}x{cols}, rank {p['rank']}; depth {p['depth']}")
        for c in p["classes"]:
            s = _value_text(c["s"], "s")
            d = _value_text(c["d"])
            if c["kind"] == "algebraic" and (c["d"].get("algebraic") or "CRootOf" in c["d"]["expr"]):
                d = f"{c['d']['value']:.10g} (algebraic, a rational polynomial in s^2)"
            print(f"    {(_plural(c['multiplicity'], 'mode') + ':').ljust(width)} s = {s}, d = {d}")
    system = report["system"]
    variables = system["variables"]
    a = report["assumptions"]
    if system["kind"] == "groups":
        print(
            f"reduced system: {_plural(len(variables), 'shared trajectory', 'shared trajectories')} "
            f"(exact group reduction), {system['equation']}"
        )
        for v in variables:
            print(f"  {v['name']}: {v['label']}; {_plural(v['multiplicity'], 'mode')} follow it")
            display = v.get("display") or {
                "ode": v["ode"],
                "closed_form": v["closed_form"] and f"{v['name']}(t) = {v['closed_form']}",
            }
            print(_indented(display["ode"], "    "))
            if display["closed_form"]:
                print(_indented(display["closed_form"], "    "))
    else:
        why = "; ".join(a["shared_basis_failures"] or a["failures"][:1]) or "no shared trajectories"
        print(f"reduced system: one strength per mode ({len(variables)} modes; group reduction not exact: {why})")
        print(
            f"  {system['equation']}, C with diagonal d and {_plural(len(system['coupling']), 'non-zero coupling')} "
            "(--full or --json lists them)"
        )
    print(
        f"mutually diagonalisable: {_yes(a['mutually_diagonalisable'])}; pathways interact: "
        f"{_yes(a['pathways_interact'])}; closed form: {_yes(a['closed_form'])}"
    )
    for failure in a["failures"][:3]:
        print(f"  {failure}")
    if len(a["failures"]) > 3:
        print(f"  ... and {len(a['failures']) - 3} more")
    for value in a.get("algebraic_values", []):
        print(
            f"  {value['pathway']}: {_plural(value['modes'], 'singular value')} with no radical form "
            f"(algebraic of degree {value['degree']})"
        )
    if report.get("coupling_numbers"):
        named = report["coupling_numbers"]
        print(
            f"  {_plural(len(named['couplings']), 'coupling')} between such modes are named exact numbers, "
            f"{named['definition']} (--json lists the vectors)"
        )
    groups = [g for g in a["symmetric_groups"] if len(g) > 1]
    print("groups of symmetric pathways: " + ("; ".join(" = ".join(g) for g in groups) if groups else "none"))
    print(
        f"initial loss {_value_text(report['loss']['initial'])}; loss in closed form: {_yes(report['loss']['closed_form'])}"
    )
    print(f"speed (largest singular value s) = {_value_text(report['speed'], 's')}")
    for c in report.get("crossovers", []):
        first, second = c["networks"]
        print(f"crossover with {second if first == report['network'] else first}: {c['parameter']}* = {_value_text(c)}")
    if _has_algebraic(report):
        print(ALGEBRAIC_NOTE)


def _render_simulate(report):
    print(
        f"model {report['model']}, {report['seeds']} seed(s), {report['epochs']} epochs, {report['dtype']}, "
        f"{report['devices']} device(s)"
    )
    for k, (h, n, f) in enumerate(zip(report["t_half"], report["t_90"], report["loss_final"])):
        print(f"  seed {k}: t_half {_fmt(h)}  t_90 {_fmt(n)}  final loss {f:.3g}")


def _render_verify(report):
    _parameters_line(report["parameters"])
    print(f"predictions start from: {report['initial_conditions']}; then {report['time_model']}")
    if report.get("alignment"):
        print(f"  alignment phase ends at epochs {report['alignment']['time']}")
    rows = [("network", "max deviation", "t_half predicted", "t_half ReLU")]
    rows += [
        (n["name"], f"{100 * n['max_deviation']:.2f}%", _fmt(n["t_half_predicted"]), _fmt(n["t_half_relu"]))
        for n in report["networks"]
    ]
    widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
    for row in rows:
        print("  " + "   ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    print(
        "max deviation: the largest gap between a network's predicted loss and the ReLU network's (mean over "
        "seeds), in % of the initial loss; t_half: epochs until the loss falls to half its initial value"
    )
    print(f"the ReLU network follows: {report['follows']} (among the spec's networks)")
    census = report.get("census")
    if census:
        shares = ", ".join(f"{k} {v:.2f}" for k, v in sorted(census["fractions"].items(), key=lambda kv: -kv[1]))
        print(f"hidden units by gate pattern ({census['units']} learned units): {shares}")
        shares = ", ".join(
            f"{k} {v:.2f}" for k, v in sorted(census["majority_fractions"].items(), key=lambda kv: -kv[1])
        )
        print(f"  counting a unit on in a context where it is on for most items: {shares}")
    if report.get("mds"):
        print(
            f"MDS: ReLU vs {report['mds']['network']} representations, Procrustes disparity {report['mds']['procrustes_disparity']:.4f}"
        )


def _equation_style(args) -> str:
    """SymPy's pretty printer on a terminal (unicode where it can be written), else one line of
    plain text, as with ``--plain``."""
    if getattr(args, "plain", False) or not sys.stdout.isatty():
        return "plain"
    try:
        "\u239b\u2500".encode(sys.stdout.encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        return "ascii"
    return "pretty"


def cmd_derive(args):
    from gdln.derive.latex import derivation_latex
    from gdln.numeric.prediction import TaskPredictions
    from gdln.verify.reports import derive_report, derive_summary, network_crossovers

    task = _load(args)
    if task.network(args.network).shared:
        _derive_shared(task, args)
        return
    models = TaskPredictions(task)
    overrides = _overrides(args)
    if args.json or args.full:
        equations = None if args.json else _equation_style(args)
        report = derive_report(task, args.network, overrides, models, equations=equations)
    else:  # the summary, kept in the derivation cache
        report = derive_summary(task, args.network, overrides, models, _equation_style(args))
    if args.latex or args.latex_fragment:
        values = task.values(overrides)
        derivation = models.derivation(args.network)
        found = network_crossovers(models, derivation.network.name, values)  # cached if the report solved them
        if args.latex:
            _write(args.latex, derivation_latex(derivation, found, document=True))
        if args.latex_fragment:
            _write(args.latex_fragment, derivation_latex(derivation, found))
    _emit(report, args.json, _render_derive_full if args.full else _render_derive)


def _derive_shared(task, args):
    from gdln.verify.graphs import shared_derive_report

    report, reduction = shared_derive_report(task, args.network)
    if args.latex or args.latex_fragment:
        for path, document in ((args.latex, True), (args.latex_fragment, False)):
            if path:
                _write(path, reduction.latex(document=document))

    def render(r):
        print(f"network {r['network']}: {r['paths']} paths ({r['paths_with_data']} with data), {r['modes']} modes")
        a = r["assumptions"]
        print(f"shared-edge reduction holds: {a['holds']}")
        for failure in a["failures"][:3]:
            print(f"  {failure}")
        for p in r["singular_values"]:
            print(f"  path {p['path']}: s = {', '.join(p['exprs'])}")
        for ode in r["odes"][: 3 * r["modes"]]:
            print(f"  {ode}")
        if len(r["odes"]) > 3 * r["modes"]:
            print(f"  ... {len(r['odes'])} ODEs in all (--json lists them)")

    _emit(report, args.json, render)


def _write(path: str, text: str) -> None:
    write_atomic(path, text, "output")  # a temporary file, then os.replace: never a partial file


def cmd_race(args):
    from gdln.verify.reports import race_report

    task = _load(args)
    if any(network.shared for network in task.networks):
        from gdln.verify.graphs import shared_race_report

        _emit(shared_race_report(task, _overrides(args)), args.json, _render_shared_race)
        return
    _emit(race_report(task, _overrides(args), staged=args.staged), args.json, _render_race)


def _render_shared_race(report):
    print("race of the shared-edge reduction (Eq. 6) in gradient-descent time")
    for n in report["networks"]:
        print(
            f"  {n['name']:<16} {n['paths']} paths, {n['modes']} modes   t_half {_fmt(n['t_half'])}   t_90 {_fmt(n['t_90'])}"
            f"   final loss {n['final_loss']:.3g}"
        )
    print(f"ranking: {', '.join(report['ranking'])}")
    print(f"winner: {report['winner']}")


def cmd_union(args):
    from gdln.verify.union import union_report

    def render(report):
        print(
            f"union of every candidate pathway ({report['dynamics']}, {report['epochs']} epochs; {report['growth_rule']}):"
        )
        for p in report["pathways"]:
            verdict = "grows" if p["grows"] else "stays"
            print(
                f"  {p['name']}: {verdict}, {p['relative']:.3f} of the strongest, 10^{p['log10_growth']:.1f} x its seed"
            )

    _emit(union_report(_load(args), _overrides(args), args.epochs), args.json, render)


def cmd_unique(args):
    from gdln.verify.uniqueness import unique_report

    if args.patterns != "all" and args.max_pathways is None:
        raise SpecError(args.spec, "--patterns", "chooses the search's patterns: give --max-pathways too")

    def render(report):
        print(f"{_plural(report['automorphisms'], 'automorphism')} of the data; candidates: {report['candidates']}")
        search = report.get("search")
        if search:
            print(
                f"search: {len(search['patterns'])} realizable patterns, {search['candidates']} networks of at most "
                f"{search['max_pathways']} pathways, {search['pruned_without_leader']} without a fastest pattern, "
                f"{search['orbits_raced']} orbits raced"
            )
        for k, orbit in enumerate(report["orbits"][: 10 if search else None]):
            gates = "; ".join(",".join(map(str, p)) for p in orbit["pathways"][0]) if search else ""
            print(
                f"  orbit {k + 1}: {', '.join(orbit['networks'])}  t_90 {_fmt(orbit['t_90'])}"
                + (f"  pathways on datapoints {gates}" if gates else "")
            )
        margin = report["margin"]
        verdict = "unique" if report["unique"] else "not unique"
        orbits = report["orbits"]
        basis = "t_90" if orbits and orbits[0]["t_90"] is not None else "final loss"
        if len(orbits) == 1:
            why = "one orbit"
        elif margin is None:
            why = "no finite prediction to compare"
        else:
            lead = "only it reaches 10%" if margin == math.inf else f"{100 * margin:.3g}% of its {basis}"
            why = f"lead over the next orbit: {lead}; unique above {100 * report['tolerance']:g}%"
        print(f"fastest orbit: {verdict} ({why})")
        print("t_90: epochs until the loss falls to 10% of its initial value")

    _emit(
        unique_report(_load(args), _overrides(args), max_pathways=args.max_pathways, patterns=args.patterns),
        args.json,
        render,
    )


def cmd_simulate(args):
    from gdln.verify.reports import simulate_report

    task = _load(args)
    if args.model != "relu":
        task.network(args.model)
    if args.out:
        check_writable(args.out, "--out")  # before training: a folder, or a folder that is missing
    report = simulate_report(task, args.model, _overrides(args), args.seeds, args.epochs, args.out, dtype=args.dtype)
    _emit(report, args.json, _render_simulate)


def cmd_verify(args):
    from gdln.verify.reports import verify_report

    task = _load(args)
    if any(network.shared for network in task.networks):
        from gdln.verify.graphs import graph_verify_report

        _emit(graph_verify_report(task, _overrides(args), args.seeds, args.epochs), args.json, _render_graph_verify)
        return
    report = verify_report(
        task,
        _overrides(args),
        args.seeds,
        args.epochs,
        initial_conditions=args.initial_conditions,
        time_model=None if args.time is None else TIME_FLAGS[args.time],
    )
    _emit(report, args.json, _render_verify)


def cmd_sweep(args):
    from gdln.verify.sweep import parse_axis, sweep_report

    task = _load(args)
    axes = [parse_axis(text, task) for text in args.grid]
    if args.check < 0:
        raise SpecError("--check", str(args.check), "must be 0 or a positive number of points")
    if args.plot:
        check_writable(args.plot, "--plot")
    report = sweep_report(task, axes, _overrides(args), check=args.check)
    if args.plot:
        from gdln.figures.sweep_figure import write_sweep_figure

        write_sweep_figure(report, args.plot)
    _emit(report, args.json, _render_sweep)


def _render_sweep(report):
    axes = " x ".join(f"{a['name']} ({len(a['values'])}{' log' if a['log'] else ''})" for a in report["axes"])
    points = report["points"]
    print(f"grid: {axes}, {len(points)} points")
    names = [n["name"] for n in points[0]["networks"]]
    for key, what in (("winner", "width-seeded race"), ("aligned_winner", "alignment-seeded race")):
        counts = {name: sum(p[key] == name for p in points) for name in names}
        if key == "aligned_winner" and not any(counts.values()):
            print(f"  {what}: not computed (a candidate is not a set of balanced depth-2 modes)")
            continue
        shares = ", ".join(f"{name} at {count} point{'s' if count != 1 else ''}" for name, count in counts.items())
        print(f"  {what}: {shares}")
    for crossover in report["crossovers"]:
        first, second = crossover["networks"]
        value = (
            _value_text(crossover)
            if crossover.get("value") is not None
            else f"{crossover['expr']}, along {crossover['curve']['along']}"
            if "curve" in crossover
            else crossover["expr"]
        )
        print(f"  derived crossover of {first} and {second}: {crossover['parameter']}* = {value}")
    agreement = report["agreement"]
    if agreement["checked"]:
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
    if report["invalid_points"]:
        print(f"  {len(report['invalid_points'])} points with data that are not finite (null in --json)")
    timing = report["timing"]
    trained = f", training {timing['training_s']:.2f}" if agreement["checked"] else ""
    print(f"  seconds: theory {timing['theory_s']:.2f}, alignment-seeded race {timing['aligned_s']:.2f}{trained}")


def _render_graph_verify(report):
    print(f"{report['seeds']} seed(s), {report['epochs']} epochs, learning rate {report['learning_rate']:g}")
    for n in report["networks"]:
        random = ", ".join(f"{d:.3f}" for d in n["max_deviation"])
        print(
            f"  {n['name']:<12} decoupled: max deviation {n['max_deviation_decoupled']:.2e}   random weights: {random}"
            f"   t_90 theory {_fmt(n['theory']['t_90'])}, trained {n['trained']['t_90']}"
        )
    print(
        f"ranking: theory {', '.join(report['ranking']['theory'])}; trained {', '.join(report['ranking']['trained'])}"
    )


def _render_align(report):
    print(f"alignment phase: ends at epochs {report['time']} (output at {report['output_fraction']:g} of the targets)")
    for p in report["patterns"]:
        print(f"  on at datapoints {p['active']}: units per seed {p['units']}")
    for name, counts in report["unmatched_units"].items():
        print(f"  units matching no pathway of {name}: {counts}")


def cmd_align(args):
    from gdln.verify.reports import align_report

    task = _load(args)
    if args.write_spec:
        check_writable(args.write_spec, "--write-spec")
    report, network_toml = align_report(task, _overrides(args), args.seeds)
    _append_network(args, network_toml, report)
    _emit(report, args.json, _render_align)


def _append_network(args, network_toml: str, report: dict) -> None:
    """``--write-spec``: the spec's text with ``network_toml`` appended, noted in the report."""
    if args.write_spec and network_toml:
        text = Path(args.spec).read_text(encoding="utf-8")
        _write(args.write_spec, text.rstrip("\n") + "\n\n" + network_toml)
        report["written"] = args.write_spec


MAX_CLUSTERS = 64


def _cluster_counts(text: str, source: str) -> list[int]:
    """``A..B`` or ``K,K,...`` as positive integers."""
    try:
        if ".." in text:
            low, high = (int(part) for part in text.split(".."))
            counts = list(range(low, high + 1))
        else:
            counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise SpecError(source, "--clusters", f"expected A..B or a comma-separated list, got {text!r}") from None
    if not counts or min(counts) < 1 or max(counts) > MAX_CLUSTERS:
        raise SpecError(source, "--clusters", f"expected cluster counts between 1 and {MAX_CLUSTERS}, got {text!r}")
    return counts


def cmd_find_gates(args):
    from gdln.verify.find_gates import find_gates_report

    task = _load(args)
    counts = _cluster_counts(args.clusters, task.source)
    if args.write_spec:
        check_writable(args.write_spec, "--write-spec")
    report, network_toml = find_gates_report(
        task, _overrides(args), counts, args.seeds, args.snapshots, epochs=args.epochs
    )
    _append_network(args, network_toml, report)
    _emit(report, args.json, _render_find_gates)


def _render_find_gates(report):
    print(
        f"{report['seeds']} training(s), {len(report['snapshots'])} snapshots, {report['distinct_rows']} distinct rows"
    )
    for entry in report["clusters"]:
        print(f"  k = {entry['k']}: {entry['pathways']} pathway(s), mse {entry['mse']:.3g}")
        for pattern in entry["patterns"]:
            gates = "".join(str(g) for g in pattern["gates"])
            mark = {True: "", False: "  (not realizable by one ReLU unit)", None: "  (empty)"}[pattern["realizable"]]
            print(f"      {gates}  units {pattern['units']:.1f}{mark}")
    print(f"elbow: {report['elbow']} ({report['elbow_rule']})")
    if report.get("written"):
        print(f"wrote {report['written']}")


TIME_FLAGS = {"descent": "gradient descent", "flow": "gradient flow"}


def _numbers(text: str | None, flag: str, kind):
    if text is None:
        return None
    try:
        values = [kind(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise SpecError("gdln zero-shot", flag, f"expected a comma-separated list of numbers, got {text!r}") from None
    if not values or any(not math.isfinite(v) or v <= 0 for v in values):
        raise SpecError("gdln zero-shot", flag, f"expected positive finite numbers, got {text!r}")
    return values


def cmd_zero_shot(args):
    from gdln.verify.graphs import ZERO_SHOT_INIT_SCALES, zero_shot_report

    if args.domains is None or args.domains < 2:
        raise SpecError("gdln zero-shot", "--domains", "needs at least 2 domains")
    trained = _numbers(args.trained, "--trained", int)
    if trained and any(not 1 <= k <= args.domains for k in trained):
        raise SpecError("gdln zero-shot", "--trained", f"every K must lie in 1..{args.domains}")
    scales = _numbers(args.init_scales, "--init-scales", float) or list(ZERO_SHOT_INIT_SCALES)
    report = zero_shot_report(
        args.domains,
        trained,
        scales,
        seeds=args.seeds or 2,
        epochs=args.epochs or 3000,
        scale_trained=args.scale_trained,
        data=args.data,
    )

    def render(r):
        print(
            f"{r['network']} on the routing task ({r['data']}), M = {r['domains']}, {r['seeds']} seed(s): "
            "loss / zero-output loss"
        )
        for e in r["by_trained"]:
            print(f"  K = {e['trained_domains']}: trained {_mean(e['trained'])}, untrained {_mean(e['untrained'])}")
        for e in r["by_init_scale"]:
            print(f"  init {e['init_scale']:g}: trained {_mean(e['trained'])}, untrained {_mean(e['untrained'])}")

    _emit(report, args.json, render)


def _mean(values) -> str:
    finite = [v for v in values if math.isfinite(v)]
    return f"{sum(finite) / len(finite):.3g}" if finite else "none"


def cmd_figures(args):
    from gdln.figures import output_folder, regenerate

    output_folder(Path(args.out))  # before any work: a folder that cannot be made is one line
    for path in regenerate(Path(args.out), quick=args.quick):
        print(path)


def _indices(text: str, source: str, bound: int, what: str) -> list[int]:
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts:
        raise SpecError(source, what, "empty: give at least one datapoint index")
    indices = []
    for part in parts:
        if not part.lstrip("-").isdigit():
            raise SpecError(source, what, f"{part!r} is not an integer index")
        index = int(part)
        if not 0 <= index < bound:
            raise SpecError(source, what, f"index {index} out of range: there are {bound} datapoints (0..{bound - 1})")
        indices.append(index)
    return sorted(set(indices))


def _numeric_inputs(task, args):
    from gdln.numeric.prediction import TaskPredictions

    values = task.values(_overrides(args))
    inputs, _ = TaskPredictions(task).dataset([values[s] for s in task.parameters])
    return inputs


def cmd_realizable(args):
    from gdln.verify.realizability import realizable

    task = _load(args)
    pattern = _indices(args.pattern, "--pattern", task.num_datapoints, "pattern")
    ok, witness = realizable(_numeric_inputs(task, args), pattern)
    report = {"pattern": pattern, "realizable": ok, "witness": None if witness is None else [float(w) for w in witness]}
    _emit(
        report,
        args.json,
        lambda r: print(
            f"pattern {r['pattern']}: {'realizable, w = ' + str(r['witness']) if r['realizable'] else 'not realizable by one ReLU unit without bias'}"
        ),
    )


def cmd_lemma(args):
    import numpy as np

    from gdln.verify.realizability import MAX_LEMMA_DATAPOINTS, enumerate_patterns, pattern_classes

    task = _load(args)
    if task.num_datapoints > MAX_LEMMA_DATAPOINTS:
        raise SpecError(
            task.source,
            "data.inputs",
            f"{task.num_datapoints} datapoints; lemma enumerates at most {MAX_LEMMA_DATAPOINTS}",
        )
    inputs = np.asarray(_numeric_inputs(task, args))
    columns = (
        _indices(args.context_columns, "--context-columns", task.num_inputs, "context-columns")
        if args.context_columns
        else None
    )
    report = enumerate_patterns(inputs, pattern_classes(inputs, columns))
    _emit(
        report,
        args.json,
        lambda r: print(f"{r['realizable']} realizable patterns of {r['datapoints']} datapoints: {r['by_group']}"),
    )


def cmd_task(args):
    from gdln.derive.tasks import context_task, routing_task, to_toml

    if args.kind == "digits":
        from gdln.derive.tasks import digits_task

        try:
            classes = [int(part) for part in (args.classes or "0,1,2").split(",") if part.strip()]
        except ValueError:
            raise SpecError(
                "gdln task digits", "--classes", f"expected digits 0-9, comma-separated, got {args.classes!r}"
            ) from None
        try:
            spec = digits_task(classes, args.per_class or 50, args.projection, args.seed, epochs=args.epochs or 2000)
        except SpecError as error:
            raise SpecError("gdln task digits", f"--{error.key}", error.problem) from None
        sys.stdout.write(to_toml(spec))
        return
    if args.kind == "routing":
        if args.domains is None or args.trained is None:
            raise SpecError("gdln task routing", "--domains", "routing needs --domains and --trained")
        try:
            spec = routing_task(args.domains, args.trained, items=args.items or 4, seed=args.seed)
        except SpecError as error:
            raise SpecError("gdln task routing", f"--{error.key}", error.problem) from None
        sys.stdout.write(to_toml(spec))
        return
    for flag in ("items", "contexts", "blocks"):
        if getattr(args, flag) is None:
            raise SpecError("gdln task context", f"--{flag}", "required for the context task")
    blocks = [b.strip() for b in args.blocks.split(",") if b.strip()]
    try:
        spec = context_task(args.items, args.contexts, blocks, args.candidates)
    except SpecError as error:  # the builder names its argument; here it is a flag
        problem = error.problem if error.source == "context_task" else f"{error.source}: {error.problem}"
        raise SpecError("gdln task context", f"--{error.key}", problem) from None
    sys.stdout.write(to_toml(spec))


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gdln")
    except PackageNotFoundError:  # run from a checkout that is not installed
        return "unknown"


def _example_specs() -> dict:
    """The shipped example specs by name (file name without ``.toml``)."""
    from importlib.resources import files

    return {
        entry.name.removesuffix(".toml"): entry
        for entry in files("gdln.examples").iterdir()
        if entry.name.endswith(".toml")
    }


def cmd_examples(args):
    import tomllib

    specs = _example_specs()
    if args.name is None:
        width = max(len(name) for name in specs)
        for name, entry in sorted(specs.items()):
            title = tomllib.loads(entry.read_text(encoding="utf-8")).get("title", "")
            print(f"{name:<{width}}  {title}")
        print("write one with: gdln examples NAME --out NAME.toml")
        return
    if args.name not in specs:
        raise SpecError("examples", args.name, f"no such example (shipped: {', '.join(sorted(specs))})")
    text = specs[args.name].read_text(encoding="utf-8")
    if args.out:
        write_atomic(args.out, text.encode("utf-8"), "--out")
    else:
        sys.stdout.write(text)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="gdln", description="Exact learning dynamics of gated deep linear networks and ReLU networks."
    )
    parser.add_argument("--version", action="version", version=f"gdln {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("examples", help="list the example specs shipped with gdln, or write one")
    p.add_argument("name", nargs="?", help="the example to write (default: list them)")
    p.add_argument("--out", metavar="FILE", help="write the example to FILE instead of stdout")
    p.set_defaults(run=cmd_examples)

    def with_spec(name, help_text):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("spec", help="task spec (TOML)")
        p.add_argument("--set", action="append", metavar="NAME=VALUE", help="override a parameter value")
        p.add_argument("--json", action="store_true", help="print JSON")
        return p

    p = with_spec("derive", "effective datasets, modes, ODEs, closed forms and loss of one network")
    p.add_argument("--network", required=True, help="the candidate network to derive (a [[network]] name in the spec)")
    p.add_argument(
        "--latex", metavar="FILE", help="write the derivation as a complete LaTeX document (pdflatex, amsmath)"
    )
    p.add_argument("--latex-fragment", metavar="FILE", help="write the body alone, to \\input into a paper")
    p.add_argument("--full", action="store_true", help="print every matrix, mode and coupling, not the summary")
    p.add_argument(
        "--plain",
        action="store_true",
        help="equations as one line of plain text (the default unless stdout is a terminal; there, SymPy's pretty printer)",
    )
    p.set_defaults(run=cmd_derive)

    p = with_spec("race", "rank the candidate networks and find crossovers")
    p.add_argument(
        "--staged",
        action="store_true",
        help="also report the staged approximation (first pathway, then the rest on its residual) and its error",
    )
    p.add_argument(
        "--strict", action="store_true", help="treat warnings (e.g. a learning rate that diverges) as errors"
    )
    p.set_defaults(run=cmd_race)

    p = with_spec("sweep", "the race over a grid of parameters (phase diagram), optionally checked by training")
    p.add_argument(
        "--grid",
        action="append",
        required=True,
        metavar="NAME=START:STOP:NUM[:log]",
        help="an axis: a spec parameter or init_scale, learning_rate, hidden_units (once or twice)",
    )
    p.add_argument("--check", type=int, default=0, metavar="N", help="train ReLU networks at N grid points (default 0)")
    p.add_argument("--plot", metavar="FILE.png", help="write the phase diagram")
    p.set_defaults(run=cmd_sweep)

    p = with_spec("union", "train every candidate pathway together (exact reduced flow): which ones grow")
    p.add_argument("--epochs", type=int, help="horizon (default: the spec's training.epochs)")
    p.set_defaults(run=cmd_union)

    p = with_spec("unique", "orbits of the candidates under the data's symmetries, and whether the winner is unique")
    p.add_argument(
        "--max-pathways",
        type=int,
        help="race every network of at most N realizable gate patterns instead of the spec's (with --patterns all: at "
        "most 16 datapoints)",
    )
    p.add_argument(
        "--patterns",
        choices=["all", "contexts", "self-consistent"],
        default="all",
        help="with --max-pathways: every realizable pattern, the unions of whole contexts (data.contexts), or the "
        "patterns the alignment phase reaches (the leading singular vector of the pattern's correlation gates a ReLU "
        "unit exactly on it)",
    )
    p.set_defaults(run=cmd_unique)

    for name, help_text, run in (
        ("simulate", "train the ReLU network or a GDLN with explicit gates", cmd_simulate),
        ("verify", "train the ReLU network and say which candidate it follows", cmd_verify),
    ):
        p = with_spec(name, help_text)
        if name == "simulate":
            p.add_argument("--model", required=True, help="relu or a network name")
            p.add_argument("--out", metavar="FILE.npz", help="write the loss curves")
            p.add_argument(
                "--dtype",
                choices=["float64", "float32"],
                default="float64",
                help="what the ReLU network trains in (float32 follows float64 to 1e-4 of the initial loss; README)",
            )
        p.add_argument("--seeds", type=int, help="number of seeds (0, 1, ...)")
        p.add_argument("--epochs", type=int, help="training epochs (default: the spec's training.epochs)")
        p.add_argument(
            "--strict", action="store_true", help="treat warnings (e.g. a learning rate that diverges) as errors"
        )
        if name == "verify":
            p.add_argument(
                "--initial-conditions",
                choices=["alignment", "weights", "width"],
                default="alignment",
                help="where predictions start: the alignment phase (default), the initial weights, the widths",
            )
            p.add_argument(
                "--time",
                choices=sorted(TIME_FLAGS),
                help="follow gradient descent at the training step (default with alignment) or gradient flow",
            )
        p.set_defaults(run=run)

    p = with_spec("align", "the alignment phase of the ReLU network: settled gate patterns (no training)")
    p.add_argument("--seeds", type=int, help="number of seeds (0, 1, ...)")
    p.add_argument("--write-spec", metavar="FILE", help="write the spec with the patterns' GDLN added as a network")
    p.set_defaults(run=cmd_align)

    p = with_spec("find-gates", "gate patterns of the trained ReLU network by k-means (Appendix B) and the elbow")
    p.add_argument("--clusters", default="2..8", metavar="A..B|K,K,...", help="cluster counts (default 2..8)")
    p.add_argument("--seeds", type=int, help="number of trainings sampled (default: the spec's)")
    p.add_argument("--epochs", type=int, help="training epochs (default: the spec's)")
    p.add_argument("--snapshots", type=int, help="samples per training, evenly spaced (default: every 100 epochs)")
    p.add_argument("--write-spec", metavar="FILE", help="write the spec with the elbow's network added")
    p.set_defaults(run=cmd_find_gates)

    p = with_spec("realizable", "can one ReLU unit without bias be on exactly at these datapoints?")
    p.add_argument(
        "--pattern", required=True, metavar="I,J,...", help="datapoint indices (from 0) on which the gate is on"
    )
    p.set_defaults(run=cmd_realizable)

    p = with_spec("lemma", "enumerate and classify every realizable gate pattern (<= 16 datapoints)")
    p.add_argument("--context-columns", metavar="I,J,...", help="input columns that encode the context")
    p.set_defaults(run=cmd_lemma)

    p = sub.add_parser("task", help="write a task spec (TOML) to stdout")
    p.add_argument("kind", choices=["context", "routing", "digits"], help="which task to write")
    p.add_argument("--items", type=int, help="items (routing: default 4, a power of two)")
    p.add_argument("--contexts", type=int, help="context: number of contexts")
    p.add_argument("--blocks", help=f"context: one structure per context, comma-separated: {', '.join(STRUCTURES)}")
    p.add_argument("--candidates", help="context: context-subsets lists the candidate networks common+j")
    p.add_argument("--domains", type=int, help="routing: number of input (and output) domains M")
    p.add_argument("--trained", type=int, help="routing: output domains trained per input domain K")
    p.add_argument(
        "--seed", type=int, default=0, help="routing: seed of the domains' input codes; digits: of the projection"
    )
    p.add_argument("--classes", help="digits: the digits to use, comma-separated (default 0,1,2)")
    p.add_argument("--per-class", type=int, help="digits: images per digit (default 50)")
    p.add_argument("--projection", type=int, help="digits: project the pixels onto this many random dimensions")
    p.add_argument("--epochs", type=int, help="digits: training epochs of the spec (default 2000)")
    p.set_defaults(run=cmd_task)

    p = sub.add_parser("zero-shot", help="routing task: error on untrained routes against K/M and init scale")
    p.add_argument("--domains", type=int, required=True, help="number of input (and output) domains M")
    p.add_argument("--trained", help="K values, comma-separated (default 1..M-1)")
    p.add_argument("--init-scales", help="init scales, comma-separated")
    p.add_argument("--scale-trained", type=int, help="K of the init-scale sweep (default M // 2)")
    p.add_argument("--seeds", type=int, help="seeds per point (default: the task's)")
    p.add_argument("--epochs", type=int, help="training epochs (default: the task's)")
    p.add_argument(
        "--data",
        choices=["hierarchy", "digits"],
        default="hierarchy",
        help="the slides' hierarchy items (Figure 5, default) or digits through per-domain rotations and "
        "label permutations (Figure 7)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=cmd_zero_shot)

    p = sub.add_parser("cache", help="where the derivation and compilation caches are, and their size")
    p.add_argument("--clear", action="store_true", help="remove them")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=cmd_cache)

    p = sub.add_parser("figures", help="regenerate the papers' figures")
    p.add_argument("--quick", action="store_true", help="fewer points and seeds")
    p.add_argument("--out", default="figures", help="output folder (default: figures)")
    p.set_defaults(run=cmd_figures)
    for command in sub.choices.values():  # --no-cache before or after the command
        command.add_argument("--no-cache", action="store_true", default=argparse.SUPPRESS, help=NO_CACHE_HELP)
    parser.add_argument("--no-cache", action="store_true", help=NO_CACHE_HELP)
    return parser


NO_CACHE_HELP = "derive and compile from scratch, reading and writing no cache on disk"


def cmd_cache(args):
    if args.clear:
        cache.clear()
    usage = cache.usage()
    _emit(
        usage,
        args.json,
        lambda u: print(
            f"{u['path']}: derivations {u['derivations']['files']} files, {u['derivations']['bytes'] / 1e6:.1f} MB; "
            f"compiled code {u['jax']['files']} files, {u['jax']['bytes'] / 1e6:.1f} MB"
        ),
    )


def _use_caches(args) -> None:
    """Derivations and compiled code on disk, unless ``--no-cache`` (``gdln cache`` only looks)."""
    if args.no_cache or args.command == "cache":
        cache.disable()
        use_compilation_cache(None)
        return
    root = cache.enable()
    use_compilation_cache(root / "jax")


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    use_x64()  # gdln computes in 64-bit; importing its packages does not switch it on
    _use_caches(args)
    for flag, limit in (("seeds", MAX_SEEDS), ("epochs", MAX_EPOCHS)):
        value = getattr(args, flag, None)
        if value is not None and value < 1:
            print(f"gdln: error: --{flag} must be a positive integer, got {value}", file=sys.stderr)
            return 2
        if value is not None and value > limit:
            print(f"gdln: error: --{flag}: {value} is above the limit of {limit}", file=sys.stderr)
            return 2
    source = getattr(args, "spec", None) or "gdln"
    # warnings are printed after the output, one line each, and only when the command succeeds
    # (an error is always exactly one line); --strict makes gdln's own warnings errors
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if getattr(args, "strict", False):
            warnings.simplefilter("error", GdlnWarning)
        try:
            args.run(args)
            cache.flush()
        except (GdlnError, GdlnWarning) as error:
            print(f"gdln: error: {_one_line(error)}", file=sys.stderr)
            return 2
        except RecursionError:
            print(f"gdln: error: {source}: input nested too deeply to process (RecursionError)", file=sys.stderr)
            return 2
        except (OverflowError, MemoryError) as error:
            print(
                f"gdln: error: {source}: numbers or arrays too large: {type(error).__name__}: {_one_line(error)}",
                file=sys.stderr,
            )
            return 2
        except KeyboardInterrupt:
            return 130
        except BrokenPipeError:  # output piped into a reader that stopped early
            return 0
    shown = set()
    for warning in caught:
        text = _one_line(warning.message)
        if issubclass(warning.category, GdlnWarning) and text not in shown:
            shown.add(text)
            print(f"gdln: warning: {text}", file=sys.stderr)
    return 0


def _one_line(error) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return " ".join(lines) or type(error).__name__


if __name__ == "__main__":
    sys.exit(main())
