"""MkDocs hooks: the command-line page is written from the argparse parser at build time, and
the API reference reads gdln as it installs (the tree of links that `.ci/typecheck.py` builds
from pyproject's package-dir mapping; the layers keep their own folders in the repository)."""

import importlib.util
from pathlib import Path

MARKER = "<!-- gdln command-line reference -->"
ROOT = Path(__file__).resolve().parent.parent


def on_startup(command, dirty):
    """Link the tree before any plugin reads its configuration: mkdocstrings keeps only the
    `paths` that exist when it is configured (in its own on_config, which runs before a hook's),
    so linking in on_config failed the first build of a fresh clone and passed the second."""
    spec = importlib.util.spec_from_file_location("gdln_typecheck", ROOT / ".ci" / "typecheck.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.link_tree()


def on_page_markdown(markdown, page, config, files):
    if MARKER not in markdown:
        return markdown
    from gdln.cli_reference import reference_markdown

    return markdown.replace(MARKER, reference_markdown())
