"""The observation and the public view of a seat depend only on what that seat may know.

The property: at decisions of every phase (play, give, take, lay) of random matches of every
preset at 3..6 players, take the real game and build *worlds* that differ from it only in
cards the observing seat cannot see: the other seats' hands and the face-down cards, redealt
by the mc bot's sampler (:meth:`agents.knowledge.Knowledge.sample`, every deal checked with
``Knowledge.consistent``), the revealed top-rank cards kept where they lie, and the
exchange and swap records of the other seats relabelled (the encoder must read what the
observer knows of its exchanges from the observer's own records). For the acting seat and
one other seat per position:

1. ``Encoder.observation(world, seat)`` is bit-identical to ``Encoder.observation(game,
   seat)`` (vector and action mask);
2. ``public_view(world, seat)`` equals ``public_view(game, seat)``;
3. the batched engine (:mod:`arschloch_env.vector`), stepped in lockstep with the reference
   on the same seeds and actions (as ``differential`` in ``tests/test_vector.py``), gives the
   reference observation and mask for the real position, and the same again when the world's
   hidden cards are written into its state row.

The test is not vacuous: it counts the worlds whose hidden cards really differ from the game
(the full-information ``Encoder.state`` differs) and requires most of them to, and it shows
that the same comparison catches deliberately leaky encoders.

Some worlds contradict facts a player at the table could know but that neither the view nor
the observation carries (which seat took which face-up left-over card, who led round 1 under
``lowest_club``; see :class:`agents.knowledge.Knowledge`): such worlds are still fair probes of
a leak, as the observation cannot tell them apart.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pytest

from agents.knowledge import Knowledge
from arschloch_env import vector_kernels as vk
from arschloch_env import vector_state as vs
from arschloch_env.engine import LAY, PLAY, TAKE, Game
from arschloch_env.observation import Encoder
from arschloch_env.rules import PRESETS, make_rules
from arschloch_env.vector import VectorGame
from arschloch_env.vector_obs import write_mask
from arschloch_env.view import public_view

PLAYERS = (3, 4, 5, 6)
GAMES = 3          # matches stepped side by side per preset and table size
STEPS = 160        # lockstep steps: long enough to reach the set-up phases of rounds 2 and 3
PLAY_EVERY = 5     # play decisions checked (every decision of the other phases is)
WORLDS = 2         # worlds per checked position for the acting seat (1 for another seat)


# -- cards -------------------------------------------------------------------------------------

def card_ids(masks) -> list[int]:
    """Card ids (``4 * rank + suit``, as agents.knowledge) of a list of suit masks."""
    return [4 * r + s for r, m in enumerate(masks) for s in range(4) if m >> s & 1]


def masks_of(ids, R: int) -> list[int]:
    out = [0] * R
    for c in ids:
        out[c >> 2] |= 1 << (c & 3)
    return out


def played_cards(g: Game) -> list[int]:
    return [4 * q + s for _, q, m in g.plays for s in range(4) if m >> s & 1]


def card_places(g: Game) -> list[tuple[str, int]]:
    """Where every card of the deck lies: ("hand"/"revealed", seat), ("face_down"/"face_up"/
    "played", -1); the whole deck, each card once, in a sound state."""
    where: list[tuple[str, int] | None] = [None] * (4 * g.R)

    def put(ids, place):
        for c in ids:
            assert where[c] is None, f"card {c} lies twice: {where[c]} and {place}"
            where[c] = place

    for s in range(g.n):
        put(card_ids(g.hands[s]), ("hand", s))
        put([4 * g.top + b for b in range(4) if g.revealed[s] >> b & 1], ("revealed", s))
    put(card_ids(g.face_down), ("face_down", -1))
    put(card_ids(g.face_up), ("face_up", -1))
    put(played_cards(g), ("played", -1))
    assert None not in where, f"cards missing: {[c for c, w in enumerate(where) if w is None]}"
    return where


# -- worlds ------------------------------------------------------------------------------------

def sample_world(g: Game, k: Knowledge, rng: np.random.Generator) -> Game:
    """A copy of ``g`` whose hidden cards are redealt consistently with ``k`` (the observer's
    knowledge, updated at this position)."""
    seat, R, top = k.seat, g.R, g.top
    hands, face_down = k.sample(rng)
    assert k.consistent(hands, face_down) == [], "the sampler broke its own contract"
    w = g.clone(keep_rng=False)
    for s in range(g.n):
        if s != seat:
            w.hands[s] = masks_of(hands.get(s, ()), R)
    w.face_down = masks_of(list(face_down) + sorted(k.laid_known), R)
    # The sampler takes the revealed top-rank cards out of the unseen ones by count only, so
    # it may deal a revealed card (which everyone saw) into a hidden hand: there it trades
    # places with a top card nobody holds in the world (suits never matter for play).
    w.revealed = list(g.revealed)
    revealed = {4 * top + b for m in g.revealed for b in range(4) if m >> b & 1}
    lying = {c for masks in (*w.hands, w.face_down, w.face_up) for c in card_ids(masks)}
    spare = [c for c in range(4 * top, 4 * top + 4)
             if c not in lying | revealed | set(played_cards(g))]
    for masks in (*w.hands, w.face_down):
        for c in sorted(revealed & set(card_ids(masks))):
            masks[top] ^= 1 << (c & 3) | 1 << (spare.pop() & 3)
    relabel_private_records(w, seat, rng)
    card_places(w)
    return w


def relabel_private_records(w: Game, seat: int, rng: np.random.Generator) -> None:
    """What the other seats gave and received, under a random relabelling of the cards (the
    counts stay): the encoder may read the exchange only from the observer's own records."""
    perm = rng.permutation(4 * w.R)
    for s in range(w.n):
        if s != seat:
            w.given[s] = masks_of([int(perm[c]) for c in card_ids(w.given[s])], w.R)
            w.received[s] = masks_of([int(perm[c]) for c in card_ids(w.received[s])], w.R)


