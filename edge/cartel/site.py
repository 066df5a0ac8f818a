"""One cartel site for real: its own online model on its own stream, the sans-IO core's
decisions carried out over the registry and the job's site-to-site links.

The main thread owns the model, the core and the endpoint: it trains a batch, feeds the
core, carries out its effects, then, until the next batch is due, answers neighbours'
requests and takes what arrives (parts, the registry's answers). Nothing here waits on
a neighbour or on the registry: a fetch has a deadline, the registry has its thread,
and training goes on meanwhile. Every `checkpoint_every` batches, on stop and at the end,
it checkpoints (checkpoint.py); started again with `resume`, it goes on from there.
"""

import logging
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import torch

from atoll.edge.cartel.checkpoint import SiteCheckpoint, load_checkpoint
from atoll.edge.cartel.registry import Query, RegistryWorker, transfer
from atoll.platform.core.events import (
    CartelTransferred,
    Evaluated,
    SiteEvent,
    StepDone,
    TrainingFinished,
    TrainingStarted,
)
from atoll.platform.core.files import write_json
from atoll.platform.core.host_memory import keep_freed_memory
from atoll.platform.core.runlog import RunLog
from atoll.platform.data.datasets import Dataset, load_dataset, load_site_data
from atoll.platform.model.evaluate import evaluate
from atoll.platform.net import (
    EndpointClosed,
    FlushTimeout,
    LinkError,
    Message,
    PeerLost,
    PeerRestarted,
    SiteEndpoint,
    TlsConfig,
)
from atoll.platform.transfer import messages
from atoll.platform.transfer.core import (
    AskNeighbours,
    BatchScored,
    CartelSite,
    Effect,
    FetchFailed,
    FetchPart,
    Input,
    Log,
    MergePart,
    NeighboursFailed,
    PartArrived,
    RecordLineage,
    SendReport,
)
from atoll.platform.transfer.job import CartelSiteJob
from atoll.platform.transfer.models import OnlineModel
from atoll.platform.transfer.notes import noted
from atoll.platform.transfer.owndata import OwnStream
from atoll.platform.transfer.scenarios import StreamSampler, build_streams

log = logging.getLogger("atoll.cartel")
_POLL_S = 0.01
_CLOSE_S = 2.0  # at the end: for the links to flush, and the registry to take lineage
_START_S = 30.0  # longest wait for the links to every other site at the start


@dataclass
class Fetch:
    """The request in flight: one at a time, to one neighbour."""

    id: int
    peer: str
    deadline: float  # monotonic


