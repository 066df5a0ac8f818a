"""The one reader of run logs, while they are written, after a kill, across versions."""

from pathlib import Path

from atoll.platform.core.events import CheckpointSaved, RankStarted, StepDone
from atoll.platform.core.runlog import EventTail, RunLog, read_events


def step(n: int) -> StepDone:
    return StepDone(time=float(n), step=n, loss=1.0 / n, epoch=0)


def test_events_written_are_the_events_read(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    written = [RankStarted(time=0.0, rank=0, pid=7), step(1), CheckpointSaved(time=2.0, step=1)]
    with RunLog(path) as log:
        for event in written:
            log.write(event)
    assert read_events(path) == written
    assert read_events(tmp_path / "none.jsonl") == []


def test_a_line_still_being_written_waits_for_the_next_read(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    whole = step(1).model_dump_json()
    path.write_text(step(2).model_dump_json() + "\n" + whole[:10])
    tail = EventTail(path)
    assert tail.read() == [step(2)]
    with path.open("a") as f:
        f.write(whole[10:] + "\n")
    assert tail.read() == [step(1)]
    assert tail.skipped == 0


def test_a_line_cut_by_a_kill_is_skipped_and_the_resumed_run_loses_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text(step(1).model_dump_json() + "\n" + step(2).model_dump_json()[:15])
    with RunLog(path) as log:  # the resumed run appends to the same file
        log.write(step(3))
    tail = EventTail(path)
    assert tail.read() == [step(1), step(3)]
    assert tail.skipped == 1
    assert tail.last_problem is not None
    assert "Invalid JSON" in tail.last_problem


def test_lines_of_unknown_kinds_or_fields_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    lines = ['{"kind":"teleported","time":1.0}', step(1).model_dump_json(),
             '{"kind":"step","time":"soon"}', "", "not json"]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    tail = EventTail(path)
    assert tail.read() == [step(1)]
    assert tail.skipped == 3
