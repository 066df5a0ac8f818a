"""What Atoll's HTTP services (the registry, the control plane) share: the database
engine and its SQL types, token security, JSON errors, settings, Alembic schemas,
readiness and the pre-flight check before serving."""
