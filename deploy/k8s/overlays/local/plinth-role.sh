#!/bin/sh
# Gives the services the role they connect as, plinth, as `make up` does
# (deploy/internal/launcher/pgrole.go): it may log in and owns the database plinth, nothing
# more — not a superuser, no CREATEROLE or CREATEDB — and other roles may not connect to
# plinth. Run at every start with the postgres:15 image's psql, over TCP (PGHOST) as the
# superuser, by docker-compose.yaml's one-shot postgres-roles and by the sidecar of
# postgres.yaml here. Both mount the superuser's password at
# /run/secrets/postgres-admin/password and the services' pgpass line (*:*:*:plinth:PASSWORD)
# at /run/secrets/postgres/pgpass.
set -eu
umask 077
admin="$(cat /run/secrets/postgres-admin/password)"
printf '*:*:*:postgres:%s\n' "$admin" >/tmp/pgpass
export PGPASSFILE=/tmp/pgpass
# psql's \getenv: the password is in no process's arguments.
PLINTH_DB_PASSWORD="$(cut -d: -f5 /run/secrets/postgres/pgpass)"
export PLINTH_DB_PASSWORD
: "${PGHOST:?set PGHOST to the server}"
psql -U postgres -d postgres -w -q -v ON_ERROR_STOP=1 <<'SQL'
\getenv pw PLINTH_DB_PASSWORD
SELECT 'CREATE ROLE plinth' WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'plinth') \gexec
ALTER ROLE plinth LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD :'pw';
SELECT 'CREATE DATABASE plinth OWNER plinth' WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'plinth') \gexec
ALTER DATABASE plinth OWNER TO plinth;
REVOKE ALL ON DATABASE plinth FROM PUBLIC;
SQL
rm -f /tmp/pgpass
echo "plinth-role: the services' role plinth (not a superuser) owns the database plinth"
