"""The folder-to-package mapping that pyproject.toml declares."""

import subprocess
import sys
import tomllib

from support import REPO_ROOT

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())


def test_every_folder_with_python_code_is_a_listed_package() -> None:
    setuptools = PYPROJECT["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    found = set()
    for package, folder in setuptools["package-dir"].items():
        for module in (REPO_ROOT / folder).rglob("*.py"):
            parts = module.parent.relative_to(REPO_ROOT / folder).parts
            if "__pycache__" not in parts:
                found.add(".".join([package, *parts]))
    assert found - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"


def test_platform_folder_does_not_shadow_the_standard_library() -> None:
    assert not (REPO_ROOT / "platform" / "__init__.py").exists()
    out = subprocess.run(
        [sys.executable, "-c", "import platform; print(platform.system())"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "Linux"
