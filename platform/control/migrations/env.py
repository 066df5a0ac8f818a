"""Alembic's entry point for the control plane's schema: `atoll control migrate` passes the
URL in the config's attributes; without it, ATOLL_DATABASE_URL and friends decide."""

from alembic import context

from atoll.platform.control.core.config import control_settings
from atoll.platform.control.migrate import VERSION_TABLE
from atoll.platform.control.models import Base
from atoll.registry.db import make_engine

config = context.config
url = config.attributes.get("database_url") or control_settings().resolved_database_url


def include_name(name: str | None, type_: str, _parents: dict[str, str | None]) -> bool:
    # A database shared with the registry holds its tables too: leave them alone.
    return type_ != "table" or (name or "").startswith("control_")


def run_offline() -> None:
    context.configure(
        url=url,
        target_metadata=Base.metadata,
        literal_binds=True,
        version_table=VERSION_TABLE,
        include_name=include_name,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    engine = make_engine(url, pool_size=1)
    try:
        with engine.connect() as connection:
            context.configure(
                connection=connection,
                target_metadata=Base.metadata,
                render_as_batch=True,  # SQLite alters tables by copying them
                compare_type=True,
                version_table=VERSION_TABLE,
                include_name=include_name,
            )
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
