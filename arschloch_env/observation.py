"""The observation: one flat float32 vector with named slices, documented once here.

The layout depends only on the number of ranks ``R`` of the deck (8 or 13), never on the number
of players: seat features are padded to 6 seats, relative to the observer (offset 0 is the
observer, 1 the next seat clockwise, ...), with a ``seat_present`` flag. So one policy plays
every table size of a deck.

"Thermometer" encodes a count c of a rank as four bits, the first c of them 1.

A new layout version only appends slices (version 2 added the card-counting ones after
``seat_total``), so a policy made for an earlier version reads the leading part of the vector
(:class:`agents.bundle.BundleAgent`).

``state`` (full information, for centralised critics) is the observation followed by every
seat's hand (relative order) and the face-down cards (left-over or laid down).
"""

from __future__ import annotations

import functools
import math
import struct
from array import array
from dataclasses import dataclass
from itertools import accumulate

import numpy as np

from arschloch_env.cards import POPCOUNT

SEATS = 6
DECK_RANKS = (8, 13)
OBS_VERSION = 2
LAST_SLICE = {1: "seat_total", 2: "threat"}
"""The last slice of the observation in each layout version (later versions append)."""
TITLE_INDEX = {"President": 0, "Vice-President": 1, "Citizen": 2, "Vice-Arschloch": 3,
               "Arschloch": 4}
PHASE_INDEX = {"play": 0, "give": 1, "take": 2, "lay": 3}


def _table(R: int) -> list[tuple[str, tuple[int, ...], str]]:
    """(name, shape, meaning) of every slice, in order."""
    return [
        ("hand", (R, 4), "own cards per rank, thermometer"),
        ("played", (R, 4), "cards of each rank played so far this round, thermometer"),
        ("face_up", (R, 4), "face-up left-over cards still on the table, thermometer"),
        ("revealed", (4,), "top-rank cards shown this round by hands that held only them, "
                           "thermometer"),
        ("highest_in_play", (R,), "one-hot: highest rank not yet wholly played, face up or "
                                  "revealed (a play of it ends the trick under "
                                  "top_card_ends_trick)"),
        ("table_rank", (R,), "one-hot rank of the play to beat (all 0 when leading)"),
        ("table_count", (4,), "one-hot number of cards of the play to beat"),
        ("table_seat", (SEATS,), "one-hot relative seat that made the play to beat"),
        ("leading", (1,), "1 when the observer is to lead a trick"),
        ("given", (R, 4), "cards the observer gave in this round's exchange or laid down in "
                          "the left-over swap, thermometer"),
        ("received", (R, 4), "cards the observer received in this round's exchange or took "
                             "in the swap, thermometer"),
        ("phase", (4,), "one-hot phase: play, give, take, lay (all 0 once the match is over)"),
        ("to_give", (4,), "one-hot cards still to give (0..3) when the observer is giving"),
        ("match_progress", (2,), "round / rounds (or best total / target_points); 1 in the "
                                 "match's last fixed round"),
        ("seat_present", (SEATS,), "1 for seats at the table"),
        ("seat_held", (SEATS,), "cards held / 10"),
        ("seat_out", (SEATS,), "1 when the seat has a place this round"),
        ("seat_passed", (SEATS,), "1 when the seat passed since the last play of this trick"),
        ("seat_place", (SEATS, SEATS), "one-hot place (1st..6th) taken this round"),
        ("seat_title", (SEATS, 5), "one-hot title of the previous round (President, "
                                   "Vice-President, Citizen, Vice-Arschloch, Arschloch)"),
        ("seat_total", (SEATS,), "match points so far / 15"),
        # Card counting (version 2): functions of the slices above, spelled out because a
        # small network learns the game several times faster with them than without.
        ("unseen", (R, 4), "cards of each rank the observer has not seen (not in its hand, "
                           "played, face up or revealed: held by opponents or face down), "
                           "thermometer"),
        ("opp_most", (R, 4), "the most cards of each rank one opponent still in the round can "
                             "hold: unseen, at most the largest opponent's hand size (one "
                             "fewer of the top rank under no_finish_on_top), thermometer"),
        ("beat_most", (R, 4), "the most cards of one higher rank an opponent can hold (the "
                              "largest opp_most above the rank): k cards of the rank, led, "
                              "win the trick when this is below k, thermometer"),
        ("own_dominant", (R,), "1 for each rank whose cards in the observer's hand, led "
                               "together, no opponent can beat"),
        ("open_groups", (R,), "thermometer of the observer's ranks that are not dominant"),
        ("threat", (4,), "bit j: an opponent still in the round holds at most j + 1 cards"),
    ]


