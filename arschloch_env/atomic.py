"""Files written whole or not at all: written under a temporary name of their own beside the
target, then renamed over it (one rename is atomic on the same file system)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

_UMASK = os.umask(0)
os.umask(_UMASK)


def temporary_beside(path: Path, suffix: str = ".part") -> tuple[int, Path]:
    """A new empty file ``<name>.<random><suffix>`` in ``path``'s directory, opened (its file
    descriptor) and named. The name is this writer's alone: two processes writing one target
    each write their own file, and the last rename wins whole, where a shared name would mix
    their lines and leave one of them nothing to rename."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{path.name}.", suffix=suffix)
    os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; the target is for everyone
    return fd, Path(tmp)