class CartelSiteRun:
    def __init__(
        self,
        job: CartelSiteJob,
        out: Path,
        on_event: Callable[[SiteEvent], None] = lambda event: None,
    ) -> None:
        keep_freed_memory()  # see core/host_memory.py
        self.job = job
        self.spec = job.job
        self.out = out
        self.on_event = on_event
        self.stop_requested: str | None = None
        self.sampler: StreamSampler | OwnStream
        if self.spec.data == "site":
            data = load_site_data(job.own_data())
            self.sampler = OwnStream(data.train, data.test, self.spec.order, job.seed)
        else:  # the emulated federation: a scenario stream drawn from a public dataset
            data = load_dataset(self.spec.dataset, job.data_dir or self.spec.data_dir)
            streams = build_streams(
                self.spec.scenario,
                self.spec.stream_count,
                self.spec.batches,
                data.train.num_classes,
            )
            self.sampler = StreamSampler(
                streams[job.stream], data.train, data.test, self.spec.stream_count, job.seed
            )
        self.classes = data.test.classes
        if job.threads is not None:
            torch.set_num_threads(job.threads)
        torch.manual_seed(self.spec.seed)
        # Every site starts from the same seeded model, as the job gives it.
        self.model = OnlineModel(
            self.spec.model, data.train.input_shape, data.train.num_classes, self.spec.seed
        )
        self.core = CartelSite(
            job.site,
            self.spec.cartel,
            data.train.num_classes,
            self.model.signature,
            self.model.shapes(),
            endpoint=job.endpoints[job.site],
        )
        self.endpoint = SiteEndpoint(
            job.site,
            job.endpoints,
            job.secret_file.read_bytes().strip() if job.secret_file else None,
            tls=TlsConfig.for_site(job.tls_dir, job.site, job.crl_file) if job.tls_dir else None,
        )
        self.registry = (
            RegistryWorker(
                job.registry_url,
                job.registry_token_file,
                job.site,
                job.registry_site_id,
                job.job_name,
                self.model.signature,
            )
            if job.registry_url
            else None
        )
        self.fetch: Fetch | None = None
        self._requests = 0
        self._last_part = b""  # the latest part's wire form, for its lineage record
        self._last_part_bytes = 0
        self.runlog: RunLog
        self.step = 0
        self.served = 0  # parts given to neighbours

    def request_stop(self, reason: str) -> None:
        self.stop_requested = reason

    # -- the run ---------------------------------------------------------------------

    def run(self, resume: bool = False) -> dict[str, Any]:
        self.out.mkdir(parents=True, exist_ok=True)
        write_json(self.out / "config.json", self.job.model_dump(mode="json"))
        first = self._resume() if resume else 0
        stop_threads = threading.Event()
        threads = []
        if self.registry is not None:
            threads.append(threading.Thread(target=self.registry.run, args=(stop_threads,)))
        started = time.monotonic()
        train_s = 0.0
        with RunLog(self.out / "log.jsonl") as self.runlog:
            self.endpoint.start()
            for thread in threads:
                thread.start()
            if not resume:
                self._wait_for_neighbours()
            try:
                self._emit(
                    TrainingStarted(
                        time=time.time(),
                        step=first,
                        total_steps=self.spec.batches,
                        params=sum(p.numel() for p in self.model.module.parameters()),
                        model_signature=self.model.signature,
                    )
                )
                next_batch = time.monotonic()
                for batch in range(first, self.spec.batches):
                    if self.stop_requested:
                        break
                    tick = time.monotonic()
                    self._train(batch)
                    if self.step % self.spec.checkpoint_every == 0:
                        self._checkpoint()
                    train_s += time.monotonic() - tick
                    next_batch += self.spec.batch_interval_s
                    self._between_batches(next_batch)
                self._checkpoint()  # on stop, to resume from; at the end, the final model
                accuracy, loss = self._evaluate(self.step - 1)
                stopped = self.stop_requested is not None
                self._emit(
                    TrainingFinished(
                        time=time.time(),
                        step=self.step,
                        stopped=stopped,
                        train_s=train_s,
                        test_accuracy=None if stopped else accuracy,
                        test_loss=None if stopped else loss,
                    )
                )
            finally:
                self._close(stop_threads, threads)
        summary = {
            "status": "stopped" if self.stop_requested else "completed",
            "stopped_by": self.stop_requested,
            "site": self.job.site,
            "steps": self.step,
            "test_accuracy": accuracy,
            "transfers": self.core.transfers,
            "parts_served": self.served,
            "reports_sent": self.core.reports_sent,
            "lineage_recorded": self.registry.recorded if self.registry else 0,
            "wall_s": time.monotonic() - started,
            "train_s": train_s,
            "versions": {"atoll": version("atoll"), "torch": version("torch")},
        }
        write_json(self.out / "summary.json", summary)
        return summary

    def _resume(self) -> int:
        """The batch to go on from: the checkpoint's, or 0 when there is none yet."""
        saved = load_checkpoint(self.out, self.job.job_name, self.job.site, self.model.signature)
        if saved is None:
            log.info("%s: no checkpoint to resume from; starting afresh", self.job.site)
            return 0
        self.model.module.load_state_dict(saved.model)
        self.model.optimizer.load_state_dict(saved.optimizer)
        self.core.restore(saved.core)
        if isinstance(self.sampler, StreamSampler) and saved.sampler_rng is not None:
            self.sampler.rng.bit_generator.state = saved.sampler_rng
        if self.registry is not None:
            self.registry.resume_lineage(saved.lineage_parent)
        self.step = saved.step
        log.info("%s: resumed at batch %d, model version %d", self.job.site, saved.step,
                 self.core.version)  # fmt: skip
        return saved.step

    def _checkpoint(self) -> None:
        sampler_rng = (
            self.sampler.rng.bit_generator.state
            if isinstance(self.sampler, StreamSampler)
            else None
        )
        SiteCheckpoint(
            job_name=self.job.job_name,
            site=self.job.site,
            signature=self.model.signature,
            step=self.step,
            core=self.core.snapshot(),
            sampler_rng=sampler_rng,
            lineage_parent=self.registry.last_model if self.registry is not None else None,
            model=self.model.module.state_dict(),
            optimizer=self.model.optimizer.state_dict(),
        ).save(self.out)

    def _wait_for_neighbours(self) -> None:
        """Sites start together (their agents took the job at different moments), so that
        a neighbour's model is as far along as the asker's; one that does not come is
        left behind, not waited for. A resumed site does not wait: its neighbours are
        ahead of it or done, and waiting on finished ones would stall it for the whole
        wait (the control plane then ends the job without it). Its links come up on
        their own."""
        try:
            self.endpoint.wait_connected(timeout=_START_S)
        except LinkError as e:
            log.warning("%s: starting without every neighbour: %s", self.job.site, e)

    def _train(self, batch: int) -> None:
        x, y = self.sampler.batch(batch, self.spec.batch_size)
        correct = self.model.score_then_train(x, y)
        self.step = batch + 1
        self._emit(StepDone(time=time.time(), step=self.step, loss=self.model.last_loss, epoch=0))
        self._feed(BatchScored(time.time(), y.tolist(), correct.tolist()))
        if self.step % self.spec.eval_every == 0:
            accuracy, loss = self._evaluate(batch)
            self._emit(
                Evaluated(time=time.time(), step=self.step, test_accuracy=accuracy, test_loss=loss)
            )

    def _evaluate(self, batch: int) -> tuple[float, float]:
        """On a test sample of the mix the site sees now."""
        x, y = self.sampler.test_set(max(batch, 0))
        found = evaluate(self.model.module, Dataset(x, y, self.classes))
        return found.accuracy, found.loss

    def _between_batches(self, until: float) -> None:
        while True:
            self._take_registry_answers()
            self._check_fetch_deadline()
            left = until - time.monotonic()
            item = self.endpoint.receive(timeout=max(0.0, min(left, _POLL_S)))
            if item is not None:
                self._received(item)
            elif left <= 0 or self.stop_requested:
                return

    def _close(self, stop_threads: threading.Event, threads: list[threading.Thread]) -> None:
        if self.registry is not None:  # lineage recorded late is still recorded
            deadline = time.monotonic() + _CLOSE_S
            while self.registry.pending_transfers() and time.monotonic() < deadline:
                time.sleep(0.05)
        stop_threads.set()
        for thread in threads:
            thread.join(_CLOSE_S + 5)
        with suppress(FlushTimeout):  # a neighbour that is gone never acknowledges
            self.endpoint.close(flush_timeout_s=_CLOSE_S)

    # -- the core's effects ------------------------------------------------------------

    def _feed(self, happened: Input) -> None:
        for effect in self.core.handle(happened):
            self._carry_out(effect)

    def _carry_out(self, effect: Effect) -> None:
        match effect:
            case SendReport(report):
                if self.registry is not None:
                    self.registry.send_report(report)
            case AskNeighbours(priors, _drifted, signature):
                if self.registry is None:
                    self._feed(NeighboursFailed("this site has no registry"))
                else:
                    self.registry.ask(Query(priors, signature, self.spec.cartel.k))
            case FetchPart(source, classes):
                self._ask_for_part(source.site, classes)
            case MergePart(part):
                self.model.merge(part, self.core)
            case RecordLineage():
                self._transferred(effect)
            case Log():
                event = noted(effect, time.time(), self.step)
                if event is not None:
                    self._emit(event)
                bad = effect.event in ("refused", "fetch-failed")
                level = logging.WARNING if bad else logging.INFO
                log.log(level, "%s: %s", self.job.site, effect.message)

    def _ask_for_part(self, peer: str, classes: tuple[int, ...]) -> None:
        self._requests += 1
        request = messages.PartRequest(
            id=self._requests,
            signature=self.model.signature,
            classes=classes,
            drifted=self.core.drifted,
            min_accuracy=self.core.bar,  # the site's own bar (its accuracy before drifting)
        )
        try:
            self.endpoint.send(peer, messages.encode(request), timeout=0)
        except LinkError as e:  # not a site of this job, or its queue is full
            self._feed(FetchFailed(peer, str(e)))
            return
        self.fetch = Fetch(request.id, peer, time.monotonic() + self.spec.fetch_timeout_s)

    def _transferred(self, lineage: RecordLineage) -> None:
        self._emit(
            CartelTransferred(
                time=time.time(),
                step=self.step,
                source=lineage.source,
                source_version=lineage.source_version,
                part=lineage.kind,
                classes=list(lineage.classes),
                merge=lineage.policy,
                bytes=self._last_part_bytes,
                version=lineage.version,
            )
        )
        if self.registry is not None:
            self.registry.record(transfer(lineage, self._last_part))

    # -- what arrives ------------------------------------------------------------------

    def _received(self, item: object) -> None:
        if isinstance(item, Message):
            self._message(item.peer, item.payload)
        elif isinstance(item, PeerLost | PeerRestarted) and self._fetching(item.peer):
            # A restarted neighbour lost the request; a lost one will not answer in time.
            self._fail_fetch(f"link lost ({type(item).__name__})")

    def _message(self, peer: str, payload: bytes) -> None:
        try:
            message = messages.decode(payload)
        except messages.Garbled as e:
            if self._fetching(peer):
                self._note_refused(peer, f"malformed answer: {e}")
                self._fail_fetch(f"malformed answer: {e}")
            else:
                log.warning("%s: dropped a malformed message from %s: %s", self.job.site, peer, e)
            return
        match message:
            case messages.PartRequest():
                self._serve(peer, message)
            case messages.PartDeclined(id=answer_id, reason=reason):
                if self._fetching(peer, answer_id):
                    self._fail_fetch(f"declined: {reason}")
            case messages.PartAnswer(id=answer_id, part=part):
                if not self._fetching(peer, answer_id):
                    log.info("%s: dropped a late part from %s", self.job.site, peer)
                elif part.source != peer:
                    self._note_refused(peer, f"the part says it is {part.source}'s")
                    self._fail_fetch(f"part names another source ({part.source})")
                else:
                    self.fetch = None
                    self._last_part_bytes, self._last_part = len(payload), payload
                    self._feed(PartArrived(part))

    def _serve(self, peer: str, request: messages.PartRequest) -> None:
        accuracy = self.core.class_accuracy()
        reason = messages.declines(request, self.model.signature, accuracy)
        if reason is not None:
            answer = messages.encode(messages.PartDeclined(id=request.id, reason=reason))
        else:
            part = self.model.part(
                self.job.site,
                self.core.version,
                messages.classes_to_give(request, self.core.class_samples.tolist()),
                self.core.class_samples,
                self.core.samples,
            )
            reply = messages.PartAnswer(request.id, part)
            answer = messages.encode(reply, self.spec.cartel.part_wire_dtype)
            self.served += 1
        try:
            self.endpoint.send(peer, answer, timeout=0)
        except (LinkError, EndpointClosed) as e:
            log.warning("%s: could not answer %s: %s", self.job.site, peer, e)

    def _fetching(self, peer: str, answer_id: int | None = None) -> bool:
        f = self.fetch
        return f is not None and f.peer == peer and answer_id in (None, f.id)

    def _fail_fetch(self, reason: str) -> None:
        assert self.fetch is not None
        peer, self.fetch = self.fetch.peer, None
        self._feed(FetchFailed(peer, reason))

    def _check_fetch_deadline(self) -> None:
        if self.fetch is not None and time.monotonic() > self.fetch.deadline:
            self._fail_fetch(f"no answer in {self.spec.fetch_timeout_s} s")

    def _note_refused(self, peer: str, reason: str) -> None:
        message = f"refused part from {peer}: {reason}; kept the model"
        self._carry_out(Log("refused", message, {"source": peer}))

    def _take_registry_answers(self) -> None:
        if self.registry is None:
            return
        while not self.registry.answers.empty():
            self._feed(self.registry.answers.get())

    def _emit(self, event: SiteEvent) -> None:
        self.runlog.write(event)
        self.on_event(event)
