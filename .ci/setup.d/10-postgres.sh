#!/usr/bin/env bash
# PostgreSQL for the tests of tools/sqldb/postgres (and anything else that
# reads BICHAT_TEST_POSTGRES_DSN): installs Debian's postgresql when no
# server answers on 127.0.0.1:5432, starts the cluster without systemd,
# creates the role bichat and the database bichat_test (idempotently), and
# appends the DSN to "$BICHAT_TEST_ENV".
#
# Set BICHAT_TEST_POSTGRES_DSN yourself to use another server; the script
# then only passes it on.
set -euo pipefail

: "${BICHAT_TEST_ENV:?BICHAT_TEST_ENV must name the file that collects test environment lines}"

if [ -n "${BICHAT_TEST_POSTGRES_DSN:-}" ]; then
	echo "BICHAT_TEST_POSTGRES_DSN=$BICHAT_TEST_POSTGRES_DSN" >>"$BICHAT_TEST_ENV"
	exit 0
fi

PGHOST_ADDR=127.0.0.1
PGPORT_NUM=5432
PASSWORD=bichat-test-only
DB=bichat_test

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		SUDO="sudo -n"
	else
		echo "10-postgres: not root and no password-less sudo: cannot install or start PostgreSQL." >&2
		echo "10-postgres: start a server yourself and set BICHAT_TEST_POSTGRES_DSN." >&2
		exit 1
	fi
fi

listening() { (exec 3<>"/dev/tcp/$PGHOST_ADDR/$PGPORT_NUM") 2>/dev/null; }

# as_postgres runs a command as the postgres OS user.
as_postgres() {
	if [ -n "$SUDO" ]; then
		$SUDO -u postgres "$@"
	elif command -v runuser >/dev/null 2>&1; then
		runuser -u postgres -- "$@"
	else
		su postgres -s /bin/sh -c "$(printf '%q ' "$@")"
	fi
}

if ! listening; then
	if ! command -v pg_lsclusters >/dev/null 2>&1 || [ -z "$(ls /usr/lib/postgresql 2>/dev/null)" ]; then
		echo "10-postgres: installing Debian's postgresql" >&2
		$SUDO apt-get update -qq
		$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql postgresql-client >/dev/null
	fi
	VERSION="$(ls /usr/lib/postgresql | sort -V | tail -1)"
	if ! pg_lsclusters -h 2>/dev/null | awk '{print $1" "$2}' | grep -qx "$VERSION main"; then
		$SUDO pg_createcluster "$VERSION" main >/dev/null
	fi
	# Listen on localhost TCP and allow password logins there (the Debian
	# default, made explicit).
	$SUDO pg_conftool "$VERSION" main set listen_addresses localhost >/dev/null 2>&1 || true
	$SUDO pg_conftool "$VERSION" main set port "$PGPORT_NUM" >/dev/null 2>&1 || true
	$SUDO pg_ctlcluster "$VERSION" main start || true
	for _ in $(seq 1 60); do
		listening && break
		sleep 0.5
	done
	if ! listening; then
		echo "10-postgres: PostgreSQL $VERSION did not start; see /var/log/postgresql/postgresql-$VERSION-main.log" >&2
		exit 1
	fi
fi

# The role and database, created once. When the server is not ours
# (no local postgres user), the DSN is still written and the tests report
# what is missing.
if id postgres >/dev/null 2>&1; then
	as_postgres psql -v ON_ERROR_STOP=1 -qAt -d postgres >/dev/null <<SQL
DO \$\$
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'bichat') THEN
		CREATE ROLE bichat LOGIN PASSWORD '$PASSWORD' CREATEROLE;
	ELSE
		ALTER ROLE bichat LOGIN PASSWORD '$PASSWORD' CREATEROLE;
	END IF;
END
\$\$;
SQL
	if [ "$(as_postgres psql -qAt -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" != "1" ]; then
		as_postgres psql -v ON_ERROR_STOP=1 -q -d postgres -c "CREATE DATABASE $DB OWNER bichat" >/dev/null
	fi
	# pg_stat_activity shows other sessions' queries only to their owner
	# or members of pg_read_all_stats; the timeout test reads it.
	PGOPTIONS="-c client_min_messages=warning" as_postgres psql -v ON_ERROR_STOP=1 -q -d postgres -c "GRANT pg_read_all_stats TO bichat" >/dev/null
fi

echo "BICHAT_TEST_POSTGRES_DSN=postgres://bichat:$PASSWORD@$PGHOST_ADDR:$PGPORT_NUM/$DB?sslmode=disable" >>"$BICHAT_TEST_ENV"
