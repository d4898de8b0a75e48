#!/usr/bin/env bash
# Creates (or reuses) the project's virtual environment and installs the project into it.
# Sourced by the other scripts; safe to run again: it reinstalls only when pyproject.toml changed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${ARSCHLOCH_VENV:-$ROOT/.venv}"
PY="${PYTHON:-python3}"

# No python there, or one without pip (a creation cut short, or ensurepip missing at the time):
# creating it again completes it and keeps what is installed.
if ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
  "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
    echo "arschloch needs Python 3.11 or newer; set PYTHON=/path/to/python3.11" >&2; exit 1; }
  echo "creating virtual environment in $VENV" >&2
  "$PY" -m venv "$VENV"
fi
# One made earlier by an older Python would fail later, in pip's resolver or at import.
"$VENV/bin/python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
  echo "arschloch needs Python 3.11 or newer; $VENV holds $("$VENV/bin/python" -V 2>&1):" \
    "remove it (rm -r $VENV) to make it anew, or set ARSCHLOCH_VENV to another folder" >&2
  exit 1; }
stamp="$VENV/.arschloch-installed"
want="$(sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "installing arschloch and its dependencies into $VENV (first run takes a few minutes)" >&2
  install_failed() {
    echo "arschloch: installing into $VENV failed (pip's message above). 'from versions:" \
      "none' most likely means no package index could be reached: the install needs PyPI (or" \
      "PIP_INDEX_URL) and, for CPU torch, PyTorch's CPU index (or TORCH_INDEX); run this" \
      "again once they can be reached" >&2
    exit 1
  }
  "$VENV/bin/python" -m pip install -q --upgrade pip || install_failed
  # CPU torch first, so that nothing below pulls a multi-GB CUDA build. On Linux, PyPI's torch
  # is the CUDA build; PyTorch's CPU index offers the same release as 2.13.0+cpu, which pip
  # prefers. Where that index cannot be reached, pip warns and takes torch from the usual ones.
  "$VENV/bin/python" -c 'import torch' 2>/dev/null || \
    "$VENV/bin/python" -m pip install -q --retries 1 "${TORCH_SPEC:-torch==2.13.0}" \
      --extra-index-url "${TORCH_INDEX:-https://download.pytorch.org/whl/cpu}" || install_failed
  "$VENV/bin/python" -m pip install -q -e "$ROOT[train,dev]" || install_failed
  echo "$want" > "$stamp"
fi
export PATH="$VENV/bin:$PATH"
