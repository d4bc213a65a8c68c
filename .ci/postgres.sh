#!/usr/bin/env bash
# Start a local PostgreSQL for kuuki's store tests (Debian, run as root).
#
#   eval "$(bash .ci/postgres.sh)"
#
# On success the only thing written to stdout is
#   export KUUKI_TEST_POSTGRES_URL=postgresql://kuuki:kuuki@127.0.0.1:<port>/kuuki
# Everything else goes to stderr. On any failure it explains on stderr and exits 0 without
# the export; the PostgreSQL test cases then skip, saying why (under CI=true they fail).
# Safe to run repeatedly: every step checks before it acts.
#
# Environment knobs: PG_WANTED_VERSION (default 15; else the newest installed is used),
# KUUKI_PG_FORCE_INITDB=1 to skip the Debian cluster and run a private server in
# KUUKI_PG_FALLBACK_DIR on KUUKI_PG_FALLBACK_PORT (used automatically if pg_ctlcluster fails).

set -u

PG_WANTED_VERSION="${PG_WANTED_VERSION:-15}"
ROLE="kuuki"
PASSWORD="kuuki"
DATABASE="kuuki"
FALLBACK_DIR="${KUUKI_PG_FALLBACK_DIR:-/tmp/kuuki-postgres}"

log() { echo "postgres.sh: $*" >&2; }
fail() {
    log "FAILED: $*"
    log "PostgreSQL tests will be skipped (under CI=true: fail, saying why)."
    exit 0
}

# psql/createdb run as the postgres user; cd somewhere it can read to avoid cwd warnings.
cd /tmp || fail "cannot cd to /tmp"

as_postgres() {
    if command -v runuser >/dev/null 2>&1; then
        runuser -u postgres -- "$@"
    else
        su postgres -s /bin/sh -c "$(printf '%q ' "$@")"
    fi
}

[ "$(id -u)" -eq 0 ] || fail "must run as root (uses apt-get and the postgres account)"

pg_bin_dir() {
    # Prefer the wanted major version, else the newest one installed.
    if [ -x "/usr/lib/postgresql/${PG_WANTED_VERSION}/bin/postgres" ]; then
        echo "/usr/lib/postgresql/${PG_WANTED_VERSION}/bin"
        return 0
    fi
    local newest
    newest="$(ls /usr/lib/postgresql 2>/dev/null | sort -V | tail -n 1)"
    if [ -n "$newest" ] && [ -x "/usr/lib/postgresql/${newest}/bin/postgres" ]; then
        echo "/usr/lib/postgresql/${newest}/bin"
        return 0
    fi
    return 1
}

# --- 1. install ------------------------------------------------------------------------------
if ! BIN="$(pg_bin_dir)"; then
    log "PostgreSQL not installed; installing with apt-get"
    command -v apt-get >/dev/null 2>&1 || fail "no apt-get (not a Debian machine?)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2 || fail "apt-get update failed"
    apt-get install -y -qq postgresql >&2 || fail "apt-get install postgresql failed"
    BIN="$(pg_bin_dir)" || fail "postgresql installed but no server binary found"
fi
VERSION="$(basename "$(dirname "$BIN")")"
log "using PostgreSQL ${VERSION} (${BIN})"

PORT=""

wait_ready() {
    local i
    for i in $(seq 1 30); do
        if "$BIN/pg_isready" -q -h 127.0.0.1 -p "$1"; then
            return 0
        fi
        sleep 1
    done
    return 1
}

