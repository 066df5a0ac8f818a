"""How long a site's clock of computation takes, in virtual time.

`measured` times the real step on this machine (one worker's batch, one thread);
`measured/20` is a device 20x faster; `0.05` is 50 ms per clock; a path names a
JSON file `{"step_s": 0.05, "sites": {"frankfurt": 0.07}}` (the per-site entries
optional), e.g. written from a real run.

A real site evaluates its replica inside its clock loop, every `eval_every` clocks:
it trains on only once the evaluation is done, so the pause shifts when it sends
and what it has applied (docs/geo-skew.md: the simulator's fidelity). `eval_s` is
that pause: `measured` times the job's evaluation too (one thread, the factor
applies), a JSON file may give `eval_s` and `eval_sites`; a number alone has none.
"""

import json
import statistics
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from atoll.platform.core.errors import AtollError
from atoll.platform.core.events import CheckpointSaved, Evaluated, RunEvent, StepDone
from atoll.platform.data.datasets import Dataset
from atoll.platform.model.evaluate import evaluate
from atoll.platform.model.zoo import build_model

_TIMED_STEPS = 12
_TIMED_EVALS = 3


@dataclass(frozen=True)
class ComputeProfile:
    step_s: float
    per_site: dict[str, float] = field(default_factory=dict)
    source: str = ""
    eval_s: float = 0.0  # the pause of one periodic evaluation
    eval_sites: dict[str, float] = field(default_factory=dict)

    def step_for(self, site: str) -> float:
        return self.per_site.get(site, self.step_s)

    def eval_for(self, site: str) -> float:
        return self.eval_sites.get(site, self.eval_s)


def measure_step_s(model: str, train: Dataset, batch: int, seed: int = 0) -> float:
    """Median time of a forward, backward and SGD step of one worker's batch on one thread."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        net = build_model(model, train.input_shape, train.num_classes, seed)
        optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
        times = []
        for i in range(_TIMED_STEPS + 3):
            start = time.perf_counter()
            x, y = train.x[i * batch : (i + 1) * batch], train.y[i * batch : (i + 1) * batch]
            optimizer.zero_grad()
            nn.functional.cross_entropy(net(x), y).backward()
            optimizer.step()
            times.append(time.perf_counter() - start)
        return statistics.median(times[3:])  # the first steps pay one-off costs
    finally:
        torch.set_num_threads(threads)


def measure_eval_s(model: str, train: Dataset, evaluation: Dataset, seed: int = 0) -> float:
    """Median time of one evaluation of `evaluation` on one thread, as a real site's rank
    evaluates it."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        net = build_model(model, train.input_shape, train.num_classes, seed)
        times = []
        for _ in range(_TIMED_EVALS + 1):
            start = time.perf_counter()
            evaluate(net, evaluation)
            times.append(time.perf_counter() - start)
        return statistics.median(times[1:])  # the first pays one-off costs
    finally:
        torch.set_num_threads(threads)


def eval_pause_s(events: Iterable[RunEvent], clocks: int) -> float | None:
    """A real site's pause to evaluate, from its run log's events: the median time from
    the end of an evaluation clock (or of the checkpoint taken after it) to the
    evaluation's event, stamped when it is done. The evaluation after the last clock
    follows the closing round, not a clock: it is left out. None: no evaluation."""
    ended: dict[int, float] = {}
    pauses = []
    for event in events:
        if isinstance(event, StepDone | CheckpointSaved):
            ended[event.step] = max(ended.get(event.step, event.time), event.time)
        elif isinstance(event, Evaluated) and event.step < clocks and event.step in ended:
            pauses.append(event.time - ended[event.step])
    return statistics.median(pauses) if pauses else None


def compute_profile(
    spec: str, model: str, train: Dataset, batch: int, evaluation: Dataset | None = None
) -> ComputeProfile:
    """The profile `spec` names; `measured` also times an evaluation of `evaluation`."""
    if spec == "measured" or spec.startswith("measured/"):
        factor = 1.0
        if spec != "measured":
            try:
                factor = float(spec.split("/", 1)[1])
            except ValueError:
                factor = 0.0
            if not factor > 0:
                raise AtollError(
                    f"bad compute profile {spec!r}: use measured/FACTOR with FACTOR > 0"
                )
        step = measure_step_s(model, train, batch) / factor
        pause = measure_eval_s(model, train, evaluation) / factor if evaluation else 0.0
        source = f"{spec} ({step * 1000:.1f} ms per clock, {pause * 1000:.1f} ms per evaluation)"
        return ComputeProfile(step, source=source, eval_s=pause)
    path = Path(spec)
    if path.suffix == ".json":
        if not path.is_file():
            raise AtollError(f"compute profile {path} does not exist")
        try:
            raw = json.loads(path.read_text())
            return ComputeProfile(
                float(raw["step_s"]),
                {str(k): float(v) for k, v in (raw.get("sites") or {}).items()},
                str(path),
                float(raw.get("eval_s") or 0.0),
                {str(k): float(v) for k, v in (raw.get("eval_sites") or {}).items()},
            )
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise AtollError(f"compute profile {path}: needs a number step_s ({e})") from e
    try:
        step = float(spec)
    except ValueError:
        step = -1.0
    if not step > 0:
        raise AtollError(
            f"bad compute profile {spec!r}: use measured, measured/FACTOR, seconds per clock, "
            "or a .json file"
        )
    return ComputeProfile(step, source=f"{step * 1000:.1f} ms per clock")
