"""A policy network as plain numpy arrays: the learner's frozen snapshots in the league.

Weights live in ``.npz`` files (``W0, b0, W1, b1, ...``, an ``activation`` string and, for a
file made for other runs to use such as a clone, the ``rules`` it plays as a JSON string),
loaded with ``allow_pickle=False``: nothing is ever unpickled.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from arschloch_env.atomic import output_file, temporary_beside

ACTIVATIONS = {"tanh": np.tanh, "relu": lambda x: np.maximum(x, 0.0)}


class MLP:
    """Hidden layers with one activation, then a linear output layer."""

    def __init__(self, weights: list[tuple[np.ndarray, np.ndarray]], activation: str = "tanh",
                 rules: dict[str, Any] | None = None):
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation {activation!r}; allowed: {', '.join(ACTIVATIONS)}")
        self.layers = [(np.asarray(w, np.float32), np.asarray(b, np.float32))
                       for w, b in weights]
        self.activation = activation
        self.rules = rules
        """The rules (``Rules.to_dict()``) the policy was made for, where known."""
        self._act = ACTIVATIONS[activation]
        # [in, out] copies: x @ w_t runs on contiguous memory (several times faster for one x).
        self._t = [(np.ascontiguousarray(w.T), b) for w, b in self.layers]

    @property
    def input_size(self) -> int:
        return self.layers[0][0].shape[1]

    @property
    def output_size(self) -> int:
        return self.layers[-1][0].shape[0]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Logits for observations ``x`` ([D] or [B, D]); weights are [out, in] like torch."""
        for w_t, b in self._t[:-1]:
            x = self._act(x @ w_t + b)
        w_t, b = self._t[-1]
        return x @ w_t + b

    def tensors(self) -> dict[str, np.ndarray]:
        """The weights by their names in a saved file: ``W0, b0, W1, b1, ...``."""
        named = {}
        for i, (w, b) in enumerate(self.layers):
            named[f"W{i}"], named[f"b{i}"] = w, b
        return named

    def save(self, path: str | Path) -> None:
        """Writes the weights atomically (temporary file, then rename)."""
        path = output_file(path)
        arrays = self.tensors()
        if self.rules is not None:
            arrays["rules"] = np.array(json.dumps(self.rules))
        fd, tmp = temporary_beside(path, ".part.npz")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, activation=np.array(self.activation), **arrays)
            tmp.replace(path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: str | Path) -> "MLP":
        """The policy saved by :meth:`save`.

        Raises:
            FileNotFoundError: there is no file at ``path``.
            ValueError: the file is no such policy (not an ``.npz`` archive, or one without
                ``activation`` and ``W0, b0, ...``), named.
        """
        if not Path(path).is_file():  # is_zipfile would say False, as for a damaged file
            raise FileNotFoundError(f"{path} does not exist" if not Path(path).exists()
                                    else f"{path} is not a file")
        # numpy takes any file that is no archive for a pickle, and says to load it unsafely
        if not zipfile.is_zipfile(path):
            raise ValueError(f"{path} is not a policy file: those are .npz archives (of "
                             f"activation, W0, b0, ...); this one is damaged or another "
                             f"kind of file")
        with np.load(path, allow_pickle=False) as data:
            if "activation" not in data.files or "W0" not in data.files:
                raise ValueError(f"{path} is not a policy file: it holds "
                                 f"{', '.join(data.files) or 'no arrays'}, not activation, "
                                 f"W0, b0, ...")
            k = sum(1 for name in data.files if name.startswith("W"))
            weights = [(data[f"W{i}"], data[f"b{i}"]) for i in range(k)]
            rules = json.loads(str(data["rules"])) if "rules" in data.files else None
            return cls(weights, str(data["activation"]), rules)


def masked_choice(logits: np.ndarray, mask: np.ndarray, rng: np.random.Generator | None) -> int:
    """Argmax of the legal logits, or a sample from their softmax when ``rng`` is given."""
    legal = np.flatnonzero(mask)
    z = logits[legal].astype(np.float64)
    if rng is None:
        return int(legal[int(np.argmax(z))])
    cumulative = np.cumsum(np.exp(z - z.max()))
    i = int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))
    return int(legal[min(i, len(legal) - 1)])


class MLPAgent:
    """Plays a numpy policy: samples from it (``sample=True``) or takes its best legal move."""

    uses_view = False

    def __init__(self, mlp: MLP, sample: bool = True, name: str = "mlp"):
        self.mlp = mlp
        self.sample = sample
        self.name = name
        self.rng = np.random.default_rng()

    def reset(self, rules: dict, seat: int, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, observation: dict, view: dict | None) -> int:
        logits = self.mlp(observation["observation"])
        return masked_choice(logits, observation["action_mask"], self.rng if self.sample else None)
