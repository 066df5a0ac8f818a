"""A federation with no site yet (a stack without agents): the pages say so and how to add
one, pass axe and the keyboard walk, and the way they point leads to a first site."""

import re
from collections.abc import Iterator

import pytest
from e2e.browser import serious, started, walk_by_keyboard
from playwright.sync_api import Page, expect

from atoll.localstack.deployment import LocalDeployment

pytestmark = [pytest.mark.integration, pytest.mark.browser, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalDeployment]:
    yield from started(tmp_path_factory.mktemp("empty-stack"), [])


def test_no_site_yet_says_how_to_add_one_and_that_way_leads_to_a_first_site(
    admin: Page, stack: LocalDeployment
) -> None:
    page = admin
    for path, says in (("/", "No sites yet"), ("/sites", "No sites yet"), ("/jobs", "No job yet")):
        page.goto(f"{stack.web_url}{path}")
        expect(page.locator("main")).to_contain_text(says)
        walk_by_keyboard(page, path)
        assert serious(page) == [], path
    page.goto(stack.web_url)
    expect(page.get_by_text("atoll edge run --config site.yaml")).to_be_visible()
    page.get_by_role("link", name="Register the site").click()
    page.get_by_label("Name").fill("first-site")
    page.get_by_label("Region").fill("eu-north-1")
    page.get_by_role("button", name="Register").click()
    page.wait_for_url(f"{stack.web_url}/sites/first-site")
    assert page.locator("#secret-value").input_value().startswith("atoll_")
    page.goto(stack.web_url)
    expect(page.get_by_role("heading", name="No sites yet")).to_have_count(0)
    expect(page.get_by_role("link", name=re.compile(r"^1\s+in all$"))).to_be_visible()
