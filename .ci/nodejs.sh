#!/usr/bin/env bash
# Install Debian's nodejs and npm: the recipe tests run the upstream vLLM recipes renderer
# (shared/compat/vllm-recipes/oracle/command-synthesis.js) under node, with js-yaml from npm (the tests
# install js-yaml themselves into ~/.cache/infx/node-js-yaml). Idempotent: does nothing when both exist.
set -euo pipefail
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  echo "[ci] nodejs: $(node --version), npm $(npm --version)"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends nodejs npm >/dev/null
echo "[ci] nodejs: $(node --version), npm $(npm --version)"
