import numpy as np
import pytest

from atoll.platform.core.errors import AtollError
from atoll.platform.data.partition import PartitionSpec, partition_dataset

LABELS = np.repeat(np.arange(10), 100)  # 1,000 samples, 100 per class


def covers_each_sample_once(partition, n: int) -> bool:
    merged = np.concatenate([s.indices for s in partition.sites])
    return len(merged) == n and len(np.unique(merged)) == n


@pytest.mark.parametrize("text", ["iid", "label-skew:2", "dirichlet:0.5"])
def test_every_sample_goes_to_exactly_one_site(text: str) -> None:
    partition = partition_dataset(LABELS, 5, PartitionSpec.parse(text), seed=0)
    assert covers_each_sample_once(partition, len(LABELS))


def test_label_skew_leaves_out_classes_no_site_was_dealt() -> None:
    partition = partition_dataset(LABELS, 4, PartitionSpec.parse("label-skew:2"), seed=0)
    assert sum(s.samples for s in partition.sites) == 800  # 4 sites x 2 classes: 8 of 10 classes


@pytest.mark.parametrize("text", ["iid", "label-skew:3", "dirichlet:0.3"])
def test_same_seed_same_split_other_seed_other_split(text: str) -> None:
    spec = PartitionSpec.parse(text)
    a, b = partition_dataset(LABELS, 5, spec, seed=7), partition_dataset(LABELS, 5, spec, seed=7)
    c = partition_dataset(LABELS, 5, spec, seed=8)
    assert all(np.array_equal(x.indices, y.indices) for x, y in zip(a.sites, b.sites, strict=True))
    assert any(
        not np.array_equal(x.indices, y.indices) for x, y in zip(a.sites, c.sites, strict=True)
    )


def test_iid_sites_are_balanced_in_size_and_classes() -> None:
    partition = partition_dataset(LABELS, 4, PartitionSpec.parse("iid"), seed=0)
    assert [s.samples for s in partition.sites] == [250] * 4
    for site in partition.sites:
        assert site.class_counts.min() > 10  # 25 expected per class


def test_label_skew_gives_each_site_exactly_c_classes() -> None:
    partition = partition_dataset(LABELS, 5, PartitionSpec.parse("label-skew:2"), seed=1)
    for site in partition.sites:
        assert np.count_nonzero(site.class_counts) == 2
    # 5 sites x 2 classes cover all 10 classes, each held whole by one site.
    assert sorted(
        np.concatenate([np.flatnonzero(s.class_counts) for s in partition.sites])
    ) == list(range(10))
    assert all(set(s.class_counts[s.class_counts > 0]) == {100} for s in partition.sites)


def test_label_skew_shares_a_class_between_the_sites_that_hold_it() -> None:
    partition = partition_dataset(LABELS, 10, PartitionSpec.parse("label-skew:2"), seed=0)
    totals = sum(s.class_counts for s in partition.sites)
    assert list(totals) == [100] * 10  # each class held by two sites, 50 each
    assert all(np.count_nonzero(s.class_counts) == 2 for s in partition.sites)


def test_dirichlet_small_alpha_is_more_skewed_than_large_alpha() -> None:
    def skew(alpha: float) -> float:
        partition = partition_dataset(LABELS, 5, PartitionSpec("dirichlet", alpha=alpha), seed=0)
        shares = np.array([s.class_counts / max(s.samples, 1) for s in partition.sites])
        return float(np.abs(shares - 0.1).sum())

    assert skew(0.1) > 2 * skew(100.0)


def test_summary_reports_samples_and_histograms() -> None:
    partition = partition_dataset(LABELS, 2, PartitionSpec.parse("iid"), seed=0)
    summary = partition.summary()
    assert [row["site"] for row in summary] == [0, 1]
    assert all(sum(row["class_counts"]) == row["samples"] == 500 for row in summary)


def test_dirichlet_that_cannot_give_every_site_samples_is_a_clear_error() -> None:
    with pytest.raises(AtollError, match="4 samples cannot give 1 sites 5 each"):
        partition_dataset(
            np.arange(4) % 2, 1, PartitionSpec("dirichlet", alpha=0.01), 0, min_samples=5
        )
    with pytest.raises(AtollError, match="use a larger alpha"):
        partition_dataset(
            np.repeat(np.arange(2), 50), 10, PartitionSpec("dirichlet", alpha=0.01), 0, 5
        )


@pytest.mark.parametrize(
    "text",
    [
        "",
        "dirichlet",
        "dirichlet:0",
        "dirichlet:-1",
        "dirichlet:nan",
        "label-skew:0",
        "iid:3",
        "zipf:1",
    ],
)
def test_bad_partition_text_names_the_forms_that_work(text: str) -> None:
    with pytest.raises(AtollError, match=r"use iid, label-skew:C .* or dirichlet:ALPHA"):
        PartitionSpec.parse(text)


def test_label_skew_with_more_classes_than_exist_is_refused() -> None:
    with pytest.raises(AtollError, match="more classes than the 10"):
        partition_dataset(LABELS, 2, PartitionSpec.parse("label-skew:11"), seed=0)


def test_spec_round_trips_through_text() -> None:
    for text in ["iid", "label-skew:3", "dirichlet:0.5"]:
        assert str(PartitionSpec.parse(text)) == text
