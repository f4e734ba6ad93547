#!/usr/bin/env bash
# Set up the environment (with test dependencies) and run the full test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
scripts/setup_env.sh --test
exec "$VENV/bin/python" -m pytest "$@"
