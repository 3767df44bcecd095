"""gdln task: the papers' tasks written as specs."""

from __future__ import annotations

import sys

from gdln.derive.errors import SpecError
from gdln.derive.spec import STRUCTURES


def cmd_task(args):
    from gdln.derive.spec import context_task, routing_task, to_toml

    if args.kind == "digits":
        from gdln.derive.spec import digits_task

        try:
            classes = [int(part) for part in (args.classes or "0,1,2").split(",") if part.strip()]
        except ValueError:
            raise SpecError(
                "gdln task digits", "--classes", f"expected digits 0-9, comma-separated, got {args.classes!r}"
            ) from None
        try:
            spec = digits_task(
                classes,
                50 if args.per_class is None else args.per_class,
                args.projection,
                args.seed,
                epochs=args.epochs or 2000,
            )
        except SpecError as error:
            raise SpecError("gdln task digits", f"--{error.key}", error.problem) from None
        sys.stdout.write(to_toml(spec))
        return
    if args.kind == "routing":
        if args.domains is None or args.trained is None:
            raise SpecError("gdln task routing", "--domains", "routing needs --domains and --trained")
        try:
            spec = routing_task(
                args.domains, args.trained, items=4 if args.items is None else args.items, seed=args.seed
            )
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


def add_parser(sub) -> None:
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
