"""The version this code runs as: in the services' OpenAPI and in an agent's status."""

from importlib.metadata import PackageNotFoundError, version


def atoll_version() -> str:
    """The installed package's; "0+unknown" when run from a tree that is not installed."""
    try:
        return version("atoll")
    except PackageNotFoundError:
        return "0+unknown"
