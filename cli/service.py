"""What `atoll registry` and `atoll control` share: the service commands' options and the
schema migration both run."""

from enum import StrEnum
from typing import TYPE_CHECKING

from atoll.platform.core.errors import AtollError

if TYPE_CHECKING:
    from atoll.platform.service.schema import AlembicSchema


class LogLevel(StrEnum):
    debug = "debug"
    info = "info"
    warning = "warning"
    error = "error"


def migrate_schema(schema: "AlembicSchema", url: str, revision: str, what: str) -> None:
    """Upgrade `what` (a service's database, at `url`) to `revision`, and say what changed."""
    from sqlalchemy.exc import SQLAlchemyError

    from atoll.platform.service.database import describe_url

    try:
        before, after = schema.upgrade(url, revision)
    except SQLAlchemyError as e:
        problem = str(e).splitlines()[0]
        raise AtollError(f"cannot migrate {what} at {describe_url(url)}: {problem}") from e
    was, now = ", ".join(before.current) or "empty", ", ".join(after.current) or "empty"
    verb = "already at" if before.current == after.current else f"migrated from {was} to"
    print(f"{describe_url(url)}: {verb} {now}")
