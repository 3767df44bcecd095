"""mypy over gdln as it installs: `python .ci/typecheck.py [mypy options]`.

The layers keep the design's folders (derive/, numeric/, ...) and install as gdln's
subpackages through setuptools' package-dir mapping. mypy cannot follow that mapping (an
editable install resolves it with an import hook), so this script builds the installed tree
from links under build/typecheck, read from the same mapping in pyproject.toml, and checks
`gdln` there: imports across layers are then typed, not silently Any."""

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "build" / "typecheck"


def link_tree() -> None:
    package_dir = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    shutil.rmtree(TREE, ignore_errors=True)
    for package, folder in sorted(package_dir.items()):  # parents before their subpackages
        target = TREE.joinpath(*package.split("."))
        target.mkdir(parents=True)
        for entry in (ROOT / folder).iterdir():
            if entry.name != "__pycache__":
                (target / entry.name).symlink_to(entry)


if __name__ == "__main__":
    link_tree()
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "-p", "gdln", *sys.argv[1:]]
    sys.exit(subprocess.run(command, cwd=TREE).returncode)
