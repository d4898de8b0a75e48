"""Directories made for one writer."""

from __future__ import annotations

import itertools
from pathlib import Path


def fresh_directory(path: str | Path) -> Path:
    """``path``, or ``path-2``, ``path-3`` ...: the first that does not exist yet, made now.

    Made exclusively, so that two processes that ask for the same name (runs started in the
    same second, named after it) never write into one directory."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for i in itertools.count(1):
        candidate = path if i == 1 else path.with_name(f"{path.name}-{i}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return candidate
