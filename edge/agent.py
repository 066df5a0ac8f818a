"""The edge agent: one per site. It takes commands from its stream, runs the site's part
of each job as an `atoll site run` process, follows its log, and tells the others:
the control plane (status and telemetry over Redis), the registry (class priors and
accuracy), everyone (a heartbeat).

Every decision is the core's (core.py): this loop feeds it what happens (commands,
what the sites log, their exits, signals, the time) and carries out the effects it
returns, in order, without second-guessing them. The main thread owns the core and
the site processes; Redis and the registry each have a thread of their own, so
neither being away holds anything else up. On SIGTERM the agent shows itself
draining, lets the site finish its clock and checkpoint, records the job as
stopped, and exits; started again, it resumes the job from that checkpoint. Killed
outright, it takes its site with it, and resumes the same way.
"""

import logging
import queue
import threading
import time
from uuid import uuid4

from atoll.edge import steps
from atoll.edge.bus_link import BusLink
from atoll.edge.config import EdgeSettings
from atoll.edge.core import AgentCore, Limits
from atoll.edge.devices import DeviceTier
from atoll.edge.identity import Identity, enrol
from atoll.edge.registry_link import RegistryLink
from atoll.edge.state import StateDir
from atoll.platform.bus.connection import Bus
from atoll.platform.bus.keys import BusKeys
from atoll.platform.bus.messages import AgentStatus, Beat
from atoll.platform.core.signals import stop_signals
from atoll.platform.core.version import atoll_version
from atoll.platform.data.readers import read_site_data
from atoll.platform.site.supervise import SiteProcess, kill_stale

log = logging.getLogger("atoll.edge")
_TICK_S = 0.2
_FLUSH_S = 5.0  # at exit, how long to wait for the last status to reach Redis
EXIT_ON_SIGNAL = {"SIGINT": 130, "SIGTERM": 143}
_LEVELS = {"info": logging.INFO, "warning": logging.WARNING}


def _now() -> steps.Moment:
    return steps.Moment(mono=time.monotonic(), wall=time.time())


