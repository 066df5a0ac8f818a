"""The control plane's loop: liveness, scheduling, job states, and commands onto the bus.

Each tick reads the sites' liveness keys, starts the pending jobs whose sites are
ready (planning runs in a worker thread, off the loop), moves running jobs
through their lifecycle, and publishes every command that is due, which after a
Redis restart is every command not yet applied.
"""

import logging
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from atoll.platform.bus.connection import Bus
from atoll.platform.bus.messages import Command as CommandMessage
from atoll.platform.control.core.config import ControlSettings
from atoll.platform.control.crud import commands as command_store
from atoll.platform.control.crud import jobs as job_store
from atoll.platform.control.crud import sites as site_store
from atoll.platform.control.delivery import Delivery, DeliveryPolicy
from atoll.platform.control.lifecycle import (
    TERMINAL_JOB,
    SiteView,
    next_job_state,
    sites_to_close,
)
from atoll.platform.control.liveness import LivenessBoard
from atoll.platform.control.models import Command, Job
from atoll.platform.control.planner import JobPlan, plan_job
from atoll.platform.control.scheduler import PendingJob, SiteSlot, schedule
from atoll.platform.control.schemas import parse_spec
from atoll.platform.control.states import JobState, SiteState
from atoll.platform.service.database import Database
from atoll.platform.service.live import Hub, LiveEvent
from atoll.platform.service.sql import utcnow

log = logging.getLogger("atoll.control")
LIFECYCLE = (JobState.running, JobState.paused)


@dataclass
class Planning:
    future: Future[JobPlan]
    sites: dict[str, tuple[str, int]]


