"""The action encoding of INTERFACES.md, as a codec between ids and moves.

With ``R`` ranks the space is ``Discrete(1 + 6R)``:

=================  ==========================================================
id                 move
=================  ==========================================================
``0``              pass
``1 + 4r + k-1``   play ``k`` cards (1..4) of rank ``r`` (lead or follow)
``1 + 4R + r``     give one card of rank ``r`` (exchange return, or a left-over swapper laying
                   a card face down)
``1 + 5R + r``     take the face-up left-over card of rank ``r``
=================  ==========================================================
"""

from __future__ import annotations

from dataclasses import dataclass

from arschloch_env.cards import RANK_WORDS

PASS = 0
GROUP_WORDS = {1: "single", 2: "pair", 3: "triple", 4: "quad"}


class ActionError(ValueError):
    """An action id that is not an integer of the action space."""


@dataclass(frozen=True)
class Move:
    """A decoded action: ``kind`` is ``"pass"``, ``"play"``, ``"give"`` or ``"take"``."""

    kind: str
    rank: int = -1
    count: int = 0


def rank_plural(rank: str) -> str:
    return RANK_WORDS[rank] + "s"


def play_words(rank: str, count: int) -> str:
    """A play of ``count`` cards of ``rank`` in words: ``"single nine"``, ``"pair of kings"``."""
    if count == 1:
        return f"single {RANK_WORDS[rank]}"
    return f"{GROUP_WORDS[count]} of {rank_plural(rank)}"


class ActionCodec:
    """Encodes and decodes action ids for a deck of ``len(rank_order)`` ranks."""

    def __init__(self, rank_order: tuple[str, ...]):
        self.rank_order = tuple(rank_order)
        self.num_ranks = R = len(rank_order)
        self.size = 1 + 6 * R
        self.give_base = 1 + 4 * R
        self.take_base = 1 + 5 * R

    def play(self, rank: int, count: int) -> int:
        return 1 + 4 * rank + count - 1

    def give(self, rank: int) -> int:
        return self.give_base + rank

    def take(self, rank: int) -> int:
        return self.take_base + rank

    def check(self, action) -> int:
        """Returns ``action`` as an int.

        Raises:
            ActionError: not an integer, or outside ``0..size-1``.
        """
        if type(action) is int and 0 <= action < self.size:
            return action
        try:
            import numpy as np
            if isinstance(action, np.ndarray) and action.shape == ():
                action = action.item()
            elif isinstance(action, np.integer):
                action = int(action)
        except ImportError:  # pragma: no cover - numpy is a dependency
            pass
        if isinstance(action, bool) or not isinstance(action, int):
            raise ActionError(f"action {action!r} is not an integer action id "
                              f"(allowed: 0..{self.size - 1})")
        if not 0 <= action < self.size:
            raise ActionError(f"action {action} is out of range (allowed: 0..{self.size - 1})")
        return action

    def decode(self, action: int) -> Move:
        action = self.check(action)
        if action == PASS:
            return Move("pass")
        if action < self.give_base:
            return Move("play", (action - 1) // 4, (action - 1) % 4 + 1)
        if action < self.take_base:
            return Move("give", action - self.give_base, 1)
        return Move("take", action - self.take_base, 1)

    def describe(self, action: int, phase: str | None = None) -> str:
        """The move in plain words: ``"pass"``, ``"pair of 9s"``, ``"give a king"`` ...; in
        the ``"lay"`` phase a give is ``"lay a king face down"``."""
        m = self.decode(action)
        if m.kind == "pass":
            return "pass"
        rank = self.rank_order[m.rank]
        if m.kind == "play":
            return play_words(rank, m.count)
        word = RANK_WORDS[rank]
        article = "an" if word[0] in "a8" else "a"
        if m.kind == "give" and phase == "lay":
            return f"lay {article} {word} face down"
        return f"{m.kind} {article} {word}"

    def listing(self, actions, phase: str | None = None) -> str:
        """Action ids with their moves, for error messages: ``"0 (pass), 5 (single 8)"``."""
        return ", ".join(f"{int(a)} ({self.describe(int(a), phase)})" for a in actions)
