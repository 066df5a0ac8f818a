"""`python -m atoll.registry serve|migrate|token ...`: the `atoll registry` commands without
loading the rest of Atoll's command line (which imports PyTorch), so that the service
starts in about a second. Same options, same behaviour."""

import sys

from atoll.cli.registry import app
from atoll.platform.core.errors import AtollError


def main() -> None:
    try:
        app(prog_name="python -m atoll.registry")
    except AtollError as e:
        print(f"atoll: error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
