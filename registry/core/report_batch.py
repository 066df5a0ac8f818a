"""How a batch of reports, committed together, becomes rows: sans I/O.

The group-commit writer stores many reports in one transaction. Each site's counter is
raised once by the number of its reports in the batch; the database answers with the
new total, from which each report gets its sequence number, in arrival order, and the
site's reports beyond the retention limit are dropped.
"""

from collections.abc import Mapping, Sequence


def reports_per_site(site_ids: Sequence[str]) -> dict[str, int]:
    """How many reports of each site the batch holds, sites in order of first arrival."""
    counts: dict[str, int] = {}
    for site_id in site_ids:
        counts[site_id] = counts.get(site_id, 0) + 1
    return counts


def last_of_each_site(site_ids: Sequence[str]) -> dict[str, int]:
    """The position of each site's last report in the batch: the one that becomes its
    latest (priors, model signature, last seen)."""
    return {site_id: i for i, site_id in enumerate(site_ids)}


def arrival_ranks(site_ids: Sequence[str]) -> list[int]:
    """Each report's place among its site's reports in the batch: 1, 2, ..."""
    seen: dict[str, int] = {}
    ranks = []
    for site_id in site_ids:
        seen[site_id] = seen.get(site_id, 0) + 1
        ranks.append(seen[site_id])
    return ranks


def assign_seqs(site_ids: Sequence[str], totals: Mapping[str, int]) -> list[int | None]:
    """Each report's sequence number, given each site's report total after the batch.

    A site with n reports in the batch and total T after it gets T-n+1, ..., T, in the
    order its reports arrived (T - n + rank). A site missing from `totals` (unknown, or
    deregistered: the database raised no counter) gets None for each of its reports.
    """
    counts = reports_per_site(site_ids)
    return [
        None if site not in totals else totals[site] - counts[site] + rank
        for site, rank in zip(site_ids, arrival_ranks(site_ids), strict=True)
    ]


def expiry_bounds(totals: Mapping[str, int], retention: int) -> dict[str, int]:
    """For each site holding more than `retention` reports after the batch: the highest
    sequence number to drop, so that its newest `retention` stay."""
    if retention < 1:
        raise ValueError(f"retention must be at least 1, got {retention}")
    return {site: total - retention for site, total in totals.items() if total > retention}


def has_repeated_ids(report_ids: Sequence[str]) -> bool:
    """Whether one report id comes twice in a batch: a retry racing its original, which
    the one-by-one path tells apart (a replay, or a conflict)."""
    return len(set(report_ids)) != len(report_ids)
