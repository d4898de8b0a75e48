"""Game records as JSON Lines (INTERFACES.md "Game records"), written atomically.

A writer streams whole matches into ``<name>.<random>.part`` beside the target and renames it
to the target on close, so a crash never leaves a half-written record behind the final name,
and an interrupted run that is closed normally keeps every match that finished. A run in which
no match finished leaves no file at all: an empty record is no game record. ``--record``
replaces an earlier record or an empty file, never a file of another kind. A record that
another writer is still writing is refused (on POSIX, where a writer holds its temporary
locked): the last to close would replace the other's matches, as when every worker of a
vector env is given one record path. A writer that was killed leaves its temporary, which the
next writer of that record removes.
"""

from __future__ import annotations

import glob
import json
import os
import time
import weakref
from pathlib import Path
from typing import Iterator

from arschloch_env.atomic import output_file, temporary_beside
from arschloch_env.unique_keys import load_json

try:
    import fcntl
except ImportError:  # not POSIX
    fcntl = None


class RecordError(ValueError):
    """A record file that is not valid JSON Lines of game events."""


def check_record_path(path: str | os.PathLike) -> Path:
    """The path of a record to write, refused when it names a directory or a file that holds
    something else than a game record (a config, a bundle's file), which writing the record
    would replace (commands check it before any game, the writer again when it opens the file).

    Through a symbolic link it is the file linked to that the record replaces.

    Raises:
        ValueError: ``path`` is empty, an existing directory, a device or a named pipe, or a
            file whose first line is not a record's ``match`` event.
    """
    if not os.fspath(path).strip():  # Path("") is "."
        raise ValueError("record path is empty; give a file name, e.g. games.jsonl")
    try:
        path = output_file(path)
    except ValueError as exc:
        raise ValueError(f"record path {exc} (leave --record out to keep no record)") from None
    if path.is_dir():
        raise ValueError(f"record path {str(path)!r} is a directory; give a file name")
    if path.is_file() and not _holds_a_record(path):
        raise ValueError(f"record path {str(path)!r} is a file that holds no game record, "
                         f"which the record would replace; give another name (a record it "
                         f"may replace begins with a match event)")
    return path


def _holds_a_record(path: Path) -> bool:
    """Empty, or its first line a ``match`` event: a record the next one may replace."""
    if path.stat().st_size == 0:
        return True
    with open(path, "rb") as fh:
        first = fh.readline(1 << 20)
    try:
        event = load_json(first)
    except ValueError:
        return False
    return isinstance(event, dict) and event.get("event") == "match"


ABANDONED_AFTER_S = 60
"""A temporary of a record this old that no writer holds was left by a killed one."""


def _check_no_live_writer(path: Path) -> None:
    """Refuses the record ``path`` while another writer writes it (holds its temporary
    locked), and removes the temporaries left by writers that were killed (a crash, SIGKILL):
    old ones that nobody holds. A young unlocked one may be a writer's that has not locked it
    yet, and stays.

    Raises:
        ValueError: a live writer (in this process or another) writes ``path``.
    """
    if fcntl is None:  # not POSIX: left for the user
        return
    # mkstemp's 8 random characters: not the temporaries of "<name>.old" and the like
    for tmp in path.parent.glob(f"{glob.escape(path.name)}.{'?' * 8}.part"):
        try:
            with open(tmp, "rb") as fh:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise ValueError(
                        f"record path {str(path)!r} is being written by another writer (a "
                        f"run, an env or a game; its matches are in {tmp.name}), whose "
                        f"matches this one would replace; give each its own file, or close "
                        f"that one first") from None
                if time.time() - tmp.stat().st_mtime >= ABANDONED_AFTER_S:
                    tmp.unlink()
        except OSError:  # renamed or removed meanwhile, or not ours to read
            continue


