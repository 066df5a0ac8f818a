"""`atoll demo --cartel`: the whole system on this machine running one cartel job: three
sites, each its own model on its own stream; one drifts, fetches from the right
neighbour and recovers."""

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from atoll.localstack.deployment import LocalDeployment
    from atoll.platform.control.schemas import JobOut

# Stream i mostly sees digits 2i..2i+3: Virginia 0-3; Frankfurt 2-5, then Virginia's 0-3
# (at a third of the run); Singapore 8, 9, 0, 1 (it knows 0 and 1 too, but its mix is
# farther from Frankfurt's new one).
STREAMS = {"virginia": 0, "frankfurt": 1, "singapore": 4}
BATCHES = 240


def cartel_spec(seed: int) -> dict[str, Any]:
    return {
        "kind": "cartel",
        "sites": list(STREAMS),
        "streams": STREAMS,
        "scenario": "class-emergence",
        "dataset": "digits",
        "model": "logreg",
        "batches": BATCHES,
        "batch_interval_s": 0.05,
        "eval_every": 1,
        "seed": seed,
        # A small logistic regression on digits is good, not great, on a class after a few
        # dozen batches of 10: a neighbour 60% right on the new classes beats 0%.
        "cartel": {"min_neighbour_accuracy": 0.6},
    }


@dataclass(frozen=True)
class SiteStory:
    site: str
    classes: str
    drift: int | None  # the batch its detector fired, after the stream drifted
    source: str | None  # where it fetched from
    transfer: int | None
    bytes: int
    before: float | None  # mean accuracy over the 10 batches before the drift
    lowest: float | None  # after the drift
    adapt: int | None  # batches from the drift until back within 2 points
    final: float | None


def run_cartel_demo(
    deployment: "LocalDeployment", out: Path, seed: int, console: Console
) -> "JobOut":
    from atoll.cli.demo import follow
    from atoll.platform.control.client import ControlClient
    from atoll.platform.core.files import write_json

    started = time.monotonic()
    with ControlClient(deployment.control_url, deployment.admin_token) as client:
        job = client.submit(cartel_spec(seed), name="cartel-demo")
        job = follow(client, job, deployment.control_url, started, console)
    stories = [
        story(s.site, site_log(deployment, s.site, job.id), s.final_accuracy) for s in job.sites
    ]
    write_json(out / "summary.json", {
        "job": job.model_dump(mode="json"),
        "sites": [s.__dict__ for s in stories],
        "wall_s": time.monotonic() - started,
    })  # fmt: skip
    Console().print(table(job, stories))
    return job


def site_log(deployment: "LocalDeployment", site: str, job_id: str) -> Path:
    return deployment.root / "edge" / site / "state" / "jobs" / job_id / "run" / "log.jsonl"


def story(site: str, log: Path, final: float | None) -> SiteStory:
    from atoll.platform.core.events import CartelNoted, CartelTransferred, Evaluated, of_kind
    from atoll.platform.core.runlog import read_events
    from atoll.platform.transfer.adapt import time_to_adapt
    from atoll.platform.transfer.scenarios import majors

    events = read_events(log)
    onset = BATCHES // 3
    accuracy = [e.test_accuracy for e in of_kind(events, Evaluated)]
    drift = next(
        (n.step for n in of_kind(events, CartelNoted) if n.happening == "drift" and n.step > onset),
        None,
    )
    transfer = next((t for t in of_kind(events, CartelTransferred) if t.step > onset), None)
    drifts = site == "frankfurt"
    adapted = time_to_adapt(accuracy, onset) if drifts and len(accuracy) > onset else None
    return SiteStory(
        site=site,
        classes=",".join(str(c) for c in majors(STREAMS[site], 10))
        + (" → 0,1,2,3" if drifts else ""),
        drift=drift if drifts else None,
        source=transfer.source if transfer and drifts else None,
        transfer=transfer.step if transfer and drifts else None,
        bytes=transfer.bytes if transfer and drifts else 0,
        before=adapted.pre_level if adapted else None,
        lowest=min(accuracy[onset:]) if drifts and len(accuracy) > onset else None,
        adapt=adapted.batches if adapted and adapted.adapted else None,
        final=final,
    )


def table(job: "JobOut", stories: list[SiteStory]) -> Table:
    def num(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    def whole(value: int | None) -> str:
        return "-" if value is None else str(value)

    result = Table(title=f"{job.spec.label}: {job.state}")
    columns = ("site", "classes", "drift", "fetched from", "before", "lowest", "back in", "final")
    for column in columns:
        result.add_column(column, justify="left" if column in columns[:4] else "right")
    for s in stories:
        fetched = f"{s.source} @{s.transfer}, {s.bytes} B" if s.source else "-"
        result.add_row(
            s.site, s.classes, whole(s.drift), fetched, num(s.before), num(s.lowest),
            whole(s.adapt), num(s.final),
        )  # fmt: skip
    result.caption = (
        f"Frankfurt's stream drifts at batch {BATCHES // 3} of {BATCHES} (10 digits a batch). "
        "drift: the batch its detector fired; @: the batch it merged the part; before, "
        "lowest, final: test accuracy on its current mix; back in: batches from the drift "
        "until within 2 points of before."
    )
    return result