def _state_extra(R: int) -> list[tuple[str, tuple[int, ...], str]]:
    return [
        ("all_hands", (SEATS, R, 4), "every seat's hand (relative order), thermometer"),
        ("face_down", (R, 4), "face-down cards: hidden left-over cards and laid-down cards"),
    ]


@functools.cache
def _offsets(R: int, full_state: bool) -> tuple[tuple[str, slice], ...]:
    """(name, slice) of every slice of :class:`Layout` ``(R, full_state)``, in order; cached,
    because agents and encoders look them up at every match start."""
    out, o = [], 0
    for name, shape, _ in Layout(R, full_state).entries:
        size = math.prod(shape)
        out.append((name, slice(o, o + size)))
        o += size
    return tuple(out)


@dataclass(frozen=True)
class Layout:
    """Offsets of the named slices for a deck of ``R`` ranks."""

    R: int
    full_state: bool = False

    def __post_init__(self):
        if isinstance(self.R, bool) or self.R not in DECK_RANKS:
            raise ValueError(f"R {self.R!r}: the number of ranks of a deck; allowed: "
                             f"{', '.join(map(str, DECK_RANKS))}")

    @property
    def entries(self) -> list[tuple[str, tuple[int, ...], str]]:
        return _table(self.R) + (_state_extra(self.R) if self.full_state else [])

    @property
    def slices(self) -> dict[str, slice]:
        return dict(_offsets(self.R, self.full_state))

    def version_size(self, version: int) -> int:
        """The size of the observation in an earlier layout version: its leading part."""
        return self.slices[LAST_SLICE[version]].stop

    @property
    def size(self) -> int:
        return _offsets(self.R, self.full_state)[-1][1].stop

    def views(self, vec: np.ndarray) -> dict[str, np.ndarray]:
        """Named, reshaped views into an observation (or a batch of them: leading axes kept).

        Raises:
            ValueError: ``vec`` is not an observation vector of this layout (e.g. the AEC
                observation dict itself rather than its ``"observation"`` entry).
        """
        if isinstance(vec, dict):
            raise ValueError("views() takes the observation vector: pass "
                             "observation[\"observation\"], not the whole dict")
        vec = np.asarray(vec)  # a list of floats is one too
        if vec.shape[-1:] != (self.size,):
            raise ValueError(f"an observation of this layout has {self.size} values, this one "
                             f"has shape {vec.shape}")
        shapes = {name: shape for name, shape, _ in self.entries}
        lead = vec.shape[:-1]
        return {name: vec[..., s].reshape(lead + shapes[name]) for name, s in self.slices.items()}

    def markdown(self) -> str:
        rows = ["| slice | shape | offset | meaning |", "|---|---|---|---|"]
        for (name, shape, meaning), s in zip(self.entries, self.slices.values()):
            rows.append(f"| `{name}` | {shape} | {s.start} | {meaning} |")
        return "\n".join(rows)


def _floats(values) -> bytes:
    return struct.pack(f"{len(values)}f", *values)


def _onehots(size: int) -> tuple[bytes, ...]:
    """``_onehots(k)[i]`` is the float32 one-hot of i among k; index -1 (last) is all 0."""
    return tuple(_floats([1.0 if j == i else 0.0 for j in range(size)]) for i in range(size)) + (
        bytes(4 * size),)


THERMO = tuple(_floats([1.0 if j < c else 0.0 for j in range(4)]) for c in range(5))
THERMO_MASK = tuple(THERMO[POPCOUNT[m]] for m in range(16))
ONE, ZERO = _floats([1.0]), _floats([0.0])
_PACK_SEATS = struct.Struct(f"{SEATS}f").pack
_PACK_2 = struct.Struct("2f").pack
_OUT = {None: ZERO, **{p: ONE for p in range(1, SEATS + 1)}}
_FLAG = (ZERO, ONE)
_INV15 = 1.0 / 15.0
# threat by the fewest cards an opponent holds, 0..4 or more (5)
_THREAT = tuple(_floats([1.0 if f <= j + 1 else 0.0 for j in range(4)]) for f in range(6))


