"""The rules engine: one match of Arschloch, from the first deal to the match end.

Pure Python and numpy; it knows nothing of reinforcement learning. A :class:`Game` is a mutable
state with a :meth:`Game.step` transition, a legal-action list and mask in the action encoding
of :mod:`arschloch_env.actions`, and a cheap :meth:`Game.clone` for search.

A hand is a list with one 4-bit suit mask per rank (bit ``s`` = suit ``SUITS[s]``). When an
action names only a rank, the engine takes that rank's cards in the seat's own suit order for
the rank this round (:func:`arschloch_env.cards.suit_order`, drawn from the seed: what a seat
plays tells the others nothing about the suits it holds); a face-up left-over card is taken
lowest suit first. :meth:`Game.step` also accepts the exact cards, for replays and people.

Flow of a round: deal; from round 2 on the left-over swap (3rd, then 4th place: phases
``take`` and ``lay``) and the exchange (the Arschloch's highest cards go to the President
automatically, the President returns cards of their choice one by one: phase ``give``; then the
Vice pair); then tricks (phase ``play``) until one player holds cards.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from arschloch_env.actions import PASS, ActionCodec
from arschloch_env.cards import (
    LOWEST_K, MASK_SUITS, PICK, POPCOUNT, CardError, cards_to_hand, hand_cards, mask_cards,
    round_suit_key, suit_order,
)
from arschloch_env.rules import Rules, is_integer, make_rules

PLAY, GIVE, TAKE, LAY, OVER = "play", "give", "take", "lay", "over"
PHASES = (PLAY, GIVE, TAKE, LAY)


class IllegalActionError(ValueError):
    """An action the rules do not allow now; the state is left unchanged."""


class DealError(ValueError):
    """A prescribed deal that is not a valid deal under the rules."""


def player_name(seat: int) -> str:
    return f"player_{seat}"


def check_match_fields(seed: Any, index: Any, agents: Any, num_players: int) -> None:
    """Raises ValueError, naming the field of the ``match`` event, for a seed, match index or
    agents that a game record cannot hold."""
    if seed is not None and not (is_integer(seed) and seed >= 0):
        raise ValueError(f"match.seed: {seed!r} is not allowed; allowed: an integer >= 0 or "
                         f"null")
    if not (is_integer(index) and index >= 0):
        raise ValueError(f"match.index: {index!r} is not allowed; allowed: an integer >= 0")
    names = [player_name(i) for i in range(num_players)]
    if agents is not None and not (isinstance(agents, dict)
                                   and all(isinstance(v, str) for v in agents.values())
                                   and set(agents) <= set(names)):
        raise ValueError(f"match.agents: {agents!r} is not allowed; allowed: an object of "
                         f"player name ({', '.join(names)}) to agent spec")


class Game:
    """One match under one rules object.

    Args:
        rules: a :class:`Rules`, a preset name, a dict or a rules file.
        seed: seed of the one ``numpy.random.Generator`` that shuffles every deal.
        match_index: k, the match's number in its series (fixes the ``rotate`` leader).
        record: keep the game record (INTERFACES.md events) in :attr:`events`.
        agents: agent spec per player name, written into the ``match`` record event.
        deals: optional prescribed deals, one per round, each ``(hands, leftover)`` with
            ``hands`` a list per seat (or a dict per player name) of card strings. Rounds past
            the given deals are shuffled from ``seed``.
        auto_pass: apply decisions where pass is the only legal action automatically.
        gifts: optionally the cards of automatic exchange gifts, per ``(round, giver's player
            name)``, e.g. a game record's: the giver hands over those suits where they are its
            highest cards by rank (the suits are the giver's choice), else its own choice.

    Raises:
        RulesError: rules out of range.
        ValueError: a seed, match index or agents that a game record cannot hold (a seed
            or index below 0, not an integer; agents of other keys than player names).
    """

    def __init__(self, rules: Rules | str | dict = "culo", seed: int | None = None,
                 match_index: int = 0, record: bool = False,
                 agents: dict[str, str] | None = None,
                 deals: Iterable | None = None, auto_pass: bool = False,
                 gifts: dict[tuple[int, str], list[str]] | None = None, **overrides: Any):
        self.rules = r = make_rules(rules, **overrides)
        self.codec = ActionCodec(r.rank_order)
        self.n = n = r.num_players
        check_match_fields(seed, match_index, agents, n)
        self.R = r.num_ranks
        self.top = r.top_rank
        self.seed = None if seed is None else int(seed)  # a numpy int would not go to JSON
        # what the suit orders are drawn from: the seed, or without one fresh entropy (a fixed
        # stand-in would let every seat work out the others' orders)
        self._suit_seed = (self.seed if seed is not None
                           else int(np.random.SeedSequence().generate_state(1)[0]))
        self._gifts = dict(gifts or {})
        self.match_index = int(match_index)
        self.auto_pass = auto_pass
        self.rng = np.random.default_rng(seed)
        self.events: list[dict] | None = [] if record else None
        self._deals = iter(deals) if deals is not None else None
        self.round = 0
        self.totals = [0] * n
        self.prev_places: list[int] | None = None
        self.titles: list[str | None] = [None] * n
        self.winners: list[int] | None = None
        self.rounds_done = 0
        self.last_places: list[int] | None = None
        self.last_points: list[int] | None = None
        self.round_places: list[list[int]] = []
        self._emit(event="match", index=self.match_index, rules=r.to_dict(),
                   players=[player_name(i) for i in range(n)],
                   agents=dict(agents or {}), seed=self.seed)
        self._start_round()
        self._skip_forced()

    # -- queries ------------------------------------------------------------------------------

    @property
    def is_over(self) -> bool:
        return self.phase == OVER

    def round_titles(self) -> list[str | None]:
        """Per seat the title this round is played under: the previous round's, None in round
        1. (``titles`` holds the newest titles, which after the last round are that round's.)"""
        if self.round == 1:
            return [None] * self.n
        if self.phase != OVER:
            return list(self.titles)
        names = self.rules.titles_for()
        return [names[p - 1] for p in self.round_places[-2]]

    @property
    def leading(self) -> bool:
        """The seat to act opens a trick (nothing lies on the table)."""
        return self.phase == PLAY and self.table_count == 0

    def legal_actions(self) -> list[int]:
        """The legal action ids of the seat to act, ascending."""
        phase = self.phase
        if phase == PLAY:
            return self._legal_plays()
        if phase == GIVE or phase == LAY:
            base = self.codec.give_base
            return [base + r for r, m in enumerate(self.hands[self.current]) if m]
        if phase == TAKE:
            base = self.codec.take_base
            return [base + r for r, m in enumerate(self.face_up) if m]
        return []

    def legal_mask(self) -> np.ndarray:
        """int8 mask over the action space, 1 exactly for the legal ids."""
        buf = bytearray(self.codec.size)
        for a in self.legal_actions():
            buf[a] = 1
        return np.frombuffer(buf, dtype=np.int8)


    def _legal_plays(self) -> list[int]:
        h = self.hands[self.current]
        size = self.sizes[self.current]
        k = self.table_count
        # A finishing play of the top rank needs a hand of top-rank cards only, which the
        # only-top rule removes at once; the check keeps the rule true for any state anyway.
        forbid = self.top if self.rules.no_finish_on_top else -1
        if k == 0:
            acts = []
            for r in range(self.R):
                for j in range(POPCOUNT[h[r]]):
                    if not (r == forbid and j + 1 == size):
                        acts.append(1 + 4 * r + j)
            return acts
        acts = [PASS]
        for r in range(self.table_rank + 1, self.R):
            if POPCOUNT[h[r]] >= k and not (r == forbid and k == size):
                acts.append(4 * r + k)
        return acts

    def only_pass(self) -> bool:
        """The seat to act is following and has no play: passing is its only legal action."""
        if self.phase != PLAY or self.table_count == 0:
            return False
        h = self.hands[self.current]
        k = self.table_count
        size = self.sizes[self.current]
        forbid = self.top if self.rules.no_finish_on_top else -1
        for r in range(self.table_rank + 1, self.R):
            if POPCOUNT[h[r]] >= k and not (r == forbid and k == size):
                return False
        return True

    def hand_of(self, seat: int) -> list[str]:
        return hand_cards(self.hands[seat], self.rules.rank_order)

    def highest_in_play(self) -> int:
        """The highest rank not yet wholly played, face up or revealed (-1 when none)."""
        return self.top_alive

    def seat_with_place(self, place: int) -> int:
        """The seat that took ``place`` in the previous round."""
        return self.prev_places.index(place)

    # -- transitions --------------------------------------------------------------------------

    def step(self, action: int, cards: list[str] | None = None, seat: int | None = None) -> None:
        """Applies the action of the seat to act.

        Args:
            action: an action id.
            cards: optionally the exact cards of a play, give, lay or take (same rank and
                count as the action); by default those of :meth:`chosen`.
            seat: optionally the seat that means to act; another seat is "out of turn".

        Raises:
            ActionError: not an integer id of the action space.
            IllegalActionError: the rules do not allow it now; nothing is changed.
        """
        a = self.codec.check(action)
        mask = self._validate(a, cards, seat)
        self.last_places = None
        phase = self.phase
        if phase == PLAY:
            if a == PASS:
                self._pass()
            else:
                self._play((a - 1) >> 2, ((a - 1) & 3) + 1, mask)
        elif phase == GIVE:
            self._give_one(a - self.codec.give_base, mask)
        elif phase == TAKE:
            self._take(a - self.codec.take_base, mask)
        else:
            self._lay(a - self.codec.give_base, mask)
        self._skip_forced()

    def check(self, action) -> int:
        """``action`` as an int, if the seat to act may take it now; changes nothing.

        Raises:
            ActionError, IllegalActionError: as :meth:`step` would.
        """
        a = self.codec.check(action)
        self._validate(a, None, None)
        return a

    def _skip_forced(self) -> None:
        if self.auto_pass:
            while self.only_pass():
                self._pass()

    def _is_legal(self, a: int) -> bool:
        """Fast legality test of an in-range action id (the hot path of every step)."""
        phase = self.phase
        codec = self.codec
        if phase == PLAY:
            if a == PASS:
                return self.table_count > 0
            if a >= codec.give_base:
                return False
            q, k = (a - 1) >> 2, ((a - 1) & 3) + 1
            if POPCOUNT[self.hands[self.current][q]] < k:
                return False
            if self.table_count and (k != self.table_count or q <= self.table_rank):
                return False
            return not (self.rules.no_finish_on_top and q == self.top
                        and k == self.sizes[self.current])
        if phase == GIVE or phase == LAY:
            return (codec.give_base <= a < codec.take_base
                    and self.hands[self.current][a - codec.give_base] != 0)
        if phase == TAKE:
            return a >= codec.take_base and self.face_up[a - codec.take_base] != 0
        return False

    def chosen(self, seat: int, rank: int, count: int) -> int:
        """The suit mask of the ``count`` cards of ``rank`` that ``seat`` moves when an action
        names only the rank: the first it holds in its suit order for the rank this round."""
        return PICK[suit_order(self.suit_key, seat, rank)][self.hands[seat][rank]][count]

    def default_mask(self, a: int) -> int:
        """The suit mask of the cards the legal action ``a`` moves when it comes without its
        cards: the seat's choice (:meth:`chosen`), or a face-up card lowest suit first."""
        phase = self.phase
        if phase == PLAY:
            return self.chosen(self.current, (a - 1) >> 2, ((a - 1) & 3) + 1) if a else 0
        if phase == TAKE:
            return LOWEST_K[self.face_up[a - self.codec.take_base]][1]
        return self.chosen(self.current, a - self.codec.give_base, 1)

    def _validate(self, a: int, cards: list[str] | None, seat: int | None) -> int:
        """Returns the suit mask of the cards the action moves, or raises IllegalActionError."""
        if self.phase == OVER:
            raise IllegalActionError(f"{self.codec.describe(a)!r}: the match is over; no action "
                                     f"is allowed")
        if seat is not None and not (is_integer(seat) and 0 <= seat < self.n):
            raise IllegalActionError(f"seat {seat!r} is not a seat at this table; allowed: an "
                                     f"integer 0..{self.n - 1}")
        if seat is not None and seat != self.current:
            raise IllegalActionError(
                f"{player_name(seat)} cannot {self.codec.describe(a)!r}: it is "
                f"{player_name(self.current)}'s turn (out of turn)")
        if not self._is_legal(a):
            raise IllegalActionError(f"{player_name(self.current)} cannot "
                                     f"{self.codec.describe(a, self.phase)!r} (action {a}): "
                                     f"{self._why_illegal(self.codec.decode(a))}; legal now: "
                                     f"{self.codec.listing(self.legal_actions(), self.phase)}")
        if cards is None:
            return self.default_mask(a)
        if not isinstance(cards, (list, tuple)):  # a string such as "QH" is no list of cards
            raise IllegalActionError(f"cards {cards!r}: expected a list of card strings, e.g. "
                                     f"['7C', '7S'] (or none, for the seat's own choice)")
        move = self.codec.decode(a)
        if move.kind == "pass":
            if len(cards):
                raise IllegalActionError(f"{player_name(self.current)} cannot 'pass' with cards "
                                         f"{cards}: a pass moves no cards (allowed: none)")
            return 0
        source = self.face_up if move.kind == "take" else self.hands[self.current]
        return self._chosen_cards(move, source[move.rank], cards)

    def _chosen_cards(self, move, held: int, cards: list[str]) -> int:
        where = f"{player_name(self.current)} cannot {self.codec.describe(self.codec_id(move))!r}"
        try:
            want = cards_to_hand(cards, self.rules.rank_index)
        except CardError as exc:
            raise IllegalActionError(f"{where}: {exc}") from None
        chosen = want[move.rank]
        if sum(POPCOUNT[m] for m in want) != move.count or POPCOUNT[chosen] != move.count:
            raise IllegalActionError(f"{where} with cards {cards}: they are not {move.count} "
                                     f"card(s) of that rank")
        if chosen & ~held:
            place = "face up on the table" if move.kind == "take" else "in the hand"
            raise IllegalActionError(f"{where} with cards {cards}: not all of them are {place}")
        return chosen

    def codec_id(self, move) -> int:
        if move.kind == "play":
            return self.codec.play(move.rank, move.count)
        if move.kind == "give":
            return self.codec.give(move.rank)
        if move.kind == "take":
            return self.codec.take(move.rank)
        return PASS

    def _why_illegal(self, move) -> str:
        phase = self.phase
        kind = move.kind
        allowed = {PLAY: "pass and plays" if self.table_count else "plays (a leader may not "
                   "pass)", GIVE: "give", LAY: "lay a card face down", TAKE: "take"}[phase]
        expected = {PLAY: ("pass", "play"), GIVE: ("give",), LAY: ("give",), TAKE: ("take",)}
        if kind not in expected[phase]:
            return f"it is the {phase} phase; allowed now: {allowed}"
        rank_name = self.rules.rank_order[move.rank] if kind != "pass" else ""
        if kind == "take":
            return "" if self.face_up[move.rank] else f"no face-up left-over card of rank {rank_name}"
        held = POPCOUNT[self.hands[self.current][move.rank]] if kind != "pass" else 0
        if kind == "give":
            return "" if held else f"they hold no card of rank {rank_name}"
        if kind == "pass":
            return "the leader may not pass" if self.table_count == 0 else ""
        if held < move.count:
            return f"they hold {held} card(s) of rank {rank_name}"
        if self.table_count:
            on_table = self.codec.describe(self.codec.play(self.table_rank, self.table_count))
            if move.count != self.table_count:
                return (f"the table holds a {on_table}; only exactly {self.table_count} card(s) "
                        f"of a higher rank, or pass, are allowed")
            if move.rank <= self.table_rank:
                return (f"it does not beat the {on_table} on the table (a strictly higher rank "
                        f"is needed; equal is never enough)")
        if (self.rules.no_finish_on_top and move.rank == self.top
                and move.count == self.sizes[self.current]):
            return (f"it would finish the hand with the top rank {rank_name} "
                    f"(no finishing on the top rank)")
        return ""

    def _play(self, r: int, k: int, mask: int) -> None:
        s = self.current
        hand = self.hands[s]
        hand[r] ^= mask
        self.sizes[s] -= k
        self.gone[r] += k
        self.played[r] += k
        self.plays.append((s, r, mask))
        self.table_rank, self.table_count, self.table_seat = r, k, s
        self.passes = 0
        self.passed = [False] * self.n
        if self.events is not None:
            self._emit(event="play", player=player_name(s),
                       cards=mask_cards(self.rules.rank_order[r], mask))
        if self.sizes[s] == 0:
            self._out(s, "emptied")
        elif self.rules.no_finish_on_top and POPCOUNT[hand[self.top]] == self.sizes[s]:
            self._reveal_only_top(s)
        while self.top_alive >= 0 and self.gone[self.top_alive] == 4:
            self.top_alive -= 1
        if self.active == 1:
            self._finish_round()
        elif self.rules.top_card_ends_trick and r >= self.top_alive:
            self._end_trick(s)
        else:
            self.current = self._next_active(s)

    def _pass(self) -> None:
        s = self.current
        self.passed[s] = True
        self.passes += 1
        if self.events is not None:
            self._emit(event="pass", player=player_name(s))
        others = self.active - (1 if self.sizes[self.table_seat] else 0)
        if self.passes >= others:
            self._end_trick(self.table_seat)
        else:
            self.current = self._next_active(s)

    def _end_trick(self, winner: int) -> None:
        if self.events is not None:
            self._emit(event="trick_end", winner=player_name(winner))
        self.table_rank, self.table_count, self.table_seat = -1, 0, -1
        self.passes = 0
        self.passed = [False] * self.n
        self.current = winner if self.sizes[winner] else self._next_active(winner)

    def _next_active(self, s: int) -> int:
        n, sizes = self.n, self.sizes
        s = (s + 1) % n
        while not sizes[s]:
            s = (s + 1) % n
        return s

    def _reveal_only_top(self, s: int) -> None:
        """A hand of top-rank cards only can never go out: it is shown and ranked from below."""
        cards = self.hands[s][self.top]
        self.revealed[s] = cards
        self.gone[self.top] += POPCOUNT[cards]
        self.hands[s][self.top] = 0
        self.sizes[s] = 0
        self._out(s, "only_top")

    def _out(self, s: int, reason: str) -> None:
        if reason == "emptied":
            place = self.next_top
            self.next_top += 1
        else:
            place = self.next_bottom
            self.next_bottom -= 1
        self.places[s] = place
        self.active -= 1
        if self.events is not None:
            self._emit(event="out", player=player_name(s), place=place, reason=reason)

    # -- round set-up -------------------------------------------------------------------------

    def _start_round(self) -> None:
        r, n = self.rules, self.n
        self.round += 1
        self.suit_key = round_suit_key(self._suit_seed, self.match_index, self.round)
        if self.round > 1:
            leader: int | None = self.seat_with_place(n)
        elif r.first_leader == "rotate":
            leader = self.match_index % n
        else:
            leader = None  # the lowest club's holder, known only after the deal
        hands, leftover = self._deal(0 if leader is None else leader)
        self.hands = hands
        self.sizes = [sum(POPCOUNT[m] for m in h) for h in hands]
        if leader is None:
            leader = self._lowest_card_holder()
        self.leader = leader
        self.places: list[int | None] = [None] * n
        self.next_top, self.next_bottom = 1, n
        self.active = n
        self.table_rank, self.table_count, self.table_seat = -1, 0, -1
        self.passes = 0
        self.passed = [False] * n
        self.plays: list[tuple[int, int, int]] = []
        self.revealed = [0] * n
        self.given = [[0] * self.R for _ in range(n)]
        self.received = [[0] * self.R for _ in range(n)]
        self.face_down = list(leftover)
        self.face_up = [0] * self.R
        self.gone = [0] * self.R
        self.played = [0] * self.R
        self.to_give = 0
        self.give_to = -1
        self._give_buffer: list[tuple[int, int]] = []
        self._swap_take: tuple[int, int] | None = None
        order = r.rank_order
        self._emit(event="round", round=self.round,
                   hands={player_name(i): hand_cards(h, order) for i, h in enumerate(hands)},
                   leftover=hand_cards(leftover, order), leader=player_name(leader))
        self.tasks: list[tuple] = []
        if self.round > 1:
            self._plan_swaps_and_exchange()
        self._recompute_top_alive()
        self._run_tasks()

    def _deal(self, start: int) -> tuple[list[list[int]], list[int]]:
        r, n, R = self.rules, self.n, self.R
        if self._deals is not None:
            given = next(self._deals, None)
            if given is not None:
                return self._prescribed_deal(given, start)
            self._deals = None
        perm = self.rng.permutation(r.deck_size)
        hands = [[0] * R for _ in range(n)]
        dealt = sum(r.hand_sizes)
        for i in range(dealt):
            c = int(perm[i])
            hands[(start + i) % n][c >> 2] |= 1 << (c & 3)
        leftover = [0] * R
        for c in perm[dealt:]:
            leftover[int(c) >> 2] |= 1 << (int(c) & 3)
        return hands, leftover

    def _prescribed_deal(self, given, start: int) -> tuple[list[list[int]], list[int]]:
        r, n = self.rules, self.n
        names = [player_name(i) for i in range(n)]
        if not isinstance(given, (list, tuple)) or len(given) != 2:
            raise DealError(f"deal: {given!r} is not a pair (hands, leftover); allowed: hands "
                            f"as a list of {n} card lists (or a mapping of {', '.join(names)} "
                            f"to card lists) and the left-over cards as a list")
        hands_in, leftover_in = given
        if isinstance(hands_in, dict):
            odd = [k for k in hands_in if k not in names]
            if odd:
                raise DealError(f"deal: hands of unknown player(s) {', '.join(map(repr, odd))}; "
                                f"allowed: {', '.join(names)}")
            hands_in = [hands_in.get(name, []) for name in names]
        if not isinstance(hands_in, (list, tuple)):
            raise DealError(f"deal: hands {hands_in!r} are not a list of {n} card lists (or a "
                            f"mapping of {', '.join(names)} to card lists)")
        for what, cards in [*zip(names, hands_in), ("leftover", leftover_in)]:
            if not isinstance(cards, (list, tuple)):
                raise DealError(f"deal: {what}: {cards!r} is not a list of cards, e.g. "
                                f"['7C', 'KH']")
        if len(hands_in) != n:
            raise DealError(f"deal: {len(hands_in)} hands given for {n} players")
        try:
            hands = [cards_to_hand(h, r.rank_index) for h in hands_in]
            leftover = cards_to_hand(leftover_in, r.rank_index)
        except CardError as exc:
            raise DealError(f"deal: {exc}") from None
        seen = [0] * self.R
        for h in hands + [leftover]:
            for q, m in enumerate(h):
                if seen[q] & m:
                    raise DealError(f"deal: card(s) {mask_cards(r.rank_order[q], seen[q] & m)}"
                                    f" appear more than once")
                seen[q] |= m
        if any(m != 15 for m in seen):
            raise DealError("deal: hands and left-over cards must hold the whole deck once")
        want = [r.hand_sizes[(i - start) % n] for i in range(n)]
        got = [sum(POPCOUNT[m] for m in h) for h in hands]
        if got != want:
            raise DealError(f"deal: hand sizes {got} do not match the {r.deal!r} deal starting "
                            f"at {player_name(start)} ({want})")
        return hands, leftover

    def _lowest_card_holder(self) -> int:
        """The holder of the lowest club or, if it lies aside, of the lowest dealt card."""
        rank, suit = self.rules.lowest_club
        for i, h in enumerate(self.hands):
            if h[rank] >> suit & 1:
                return i
        best = None
        for i, h in enumerate(self.hands):
            for q, m in enumerate(h):
                if m:
                    key = (q, MASK_SUITS[m][0])
                    if best is None or key < best[0]:
                        best = (key, i)
                    break
        return best[1]

    def _recompute_top_alive(self) -> None:
        t = self.R - 1
        while t >= 0 and self.gone[t] == 4:
            t -= 1
        self.top_alive = t

    def _plan_swaps_and_exchange(self) -> None:
        r, n = self.rules, self.n
        if r.leftover_swap and any(self.face_down):
            self.face_up, self.face_down = self.face_down, [0] * self.R
            self.gone = [POPCOUNT[m] for m in self.face_up]
            for place in (3, 4):
                if place <= n:
                    self.tasks += [(TAKE, self.seat_with_place(place)),
                                   (LAY, self.seat_with_place(place))]
        c = r.president_exchange
        if c:
            pres, culo = self.seat_with_place(1), self.seat_with_place(n)
            self.tasks += [("auto", culo, pres, c), (GIVE, pres, culo, c)]
        v = r.vice_exchange
        if v:
            vp, va = self.seat_with_place(2), self.seat_with_place(n - 1)
            self.tasks += [("auto", va, vp, v), (GIVE, vp, va, v)]

    def _run_tasks(self) -> None:
        """Runs automatic set-up steps until a decision is due or the play begins."""
        while self.tasks:
            task = self.tasks[0]
            kind = task[0]
            if kind == TAKE and not any(self.face_up):
                del self.tasks[:2]
                continue
            if kind == "auto":
                self.tasks.pop(0)
                self._auto_give(task[1], task[2], task[3])
                continue
            self.phase = kind
            self.current = task[1]
            if kind == GIVE:
                self.give_to, self.to_give = task[2], task[3]
                self._give_buffer = []
            return
        self.phase = PLAY
        self._check_only_top_after_exchange()
        if self.active == 1:
            self._finish_round()
            return
        self.current = self.leader if self.sizes[self.leader] else self._next_active(self.leader)

    def _check_only_top_after_exchange(self) -> None:
        if not self.rules.no_finish_on_top:
            return
        for i in range(self.n):
            s = (self.leader + i) % self.n
            if self.sizes[s] and POPCOUNT[self.hands[s][self.top]] == self.sizes[s]:
                self._reveal_only_top(s)
                if self.active == 1:
                    return
        self._recompute_top_alive()

    def _auto_give(self, giver: int, taker: int, count: int) -> None:
        """The giver hands over its ``count`` highest cards (by rank; within a rank, in its
        suit order)."""
        h, t = self.hands[giver], self.hands[taker]
        given = self._prescribed_gift(giver)
        moved = []
        for q in range(self.R - 1, -1, -1):
            if count == 0:
                break
            m = h[q]
            if m:
                k = min(count, POPCOUNT[m])
                sub = given[q] if given and POPCOUNT[given[q]] == k else self.chosen(giver, q, k)
                h[q] ^= sub
                t[q] |= sub
                self.given[giver][q] |= sub
                self.received[taker][q] |= sub
                moved.append((q, sub))
                count -= k
        k = sum(POPCOUNT[m] for _, m in moved)
        self.sizes[giver] -= k
        self.sizes[taker] += k
        self._emit(event="exchange", **{"from": player_name(giver)}, to=player_name(taker),
                   cards=self._cards_of(sorted(moved)))

    def _prescribed_gift(self, giver: int) -> list[int] | None:
        """The suit masks per rank of the gift ``gifts`` prescribes for ``giver`` this round,
        where the giver holds those cards; else None."""
        cards = self._gifts.get((self.round, player_name(giver)))
        if cards is None:
            return None
        try:
            given = cards_to_hand(cards, self.rules.rank_index)
        except (CardError, TypeError):
            return None
        return given if all(g & ~m == 0 for g, m in zip(given, self.hands[giver])) else None

    def _give_one(self, q: int, mask: int) -> None:
        s, t = self.current, self.give_to
        self.hands[s][q] ^= mask
        self.hands[t][q] |= mask
        self.sizes[s] -= 1
        self.sizes[t] += 1
        self.given[s][q] |= mask
        self.received[t][q] |= mask
        self._give_buffer.append((q, mask))
        self.to_give -= 1
        if self.to_give == 0:
            self._emit(event="exchange", **{"from": player_name(s)}, to=player_name(t),
                       cards=self._cards_of(sorted(self._give_buffer)))
            self.give_to = -1
            self.tasks.pop(0)
            self._run_tasks()

    def _take(self, q: int, mask: int) -> None:
        s = self.current
        self.face_up[q] ^= mask
        self.gone[q] -= 1
        self.hands[s][q] |= mask
        self.sizes[s] += 1
        self.received[s][q] |= mask
        self._swap_take = (q, mask)
        self._recompute_top_alive()
        self.tasks.pop(0)
        self._run_tasks()

    def _lay(self, q: int, mask: int) -> None:
        s = self.current
        self.hands[s][q] ^= mask
        self.sizes[s] -= 1
        self.face_down[q] |= mask
        self.given[s][q] |= mask
        tq, tm = self._swap_take
        order = self.rules.rank_order
        self._emit(event="leftover_swap", player=player_name(s),
                   take=mask_cards(order[tq], tm)[0], lay=mask_cards(order[q], mask)[0])
        self._swap_take = None
        self.tasks.pop(0)
        self._run_tasks()

    # -- round and match end ------------------------------------------------------------------

    def _finish_round(self) -> None:
        n = self.n
        last = next(i for i in range(n) if self.places[i] is None)
        self._out(last, "last")
        places = list(self.places)
        points = [n - p for p in places]
        for i in range(n):
            self.totals[i] += points[i]
        names = self.rules.titles_for()
        self.titles = [names[p - 1] for p in places]
        self.prev_places = places
        self.last_places, self.last_points = places, points
        self.rounds_done += 1
        self.round_places.append(places)
        self._emit(event="round_end", round=self.round,
                   places={player_name(i): places[i] for i in range(n)},
                   titles={player_name(i): self.titles[i] for i in range(n)},
                   points={player_name(i): points[i] for i in range(n)},
                   totals={player_name(i): self.totals[i] for i in range(n)})
        r = self.rules
        over = (self.round >= r.rounds) if r.rounds is not None else (
            max(self.totals) >= r.target_points)
        if not over:
            self._start_round()
            return
        if r.winner == "president":
            self.winners = [places.index(1)]
        else:
            best = max(self.totals)
            self.winners = [i for i in range(n) if self.totals[i] == best]
        self.phase = OVER
        self.tasks = []
        self._emit(event="match_end",
                   totals={player_name(i): self.totals[i] for i in range(n)},
                   winners=[player_name(i) for i in self.winners])

    # -- records, cloning ---------------------------------------------------------------------

    def _emit(self, **event: Any) -> None:
        if self.events is not None:
            self.events.append(event)

    def _cards_of(self, pairs: list[tuple[int, int]]) -> list[str]:
        order = self.rules.rank_order
        return [c for q, m in pairs for c in mask_cards(order[q], m)]

    def clone(self, keep_rng: bool = True) -> "Game":
        """An independent copy that keeps no game record. With ``keep_rng=False`` the copy has
        no random stream and cannot deal another round (cheaper, for searches that end at the
        round's end)."""
        g = object.__new__(Game)
        g.__dict__.update(self.__dict__)
        g.hands = [h[:] for h in self.hands]
        g.sizes = self.sizes[:]
        g.places = self.places[:]
        g.passed = self.passed[:]
        g.plays = self.plays[:]
        g.revealed = self.revealed[:]
        g.given = [x[:] for x in self.given]
        g.received = [x[:] for x in self.received]
        g.face_down = self.face_down[:]
        g.face_up = self.face_up[:]
        g.gone = self.gone[:]
        g.played = self.played[:]
        g.totals = self.totals[:]
        g.titles = self.titles[:]
        g.tasks = self.tasks[:]
        g.round_places = self.round_places[:]
        g._give_buffer = self._give_buffer[:]
        g.events = None
        g._deals = None
        if keep_rng:
            g.rng = np.random.Generator(type(self.rng.bit_generator)())
            g.rng.bit_generator.state = self.rng.bit_generator.state
        else:
            g.rng = None
        return g

    def __repr__(self) -> str:
        return (f"Game({self.rules.preset!r}, players={self.n}, round={self.round}, "
                f"phase={self.phase!r}, to_act={player_name(self.current)})")
