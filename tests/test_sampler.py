"""Card counting and the sampler of hidden hands (agents.knowledge).

The property: over random game states of every preset and table size, (1) the true deal is
consistent with what the acting seat knows, and (2) every sampled deal is consistent with it
too: the right number of cards per seat, no card the seat has seen, the cards it gave in the
exchange still with their receiver, no rank above the lowest a forced giver gave, and no
hand of top-rank cards only where that would already have been revealed.
"""

from __future__ import annotations

import copy
import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, strategies as st

from agents.greedy import GreedyAgent
from agents.knowledge import Knowledge
from agents.mc import _world_template, build_world
from agents.random_agent import RandomAgent
from agents.runner import observation_of
from arschloch_env.engine import Game
from arschloch_env.observation import Encoder
from arschloch_env.rules import PRESETS, make_rules
from arschloch_env.view import public_view


def card_ids(hand_masks) -> list[int]:
    return [4 * r + s for r, m in enumerate(hand_masks) for s in range(4) if m >> s & 1]


def truth(g: Game, k: Knowledge) -> tuple[dict[int, list[int]], list[int]]:
    hands = {o: card_ids(g.hands[o]) for o in range(g.n) if o != k.seat and g.sizes[o]}
    fd = [c for c in card_ids(g.face_down) if c not in k.laid_known]
    return hands, fd


def run_game(preset: str, n: int, seed: int, steps: int, every: int = 1) -> tuple[int, int]:
    """Plays random/greedy moves, feeding every seat's Knowledge, and checks the knowledge of
    the acting seat every ``every`` decisions; returns how many decisions it checked, and of
    them how many knew where a left-over card the seat left for the second swapper is."""
    rules = make_rules(preset, num_players=n)
    g = Game(rules, seed=seed, auto_pass=True)
    enc = Encoder(g.R)
    rng = np.random.default_rng(seed)
    agents = [RandomAgent(seed + i) if i % 2 else GreedyAgent() for i in range(n)]
    for i, a in enumerate(agents):
        a.reset(rules.to_dict(), i, seed)
    ks = [Knowledge() for _ in range(n)]
    for i, k in enumerate(ks):
        k.reset(rules.to_dict(), i)
    checked = restricted = 0
    for step in range(steps):
        if g.is_over:
            break
        s = g.current
        obs, view = observation_of(g, enc, s), public_view(g, s)
        k = ks[s].update(view)
        if step % every == 0:
            assert k.consistent(*truth(g, k)) == []
            for _ in range(2):
                sh, sfd = k.sample(rng)
                assert k.consistent(sh, sfd) == []
                world = build_world(_world_template(rules), k, sh, sfd)
                assert world.legal_actions() == g.legal_actions()
                assert world.sizes == g.sizes and world.top_alive == g.top_alive
            checked += 1
            restricted += bool(k.restricted)
        a = agents[s].act(obs, view)
        k.note_action(a)
        g.step(a)
    return checked, restricted


@given(preset=st.sampled_from(sorted(PRESETS)), n=st.integers(3, 6),
       seed=st.integers(0, 10 ** 6), steps=st.integers(1, 250))
def test_true_deal_and_samples_are_consistent(preset, n, seed, steps):
    run_game(preset, n, seed, steps, every=3)


def test_every_preset_whole_matches():
    for preset in PRESETS:
        for n in (3, 4, 5, 6):
            assert run_game(preset, n, seed=n, steps=10 ** 6, every=11)[0] > 0


@pytest.mark.parametrize("preset,n", [("culo", 5), ("culo", 6), ("culo-52", 6),
                                      ("culo-52", 5)])
