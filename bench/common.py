"""Argument types the benchmarks share: a bad flag is a usage error, not a traceback."""

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
