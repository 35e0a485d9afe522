# Shell helpers shared by scripts/bootstrap.sh and scripts/ensure_redis.sh (sourced, not run).

# Run "$@" as root: directly when we are root, through password-less sudo otherwise; fails when neither.
as_root() {
  if [[ "$(id -u)" == "0" ]]; then "$@";
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo "$@";
  else return 1; fi
}

# Install Debian packages quietly; runs `apt-get update` once only when the first try fails.
apt_install() {
  command -v apt-get >/dev/null 2>&1 || return 1
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get install -y -q "$@" >/dev/null 2>&1 \
    || { as_root apt-get update -q >/dev/null 2>&1 && as_root apt-get install -y -q "$@" >/dev/null 2>&1; }
}
