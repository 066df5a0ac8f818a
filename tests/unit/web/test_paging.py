"""Server-side paging and sorting, all of it in the query string."""

from atoll.web.views.paging import Pager, page_request, query_url, sort_href


def test_a_request_from_the_query_falls_back_to_defaults_on_anything_odd() -> None:
    r = page_request({"page": "3", "size": "50", "sort": "-region"}, ["name", "region"], "name")
    assert (r.page, r.size, r.sort, r.offset, r.sort_key, r.descending) == (
        3, 50, "-region", 100, "region", True,
    )  # fmt: skip
    odd = page_request({"page": "-2", "size": "7", "sort": "password"}, ["name"], "name")
    assert (odd.page, odd.size, odd.sort) == (1, 25, "name")
    assert page_request({"page": "x"}, ["name"], "name").page == 1


def test_page_links_show_the_ends_and_the_neighbourhood() -> None:
    pager = Pager(page_request({"page": "6"}, ["name"], "name"), total=1000, shown=25)
    assert pager.pages == 40
    labels = [link.label for link in pager.links("/sites", {"state": "active"})]
    assert labels == ["Previous", "1", "…", "4", "5", "6", "7", "8", "…", "40", "Next"]
    current = [link for link in pager.links("/sites", {}) if link.current]
    assert [c.label for c in current] == ["6"]
    first = Pager(page_request({}, ["name"], "name"), total=10, shown=10)
    links = first.links("/sites", {})
    assert links[0].href is None and links[-1].href is None  # no previous, no next
    assert (first.first_row, first.last_row) == (1, 10)


def test_links_keep_the_filters_and_flip_the_sort() -> None:
    request = page_request({"sort": "name"}, ["name"], "name")
    assert sort_href("/sites", {"state": "draining"}, request, "name") == (
        "/sites?page=1&sort=-name&state=draining"
    )
    assert query_url("/sites", {"q": "", "region": "eu west", "online": None}) == (
        "/sites?region=eu+west"
    )
