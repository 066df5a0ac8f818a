import pytest

from atoll.registry.core.report_batch import (
    arrival_ranks,
    assign_seqs,
    expiry_bounds,
    has_repeated_ids,
    last_of_each_site,
    reports_per_site,
)


def test_reports_are_counted_per_site_in_order_of_first_arrival() -> None:
    assert list(reports_per_site(["b", "a", "b", "c", "b"]).items()) == [
        ("b", 3),
        ("a", 1),
        ("c", 1),
    ]
    assert reports_per_site([]) == {}


def test_a_sites_last_report_in_the_batch_is_its_latest() -> None:
    assert last_of_each_site(["b", "a", "b", "c", "b"]) == {"b": 4, "a": 1, "c": 3}


@pytest.mark.parametrize(
    ("site_ids", "totals", "seqs"),
    [
        # one report each: the new total is the seq
        (["a", "b"], {"a": 1, "b": 7}, [1, 7]),
        # three of a, after 4 stored before: 5, 6, 7 in arrival order
        (["a", "b", "a", "a"], {"a": 7, "b": 2}, [5, 2, 6, 7]),
        # a site the database raised no counter for (unknown, deregistered): None
        (["a", "gone", "a", "gone"], {"a": 2}, [1, None, 2, None]),
        ([], {}, []),
    ],
)
def test_seqs_follow_the_new_totals_in_arrival_order(
    site_ids: list[str], totals: dict[str, int], seqs: list[int | None]
) -> None:
    assert assign_seqs(site_ids, totals) == seqs


@pytest.mark.parametrize(
    ("totals", "retention", "bounds"),
    [
        ({"a": 5, "b": 6, "c": 100}, 5, {"b": 1, "c": 95}),  # a holds exactly 5: nothing to drop
        ({"a": 1}, 1, {}),
        ({"a": 3}, 1, {"a": 2}),
        ({}, 10, {}),
    ],
)
def test_expiry_keeps_the_newest_retention_reports(
    totals: dict[str, int], retention: int, bounds: dict[str, int]
) -> None:
    assert expiry_bounds(totals, retention) == bounds


def test_a_retention_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="retention must be at least 1"):
        expiry_bounds({"a": 1}, 0)


def test_a_report_id_twice_in_a_batch_is_seen() -> None:
    assert has_repeated_ids(["x", "y", "x"])
    assert not has_repeated_ids(["x", "y"])
    assert not has_repeated_ids([])


def test_a_reports_rank_is_its_place_among_its_sites_reports() -> None:
    assert arrival_ranks(["a", "b", "a", "a", "c", "b"]) == [1, 1, 2, 3, 1, 2]
    assert arrival_ranks([]) == []
