"""One rank of a site: a worker, one or more parameter-server shards, or both.

Every clock: workers compute gradients on their batches and push each slice to
the shard that owns it; each shard waits for all K pushes (BSP), averages them,
steps its optimizer and sends the new slice back to every worker. Rank 0 also
shares a stop flag each clock, so all ranks agree on where a stop happens. What
carries the tensors (the process group, or shared memory on one host) is exchange.py's.
"""

import ctypes
import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from datetime import timedelta
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn

from atoll.platform.core.errors import AtollError
from atoll.platform.core.events import (
    CheckpointSaved,
    Evaluated,
    GeoJoined,
    GeoStats,
    RankFailed,
    RankMessage,
    RankStarted,
    RankStats,
    StepDone,
    TrainingFinished,
    TrainingStarted,
)
from atoll.platform.core.host_memory import keep_freed_memory
from atoll.platform.data.datasets import Dataset, load_share, load_site_data
from atoll.platform.geo.divergence import DivergenceGuard
from atoll.platform.geo.wan import bsp_bytes_per_clock
from atoll.platform.model.evaluate import Evaluation, evaluate
from atoll.platform.model.zoo import build_model, model_signature
from atoll.platform.site.barrier import BSPBarrier
from atoll.platform.site.batches import BatchPlan
from atoll.platform.site.checkpoint import CheckpointStore
from atoll.platform.site.device import Placement
from atoll.platform.site.exchange import HostLinks, build_exchange
from atoll.platform.site.flat import FlatModel, shifted
from atoll.platform.site.geo_mirror import GeoMirror
from atoll.platform.site.layout import SiteLayout
from atoll.platform.site.optim import ShardOptimizer, scaled_step
from atoll.platform.site.spec import SiteJob

_PR_SET_PDEATHSIG = 1
_PARENT_CHECK_S = 0.5
_ORPHANED_EXIT = 70
_WARMUP_STEPS = 10


@dataclass(frozen=True)
class RankContext:
    """What the parent process hands each rank."""

    rank: int
    world_size: int
    job: SiteJob
    out_dir: Path
    rendezvous: Path | None  # None: env:// (torchrun's variables)
    resume: bool
    threads: int
    site_pid: int  # the process that started the site: a rank dies when it is gone
    placement: Placement
    local_rank: int | None = None  # among the site's ranks on this machine; default rank
    host_links: HostLinks | None = None  # from the single-host spawner: a shared-memory exchange


@dataclass
class Shard:
    index: int
    bounds: tuple[int, int]
    optimizer: ShardOptimizer
    barrier: BSPBarrier
    inbox: dict[int, torch.Tensor] = field(default_factory=dict)  # worker -> pushed gradient
    mean: torch.Tensor = field(default_factory=lambda: torch.empty(0))
    mirror: GeoMirror | None = None  # in a geo job: this shard's link to its mirrors
    # On a GPU, the geo tier (its policies and codec work on host tensors) keeps the shard's
    # replica in host memory, copied to and from the device around each clock.
    host: torch.Tensor | None = None


def rank_main(ctx: RankContext, events: "Queue[RankMessage]", stop: Event) -> None:
    """Process entry point: runs the rank and reports any failure to the parent."""
    try:
        _die_with_site(ctx.site_pid)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides how to stop
        events.put(RankStarted(time=time.time(), rank=ctx.rank, pid=os.getpid()))
        torch.set_num_threads(ctx.threads)
        if ctx.job.pin_cores:
            _pin(_local_rank(ctx))
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # every rank of a site runs on this host
        if ctx.placement.kind == "cuda":
            torch.cuda.set_device(_local_rank(ctx))
        dist.init_process_group(
            ctx.placement.backend,
            init_method=f"file://{ctx.rendezvous}" if ctx.rendezvous else "env://",
            rank=ctx.rank,
            world_size=ctx.world_size,
            timeout=timedelta(seconds=ctx.job.comm_timeout_s),
        )
        SiteRank(ctx, events, stop).run()
        dist.destroy_process_group()
    except BaseException as e:
        events.put(
            RankFailed(
                time=time.time(),
                rank=ctx.rank,
                message=f"{type(e).__name__}: {e}".strip(),
                traceback=traceback.format_exc(),
            )
        )
        sys.exit(1)


