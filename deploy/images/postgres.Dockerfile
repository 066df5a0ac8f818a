# PostgreSQL from Debian's packages (15 in bookworm), for docker-compose.yml's `postgres`
# service on a host that reaches no image registry (POSTGRES_IMAGE; postgres:17-bookworm
# elsewhere). deploy/images/build.sh builds it on the Debian image it makes with debootstrap.
#
# The official image's contract that the compose file relies on (postgres-entrypoint.sh):
# POSTGRES_USER, POSTGRES_PASSWORD and POSTGRES_DB create the superuser and the database
# when PGDATA (/var/lib/postgresql/data, the volume) is empty; password authentication over
# TCP; `pg_isready` answers only once the server that takes connections is up.
ARG DEBIAN_IMAGE=localhost/atoll-base/debian:bookworm
FROM ${DEBIAN_IMAGE}
ARG PG_MAJOR=15
# The package would make a cluster of its own under /etc/postgresql: the entrypoint makes
# the one in PGDATA instead.
# hadolint ignore=DL3008
RUN install -d /etc/postgresql-common/createcluster.d \
    && echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/no-main.conf \
    && apt-get update \
    && apt-get install -y --no-install-recommends "postgresql-${PG_MAJOR}" \
    && rm -rf /var/lib/apt/lists/*
ENV PATH=/usr/lib/postgresql/${PG_MAJOR}/bin:$PATH \
    PGDATA=/var/lib/postgresql/data
# Owned by postgres, so that a fresh named volume mounted there inherits that.
RUN install -d -o postgres -g postgres -m 0700 "$PGDATA"
COPY --chmod=0755 postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint
USER postgres
EXPOSE 5432
# SIGINT is PostgreSQL's fast shutdown: sessions are ended, the data is consistent.
STOPSIGNAL SIGINT
ENTRYPOINT ["postgres-entrypoint"]
CMD ["postgres"]