def hidden_cards_differ(g: Game, w: Game, seat: int) -> bool:
    return any(w.hands[s] != g.hands[s] for s in range(g.n) if s != seat)


# -- the batched engine ------------------------------------------------------------------------

def with_cards_of(row: np.ndarray, g: Game) -> np.ndarray:
    """The batched engine's state row with every card-holding column taken from ``g``."""
    out = row.copy()
    R = g.R
    for s in range(g.n):
        out[vs.HAND + vs.MAXR * s:vs.HAND + vs.MAXR * s + R] = g.hands[s]
        out[vs.GIVEN + vs.MAXR * s:vs.GIVEN + vs.MAXR * s + R] = g.given[s]
        out[vs.RECV + vs.MAXR * s:vs.RECV + vs.MAXR * s + R] = g.received[s]
        out[vs.REV + s] = g.revealed[s]
    out[vs.FDOWN:vs.FDOWN + R] = g.face_down
    return out


def vector_observation(vg: VectorGame, row: np.ndarray, seat: int) -> tuple[np.ndarray,
                                                                            np.ndarray]:
    """Observation of ``seat`` and the mask of the seat to act, from one state row."""
    obs = np.empty((1, vg.obs_size), np.float32)
    vk.observe_seats(row[None].copy(), vg._config, np.array([seat], np.int64), obs)
    mask = np.zeros(vg.num_actions, np.int8)
    write_mask(row.copy(), vg._config, mask)
    return obs[0], mask


# -- the comparison ----------------------------------------------------------------------------

@dataclass
class Tally:
    """What one run checked, to show the comparison is not vacuous."""

    positions: Counter = field(default_factory=Counter)   # by phase
    worlds: int = 0
    hands_differ: int = 0
    state_differs: int = 0
    face_down_differs: int = 0
    vector_worlds: int = 0


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def explain(enc: Encoder, got: np.ndarray, want: np.ndarray) -> str:
    a, b = enc.layout.views(got[:enc.size]), enc.layout.views(want[:enc.size])
    bad = [name for name in b if not np.array_equal(a[name], b[name])]
    return f"slices differ: {bad or 'beyond the layout'}"


def assert_same_observation(enc: Encoder, world: Game, want: dict, seat: int,
                            where: str) -> None:
    got = enc.observation(world, seat)
    assert same_bits(got["observation"], want["observation"]), \
        f"{where}: {explain(enc, got['observation'], want['observation'])}"
    assert np.array_equal(got["action_mask"], want["action_mask"]), f"{where}: action mask"


