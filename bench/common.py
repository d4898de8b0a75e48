"""Argument types and help the benchmarks share: a bad flag is a usage error, not a
traceback, and ``--help`` shows each option's default."""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys


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


def cpu_model() -> str:
    """The CPU's name as the kernel reports it (``platform.processor()`` is empty on most
    Linux systems), with its family and model where the name leaves them out (AMD EPYC
    generations share one name)."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break  # the first processor's block is enough
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
    except OSError:
        return platform.processor() or platform.machine()
    name = fields.get("model name", platform.machine())
    if "cpu family" in fields and "model" in fields:
        name += f" (family {fields['cpu family']} model {fields['model']})"
    if "flags" in fields:
        wide = [f for f in ("avx2", "avx512f", "avx512_bf16") if f in fields["flags"].split()]
        name += f", {' '.join(wide) or 'no avx2'}"
    return name


def host_line() -> str:
    """One line on what the figures were measured on: a benchmark's figures are worth as much
    as the host beside them (a shared host's speed swings from minute to minute)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    # OpenMP's idle threads spin unless told otherwise, a third faster on idle cores
    omp = os.environ.get("OMP_WAIT_POLICY", "unset")
    return (f"# {cpu_model()}; {cores} of {os.cpu_count()} cores usable; python "
            f"{sys.version.split()[0]}; load average at start {load}; OMP_WAIT_POLICY {omp}")


def pin_to_one_core() -> None:
    """Runs this process on one core (the first it may use), for figures 'on one core'."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
