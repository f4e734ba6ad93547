#!/usr/bin/env bash
# Set up the robot_dynamics environment on a fresh Debian 12 machine (Python 3.11):
# a venv at $VENV (default .venv) with the pinned ROS 2 Kilted wheels, the core
# dependencies, optionally the test dependencies, and this package installed
# (non-editable, so launch/, urdf/ and config/ land in <venv>/share/robot_dynamics).
#   scripts/setup_env.sh          # runtime only
#   scripts/setup_env.sh --test   # + pytest, hypothesis, pin (Pinocchio oracle)
#   --no-warmup                   # skip compiling the installed package's kernels (the test
#                                 # suite runs the source tree and warms that one itself)
# WARMUP_ROBOTS="five_bar ..."    # compile only these robots' kernels (default: every robot);
#                                 # `robot-dynamics warmup` compiles the others later
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
WITH_TEST=0
WARMUP=1
for a in "$@"; do
  case "$a" in
    --test) WITH_TEST=1 ;;
    --no-warmup) WARMUP=0 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "setup_env.sh: unknown argument $a" >&2; exit 2 ;;
  esac
done
# System packages (only what pip cannot provide); harmless when already present.
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq python3-venv python3-dev g++ >/dev/null
  else sudo apt-get update -qq && sudo apt-get install -y -qq python3-venv python3-dev g++ >/dev/null; fi
fi
# Offscreen OpenGL for the demo videos (robot_dynamics.tools.video, MUJOCO_GL=egl): libglvnd's
# EGL and OpenGL, with Mesa's EGL and its software (llvmpipe) driver for machines without a GPU
GL_MISSING=()
if command -v dpkg-query >/dev/null; then
  for p in libegl1 libopengl0 libgl1-mesa-dri; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || GL_MISSING+=("$p")
  done
fi
if [ "${#GL_MISSING[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq "${GL_MISSING[@]}" >/dev/null
  else sudo apt-get update -qq && sudo apt-get install -y -qq "${GL_MISSING[@]}" >/dev/null; fi
fi
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
PY="$VENV/bin/python"
VENV_ABS=$(cd "$VENV" && pwd)
"$PY" -m pip install -q --upgrade pip==26.3 2> >(grep -v "is ignored: it is neither" >&2) >/dev/null
REQS=(-r requirements/core.txt -r requirements/ros.txt)
[ "$WITH_TEST" = 1 ] && REQS+=(-r requirements/test.txt)
# uv resolves and installs the pinned wheels in parallel (pip needs minutes for the same set);
# the filter drops pip's notices about absent local find-links mirrors
"$PY" -m pip install -q uv==0.9.5 2> >(grep -v "is ignored: it is neither" >&2)
"$VENV/bin/uv" pip install -q --python "$PY" "${REQS[@]}"
"$PY" -m pip install -q --no-deps --force-reinstall . 2> >(grep -v -e "is ignored: it is neither" -e BuildBackendWarning -e "warnings.warn" >&2) >/dev/null
# compile the numerical kernels once (cached in the installed package), so nodes start fast
# shellcheck disable=SC2086  # (a list of robot names)
[ "$WARMUP" = 1 ] && (cd /tmp && "$VENV_ABS/bin/robot-dynamics" warmup ${WARMUP_ROBOTS:-} --jobs 2)
echo "robot_dynamics environment ready in $VENV"
