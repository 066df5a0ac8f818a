"""The control plane: jobs, sites, the Redis bus between it and the edge agents, and
the API a dashboard reads.

Jobs and their state of record live in SQL (the registry's SQLAlchemy setup: SQLite
by default, PostgreSQL in production, schema under Alembic). Redis only carries
messages: per-site command streams, the agents' status reports, a bounded telemetry
stream and liveness keys. Whatever Redis loses, the control plane issues again from
SQL, and the agents apply a command they already applied no second time.

The decisions (job lifecycle, scheduling, command delivery, liveness) are plain
classes without I/O; the service, its loops and the bus are the I/O around them.
"""
