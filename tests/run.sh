#!/usr/bin/env bash
# The README's test command: installs everything the tests need on a fresh machine, then runs them.
# Chromium (for the test that renders report.html) comes from Debian's packages; the rest from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1; then
  as_root=""
  [ "$(id -u)" = 0 ] || as_root="sudo"
  $as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -qq chromium >/dev/null
fi

python3 -m venv .venv
.venv/bin/pip install -q -e '.[dev]'
.venv/bin/python -m pytest "$@"
