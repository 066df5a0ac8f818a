"""How long a site's clock of computation takes, in virtual time.

`measured` times the real step on this machine (one worker's batch, one thread);
`measured/20` is a device 20x faster; `0.05` is 50 ms per clock; a path names a
JSON file `{"step_s": 0.05, "sites": {"frankfurt": 0.07}}` (the per-site entries
optional), e.g. written from a real run.
"""

import json
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from atoll.platform.core.errors import AtollError
from atoll.platform.data.datasets import Dataset
from atoll.platform.model.zoo import build_model

_TIMED_STEPS = 12


@dataclass(frozen=True)
class ComputeProfile:
    step_s: float
    per_site: dict[str, float] = field(default_factory=dict)
    source: str = ""

    def step_for(self, site: str) -> float:
        return self.per_site.get(site, self.step_s)


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


def compute_profile(spec: str, model: str, train: Dataset, batch: int) -> ComputeProfile:
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
        return ComputeProfile(step, source=f"{spec} ({step * 1000:.1f} ms per clock)")
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
