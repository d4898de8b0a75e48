"""Property tests (hypothesis) over random deals and play, at every preset and player count.

Every match is played by a random legal player drawn from the example's own stream; the checks
are written from RULES.md and INTERFACES.md, independently of the engine's code.
"""

from __future__ import annotations

import copy
import os
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arschloch_env.engine import Game, IllegalActionError
from arschloch_env.observation import Encoder, Layout
from arschloch_env.replay import replay_match
from arschloch_env.view import public_view
from conftest import snapshot

PRESETS = ("culo", "culo-points", "culo-ten", "culo-52", "tavern")
# Short matches keep every example fast; rounds 2 reaches the swap and the exchange.
SHORT = {"rounds": 2}
SHORT_POINTS = {"target_points": 3}


def short(preset: str) -> dict:
    return SHORT_POINTS if preset == "culo-points" else SHORT


TABLES = [(preset, n) for preset in PRESETS for n in range(3, 7)]
"""Every preset at every table size: each property runs on all of them, hypothesis draws the
deal and the play."""
seeds = st.tuples(st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1))


def examples_per_table(default: int = 4) -> int:
    """``ARSCHLOCH_EXAMPLES`` from the environment (a deeper run: ``ARSCHLOCH_EXAMPLES=300``),
    else ``default``."""
    text = os.environ.get("ARSCHLOCH_EXAMPLES", "").strip()
    if not text:
        return default
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise ValueError(f"ARSCHLOCH_EXAMPLES={text!r}; allowed: a whole number, at least 1 "
                         f"(hypothesis examples per preset and table size; default {default})")
    return int(text)


EXAMPLES = examples_per_table()
"""Examples per table (80 per property by default)."""


def new_game(preset, n, seed, **kw) -> Game:
    return Game(preset, num_players=n, seed=seed, record=True, **{**short(preset), **kw})


def random_step(g: Game, rng: np.random.Generator) -> int:
    """Plays a random legal action, sometimes naming random cards of the chosen rank."""
    acts = g.legal_actions()
    a = acts[int(rng.integers(len(acts)))]
    m = g.codec.decode(a)
    cards = None
    if m.kind != "pass" and rng.random() < 0.3:
        source = g.face_up if m.kind == "take" else g.hands[g.current]
        rank = g.rules.rank_order[m.rank]
        suits = [s for i, s in enumerate("CSHD") if source[m.rank] >> i & 1]
        cards = [rank + s for s in rng.choice(suits, size=m.count, replace=False)]
    g.step(a, cards=cards)
    return a


# -- independent reference: the legal moves of the seat to act, from its public view ----------

def brute_force_legal(view: dict) -> list[int]:
    rules = view["rules"]
    order = rules["rank_order"]
    R = len(order)
    idx = {r: i for i, r in enumerate(order)}
    held = Counter(c[0] for c in view["hand"])
    ids = set()
    if view["phase"] == "play":
        table = view["table"]
        for rank, count in held.items():
            for k in range(1, count + 1):
                finishing = k == len(view["hand"])
                if rules["no_finish_on_top"] and finishing and rank == order[-1]:
                    continue
                if table is None or (k == len(table["cards"])
                                     and idx[rank] > idx[table["cards"][0][0]]):
                    ids.add(1 + 4 * idx[rank] + (k - 1))
        if table is not None:
            ids.add(0)
    elif view["phase"] in ("give", "lay"):
        ids = {1 + 4 * R + idx[r] for r in held}
    elif view["phase"] == "take":
        ids = {1 + 5 * R + idx[c[0]] for c in view["face_up"]}
    return sorted(ids)


def all_cards(g: Game) -> list[str]:
    """Every card of the round wherever it lies: hands, played, face up, face down, revealed."""
    view = public_view(g, 0)
    order = g.rules.rank_order
    cards = [c for s in range(g.n) for c in g.hand_of(s)] + view["played"] + view["face_up"]
    for q, m in enumerate(g.face_down):
        cards += [order[q] + "CSHD"[i] for i in range(4) if m >> i & 1]
    return cards + [c for shown in view["revealed"] for c in shown]


# -- the properties ------------------------------------------------------------------------------

