"""The live table of `atoll demo` and `atoll control watch` fits an 80-column terminal."""

from datetime import UTC, datetime

from rich.console import Console

from atoll.cli.control import JOB_COLUMNS, job_table
from atoll.platform.control.schemas import JobOut, JobSiteOut
from atoll.platform.control.states import JobState, SiteState
from atoll.platform.geo.job import GeoJob


def job(sites: list[str], clocks: int) -> JobOut:
    # The widest values each column shows: the longest state, five-digit clocks, ...
    widest = {"state": SiteState.cancelled, "online": False, "clock": clocks}
    widest |= {"total_clocks": clocks, "accuracy": 0.8531, "wan_bytes": 12_345_600_000}
    widest |= {"stall_s": 1234.5, "restarts": 12, "samples": 20_000}
    unset = dict.fromkeys(("final_accuracy", "stop_reason", "message"))
    parts = [JobSiteOut.model_validate({"site": name, **widest, **unset}) for name in sites]
    return JobOut(
        id="3f2b1c9e-1234-4d5e-8f90-abcdef012345",
        name="demo",
        state=JobState.running,
        message="waiting for singapore to come back online",
        spec=GeoJob(clocks=clocks),
        sites=parts,
        params=100_000,
        wan_bytes=0,
        bsp_wan_bytes=None,
        submitted_at=datetime.now(UTC),
        started_at=None,
        finished_at=None,
    )


def rendered(table_job: JobOut, width: int = 80) -> list[str]:
    console = Console(width=width, record=True)
    console.print(job_table(table_job))
    return console.export_text().splitlines()


def test_every_header_shows_whole_at_80_columns() -> None:
    lines = rendered(job(["virginia", "frankfurt", "singapore"], clocks=10_000))
    header = next(line for line in lines if line.lstrip().startswith("site"))
    assert header.split() == " ".join(JOB_COLUMNS).split()
    assert max(len(line) for line in lines) <= 80


def test_every_value_shows_whole_at_80_columns() -> None:
    lines = rendered(job(["virginia", "frankfurt", "singapore"], clocks=10_000))
    row = next(line for line in lines if line.startswith("singapore"))
    values = ["singapore", "cancelled", "no", "10000/10000", "0.853", "12345.6", "1234.5", "12"]
    assert row.split() == values
    assert "…" not in "\n".join(lines)
