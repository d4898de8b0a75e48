"""Files written whole or not at all: written under a temporary name of their own beside the
target, then renamed over it (one rename is atomic on the same file system)."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

_UMASK = os.umask(0)
os.umask(_UMASK)

_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def output_file(path: str | os.PathLike) -> Path:
    """The file that writing ``path`` replaces: ``path``, or the file a symbolic link there
    points to (the link stays, as an editor keeps it).

    Raises:
        ValueError: it exists and is neither a regular file nor a directory (a device such as
            /dev/null, a named pipe): the rename would replace it with a regular file, not
            write into it. Directories are the caller's to refuse, each with its own advice.
    """
    path = Path(path)
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        mode = target.stat().st_mode
    except OSError:  # not there yet (or a dangling link): the write makes it
        return target
    for is_kind, kind in _KINDS:
        if is_kind(mode):
            raise ValueError(f"{str(path)!r} is {kind}, not a regular file, and writing it "
                             f"would replace it with one; give the name of a file")
    return target


def temporary_beside(path: Path, suffix: str = ".part") -> tuple[int, Path]:
    """A new empty file ``<name>.<random><suffix>`` in ``path``'s directory, opened (its file
    descriptor) and named, with the permissions of the file at ``path`` if there is one (else
    the umask's). The name is this writer's alone: two processes writing one target each write
    their own file, and the last rename wins whole, where a shared name would mix their lines
    and leave one of them nothing to rename."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{path.name}.", suffix=suffix)
    try:
        mode = stat.S_IMODE(path.stat().st_mode)  # a file made private stays private
    except OSError:
        mode = 0o666 & ~_UMASK  # mkstemp makes 0600; a new file is for everyone
    os.chmod(tmp, mode)
    return fd, Path(tmp)
