"""A device site: its parameters, its devices' rounds, and its shards' geo mirrors.

The site's parameter-server shards live in the process that drives the devices (Atoll's
ServerApp, or the simulator): shard s owns a slice of the flat parameter vector and, in
a geo job, its geo mirror. Each round the devices train from the site's parameters; the
FedAvg of their replies, minus the parameters they started from, is the site's update
for that clock (scaled as the geo policy asks), handed to each shard's mirror; the
mirrors sync with the other sites as a site's shards do after a clock, and the next
round starts from the synced parameters.
"""

import importlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch
from flwr.serverapp import Grid

from atoll.platform.core.errors import AtollError
from atoll.platform.core.events import DeviceRoundDone, GeoStats, RunEvent
from atoll.platform.devices.replies import WEIGHT_KEY
from atoll.platform.devices.rounds import DeviceRounds, RoundOptions
from atoll.platform.devices.spec import DeviceSiteSpec
from atoll.platform.site.geo_mirror import GeoMirror
from atoll.platform.site.layout import SiteLayout

log = logging.getLogger("atoll.devices")

Arrays = dict[str, npt.NDArray[np.generic]]


def initial_arrays(model: str, seed: int) -> Arrays:
    """The parameters of the app's model as built after `torch.manual_seed(seed)`."""
    module_name, _, attr = model.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as e:
        raise AtollError(f"cannot build the site's model '{model}': {e}") from e
    torch.manual_seed(seed)
    return {k: v.detach().cpu().numpy().copy() for k, v in factory().state_dict().items()}


@dataclass(frozen=True)
class FlatLayout:
    """Where each named array lives in the site's flat float32 vector."""

    names: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[np.dtype[np.generic], ...]

    @classmethod
    def of(cls, arrays: Mapping[str, npt.NDArray[np.generic]]) -> "FlatLayout":
        return cls(
            tuple(arrays),
            tuple(tuple(a.shape) for a in arrays.values()),
            tuple(a.dtype for a in arrays.values()),
        )

    def flatten(self, arrays: Mapping[str, npt.NDArray[np.generic]]) -> torch.Tensor:
        parts = [np.asarray(arrays[n], dtype=np.float32).ravel() for n in self.names]
        return torch.from_numpy(np.concatenate(parts))

    def unflatten(self, flat: torch.Tensor) -> Arrays:
        out, at = {}, 0
        values = flat.numpy()
        for name, shape, dtype in zip(self.names, self.shapes, self.dtypes, strict=True):
            size = int(np.prod(shape))
            out[name] = values[at : at + size].reshape(shape).astype(dtype)
            at += size
        return out


class DeviceSite:
    def __init__(
        self,
        spec: DeviceSiteSpec,
        grid: Grid,
        initial: Arrays,
        emit: Callable[[RunEvent], None],
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.spec, self.emit = spec, emit
        self.layout = FlatLayout.of(initial)
        self.params = self.layout.flatten(initial)
        self.rounds = DeviceRounds(
            grid,
            RoundOptions(
                spec.min_replies, spec.round_timeout_s, spec.poll_s, spec.wait_for_devices_s
            ),
            clock,
            sleep,
        )
        shards = SiteLayout(1, spec.shards)
        self.bounds = [shards.bounds(s, len(self.params)) for s in range(spec.shards)]
        self.mirrors: list[GeoMirror] = []
        if spec.geo is not None:
            self.mirrors = [
                GeoMirror(spec.geo, s, spec.shards, self.params[start:end], start)
                for s, (start, end) in enumerate(self.bounds)
            ]

    @property
    def arrays(self) -> Arrays:
        return self.layout.unflatten(self.params)

    def run(self) -> Arrays:
        """Every round, then the final sync; the site's final parameters."""
        for mirror in self.mirrors:
            mirror.start(rejoin=False)
            mirror.sync()
        for server_round in range(1, self.spec.rounds + 1):
            self.round(server_round)
        for mirror in self.mirrors:
            mirror.finish()
            mirror.close()
        self._emit_geo()
        return self.arrays

    def round(self, server_round: int) -> DeviceRoundDone:
        outcome = self.rounds.train(server_round, self.arrays, self.spec.train_config)
        delta = torch.zeros_like(self.params)
        if outcome.arrays is not None:
            delta = self.layout.flatten(outcome.arrays) - self.params
        waited = time.monotonic()
        if self.mirrors:
            for mirror, (start, end) in zip(self.mirrors, self.bounds, strict=True):
                step = delta[start:end] * mirror.policy.update_scale
                self.params[start:end] += step
                mirror.after_clock(step, 1.0)
            for mirror in self.mirrors:
                mirror.sync()  # applies the other sites' updates; holds while the policy says
        else:
            self.params += delta
        waited = time.monotonic() - waited
        evaluation = None
        if self.spec.evaluate:
            evaluation = self.rounds.evaluate(server_round, self.arrays, {})
        done = DeviceRoundDone(
            time=time.time(),
            round=server_round,
            devices=outcome.devices,
            replied=len(outcome.replies),
            refused=len(outcome.refusals),
            late=outcome.late,
            examples=int(outcome.metrics.get(WEIGHT_KEY, 0)) or None,
            silent=outcome.silent,
            train_loss=outcome.metrics.get("train_loss"),
            device_accuracy=_accuracy(evaluation.metrics) if evaluation else None,
            device_loss=_loss(evaluation.metrics) if evaluation else None,
            round_s=outcome.seconds,
            geo_wait_s=waited,
            wan_bytes=sum(m.stats()["bytes_sent"] for m in self.mirrors),
        )
        self.emit(done)
        log.info("%s", done.model_dump_json())
        return done

    def _emit_geo(self) -> None:
        for shard, mirror in enumerate(self.mirrors):
            stats = {"time": time.time(), "rank": 0, "shard": shard, **mirror.stats()}
            self.emit(GeoStats.model_validate(stats))


# Flower's examples name their accuracy variously: the first of these a device reports.
_ACCURACY_KEYS = ("eval_acc", "accuracy", "acc", "eval_accuracy")
_LOSS_KEYS = ("eval_loss", "loss")


def _accuracy(metrics: Mapping[str, float]) -> float | None:
    return next((metrics[k] for k in _ACCURACY_KEYS if k in metrics), None)


def _loss(metrics: Mapping[str, float]) -> float | None:
    return next((metrics[k] for k in _LOSS_KEYS if k in metrics), None)
