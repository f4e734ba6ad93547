#!/usr/bin/env bash
# Set up the environment (with test dependencies) and run the full test suite.
# Without arguments: first every test that may share the machine (CPU-bound core tests and the
# lock-step ROS graphs, deterministic under load) on both cores with pytest-xdist, then the
# `serial` ones (real-time graphs, launcher and executor deadlines, start-up timings) one at a
# time with nothing else running (test/conftest.py says which are which). With arguments: pytest
# with those arguments, one test at a time.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
# (no warm-up of the installed package: the tests run the source tree, warmed below)
scripts/setup_env.sh --test --no-warmup
if [ "$#" -gt 0 ]; then
    exec "$VENV/bin/python" -m pytest "$@"
fi
JOBS=${TEST_JOBS:-2}
# the tests run the SOURCE tree (test/conftest.py), whose kernel cache is not the installed
# package's that set-up warmed: fill it first, in parallel (pytest-xdist workers would each
# compile the same kernels)
"$VENV/bin/python" -m robot_dynamics.tools.cli warmup --jobs "$JOBS"
rc=0
"$VENV/bin/python" -m pytest -m "not serial" -n "$JOBS" || rc=$?
"$VENV/bin/python" -m pytest -m serial || rc=$((rc ? rc : $?))
exit "$rc"
