"""Directories made for one writer, files written whole or not at all, and the JSON files a
run keeps."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

from arschloch_env.atomic import output_file, temporary_beside
from arschloch_env.unique_keys import load_json
from train.config import ConfigError


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


def write_atomic(path: str | Path, data: bytes | str) -> None:
    """Writes ``path`` whole or not at all: into ``<name>.<random>.part`` beside it, flushed to
    the disk, then renamed over it. A killed writer leaves at most that ``.part`` file (a run
    removes its own when it starts again), never a half-written ``path``."""
    path = output_file(path)
    fd, tmp = temporary_beside(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json_atomic(path: Path, data: Any) -> None:
    write_atomic(path, json.dumps(data, indent=2) + "\n")


def read_run_json(path: Path) -> dict[str, Any]:
    """A JSON object a run wrote (``latest.json``, a checkpoint's metadata).

    Raises:
        ConfigError: the file is missing or damaged, named.
    """
    try:
        data = load_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        raise ConfigError(f"{path} cannot be read: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} is damaged: it holds no JSON object")
    return data


def read_latest(run_dir: str | Path) -> dict[str, Any]:
    """A run's ``latest.json``: its last checkpoint and metadata (paths in the run) and steps.

    Raises:
        ConfigError: the file is missing or damaged, named.
    """
    path = Path(run_dir) / "latest.json"
    latest = read_run_json(path)
    types = {"checkpoint": str, "meta": str, "steps": int}
    wrong = [k for k, t in types.items() if not isinstance(latest.get(k), t)]
    if wrong:
        raise ConfigError(f"{path} is damaged: {', '.join(wrong)} missing or of the wrong type "
                          f"(expected checkpoint and meta paths and the steps)")
    gone = [latest[k] for k in ("checkpoint", "meta") if not (Path(run_dir) / latest[k]).is_file()]
    if gone:
        raise ConfigError(f"{path} is damaged: it names {', '.join(gone)}, which the run does "
                          f"not hold")
    return latest
