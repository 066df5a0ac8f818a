"""The JSONL log every run writes (one event per line, appended as events happen), and the
one way to read it back, while it is being written or after.

A run killed outright (kill -9) can leave its last line cut short; a resumed run appends
to the same file. The writer starts on a line of its own, so the cut line stays a line
of its own; the reader skips any line that is not an event it knows (a cut line, an
unknown kind from another version of Atoll, a field of the wrong type) and counts it.
"""

from pathlib import Path

from atoll.platform.core.events import MalformedEvent, RunEvent, parse_event


class RunLog:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        cut = path.exists() and path.stat().st_size > 0 and not _ends_a_line(path)
        self._file = path.open("a", buffering=1)  # line-buffered: a killed run keeps its lines
        if cut:
            self._file.write("\n")  # end the line a killed run left open

    def write(self, event: RunEvent) -> None:
        self._file.write(event.model_dump_json() + "\n")

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> "RunLog":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class EventTail:
    """The events of the complete lines appended to a run log since the last read.

    A line still being written (no newline yet) waits for the next read. Lines that are
    no known event are skipped: `skipped` counts them and `last_problem` says what the
    last one was.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.skipped = 0
        self.last_problem: str | None = None

    def read(self) -> list[RunEvent]:
        if not self.path.exists():
            return []
        with self.path.open("rb") as f:
            f.seek(self.offset)
            chunk = f.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self.offset += len(complete)
        events = []
        for line in complete.splitlines():
            if not line.strip():
                continue
            try:
                events.append(parse_event(line))
            except MalformedEvent as e:
                self.skipped += 1
                self.last_problem = f"{self.path}: {e}"
        return events


def read_events(path: Path) -> list[RunEvent]:
    """Every event of the complete lines of a run log (none if it does not exist)."""
    return EventTail(path).read()


def _ends_a_line(path: Path) -> bool:
    with path.open("rb") as f:
        f.seek(-1, 2)
        return f.read(1) == b"\n"
