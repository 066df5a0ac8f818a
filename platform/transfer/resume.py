"""What of a cartel site's core a checkpoint keeps, as plain JSON-able data.

Kept: the counters (batches, samples, version, transfers, reports), the per-class sample
counts a part's weighting uses, the priors and accuracy windows (what the site reports,
what a giver checks before it gives a part, what names the drifted classes), the report
schedule and the random-neighbour generator.

Not kept, and why:
- the drift detector: it summarises the error stream right before the gap, and after a
  restart the stream has gone on without the site; a detector fed across the gap would
  compare two levels that are not consecutive. Started empty, the windowed detector has
  its reference again after 2 x drift_window batches (river's after its own warm-up),
  so a drift in those first batches is found a few batches late; river's internals are
  also no stable format to persist;
- a search or fetch in flight (`phase`, `candidates`, the drift flag): the request died
  with the process and its answer goes to nobody; the site is back to training, and a
  drift still there fires again;
- whether the registry was down: the first report after the restart says (and is sent
  at once: the registry's view of the site is as old as the gap).
"""

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class CoreState:
    batches: int
    samples: int
    version: int
    time_s: float
    class_samples: tuple[int, ...]
    label_counts: tuple[tuple[int, ...], ...]  # the priors window, oldest first
    scored: tuple[tuple[tuple[int, ...], tuple[bool, ...]], ...]  # the accuracy window
    cooldown_left: int
    bar: float
    last_reported: tuple[float, ...] | None
    last_reported_accuracy: float
    last_report_batch: int
    reports_sent: int
    transfers: int
    rng: Mapping[str, Any]  # numpy's bit generator state (random-neighbour choice)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, fields: dict[str, Any]) -> "CoreState":
        last = fields["last_reported"]
        return cls(
            **{
                **fields,
                "class_samples": tuple(fields["class_samples"]),
                "label_counts": tuple(tuple(c) for c in fields["label_counts"]),
                "scored": tuple((tuple(lbl), tuple(ok)) for lbl, ok in fields["scored"]),
                "last_reported": tuple(last) if last is not None else None,
            }
        )
