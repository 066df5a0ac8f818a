import importlib.util
import sys
from types import ModuleType

import pytest
from support import REPO_ROOT


def load_script(path: str) -> ModuleType:
    """A script of deploy/ (not part of the package), loaded from its file."""
    location = REPO_ROOT / path
    name = "atoll_deploy_" + location.stem
    spec = importlib.util.spec_from_file_location(name, location)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as an import would: dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def healthcheck() -> ModuleType:
    """deploy/healthcheck.py, which the image installs as `atoll-healthcheck`."""
    return load_script("deploy/healthcheck.py")


@pytest.fixture(scope="session")
def host_pip() -> ModuleType:
    """deploy/images/host_pip.py, which build.sh runs to give a container the host's pip."""
    return load_script("deploy/images/host_pip.py")


@pytest.fixture(scope="session")
def podman_healthchecks() -> ModuleType:
    """deploy/podman/healthchecks.py, the healthcheck runner for podman without systemd."""
    return load_script("deploy/podman/healthchecks.py")
