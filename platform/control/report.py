"""A finished job's record from the control plane's view of it: per-site results, WAN
bytes against what BSP would have sent, and plots drawn from the telemetry history."""

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from atoll.platform.control.schemas import JobOut, Sample
from atoll.platform.core.plots import plot_timelines
from atoll.platform.geo.job import GeoJob
from atoll.platform.geo.timeline import AccuracyTimeline


def job_record(job: JobOut, wall_s: float) -> dict[str, Any]:
    finals = [s.final_accuracy for s in job.sites if s.final_accuracy is not None]
    return {
        "id": job.id,
        "name": job.name,
        "state": job.state,
        "message": job.message,
        "policy": job.spec.label,
        "sites": [s.model_dump(mode="json") for s in job.sites],
        "final_accuracy": sum(finals) / len(finals) if finals else None,
        "wan_bytes": job.wan_bytes,
        "bsp_wan_bytes": job.bsp_wan_bytes,
        "wan_fraction_of_bsp": job.wan_bytes / job.bsp_wan_bytes if job.bsp_wan_bytes else None,
        "stall_s": max((s.stall_s for s in job.sites), default=0.0),
        "params": job.params,
        "wall_s": wall_s,
        "spec": job.spec.model_dump(mode="json"),
    }


def timeline(sites: Sequence[str], samples: Sequence[Sample]) -> list[dict[str, Any]]:
    """Mean accuracy over sites at each evaluated clock, with the time the last site got
    there and the WAN bytes sent by then (the points the simulator's timelines have)."""
    t0 = min((s.time for s in samples), default=0.0)
    board = AccuracyTimeline(len(sites))
    sent: dict[str, list[tuple[float, int]]] = {site: [] for site in sites}
    for sample in samples:
        if sample.wan_bytes is not None and sample.site in sent:
            sent[sample.site].append((sample.time, sample.wan_bytes))

    def bytes_by(when: float) -> int:
        return sum(max((b for t, b in points if t <= when), default=0) for points in sent.values())

    for sample in samples:
        if sample.kind == "eval" and sample.accuracy is not None and sample.site in sent:
            index = sites.index(sample.site)
            board.report(
                index, sample.clock, sample.accuracy, sample.time - t0, bytes_by(sample.time)
            )
    return [p.__dict__ for p in board.points]


def plot_job(job: JobOut, samples: Sequence[Sample], out_dir: Path) -> list[Path]:
    """timeline.png (accuracy and WAN bytes over time) and sites.png (each site against
    clocks, with the bytes BSP would have sent)."""
    import matplotlib.pyplot as plt  # after plots.py chose the file-only backend

    names = [s.site for s in job.sites]
    spec = job.spec
    where = spec.partition + ", " + spec.topology if isinstance(spec, GeoJob) else spec.scenario
    paths = [
        plot_timelines(
            {f"{spec.label} (real, {len(names)} sites)": timeline(names, samples)},
            out_dir / "timeline.png",
            f"{job.name}: {spec.dataset}, {where}",
            "wall time (s)",
        )
    ]
    fig, (accuracy, traffic) = plt.subplots(1, 2, figsize=(12, 4.5))
    for name in names:
        evals = [s for s in samples if s.site == name and s.kind == "eval" and s.accuracy]
        accuracy.plot([s.clock for s in evals], [s.accuracy for s in evals], label=name)
        sent = [s for s in samples if s.site == name and s.wan_bytes is not None]
        traffic.plot([s.clock for s in sent], [(s.wan_bytes or 0) / 1e6 for s in sent], label=name)
    if job.bsp_wan_bytes and names:
        clocks = max(s.clock for s in job.sites)
        per_site = job.bsp_wan_bytes / len(names) / 1e6
        traffic.plot([0, clocks], [0, per_site], "k--", label="bsp would send (per site)")
    accuracy.set(xlabel="clock", ylabel="test accuracy", title="accuracy per site")
    traffic.set(xlabel="clock", ylabel="MB sent", title="WAN bytes per site")
    for axes in (accuracy, traffic):
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8)
    fig.tight_layout()
    path = out_dir / "sites.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    paths.append(path)
    return paths
