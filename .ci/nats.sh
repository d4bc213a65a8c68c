#!/usr/bin/env bash
# Start a local NATS server with JetStream for kuuki's broker bench and tests (Debian, as root).
#
#   eval "$(bash .ci/nats.sh)"
#
# On success the only thing written to stdout is
#   export KUUKI_TEST_NATS_URL=nats://127.0.0.1:<port>
# Everything else goes to stderr. On any failure it explains on stderr and exits 0 without
# the export, so the NATS test cases skip (and say why) instead of breaking CI.
# Safe to run repeatedly: a server already answering on the port is reused.
#
# The config carries the deterministic partition mapping `kuuki bench broker` measures
# (NATS subject mapping, `partition(n, wildcard)`): kuuki.bench.<run>.ev.<channel> is stored
# under kuuki.bench.<run>.part.<0..7>.<channel>.
#
# Environment knobs: KUUKI_NATS_PORT (default 4222), KUUKI_NATS_DIR (default /tmp/kuuki-nats:
# config, JetStream store, log and pid file).

set -u

PORT="${KUUKI_NATS_PORT:-4222}"
DIR="${KUUKI_NATS_DIR:-/tmp/kuuki-nats}"

log() { echo "nats.sh: $*" >&2; }
fail() {
    log "FAILED: $*"
    log "NATS tests will be skipped."
    exit 0
}

answers() {
    # A NATS server greets every new connection with an INFO line.
    timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/${PORT} && head -c 4 <&3" 2>/dev/null \
        | grep -q INFO
}

if answers; then
    log "a NATS server already answers on port ${PORT}"
else
    if ! command -v nats-server >/dev/null 2>&1; then
        log "nats-server not installed; installing with apt-get"
        [ "$(id -u)" -eq 0 ] || fail "nats-server missing and not root (cannot apt-get install)"
        command -v apt-get >/dev/null 2>&1 || fail "no apt-get (not a Debian machine?)"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >&2 || fail "apt-get update failed"
        apt-get install -y -qq nats-server >&2 || fail "apt-get install nats-server failed"
    fi
    mkdir -p "$DIR/store" || fail "cannot create ${DIR}"
    cat >"$DIR/nats.conf" <<CONF
listen: 127.0.0.1:${PORT}
jetstream {
    store_dir: "${DIR}/store"
}
mappings = {
    "kuuki.bench.*.ev.*": "kuuki.bench.{{wildcard(1)}}.part.{{partition(8,2)}}.{{wildcard(2)}}"
}
CONF
    nats-server -t -c "$DIR/nats.conf" >&2 || fail "nats-server rejects ${DIR}/nats.conf"
    log "starting nats-server (JetStream, store ${DIR}/store) on port ${PORT}"
    nohup nats-server -c "$DIR/nats.conf" -P "$DIR/nats.pid" -l "$DIR/nats.log" \
        >/dev/null 2>&1 &
    for _ in $(seq 1 20); do
        answers && break
        sleep 0.5
    done
    answers || fail "nats-server did not answer on port ${PORT} (see ${DIR}/nats.log)"
fi

log "ready"
echo "export KUUKI_TEST_NATS_URL=nats://127.0.0.1:${PORT}"
