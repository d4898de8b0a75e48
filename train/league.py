"""The self-play league: frozen snapshots of the learner on disk, and the sampler that seats
opponents for each episode from them, the learner's current weights and heuristic bots.

Files in the league directory::

    league.json            {"snapshots": [{"file": "snap_000000050000.npz", "steps": 50000}, ...]}
    snap_<steps>.npz       frozen weights (agents.mlp.MLP)
    current.npz            the learner's latest weights, refreshed after every rollout

Everything is written atomically, so that env processes reading the directory never see a
half-written file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

from agents.base import agent_maker, make_agent
from agents.mlp import MLP, MLPAgent
from train.config import ConfigError
from train.files import write_json_atomic

SNAPSHOTS, CURRENT = "snapshots", "current"


def check_pool(snapshots: Any) -> list[dict[str, Any]]:
    """``snapshots`` if it is a pool as league.json and checkpoints list it: entries with a
    snapshot file name and its step.

    Raises:
        ValueError: naming what is wrong.
    """
    if not isinstance(snapshots, list):
        raise ValueError(f"is {type(snapshots).__name__}, not a list of snapshots")
    for s in snapshots:
        if not (isinstance(s, dict) and isinstance(s.get("file"), str)
                and s["file"] == Path(s["file"]).name and isinstance(s.get("steps"), int)):
            raise ValueError(f"lists {s!r}, not a snapshot (a file name and its steps)")
    return snapshots


class League:
    """The snapshot pool, owned by the training process."""

    def __init__(self, root: str | Path, max_snapshots: int):
        if max_snapshots < 0:
            raise ValueError(f"max_snapshots: {max_snapshots} is not allowed; it must be at "
                             f"least 0 (0: no snapshots)")
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.max_snapshots = max_snapshots
        self.snapshots: list[dict[str, Any]] = []
        try:
            self.snapshots = check_pool(
                json.loads((self.root / "league.json").read_text(encoding="utf-8"))["snapshots"])
        except (OSError, ValueError, KeyError, TypeError):
            pass  # none yet, or damaged: a resume rewrites it from its checkpoint's metadata
        self.pinned = {s["file"] for s in self.snapshots}
        """The files of the pool the latest checkpoint lists: a resume from it needs them."""

    def add_snapshot(self, mlp: MLP, steps: int) -> None:
        if self.max_snapshots == 0:
            return  # a pool of none: the file would be pruned at once
        name = f"snap_{steps:012d}.npz"
        mlp.save(self.root / name)
        self.snapshots = self._newest(self.snapshots + [{"file": name, "steps": steps}])
        self._write()
        self._prune()

    def update_current(self, mlp: MLP) -> None:
        mlp.save(self.root / "current.npz")

    def checkpointed(self) -> None:
        """The latest checkpoint now lists the pool as it is: only its files stay pinned."""
        self.pinned = {s["file"] for s in self.snapshots}
        self._prune()

    def restore(self, snapshots: Any) -> None:
        """Goes back to the pool of a checkpoint (a killed run may have added more since).

        Raises:
            ConfigError: ``snapshots`` (from the checkpoint's metadata) is no pool.
        """
        try:
            snapshots = check_pool(snapshots)
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"the checkpoint's metadata is damaged: its league {exc}") from None
        self.snapshots = [s for s in snapshots if (self.root / s["file"]).is_file()]
        if gone := [s["file"] for s in snapshots if s not in self.snapshots]:
            # kept until the next checkpoint, so something outside the run removed them
            print(f"the checkpoint's league lists {', '.join(gone)}, which {self.root} no "
                  f"longer holds; the resumed run goes on without them", file=sys.stderr)
        self.pinned = {s["file"] for s in self.snapshots}
        # A checkpoint of a run made when max_snapshots=0 kept every snapshot: it resumes
        # with the pool this size allows (its files stay pinned until the next checkpoint).
        self.snapshots = self._newest(self.snapshots)
        self._write()
        self._prune()

    def _newest(self, snapshots: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # Not snapshots[-max_snapshots:]: with 0 that slice is the whole list.
        return snapshots[max(0, len(snapshots) - self.max_snapshots):]

    def _prune(self) -> None:
        """Deletes the snapshot files that are neither in the pool nor pinned."""
        keep = self.pinned | {s["file"] for s in self.snapshots}
        for path in self.root.glob("snap_*.npz"):
            if path.name not in keep:
                path.unlink(missing_ok=True)

    def _write(self) -> None:
        write_json_atomic(self.root / "league.json", {"snapshots": self.snapshots})


class LeagueSampler:
    """Seats opponents for one episode: ``sampler(rng, k) -> k agents``.

    Picklable (it holds only paths and the mix), so every env process has its own; it
    re-reads the league when its files change.
    """

    def __init__(self, root: str | Path, mix: dict[str, float]):
        self.root = Path(root)
        kinds = list(mix)
        weights = np.array([mix[k] for k in kinds], dtype=np.float64)
        self.kinds, self.p = kinds, weights / weights.sum()
        self._stamp: tuple | None = None
        self._pool: list[MLP] = []
        self._current: MLP | None = None
        self._makers: dict[str, Callable[[], Any]] = {}  # agent spec -> maker, made on first use

    def _refresh(self) -> None:
        files = [self.root / "league.json", self.root / "current.npz"]
        stamp = tuple(f.stat().st_mtime_ns if f.exists() else 0 for f in files)
        if stamp == self._stamp:
            return
        self._stamp = stamp
        if files[0].exists():
            snaps = json.loads(files[0].read_text())["snapshots"]
            self._pool = [m for m in (_load_if_there(self.root / s["file"]) for s in snaps)
                          if m is not None]
        if files[1].exists():
            self._current = MLP.load(files[1])

    def __call__(self, rng: np.random.Generator, k: int) -> list:
        self._refresh()
        agents = []
        for kind in rng.choice(self.kinds, size=k, p=self.p):
            agents.append(self._agent(str(kind), rng))
        return agents

    def _agent(self, kind: str, rng: np.random.Generator):
        if kind == SNAPSHOTS and self._pool:
            return MLPAgent(self._pool[int(rng.integers(len(self._pool)))], name="snapshot")
        if kind in (SNAPSHOTS, CURRENT):
            if self._current is not None:
                return MLPAgent(self._current, name="current")
            return make_agent("random")
        if kind not in self._makers:
            self._makers[kind] = agent_maker(kind)
        return self._makers[kind]()

    def composition(self) -> dict[str, float]:
        return dict(zip(self.kinds, self.p.tolist()))


def _load_if_there(path: Path) -> MLP | None:
    """A snapshot's policy, or None if the trainer pruned it since the pool listed it (the
    env workers read the pool while the trainer writes it)."""
    try:
        return MLP.load(path)
    except FileNotFoundError:
        return None
