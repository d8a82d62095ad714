#!/usr/bin/env bash
# Install Debian's bubblewrap: the sandbox that renders InferenceX-style bash bench scripts.
# Idempotent: does nothing when bwrap already starts a sandbox.
set -euo pipefail
if command -v bwrap >/dev/null 2>&1 && bwrap --ro-bind / / --dev /dev true >/dev/null 2>&1; then
  echo "[ci] bubblewrap: $(bwrap --version)"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends bubblewrap >/dev/null
echo "[ci] bubblewrap: $(bwrap --version)"