@dataclass
class Dispatcher:
    database: Database
    bus: Bus
    settings: ControlSettings
    hub: Hub
    board: LivenessBoard = field(default_factory=LivenessBoard)
    # Called with each Redis epoch (a fresh control plane, a restarted Redis).
    on_new_epoch: Callable[[], None] = lambda: None
    sign: Callable[[CommandMessage], CommandMessage] = lambda command: command
    policy: DeliveryPolicy = field(default_factory=DeliveryPolicy)
    epoch: str | None = None
    offline_since: dict[str, float] = field(default_factory=dict)
    _planning: dict[str, Planning] = field(default_factory=dict)
    _planner: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(1, thread_name_prefix="atoll-planner")
    )

    def __post_init__(self) -> None:
        self.policy = DeliveryPolicy(self.settings.command_retry_s)

    def close(self) -> None:
        self._planner.shutdown(wait=False, cancel_futures=True)

    def tick(self) -> None:
        epoch = self.bus.epoch()
        if epoch != self.epoch:
            if self.epoch is not None:
                log.warning("Redis restarted (it forgot the bus): issuing open commands again")
            self.on_new_epoch()  # the revocation list and the sites' users, before commands
            self.epoch = epoch
        now = time.time()
        self._observe_liveness(now)
        self._schedule()
        self._advance_jobs(now)
        self._publish(epoch, now)

    # -- liveness ----------------------------------------------------------------------

    def _observe_liveness(self, now: float) -> None:
        with self.database.reading() as session:
            names = [s.name for s in site_store.list_sites(session)]
        beats = self.bus.beats(names)
        changes = self.board.observe(
            {site: None if beat is None else beat.time for site, beat in beats.items()}, now
        )
        for site in names:
            if self.board.online.get(site):
                self.offline_since.pop(site, None)
            else:
                self.offline_since.setdefault(site, now)
        if not changes:
            return
        with self.database.writing() as session:
            for change in changes:
                site_store.set_online(session, change.site, change.online)
            session.commit()
        for change in changes:
            log.info("site %s is %s", change.site, "online" if change.online else "offline")
            self.hub.publish(
                LiveEvent("site", {"site": change.site, "online": change.online, "at": now})
            )

    def _counts_as_online(self, site: str, now: float) -> bool | None:
        """Offline only once it has been silent for `lost_after_s`: a blip (a restarted
        Redis forgets every key at once) neither ends nor holds up a job."""
        if self.epoch is None or site not in self.board.online:
            return None
        if self.board.online[site]:
            return True
        return now - self.offline_since.get(site, now) < self.settings.lost_after_s

    # -- starting jobs -----------------------------------------------------------------

    def _schedule(self) -> None:
        self._collect_plans()
        with self.database.reading() as session:
            pending = job_store.jobs_in(session, [JobState.pending])
            if not pending:
                return
            sites = {s.name: s for s in site_store.list_sites(session)}
            busy = job_store.busy_sites(session)
        slots = {
            name: SiteSlot(site.state, self.board.online.get(name), busy.get(name), site.geo_ports)
            for name, site in sites.items()
        }
        for job in pending:  # the sites of a job being planned are its own
            if job.id in self._planning:
                for name in job.sites:
                    if name in slots:
                        slot = slots[name]
                        slots[name] = SiteSlot(slot.state, slot.online, job.id, slot.geo_ports)
        plan = schedule([PendingJob(j.id, tuple(j.sites), j.shards) for j in pending], slots)
        waiting_changed = []
        for job in pending:
            if job.id in plan.start and job.id not in self._planning:
                listen = {n: (sites[n].geo_host or "", sites[n].geo_port or 0) for n in job.sites}
                future = self._planner.submit(
                    plan_job,
                    job.name,
                    parse_spec(job.spec),
                    listen,
                    self.settings.sync_timeout_s,
                )
                self._planning[job.id] = Planning(future, listen)
                log.info("planning job %s on %s", job.id, ", ".join(job.sites))
            elif job.id in plan.waiting and job.message != plan.waiting[job.id]:
                waiting_changed.append((job.id, plan.waiting[job.id]))
        if waiting_changed:
            with self.database.writing() as session:
                for job_id, message in waiting_changed:
                    found = session.get(Job, job_id)
                    if found is not None and found.state == JobState.pending:
                        found.message = message
                session.commit()

    def _collect_plans(self) -> None:
        for job_id, planning in list(self._planning.items()):
            if not planning.future.done():
                continue
            del self._planning[job_id]
            now = utcnow()
            with self.database.writing() as session:
                job = session.get(Job, job_id)
                if job is None or job.state != JobState.pending:
                    continue  # cancelled while it was being planned
                try:
                    plan = planning.future.result()
                except Exception as e:
                    log.exception("planning job %s failed", job_id)
                    job.state, job.message = JobState.failed, f"could not plan the job: {e}"
                    job.finished_at = job.updated_at = now
                    session.commit()
                    self._job_event(job)
                    continue
                job.state, job.message = JobState.running, None
                job.started_at = job.updated_at = now
                for part in job_store.job_sites(session, job_id):
                    start = plan.starts[part.site]
                    part.state, part.updated_at = SiteState.assigned, now
                    payload = start.model_dump(mode="json")
                    command_store.issue(session, part.site, "start_job", now, job_id, payload)
                session.commit()
                log.info("job %s started on %s", job_id, ", ".join(job.sites))
                self._job_event(job)

    # -- running jobs ------------------------------------------------------------------

    def _advance_jobs(self, now: float) -> None:
        with self.database.writing() as session:
            jobs = job_store.jobs_in(session, LIFECYCLE)
            parts = job_store.sites_of(session, [j.id for j in jobs])
            changed = []
            for job in jobs:
                views = {
                    p.site: SiteView(
                        p.state,
                        self._counts_as_online(p.site, now),
                        p.message,
                        stalled=now - (p.advanced_at or job.updated_at.timestamp())
                        > self.settings.lost_after_s,
                    )
                    for p in parts[job.id]
                }
                state, message = next_job_state(job.state, views)
                if (state, message) == (job.state, job.message):
                    continue
                job.state, job.message, job.updated_at = state, message, utcnow()
                if state in TERMINAL_JOB:
                    job.finished_at = job.updated_at
                    close_job(session, job, views)
                changed.append(job)
            session.commit()
        for job in changed:
            log.info("job %s is %s%s", job.id, job.state, f": {job.message}" if job.message else "")
            self._job_event(job)

    def _job_event(self, job: Job) -> None:
        self.hub.publish(
            LiveEvent("job", {"id": job.id, "state": job.state, "message": job.message}, job.id)
        )

    # -- the bus -----------------------------------------------------------------------

    def _publish(self, epoch: str, now: float) -> None:
        with self.database.reading() as session:
            due = [
                c
                for c in command_store.open_commands(session)
                if self.policy.due(
                    Delivery(c.state, c.published_epoch, c.published_at),
                    epoch,
                    now,
                    self.board.online.get(c.site),
                )
            ]
        for command in due:
            self.bus.publish_command(self.sign(command_store.as_message(command)))
            with self.database.writing() as session:
                stored = session.get(Command, command.id)
                if stored is not None:
                    stored.published_epoch, stored.published_at = epoch, time.time()
                    stored.publish_count += 1
                    session.commit()


def close_job(session: Session, job: Job, views: dict[str, SiteView]) -> None:
    """A job that ended: its sites stop or forget their part (they might resume it)."""
    now = utcnow()
    command_store.supersede(session, job.id, "start_job", f"job {job.state}")
    for site in sites_to_close(views):
        command_store.issue(session, site, "cancel_job", now, job.id)