def _pin(local_rank: int) -> None:
    """This rank's threads, the intra-op pool it starts next included, on one core of their
    own: no migrating, and no sharing a core's cache with another rank."""
    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cores[local_rank % len(cores)]})


def _local_rank(ctx: RankContext) -> int:
    return ctx.rank if ctx.local_rank is None else ctx.local_rank


class TrainingDiverged(AtollError):
    """The loss blew up or is not a number: going on would only spread a broken model."""


def _die_with_site(site_pid: int) -> None:
    """A rank outliving its site process would hold its peers, ports and data forever.

    Ranks are forked by a fork server that they keep alive themselves, so the kernel's
    parent-death signal covers only the fork server; a thread watches the site process.
    """
    if sys.platform.startswith("linux"):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)

    def watch() -> None:
        while True:
            time.sleep(_PARENT_CHECK_S)
            try:
                os.kill(site_pid, 0)
            except ProcessLookupError:
                os._exit(_ORPHANED_EXIT)

    threading.Thread(target=watch, name="site-watch", daemon=True).start()


class SiteRank:
    def __init__(self, ctx: RankContext, events: "Queue[RankMessage]", stop: Event) -> None:
        self.ctx, self.events, self.stop = ctx, events, stop
        keep_freed_memory()  # before the data and the model: see core/host_memory.py
        job = ctx.job
        data = (
            load_site_data(job.data)
            if job.data
            else load_share(job.dataset, job.data_dir, job.share)
        )
        self.train: Dataset = data.train
        self.class_counts = self.train.class_counts()  # reported at the start; asp's skew
        self.test = data.test
        self.eval_set = (
            data.test.sample(job.eval_samples, job.seed) if job.eval_samples else data.test
        )
        self.device = torch.device(ctx.placement.device(_local_rank(ctx)))
        # Built on the CPU from the seed, then moved: the same initial model on any device.
        self.model: nn.Module = build_model(
            job.model, self.train.input_shape, self.train.num_classes, job.seed
        ).to(self.device)
        self.flat = FlatModel(self.model)
        self.layout = SiteLayout(job.workers, job.shards, job.dedicated_shards)
        self.rank = ctx.rank
        self.exchange = build_exchange(self.layout, self.rank, self.flat.grads, ctx.host_links)
        data_seed = job.seed if job.data_seed is None else job.data_seed
        self.plan = BatchPlan(len(self.train), job.batch_size, job.workers, data_seed)
        self.total_steps = job.steps or job.epochs * self.plan.steps_per_epoch
        self.eval_every = job.eval_every or self.plan.steps_per_epoch
        self.store = CheckpointStore(ctx.out_dir / "checkpoints")
        self.is_worker = self.layout.is_worker(self.rank)
        self.shards = [self._make_shard(s) for s in self.layout.shards_of(self.rank)]
        geo = job.geo
        # Where ahead of the replica the workers take the next gradient (asp's lookahead).
        self.lookahead = (
            torch.zeros(self.flat.num_params, device=self.device)
            if geo and geo.policy.lookahead
            else None
        )
        self.compute_s = self.exchange_s = 0.0
        # A geo job's sites watch for divergence: one diverged replica spreads to all.
        self.guard = DivergenceGuard.for_classes(self.train.num_classes) if geo else None

    def _make_shard(self, index: int) -> Shard:
        start, end = bounds = self.layout.bounds(index, self.flat.num_params)
        # A view: on a co-located rank the shard steps the very parameters the worker uses.
        param = self.flat.params[start:end]
        shard = Shard(
            index,
            bounds,
            ShardOptimizer.create(param, self.ctx.job.optimizer),
            BSPBarrier(self.ctx.job.workers),
            mean=torch.empty(end - start, device=self.device),
        )
        for worker in range(self.ctx.job.workers):
            local = worker == self.rank
            shard.inbox[worker] = (
                self.flat.grads[start:end] if local else self.exchange.inbox(index, worker)
            )
        if self.ctx.job.geo is not None:
            if self.device.type != "cpu":
                shard.host = param.detach().cpu()
            replica = param if shard.host is None else shard.host
            shard.mirror = GeoMirror(
                self.ctx.job.geo,
                index,
                self.ctx.job.shards,
                replica,
                start,
                class_counts=self.class_counts,
            )
        return shard

    # -- the clock loop -----------------------------------------------------------------

    def run(self) -> None:
        step, joined = self._restore(), True
        if self.ctx.job.geo is not None:
            step, joined = self._join_geo(step)
        if joined:
            if self.rank == 0:
                self._emit(self._started(step))
            self.exchange.share([self.flat.params], "the initial or restored parameters")
            step, stopped, step_times = self._train(step)
            if step % self.ctx.job.checkpoint_every != 0:
                self._checkpoint(step)
        else:
            # Stopped while waiting on its mirrors: nothing trained, and its checkpoint stays
            # the one it resumed from (a replica half taken up is not one to resume).
            stopped, step_times = True, []
        if self.ctx.job.geo is not None:
            self._leave_geo(stopped)
        stats = RankStats(
            time=time.time(),
            rank=self.rank,
            barrier_wait_s=sum(s.barrier.total_wait_s for s in self.shards),
            compute_s=self.compute_s,
            exchange_s=self.exchange_s,
            exchange=self.exchange.name,
        )
        self.events.put(stats)
        if self.rank != 0:
            return
        evaluation = None
        if not stopped:
            evaluation = self._emit_eval(step, self.test)
            weights = {
                k: v.detach().to("cpu", copy=True) for k, v in self.model.state_dict().items()
            }
            torch.save(weights, self.ctx.out_dir / "model.pt")
        # The first clocks pay one-off costs (allocator, kernel selection); throughput is
        # measured after them, as for any steady-state loop it is compared with.
        warmup = min(_WARMUP_STEPS, len(step_times) // 10)
        steady = step_times[warmup:]
        self._emit(
            TrainingFinished(
                time=time.time(),
                step=step,
                stopped=stopped,
                train_s=sum(step_times),
                steady_steps=len(steady),
                steady_step_s=sum(steady) / len(steady) if steady else None,
                test_accuracy=evaluation.accuracy if evaluation else None,
                test_loss=evaluation.loss if evaluation else None,
            )
        )

    def _started(self, step: int) -> TrainingStarted:
        """What the site reports of itself: its data (never a sample), the model, and what
        BSP would send over the WAN for it."""
        job, params = self.ctx.job, self.flat.num_params
        return TrainingStarted(
            time=time.time(),
            step=step,
            total_steps=self.total_steps,
            params=params,
            samples=len(self.train),
            class_counts=[int(c) for c in self.class_counts],
            model_signature=model_signature(self.model),
            bsp_bytes_per_clock=(
                bsp_bytes_per_clock(params, job.geo.sites, job.shards) if job.geo else None
            ),
        )

    def _train(self, step: int) -> tuple[int, bool, list[float]]:
        """Clocks until the end or a stop: the step reached, whether stopped, seconds per clock."""
        step_times = []  # seconds per clock, without checkpoints and evaluations
        while step < self.total_steps:
            start = time.perf_counter()
            if self._stop_requested(step):
                return step, True, step_times
            loss = self._compute_gradient(step) if self.is_worker else 0.0
            verdict = self.guard.observe(step, loss) if self.guard and self.is_worker else None
            if verdict is not None:
                # A diverged replica would only spread: the site fails, saying why, and
                # its supervisor restarts it from its last checkpoint (or gives up).
                raise TrainingDiverged(f"training diverged on rank {self.rank}: {verdict.reason}")
            self._exchange(step)
            step += 1
            step_times.append(time.perf_counter() - start)
            epoch = self.plan.epoch_of(step - 1)
            self._emit(StepDone(time=time.time(), step=step, loss=loss, epoch=epoch))
            if step % self.ctx.job.checkpoint_every == 0:
                self._checkpoint(step)
            if step % self.eval_every == 0 and step < self.total_steps:
                if self.rank == 0:
                    self._emit_eval(step, self.eval_set)
                for shard in self.shards:
                    if shard.mirror is not None:
                        self._emit_geo(shard)
        return step, False, step_times

    def _stop_requested(self, step: int) -> bool:
        return self.exchange.agree_stop(self.rank == 0 and self.stop.is_set(), step)

    def _compute_gradient(self, step: int) -> float:
        t = time.perf_counter()
        index = torch.from_numpy(self.plan.indices(step, self.rank))
        x = self.train.x[index].to(self.device, non_blocking=True)
        y = self.train.y[index].to(self.device, non_blocking=True)
        self.flat.zero_grad()
        with shifted(self.flat.params, self.lookahead):
            with torch.autocast(self.device.type, torch.bfloat16, enabled=self.ctx.job.bf16):
                loss = nn.functional.cross_entropy(self.model(x), y)
            loss.backward()
        self.compute_s += time.perf_counter() - t
        return loss.item()

    def _exchange(self, step: int) -> None:
        """Gradients to shard owners, BSP average and optimizer step, new parameters back."""
        t = time.perf_counter()
        self.exchange.gather_gradients(step)
        lr = self.ctx.job.optimizer.lr_at(step, self.total_steps)
        for shard in self.shards:
            for worker in range(self.ctx.job.workers):
                shard.barrier.push(worker, step, time.perf_counter())
            self._apply(shard, lr, step)
        for shard in self.shards:
            if shard.mirror is not None:
                shard.mirror.sync()  # the next clock waits until the geo policy allows it
                self._from_host(shard)
        shared = [self.flat.params]
        if self.lookahead is not None:
            self._fill_lookahead(self.lookahead)
            shared.append(self.lookahead)
        self.exchange.share(shared, f"the parameters of clock {step}")
        self.exchange_s += time.perf_counter() - t

    def _to_host(self, shard: Shard) -> None:
        if shard.host is not None:
            shard.host.copy_(shard.optimizer.param)

    def _from_host(self, shard: Shard) -> None:
        """What the geo tier applied to the host replica, onto the device."""
        if shard.host is not None:
            shard.optimizer.param.copy_(shard.host, non_blocking=False)

    def _apply(self, shard: Shard, lr: float, step: int) -> None:
        inbox = [shard.inbox[w] for w in range(self.ctx.job.workers)]
        if len(inbox) == 1:
            grad = inbox[0]
        else:
            # Summed in worker order, so the result is the same whatever order pushes arrived in.
            grad = torch.add(inbox[0], inbox[1], out=shard.mean)
            for g in inbox[2:]:
                grad += g
            grad /= len(inbox)
        if shard.mirror is None:
            shard.optimizer.step(grad, lr)
            return
        delta = scaled_step(shard.optimizer, grad, lr, shard.mirror.policy.update_scale)
        self._to_host(shard)
        shard.mirror.after_clock(delta.cpu(), lr / self.ctx.job.optimizer.lr)

    # -- the geo tier ---------------------------------------------------------------

    def _join_geo(self, step: int) -> tuple[int, bool]:
        """Connect every shard to its mirrors; a resumed site first adopts their replica.

        Returns the clock to go on from, the same on every rank of the site, and whether the
        site joined (False: it was told to stop while waiting, e.g. cancelled because the
        others finished the job while it was away and nothing is left to rejoin).
        """
        joined = True
        for shard in self.shards:
            self._to_host(shard)  # the restored replica
            shard.mirror.start(rejoin=self.ctx.resume, stopping=self.stop.is_set)
            joined = joined and shard.mirror.sync(stopping=self.stop.is_set)
            self._from_host(shard)
        clock = torch.tensor(
            [max([step] + [s.mirror.policy.clock for s in self.shards])], device=self.device
        )
        stopped = torch.tensor([0 if joined else 1], device=self.device)
        if self.ctx.world_size > 1:
            dist.all_reduce(clock, op=dist.ReduceOp.MAX)
            dist.all_reduce(stopped, op=dist.ReduceOp.MAX)  # one rank stopping stops all
        if stopped.item():
            return step, False
        for shard in self.shards:
            shard.mirror.policy.clock = max(shard.mirror.policy.clock, int(clock))
            shard.barrier.clock = int(clock)
        self.events.put(GeoJoined(time=time.time(), rank=self.rank, clock=int(clock)))
        return int(clock), True

    def _leave_geo(self, stopped: bool) -> None:
        """The final sync (unless stopping early), then the final replica to every worker."""
        for shard in self.shards:
            if not stopped:
                shard.mirror.finish()
                self._from_host(shard)
            shard.mirror.close()
            self._emit_geo(shard)
        self.exchange.share([self.flat.params], "the final parameters")

    def _emit_geo(self, shard: Shard) -> None:
        stats = {"time": time.time(), "rank": self.rank, "shard": shard.index}
        self.events.put(GeoStats.model_validate({**stats, **shard.mirror.stats()}))

    def _fill_lookahead(self, lookahead: torch.Tensor) -> None:
        """Owners write their shards' lookahead into their slices of it; the exchange shares it."""
        for shard in self.shards:
            offset = shard.mirror.lookahead() if shard.mirror is not None else None
            start, end = shard.bounds
            lookahead[start:end].zero_() if offset is None else lookahead[start:end].copy_(offset)

    # -- checkpoints, evaluation and events ---------------------------------------------

    def _restore(self) -> int:
        if not self.ctx.resume:
            return 0
        found = self.store.latest()
        if found is None:
            return 0
        signature = model_signature(self.model)
        if found.meta.get("model_signature") != signature:
            raise AtollError(
                f"checkpoint in {self.store.root} is of another model architecture "
                f"({found.meta.get('model_signature')}, this run builds {signature})"
            )
        for shard in self.shards:
            param, state = self.store.load_slice(found.step, shard.bounds)
            shard.optimizer.param.copy_(param)
            optimizer = shard.optimizer.optimizer
            groups = optimizer.state_dict()["param_groups"]
            optimizer.load_state_dict(
                {"state": {0: state} if state else {}, "param_groups": groups}
            )
            shard.barrier.clock = found.step
        return found.step

    def _checkpoint(self, step: int) -> None:
        for shard in self.shards:
            state = shard.optimizer.optimizer.state_dict()["state"].get(0, {})
            self.store.save_shard(step, shard.index, shard.bounds, shard.optimizer.param, state)
        if self.ctx.world_size > 1:
            dist.barrier()
        if self.rank == 0:
            self.store.commit(
                step,
                {
                    "shards": self.ctx.job.shards,
                    "num_params": self.flat.num_params,
                    "model_signature": model_signature(self.model),
                },
            )
            self._emit(CheckpointSaved(time=time.time(), step=step))

    def _emit_eval(self, step: int, data: Dataset) -> Evaluation:
        result = evaluate(self.model, data)
        self._emit(
            Evaluated(
                time=time.time(),
                step=step,
                test_accuracy=result.accuracy,
                test_loss=result.loss,
                samples=len(data),
            )
        )
        return result

    def _emit(self, event: RankMessage) -> None:
        """Rank 0 speaks for the site."""
        if self.rank == 0:
            self.events.put(event)
