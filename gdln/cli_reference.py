"""The command-line reference as Markdown, written from the argparse parser itself, so the
documentation's command-line page cannot drift from the commands (``docs/hooks.py`` puts it
into ``docs/cli.md``; a test checks that it lists every subcommand and flag)."""

from __future__ import annotations

import argparse

from gdln.cli import build_parser


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _summaries(parser: argparse.ArgumentParser) -> dict[str, str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {choice.dest: choice.help or "" for choice in action._choices_actions}
    return {}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _option_rows(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        metavar = action.metavar if isinstance(action.metavar, str) else action.dest.upper()
        if action.option_strings:
            name = ", ".join(action.option_strings) + (f" {metavar}" if action.nargs != 0 else "")
        else:
            name = metavar
        extra = []
        if action.choices is not None and not isinstance(action.choices, dict):
            extra.append("one of " + ", ".join(f"`{c}`" for c in action.choices))
        if action.required and action.option_strings:
            extra.append("required")
        help_text = (action.help or "") % {"default": action.default} if action.help else ""
        cell = help_text + (f" ({'; '.join(extra)})" if extra else "")
        rows.append(f"| `{_cell(name)}` | {_cell(cell)} |")
    return rows


def reference_markdown(parser: argparse.ArgumentParser | None = None) -> str:
    """Every subcommand with its one-line summary, its usage and a table of its options."""
    parser = parser or build_parser()
    lines = ["```text", parser.format_usage().strip(), "```", "", "| option | what it does |", "| --- | --- |"]
    lines += _option_rows(parser)
    summaries = _summaries(parser)
    for name, sub in _subcommands(parser).items():
        summary = summaries.get(name, "").rstrip(".")
        lines += ["", f"## gdln {name}", "", summary[:1].upper() + summary[1:] + ".", "", "```text"]
        lines += [sub.format_usage().strip(), "```", ""]
        nested = _subcommands(sub)
        rows = _option_rows(sub)
        if rows:
            lines += ["| argument | what it does |", "| --- | --- |", *rows]
        for inner, subsub in nested.items():
            lines += ["", f"### gdln {name} {inner}", "", "```text", subsub.format_usage().strip(), "```", ""]
            lines += ["| argument | what it does |", "| --- | --- |", *_option_rows(subsub)]
    return "\n".join(lines) + "\n"