@pytest.mark.parametrize("preset,n", TABLES)
@settings(max_examples=EXAMPLES)
@given(seeds)
def test_cards_conserved_and_mask_is_brute_force(preset, n, seeds):
    seed, play_seed = seeds
    g = new_game(preset, n, seed)
    deck = sorted(r + s for r in g.rules.rank_order for s in "CSHD")
    rng = np.random.default_rng(play_seed)
    steps = 0
    while not g.is_over:
        cards = all_cards(g)
        assert sorted(cards) == deck
        assert all(size >= 0 for size in g.sizes)
        assert g.sizes == [len(g.hand_of(s)) for s in range(n)]
        view = public_view(g, g.current)
        want = brute_force_legal(view)
        assert g.legal_actions() == want
        assert list(np.flatnonzero(g.legal_mask())) == want
        assert [m["id"] for m in view["legal"]] == want
        assert g.legal_mask().dtype == np.int8 and len(g.legal_mask()) == g.codec.size
        random_step(g, rng)
        steps += 1
    assert steps > 0


@pytest.mark.parametrize("preset,n", TABLES)
@settings(max_examples=EXAMPLES)
@given(seeds)
def test_masked_actions_accepted_unmasked_refused(preset, n, seeds):
    seed, play_seed = seeds
    g = new_game(preset, n, seed)
    rng = np.random.default_rng(play_seed)
    checked = 0
    while not g.is_over:
        if checked == 0 or rng.random() < 0.35:
            mask = g.legal_mask()
            before = snapshot(g)
            for a in range(g.codec.size):
                if mask[a]:
                    g.clone().step(a)
                else:
                    try:
                        g.step(a)
                    except IllegalActionError:
                        pass
                    else:
                        raise AssertionError(f"unmasked action {a} was accepted")
            # neither the refused actions nor the accepted ones on clones changed the game
            assert snapshot(g) == before
            checked += 1
        random_step(g, rng)
    assert g.is_over and checked > 0


@pytest.mark.parametrize("preset,n", TABLES)
@settings(max_examples=EXAMPLES)
@given(seeds)
def test_round_ends_places_points_and_record_semantics(preset, n, seeds):
    seed, play_seed = seeds
    g = new_game(preset, n, seed)
    rng = np.random.default_rng(play_seed)
    while not g.is_over:
        random_step(g, rng)
    ends = [e for e in g.events if e["event"] == "round_end"]
    assert ends
    totals = Counter()
    for e in ends:
        places = e["places"]
        assert sorted(places.values()) == list(range(1, n + 1))
        assert all(e["points"][p] == n - places[p] for p in places)
        assert sum(e["points"].values()) == n * (n - 1) // 2
        totals.update(e["points"])
        assert e["totals"] == {f"player_{s}": totals[f"player_{s}"] for s in range(n)}
    check_record_semantics(g.events)


@pytest.mark.parametrize("preset,n", TABLES)
@settings(max_examples=EXAMPLES)
@given(seeds)
def test_records_replay_identically(preset, n, seeds):
    seed, play_seed = seeds
    g = new_game(preset, n, seed)
    rng = np.random.default_rng(play_seed)
    while not g.is_over:
        random_step(g, rng)
    res = replay_match(list(enumerate(g.events, 1)))
    assert res.ok, res.error
    assert res.game.events == g.events
    assert res.game.totals == g.totals and res.game.winners == g.winners


@pytest.mark.parametrize("preset,n", TABLES)
@settings(max_examples=EXAMPLES)
@given(seeds)
def test_determinism_by_seed(preset, n, seeds):
    seed, play_seed = seeds
    runs = []
    for _ in range(2):
        g = new_game(preset, n, seed)
        rng = np.random.default_rng(play_seed)
        while not g.is_over:
            random_step(g, rng)
        runs.append(g.events)
    assert runs[0] == runs[1]
    # A different seed deals differently (32 cards: the chance of equal deals is nil).
    other = new_game(preset, n, seed + 1)
    assert other.events[1]["hands"] != runs[0][1]["hands"]


