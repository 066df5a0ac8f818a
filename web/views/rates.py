"""Live send rates per site, from the telemetry the dashboard relays: each sample carries
a site's cumulative WAN bytes and when it was logged; two samples give a rate."""

import threading
from dataclasses import dataclass

_MIN_SPAN_S = 0.2  # samples closer than this are merged: their rate would be noise


@dataclass
class _Last:
    time: float
    wan_bytes: int
    rate_bps: float | None = None  # bits per second over the last span


class SendRates:
    def __init__(self, max_jobs: int = 64) -> None:
        self._jobs: dict[str, dict[str, _Last]] = {}
        self._lock = threading.Lock()
        self.max_jobs = max_jobs

    def observe(self, job_id: str, site: str, time: float, wan_bytes: int) -> None:
        with self._lock:
            sites = self._jobs.setdefault(job_id, {})
            if len(self._jobs) > self.max_jobs:
                del self._jobs[next(iter(self._jobs))]  # the job seen first
            last = sites.get(site)
            if last is None or time < last.time:
                sites[site] = _Last(time, wan_bytes)
                return
            span = time - last.time
            if span < _MIN_SPAN_S:
                return
            rate = max(0, wan_bytes - last.wan_bytes) * 8 / span
            sites[site] = _Last(time, wan_bytes, rate)

    def of_job(self, job_id: str) -> dict[str, float]:
        """Bits per second per site, for sites with two samples so far."""
        with self._lock:
            sites = self._jobs.get(job_id, {})
            return {s: last.rate_bps for s, last in sites.items() if last.rate_bps is not None}
