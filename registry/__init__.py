"""The registry: Atoll's site directory and Cartel metadata service.

Sites register, report what their data and model look like (class priors,
accuracy, model signature) and ask which other sites are their logical
neighbours; model artifacts and their lineage are recorded here. A FastAPI
service over SQLAlchemy 2 (SQLite by default, PostgreSQL in production), with
its schema under Alembic. `atoll.registry.client` is the typed client.
"""