@pytest.mark.parametrize("preset,n", TABLES)
@settings(max_examples=EXAMPLES)
@given(seeds)
def test_observation_views_decode_back(preset, n, seeds):
    seed, play_seed = seeds
    g = new_game(preset, n, seed)
    enc = Encoder(g.R)
    layout = Layout(g.R)
    rng = np.random.default_rng(play_seed)
    order = g.rules.rank_order
    while not g.is_over:
        # the seat to act and one other seat, chosen at random, at every step
        for seat in {g.current, int(rng.integers(n))}:
            obs = enc.observe(g, seat)
            assert obs.dtype == np.float32 and obs.shape == (layout.size,)
            v = layout.views(obs)
            counts = Counter(c[0] for c in g.hand_of(seat))
            assert list(v["hand"].sum(axis=1)) == [counts[r] for r in order]
            # thermometer: the first c bits are set
            assert all(list(row) == [1] * int(row.sum()) + [0] * (4 - int(row.sum()))
                       for row in v["hand"])
            view = public_view(g, seat)
            played = Counter(c[0] for c in view["played"])
            assert list(v["played"].sum(axis=1)) == [played[r] for r in order]
            face_up = Counter(c[0] for c in view["face_up"])
            assert list(v["face_up"].sum(axis=1)) == [face_up[r] for r in order]
            rel = [(seat + i) % n for i in range(n)]
            assert list(v["seat_present"]) == [1] * n + [0] * (6 - n)
            assert np.allclose(v["seat_held"][:n] * 10, [view["counts"][s] for s in rel])
            assert list(v["seat_out"][:n]) == [view["places"][s] is not None for s in rel]
            assert list(v["seat_passed"][:n]) == [view["passed"][s] for s in rel]
            for i, s in enumerate(rel):
                place = view["places"][s]
                assert list(v["seat_place"][i]) == [float(place == p) for p in range(1, 7)]
            assert np.allclose(v["seat_total"][:n] * 15, [view["totals"][s] for s in rel])
            titles = ("President", "Vice-President", "Citizen", "Vice-Arschloch", "Arschloch")
            for i, s in enumerate(rel):
                t = view["titles"][s]
                assert list(v["seat_title"][i]) == [float(t == x) for x in titles]
            shown = sum(bin(m).count("1") for m in g.revealed)
            assert list(v["revealed"]) == [float(i < shown) for i in range(4)]
            phase = ("play", "give", "take", "lay").index(g.phase)
            assert list(v["phase"]) == [float(i == phase) for i in range(4)]
            if view["table"] is None:
                assert v["table_rank"].sum() == 0 and v["table_count"].sum() == 0
            else:
                t = view["table"]["cards"]
                assert v["table_rank"][order.index(t[0][0])] == 1 and v["table_rank"].sum() == 1
                assert v["table_count"][len(t) - 1] == 1 and v["table_count"].sum() == 1
                assert v["table_seat"][(view["table"]["seat"] - seat) % n] == 1
            assert v["leading"][0] == float(seat == g.current and g.leading)
            assert v["highest_in_play"].sum() == 1
            assert v["highest_in_play"][g.highest_in_play()] == 1
        random_step(g, rng)


def thermometer(c: int) -> list[float]:
    return [float(i < c) for i in range(4)]


@pytest.mark.parametrize("preset,n", TABLES)
@settings(max_examples=EXAMPLES)
@given(seeds)
def test_card_counting_slices_follow_the_public_view(preset, n, seeds):
    seed, play_seed = seeds
    g = new_game(preset, n, seed)
    enc, layout = Encoder(g.R), Layout(g.R)
    rng = np.random.default_rng(play_seed)
    order = g.rules.rank_order
    R, nf = len(order), g.rules.no_finish_on_top
    while not g.is_over:
        for seat in {g.current, int(rng.integers(n))}:
            v = layout.views(enc.observe(g, seat))
            view = public_view(g, seat)
            held = Counter(c[0] for c in view["hand"])
            revealed = [c for cards in view["revealed"] for c in cards]
            assert {c[0] for c in revealed} <= {order[-1]}
            seen = Counter(c[0] for c in view["hand"] + view["played"] + view["face_up"] +
                           revealed)
            unseen = [4 - seen[r] for r in order]
            opps = [o for o in range(n) if o != seat and view["places"][o] is None]
            most = max((view["counts"][o] for o in opps), default=0)
            # what one opponent in the round can hold of rank q (never a hand of top cards only)
            can_hold = [min(unseen[q], max(most - (nf and q == R - 1), 0)) for q in range(R)]
            beat = [max(can_hold[r + 1:], default=0) for r in range(R)]
            dominant = [0 < held[order[r]] and beat[r] < held[order[r]] for r in range(R)]
            assert [list(x) for x in v["unseen"]] == [thermometer(u) for u in unseen]
            assert [list(x) for x in v["opp_most"]] == [thermometer(c) for c in can_hold]
            assert [list(x) for x in v["beat_most"]] == [thermometer(b) for b in beat]
            assert list(v["own_dominant"]) == [float(d) for d in dominant]
            open_groups = sum(held[order[r]] > 0 and not dominant[r] for r in range(R))
            assert list(v["open_groups"]) == [float(i < open_groups) for i in range(R)]
            fewest = min((view["counts"][o] for o in opps), default=99)
            assert list(v["threat"]) == [float(fewest <= j + 1) for j in range(4)]
        random_step(g, rng)


