"""What to do when a site process ends, sans I/O.

`atoll site run` exits 0 when its job is done, 143 (130) when a SIGTERM (SIGINT)
stopped it at a clock boundary with a checkpoint, 2 for a problem a restart cannot
fix (a bad job file, a missing dataset), and otherwise it failed or was killed. A
failure is retried from the last checkpoint (the site rejoins its mirrors) a few
times before the site's part counts as failed.
"""

from dataclasses import dataclass
from typing import Literal

EXIT_STOPPED = (143, 130)
EXIT_USAGE = 2

Verdict = Literal["finished", "stopped", "restart", "failed"]


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    message: str | None = None


def after_exit(
    code: int,
    stop_requested: bool,
    restarts: int,
    max_restarts: int,
    completed: bool,
    failure: str | None = None,
) -> Decision:
    """`completed`: the site logged that it trained to the end; `failure`: what it logged
    as the reason it failed, if it did."""
    if code == 0 and completed:
        return Decision("finished")
    if stop_requested:  # asked to stop: however it ended, it is not started again
        return Decision("stopped")
    how = f"killed by signal {-code}" if code < 0 else f"exited with code {code}"
    why = f"{how}: {failure}" if failure else how
    if code == EXIT_USAGE:
        return Decision("failed", why)
    if restarts < max_restarts:
        return Decision("restart", why)
    return Decision("failed", f"{why} (after {restarts} restart(s))")
