#!/usr/bin/env bash
# Install Debian's headless-capable Chromium (and chromium-driver, which the Selenium browser tests drive) for the
# dashboard browser tests and `infx report --png`.
# Idempotent: does nothing when /usr/bin/chromium already runs.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && chromium --version >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  echo "[ci] chromium: $(chromium --version)"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=900 update -qq
$SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends chromium chromium-driver fonts-dejavu-core >/dev/null
echo "[ci] chromium: $(chromium --version)"
