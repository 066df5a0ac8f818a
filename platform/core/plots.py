"""Plots rendered from run records: accuracy and WAN bytes against time."""

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display on servers
import matplotlib.pyplot as plt


def plot_timelines(
    runs: Mapping[str, Sequence[Mapping[str, Any]]],
    path: Path,
    title: str,
    time_label: str = "time (s)",
    target: float | None = None,
) -> Path:
    """One line per run: mean accuracy over sites, and bytes sent, against time.

    Each run is a list of timeline points with `time_s`, `mean_accuracy`, `wan_bytes`.
    """
    fig, (accuracy, traffic) = plt.subplots(1, 2, figsize=(12, 4.5))
    for label, points in runs.items():
        times = [p["time_s"] for p in points]
        accuracy.plot(times, [p["mean_accuracy"] for p in points], label=label)
        traffic.plot(times, [p["wan_bytes"] / 1e6 for p in points], label=label)
    if target:
        accuracy.axhline(target, color="grey", linestyle=":", linewidth=1)
    accuracy.set(xlabel=time_label, ylabel="test accuracy (mean over sites)", title="accuracy")
    traffic.set(xlabel=time_label, ylabel="MB sent between sites", title="WAN bytes")
    # Time stays linear: people read "how much sooner" off it. Bytes of policies compared
    # in one plot can differ 100x (asp against bsp): then a log axis keeps every line
    # readable; one run, or runs of a similar volume, read better linear.
    if _spread([p[-1]["wan_bytes"] for p in runs.values() if p]) > 10:
        traffic.set_yscale("symlog", linthresh=1.0)
    for axes in (accuracy, traffic):
        axes.grid(alpha=0.3)
    accuracy.legend(fontsize=8)
    return save_figure(fig, path, title)


def save_figure(fig: Any, path: Path, title: str) -> Path:
    """Title, lay out, write as PNG (creating the folder), and free the figure."""
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _spread(values: Sequence[float]) -> float:
    """How many times the largest value is the smallest (1 for fewer than two)."""
    positive = [v for v in values if v > 0]
    return max(positive) / min(positive) if len(positive) > 1 else 1.0