def test_the_first_swapper_knows_where_the_card_it_left_went(preset, n):
    """The 3rd place sees every face-up left-over card; the one it leaves goes to the 4th
    place, who keeps it, lays it face down or (as Vice-Arschloch) may give it on in the
    exchange. The true deal and every sample put it there (Knowledge.consistent)."""
    checked, restricted = run_game(preset, n, seed=1, steps=10 ** 6, every=1)
    assert restricted > 10 and checked > restricted
    # the same from the game record: the card the second swapper took, where it may be
    rules = make_rules(preset, num_players=n)
    g = Game(rules, seed=2, auto_pass=True, record=True)
    enc = Encoder(g.R)
    ks = [Knowledge() for _ in range(n)]
    rng = np.random.default_rng(0)
    sampled = 0
    while not g.is_over:
        s = g.current
        view = public_view(g, s)
        k = ks[s].update(view)
        start = max(i for i, e in enumerate(g.events) if e["event"] == "round")
        this_round = g.events[start:]
        swaps = [e for e in this_round if e["event"] == "leftover_swap"]
        if view["phase"] == "play" and len(swaps) == 2 and swaps[0]["player"] == f"player_{s}":
            second = swaps[1]["player"]
            card = k.deck.index[swaps[1]["take"]]
            allowed = {int(second[7:]), -1} | {int(e["to"][7:]) for e in this_round
                                               if e["event"] == "exchange"
                                               and e["from"] == second}
            if card in k.unseen:
                for _ in range(20):
                    hands, face_down = k.sample(rng)
                    where = next((o for o, h in hands.items() if card in h), -1)
                    assert where in allowed, (swaps, where)
                    sampled += 1
        a = GreedyAgent().act(observation_of(g, enc, s), view)
        k.note_action(a)
        g.step(a)
    assert sampled


def _until(g: Game, enc, agents, pred):
    while not g.is_over and not pred(g):
        s = g.current
        g.step(agents[s].act(observation_of(g, enc, s), None))


@pytest.mark.parametrize("seed", range(8))
def test_exchange_knowledge_president_and_arschloch(seed):
    rules = make_rules("culo", num_players=4)
    g = Game(rules, seed=seed, auto_pass=True)
    enc = Encoder(g.R)
    agents = [GreedyAgent() for _ in range(4)]
    _until(g, enc, agents, lambda g: g.round == 2 and g.phase == "play")
    pres, culo = g.seat_with_place(1), g.seat_with_place(4)
    kp = Knowledge()
    kp.reset(rules, pres)
    kp.update(public_view(g, pres))
    got = card_ids(g.received[pres])
    low = min(got) >> 2  # the lowest rank the Arschloch gave
    assert kp.caps[culo] == 4 * (low + 1)
    returned = set(card_ids(g.given[pres]))
    assert kp.forced[culo] == returned
    # The Arschloch holds no rank above the lowest it gave, besides what it got back.
    assert all(c >> 2 <= low for c in card_ids(g.hands[culo]) if c not in returned)
    # and so its bound per rank above that is what it got back, not one card more
    bound = kp.possible_counts(culo)
    for r in range(low + 1, g.R):
        assert bound[r] == min(sum(c >> 2 == r for c in returned), kp.sizes[culo]), r
    rng = np.random.default_rng(0)
    for _ in range(50):
        hands, fd = kp.sample(rng)
        assert returned <= set(hands[culo])
        assert all(c >> 2 <= low for c in hands[culo] if c not in returned)
    ka = Knowledge()
    ka.reset(rules, culo)
    ka.update(public_view(g, culo))
    assert ka.forced[pres] == set(got) - set(ka.hand)
    for _ in range(20):
        hands, fd = ka.sample(rng)
        assert set(got) - set(ka.hand) <= set(hands[pres])


def test_swap_memory_lay_is_face_down():
    # culo with 3 players: 2 cards left over; from round 2 the 3rd place takes one and lays one.
    rules = make_rules("culo", num_players=3)
    g = Game(rules, seed=1, auto_pass=True)
    enc = Encoder(g.R)
    agents = [GreedyAgent() for _ in range(3)]
    _until(g, enc, agents, lambda g: g.phase == "take")
    s = g.current
    k = Knowledge()
    k.reset(rules, s)
    for _ in range(2):  # take, then lay
        obs, view = observation_of(g, enc, s), public_view(g, s)
        k.update(view)
        a = agents[s].act(obs, view)
        k.note_action(a)
        g.step(a)
    k.update(public_view(g, s))
    laid = set(card_ids(g.face_down)) & set(card_ids(g.given[s]))
    assert k.laid_known == laid and len(laid) == 1
    assert not laid & set(k.unseen)
    hands, fd = truth(g, k)
    assert k.consistent(hands, fd) == []


