"""gdln derive: effective datasets, modes, ODEs, closed forms and loss of one network."""

from __future__ import annotations

from gdln.derive.words import plural
from gdln.verify.files import LATEX_SUFFIXES

from .arguments import load, training_settings, with_spec
from .output import ALGEBRAIC_NOTE, check_output, emit, has_algebraic, indented, value_text, write_output, yes_no


def _render_derive_full(report, pathway_equations: list[list[dict]], loss_equation: str):
    """Everything: ``pathway_equations`` per pathway and mode, ``{"ode", "closed_form"}`` as text
    (``equations.pathway_equations``); ``loss_equation`` the loss as text."""
    print(f"network {report['network']}")
    for p, equations in zip(report["pathways"], pathway_equations):
        print(f"  pathway {p['name']} (active on {p['active']})")
        print(f"    Sigma_yx = {p['sigma_yx']}")
        print(f"    Sigma_x  = {p['sigma_x']}")
        for k, (s, d) in enumerate(zip(p["singular_values"], p["input_variances"])):
            print(f"    mode {k}: s = {value_text(s, 's')}, d = {value_text(d, whole=True)}")
            if p["odes"] is None:  # the reduced flow, below, is the system: no mode ODE is
                continue
            print(indented(equations[k]["ode"], "      "))
            if equations[k]["closed_form"]:
                print(indented(equations[k]["closed_form"], "      "))
    system = report["system"]
    if system["kind"] == "reduced flow":
        _render_flow(system, "  ", full=True)
    else:
        print(f"  reduced system ({system['kind']}): {system['equation']}")
        for c in system["coupling"]:
            print(f"    C[{c['row']}, {c['column']}] = {value_text(c, whole=True)}")
    a = report["assumptions"]
    print(
        f"  mutually diagonalisable: {yes_no(a['mutually_diagonalisable'])}; pathways interact: {yes_no(a['pathways_interact'])}"
    )
    for failure in a["failures"]:
        print(f"    {failure}")
    print("  loss")
    print(indented(loss_equation if system["kind"] != "reduced flow" else system["loss"], "    "))
    print(f"  speed (largest singular value s) = {value_text(report['speed'], 's')}")


def _render_flow(system, indent: str, *, full: bool = False) -> None:
    """The reduced flow that ``gdln race`` integrates, where the mode strengths do not reduce
    exactly: its equation, state, initial condition and coupling blocks (``full``: their matrices)."""
    print(f"{indent}reduced system: the reduced flow on each pathway's weight chain, what gdln race integrates")
    print(f"{indent}  (the mode strengths do not reduce exactly: {system['reason']})")
    equation, gradient = system["equation"].split(", G(p) = ", 1)
    print(f"{indent}  {equation},")
    print(f"{indent}  G(p) = {gradient}; E_p places pathway p's target features among all {system['outputs']}")
    layers = ", ".join(f"{v['name']} {v['shape'][0]}x{v['shape'][1]}" for v in system["variables"])
    print(f"{indent}  state: {layers}")
    print(f"{indent}  from {system['initial']}")
    print(f"{indent}  U(p), V(p): the modes of Sigma_yx(p) above, one column each")
    blocks = "; ".join(f"{c['name']} {c['shape'][0]}x{c['shape'][1]}" for c in system["coupling"])
    if not full:
        print(f"{indent}  coupling blocks: {blocks} (--full or --json lists them)")
        return
    print(f"{indent}  coupling blocks:")
    for c in system["coupling"]:
        print(f"{indent}    {c['name']} = {c['expr']}")
    for p in system["pathways"]:
        for matrix in (p["u"], p["v"]):
            if "CRootOf" in matrix["expr"]:  # algebraic numbers are never printed as their polynomial
                print(
                    f"{indent}  {matrix['name']}: in algebraic numbers with no radical form (--json gives it exactly)"
                )
            else:
                print(f"{indent}  {matrix['name']} = {matrix['expr']}")
    print(f"{indent}  tr<yy^T> = {value_text(system['target_power'])}")