def check_position(g: Game, seat: int, k: Knowledge, rng, enc: Encoder, world_enc: Encoder,
                   tally: Tally, vg: VectorGame | None = None, row: np.ndarray | None = None,
                   worlds: int = WORLDS) -> None:
    """Every assertion of the module docstring at one position, for one observing seat."""
    where = f"{g.rules.preset} n={g.n} round {g.round} {g.phase} seat {seat}"
    card_places(g)  # the real position is sound, so a sound world is a fair comparison
    view = public_view(g, seat)
    want = world_enc.observation(g, seat)
    plain, state = enc.observe(g, seat), enc.state(g, seat)
    tally.positions[g.phase if seat == g.current else "other seat"] += 1
    for _ in range(worlds):
        w = sample_world(g, k, rng)
        assert_same_observation(world_enc, w, want, seat, where)
        assert public_view(w, seat) == view, f"{where}: public view"
        tally.worlds += 1
        tally.hands_differ += hidden_cards_differ(g, w, seat)
        tally.face_down_differs += w.face_down != g.face_down
        tally.state_differs += not same_bits(enc.state(w, seat), state)
        if vg is not None:
            got, mask = vector_observation(vg, with_cards_of(row, w), seat)
            assert same_bits(got, plain), f"{where}: batched world: {explain(enc, got, plain)}"
            if seat == g.current:  # the batched mask is always the acting seat's
                assert np.array_equal(mask, want["action_mask"]), f"{where}: batched world mask"
            tally.vector_worlds += 1


# -- driving matches ---------------------------------------------------------------------------

def run_lockstep(preset: str, n: int, seed: int, enc_factory=Encoder,
                 check_vector: bool = True) -> Tally:
    """Steps the batched engine and reference games with the same random legal actions,
    checking positions along the way (see the module docstring)."""
    rules = make_rules(preset, num_players=n)
    vg = VectorGame(rules, num_games=GAMES, seed=seed)
    vg.reset()
    refs = [Game(rules, seed=int(vg.match_seed[j]), match_index=int(vg.match_index[j]),
                 auto_pass=True) for j in range(GAMES)]
    enc, world_enc = Encoder(vg.R), enc_factory(vg.R)
    know = [[Knowledge() for _ in range(n)] for _ in range(GAMES)]
    for j in range(GAMES):
        for s in range(n):
            know[j][s].reset(rules, s)
    rng = np.random.default_rng(seed)
    tally = Tally()
    for t in range(STEPS):
        actions = vg.sample_actions()
        for j, g in enumerate(refs):
            row = vg._st[j].copy()
            s = g.current
            assert int(vg.current_seat[j]) == s
            # The row holds exactly the reference's cards (so writing a world into it
            # changes the hidden cards and nothing else).
            assert np.array_equal(with_cards_of(row, g), row), "batched state differs"
            k = know[j][s]
            due = g.phase != PLAY or (t + j) % PLAY_EVERY == 0
            if due:
                k.update(public_view(g, s))
                got, mask = vector_observation(vg, row, s)
                assert same_bits(got, enc.observe(g, s)) and np.array_equal(
                    mask, g.legal_mask()), "batched engine differs on the real position"
                check_position(g, s, k, rng, enc, world_enc, tally,
                               vg if check_vector else None, row)
                other = (s + 1 + t % (n - 1)) % n
                ko = know[j][other].update(public_view(g, other))
                check_position(g, other, ko, rng, enc, world_enc, tally,
                               vg if check_vector else None, row, worlds=1)
            a = int(actions[j])
            if g.phase in (TAKE, LAY):  # the seat remembers the card it took or laid
                k.note_action(a)
            g.step(a)
        vg.step(actions)
        for j, g in enumerate(refs):
            if g.is_over:
                refs[j] = Game(rules, seed=int(vg.match_seed[j]),
                               match_index=int(vg.match_index[j]), auto_pass=True)
                for ks in know[j]:
                    ks.reset(rules, ks.seat)
    vg.close()
    return tally


CASES = [(p, n) for p in sorted(PRESETS) for n in PLAYERS]


@pytest.mark.parametrize("preset,n", CASES)
def test_observation_and_view_ignore_hidden_cards(preset, n):
    tally = run_lockstep(preset, n, seed=1000 * n + sorted(PRESETS).index(preset))
    assert tally.worlds > 0
    # Every phase the rules have is reached (round 2's set-up comes within STEPS).
    rules = make_rules(preset, num_players=n)
    assert tally.positions["play"] and tally.positions["give"], tally.positions
    if rules.leftover_swap and rules.num_leftover:
        assert tally.positions["take"] and tally.positions["lay"], tally.positions
    # Not vacuous: the worlds really differ from the game in what the seat cannot see.
    # (The state counts cards per rank, so it misses worlds that only swap suits.)
    assert tally.state_differs >= 0.6 * tally.worlds, tally
    if rules.num_leftover:
        assert tally.face_down_differs > 0, tally
    assert tally.vector_worlds == tally.worlds
    print(f"\n{preset} n={n}: {tally}")


