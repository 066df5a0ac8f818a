"""The geo tier's policies are a library the site tier (and the simulator) drives: geo
imports nothing of site, so the dependency goes one way."""

import ast
from pathlib import Path

import atoll.platform.geo

GEO = Path(next(iter(atoll.platform.geo.__path__)))


def imported_modules(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_no_geo_module_imports_the_site_tier() -> None:
    offenders = {
        path.name: sorted(m for m in imported_modules(path) if m.startswith("atoll.platform.site"))
        for path in GEO.glob("*.py")
    }
    assert {name: mods for name, mods in offenders.items() if mods} == {}
