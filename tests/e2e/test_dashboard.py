"""Every flow of the dashboard, in chromium, against the real services (one stack for the
module): log in; register a site and see its token once; drain and activate; submit a job
from the form and watch it live to the end; cancel one; a viewer sees no write control
and a forged write is refused; CSRF and Origin; the control plane stopped mid-session;
every page checked by axe, walked with the keyboard, screenshotted at two sizes."""

import re
import time

import pytest
from e2e.browser import (
    DESKTOP,
    PHONE,
    SHOTS,
    Offsite,
    log_in,
    new_context,
    serious,
    walk_by_keyboard,
)
from playwright.sync_api import Browser, Page, expect

from atoll.localstack.deployment import LocalDeployment, http_ready, wait_until
from atoll.platform.control.client import ControlClient
from atoll.platform.net.ports import free_loopback_port

pytestmark = [pytest.mark.integration, pytest.mark.browser, pytest.mark.timeout(600)]
LIVE_S = 120_000  # ms: how long a page may take to show a job's end
JOB_FORM = {
    "Dataset": "digits", "Partition": "iid", "Model": "mlp", "Batch per worker": "16",
    "Clocks": "60", "Evaluate every": "20", "Evaluation samples": "200",
}  # fmt: skip


def csrf_of(page: Page) -> str:
    return page.locator("input[name=csrf_token]").first.get_attribute("value") or ""


def post_from_page(page: Page, path: str, fields: dict[str, str]) -> int:
    """A POST the page's own script sends (same origin, with the session cookie)."""
    return page.evaluate(
        """async ([path, fields]) => {
            const body = new URLSearchParams(fields);
            const r = await fetch(path, {method: "POST", body, redirect: "manual"});
            return r.status;
        }""",
        [path, fields],
    )


def control(stack: LocalDeployment) -> ControlClient:
    return ControlClient(stack.control_url, stack.admin_token)


def test_register_a_site_see_its_token_once_then_drain_and_activate(
    admin: Page, stack: LocalDeployment
) -> None:
    page = admin
    page.get_by_role("link", name="Sites", exact=True).click()
    page.get_by_role("link", name="Register a site").click()
    page.get_by_label("Name").fill("lab-e2e")
    page.get_by_label("Region").fill("eu-west-1")
    page.get_by_role("button", name="Register").click()
    page.wait_for_url(f"{stack.web_url}/sites/lab-e2e")
    token = page.locator("#secret-value").input_value()
    assert token.startswith("atoll_") and len(token) > 30
    page.reload()
    assert token not in page.content()  # shown once
    expect(page.locator("#secret-value")).to_have_count(0)

    page.goto(f"{stack.web_url}/sites?q=lab-e2e")
    expect(page.get_by_role("link", name="lab-e2e")).to_be_visible()
    page.get_by_role("link", name="lab-e2e").click()
    page.get_by_role("button", name="Drain").click()
    expect(page.get_by_text("Site lab-e2e is now draining.")).to_be_visible()
    with control(stack) as client:
        assert client.site("lab-e2e").state == "draining"
    page.get_by_role("button", name="Activate").click()
    expect(page.get_by_text("Site lab-e2e is now active.")).to_be_visible()
    with control(stack) as client:
        assert client.site("lab-e2e").state == "active"
    assert token not in page.content()
    assert token not in (stack.root / "web.log").read_text()


def test_submit_a_job_from_the_form_and_watch_it_to_the_end_without_a_reload(
    admin: Page, stack: LocalDeployment
) -> None:
    page = admin
    page.goto(f"{stack.web_url}/jobs/new")
    for label, value in JOB_FORM.items():
        field = page.get_by_label(label, exact=True)
        if field.evaluate("e => e.tagName") == "SELECT":
            field.select_option(value)
        else:
            field.fill(value)
    page.locator("#f-name").fill("e2e-digits")
    page.get_by_role("button", name="Submit the job", exact=True).click()
    page.wait_for_url(re.compile(r".*/jobs/[0-9a-f-]{36}$"))
    page.evaluate("window.__samePage = true")  # gone if the page reloads
    expect(page.locator("#live")).to_have_attribute("data-state", "live", timeout=15_000)
    state = page.locator("#job-live .facts dd").first
    expect(state).to_contain_text("running", timeout=LIVE_S)
    page.wait_for_function("() => window.atollLastTelemetry !== undefined", timeout=LIVE_S)
    accuracy = page.locator("#job-live tbody tr").first.locator("td").nth(4)
    expect(accuracy).to_contain_text("%", timeout=LIVE_S)  # the first evaluation is in
    expect(page.locator("#live")).to_have_attribute("data-state", "live")  # events streaming
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "job-live-1440x900.png"), full_page=True)
    expect(state).to_contain_text("completed", timeout=LIVE_S)
    assert page.evaluate("window.__samePage") is True
    expect(page.get_by_role("heading", name="Final table")).to_be_visible()
    # The charts drew from the history and the live events.
    assert page.locator(".uplot").count() == 4


