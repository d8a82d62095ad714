#!/usr/bin/env bash
# Install and start the real services the slow tests use. Each block is idempotent.
set -euo pipefail
echo "[ci] services: nothing to start yet"
