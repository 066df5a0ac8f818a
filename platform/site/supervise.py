"""One supervisor for `atoll site run`: the process, its log, and what to do when it ends.
The local launcher of a geo job and the edge agent both use it.

`atoll site run` exits 0 when its job is done, 143 (130) when a SIGTERM (SIGINT)
stopped it at a clock boundary with a checkpoint, 2 for a problem a restart cannot
fix (a bad job file, a missing dataset), and otherwise it failed or was killed. A
failure is retried from the last checkpoint (the site rejoins its mirrors) a few
times before the site's part counts as failed.
"""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from atoll.platform.core.events import RunEvent
from atoll.platform.core.runlog import EventTail

EXIT_STOPPED = (143, 130)
EXIT_USAGE = 2

# finished: trained to the end. stopped: stopped as asked, not to be started again.
# resume: stopped as asked, but wanted again since (start it from its checkpoint).
# restart: it failed; start it again from its checkpoint. failed: it failed for good.
Verdict = Literal["finished", "stopped", "resume", "restart", "failed"]


@dataclass(frozen=True)
class SiteExit:
    code: int
    completed: bool  # its log says it trained to the end
    failure: str | None = None  # what it gave as the reason it failed, if anything


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    message: str | None = None


def after_exit(
    exit: SiteExit, *, stop_sent: bool, wanted: bool, failures: int, max_restarts: int
) -> Decision:
    """`stop_sent`: the site was asked to stop (SIGTERM); `wanted`: it should still run
    now (asked to stop for a drain, then activated again); `failures`: the restarts
    after a failure it has had."""
    if exit.code == 0 and exit.completed:
        return Decision("finished")
    if stop_sent:  # however it ended: it was going to end
        return Decision("resume") if wanted else Decision("stopped")
    code = exit.code
    how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
    why = f"{how}: {exit.failure}" if exit.failure else how
    if code == EXIT_USAGE:
        return Decision("failed", why)
    if failures < max_restarts:
        return Decision("restart", why)
    return Decision("failed", f"{why} (after {failures} restart(s))")


class SiteProcess:
    """`atoll site run --job FILE --out DIR [--resume]`, each run of it, and its log.

    The site runs under `python -m atoll.platform.site.child`, so that it dies with its
    supervisor, however the supervisor dies.
    """

    def __init__(self, job_file: Path, run_dir: Path, stderr: Path) -> None:
        self.job_file = job_file
        self.run_dir = run_dir
        self.stderr = stderr
        self.log = EventTail(run_dir / "log.jsonl")
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self, resume: bool) -> int:
        """Starts the site; returns its pid. A resume of a site that never got as far as
        writing its run folder is a fresh start."""
        resume = resume and (self.run_dir / "config.json").exists()
        if not resume:
            if self.run_dir.exists():
                shutil.rmtree(self.run_dir)
            self.log = EventTail(self.run_dir / "log.jsonl")
        args = ["site", "run", "--job", str(self.job_file), "--out", str(self.run_dir)]
        args += ["--resume"] if resume else []
        command = [sys.executable, "-m", "atoll.platform.site.child", str(os.getpid()), *args]
        self.stderr.parent.mkdir(parents=True, exist_ok=True)
        with self.stderr.open("ab") as err:
            self._process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
        return self._process.pid

    def poll(self) -> tuple[list[RunEvent], int | None]:
        """What the site logged since the last poll, and its exit code once it has ended
        (then the events are all it logged)."""
        code = None if self._process is None else self._process.poll()
        return self.log.read(), code

    def stop(self) -> None:
        """Finish the clock, checkpoint, exit (the site's own SIGTERM handling)."""
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)

    def wait(self, timeout_s: float) -> int | None:
        """Its exit code, waiting up to `timeout_s` for it; None if it still runs."""
        if self._process is None:
            return None
        try:
            return self._process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()

    def last_error(self, lines: int = 3) -> str | None:
        """The end of what the site printed on stderr: its one-line error, usually."""
        if not self.stderr.exists():
            return None
        text = self.stderr.read_text(errors="replace").strip().splitlines()
        return " | ".join(text[-lines:]) or None


def kill_stale(pid: int | None, run_dir: Path) -> None:
    """A site an earlier supervisor started, if it still runs on `run_dir`: killed, so the
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