class EdgeAgent:
    def __init__(self, settings: EdgeSettings) -> None:
        self.settings = settings
        self.site = settings.name
        self.dirs = StateDir(settings.state_dir)
        self.incarnation = uuid4().hex
        # The site's own data, read first: a missing or malformed dataset stops the agent with
        # one line before it enrols or joins anything, and what it holds (never a sample) is
        # reported to the control plane.
        self.data = read_site_data(settings.data).report() if settings.data else None
        self.identity = Identity(self.site, settings.state_dir / "identity")
        token = settings.enrol_token.get_secret_value() if settings.enrol_token else None
        enrol(self.identity, settings.control_url, token, [settings.geo.host])
        redis_url = self.identity.redis_url(settings.redis_url.get_secret_value())
        self.bus = Bus(redis_url, BusKeys(settings.redis_prefix))
        self.link = BusLink(
            self.bus, self.site, settings.heartbeat_s, settings.telemetry_maxlen,
            on_crl=self._new_crl, crl_poll_s=settings.crl_poll_s,
        )  # fmt: skip
        file = self.dirs.load()
        self.registry = (
            RegistryLink(settings, self.dirs, file.registry_id) if settings.registry_url else None
        )
        limits = Limits(
            max_restarts=settings.max_restarts,
            stop_timeout_s=settings.stop_timeout_s,
            telemetry_interval_s=settings.telemetry_interval_s,
            registry=self.registry is not None,
            has_data=settings.data is not None,
        )
        self.core = AgentCore(
            self.site, limits, file, self.dirs.load_ledger(), self.identity.command_verifier()
        )
        self.sites: dict[str, SiteProcess] = {}  # every job's site, running or not
        self._signals: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._seq = 0
        self._last_status: AgentStatus | None = None
        self._stop_threads = threading.Event()
        self.devices = (
            DeviceTier(settings.devices, settings.state_dir) if settings.devices else None
        )

    # -- the loop --------------------------------------------------------------------

    def run(self) -> int:
        threads = [threading.Thread(target=self.link.run, args=(self._stop_threads,), daemon=True)]
        if self.registry is not None:
            threads.append(
                threading.Thread(target=self.registry.run, args=(self._stop_threads,), daemon=True)
            )
        with stop_signals(self.request_stop):
            for thread in threads:
                thread.start()
            log.info("agent %s up (%s)", self.site, self.settings.state_dir)
            try:
                if self.devices is not None:
                    self.devices.start()
                self._recover()
                while not self.core.done:
                    self._take_signals()
                    self._take_commands(_TICK_S)
                    self._feed(steps.Tick(_now()))
                    self._supervise()
                    if self.devices is not None:
                        self.devices.supervise()
                    self._share_status()
            finally:
                if self.devices is not None:
                    self.devices.stop()
                self._feed(steps.Abort(_now()))  # nothing is started again from here on
                self._supervise()
                self._share_status()
                deadline = time.monotonic() + _FLUSH_S
                while not self.link.flushed() and time.monotonic() < deadline:
                    time.sleep(0.05)
                self._stop_threads.set()
                for thread in threads:
                    thread.join(timeout=_FLUSH_S)
                self.bus.close()
        return EXIT_ON_SIGNAL.get(self.core.signal or "", 0)

    def request_stop(self, reason: str) -> None:
        """Safe from a signal handler: the loop hands it to the core at its next turn."""
        self._signals.put(reason)

    def _recover(self) -> None:
        """Kill what an earlier agent left running (its children die with it, normally),
        then hand the core every job's log."""
        for job_id, job in self.core.file.jobs.items():
            kill_stale(job.pid, self.dirs.run_dir(job_id))
        logs = {job_id: self._site(job_id).log.read() for job_id in self.core.file.jobs}
        self._feed(steps.Recover(logs, _now()))

    def _take_signals(self) -> None:
        while not self._signals.empty():
            self._feed(steps.SignalReceived(self._signals.get(), _now()))

    def _take_commands(self, wait_s: float) -> None:
        deadline = time.monotonic() + wait_s
        while (left := deadline - time.monotonic()) > 0:
            try:
                entry_id, command = self.link.commands.get(timeout=left)
            except queue.Empty:
                return
            self._feed(steps.CommandArrived(entry_id, command, _now()))

    def _supervise(self) -> None:
        for job_id in list(self.core.running):
            site = self.sites[job_id]
            events, code = site.poll()
            for event in events:
                self._feed(steps.SiteLogged(job_id, event, _now()))
            if code is not None:
                self._feed(steps.SiteEnded(job_id, code, site.last_error()))

    # -- carrying out effects --------------------------------------------------------

    def _feed(self, happened: steps.Input) -> None:
        for effect in self.core.handle(happened):
            self._carry_out(effect)

    def _carry_out(self, effect: steps.Effect) -> None:
        match effect:
            case steps.WriteJobFiles(job_id, start):
                s = self.settings
                self.dirs.write_job(
                    job_id, start.site_job, self.identity.folder, self.identity.crl_file,
                    s.data_dir, s.threads, s.data if start.own_data else None,
                    {"device": s.device, "bf16": s.bf16},
                )  # fmt: skip
                if start.kind == "cartel" and self.registry is not None and s.registry_url:
                    link = self.registry
                    self.dirs.give_registry(job_id, s.registry_url, link.token, link.site_id)
            case steps.Launch(job_id, resume):
                pid = self._site(job_id).start(resume)
                self._feed(steps.Launched(job_id, pid))
            case steps.Stop(job_id):
                self.sites[job_id].stop()
            case steps.Kill(job_id):
                self.sites[job_id].kill()
            case steps.SendTelemetry(sample):
                self.link.send_telemetry(sample)
            case steps.ReportToRegistry() as report:
                if self.registry is not None:
                    self.registry.report(report)
            case steps.Ack(entry_id):
                self.link.ack(entry_id)
            case steps.SaveState():
                self.dirs.save(self.core.file)
            case steps.SaveLedger():
                self.dirs.save_ledger(self.core.ledger)
            case steps.Note(level, message):
                log.log(_LEVELS[level], "%s: %s", self.site, message)

    def _new_crl(self, pem: str) -> None:
        """From the bus thread: the CA's revocation list, which the site's geo links read
        at each handshake."""
        if self.identity.save_crl(pem):
            log.info("%s: the revocation list changed", self.site)

    def _site(self, job_id: str) -> SiteProcess:
        if job_id not in self.sites:
            self.sites[job_id] = SiteProcess(
                self.dirs.site_job_file(job_id),
                self.dirs.run_dir(job_id),
                self.dirs.job_dir(job_id) / "site.stderr",
            )
        return self.sites[job_id]

    # -- status ------------------------------------------------------------------------

    def _share_status(self) -> None:
        joined = self.registry.site_id if self.registry is not None else None
        if joined is not None and joined != self.core.file.registry_id:
            self._feed(steps.RegistryJoined(joined))
        status = AgentStatus(
            site=self.site,
            incarnation=self.incarnation,
            seq=self._seq,
            time=0.0,
            state=self.core.state,
            region=self.settings.region,
            registry_id=self.core.file.registry_id,
            geo_host=self.settings.geo.host,
            geo_port=self.settings.geo.port,
            geo_ports=self.settings.geo.ports,
            version=atoll_version(),
            data=self.data,
            devices=self.devices.report() if self.devices is not None else None,
            jobs=self.core.job_reports(),
            applied=self.core.ledger.recent(),
            duplicates=self.core.ledger.duplicates,
        )
        if status == self._last_status:
            return
        self._last_status = status
        self._seq += 1
        stamped = status.model_copy(update={"seq": self._seq, "time": time.time()})
        beat = Beat(time=time.time(), state=self.core.state, incarnation=self.incarnation)
        self.link.set_status(stamped, beat)
