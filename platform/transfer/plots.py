"""Cartel's plots: each site's accuracy against time with drift onsets and transfers
marked, bytes by kind, and the benchmark's comparison of policies."""

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display on servers
import matplotlib.pyplot as plt

from atoll.platform.core.plots import save_figure


def plot_run(result: Any, path: Path, title: str) -> Path:
    """`result` is a SimResult: per-site accuracy (drifting sites drawn bold), onsets as
    dashed lines, transfers as dots where they landed; bytes by kind beside."""
    seconds = result.settings.batch_seconds
    fig, (acc, traffic) = plt.subplots(
        1, 2, figsize=(13, 4.5), gridspec_kw={"width_ratios": [3, 1]}
    )
    for site in result.sites:
        times = [i * seconds for i in range(len(site.accuracy))]
        drifting = bool(site.onsets)
        (line,) = acc.plot(
            times,
            site.accuracy,
            linewidth=1.6 if drifting else 0.7,
            alpha=1.0 if drifting else 0.45,
            label=f"site-{site.site}" + (" (drifts)" if drifting else ""),
        )
        for onset in site.onsets:
            acc.axvline(onset * seconds, color=line.get_color(), linestyle="--", linewidth=1)
        for transfer in site.transfers:
            t = float(transfer["time_s"])
            index = min(int(t / seconds), len(site.accuracy) - 1)
            acc.plot([t], [site.accuracy[index]], "o", color=line.get_color(), markersize=6)
    acc.set(
        xlabel="virtual time (s)",
        ylabel="test accuracy on the site's current mix",
        title="per-site accuracy (dashed: drift onset, dot: transfer merged)",
    )
    acc.grid(alpha=0.3)
    acc.legend(fontsize=7, ncol=2)
    kinds = sorted(result.bytes_by_kind)
    traffic.bar(kinds, [result.bytes_by_kind[k] / 1e3 for k in kinds], color="tab:blue")
    traffic.set(ylabel="kB", title="bytes moved, by kind")
    traffic.tick_params(axis="x", rotation=30)
    return save_figure(fig, path, title)


def plot_bench(rows: Mapping[str, Sequence[Mapping[str, Any]]], path: Path, title: str) -> Path:
    """Per scenario: time to adapt and bytes moved of every policy (means over seeds)."""
    scenarios = list(rows)
    fig, axes = plt.subplots(2, len(scenarios), figsize=(5 * len(scenarios), 7), squeeze=False)
    for col, scenario in enumerate(scenarios):
        policies = [r["policy"] for r in rows[scenario]]
        adapt = [r["adapt_batches"] or 0 for r in rows[scenario]]
        moved = [max(r["bytes"], 1) for r in rows[scenario]]
        top, bottom = axes[0][col], axes[1][col]
        top.bar(policies, adapt, color="tab:green")
        top.set(title=scenario, ylabel="batches to adapt (lower is better)")
        bottom.bar(policies, moved, color="tab:blue")
        bottom.set(yscale="log", ylabel="bytes moved")
        for axis in (top, bottom):
            axis.tick_params(axis="x", rotation=40, labelsize=8)
            axis.grid(alpha=0.3, axis="y")
    return save_figure(fig, path, title)
