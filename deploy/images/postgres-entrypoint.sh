#!/bin/sh
# The entrypoint of deploy/images/postgres.Dockerfile: the part of the official postgres
# image's contract that docker-compose.yml relies on.
#
# On the first start (PGDATA holds no cluster), it creates one whose superuser is
# POSTGRES_USER (default postgres) with the password POSTGRES_PASSWORD (required), and
# the database POSTGRES_DB (default: the user's name). Connections over TCP need that
# password (scram-sha-256); the container's own socket is trusted, as in the official image.
# Then it runs the command, `postgres` by default, in place of itself.
set -eu

if [ "${1:-}" != postgres ]; then
    exec "$@"  # anything else (psql, bash) runs as it is
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
    : "${POSTGRES_PASSWORD:?is not set: it is the password of POSTGRES_USER, required to create the database}"
    user="${POSTGRES_USER:-postgres}"
    database="${POSTGRES_DB:-$user}"
    # The password reaches initdb through a file, never through the command line.
    password_file="$(mktemp)"
    printf '%s\n' "$POSTGRES_PASSWORD" >"$password_file"
    initdb --username="$user" --pwfile="$password_file" --encoding=UTF8 --locale=C.UTF-8 \
        --auth-local=trust --auth-host=scram-sha-256 >/dev/null
    rm -f "$password_file"
    echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
    echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
    if [ "$database" != postgres ]; then
        # A server of the moment on a private socket and no TCP: pg_isready, which asks the
        # usual socket, keeps failing until the real server below takes connections.
        socket_dir="$(mktemp -d)"
        pg_ctl --pgdata="$PGDATA" --wait --silent \
            --options="-c listen_addresses='' -c unix_socket_directories='$socket_dir'" start
        createdb --host="$socket_dir" --username="$user" "$database"
        pg_ctl --pgdata="$PGDATA" --wait --silent --mode=fast stop
        rmdir "$socket_dir"
    fi
    echo "postgres-entrypoint: created the cluster in $PGDATA: user $user, database $database"
fi

exec "$@"