class RecordWriter:
    """Writes matches (lists of events) to a JSON Lines file, atomically per file."""

    def __init__(self, path: str | os.PathLike):
        self.path = check_record_path(path)
        # the folders made for it, deepest first: a record that gets no match leaves none
        self._made = [d for d in (self.path.parent, *self.path.parent.parents)
                      if not d.exists()]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _check_no_live_writer(self.path)
        fd, self.tmp = temporary_beside(self.path)
        if fcntl is not None:  # held while this writer lives: its file is not abandoned
            # blocking: another writer's check may hold it for a moment (no one holds it long)
            fcntl.flock(fd, fcntl.LOCK_EX)
        self._fh = os.fdopen(fd, "wb", buffering=0)  # no buffer: what write() took is there
        self._size = 0  # of the whole matches written
        self._whole = True  # False after a match that could be neither written nor cut off
        self.matches = 0

    def close_with(self, owner: object) -> "RecordWriter":
        """Closes the file when ``owner`` (the env or game writing it) is garbage-collected or
        the interpreter exits, so that its finished matches reach the file's name even without
        an explicit ``close()``."""
        weakref.finalize(owner, self.close)
        return self

    def __reduce_ex__(self, protocol):
        raise TypeError(f"the record writer of {str(self.path)!r} cannot be copied or pickled "
                        f"(two copies would write one file); copy an env made without "
                        f"record_path")

    def write_match(self, events: list[dict]) -> None:
        """Appends one whole match; the lines reach the disk before the next match starts. A
        write that fails part-way (a full disk) is cut back off before the error goes on: the
        file holds whole matches only."""
        data = "".join(json.dumps(e, separators=(", ", ": ")) + "\n" for e in events).encode()
        try:
            view = memoryview(data)
            while view:
                view = view[self._fh.write(view):]
        except BaseException:
            self._whole = False  # until the part written is cut off
            self._fh.truncate(self._size)
            self._fh.seek(self._size)
            self._whole = True
            raise
        self._size += len(data)
        self.matches += 1

    def close(self) -> None:
        """Makes the file appear under its final name (also after an interrupted or failed
        run: it holds whole matches only), or, when no match was written (or one could be
        neither written whole nor cut off), removes the ``.part`` file and the folders made for
        it, and leaves the target as it was."""
        if self._fh.closed:
            return
        try:
            os.fsync(self._fh.fileno())
        finally:
            self._fh.close()
        if self.matches and self._whole:
            os.replace(self.tmp, self.path)
            return
        self.tmp.unlink(missing_ok=True)
        for folder in self._made:
            try:
                folder.rmdir()
            except OSError:  # something else was written there meanwhile
                break

    def close_after(self, exc: BaseException) -> None:
        """:meth:`close` after a failure (or a person leaving), with a note on ``exc`` of what
        the file now holds: the whole matches finished before (a record that was cut short
        looks complete)."""
        self.close()
        exc.add_note(f"record: {str(self.path)!r} left as it was (a match could be neither "
                     f"written whole nor cut off)" if not self._whole else
                     f"record: {str(self.path)!r} holds the {self.matches} match(es) finished "
                     f"before it stopped" if self.matches else
                     f"record: none written to {str(self.path)!r} (no match finished)")

    def __enter__(self) -> "RecordWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc is None or isinstance(exc, KeyboardInterrupt):
            self.close()
        else:
            self.close_after(exc)


class RefusesCopyWhileRecording:
    """Mixin of an env whose ``_writer`` is its RecordWriter (or None): while it records, a
    copy of any kind is refused, ``copy.copy`` too, which would not copy the writer but share
    it, and the copy would write into the file after the original's close() finalised it."""

    def __reduce_ex__(self, protocol):
        if self._writer is not None:
            self._writer.__reduce_ex__(protocol)  # raises
        return super().__reduce_ex__(protocol)


def read_events(path: str | os.PathLike) -> Iterator[tuple[int, dict]]:
    """Yields (line number, event) of a record file.

    Raises:
        RecordError: a line that is not a JSON object with an ``event`` field.
    """
    if not os.fspath(path).strip():  # Path("") is "."
        raise RecordError("record file name is empty; give the file to read")
    p = Path(path)
    if p.is_dir() or not p.exists():  # a pipe (/dev/stdin, <(...)) is read like a file
        raise RecordError(f"record file {str(p)!r} " + (
            "is a directory, not a file" if p.is_dir() else "does not exist"))
    # Binary lines, decoded one by one: a file that is not text is reported with its line,
    # not as a decoding traceback.
    with open(p, "rb") as fh:
        for no, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise RecordError(f"{p}:{no}: not UTF-8 text; the file is not a game "
                                  f"record or is corrupt") from None
            if not line.strip():
                raise RecordError(f"{p}:{no}: blank line (records have one event per line)")
            try:
                event = load_json(line)
            except json.JSONDecodeError as exc:
                # a first line that is not JSON: some other file, not a damaged record
                why = ("the file is not a game record (JSON Lines: one event object per line)"
                       if no == 1 else "the file may be truncated or corrupt")
                raise RecordError(f"{p}:{no}: not valid JSON ({exc.msg}); {why}") from None
            except ValueError as exc:  # a key given twice: which one counts is not defined
                raise RecordError(f"{p}:{no}: {exc}") from None
            if not isinstance(event, dict) or not isinstance(event.get("event"), str):
                raise RecordError(f"{p}:{no}: not a game event (a JSON object with an "
                                  f"'event' field)")
            yield no, event


def read_matches(path: str | os.PathLike) -> Iterator[list[tuple[int, dict]]]:
    """Yields each match as a list of (line number, event), from ``match`` to ``match_end``.

    Raises:
        RecordError: malformed lines, events outside a match, or a match without its end.
    """
    current: list[tuple[int, dict]] | None = None
    last_no = 0
    for no, event in read_events(path):
        last_no = no
        if event["event"] == "match":
            if current is not None:
                raise RecordError(f"{path}:{no}: a new match starts before the match of line "
                                  f"{current[0][0]} ended")
            current = [(no, event)]
            continue
        if current is None:
            raise RecordError(f"{path}:{no}: event {event['event']!r} outside a match (the "
                              f"first event of a match is 'match')")
        current.append((no, event))
        if event["event"] == "match_end":
            yield current
            current = None
    if current is not None:
        raise RecordError(f"{path}:{last_no}: the match of line {current[0][0]} has no "
                          f"match_end; the file is truncated")