def test_a_bad_field_is_shown_next_to_it_and_nothing_is_submitted(
    admin: Page, stack: LocalDeployment
) -> None:
    page = admin
    with control(stack) as client:
        before = client.jobs(limit=1).total
    page.goto(f"{stack.web_url}/jobs/new")
    page.get_by_label("Threshold (asp)").fill("-1")
    page.get_by_label("Clocks", exact=True).fill("many")
    page.get_by_role("button", name="Submit the job", exact=True).click()
    expect(page.locator("#e-clocks")).to_contain_text("whole number")
    page.get_by_label("Clocks", exact=True).fill("10")
    page.get_by_role("button", name="Submit the job", exact=True).click()
    expect(page.locator("#e-geo-threshold")).to_contain_text("greater than or equal to 0")
    expect(page.get_by_label("Threshold (asp)")).to_have_attribute("aria-invalid", "true")
    with control(stack) as client:
        assert client.jobs(limit=1).total == before


def test_cancel_a_job(admin: Page, stack: LocalDeployment) -> None:
    page = admin
    page.goto(f"{stack.web_url}/jobs/new")
    page.get_by_label("Dataset", exact=True).select_option("digits")
    page.get_by_label("Model", exact=True).select_option("mlp")
    page.get_by_label("Clocks", exact=True).fill("100000")
    page.get_by_role("button", name="Submit the job", exact=True).click()
    page.wait_for_url(re.compile(r".*/jobs/[0-9a-f-]{36}$"))
    job_id = page.url.rsplit("/", 1)[1]
    page.get_by_role("button", name="Cancel the job", exact=True).click()
    expect(page.locator("#job-live .facts dd").first).to_contain_text("cancelled")
    with control(stack) as client:
        assert client.job(job_id).state == "cancelled"


def test_a_viewer_sees_no_write_control_and_a_forged_write_is_refused(
    viewer: Page, stack: LocalDeployment
) -> None:
    page = viewer
    with control(stack) as client:
        job = client.jobs(limit=1).jobs[0]
    pages = ["/", "/sites", "/sites/virginia", "/sites/new", "/jobs", "/jobs/new"]
    for path in [*pages, f"/jobs/{job.id}", "/sites/virginia/remove"]:
        page.goto(f"{stack.web_url}{path}")
        # No form that would change anything (logging out is the header's only POST).
        expect(page.locator("main form[method=post]")).to_have_count(0)
        expect(page.locator("main a[href$='/remove'], main a[href='/sites/new']")).to_have_count(0)
    page.goto(f"{stack.web_url}/sites/virginia")
    tokens = page.locator("#tokens tbody tr").count()
    with control(stack) as client:
        before = (client.site("virginia").state, client.sites().total, client.jobs().total)
    csrf = {"csrf_token": csrf_of(page)}
    forged = {
        "/sites/virginia/drain": csrf,
        "/sites/virginia/remove": csrf,
        "/sites/virginia/tokens": {**csrf, "revoke_others": "yes"},
        "/sites/new": {**csrf, "name": "forged", "region": "eu-west-1"},
        "/jobs/new": {**csrf, **{"dataset": "digits", "model": "mlp"}},
        f"/jobs/{job.id}/cancel": csrf,
    }
    for path, fields in forged.items():
        assert post_from_page(page, path, fields) == 403, path
    with control(stack) as client:
        after = (client.site("virginia").state, client.sites().total, client.jobs().total)
    assert after == before and before[0] == "active"
    page.reload()
    assert page.locator("#tokens tbody tr").count() == tokens


def test_a_write_without_the_csrf_token_or_from_another_origin_is_refused(
    admin: Page, stack: LocalDeployment
) -> None:
    page = admin
    page.goto(f"{stack.web_url}/sites/frankfurt")
    assert post_from_page(page, "/sites/frankfurt/drain", {}) == 403
    assert post_from_page(page, "/sites/frankfurt/drain", {"csrf_token": "0" * 64}) == 403
    forged = page.context.request.post(
        f"{stack.web_url}/sites/frankfurt/drain",
        form={"csrf_token": csrf_of(page)},
        headers={"Origin": "http://127.0.0.2:9"},
        max_redirects=0,
    )
    assert forged.status == 403  # with the session cookie, yet from another origin
    with control(stack) as client:
        assert client.site("frankfurt").state == "active"


