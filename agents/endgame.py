"""Exact play when only two players still hold cards and both hands are known.

With two players left the round is a race: whoever empties their hand first takes the better of
the two last places. Hands are tuples of counts per rank; a position is (the mover's hand, the
other hand, the play to beat). Suits never matter and neither does ``top_card_ends_trick``
with two players (a play nobody can beat is followed by the other's pass, the same outcome).
Under ``no_finish_on_top`` a finishing play may not hold the top rank, and a hand left with
top-rank cards only loses at once.
"""

from __future__ import annotations

from math import comb
from typing import Iterator

Hand = tuple[int, ...]


class SearchLimit(Exception):
    """The position is too large for the node budget."""


_OVER_BUDGET = object()  # an answer cache entry: the search raised SearchLimit


class Solver:
    """Memoised win/loss search for one deck size and finishing rule.

    Every :meth:`best_move`/:meth:`best_move_uncertain` call searches with a memo of its own,
    so its node count, and with it whether it raises :class:`SearchLimit`, depends on its
    arguments only, not on what earlier calls left behind. Repeated calls are answered from a
    cache of whole answers (a move, ``False``, or the budget being hit).

    Args:
        R: number of ranks.
        no_finish_on_top: the ``no_finish_on_top`` rule.
        max_nodes: node budget of one :meth:`best_move` call (raises :class:`SearchLimit`).
        max_answers: the answer cache is emptied when it grows past this (only speed depends
            on it).
    """

    def __init__(self, R: int, no_finish_on_top: bool, max_nodes: int = 20000,
                 max_answers: int = 100_000):
        self.R = R
        self.top = R - 1
        self.nf = no_finish_on_top
        self.max_nodes = max_nodes
        self.max_answers = max_answers
        self.memo: dict[tuple, bool] = {}
        self.nodes = 0
        self.answers: dict[tuple, object] = {}

    # -- moves --------------------------------------------------------------------------------

    def moves(self, a: Hand, tr: int, tk: int) -> Iterator[tuple[int, int]]:
        """(rank, count) plays of hand ``a`` on the play ``(tr, tk)`` (``tk == 0``: a lead),
        highest first (they tend to win and so cut the search)."""
        total = sum(a)
        top, nf = self.top, self.nf
        if tk == 0:
            for r in range(self.R - 1, -1, -1):
                for k in range(a[r], 0, -1):
                    if not (nf and r == top and k == total):
                        yield r, k
        else:
            for r in range(self.R - 1, tr, -1):
                if a[r] >= tk and not (nf and r == top and tk == total):
                    yield r, tk

    def _after(self, a: Hand, r: int, k: int) -> tuple[Hand, int]:
        """The hand after playing; status 1 = out (won), -1 = only top left (lost), 0 = on."""
        b = a[:r] + (a[r] - k,) + a[r + 1:]
        left = sum(b)
        if left == 0:
            return b, 1
        if self.nf and b[self.top] == left:
            return b, -1
        return b, 0

    # -- search -------------------------------------------------------------------------------

    def wins(self, a: Hand, b: Hand, tr: int = -1, tk: int = 0) -> bool:
        """Whether the mover (hand ``a``) wins against ``b`` facing ``(tr, tk)``."""
        key = (a, b, tr, tk)
        memo = self.memo
        v = memo.get(key)
        if v is not None:
            return v
        self.nodes += 1
        if self.nodes > self.max_nodes:
            raise SearchLimit
        result = False
        for r, k in self.moves(a, tr, tk):
            a2, status = self._after(a, r, k)
            if status == 1:
                result = True
                break
            if status == -1:
                continue
            if not self.wins(b, a2, r, k):
                result = True
                break
        if not result and tk:
            # pass: the trick ends and the other leads
            result = not self.wins(b, a, -1, 0)
        memo[key] = result
        return result

    def outcomes(self, a: Hand, b: Hand, tr: int, tk: int, answer: bool = False
                 ) -> list[tuple[tuple[int, int] | None, bool]]:
        """Every legal move (``None`` = pass) of the mover with whether it wins, searched
        afresh (``max_nodes`` applies).

        ``answer``: the play on the table is by a third seat that has gone out and the other
        player has yet to answer it, so after a pass the other faces that same play, and its
        pass hands the lead back to the mover (the next seat after the one that went out)."""
        self._fresh()
        return self._outcomes(a, b, tr, tk, answer)

    def _fresh(self) -> None:
        self.memo = {}
        self.nodes = 0

    def _outcomes(self, a: Hand, b: Hand, tr: int, tk: int, answer: bool
                  ) -> list[tuple[tuple[int, int] | None, bool]]:
        """:meth:`outcomes` on the current memo and node count."""
        out = []
        for r, k in self.moves(a, tr, tk):
            a2, status = self._after(a, r, k)
            if status:
                out.append(((r, k), status == 1))
            else:
                out.append(((r, k), not self.wins(b, a2, r, k)))
        if tk:
            after_pass = (tr, tk) if answer else (-1, 0)
            out.append((None, not self.wins(b, a, *after_pass)))
        return out

    def best_move(self, a: Hand, b: Hand, tr: int = -1, tk: int = 0, answer: bool = False
                  ) -> tuple[int, int] | None | bool:
        """A winning move (``(rank, count)`` or ``None`` for pass), or ``False`` when every
        move loses (``answer``: see :meth:`outcomes`). Raises :class:`SearchLimit` past the
        node budget."""
        return self._answer(("sure", tuple(a), tuple(b), tr, tk, answer), self._best_move)

    def _best_move(self, a: Hand, b: Hand, tr: int, tk: int, answer: bool):
        for move, win in self.outcomes(a, b, tr, tk, answer):
            if win:
                return move
        return False

    def best_move_uncertain(self, a: Hand, unseen: Hand, size_b: int, tr: int = -1,
                            tk: int = 0, max_hands: int = 24, answer: bool = False):
        """As :meth:`best_move` when the other hand is ``size_b`` of the ``unseen`` cards (the
        rest lie face down): the move that wins against the most likely-weighted hands.
        Returns ``False`` when no move wins against any of them."""
        return self._answer(("unsure", tuple(a), tuple(unseen), size_b, tr, tk, max_hands,
                             answer), self._best_move_uncertain)

    def _best_move_uncertain(self, a: Hand, unseen: Hand, size_b: int, tr: int, tk: int,
                             max_hands: int, answer: bool):
        hands = list(sub_hands(unseen, size_b, max_hands + 1))
        if len(hands) > max_hands:
            raise SearchLimit
        # one memo and one budget for all the hands: they share most positions
        self._fresh()
        score: dict = {}
        order = []
        for b, w in hands:
            for move, win in self._outcomes(a, b, tr, tk, answer):
                if move not in score:
                    score[move] = 0
                    order.append(move)
                if win:
                    score[move] += w
        if not order:
            return False
        best = max(order, key=lambda m: score[m])  # None is the pass, a move like any other
        if score[best] == 0:
            return False
        return best

    def _answer(self, query: tuple, search):
        """``search(*query[1:])``, cached by the whole query, the budget being hit included."""
        answers = self.answers
        if query in answers:
            result = answers[query]
        else:
            try:
                result = search(*query[1:])
            except SearchLimit:
                result = _OVER_BUDGET
            if len(answers) >= self.max_answers:
                answers.clear()
            answers[query] = result
        if result is _OVER_BUDGET:
            raise SearchLimit
        return result


def sub_hands(unseen: Hand, size: int, limit: int) -> Iterator[tuple[Hand, int]]:
    """Count vectors of ``size`` cards drawn from ``unseen`` with their number of card sets."""
    R = len(unseen)
    produced = 0
    cur = [0] * R

    def rec(r: int, left: int, w: int):
        nonlocal produced
        if produced >= limit:
            return
        if r == R:
            if left == 0:
                produced += 1
                yield tuple(cur), w
            return
        rest = sum(unseen[r + 1:])
        for k in range(min(unseen[r], left), -1, -1):
            if left - k > rest:
                break
            cur[r] = k
            yield from rec(r + 1, left - k, w * comb(unseen[r], k))
        cur[r] = 0

    yield from rec(0, size, 1)
