"""The job page's charts: the telemetry history read in bounded pages and thinned to a
bounded number of points per site, as compact rows the page's script draws and extends
with live events."""

from collections.abc import Sequence
from typing import Any

from atoll.platform.control.client import ControlClient
from atoll.platform.control.schemas import JobOut, Sample

PAGE = 5000
MAX_PAGES = 4  # at most 20,000 samples read for one page load
POINTS_PER_SITE = 600


def read_history(client: ControlClient, job_id: str) -> tuple[list[Sample], bool]:
    """The job's samples, oldest first, and whether that is all of them."""
    samples: list[Sample] = []
    after = 0
    for _ in range(MAX_PAGES):
        page = client.telemetry(job_id, after=after, limit=PAGE)
        samples += page.samples
        if len(page.samples) < PAGE:
            return samples, True
        after = page.next_after
    return samples, False


def thin(samples: Sequence[Sample], keep: int) -> list[Sample]:
    """At most `keep` samples, evenly spread, always with the first and the last."""
    if len(samples) <= keep:
        return list(samples)
    step = (len(samples) - 1) / (keep - 1)
    return [samples[round(i * step)] for i in range(keep)]


def chart_data(job: JobOut, samples: Sequence[Sample], complete: bool) -> dict[str, Any]:
    sites = [s.site for s in job.sites]
    index = {name: i for i, name in enumerate(sites)}
    by_site: dict[str, list[Sample]] = {name: [] for name in sites}
    for sample in samples:
        if sample.site in by_site:
            by_site[sample.site].append(sample)
    rows: list[list[float | None]] = []
    for name, kept in by_site.items():
        for s in thin(kept, POINTS_PER_SITE):
            rows.append([s.time, index[name], s.clock, s.accuracy, s.wan_bytes, s.stall_s])
    rows.sort(key=lambda r: r[0] or 0.0)
    clock = max((s.clock for s in job.sites), default=0)
    per_clock = job.bsp_wan_bytes / clock if job.bsp_wan_bytes and clock else None
    return {
        "job": job.id,
        "sites": sites,
        "bsp_bytes_per_clock": per_clock,
        "columns": ["time", "site", "clock", "accuracy", "wan_bytes", "stall_s"],
        "rows": rows,
        "complete": complete,
        "points_per_site": POINTS_PER_SITE,
    }