def test_a_session_that_ended_goes_to_login_then_back_to_the_page_asked_for(
    browser: Browser, stack: LocalDeployment, offsite: Offsite
) -> None:
    context = new_context(browser, offsite)
    page = context.new_page()
    log_in(page, stack, stack.admin_token)
    cookie = next(c for c in context.cookies() if c["name"] == "atoll_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert page.evaluate("document.cookie") == ""  # not readable by scripts
    page.goto("about:blank")  # the open page would follow its own redirect to the login
    context.add_cookies([{**cookie, "value": cookie["value"][:-4] + "AAAA"}])  # tampered
    page.goto(f"{stack.web_url}/jobs?state=completed")
    expect(page.get_by_text("Your session has ended")).to_be_visible()
    page.get_by_label("Token").fill(stack.admin_token)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{stack.web_url}/jobs?state=completed")
    context.close()


def test_an_idle_session_ends_then_login_leads_back_to_the_page_asked_for(
    browser: Browser, stack: LocalDeployment, offsite: Offsite
) -> None:
    """A real idle timeout (a dashboard of its own whose sessions idle out after 3 s): a
    page left open past it, then a link followed, leads to the login and back."""
    idle_s = 3.0
    port = free_loopback_port()
    short = stack.dashboard(port, "web-short-idle", {"ATOLL_SESSION_IDLE_S": str(idle_s)})
    url = f"http://127.0.0.1:{port}"
    context = new_context(browser, offsite)
    try:
        page = context.new_page()
        page.goto(f"{url}/login?next=/jobs/new")
        page.get_by_label("Token").fill(stack.admin_token)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{url}/jobs/new")  # a page with nothing live: no requests
        time.sleep(idle_s + 1)
        page.get_by_role("link", name="Sites", exact=True).click()
        page.wait_for_url(re.compile(r".*/login\?next=/sites&ended=1$"))
        expect(page.get_by_text("Your session has ended")).to_be_visible()
        page.get_by_label("Token").fill(stack.admin_token)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{url}/sites")
        expect(page.get_by_role("link", name="virginia")).to_be_visible()
    finally:
        context.close()
        short.stop()


def test_a_live_update_leaves_the_keyboard_focus_where_it_was(
    admin: Page, stack: LocalDeployment
) -> None:
    page = admin
    page.goto(f"{stack.web_url}/sites")
    expect(page.locator("#live")).to_have_attribute("data-state", "live")
    link = page.locator("#sites-table").get_by_role("link", name="virginia", exact=True)
    link.focus()
    link.evaluate("e => { e.dataset.before = 'yes'; }")
    page.evaluate(  # the table redrawn, as a site's event does
        """() => new Promise(done => {
            document.body.addEventListener("htmx:afterSwap", () => done(), {once: true});
            htmx.trigger("#sites-table", "sse:site");
        })"""
    )
    focused = page.evaluate(
        "(() => { const e = document.activeElement; return [e.textContent.trim(),"
        " e.dataset.before || 'new', !!e.closest('#sites-table')]; })()"
    )
    assert focused == ["virginia", "new", True]  # a new link, the same site: focus kept
    page.keyboard.press("Enter")
    page.wait_for_url(f"{stack.web_url}/sites/virginia")


PAGES = [
    "/", "/sites", "/sites?online=yes&sort=-region", "/sites/virginia", "/sites/new",
    "/jobs", "/jobs/new", "/map", "/registry?site=virginia&k=2&window=2",
]  # fmt: skip


def test_without_javascript_every_page_renders_and_the_forms_work(
    browser: Browser, stack: LocalDeployment, offsite: Offsite
) -> None:
    context = new_context(browser, offsite, java_script_enabled=False)
    page = context.new_page()
    log_in(page, stack, stack.admin_token, "/sites/singapore")
    page.get_by_role("button", name="Drain").click()
    expect(page.get_by_text("Site singapore is now draining.")).to_be_visible()
    page.get_by_role("button", name="Activate").click()
    expect(page.get_by_text("Site singapore is now active.")).to_be_visible()
    page.goto(f"{stack.web_url}/jobs/new")
    page.get_by_label("Clocks", exact=True).fill("many")
    page.get_by_role("button", name="Submit the job", exact=True).click()
    expect(page.locator("#e-clocks")).to_contain_text("whole number")
    page.goto(f"{stack.web_url}/registry?site=virginia&k=2&window=2")
    expect(page.get_by_text("seen within 2 min 0 s")).to_be_visible()
    page.get_by_label("Seen within (minutes)").fill("-1")
    page.get_by_role("button", name="Find neighbours").click()
    expect(page.locator("#window-error")).to_contain_text("a number of minutes above 0")
    for path in PAGES:
        response = page.goto(f"{stack.web_url}{path}")
        assert response is not None and response.status == 200, path
        expect(page.locator("h1")).to_be_visible()
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(f"{stack.web_url}/login")
    context.close()


def test_a_request_outside_127_0_0_1_is_caught_and_refused(
    browser: Browser, offsite: Offsite
) -> None:
    """The guard every page of these tests runs under: here it must catch one."""
    context = new_context(browser, offsite)
    page = context.new_page()
    page.set_content('<img alt="" src="http://192.0.2.1/pixel.png">')
    assert offsite.outside == ["http://192.0.2.1/pixel.png"]
    offsite.outside.clear()  # this one was on purpose
    context.close()


# What sticks out past the right edge of the window (the page scrolls sideways), if any.
SIDEWAYS = """() => {
    if (document.documentElement.scrollWidth <= innerWidth) return [];
    const inScroller = e => !!e.parentElement.closest(".scroll");
    const out = [...document.querySelectorAll("body *")]
        .filter(e => e.getBoundingClientRect().right > innerWidth && !inScroller(e))
        .map(e => `${e.tagName.toLowerCase()}.${e.className} ${e.getBoundingClientRect().right}px`);
    return [`the page is ${document.documentElement.scrollWidth}px wide`, ...out.slice(-5)];
}"""


def test_every_page_passes_axe_walks_by_keyboard_fits_a_phone_and_is_screenshotted(
    browser: Browser, stack: LocalDeployment, offsite: Offsite
) -> None:
    with control(stack) as client:
        job = (client.jobs(state="completed", limit=1).jobs or client.jobs(limit=1).jobs)[0]
    pages = [*PAGES, f"/jobs/{job.id}", f"/map?job={job.id}"]
    SHOTS.mkdir(parents=True, exist_ok=True)
    found: dict[str, list[str]] = {}
    for viewport, size in ((DESKTOP, "1440x900"), (PHONE, "390x844")):
        context = new_context(browser, offsite, viewport)
        page = context.new_page()
        log_in(page, stack, stack.admin_token)
        for path in [*pages, "/login"]:
            if path == "/login":  # logged out; first leave the live page, or it would
                page.goto("about:blank")  # follow its own redirect to the login
                context.clear_cookies()
            page.goto(f"{stack.web_url}{path}")
            if path != "/login":
                expect(page.locator("#live")).to_have_attribute("data-state", "live")
            if path.startswith("/jobs/") and path != "/jobs/new":
                expect(page.locator(".uplot")).to_have_count(4)
            walk_by_keyboard(page, f"{path} at {size}")
            page.evaluate("document.activeElement.blur(); window.scrollTo(0, 0)")
            named = path.replace(job.id, "id").strip("/").lower()
            name = re.sub(r"[^a-z0-9]+", "-", named).strip("-") or "overview"
            page.screenshot(path=str(SHOTS / f"{name}-{size}.png"), full_page=True)
            problems = serious(page)
            if problems:
                found[f"{path} at {size}"] = problems
            wide = page.evaluate(SIDEWAYS)
            assert not wide, f"{path} scrolls sideways at {size}, past the right edge: {wide}"
        context.close()
    assert not found, found


def test_the_control_plane_stopped_mid_session_shows_a_banner_and_recovers(
    admin: Page, stack: LocalDeployment
) -> None:
    page = admin
    page.goto(f"{stack.web_url}/sites")
    expect(page.get_by_role("link", name="virginia")).to_be_visible()
    assert stack.control is not None
    stack.control.stop()
    started = time.monotonic()
    response = page.goto(f"{stack.web_url}/sites")
    assert response is not None and response.status == 200  # never a 500
    assert time.monotonic() - started < 10  # never hangs
    expect(page.get_by_role("alert").filter(has_text="unreachable")).to_be_visible()
    expect(page.get_by_text("Stale:", exact=True)).to_be_visible()
    expect(page.get_by_role("link", name="virginia")).to_be_visible()  # the last known list
    expect(page.locator("#live")).not_to_have_attribute("data-state", "live", timeout=30_000)
    stack.start_control()
    wait_until("the dashboard to see it", http_ready(f"{stack.web_url}/readyz"), 60)
    expect(page.locator("#live")).to_have_attribute("data-state", "live", timeout=60_000)

    def fresh() -> bool:
        # The page as the next visit renders it: the dashboard may still be reconnecting
        # to the control plane it just saw come back, for a visit or two.
        page.goto(f"{stack.web_url}/sites")
        unreachable = page.get_by_role("alert").filter(has_text="unreachable")
        return page.get_by_text("Stale:", exact=True).count() == 0 and unreachable.count() == 0

    wait_until("the sites page fresh again", fresh, 60)
