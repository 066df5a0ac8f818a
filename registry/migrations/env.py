"""Alembic's entry point: `atoll registry migrate` sets the URL in the config's attributes;
the alembic command line (`alembic -c registry/alembic.ini ...`) falls back to ATOLL_*."""

from alembic import context

from atoll.registry.core.config import registry_settings
from atoll.registry.db import make_engine
from atoll.registry.models import Base

config = context.config
url = config.attributes.get("database_url") or registry_settings().resolved_database_url


def run_offline() -> None:
    context.configure(url=url, target_metadata=Base.metadata, literal_binds=True)
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
            )
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