def _render_classes(report) -> None:
    """Each pathway's gate, shape, rank and depth, and its classes of modes: s, how many, d."""
    most = max((c["multiplicity"] for p in report["pathways"] for c in p["classes"]), default=1)
    width = len(plural(most, "mode")) + 1
    for p in report["pathways"]:
        rows, cols = p["shape"]
        print(f"  {p['name']}: on {p['gate']}; Sigma_yx {rows}x{cols}, rank {p['rank']}; depth {p['depth']}")
        for c in p["classes"]:
            s = value_text(c["s"], "s")
            d = value_text(c["d"])
            if c["kind"] == "algebraic" and (c["d"].get("algebraic") or "CRootOf" in c["d"]["expr"]):
                d = f"{c['d']['value']:.10g} (algebraic, a rational polynomial in s^2)"
            print(f"    {(plural(c['multiplicity'], 'mode') + ':').ljust(width)} s = {s}, d = {d}")


def _render_system(report, variable_equations: list[dict]) -> None:
    """The reduced system: shared trajectories and their equations, the reduced flow, or one
    strength per mode."""
    system = report["system"]
    variables = system["variables"]
    a = report["assumptions"]
    if system["kind"] == "groups":
        print(
            f"reduced system: {plural(len(variables), 'shared trajectory', 'shared trajectories')} "
            f"(exact group reduction), {system['equation']}"
        )
        for v, equations in zip(variables, variable_equations):
            verb = "follows" if v["multiplicity"] == 1 else "follow"
            print(f"  {v['name']}: {v['label']}; {plural(v['multiplicity'], 'mode')} {verb} it")
            print(indented(equations["ode"], "    "))
            if equations["closed_form"]:
                print(indented(equations["closed_form"], "    "))
    elif system["kind"] == "reduced flow":
        _render_flow(system, "")
    else:
        why = "; ".join(a["shared_basis_failures"] or a["failures"][:1]) or "no shared trajectories"
        print(f"reduced system: one strength per mode ({len(variables)} modes; group reduction not exact: {why})")
        print(
            f"  {system['equation']}, C with diagonal d and {plural(len(system['coupling']), 'non-zero coupling')} "
            "(--full or --json lists them)"
        )


def _render_assumptions(report) -> None:
    """The assumptions: diagonalisability, interaction, closed form, the first failures, the
    exceptional set, algebraic values, named coupling numbers, symmetric groups."""
    a = report["assumptions"]
    print(
        f"mutually diagonalisable: {yes_no(a['mutually_diagonalisable'])}; pathways interact: "
        f"{yes_no(a['pathways_interact'])}; closed form: {yes_no(a['closed_form'])}"
    )
    for failure in a["failures"][:3]:
        print(f"  {failure}")
    if len(a["failures"]) > 3:
        print(f"  ... and {len(a['failures']) - 3} more")
    exceptional_line(report)
    for value in a.get("algebraic_values", []):
        print(
            f"  {value['pathway']}: {plural(value['modes'], 'singular value')} with no radical form "
            f"(algebraic of degree {value['degree']})"
        )
    if report.get("coupling_numbers"):
        named = report["coupling_numbers"]
        print(
            f"  {plural(len(named['couplings']), 'coupling')} between such modes are named exact numbers, "
            f"{named['definition']} (--json lists the vectors)"
        )
    groups = [g for g in a["symmetric_groups"] if len(g) > 1]
    print("groups of symmetric pathways: " + ("; ".join(" = ".join(g) for g in groups) if groups else "none"))


def _render_derive(report, variable_equations: list[dict]):
    """A summary that fits a screen or two; ``--full`` prints everything. ``variable_equations``:
    per shared trajectory, ``{"ode", "closed_form"}`` as text (``equations.summary_equations``)."""
    print(
        f"network {report['network']}: {plural(len(report['pathways']), 'pathway')}; each lists its singular "
        "values s, how many modes share each, and their input variance d"
    )
    _render_classes(report)
    _render_system(report, variable_equations)
    _render_assumptions(report)
    print(
        f"initial loss {value_text(report['loss']['initial'])}; loss in closed form: {yes_no(report['loss']['closed_form'])}"
    )
    print(f"speed (largest singular value s) = {value_text(report['speed'], 's')}")
    for c in report.get("crossovers", []):
        first, second = c["networks"]
        print(f"crossover with {second if first == report['network'] else first}: {c['parameter']}* = {value_text(c)}")
    for other in report.get("crossovers_not_derived", []):
        print(f"no crossover with {other['network']}: it cannot be derived ({other['reason']})")
    if has_algebraic(report):
        print(ALGEBRAIC_NOTE)


