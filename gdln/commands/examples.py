"""gdln examples: the example specs shipped with gdln."""

from __future__ import annotations

import sys

from gdln.derive.errors import SpecError
from gdln.verify.files import SPEC_SUFFIXES, check_writable, write_atomic


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

    if args.out is not None:
        check_writable(args.out, "--out", SPEC_SUFFIXES)
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
    if args.out is not None:
        write_atomic(args.out, text.encode("utf-8"), "--out", SPEC_SUFFIXES)
    else:
        sys.stdout.write(text)


def add_parser(sub) -> None:
    p = sub.add_parser("examples", help="list the example specs shipped with gdln, or write one")
    p.add_argument("name", nargs="?", help="the example to write (default: list them)")
    p.add_argument("--out", metavar="FILE", help="write the example to FILE instead of stdout")
    p.set_defaults(run=cmd_examples)