def _pack_floats(values) -> bytes:
    return array("f", values).tobytes()


class Encoder:
    """Writes the observation (and full state) of a :class:`~arschloch_env.engine.Game`.

    Every slice is a float32 byte pattern looked up in a precomputed table, and the vector is
    their concatenation (one C-level join), in the order of :class:`Layout`.
    """

    def __init__(self, R: int):
        self.R = R
        self.layout = Layout(R)
        self.state_layout = Layout(R, full_state=True)
        self.size = self.layout.size
        self.state_size = self.state_layout.size
        self._rank_hot = _onehots(R)
        self._hot4, self._hot5, self._hot6 = _onehots(4), _onehots(5), _onehots(SEATS)
        self._present = tuple(_floats([1.0] * k + [0.0] * (SEATS - k)) for k in range(SEATS + 1))
        self._empty_hand = bytes(16 * R)
        self._const_cache = (None, -1, {})  # (game, round, slices per seat)
        # hand and face-up cards are suit masks, played cards are counts
        self._cards3 = (THERMO_MASK,) * R + (THERMO,) * R + (THERMO_MASK,) * R
        self._held = tuple(_floats([c * 0.1]) for c in range(4 * R + 1))
        self._place_hot = {None: self._hot6[-1], **{p: self._hot6[p - 1] for p in range(1, 7)}}
        self._title_hot = {None: self._hot5[-1], **{t: self._hot5[i] for t, i in
                                                    TITLE_INDEX.items()}}
        self._pad1 = tuple(bytes(4 * (SEATS - k)) for k in range(SEATS + 1))
        self._pad5 = tuple(bytes(20 * (SEATS - k)) for k in range(SEATS + 1))
        self._pad6 = tuple(bytes(24 * (SEATS - k)) for k in range(SEATS + 1))
        self._fours = [4] * R
        self._thermo_r = tuple(_floats([1.0 if j < c else 0.0 for j in range(R)])
                               for c in range(R + 1))

    def observe(self, game, seat: int) -> np.ndarray:
        """The observation of ``seat``: what a careful human player in that seat knows."""
        return np.frombuffer(bytearray(b"".join(self._pieces(game, seat))), dtype=np.float32)

    def observation(self, game, seat: int) -> dict[str, np.ndarray]:
        """The AEC observation dict of ``seat``: the vector and the action mask (all 0 unless
        ``seat`` is the seat to act)."""
        if seat == game.current and game.phase != "over":
            mask = game.legal_mask()
        else:
            mask = np.zeros(game.codec.size, dtype=np.int8)
        return {"observation": self.observe(game, seat), "action_mask": mask}

    def state(self, game, seat: int) -> np.ndarray:
        """The full-information vector from ``seat``'s point of view (all hands)."""
        n = game.n
        pieces = self._pieces(game, seat)
        for rel in range(SEATS):
            if rel < n:
                pieces.append(b"".join(map(THERMO_MASK.__getitem__, game.hands[(seat + rel) % n])))
            else:
                pieces.append(self._empty_hand)
        pieces.append(b"".join(map(THERMO_MASK.__getitem__, game.face_down)))
        return np.frombuffer(bytearray(b"".join(pieces)), dtype=np.float32)

    def _pieces(self, g, seat: int) -> list[bytes]:
        """The byte patterns of every slice, in layout order (one list, joined once)."""
        n = g.n
        phase = g.phase
        acting = g.current == seat and phase != "over"
        rank_hot, hot4, hot6 = self._rank_hot, self._hot4, self._hot6
        pieces = list(map(tuple.__getitem__, self._cards3,
                          g.hands[seat] + g.played + g.face_up))
        pieces.append(THERMO[sum(map(POPCOUNT.__getitem__, g.revealed))])
        pieces.append(rank_hot[g.top_alive])
        if g.table_count and phase != "over":  # a finished match has no play to beat
            pieces += (rank_hot[g.table_rank], hot4[g.table_count - 1],
                       hot6[(g.table_seat - seat) % n], ZERO)
        else:
            pieces += (rank_hot[-1], hot4[-1], hot6[-1],
                       ONE if acting and phase == "play" else ZERO)
        given_received, progress, titles, totals = self._round_constants(g, seat)
        pieces.append(given_received)
        pieces.append(hot4[PHASE_INDEX[phase]] if phase in PHASE_INDEX else hot4[-1])
        pieces.append(hot4[g.to_give if acting and phase == "give" else 0])
        pieces.append(progress)
        # Seat features in the observer's relative order, padded to SEATS; every value is a
        # table lookup (map over a C-level getitem), which is what keeps this fast.
        places = g.places[seat:] + g.places[:seat]
        pad1 = self._pad1[n]
        pieces.append(self._present[n])
        pieces.extend(map(self._held.__getitem__, g.sizes[seat:] + g.sizes[:seat]))
        pieces.append(pad1)
        pieces.extend(map(_OUT.__getitem__, places))
        pieces.append(pad1)
        pieces.extend(map(_FLAG.__getitem__, g.passed[seat:] + g.passed[:seat]))
        pieces.append(pad1)
        pieces.extend(map(self._place_hot.__getitem__, places))
        pieces.append(self._pad6[n])
        pieces.append(titles)
        pieces.append(totals)
        pieces.extend(self._counting(g, seat))
        return pieces

    def _counting(self, g, seat: int) -> list[bytes]:
        """The card-counting slices (``unseen`` ... ``threat``)."""
        h = list(map(POPCOUNT.__getitem__, g.hands[seat]))
        u = list(map(int.__sub__, map(int.__sub__, self._fours, h), g.gone))
        places, sizes = g.places, g.sizes
        opp = [sizes[o] for o in range(g.n) if o != seat and places[o] is None]
        most = max(opp, default=0)
        m = [x if x < most else most for x in u]
        if g.rules.no_finish_on_top:
            m[-1] = min(u[-1], max(most - 1, 0))
        # beat[r]: the largest m above r (a running maximum from the top down)
        beat = list(accumulate(reversed(m), max))[-2::-1] + [0]
        dominant = list(map(int.__lt__, beat, h))  # beat >= 0: only ranks held
        open_groups = len(h) - h.count(0) - sum(dominant)
        return [*map(THERMO.__getitem__, u), *map(THERMO.__getitem__, m),
                *map(THERMO.__getitem__, beat), *map(_FLAG.__getitem__, dominant),
                self._thermo_r[open_groups], _THREAT[min(min(opp, default=5), 5)]]

    def _round_constants(self, g, seat: int) -> tuple[bytes, bytes, bytes, bytes]:
        """The slices that cannot change during the play phase of a round (exchange cards,
        match progress, titles, totals), cached per seat for the game and round at hand.

        The cache is one tuple, read and replaced whole: threads that share an encoder for
        their own games each keep the entries of their game (three attributes let a thread
        read another game's entries between the check and the read)."""
        if g.phase != "play":
            return self._constants(g, seat)
        game, round_, of_seat = self._const_cache
        if g is not game or g.round != round_:
            of_seat = {}
            self._const_cache = (g, g.round, of_seat)
        const = of_seat.get(seat)
        if const is None:
            const = of_seat[seat] = self._constants(g, seat)
        return const

    def _constants(self, g, seat: int) -> tuple[bytes, bytes, bytes, bytes]:
        n, rules = g.n, g.rules
        given_received = b"".join(map(THERMO_MASK.__getitem__, g.given[seat] + g.received[seat]))
        if rules.rounds is not None:
            progress = _PACK_2(min(g.round / rules.rounds, 1.0),
                               1.0 if g.round >= rules.rounds else 0.0)
        else:
            progress = _PACK_2(min(max(g.totals) / rules.target_points, 1.0), 0.0)
        # after the last round g.titles are that round's (a search world sets titles itself)
        played_under = g.round_titles() if g.phase == "over" else g.titles
        titles = b"".join(map(self._title_hot.__getitem__,
                              played_under[seat:] + played_under[:seat])) + self._pad5[n]
        totals = _pack_floats(map(_INV15.__mul__, g.totals[seat:] + g.totals[:seat])) + \
            self._pad1[n]
        return given_received, progress, titles, totals
