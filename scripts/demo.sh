#!/usr/bin/env bash
# The main job: a short demo of the kit from a fresh checkout.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
exec python -m train.demo "$@"
