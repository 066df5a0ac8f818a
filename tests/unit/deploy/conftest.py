import importlib.util
from types import ModuleType

import pytest
from support import REPO_ROOT


@pytest.fixture(scope="session")
def healthcheck() -> ModuleType:
    """deploy/healthcheck.py, which the image installs as `atoll-healthcheck`: a script,
    not part of the package, so it is loaded from its file."""
    path = REPO_ROOT / "deploy" / "healthcheck.py"
    spec = importlib.util.spec_from_file_location("atoll_deploy_healthcheck", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