def cmd_derive(args):
    from gdln.derive.latex import to_latex
    from gdln.numeric.prediction import TaskPredictions
    from gdln.verify.derivation_report import derive_report, derive_summary, network_crossovers
    from gdln.verify.graphs import shared_edges

    from . import equations

    latex_files = ((args.latex, "--latex", True), (args.latex_fragment, "--latex-fragment", False))
    for path, key, _ in latex_files:
        check_output(path, key, LATEX_SUFFIXES)  # before any work
    task = load(args)
    if shared_edges(task, args.network):
        _derive_shared(task, args)
        return
    models = TaskPredictions(task)
    if args.json or args.full:
        report = derive_report(task, args.network, models=models)
    else:  # the summary, kept in the derivation cache
        report = derive_summary(task, args.network, models=models)
    if args.latex is not None or args.latex_fragment is not None:
        values = task.values()
        derivation = models.derivation(args.network)
        found = network_crossovers(models, derivation.network.name, values)  # cached if the report solved them
        for path, key, document in latex_files:
            if path is not None and args.staged:
                write_output(path, to_latex(models.staged(args.network), document=document), key, LATEX_SUFFIXES)
            elif path is not None:
                write_output(path, to_latex(derivation, found, document=document), key, LATEX_SUFFIXES)

    def render(entries):  # the equations' text is written only for the text output
        style = equations.equation_style(args)
        if args.full:
            derivation = models.derivation(args.network)
            _render_derive_full(
                entries, equations.pathway_equations(derivation, style), equations.loss_equation(derivation, style)
            )
        else:  # the summary writes the equations of shared trajectories only
            shared = entries["system"]["kind"] == "groups"
            _render_derive(entries, equations.summary_equations(task, args.network, models, style) if shared else [])

    emit(report, args.json, render, fixed=task.fixed, training=training_settings(args))


def _derive_shared(task, args):
    from gdln.verify.graphs import shared_derive_report

    report, reduction = shared_derive_report(task, args.network)
    for path, key, document in ((args.latex, "--latex", True), (args.latex_fragment, "--latex-fragment", False)):
        if path is not None:
            write_output(path, reduction.latex(document=document), key, LATEX_SUFFIXES)

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

    emit(report, args.json, render, fixed=task.fixed, training=training_settings(args))


def add_parser(sub) -> None:
    p = with_spec(sub, "derive", "effective datasets, modes, ODEs, closed forms and loss of one network")
    p.add_argument("--network", required=True, help="the candidate network to derive (a [[network]] name in the spec)")
    p.add_argument(
        "--latex", metavar="FILE", help="write the derivation as a complete LaTeX document (pdflatex, amsmath)"
    )
    p.add_argument("--latex-fragment", metavar="FILE", help="write the body alone, to \\input into a paper")
    p.add_argument(
        "--staged",
        action="store_true",
        help="with --latex or --latex-fragment: the staged derivation (the first pathway alone, then the rest on "
        "its residual; paper Appendix F)",
    )
    p.add_argument("--full", action="store_true", help="print every matrix, mode and coupling, not the summary")
    p.add_argument(
        "--plain",
        action="store_true",
        help="equations as one line of plain text (the default unless stdout is a terminal; there, SymPy's pretty printer)",
    )
    p.set_defaults(run=cmd_derive)


def exceptional_line(report) -> None:
    """Where a parametric derivation holds: off its exceptional set, for positive values."""
    if report.get("exceptional_set") is None:
        return
    names = ", ".join(report["parameters"])
    where = "; ".join(c["text"] for c in report["exceptional_set"])
    print(
        f"generic: holds for positive {names}"
        + (f" except where {where}" if where else "")
        + " (race, sweep and verify derive at such a point instead, as --set does)"
    )
