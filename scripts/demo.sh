#!/usr/bin/env bash
# Set up the environment (fresh Debian 12, Python 3.11) and run the default demo.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
# the set-up compiles the kernels of the demo's robot (the first argument unless it is an option)
ROBOT=five_bar
[ "$#" -gt 0 ] && [ "${1#-}" = "$1" ] && ROBOT=$1
WARMUP_ROBOTS=$ROBOT scripts/setup_env.sh
# The demo and its nodes run the INSTALLED package (whose kernels the set-up's warmup compiled),
# not this source tree: the console script does not put the working directory on sys.path, and
# the launcher starts the nodes with `python -P` in a neutral working directory.
exec "$VENV/bin/robot-dynamics" demo "$@"
