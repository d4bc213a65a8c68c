#!/usr/bin/env bash
# Start a local RabbitMQ for kuuki's scale-out tests (Debian, run as root).
#
#   eval "$(bash .ci/rabbitmq.sh)"
#
# On success the only thing written to stdout is
#   export KUUKI_TEST_AMQP_URL=amqp://kuuki:kuuki@127.0.0.1:5672/
# Everything else goes to stderr. On any failure it explains on stderr and exits 0 without
# the export; the scale-out tests then skip, saying why (under CI=true they fail).
# Safe to run repeatedly: every step checks before it acts.

set -u
log() { echo "rabbitmq.sh: $*" >&2; }
fail() {
    log "FAILED: $*"
    log "scale-out tests will be skipped (under CI=true: fail, saying why)."
    exit 0
}

[ "$(id -u)" -eq 0 ] || fail "must run as root (uses apt-get and rabbitmqctl)"
cd /tmp || fail "cannot cd to /tmp"

if ! command -v rabbitmq-server >/dev/null 2>&1; then
    log "installing rabbitmq-server from Debian's packages"
    apt-get update -qq >/dev/null 2>&1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rabbitmq-server >/dev/null 2>&1 \
        || fail "apt-get install rabbitmq-server failed"
fi
# The consistent-hash exchange ships with the server; enable it (offline works either way).
rabbitmq-plugins enable --offline rabbitmq_consistent_hash_exchange >/dev/null 2>&1 \
    || fail "cannot enable rabbitmq_consistent_hash_exchange"

if ! rabbitmqctl -q status >/dev/null 2>&1; then
    log "starting rabbitmq-server"
    # Debian's package may have started it through the service manager (absent in
    # containers); -detached needs no init system.
    rabbitmq-server -detached >/dev/null 2>&1 || fail "rabbitmq-server -detached failed"
fi
# `rabbitmqctl await_startup` fails at once while the node is not yet reachable (the first
# seconds after -detached), so poll it until it answers, with a real deadline.
deadline=$(( $(date +%s) + 120 ))
until timeout 30 rabbitmqctl -q await_startup >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "RabbitMQ did not start in 120 s (see /var/log/rabbitmq/)"
    sleep 1
done
rabbitmq-plugins -q is_enabled rabbitmq_consistent_hash_exchange >/dev/null 2>&1 \
    || rabbitmq-plugins enable rabbitmq_consistent_hash_exchange >/dev/null 2>&1 \
    || fail "the consistent-hash exchange plugin is not enabled"

if ! rabbitmqctl -q list_users 2>/dev/null | grep -q '^kuuki\b'; then
    rabbitmqctl -q add_user kuuki kuuki >/dev/null 2>&1 || fail "cannot add user kuuki"
fi
# administrator: the tests make a virtual host each, so none sees another's queues
rabbitmqctl -q set_user_tags kuuki administrator >/dev/null 2>&1 || fail "cannot tag user kuuki"
rabbitmqctl -q set_permissions -p / kuuki '.*' '.*' '.*' >/dev/null 2>&1 \
    || fail "cannot grant kuuki the default virtual host"
log "RabbitMQ ready on 127.0.0.1:5672"
echo "export KUUKI_TEST_AMQP_URL=amqp://kuuki:kuuki@127.0.0.1:5672/"
