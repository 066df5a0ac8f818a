import pytest

from atoll.platform.transfer.config import CartelConfig
from atoll.platform.transfer.drift import RiverDetector, WindowedError, make_detector


def feed(detector: WindowedError | RiverDetector, rates: list[float], size: int = 20) -> list[bool]:
    fired = []
    for rate in rates:
        wrong = round(rate * size)
        fired.append(detector.update([1] * wrong + [0] * (size - wrong)))
    return fired


def test_window_fires_when_error_rises_past_the_limit() -> None:
    detector = WindowedError(window=3, limit=0.2, reference=10)
    fired = feed(detector, [0.1] * 12 + [0.6] * 3)
    assert not any(fired[:12])
    assert fired[-1]


@pytest.mark.parametrize(
    "rates",
    [
        [0.1] * 30,  # steady
        [0.5] * 10 + [0.1] * 20,  # learning: error falls
        [0.1, 0.25] * 15,  # noise below the limit
        [0.1] * 12 + [0.25] * 5,  # a rise smaller than the limit
    ],
)
def test_window_does_not_fire(rates: list[float]) -> None:
    assert not any(feed(WindowedError(window=3, limit=0.2, reference=10), rates))


def test_window_waits_for_a_reference() -> None:
    assert (
        feed(WindowedError(window=3, limit=0.2, reference=10), [0.0] * 3 + [1.0] * 2) == [False] * 5
    )


def test_reset_forgets_the_old_level() -> None:
    detector = WindowedError(window=3, limit=0.2, reference=10)
    feed(detector, [0.1] * 12)
    detector.reset()
    assert not any(feed(detector, [0.6] * 10))


@pytest.mark.parametrize("kind", ["adwin", "page-hinkley"])
def test_river_detectors_fire_on_a_rise_not_on_a_fall(kind: str) -> None:
    rise = RiverDetector(kind)
    assert not any(feed(rise, [0.05] * 40))
    assert any(feed(rise, [0.7] * 20))
    fall = RiverDetector(kind)
    feed(fall, [0.7] * 40)
    assert not any(feed(fall, [0.02] * 40))


def test_the_detector_is_named_as_configured() -> None:
    assert make_detector(CartelConfig(detector="adwin")).name == "river.ADWIN"
    assert make_detector(CartelConfig(detector="page-hinkley")).name == "river.PageHinkley"
    assert make_detector(CartelConfig(drift_window=4, drift_limit=0.3)).name == "window(W=4,L=0.3)"