# -- the comparison catches leaks --------------------------------------------------------------

class NextHandLeak(Encoder):
    """Leaks the next seat's hand (as a careless feature would)."""

    def observe(self, game, seat):
        nxt = game.hands[(seat + 1) % game.n]
        return np.concatenate([super().observe(game, seat), np.float32(nxt)])


class FaceDownLeak(Encoder):
    """Leaks how many face-down cards there are of each rank."""

    def observe(self, game, seat):
        fd = [bin(m).count("1") for m in game.face_down]
        return np.concatenate([super().observe(game, seat), np.float32(fd)])


class OtherExchangeLeak(Encoder):
    """Leaks what the next seat received in the exchange (not the observer's business)."""

    def observe(self, game, seat):
        got = game.received[(seat + 1) % game.n]
        return np.concatenate([super().observe(game, seat), np.float32(got)])


@pytest.mark.parametrize("leaky,preset,n", [(NextHandLeak, "culo", 4),
                                            (FaceDownLeak, "culo", 3),
                                            (OtherExchangeLeak, "tavern", 4)])
def test_comparison_catches_a_leaky_encoder(leaky, preset, n):
    with pytest.raises(AssertionError, match="slices differ: beyond the layout"):
        run_lockstep(preset, n, seed=7, enc_factory=leaky, check_vector=False)


@pytest.mark.parametrize("preset,n", [("culo", 4), ("tavern", 5), ("culo-points", 3)])
def test_the_observation_of_a_finished_match_agrees_with_its_view(preset, n):
    """After the last round: the titles the round was played under (the view's), no play to
    beat, and the phase all 0 (documented: the match is over)."""
    from arschloch_env.observation import TITLE_INDEX, Layout
    game = Game(make_rules(preset, n), seed=3, auto_pass=True)
    rng = np.random.default_rng(0)
    while not game.is_over:
        game.step(int(rng.choice(game.legal_actions())))
    encoder = Encoder(game.R)
    for seat in range(n):
        view = public_view(game, seat)
        parts = Layout(game.R).views(encoder.observe(game, seat))
        titles = view["titles"][seat:] + view["titles"][:seat]
        assert view["table"] is None and None not in titles
        assert [int(row.argmax()) for row in parts["seat_title"][:n]] == \
            [TITLE_INDEX[t] for t in titles]
        for name in ("table_rank", "table_count", "table_seat", "phase"):
            assert not parts[name].any(), name


def test_views_takes_a_plain_list_and_refuses_a_wrong_size_clearly():
    from arschloch_env.observation import Layout
    layout = Layout(8)
    parts = layout.views([0.0] * layout.size)
    assert parts["hand"].shape == (8, 4) and not parts["hand"].any()
    with pytest.raises(ValueError, match=r"has 413 values, this one has shape \(3,\)"):
        layout.views([0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="pass observation"):
        layout.views({"observation": [0.0] * layout.size})
    for bad in (9, 0, True):
        with pytest.raises(ValueError, match=rf"R {bad!r}: the number of ranks of a deck; "
                                             r"allowed: 8, 13"):
            Layout(bad)


def test_an_encoder_shared_by_two_games_keeps_each_games_round_constants(monkeypatch):
    """The per-round cache of a shared encoder (a server's threads, each with its own game):
    a thread switched the cache to its game while another computed its slices, which then
    went into the first game's entries, and that game's next observation showed the other
    game's exchanged cards."""
    def in_round_2(seed):
        game = Game(make_rules("culo", 4), seed=seed, auto_pass=True)
        rng = np.random.default_rng(seed)
        while not (game.round == 2 and game.phase == PLAY):
            game.step(int(rng.choice(game.legal_actions())))
        return game

    a, b = in_round_2(1), in_round_2(2)
    seat = 0
    shared = Encoder(a.R)
    constants = shared._constants

    def meanwhile(g, s):  # another thread observes its game b in the middle of a's
        if g is a:
            shared.observe(b, seat)
        return constants(g, s)

    monkeypatch.setattr(shared, "_constants", meanwhile)
    for g in (a, b):
        assert np.array_equal(shared.observe(g, seat), Encoder(g.R).observe(g, seat))
    assert not np.array_equal(Encoder(a.R).observe(a, seat), Encoder(b.R).observe(b, seat))
