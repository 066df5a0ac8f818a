"""`python -m atoll.platform.site.child PARENT_PID ARGS...` becomes `atoll ARGS...`, tied to
its supervisor (the edge agent, or the local launcher of a geo job).

Supervisors start `atoll site run` through this: the kernel kills the site when the
supervisor dies, however it dies (kill -9 included), as it would in the agent's
container. A site outliving its agent would train on unseen and hold its ports, and the
agent's next incarnation could not resume it. (Setting this in the child between fork
and exec from Python is unsafe in a process with threads, hence the extra exec.)
"""

import ctypes
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def main() -> None:
    parent, args = int(sys.argv[1]), sys.argv[2:]
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        sys.exit(1)  # the supervisor died before the signal was armed
    # The death signal survives exec: the site itself carries it.
    os.execv(sys.executable, [sys.executable, "-m", "atoll.cli", *args])


if __name__ == "__main__":
    main()
