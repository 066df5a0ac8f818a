"""One `atoll site run` process and its run log, as the agent drives them."""

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any


class LogTail:
    """The complete lines appended to a JSONL file since the last read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        with self.path.open("rb") as f:
            f.seek(self.offset)
            chunk = f.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self.offset += len(complete)
        events = []
        for line in complete.splitlines():
            try:
                events.append(json.loads(line))
            except ValueError:
                continue  # a line cut by a kill -9 of the site, then appended to
        return events


class SiteProcess:
    """`atoll site run --job FILE --out DIR [--resume]`, which dies with this agent."""

    def __init__(self, job_file: Path, run_dir: Path, stderr: Path) -> None:
        self.job_file = job_file
        self.run_dir = run_dir
        self.stderr = stderr
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def start(self, resume: bool) -> None:
        args = ["site", "run", "--job", str(self.job_file), "--out", str(self.run_dir)]
        args += ["--resume"] if resume else []
        command = [sys.executable, "-m", "atoll.edge.child", str(os.getpid()), *args]
        with self.stderr.open("ab") as err:
            self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)

    def poll(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def stop(self) -> None:
        """Finish the clock, checkpoint, exit (the site's own SIGTERM handling)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def last_error(self, lines: int = 3) -> str | None:
        """The end of what the site printed on stderr: its one-line error, usually."""
        if not self.stderr.exists():
            return None
        text = self.stderr.read_text(errors="replace").strip().splitlines()
        return " | ".join(text[-lines:]) or None


def kill_stale(pid: int | None, run_dir: Path) -> None:
    """A site a previous incarnation of the agent started, if it still runs: killed, so the
    job can be resumed from its checkpoint without two sites on one run folder."""
    if pid is None:
        return
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return
    if str(run_dir).encode() in cmdline:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
