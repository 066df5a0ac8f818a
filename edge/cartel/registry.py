"""A cartel site's side of the registry, in a thread of its own: its metadata reports,
its neighbour queries, and the lineage of each transfer.

The training loop hands requests over and takes answers back as the core's inputs
(ReportSent, NeighboursRanked, NeighboursFailed). A registry that is down answers
nothing: reports fail (the core trains alone and sends a fresh one on the next batch:
only the newest waits here), queries fail at once, and lineage records wait, oldest
first, until the registry is back (catching up).
"""

import hashlib
import logging
import queue
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID, uuid4

from atoll.platform.transfer.core import (
    Input,
    NeighboursFailed,
    NeighboursRanked,
    RecordLineage,
    ReportSent,
)
from atoll.platform.transfer.neighbours import SiteReport
from atoll.registry.client import RegistryClient, RegistryError, RegistryUnavailable

log = logging.getLogger("atoll.cartel")
_IDLE_S = 0.05
_RETRY_S = 1.0  # between attempts while the registry is away


@dataclass(frozen=True)
class Query:
    priors: tuple[float, ...]
    signature: str
    k: int


@dataclass(frozen=True)
class Transfer:
    """A merged part, to record as model lineage: the site's new model came from its
    previous one (the record's parent) and a neighbour's part (its URI)."""

    lineage: RecordLineage
    part_sha256: str
    part_bytes: int
    id: UUID


def transfer(lineage: RecordLineage, blob: bytes) -> Transfer:
    return Transfer(lineage, hashlib.sha256(blob).hexdigest(), len(blob), uuid4())


class RegistryWorker:
    def __init__(
        self,
        url: str,
        token_file: Path | None,
        site: str,
        site_id: str | None,
        job_name: str,
        signature: str,
        timeout_s: float = 2.0,
    ) -> None:
        self.url = url
        self.token = token_file.read_text().strip() if token_file is not None else None
        self.site = site
        self.site_id = site_id
        self.job_name = job_name
        self.signature = signature
        self.timeout_s = timeout_s
        self.answers: queue.SimpleQueue[Input] = queue.SimpleQueue()
        self.recorded = 0  # lineage records the registry stored
        self._lock = threading.Lock()
        self._report: SiteReport | None = None
        self._query: Query | None = None
        self._transfers: deque[Transfer] = deque()
        self._last_model: str | None = None  # this site's latest lineage record
        self._wake = threading.Event()

    # from the training loop

    @property
    def last_model(self) -> str | None:
        """This site's latest lineage record: a checkpoint keeps it (lineage_parent)."""
        return self._last_model

    def resume_lineage(self, parent: str | None) -> None:
        """Before the thread starts: a resumed site's next record goes on from its last."""
        self._last_model = parent

    def send_report(self, report: SiteReport) -> None:
        with self._lock:
            self._report = report  # a newer report replaces one not yet sent
        self._wake.set()

    def ask(self, query: Query) -> None:
        with self._lock:
            self._query = query
        self._wake.set()

    def record(self, done: Transfer) -> None:
        with self._lock:
            self._transfers.append(done)
        self._wake.set()

    def pending_transfers(self) -> int:
        with self._lock:
            return len(self._transfers)

    # the thread

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self._wake.wait(_IDLE_S)
            self._wake.clear()
            with self._lock:
                report, self._report = self._report, None
                query, self._query = self._query, None
            if query is not None:
                self.answers.put(self._neighbours(query))
            if report is not None:
                self.answers.put(self._send(report))
            if not self._record_transfers():
                stop.wait(_RETRY_S)

    def _client(self) -> RegistryClient:
        return RegistryClient(self.url, self.token, timeout_s=self.timeout_s, retries=0)

    def _own_id(self, client: RegistryClient) -> str:
        if self.site_id is None:
            found = client.find_site(self.site)
            if found is None:
                raise RegistryError(404, "not_found", f"no registered site {self.site}")
            self.site_id = str(found.id)
        return self.site_id

    def _send(self, report: SiteReport) -> ReportSent:
        try:
            with self._client() as client:
                client.report(
                    self._own_id(client),
                    list(report.class_priors),
                    report.accuracy,
                    report.samples,
                    report.signature,
                    str(report.version),
                    drift=report.drift,
                )
        except (RegistryUnavailable, RegistryError) as e:
            return ReportSent(ok=False, reason=str(e))
        return ReportSent(ok=True)

    def _neighbours(self, query: Query) -> NeighboursRanked | NeighboursFailed:
        try:
            with self._client() as client:
                own = self._own_id(client)
                found = client.neighbours_for_priors(
                    query.priors, query.signature, query.k, exclude=[own]
                )
        except (RegistryUnavailable, RegistryError) as e:
            return NeighboursFailed(str(e))
        reports = []
        for n in found.neighbours:
            reports.append(
                SiteReport(
                    site=n.name,
                    time_s=0.0,  # live: the registry ranked only sites seen lately
                    class_priors=(),
                    accuracy=n.accuracy or 0.0,
                    class_accuracy=(),
                    class_samples=(),
                    samples=n.samples or 0,
                    signature=query.signature,
                    version=0,
                    drift=bool(n.drift),
                    endpoint=n.endpoint,
                )
            )
        return NeighboursRanked(reports)

    def _record_transfers(self) -> bool:
        """Send what waits, oldest first; False when the registry did not take it."""
        while True:
            with self._lock:
                if not self._transfers:
                    return True
                done = self._transfers[0]
            lineage = done.lineage
            try:
                with self._client() as client:
                    # A site token records models of its own site alone: the giver and
                    # its version are in the record's URI.
                    own = self._own_id(client)
                    classes = ",".join(str(c) for c in lineage.classes)
                    artifact = client.record_model(
                        [own],
                        f"sha256:{done.part_sha256}",
                        done.part_bytes,
                        f"atoll-cartel://{lineage.source}/v{lineage.source_version}/"
                        f"{lineage.kind}?classes={classes}&merge={lineage.policy}",
                        job=self.job_name,
                        clock=lineage.version,
                        model_signature=self.signature,
                        parent=self._last_model,
                        model_id=done.id,
                    )
            except RegistryUnavailable:
                return False
            except RegistryError as e:
                if e.status >= 500 or e.status in (401, 403, 429):
                    return False
                log.warning("%s: the registry refused a lineage record, dropped: %s", self.site, e)
            else:
                self._last_model = str(artifact.id)
                self.recorded += 1
            with self._lock:
                self._transfers.popleft()
