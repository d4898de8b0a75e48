"""The rules engines against RULES.md: rarely used rule options and their combinations.

The heart is :class:`RecordChecker`, a second reading of RULES.md and INTERFACES.md written
without the engine's code: it replays a match's game record and checks every deal, leader,
left-over swap, exchange, play, pass, trick end, place, total and the match end. It is run over
every preset and table size and over random combinations of every rules field (the existing
tests play the presets and a handful of fixed overrides). The batched engine is held to the
reference on combinations that no other test plays, and the rules validation must answer every
bad configuration with a RulesError, never a TypeError.
"""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from arschloch_env.engine import Game
from arschloch_env.rules import PRESETS, RulesError, make_rules

SUITS = "CSHD"


# -- an independent reading of the rules, applied to a game record ------------------------------

class RecordChecker:
    """Checks one match's events (INTERFACES.md "Game records") against RULES.md."""

    def __init__(self, events: list[dict]):
        self.events = events
        self.i = 0
        match = self._next("match")
        self.index = match["index"]
        self.rules = match["rules"]
        self.players = match["players"]
        self.n = len(self.players)
        self.order = self.rules["rank_order"]
        self.rank = {r: q for q, r in enumerate(self.order)}
        self.seat = {p: s for s, p in enumerate(self.players)}
        self.totals = [0] * self.n
        self.prev_places: list[int] | None = None

    def check(self) -> int:
        """Checks the whole match; returns the number of rounds played."""
        rounds = 0
        while self._peek()["event"] != "match_end":
            rounds += 1
            self._check_round(rounds)
            assert (self._peek()["event"] == "match_end") == self._match_over(rounds), rounds
        self._check_match_end()
        assert self.i == len(self.events)
        return rounds

    # -- event cursor

    def _peek(self) -> dict:
        return self.events[self.i]

    def _next(self, kind: str) -> dict:
        e = self.events[self.i]
        assert e["event"] == kind, (self.i, kind, e)
        self.i += 1
        return e

    def _card_key(self, card: str) -> tuple[int, int]:
        return self.rank[card[0]], SUITS.index(card[1])

    def _seat_with_prev_place(self, place: int) -> int:
        return self.prev_places.index(place)

    # -- a round

    def _check_round(self, rnd: int) -> None:
        e = self._next("round")
        assert e["round"] == rnd
        self.hands = [list(e["hands"][p]) for p in self.players]
        self.leader = self.seat[e["leader"]]
        self._check_deal(rnd, e["leftover"])
        self._check_leader(rnd)
        self.gone = Counter()           # cards of each rank played, face up or revealed
        if rnd > 1:
            self._check_swaps(list(e["leftover"]))
            self._check_exchange()
        self._check_play()

    def _check_deal(self, rnd: int, leftover: list[str]) -> None:
        n, deck = self.n, 4 * len(self.order)
        sizes = [len(h) for h in self.hands]
        dealt = [c for h in self.hands for c in h] + leftover
        assert len(dealt) == len(set(dealt)) == deck
        if self.rules["deal"] == "equal":
            assert sizes == [deck // n] * n
            return
        # All dealt one at a time from the leader; round 1 under lowest_club from seat 0.
        lowest_club_r1 = rnd == 1 and self.rules["first_leader"] == "lowest_club"
        start = 0 if lowest_club_r1 else self.leader
        assert sizes == [deck // n + ((s - start) % n < deck % n) for s in range(n)], sizes

    def _check_leader(self, rnd: int) -> None:
        if rnd > 1:
            assert self.leader == self._seat_with_prev_place(self.n), "the Arschloch leads"
        elif self.rules["first_leader"] == "rotate":
            assert self.leader == self.index % self.n
        else:
            # The club of the lowest rank or, when it lies aside, the lowest dealt card.
            lowest = min((c for h in self.hands for c in h), key=self._card_key)
            assert lowest in self.hands[self.leader], (lowest, self.leader)

    def _check_swaps(self, leftover: list[str]) -> None:
        if not (self.rules["leftover_swap"] and leftover):
            assert self._peek()["event"] != "leftover_swap"
            return
        face_up = leftover
        self.gone.update(c[0] for c in face_up)
        for place in (3, 4):
            if place > self.n or not face_up:
                continue
            e = self._next("leftover_swap")
            s = self._seat_with_prev_place(place)
            assert self.seat[e["player"]] == s, (place, e)
            assert e["take"] in face_up
            face_up.remove(e["take"])
            self.gone[e["take"][0]] -= 1
            self.hands[s].append(e["take"])
            assert e["lay"] in self.hands[s]        # the card just taken included
            self.hands[s].remove(e["lay"])
        assert self._peek()["event"] != "leftover_swap"

    def _check_exchange(self) -> None:
        n, r = self.n, self.rules
        pairs = [(n, 1, r["exchange_cards_3p"] if n == 3 else r["exchange_cards"])]
        if n >= 4:
            pairs.append((n - 1, 2, r["vice_exchange_cards"]))
        for low_place, high_place, count in pairs:
            if not count:
                continue
            low = self._seat_with_prev_place(low_place)
            high = self._seat_with_prev_place(high_place)
            before = list(self.hands[low])
            gift = self._exchange_step(low, high, count)
            # The automatic gift is the giver's highest cards by rank (RULES.md: suits never
            # matter for play; which suit of a rank goes is the giver's).
            assert sorted(self._card_key(c)[0] for c in gift) == [
                self._card_key(c)[0] for c in sorted(before, key=self._card_key)[-count:]], (
                gift, before)
            self._exchange_step(high, low, count)
        assert self._peek()["event"] != "exchange"

    def _exchange_step(self, giver: int, taker: int, count: int) -> list[str]:
        e = self._next("exchange")
        assert (self.seat[e["from"]], self.seat[e["to"]]) == (giver, taker), e
        assert len(e["cards"]) == count
        for c in e["cards"]:
            self.hands[giver].remove(c)
            self.hands[taker].append(c)
        return e["cards"]

    # -- the tricks

    def _check_play(self) -> None:
        n = self.n
        self.places: list[int | None] = [None] * n
        self.next_top, self.next_bottom = 1, n
        for d in range(n):                       # only-top hands after the exchange
            s = (self.leader + d) % n
            if self._holding_count() > 1 and self._only_top(s):
                self._reveal(s)
        cur = self._leader_or_next(self.leader)
        table = None                             # (rank index, count, seat)
        passes = 0
        while self._holding_count() > 1:
            e = self.events[self.i]
            self.i += 1
            assert e.get("player") == self.players[cur], (self.i, e, cur)
            if e["event"] == "pass":
                assert table is not None, "the leader may not pass"
                passes += 1
                if passes == len([s for s in self._holding() if s != table[2]]):
                    cur, table, passes = self._trick_end(table[2]), None, 0
                else:
                    cur = self._next_holder(cur)
                continue
            table = self._check_one_play(e, cur, table)
            passes = 0
            if self._holding_count() == 1:
                break
            if self.rules["top_card_ends_trick"] and table[0] >= self._highest_in_play():
                cur, table = self._trick_end(cur), None
            else:
                cur = self._next_holder(cur)
        self._check_out(self._holding()[0], "last")
        self._check_round_end()

    def _check_one_play(self, e: dict, s: int, table):
        assert e["event"] == "play", e
        cards = e["cards"]
        assert len({c[0] for c in cards}) == 1 and 1 <= len(cards) <= 4
        q = self.rank[cards[0][0]]
        assert all(c in self.hands[s] for c in cards)
        if table is not None:
            assert len(cards) == table[1] and q > table[0], (cards, table)
        if self.rules["no_finish_on_top"] and len(cards) == len(self.hands[s]):
            assert cards[0][0] != self.order[-1], "finished on the top rank"
        for c in cards:
            self.hands[s].remove(c)
        self.gone[cards[0][0]] += len(cards)
        if not self.hands[s]:
            self._check_out(s, "emptied")
        elif self._only_top(s):
            self._reveal(s)
        return q, len(cards), s

    def _highest_in_play(self) -> int:
        return max((q for q, r in enumerate(self.order) if self.gone[r] < 4), default=-1)

    def _only_top(self, s: int) -> bool:
        h = self.hands[s]
        return (self.rules["no_finish_on_top"] and self.places[s] is None and bool(h)
                and all(c[0] == self.order[-1] for c in h))

    def _reveal(self, s: int) -> None:
        self._check_out(s, "only_top")
        self.gone[self.order[-1]] += len(self.hands[s])
        self.hands[s] = []

    def _check_out(self, s: int, reason: str) -> None:
        place = self.next_top if reason == "emptied" else self.next_bottom
        assert self._next("out") == {"event": "out", "player": self.players[s],
                                     "place": place, "reason": reason}
        self.places[s] = place
        if reason == "emptied":
            self.next_top += 1
        else:
            self.next_bottom -= 1

    def _trick_end(self, winner: int) -> int:
        assert self._next("trick_end") == {"event": "trick_end", "winner": self.players[winner]}
        return self._leader_or_next(winner)

    def _holding(self) -> list[int]:
        return [s for s in range(self.n) if self.places[s] is None]

    def _holding_count(self) -> int:
        return len(self._holding())

    def _next_holder(self, s: int) -> int:
        return next((s + d) % self.n for d in range(1, self.n + 1)
                    if self.places[(s + d) % self.n] is None)

    def _leader_or_next(self, s: int) -> int:
        return s if self.places[s] is None else self._next_holder(s)

    # -- round and match end

    def _check_round_end(self) -> None:
        e = self._next("round_end")
        n = self.n
        assert e["places"] == {self.players[s]: self.places[s] for s in range(n)}
        for s in range(n):
            self.totals[s] += n - self.places[s]
        assert e["totals"] == {self.players[s]: self.totals[s] for s in range(n)}
        self.prev_places = list(self.places)

    def _match_over(self, rounds: int) -> bool:
        if self.rules["rounds"] is not None:
            return rounds >= self.rules["rounds"]
        return max(self.totals) >= self.rules["target_points"]

    def _check_match_end(self) -> None:
        e = self._next("match_end")
        if self.rules["winner"] == "president":
            want = [self._seat_with_prev_place(1)]
        else:
            want = [s for s in range(self.n) if self.totals[s] == max(self.totals)]
        assert e["winners"] == [self.players[s] for s in want]


# -- playing matches ----------------------------------------------------------------------------

def play_match(g: Game, rng: np.random.Generator) -> Game:
    """Random legal play, leaning towards playing cards so that rounds end quickly."""
    while not g.is_over:
        acts = g.legal_actions()
        plays = [a for a in acts if a]
        pool = plays if plays and rng.random() < 0.6 else acts
        g.step(pool[int(rng.integers(len(pool)))])
    return g


def random_rules(rng: random.Random):
    """A valid rules object with any field overridden at random."""
    preset = rng.choice(list(PRESETS))
    n = rng.randint(3, 6)
    ov: dict = {}
    if rng.random() < 0.5:
        ov["deal"] = rng.choice(["equal", "all"])
    for field in ("leftover_swap", "no_finish_on_top", "top_card_ends_trick"):
        if rng.random() < 0.3:
            ov[field] = rng.random() < 0.5
    if rng.random() < 0.3:
        ov["first_leader"] = rng.choice(["lowest_club", "rotate"])
    if rng.random() < 0.3:
        ov["exchange_cards"] = rng.randint(0, 3)
        ov["vice_exchange_cards"] = rng.randint(0, ov["exchange_cards"])
    if rng.random() < 0.3:
        ov["exchange_cards_3p"] = rng.randint(0, 3)
    if rng.random() < 0.3:
        ov["winner"] = rng.choice(["president", "points"])
    if rng.random() < 0.5:
        ov["rounds"] = rng.randint(1, 4)
    else:
        ov["target_points"] = rng.randint(1, 8)
    if rng.random() < 0.2:
        order = list(make_rules(preset, n).rank_order)
        rng.shuffle(order)
        ov["rank_order"] = order
    return make_rules(preset, n, **ov)


def features(events: list[dict]) -> set[str]:
    """What a match exercised, so that the sweeps below cannot pass by never reaching a rule."""
    seen = set()
    for e in events:
        kind = e["event"]
        seen.add(kind)
        if kind == "out":
            seen.add("out:" + e["reason"])
        if kind == "match_end" and len(e["winners"]) > 1:
            seen.add("shared_win")
    return seen


# -- the sweeps ----------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [3, 4, 5, 6])
@pytest.mark.parametrize("preset", list(PRESETS))
def test_presets_follow_rules_md_on_every_table_size(preset, n):
    rules = make_rules(preset, n, **({"target_points": 6} if preset == "culo-points"
                                     else {"rounds": 3}))
    rng = np.random.default_rng(n)
    seen = set()
    for k in range(6):
        g = play_match(Game(rules, seed=100 * n + k, match_index=k, record=True), rng)
        assert RecordChecker(g.events).check() >= 1
        seen |= features(g.events)
    assert {"exchange", "trick_end", "out:emptied", "out:last"} <= seen
    if rules.leftover_swap and rules.num_leftover:
        assert "leftover_swap" in seen


def test_random_rule_combinations_follow_rules_md():
    """Every rules field overridden at random, alone and in combination."""
    rng = random.Random(2024)
    seen = set()
    for t in range(250):
        rules = random_rules(rng)
        g = Game(rules, seed=rng.randrange(2**31), match_index=rng.randrange(12), record=True,
                 auto_pass=rng.random() < 0.5)
        play_match(g, np.random.default_rng(t))
        try:
            RecordChecker(g.events).check()
        except AssertionError as exc:
            raise AssertionError(f"match {t} under {rules.to_dict()}: {exc}") from exc
        seen |= features(g.events)
    assert {"leftover_swap", "exchange", "out:only_top", "out:last", "shared_win"} <= seen


# -- the batched engine on combinations no other test plays ---------------------------------------

@pytest.mark.parametrize("overrides", [
    dict(preset="tavern", first_leader="lowest_club", num_players=3, rounds=2),
    dict(preset="tavern", deal="equal", leftover_swap=True, num_players=6, rounds=2),
    dict(preset="tavern", deal="equal", leftover_swap=True, num_players=3, rounds=3),
    dict(preset="culo", winner="points", num_players=5, rounds=3),
    dict(preset="culo-points", winner="president", target_points=5, num_players=3),
    dict(preset="culo-52", deal="all", first_leader="rotate", num_players=5, rounds=2),
    dict(preset="culo", exchange_cards_3p=0, num_players=3, rounds=3),
    dict(preset="culo", exchange_cards=3, vice_exchange_cards=0, num_players=6, rounds=2),
    dict(preset="culo-ten", no_finish_on_top=False, top_card_ends_trick=False, num_players=4,
         rounds=2),
])
def test_vector_engine_equals_reference_on_rare_combinations(tmp_path, overrides):
    from test_vector import differential
    overrides = dict(overrides)
    rules = make_rules(overrides.pop("preset"), **overrides)
    assert differential(tmp_path, rules, B=16, steps=300, seed=5) >= 8


# -- rare rules, hand-checked ----------------------------------------------------------------------

def test_lowest_club_with_all_cards_dealt_deals_round1_from_seat_0():
    # RULES.md 2: "When all cards are dealt under this rule, round-1 dealing starts at seat 0",
    # also when the 3C holder, who leads, sits elsewhere (tavern, three players: 18/17/17).
    rules = make_rules("tavern", 3, first_leader="lowest_club")
    for seed in range(6):
        g = Game(rules, seed=seed, record=True)
        hands = g.events[1]["hands"]
        assert [len(hands[f"player_{s}"]) for s in range(3)] == [18, 17, 17]
        assert "3C" in hands[f"player_{g.leader}"]
    rest = [r + s for r in "3456789TJQKA2" for s in SUITS if r + s != "3C"]
    hands = [rest[:18], rest[18:35], ["3C"] + rest[35:]]      # 3C with seat 2
    assert Game(rules, deals=[(hands, [])]).leader == 2


def test_president_winner_under_target_points_is_the_last_president():
    # winner "president" with target_points: the match ends in the round someone reaches the
    # target, and the President of that round wins even when another seat has more points.
    rules = make_rules("culo-points", 4, winner="president", target_points=7)
    for seed in range(200):
        g = play_match(Game(rules, seed=seed, record=True), np.random.default_rng(seed))
        ends = [e for e in g.events if e["event"] == "round_end"]
        president = min(ends[-1]["places"], key=ends[-1]["places"].get)
        totals = ends[-1]["totals"]
        if totals[president] < max(totals.values()):
            break
    else:
        pytest.fail("no match where the last President is not the points leader")
    assert all(max(e["totals"].values()) < 7 for e in ends[:-1])
    assert max(totals.values()) >= 7
    assert g.events[-1]["winners"] == [president]


# -- rules validation: every bad configuration is a RulesError naming the field ------------------

@pytest.mark.parametrize("bad", [["culo"], {"name": "culo"}, 5, None])
def test_preset_that_is_not_a_name_is_a_rules_error(bad):
    with pytest.raises(RulesError) as e:
        make_rules({"preset": bad, "num_players": 4})
    assert "preset" in str(e.value) and all(p in str(e.value) for p in PRESETS)


@pytest.mark.parametrize("base", ["culo", make_rules("culo", 4)])
def test_preset_given_twice_is_a_rules_error(base):
    with pytest.raises(RulesError) as e:
        make_rules(base, 4, preset="tavern")
    msg = str(e.value)
    assert msg.startswith("preset:") and "'culo'" in msg and "'tavern'" in msg
    assert make_rules(base, 4, preset="culo", rounds=2).to_dict() == make_rules(
        "culo", 4, rounds=2).to_dict()


def test_vector_game_reports_a_preset_given_twice():
    from arschloch_env.vector import VectorGame
    with pytest.raises(RulesError, match="preset"):
        VectorGame("culo", 4, num_games=1, preset="tavern")