# --- 2. start a server -----------------------------------------------------------------------
start_with_pg_ctlcluster() {
    command -v pg_ctlcluster >/dev/null 2>&1 || return 1
    if ! pg_lsclusters -h 2>/dev/null | awk -v v="$VERSION" '$1 == v && $2 == "main"' | grep -q .; then
        log "creating cluster ${VERSION}/main"
        pg_createcluster "$VERSION" main >&2 || return 1
    fi
    PORT="$(pg_lsclusters -h | awk -v v="$VERSION" '$1 == v && $2 == "main" {print $3}')"
    if pg_lsclusters -h | awk -v v="$VERSION" '$1 == v && $2 == "main" {print $4}' | grep -q online; then
        log "cluster ${VERSION}/main already running on port ${PORT}"
    else
        log "starting cluster ${VERSION}/main on port ${PORT}"
        pg_ctlcluster "$VERSION" main start >&2 || return 1
    fi
    wait_ready "$PORT"
}

start_with_initdb() {
    # Fallback when the Debian cluster tooling is unusable: a private data dir in /tmp.
    PORT="${KUUKI_PG_FALLBACK_PORT:-5432}"
    if "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT"; then
        log "a server already answers on port ${PORT}"
        return 0
    fi
    if [ ! -s "$FALLBACK_DIR/PG_VERSION" ]; then
        log "initdb into ${FALLBACK_DIR}"
        mkdir -p "$FALLBACK_DIR" && chown postgres:postgres "$FALLBACK_DIR" || return 1
        as_postgres "$BIN/initdb" -D "$FALLBACK_DIR" -U postgres --auth-local=peer \
            --auth-host=scram-sha-256 >&2 || return 1
    fi
    as_postgres "$BIN/pg_ctl" -D "$FALLBACK_DIR" -l "$FALLBACK_DIR/server.log" -w \
        -o "-p ${PORT} -k /tmp -c listen_addresses=127.0.0.1" start >&2 || return 1
    wait_ready "$PORT"
}

if [ "${KUUKI_PG_FORCE_INITDB:-0}" = 1 ]; then
    start_with_initdb || fail "could not start a PostgreSQL server"
elif ! start_with_pg_ctlcluster; then
    log "pg_ctlcluster route failed; trying a private initdb cluster"
    start_with_initdb || fail "could not start a PostgreSQL server"
fi
[ -n "$PORT" ] || fail "could not determine the server port"

# --- 3. role and database --------------------------------------------------------------------
PSQL=("$BIN/psql" -X -q -v ON_ERROR_STOP=1 -p "$PORT")
# Local socket first (peer auth as postgres); the fallback cluster puts its socket in /tmp.
if as_postgres "${PSQL[@]}" -d postgres -c 'select 1' >/dev/null 2>&1; then
    PSQL_ADMIN=("${PSQL[@]}")
else
    PSQL_ADMIN=("${PSQL[@]}" -h /tmp)
fi

as_postgres "${PSQL_ADMIN[@]}" -d postgres >&2 <<SQL || fail "could not create role ${ROLE}"
DO \$\$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${ROLE}') THEN
        CREATE ROLE ${ROLE} LOGIN CREATEDB PASSWORD '${PASSWORD}';
    ELSE
        ALTER ROLE ${ROLE} LOGIN CREATEDB PASSWORD '${PASSWORD}';
    END IF;
END
\$\$;
SQL

if ! as_postgres "${PSQL_ADMIN[@]}" -d postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname = '${DATABASE}'" | grep -q 1; then
    as_postgres "${PSQL_ADMIN[@]}" -d postgres -c "CREATE DATABASE ${DATABASE} OWNER ${ROLE}" >&2 \
        || fail "could not create database ${DATABASE}"
fi

# --- 4. prove the URL works over TCP with the password ---------------------------------------
if ! PGPASSWORD="$PASSWORD" "$BIN/psql" -X -q -h 127.0.0.1 -p "$PORT" -U "$ROLE" -d "$DATABASE" \
    -tAc 'select 1' >/dev/null 2>&1; then
    fail "server is up but ${ROLE}@127.0.0.1:${PORT}/${DATABASE} cannot log in (check pg_hba.conf)"
fi

log "ready"
echo "export KUUKI_TEST_POSTGRES_URL=postgresql://${ROLE}:${PASSWORD}@127.0.0.1:${PORT}/${DATABASE}"
