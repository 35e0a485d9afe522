#!/usr/bin/env bash
# Make sure a Redis server answers on 127.0.0.1:6379 (or $SORRYLESS_REDIS_PORT).
# Starts Debian's redis-server (installing it with apt-get when missing) when none answers.
# Idempotent: when Redis already answers it returns at once.
set -euo pipefail

HOST=127.0.0.1
PORT="${SORRYLESS_REDIS_PORT:-6379}"

redis_answers() (
  # PING over bash's /dev/tcp, so redis-cli is not needed (a subshell: the fd and the
  # stderr redirection stay local).
  reply=""
  exec 2>/dev/null
  exec 3<>"/dev/tcp/${HOST}/${PORT}" || exit 1
  printf 'PING\r\n' >&3
  IFS= read -r -t 2 reply <&3 || true
  [[ "$reply" == +PONG* ]]
)

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

if redis_answers; then
  echo "redis: answering on ${HOST}:${PORT}"
  exit 0
fi

if ! command -v redis-server >/dev/null 2>&1; then
  echo "redis: no server answers and redis-server is not installed; installing Debian's redis-server"
  apt_install redis-server || { echo "redis: could not install redis-server (need apt-get and root/sudo)" >&2; exit 1; }
fi

echo "redis: starting redis-server on ${HOST}:${PORT}"
# A development Redis: no append-only file, so a Redis restart loses queued jobs and GET /health
# lists a persistence warning. Deployments run --appendonly yes (README, Deployment).
redis-server --daemonize yes --bind "$HOST" --port "$PORT" --save "" --appendonly no >/dev/null

for _ in $(seq 1 50); do
  if redis_answers; then
    echo "redis: answering on ${HOST}:${PORT}"
    exit 0
  fi
  sleep 0.2
done
echo "redis: redis-server did not answer on ${HOST}:${PORT} within 10 s" >&2
exit 1
