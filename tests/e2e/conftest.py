"""The dashboard in a real browser: Debian's chromium driven by Playwright (which downloads
no browser of its own), against a real stack started here, one per module: Redis, the
registry, the control plane, the dashboard and three edge agents (localstack). One
browser for the whole session (pytest-playwright's)."""

from collections.abc import Iterator
from typing import Any

import pytest
from e2e.browser import CHROMIUM, CHROMIUM_ARGS, SITES, Offsite, log_in, new_context, started
from playwright.sync_api import Browser, Page, expect
from support import require

from atoll.localstack.deployment import AgentSpec, LocalDeployment

# Pages here stream live events and draw charts from fetched history; on a loaded two-core
# host that took longer than expect's default 5 s now and then. A slow page still fails.
expect.set_options(timeout=20_000)


@pytest.fixture(scope="session")
def browser_type_launch_args() -> dict[str, Any]:
    require(CHROMIUM.exists(), "Debian's chromium (apt-get install -y chromium)")
    return {"executable_path": str(CHROMIUM), "args": CHROMIUM_ARGS, "headless": True}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalDeployment]:
    """The stack of a module: three sites, unless the module says otherwise."""
    root = tmp_path_factory.mktemp("dashboard-stack")
    yield from started(root, [AgentSpec(n, r) for n, r in SITES.items()])


@pytest.fixture
def offsite() -> Iterator[Offsite]:
    watcher = Offsite()
    yield watcher
    assert watcher.outside == [], (
        f"the page requested something outside 127.0.0.1: {watcher.outside}"
    )


def logged_in(
    browser: Browser, stack: LocalDeployment, offsite: Offsite, token: str
) -> Iterator[Page]:
    context = new_context(browser, offsite)
    page = context.new_page()
    log_in(page, stack, token)
    yield page
    context.close()


@pytest.fixture
def admin(browser: Browser, stack: LocalDeployment, offsite: Offsite) -> Iterator[Page]:
    yield from logged_in(browser, stack, offsite, stack.admin_token)


@pytest.fixture
def viewer(browser: Browser, stack: LocalDeployment, offsite: Offsite) -> Iterator[Page]:
    yield from logged_in(browser, stack, offsite, stack.viewer_token)
