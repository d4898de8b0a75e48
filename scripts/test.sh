#!/usr/bin/env bash
# Runs the test suite (fast tests; `./scripts/test.sh -m slow` runs the long ones).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
exec python -m pytest -n "${PYTEST_WORKERS:-auto}" -q "$@"
