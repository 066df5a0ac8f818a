"""Prometheus metrics, read from the database at scrape time: jobs, sites, commands, and
the progress of every running job's sites; and whether the service's loops are well."""

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import func, select
from sqlalchemy.exc import SQLAlchemyError

from atoll.platform.control.models import Command, Job, JobSite, Site
from atoll.platform.control.states import JobState
from atoll.platform.service.database import Database

if TYPE_CHECKING:
    from atoll.platform.control.service import ControlService

_PROGRESS = (
    ("clock", "clock", "Clocks the site has done"),
    ("accuracy", "accuracy", "Latest test accuracy at the site"),
    ("wan_bytes", "wan_bytes", "Bytes the site sent to the other sites"),
    ("stall_s", "stall_seconds", "Seconds the site waited on the other sites"),
)


class ControlCollector(Collector):
    def __init__(self, database: Database, service: "ControlService") -> None:
        self.database = database
        self.service = service

    def collect(self) -> Iterator[GaugeMetricFamily]:
        redis = GaugeMetricFamily("atoll_control_redis_up", "Redis answers (1) or not (0)")
        redis.add_metric([], 0.0 if self.service.redis_problem() else 1.0)
        yield redis
        tick = GaugeMetricFamily(
            "atoll_control_dispatcher_tick_age_seconds", "Seconds since the dispatcher last ran"
        )
        tick.add_metric([], time.monotonic() - self.service.last_tick)
        yield tick
        subscribers = GaugeMetricFamily("atoll_control_live_clients", "Clients of /v1/events")
        subscribers.add_metric([], float(self.service.hub.subscribers))
        yield subscribers
        try:
            yield from self._from_database()
        except SQLAlchemyError:
            return  # without the database, the rest is still worth scraping

    def _from_database(self) -> Iterator[GaugeMetricFamily]:
        with self.database.reading() as session:
            jobs = GaugeMetricFamily("atoll_control_jobs", "Jobs by state", labels=["state"])
            by_job = select(Job.state, func.count()).group_by(Job.state)
            for job_state, n in session.execute(by_job):
                jobs.add_metric([job_state], n)
            yield jobs
            sites = GaugeMetricFamily(
                "atoll_control_sites", "Sites by state and liveness", labels=["state", "online"]
            )
            by_site = select(Site.state, Site.online, func.count()).group_by(
                Site.state, Site.online
            )
            for site_status, online, n in session.execute(by_site):
                sites.add_metric([site_status, str(bool(online)).lower()], n)
            yield sites
            commands = GaugeMetricFamily(
                "atoll_control_commands", "Commands by state", labels=["state"]
            )
            by_command = select(Command.state, func.count()).group_by(Command.state)
            for command_state, n in session.execute(by_command):
                commands.add_metric([command_state], n)
            yield commands
            running = session.execute(
                select(JobSite)
                .join(Job, Job.id == JobSite.job_id)
                .where(Job.state == JobState.running)
            ).scalars()
            families = {
                column: GaugeMetricFamily(
                    f"atoll_control_site_{name}", help_text, labels=["job", "site"]
                )
                for column, name, help_text in _PROGRESS
            }
            for part in running:
                for column, family in families.items():
                    value = getattr(part, column)
                    if value is not None:
                        family.add_metric([part.job_id, part.site], float(value))
            yield from families.values()


def render(database: Database, service: "ControlService") -> tuple[bytes, str]:
    scraped = CollectorRegistry()
    scraped.register(ControlCollector(database, service))
    return generate_latest(REGISTRY) + generate_latest(scraped), CONTENT_TYPE_LATEST
