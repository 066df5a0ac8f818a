"""`python -m atoll.edge run --config site.yaml`: the same as `atoll edge run`, for images
and scripts that name the service's package."""

from atoll.cli.edge import app
from atoll.cli.errors import run

if __name__ == "__main__":
    run(app, "python -m atoll.edge")
