"""`python -m atoll.edge run --config site.yaml`: `atoll edge run` without loading the rest of
Atoll's command line (which imports PyTorch). Same options, same behaviour."""

import sys

from atoll.cli.edge import app
from atoll.platform.core.errors import AtollError


def main() -> None:
    try:
        app(prog_name="python -m atoll.edge")
    except AtollError as e:
        print(f"atoll: error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
