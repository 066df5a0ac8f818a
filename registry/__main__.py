"""`python -m atoll.registry serve|migrate|token ...`: the same as `atoll registry ...`, for
images and scripts that name the service's package."""

from atoll.cli.errors import run
from atoll.cli.registry import app

if __name__ == "__main__":
    run(app, "python -m atoll.registry")