def test_revealed_top_rank_cards_are_seen_cards():
    """A hand of top-rank cards only is shown when it goes out, suits and all (the view's
    ``revealed``): those cards are not unseen, no sample deals them, and a world holds them
    where the game does."""
    rules = make_rules("culo", num_players=4)
    template = _world_template(rules)
    rng = np.random.default_rng(0)
    checked = 0
    for seed in range(40):
        g = Game(rules, seed=seed, auto_pass=True)
        enc = Encoder(g.R)
        agents = [RandomAgent(seed + i) for i in range(4)]
        knowledge = [Knowledge() for _ in range(4)]
        for i, (a, k) in enumerate(zip(agents, knowledge)):
            a.reset(rules.to_dict(), i, seed)
            k.reset(rules.to_dict(), i)
        while not g.is_over:
            s = g.current
            view = public_view(g, s)
            k = knowledge[s].update(view)
            revealed = set(k.deck.ids([c for cards in view["revealed"] for c in cards]))
            if revealed:
                assert not revealed & set(k.unseen)
                assert k.consistent(*truth(g, k)) == []
                hands, fd = k.sample(rng)
                assert not revealed & {c for h in hands.values() for c in h} | set(fd)
                assert build_world(template, k, hands, fd).revealed == g.revealed
                checked += 1
            a = agents[s].act(observation_of(g, enc, s), view)
            k.note_action(a)
            g.step(a)
    assert checked > 100


def test_note_action_remembers_the_card_the_engine_moves():
    """A take or lay names a rank; the card moved is the one the view's legal move names
    (a lay is the seat's own suit choice, not always the lowest suit)."""
    rules = make_rules("culo", num_players=5, rounds=4)
    rng = np.random.default_rng(0)
    swaps = 0
    for seed in range(30):
        g = Game(rules, seed=seed, auto_pass=True, record=True)
        knowledge = [Knowledge() for _ in range(g.n)]
        for s, k in enumerate(knowledge):
            k.reset(rules, s)
        while not g.is_over:
            s, phase = g.current, g.phase
            a = int(rng.choice(g.legal_actions()))
            if phase in ("take", "lay"):
                knowledge[s].update(public_view(g, s))
                knowledge[s].note_action(a)
            g.step(a)
            if phase == "lay":
                swap = [e for e in g.events if e["event"] == "leftover_swap"][-1]
                k = knowledge[s]
                assert [k.deck.names[k.taken]] == [swap["take"]]
                assert [k.deck.names[c] for c in k.laid] == [swap["lay"]]
                swaps += 1
    assert swaps >= 50


@pytest.mark.parametrize("preset,n", [("culo", 4), ("culo", 5), ("tavern", 4),
                                      ("culo-points", 4)])
def test_a_world_shows_the_searching_seat_its_own_observation(preset, n):
    """A policy that plays its seat in mc's playouts must see there what it sees in the real
    game: every slice of the seat's observation of a sampled world is the real one, but for
    the match progress (a world's match ends with its round), which MCAgent puts back."""
    from arschloch_env.observation import Layout

    rules = make_rules(preset, num_players=n)
    template = _world_template(rules)
    progress = Layout(rules.num_ranks).slices["match_progress"]
    for seed in range(2):
        g = Game(rules, seed=seed, auto_pass=True)
        enc, world_enc = Encoder(g.R), Encoder(g.R)
        knowledge = [Knowledge() for _ in range(n)]
        for i, k in enumerate(knowledge):
            k.reset(rules, i)
        agent = GreedyAgent()
        agent.reset(rules.to_dict(), 0)
        rng = np.random.default_rng(seed)
        while not g.is_over:
            s = g.current
            obs, view = observation_of(g, enc, s), public_view(g, s)
            k = knowledge[s].update(view)
            if g.phase == "play":
                world = build_world(template, k, *k.sample(rng))
                seen = world_enc.observe(world, s)
                seen[progress] = obs["observation"][progress]
                assert np.array_equal(seen, obs["observation"]), (preset, seed, g.round)
            a = agent.act(obs, view)
            k.note_action(a)
            g.step(a)


WORLD_FIELDS = ("hands", "sizes", "places", "active", "next_top", "next_bottom", "table_rank",
                "table_count", "table_seat", "passed", "passes", "revealed", "face_down",
                "face_up", "gone", "played", "top_alive", "titles", "totals", "current",
                "phase", "to_give", "give_to", "tasks", "_swap_take")
"""The engine state that decides the rest of a round, which a world copies from what the seat
knows. (Not the other seats' given and received cards, nor the round's past plays: the seat
never saw the first, and the engine's moves read none of them.)"""


def round_places_after(g: Game, rng: random.Random) -> tuple[list[tuple[list[int], int]],
                                                                list[int]]:
    """Plays ``g`` to the end of its round with uniform moves of ``rng``: ``(the legal moves
    and the move of every step, the round's places)``."""
    rounds, steps = g.rounds_done, []
    while g.rounds_done == rounds:
        legal = g.legal_actions()
        steps.append((legal, legal[rng.randrange(len(legal))]))
        g.step(steps[-1][1])
    return steps, g.round_places[-1]


