"""Drift detectors on a site's error stream: a windowed error limit, or river's.

Each takes the 0/1 errors of one batch and says whether drift fired. None holds
a clock or does I/O; `name` goes into the log.
"""

from collections import deque
from typing import Protocol

from river import drift as river_drift

from atoll.platform.transfer.config import CartelConfig


class Detector(Protocol):
    name: str

    def update(self, errors: list[int]) -> bool: ...

    def reset(self) -> None: ...


class WindowedError:
    """Fires when the mean error of the last `window` batches is `limit` above the mean
    error of the `reference` batches before them (the level the model had reached)."""

    def __init__(self, window: int, limit: float, reference: int) -> None:
        self.name = f"window(W={window},L={limit})"
        self.window = window
        self.limit = limit
        self.reference = reference
        self.reset()

    def reset(self) -> None:
        self._rates: deque[float] = deque(maxlen=self.window + self.reference)

    def update(self, errors: list[int]) -> bool:
        if not errors:
            return False
        self._rates.append(sum(errors) / len(errors))
        rates = list(self._rates)
        if len(rates) < 2 * self.window:
            return False
        recent, before = rates[-self.window :], rates[: -self.window]
        return sum(recent) / len(recent) > sum(before) / len(before) + self.limit


class RiverDetector:
    """river's ADWIN or Page-Hinkley, fed one 0/1 error per sample; fires on a rise
    of the error only (a fall is the model getting better, not drift)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.name = f"river.{'ADWIN' if kind == 'adwin' else 'PageHinkley'}"
        self.reset()

    def reset(self) -> None:
        # river's ADWIN is not typed throughout; its use here is.
        self._detector: river_drift.ADWIN | river_drift.PageHinkley = (
            river_drift.ADWIN()  # type: ignore[no-untyped-call]
            if self.kind == "adwin"
            else river_drift.PageHinkley(mode="up")
        )

    def update(self, errors: list[int]) -> bool:
        fired = False
        for e in errors:
            detector = self._detector
            before = detector.estimation if isinstance(detector, river_drift.ADWIN) else 0.0
            detector.update(e)  # type: ignore[no-untyped-call]
            if not detector.drift_detected:
                continue
            # ADWIN cuts its window on any change; only a higher error is drift here.
            if not isinstance(detector, river_drift.ADWIN) or detector.estimation > before:
                fired = True
        return fired


def make_detector(config: CartelConfig) -> Detector:
    if config.detector == "window":
        return WindowedError(config.drift_window, config.drift_limit, config.drift_reference)
    return RiverDetector(config.detector)
