"""Make the tree of links mypy reads the packages through: `atoll/cli` -> `cli/`, and so
on for every entry of [tool.setuptools.package-dir] in pyproject.toml.

mypy cannot follow the import hook of setuptools' editable install, and the folders are
not named as they import (`cli/` is `atoll.cli`). Links to folders, so files added later
are seen without running this again. Usage: python tools/typecheck_tree.py FOLDER
"""

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(folder: Path) -> None:
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    for package, source in packages["package-dir"].items():
        link = folder.joinpath(*package.split("."))
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() and link.resolve() == (ROOT / source).resolve():
            continue
        link.unlink(missing_ok=True)
        link.symlink_to(ROOT / source, target_is_directory=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
