"""Charts drawn on the server as SVG, so that they show without JavaScript: bars (class
priors) and a line over time (accuracy history). Each comes with its data as a table for
screen readers; the SVG itself is decorative."""

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str
    value: float


def bars(values: Sequence[float], width: float = 600, height: float = 160) -> list[Bar]:
    """One bar per value, scaled to the largest."""
    if not values:
        return []
    top = max(values) or 1.0
    step = width / len(values)
    gap = min(4.0, step * 0.2)
    return [
        Bar(i * step + gap / 2, height - v / top * height, step - gap, v / top * height, str(i), v)
        for i, v in enumerate(values)
    ]


def polyline(
    points: Sequence[tuple[float, float]],
    width: float = 600,
    height: float = 160,
    y_range: tuple[float, float] = (0.0, 1.0),
) -> str:
    """The `points` attribute of an SVG polyline through (x, y) pairs, x scaled to the width
    and y to `y_range` (upwards)."""
    if not points:
        return ""
    xs = [x for x, _ in points]
    x0, x1 = min(xs), max(xs)
    y0, y1 = y_range
    span_x = (x1 - x0) or 1.0
    span_y = (y1 - y0) or 1.0

    def scaled(x: float, y: float) -> str:
        return f"{(x - x0) / span_x * width:.1f},{height - (y - y0) / span_y * height:.1f}"

    return " ".join(scaled(x, y) for x, y in points)
