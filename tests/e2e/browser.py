"""What the browser tests share: chromium's path and flags, the page sizes, a guard that
refuses any request leaving 127.0.0.1, a stack, logging in, axe, and the keyboard walk."""

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, BrowserContext, Page
from support import REPO_ROOT, require

from atoll.localstack.deployment import AgentSpec, LocalDeployment

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
    browser: Browser, offsite: Offsite, viewport: dict[str, int] = DESKTOP, **options: Any
) -> BrowserContext:
    context = browser.new_context(viewport=viewport, locale="en-GB", timezone_id="UTC", **options)
    offsite.watch(context)
    return context


def started(root: Path, sites: list[AgentSpec]) -> Iterator[LocalDeployment]:
    """A local stack (services, dashboard, an agent per site) for a module's tests."""
    require(shutil.which("redis-server") is not None, "redis-server (apt-get install redis-server)")
    deployment = LocalDeployment(root, sites)
    try:
        deployment.start()
        yield deployment
    finally:
        deployment.stop()


def log_in(page: Page, stack: LocalDeployment, token: str, next_path: str = "/") -> None:
    page.goto(f"{stack.web_url}/login?next={next_path}")
    page.get_by_label("Token").fill(token)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{stack.web_url}{next_path}")


def serious(page: Page) -> list[str]:
    results = Axe().run(page)
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]


# The controls a page offers in `scope` (named as the focus walk below names what it
# reaches), and a record of every focus change from then on.
KEYBOARD = """scope => {
    const key = e => {
        const tag = e.tagName.toLowerCase();
        const text = /^(a|button|summary)$/.test(tag) ? e.textContent.trim().slice(0, 40) : "";
        const what = e.getAttribute("href") || e.getAttribute("name") || e.id
            || e.getAttribute("aria-label") || e.getAttribute("aria-labelledby") || "";
        return `${tag}|${what}|${text}`;
    };
    const shown = e => {
        const r = e.getBoundingClientRect();
        return r.width > 0 && r.height > 0 && e.checkVisibility({visibilityProperty: true});
    };
    if (!window.__walk) {
        window.__walk = [];
        document.addEventListener("focusin", event => {
            const e = event.target, style = getComputedStyle(e);
            const ring = (style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0)
                || style.boxShadow !== "none";
            window.__walk.push({key: key(e), shown: shown(e), ring, tabbable: e.tabIndex >= 0});
        });
    }
    const controls = "a[href], button:not([disabled]), input:not([type=hidden]):not([disabled]),"
        + " select:not([disabled]), textarea:not([disabled]), summary, [tabindex]";
    return [...document.querySelector(scope).querySelectorAll(controls)]
        .filter(e => e.tabIndex >= 0 && shown(e)).map(key);
}"""


def walk_by_keyboard(page: Page, where: str) -> None:
    """From a freshly loaded page, with the keyboard alone: the first Tab stop is the skip
    link, shown on screen; Tab from there reaches every control the page has, each visibly
    focused; Enter on the skip link moves the focus to the content, so that the next Tab
    lands on the content's first control."""
    controls = page.evaluate(KEYBOARD, "body")
    page.keyboard.press("Tab")
    first = page.evaluate(
        "(() => { const e = document.activeElement, r = e.getBoundingClientRect();"
        " return [e.textContent.trim(), r.left >= 0 && r.top >= 0 && r.right <= innerWidth]; })()"
    )
    assert first == ["Skip to content", True], f"{where}: the first Tab stop is {first}"
    for _ in range(len(controls)):
        page.keyboard.press("Tab")
    walk = page.evaluate("window.__walk")
    reached = {step["key"] for step in walk}
    assert set(controls) <= reached, f"{where}: Tab never reaches {set(controls) - reached}"
    unseen = [s["key"] for s in walk if s["tabbable"] and not (s["shown"] and s["ring"])]
    assert not unseen, f"{where}: focused without a visible focus ring: {unseen}"

    page.evaluate("document.querySelector('a.skip').focus(); window.__walk = []")
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    landed = [step["key"] for step in page.evaluate("window.__walk")]
    in_main = page.evaluate(KEYBOARD, "main")
    assert landed[:1] == ["main|main|"] and landed[1:2] == in_main[:1], f"{where}: {landed}"
