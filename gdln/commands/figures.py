"""gdln figures: regenerate the papers' figures."""

from __future__ import annotations

from pathlib import Path


def cmd_figures(args):
    from gdln.figures import output_folder, regenerate

    output_folder(Path(args.out))  # before any work: a folder that cannot be made is one line
    for path in regenerate(Path(args.out), quick=args.quick):
        print(path)


def add_parser(sub) -> None:
    p = sub.add_parser("figures", help="regenerate the papers' figures")
    p.add_argument("--quick", action="store_true", help="fewer points and seeds")
    p.add_argument("--out", default="figures", help="output folder (default: figures)")
    p.set_defaults(run=cmd_figures)
