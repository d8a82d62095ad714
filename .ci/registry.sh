#!/usr/bin/env bash
# Local OCI registry for image-pin checks (Debian docker-registry, loopback only, no auth).
# Idempotent: installs the package if missing, starts one registry on a free 127.0.0.1 port,
# prints its URL. A second call prints the running registry's URL.
#   .ci/registry.sh [start]   install if needed, start, print URL (http://127.0.0.1:PORT)
#   .ci/registry.sh install   only install the package
#   .ci/registry.sh url       print the running registry's URL (exit 1 if none)
#   .ci/registry.sh stop      stop it (by the PID it recorded)
# State: ${INFX_REGISTRY_DIR:-/tmp/infx-registry}/{config.yml,data/,registry.pid,registry.url,registry.log}
set -euo pipefail
DIR=${INFX_REGISTRY_DIR:-/tmp/infx-registry}
BIN=${DOCKER_REGISTRY_BIN:-/usr/bin/docker-registry}
cmd=${1:-start}

install() {
  [ -x "$BIN" ] && return 0
  command -v apt-get >/dev/null || { echo "registry.sh: $BIN missing and no apt-get" >&2; return 1; }
  export DEBIAN_FRONTEND=noninteractive
  # policy-rc.d keeps the package's service from starting (its default config listens on :5000 with auth)
  apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends docker-registry >/dev/null 2>&1 \
    || { apt-get -o DPkg::Lock::Timeout=300 update -qq && \
         apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends docker-registry >/dev/null; }
  [ -x "$BIN" ]
}

alive() {
  [ -s "$DIR/registry.pid" ] && [ -s "$DIR/registry.url" ] || return 1
  kill -0 "$(cat "$DIR/registry.pid")" 2>/dev/null || return 1
  curl -sf -o /dev/null "$(cat "$DIR/registry.url")/v2/" 2>/dev/null || python3 - "$(cat "$DIR/registry.url")/v2/" <<'PY'
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=2)
PY
}

case "$cmd" in
  install) install ;;
  url) alive && cat "$DIR/registry.url" ;;
  stop)
    if [ -s "$DIR/registry.pid" ]; then
      pid=$(cat "$DIR/registry.pid")
      kill "$pid" 2>/dev/null && echo "stopped registry $pid" || true
      rm -f "$DIR/registry.pid" "$DIR/registry.url"
    fi ;;
  start)
    if alive; then cat "$DIR/registry.url"; exit 0; fi
    install
    mkdir -p "$DIR/data"
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    cat > "$DIR/config.yml" <<EOC
version: 0.1
log: {level: warn}
storage: {filesystem: {rootdirectory: $DIR/data}, delete: {enabled: true}}
http: {addr: 127.0.0.1:$port}
EOC
    setsid "$BIN" serve "$DIR/config.yml" >"$DIR/registry.log" 2>&1 < /dev/null &
    echo $! > "$DIR/registry.pid"
    echo "http://127.0.0.1:$port" > "$DIR/registry.url"
    for _ in $(seq 1 40); do alive && { cat "$DIR/registry.url"; exit 0; }; sleep 0.25; done
    echo "registry.sh: registry did not answer on 127.0.0.1:$port; log:" >&2
    tail -20 "$DIR/registry.log" >&2
    exit 1 ;;
  *) echo "usage: $0 [start|install|url|stop]" >&2; exit 2 ;;
esac
