"""Memory a run may still take, for the checks that refuse a run too large for the machine
before it starts."""

from __future__ import annotations

from pathlib import Path

from train.config import ConfigError


def available_memory(meminfo: str = "/proc/meminfo",
                     cgroup: str = "/sys/fs/cgroup") -> int | None:
    """Bytes of memory available now (Linux's ``MemAvailable``, less where the process's
    cgroup, e.g. a container's, allows less), or None where not known."""
    found = []
    try:
        with open(meminfo) as f:
            found += [int(line.split()[1]) * 1024 for line in f
                      if line.startswith("MemAvailable:")]
        limit = Path(cgroup, "memory.max").read_text().strip()
        if limit != "max":
            found.append(int(limit) - int(Path(cgroup, "memory.current").read_text()))
    except (OSError, ValueError, IndexError):
        pass
    return min(found) if found else None


def refuse_unless_it_fits(need: int, what: str, advice: str, meminfo: str = "/proc/meminfo",
                          cgroup: str = "/sys/fs/cgroup") -> None:
    """Raises ConfigError when ``need`` bytes are more than the memory available: ``what``
    (ending in "need") names them, ``advice`` says what to do instead."""
    free = available_memory(meminfo, cgroup)
    if free is not None and need > free:
        raise ConfigError(f"{what} {need / 2**30:.1f} GiB, more than the {free / 2**30:.1f} "
                          f"GiB of memory available; {advice}")