@pytest.mark.parametrize("preset,n", [(p, n) for p in sorted(PRESETS) for n in (3, 4, 5, 6)])
def test_a_world_dealt_the_true_hidden_cards_is_the_real_round(preset, n):
    """mc scores its moves by the places of playouts in its worlds: a world dealt the real
    hidden cards must hold the engine state of the real game (every field that decides the
    rest of the round, the places already given and the next free ones among them) and
    finish the round in the same places after the same moves, in every phase of it."""
    rules = make_rules(preset, num_players=n, rounds=2)
    template = _world_template(rules)
    rng = random.Random(n)
    phases = Counter()
    for seed in range(3):
        g = Game(rules, seed=seed, auto_pass=True)
        knowledge = [Knowledge() for _ in range(n)]
        for i, k in enumerate(knowledge):
            k.reset(rules, i)
        while not g.is_over:
            s = g.current
            k = knowledge[s].update(public_view(g, s))
            world = build_world(template, k, *truth(g, k))
            for name in WORLD_FIELDS:
                assert getattr(world, name) == getattr(g, name), (name, seed, g.phase)
            steps, places = round_places_after(g.clone(), random.Random(rng.random()))
            for legal, move in steps:
                assert world.legal_actions() == legal, (seed, g.phase, steps)
                world.step(move)
            assert world.last_places == places, (seed, g.phase, steps)
            phases[g.phase, any(g.places)] += 1
            action = rng.choice(g.legal_actions())
            k.note_action(action)
            g.step(action)
    assert phases["play", True] and phases["play", False] and phases["give", False]


class _Recorder:
    """A stand-in policy: uniform logits; keeps every observation it is shown."""
    name = "recorder"

    def __init__(self):
        self.seen = []

    def reset(self, rules, seat, seed=None):
        pass

    def fit_totals(self, observation):
        return observation

    def policy(self, observations, masks):
        self.seen.extend(np.array(observations, np.float32))
        return np.zeros(len(masks), np.int64), np.zeros(np.shape(masks), np.float32)


def test_mc_over_a_policy_shows_it_the_real_match_progress():
    from agents.mc import MCAgent
    from agents.runner import play_match
    from arschloch_env.observation import Layout

    recorder = _Recorder()
    mc = MCAgent(budget=4, min_worlds=2, policy=recorder, top_k=2)
    original = mc.act
    where = Layout(8).slices["match_progress"]
    progresses = set()

    def act(observation, view):
        recorder.seen.clear()
        choice = original(observation, view)
        real = observation["observation"][where]
        assert all(np.array_equal(o[where], real) for o in recorder.seen)
        progresses.add(tuple(real))
        return choice

    mc.act = act
    play_match(make_rules("culo", 4, rounds=3), [mc, "greedy", "greedy", "greedy"], seed=1)
    assert len(progresses) == 3  # one per round


def test_a_deal_is_found_where_most_unseen_cards_are_of_the_top_rank():
    """culo-52 at 6 players with the four aces left over face down: late in the round the
    opponents hold a card or two each and most unseen cards are aces, so nearly every uniform
    deal gives some hand aces only (which no_finish_on_top rules out). Sampling must still
    find consistent deals, or mc would drop its search."""
    rules = make_rules("culo-52", 6, rounds=1)
    deck = [r + s for r in rules.rank_order if r != "A" for s in "CSHD"]
    cards = [deck[i] for i in np.random.default_rng(5).permutation(len(deck))]
    hands = [cards[8 * i:8 * i + 8] for i in range(6)]
    game = Game(rules, seed=5, deals=[(hands, ["AC", "AS", "AH", "AD"])], auto_pass=True)
    encoder = Encoder(game.R)
    knowledge = [Knowledge() for _ in range(6)]
    hardest = 1.0
    while not game.is_over:
        seat = game.current
        k = knowledge[seat].update(public_view(game, seat))
        for t in range(100):
            assert k.consistent(*k.sample(np.random.default_rng(t), tries=3)) == []
        uniform = copy.copy(k)  # the same knowledge, deals not rejected: how many would be
        uniform.rules = rules.replace(no_finish_on_top=False)
        deals = [uniform.sample(np.random.default_rng(t))[0] for t in range(100)]
        hardest = min(hardest, np.mean([not any(all(c >> 2 == k.top for c in h)
                                                for h in d.values()) for d in deals]))
        game.step(GreedyAgent().act(observation_of(game, encoder, seat), None))
    assert hardest < 0.1, hardest  # the position the test is for arose


