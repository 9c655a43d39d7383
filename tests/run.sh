#!/usr/bin/env bash
# The README's test command: installs everything the tests need on a fresh machine, then runs them.
# Chromium (for the test that renders report.html) comes from Debian's packages, installed only where that
# needs no prompt: as root, or with passwordless sudo. Otherwise this says the one command to run, and the
# browser test is skipped with that reason (in CI, where CI is set, a missing browser fails it instead).
# The Python packages come from PyPI. Arguments go to pytest: `bash tests/run.sh -m "not server"`.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  as_root=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then as_root="sudo -n"; else as_root="none"; fi
  fi
  if [ "$as_root" = none ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "tests/run.sh: Chromium is not installed, and this script installs it only as root or with passwordless" \
      "sudo on Debian; the browser test will be skipped. To run it: sudo apt-get install -y chromium" >&2
  else
    $as_root apt-get update -qq
    $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  fi
fi

python3 -m venv .venv
.venv/bin/pip install -q -e '.[dev]'
# Over two processes (pytest-xdist) where there are two cores, about a quarter less wall time on an idle two-core
# machine. HARNESS_TEST_WORKERS=1 runs it in one process; an -n of your own is left as given.
workers="${HARNESS_TEST_WORKERS:-$(( $(nproc 2>/dev/null || echo 1) >= 2 ? 2 : 1 ))}"
parallel=()
if [ "$workers" -gt 1 ] && [[ " $* " != *" -n "* ]] && [[ " $* " != *" -n="* ]] && [[ "$*" != *"--numprocesses"* ]]; then
  parallel=(-n "$workers")
fi
.venv/bin/python -m pytest "${parallel[@]}" "$@"