@pytest.mark.parametrize("preset,n", TABLES)
@settings(max_examples=EXAMPLES)
@given(seeds)
def test_auto_exchange_gives_the_highest_cards(preset, n, seeds):
    seed, play_seed = seeds
    g = new_game(preset, n, seed)
    rng = np.random.default_rng(play_seed)
    while not g.is_over:
        random_step(g, rng)
    order = g.rules.rank_order
    key = {r + s: (order.index(r), "CSHD".index(s)) for r in order for s in "CSHD"}
    hands: dict[str, list[str]] = {}
    checked = 0
    for e in g.events:
        if e["event"] == "round":
            hands = {p: list(h) for p, h in e["hands"].items()}
        elif e["event"] == "leftover_swap":
            hands[e["player"]].append(e["take"])
            hands[e["player"]].remove(e["lay"])
        elif e["event"] == "exchange":
            giver = hands[e["from"]]
            # Automatic gifts (Arschloch, Vice-Arschloch) are the highest cards by rank
            # (within a rank, the giver's suit order chooses).
            if _is_auto(g, e):
                highest = sorted(giver, key=key.get)[-len(e["cards"]):]
                assert sorted(key[c][0] for c in e["cards"]) == [key[c][0] for c in highest]
                checked += 1
            for c in e["cards"]:
                giver.remove(c)
                hands[e["to"]].append(c)
    rounds = sum(e["event"] == "round" for e in g.events)
    assert checked == (rounds - 1) * bool(g.rules.president_exchange) + (
        rounds - 1) * bool(g.rules.vice_exchange)


def _is_auto(g: Game, e: dict) -> bool:
    """The gift of the lower-placed player of a pair (from the record's previous round)."""
    ends = [x for x in g.events if x["event"] == "round_end"]
    rnd = None
    for x in g.events:
        if x["event"] == "round":
            rnd = x["round"]
        if x is e:
            break
    places = ends[rnd - 2]["places"]
    return places[e["from"]] > places[e["to"]]


# -- independent check of the record against the rules -----------------------------------------

def check_record_semantics(events: list[dict]) -> None:
    """Follows the record with an independent model of hands, table and cards out of play:
    plays beat the table, passes only when following, the top-card rule ends a trick exactly
    when it should, and after a trick the right player leads."""
    rules = events[0]["rules"]
    order = rules["rank_order"]
    idx = {r: i for i, r in enumerate(order)}
    top = order[-1]
    players = events[0]["players"]
    n = len(players)
    hands: dict[str, list[str]] = {}
    gone: Counter = Counter()     # cards of a rank played, face up or revealed this round
    table = None                  # (rank index, count, player) of the play to beat
    pending = None                # rank index of a play whose effect is still to be seen
    expect_next = None            # who must act after a trick end
    for e in events[1:]:
        kind = e["event"]
        if pending is not None and kind != "out":
            highest = max((q for q in range(len(order)) if gone[order[q]] < 4), default=-1)
            at_once = rules["top_card_ends_trick"] and pending >= highest
            if kind == "trick_end":
                assert at_once, e
            elif kind != "round_end":
                assert not at_once, ("the top card should have ended the trick", e)
            pending = None
        if kind == "trick_end":  # however it ended, the last play wins the trick
            assert table is not None and table[2] == e["winner"], (e, table)
        if expect_next is not None and kind in ("play", "pass"):
            assert e["player"] == expect_next, (e, expect_next)
            expect_next = None
        if kind == "round":
            hands = {p: list(h) for p, h in e["hands"].items()}
            gone = Counter()
            if e["round"] > 1 and rules["leftover_swap"]:
                gone.update(c[0] for c in e["leftover"])    # turned face up
            table = None
            if e["round"] == 1 and rules["first_leader"] == "lowest_club":
                holder = next((p for p, h in hands.items() if order[0] + "C" in h), None)
                if holder is not None:
                    assert e["leader"] == holder
        elif kind == "leftover_swap":
            gone[e["take"][0]] -= 1
            hands[e["player"]].append(e["take"])
            hands[e["player"]].remove(e["lay"])
        elif kind == "exchange":
            for c in e["cards"]:
                hands[e["from"]].remove(c)
                hands[e["to"]].append(c)
        elif kind == "play":
            ranks = {c[0] for c in e["cards"]}
            assert len(ranks) == 1 and 1 <= len(e["cards"]) <= 4
            r = idx[ranks.pop()]
            k = len(e["cards"])
            if table is not None:
                assert k == table[1] and r > table[0]
            for c in e["cards"]:
                hands[e["player"]].remove(c)
            gone[order[r]] += k
            table = (r, k, e["player"])
            pending = r
        elif kind == "pass":
            assert table is not None, "the leader may not pass"
        elif kind == "out":
            hand = hands[e["player"]]
            if e["reason"] == "only_top":
                assert rules["no_finish_on_top"] and hand and all(c[0] == top for c in hand)
                gone[top] += len(hand)
                hands[e["player"]] = []
            elif e["reason"] == "emptied":
                assert not hand
            else:
                assert e["reason"] == "last" and hand
        elif kind == "trick_end":
            winner = e["winner"]
            s = players.index(winner)
            expect_next = next(players[(s + i) % n] for i in range(n + 1)
                               if hands[players[(s + i) % n]])
            table = None
        elif kind == "round_end":
            assert sum(map(bool, hands.values())) == 1
            table = None


