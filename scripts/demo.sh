#!/usr/bin/env bash
# The main job: a short demo of the kit from a fresh checkout.
set -euo pipefail
for arg in "$@"; do
  case "$arg" in -h|--help)  # the help needs Python alone, not the first run's install
    cd "$(dirname "${BASH_SOURCE[0]}")/.." && exec "${PYTHON:-python3}" -m train.demo "$@";;
  esac
done
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
exec python -m train.demo "$@"
