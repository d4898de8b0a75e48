"""The ``arschloch`` console script.

It loads the command line inside a guard: a Ctrl-C while the modules still load (numpy, the
engine, every command's parser: a tenth of a second or more) ends it with one line and exit
status 130, as a Ctrl-C later does, instead of a traceback. So that the guard covers them,
``import arschloch_env`` itself loads nothing (its names load on first use).
"""

from __future__ import annotations

import signal
import sys

EXIT_INTERRUPTED = 130
"""The exit status after Ctrl-C: 128 + SIGINT, as a shell reports a process it stopped."""


def loading_interrupted() -> int:
    print("arschloch: interrupted (Ctrl-C) while starting; nothing was done", file=sys.stderr)
    return EXIT_INTERRUPTED


def main() -> int:
    try:
        from arschloch_env.cli import main as command_line
    except KeyboardInterrupt:
        return loading_interrupted()
    status = command_line()
    # The work is done and reported: a Ctrl-C now would only break the interpreter's shutdown
    # (a traceback from an atexit hook, such as torch's, and the status lost).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return status


if __name__ == "__main__":
    sys.exit(main())
