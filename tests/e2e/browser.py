"""What the browser tests share: chromium's path and flags, the page sizes, a guard that
refuses any request leaving 127.0.0.1, and logging in."""

import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from playwright.sync_api import Browser, BrowserContext, Page
from support import REPO_ROOT

from atoll.localstack.deployment import LocalDeployment

CHROMIUM = Path(os.environ.get("ATOLL_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip
SITES = {"virginia": "us-east-1", "frankfurt": "eu-central-1", "singapore": "ap-southeast-1"}
SHOTS = REPO_ROOT / "test-results" / "dashboard"
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}


class Offsite:
    """Every request a page makes, and those that left 127.0.0.1 (refused)."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.outside: list[str] = []

    def watch(self, context: BrowserContext) -> None:
        def check(route: Any) -> None:
            url = route.request.url
            self.requests.append(url)
            host = urlsplit(url).hostname
            if url.startswith(("data:", "blob:", "about:")) or host == "127.0.0.1":
                route.continue_()
            else:
                self.outside.append(url)
                route.abort()

        context.route("**/*", check)


def new_context(
    browser: Browser, offsite: Offsite, viewport: dict[str, int] = DESKTOP
) -> BrowserContext:
    context = browser.new_context(viewport=viewport, locale="en-GB", timezone_id="UTC")
    offsite.watch(context)
    return context


def log_in(page: Page, stack: LocalDeployment, token: str, next_path: str = "/") -> None:
    page.goto(f"{stack.web_url}/login?next={next_path}")
    page.get_by_label("Token").fill(token)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{stack.web_url}{next_path}")
