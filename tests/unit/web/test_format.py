"""How values read on a page."""

from datetime import UTC, datetime, timedelta

import pytest

from atoll.web.views import format as fmt

NOW = datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("n", "text"),
    [(None, "–"), (0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"),
     (5 * 1024**2, "5.0 MiB"), (150 * 1024**3, "150 GiB"), (3 * 1024**4, "3.0 TiB")],
)  # fmt: skip
def test_bytes_in_iec_units(n: int | None, text: str) -> None:
    assert fmt.iec_bytes(n) == text


@pytest.mark.parametrize(
    ("ago", "text"),
    [(0.5, "just now"), (12, "12 s ago"), (125, "2 min ago"), (7300, "2 h ago"),
     (3 * 86400 + 5, "3 d ago"), (-240, "in 4 min")],
)  # fmt: skip
def test_relative_times(ago: float, text: str) -> None:
    assert fmt.relative(NOW - timedelta(seconds=ago), NOW) == text


def test_times_are_utc_whatever_they_came_as() -> None:
    assert fmt.utc(NOW.timestamp()) == "2026-11-26 12:00:00 UTC"
    naive = datetime(2026, 11, 26, 12, 0, 0)
    assert fmt.utc(naive) == "2026-11-26 12:00:00 UTC"
    assert fmt.iso(NOW) == "2026-11-26T12:00:00Z"
    assert fmt.relative(None, NOW) == "never"


def test_numbers_and_shares() -> None:
    assert fmt.number(1234567) == "1,234,567"
    assert fmt.number(float("nan")) == "–"
    assert fmt.percent(0.8766) == "87.7 %"
    assert fmt.duration(75) == "1 min 15 s"


def test_every_status_has_text_and_an_icon_and_states_differ_by_icon() -> None:
    shown = {t: fmt.status(t) for t in ("online", "offline", "draining", "failed", "completed")}
    for text, status in shown.items():
        assert status.text == text and status.icon
    assert len({s.icon for s in shown.values()}) == len(shown)
    assert fmt.status("something new").icon  # unknown states still get one
