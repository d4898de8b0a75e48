"""Argument types and help the benchmarks share: a bad flag is a usage error, not a
traceback, and ``--help`` shows each option's default."""

from __future__ import annotations

import argparse
import math


def at_least(low: int):
    """An argparse type: an integer of at least ``low``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} is not allowed; at least {low}")
        return value
    parse.__name__ = "integer"
    return parse


def duration(text: str) -> float:
    """An argparse type: a length of time above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text} is not allowed; seconds above 0")
    return value


class DefaultsHelp(argparse.HelpFormatter):
    """Help that ends each option's text with its default, where it has one to show (not a
    flag's False, nor an empty list)."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if default in (None, False, [], argparse.SUPPRESS) or "default" in text:
            return text
        shown = " ".join(map(str, default)) if isinstance(default, list) else str(default)
        return f"{text} (default: {shown.replace('%', '%%')})"
