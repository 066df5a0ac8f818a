"""Tables that page, filter and sort on the server, with everything in the query string
so that any view can be bookmarked and shared."""

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

PAGE_SIZES = (25, 50, 100)
DEFAULT_PAGE_SIZE = 25


@dataclass(frozen=True)
class Column:
    key: str  # the sort key the service knows
    label: str
    numeric: bool = False  # right-aligned


@dataclass(frozen=True)
class PageRequest:
    page: int  # from 1
    size: int
    sort: str  # a column key, "-" first for descending

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.size

    @property
    def sort_key(self) -> str:
        return self.sort.removeprefix("-")

    @property
    def descending(self) -> bool:
        return self.sort.startswith("-")


def page_request(
    query: Mapping[str, str], sortable: Sequence[str], default_sort: str
) -> PageRequest:
    """From `?page=&size=&sort=`; anything invalid falls back to the default, never errors."""
    page = _positive_int(query.get("page"), 1)
    size = _positive_int(query.get("size"), DEFAULT_PAGE_SIZE)
    if size not in PAGE_SIZES:
        size = DEFAULT_PAGE_SIZE
    sort = query.get("sort") or default_sort
    if sort.removeprefix("-") not in sortable:
        sort = default_sort
    return PageRequest(page, size, sort)


def _positive_int(text: str | None, default: int) -> int:
    try:
        value = int(text or "")
    except ValueError:
        return default
    return value if value >= 1 else default


@dataclass(frozen=True)
class PageLink:
    label: str
    href: str | None  # None: shown, not a link (the current page, a gap)
    current: bool = False


@dataclass(frozen=True)
class Pager:
    request: PageRequest
    total: int
    shown: int  # rows on this page

    @property
    def pages(self) -> int:
        return max(1, math.ceil(self.total / self.request.size))

    @property
    def first_row(self) -> int:
        return self.request.offset + 1 if self.shown else 0

    @property
    def last_row(self) -> int:
        return self.request.offset + self.shown

    def links(self, base: str, params: Mapping[str, str]) -> list[PageLink]:
        """Previous, the first, the last and pages near this one, next."""
        current, last = self.request.page, self.pages
        wanted = sorted({1, last, *range(max(1, current - 2), min(last, current + 2) + 1)})
        links = [
            PageLink("Previous", self.href(base, params, current - 1) if current > 1 else None)
        ]
        previous = 0
        for n in wanted:
            if n - previous > 1:
                links.append(PageLink("…", None))
            links.append(PageLink(str(n), self.href(base, params, n), current=n == current))
            previous = n
        links.append(
            PageLink("Next", self.href(base, params, current + 1) if current < last else None)
        )
        return links

    def href(self, base: str, params: Mapping[str, str], page: int) -> str:
        return query_url(base, {**params, "page": str(page)})


def sort_href(base: str, params: Mapping[str, str], request: PageRequest, key: str) -> str:
    """The link a column header carries: sort by it, or flip the order if it is the sort."""
    flip = request.sort_key == key and not request.descending
    return query_url(base, {**params, "sort": f"-{key}" if flip else key, "page": "1"})


def aria_sort(request: PageRequest, key: str) -> str:
    if request.sort_key != key:
        return "none"
    return "descending" if request.descending else "ascending"


def query_url(base: str, params: Mapping[str, str | None]) -> str:
    """`base?k=v...` with empty values left out, in a stable order."""
    kept = {k: v for k, v in sorted(params.items()) if v not in (None, "")}
    return f"{base}?{urlencode(kept)}" if kept else base
