#!/bin/sh
# Entrypoint of the local postgres:15 stand-in (tools/docker/base-images.sh), doing what the
# official image's does for the variables docker-compose.yaml uses: on an empty PGDATA it runs
# initdb as POSTGRES_USER (default postgres) with POSTGRES_PASSWORD, allows TCP clients with
# POSTGRES_HOST_AUTH_METHOD (default scram-sha-256) and creates POSTGRES_DB; then it runs the
# server as the postgres user, listening on every address of the container.
set -eu
if [ "${1:-}" != postgres ]; then
	exec "$@"
fi
shift
: "${PGDATA:=/var/lib/postgresql/data}"
user="${POSTGRES_USER:-postgres}"
db="${POSTGRES_DB:-$user}"
if [ "$(id -u)" = 0 ]; then
	mkdir -p "$PGDATA" /var/run/postgresql
	chown -R postgres:postgres "$PGDATA" /var/run/postgresql
	chmod 0700 "$PGDATA"
	exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" postgres "$@"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
	method="${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}"
	if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$method" != trust ]; then
		echo "postgres: set POSTGRES_PASSWORD, or POSTGRES_HOST_AUTH_METHOD=trust" >&2
		exit 1
	fi
	pwfile="$(mktemp)"
	printf '%s\n' "${POSTGRES_PASSWORD:-}" >"$pwfile"
	initdb -D "$PGDATA" --username="$user" --pwfile="$pwfile" --auth-local=trust --auth-host="$method" >/dev/null
	rm -f "$pwfile"
	printf 'host all all all %s\n' "$method" >>"$PGDATA/pg_hba.conf"
	pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
	if [ "$db" != postgres ]; then
		psql -v ON_ERROR_STOP=1 -U "$user" -d postgres -c "CREATE DATABASE \"$db\"" >/dev/null
	fi
	pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
	echo "postgres: initialised $PGDATA (user $user, database $db)"
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
