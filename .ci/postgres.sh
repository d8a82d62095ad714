#!/usr/bin/env bash
# PostgreSQL for the team-store tests (Debian postgresql, loopback only, a throwaway cluster).
# .ci/services.sh installs it and starts the cluster; the tests (tests/pgserver.py) use the running cluster named
# by $DIR/postgres.url, and start one of their own (initdb + pg_ctl on a free port) where none runs, so
# `make test` works outside CI too.
#   .ci/postgres.sh [install]   install Debian's postgresql if initdb/pg_ctl are missing
#   .ci/postgres.sh start       throwaway cluster on a free 127.0.0.1 port (as the postgres user when run as root):
#                               role infx (superuser, trust), database infx, and scram-sha-256 password auth for the
#                               role the tests create for the wrong-credential cases; prints its URL
#                               (postgresql://infx@127.0.0.1:PORT/infx)
#   .ci/postgres.sh url         print the running cluster's URL (exit 1 if none)
#   .ci/postgres.sh stop        stop it (pg_ctl on its data directory) and remove the directory
# State: ${INFX_PG_DIR:-/tmp/infx-postgres}/{data/,server.log,postgres.url}
set -euo pipefail
DIR=${INFX_PG_DIR:-/tmp/infx-postgres}
cmd=${1:-install}

bindir() {
  local d
  if command -v pg_ctl >/dev/null && command -v initdb >/dev/null; then
    dirname "$(readlink -f "$(command -v pg_ctl)")"; return 0
  fi
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV); do
    [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && { echo "$d"; return 0; }
  done
  return 1
}

install() {
  bindir >/dev/null && return 0
  command -v apt-get >/dev/null || { echo "postgres.sh: no PostgreSQL and no apt-get" >&2; return 1; }
  export DEBIAN_FRONTEND=noninteractive
  # policy-rc.d keeps the package from starting its own main cluster as a service: the tests start theirs
  local policy=/usr/sbin/policy-rc.d had_policy=0
  [ -e "$policy" ] && had_policy=1
  [ "$had_policy" = 1 ] || { printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod +x "$policy"; }
  apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends postgresql >/dev/null 2>&1 \
    || { apt-get -o DPkg::Lock::Timeout=300 update -qq && \
         apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends postgresql >/dev/null; }
  [ "$had_policy" = 1 ] || rm -f "$policy"
  bindir >/dev/null
}

as_owner() {  # initdb refuses root: run the cluster as the postgres user
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

alive() {
  [ -s "$DIR/postgres.url" ] && [ -f "$DIR/data/postmaster.pid" ] || return 1
  as_owner "$(bindir)/pg_ctl" -D "$DIR/data" status >/dev/null 2>&1
}

case "$cmd" in
  install) install ;;
  url) alive && cat "$DIR/postgres.url" ;;
  start)
    install
    if alive; then cat "$DIR/postgres.url"; exit 0; fi
    B=$(bindir)
    rm -rf "$DIR"; mkdir -p "$DIR"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$DIR"
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    (cd "$DIR" && as_owner "$B/initdb" -D "$DIR/data" -U infx --auth=trust -E UTF8 --no-sync >/dev/null)
    as_owner sh -c "cat >> '$DIR/data/postgresql.auto.conf'" <<EOC
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$DIR'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 80
password_encryption = 'scram-sha-256'
EOC
    # the tests' password role (tests/pgserver.py SECRET_ROLE) authenticates by password; everyone else by trust
    as_owner sh -c "cat > '$DIR/data/pg_hba.conf'" <<EOC
local all all trust
host all secret 127.0.0.1/32 scram-sha-256
host all all 127.0.0.1/32 trust
EOC
    (cd "$DIR" && as_owner "$B/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 start >/dev/null)
    (cd "$DIR" && as_owner "$B/createdb" -h 127.0.0.1 -p "$port" -U infx infx)
    echo "postgresql://infx@127.0.0.1:$port/infx" > "$DIR/postgres.url.tmp"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$DIR/postgres.url.tmp"
    mv "$DIR/postgres.url.tmp" "$DIR/postgres.url"
    cat "$DIR/postgres.url"
    ;;
  stop)
    if [ -f "$DIR/data/postmaster.pid" ]; then
      (cd "$DIR" && as_owner "$(bindir)/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null) || true
    fi
    rm -rf "$DIR"
    ;;
  *) echo "usage: $0 [install|start|url|stop]" >&2; exit 2 ;;
esac
