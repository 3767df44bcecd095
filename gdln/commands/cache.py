"""gdln cache: where the caches are."""

from __future__ import annotations

from .output import emit


def cmd_cache(args):
    from gdln.derive import cache  # SymPy: imported when the command runs

    if args.clear:
        cache.clear()
    usage = cache.usage()
    emit(usage, args.json, _print)


def _print(u) -> None:
    print(
        f"{u['path']}: derivations {u['derivations']['files']} files, {u['derivations']['bytes'] / 1e6:.1f} MB; "
        f"compiled code {u['jax']['files']} files, {u['jax']['bytes'] / 1e6:.1f} MB; "
        f"checked sweep points {u['points']['files']} files, {u['points']['bytes'] / 1e6:.1f} MB"
    )
    # a command would run without the cache, with a warning: say so, and why, here
    print("usable" if u["usable"] else f"not usable (commands run without it): {u['problem']}")


def add_parser(sub) -> None:
    p = sub.add_parser(
        "cache", help="where the derivation and compilation caches and the checked sweep points are, and their size"
    )
    p.add_argument("--clear", action="store_true", help="remove them")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=cmd_cache)