def corrupted_records(events: list[dict]):
    """Copies of a valid record, each with one move against the rules: (what, events)."""
    order = events[0]["rules"]["rank_order"]

    def first(pred) -> int:
        return next(i for i, e in enumerate(events) if pred(i, e))

    following = first(lambda i, e: e["event"] == "play" and events[i - 1]["event"] == "play")
    bad = copy.deepcopy(events)
    bad[following]["cards"] = [order[0] + c[1] for c in bad[following]["cards"]]
    yield "a play that does not beat the table", bad
    leading = first(lambda i, e: e["event"] == "play" and events[i - 1]["event"] in
                    ("round", "trick_end"))
    bad = copy.deepcopy(events)
    bad[leading] = {"event": "pass", "player": events[leading]["player"]}
    yield "a pass at a lead", bad
    trick = first(lambda i, e: e["event"] == "trick_end")
    bad = copy.deepcopy(events)
    bad[trick]["winner"] = next(p for p in events[0]["players"] if p != events[trick]["winner"])
    yield "a trick won by another player", bad
    by_top = first(lambda i, e: e["event"] == "trick_end" and events[i - 1]["event"] == "play"
                   and events[i - 1]["cards"][0][0] == order[-1])
    yield "a top card that did not end its trick", events[:by_top] + events[by_top + 1:]
    emptied = first(lambda i, e: e["event"] == "out" and e["reason"] == "emptied")
    bad = copy.deepcopy(events)
    bad[emptied]["reason"] = "last"
    yield "an emptied hand out as the last", bad


def test_record_semantics_check_finds_each_kind_of_corruption():
    """check_record_semantics is the property tests' independent model of a record: it
    must reject a record changed by one move against the rules."""
    g = new_game("culo", 4, 3)
    rng = np.random.default_rng(3)
    while not g.is_over:
        random_step(g, rng)
    check_record_semantics(g.events)
    corrupted = list(corrupted_records(g.events))
    missed = []
    for what, events in corrupted:
        try:
            check_record_semantics(events)
            missed.append(what)
        except AssertionError:
            pass
    assert len(corrupted) == 5 and missed == []


def test_observation_size_independent_of_player_count():
    for preset, size in (("culo", 413), ("culo-ten", 413), ("culo-52", 593), ("tavern", 593)):
        sizes = {Encoder(Game(preset, num_players=n, seed=0).R).size for n in range(3, 7)}
        assert sizes == {size}
        layout = Layout(52 // 4 if size == 593 else 8)
        assert layout.size == size
        assert max(s.stop for s in layout.slices.values()) == size
        for n in range(3, 7):
            g = Game(preset, num_players=n, seed=n)
            assert Encoder(g.R).observe(g, 0).shape == (size,)
            assert Encoder(g.R).state(g, 0).shape == (Layout(g.R, full_state=True).size,)
