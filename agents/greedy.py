"""The greedy bot: sheds its lowest cards as fast as the rules let it.

* never passes while it can play;
* leads its lowest rank as a whole group;
* follows with the lowest play that breaks no group, else the lowest legal play;
* gives away its lowest cards (exchange return and left-over lay);
* takes the highest face-up left-over card.

It looks no further than the move: under ``no_finish_on_top`` (culo) it may shed the last card
below the top rank and be left holding only top cards, which places it last (in about one
round in twelve at an all-greedy 4-player culo table). It is the baseline the ladder starts
from, kept as it is so that figures against it stay comparable.

It reads only the observation (its hand slice and the action mask), never the view.
"""

from __future__ import annotations

import numpy as np


class GreedyAgent:
    """See the module docstring."""

    name = "greedy"
    uses_view = False

    def __init__(self) -> None:
        self.R: int | None = None

    def reset(self, rules: dict, seat: int, seed: int | None = None) -> None:
        self.R = len(rules["rank_order"])

    def act(self, observation: dict, view: dict | None) -> int:
        mask = observation["action_mask"]
        R = (len(mask) - 1) // 6
        legal = np.flatnonzero(mask)
        give_base, take_base = 1 + 4 * R, 1 + 5 * R
        first = int(legal[0])
        if first >= take_base:               # take: the highest face-up card
            return int(legal[-1])
        if first >= give_base:               # give or lay: the lowest card
            return first
        hand = observation["observation"][:4 * R].reshape(R, 4).sum(axis=1).astype(int)
        if first != 0:                       # leading: the lowest rank, whole
            r = (first - 1) // 4
            a = 4 * r + int(hand[r])
            return a if mask[a] else first
        plays = legal[1:]
        if len(plays) == 0:
            return 0
        k = (int(plays[0]) - 1) % 4 + 1
        for a in plays:
            r = (int(a) - 1) // 4
            if hand[r] == k:
                return int(a)
        return int(plays[0])
