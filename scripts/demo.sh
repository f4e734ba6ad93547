#!/usr/bin/env bash
# Set up the environment (fresh Debian 12, Python 3.11) and run the default demo.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
scripts/setup_env.sh
exec "$VENV/bin/robot-dynamics" demo "$@"