def broken_deals(k: Knowledge, hands: dict[int, list[int]], face_down: list[int]):
    """Deals made from the true one by a change that contradicts ``k``: each its kind, the
    hands, the face-down cards and the words :meth:`Knowledge.consistent` must say of it."""
    seats = sorted(s for s, h in hands.items() if h)
    a = seats[0]
    if k.hand:
        changed = copy.deepcopy(hands)
        changed[a][0] = k.hand[0]
        yield "seen", changed, face_down, "seen cards dealt"
    changed = copy.deepcopy(hands)
    changed[a].append(changed[a][0])
    yield "twice", changed, face_down, "a card is dealt twice"
    if len(seats) > 1:
        changed = copy.deepcopy(hands)
        changed[seats[1]].append(changed[a].pop())
        yield "size", changed, face_down, f"seat {a}: {len(hands[a]) - 1} cards"
    if face_down:
        yield "face down", hands, face_down[1:], f"{len(face_down) - 1} face-down cards"
    for s, forced in k.forced.items():
        inside = [c for c in hands.get(s, []) if c in forced]
        outside = [(o, i) for o in seats if o != s for i, c in enumerate(hands[o])
                   if c not in forced and c < k.caps.get(s, c + 1)]
        if inside and outside:
            o, i = outside[0]
            changed = copy.deepcopy(hands)
            j = changed[s].index(inside[0])
            changed[s][j], changed[o][i] = changed[o][i], changed[s][j]
            yield "forced", changed, face_down, f"seat {s}: misses forced cards"
    for s, cap in k.caps.items():
        above = [(o, i) for o in seats if o != s for i, c in enumerate(hands[o]) if c >= cap]
        if above and hands.get(s):
            o, i = above[0]
            changed = copy.deepcopy(hands)
            j = next((j for j, c in enumerate(changed[s]) if c not in k.forced.get(s, ())),
                     None)
            if j is not None:
                changed[s][j], changed[o][i] = changed[o][i], changed[s][j]
                yield "cap", changed, face_down, "above its cap"
    if k.rules.no_finish_on_top:
        top_cards = [c for c in k.unseen if c >> 2 == k.top]
        for s in seats:
            if 0 < len(hands[s]) <= len(top_cards) and not k.forced.get(s) and s not in k.caps:
                rest = [c for c in k.unseen if c not in top_cards[:len(hands[s])]]
                changed = {o: [] for o in seats}
                changed[s] = top_cards[:len(hands[s])]
                for o in seats:
                    if o != s:
                        changed[o], rest = rest[:len(hands[o])], rest[len(hands[o]):]
                yield "top only", changed, rest, f"seat {s}: only top-rank cards"
                break
    for c, places in k.restricted.items():
        holder = next((s for s in seats if c in hands[s]), None)
        elsewhere = [o for o in seats if o not in places]
        if holder is not None and elsewhere:
            o = elsewhere[0]
            changed = copy.deepcopy(hands)
            i = changed[holder].index(c)
            changed[holder][i], changed[o][0] = changed[o][0], c
            yield "misplaced", changed, face_down, "cards left for the second swapper elsewhere"


def test_consistent_names_every_contradiction_it_checks():
    """The card-counting tests take an empty answer of ``consistent`` for soundness; here it
    must find what is wrong with deals made to contradict the knowledge, each in its own
    words, over the states of whole matches with exchanges and left-over swaps."""
    said: Counter[str] = Counter()
    for preset, n, seed in [("culo", 4, 1), ("culo", 5, 2), ("culo-52", 6, 3), ("tavern", 4, 4),
                            ("culo", 3, 5), ("culo-ten", 4, 6)]:
        g = Game(make_rules(preset, num_players=n), seed=seed, auto_pass=True)
        ks = [Knowledge() for _ in range(n)]
        for s, k in enumerate(ks):
            k.reset(g.rules.to_dict(), s)
        rng = np.random.default_rng(seed)
        while not g.is_over:
            k = ks[g.current].update(public_view(g, g.current))
            hands, face_down = truth(g, k)
            if hands:
                assert k.consistent(hands, face_down) == []
                for kind, changed, fd, words in broken_deals(k, hands, face_down):
                    errors = k.consistent(changed, fd)
                    assert any(words in e for e in errors), (kind, words, errors)
                    said[kind] += 1
            a = int(rng.choice(g.legal_actions()))
            if g.phase in ("take", "lay"):
                k.note_action(a)
            g.step(a)
    assert len(said) == 8, said
