"""The observation: one flat float32 vector with named slices, documented once here.

The layout depends only on the number of ranks ``R`` of the deck (8 or 13), never on the number
of players: seat features are padded to 6 seats, relative to the observer (offset 0 is the
observer, 1 the next seat clockwise, ...), with a ``seat_present`` flag. So one policy plays
every table size of a deck.

"Thermometer" encodes a count c of a rank as four bits, the first c of them 1.

``state`` (full information, for centralised critics) is the observation followed by every
seat's hand (relative order) and the face-down cards (left-over or laid down).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from arschloch_env.cards import POPCOUNT

SEATS = 6
OBS_VERSION = 1
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
        ("phase", (4,), "one-hot phase: play, give, take, lay"),
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
    ]


def _state_extra(R: int) -> list[tuple[str, tuple[int, ...], str]]:
    return [
        ("all_hands", (SEATS, R, 4), "every seat's hand (relative order), thermometer"),
        ("face_down", (R, 4), "face-down cards: hidden left-over cards and laid-down cards"),
    ]


@dataclass(frozen=True)
class Layout:
    """Offsets of the named slices for a deck of ``R`` ranks."""

    R: int
    full_state: bool = False

    @property
    def entries(self) -> list[tuple[str, tuple[int, ...], str]]:
        return _table(self.R) + (_state_extra(self.R) if self.full_state else [])

    @property
    def slices(self) -> dict[str, slice]:
        out, o = {}, 0
        for name, shape, _ in self.entries:
            size = int(np.prod(shape))
            out[name] = slice(o, o + size)
            o += size
        return out

    @property
    def size(self) -> int:
        return sum(int(np.prod(shape)) for _, shape, _ in self.entries)

    def views(self, vec: np.ndarray) -> dict[str, np.ndarray]:
        """Named, reshaped views into an observation (or a batch of them: leading axes kept)."""
        shapes = {name: shape for name, shape, _ in self.entries}
        lead = vec.shape[:-1]
        return {name: vec[..., s].reshape(lead + shapes[name]) for name, s in self.slices.items()}

    def markdown(self) -> str:
        rows = ["| slice | shape | offset | meaning |", "|---|---|---|---|"]
        for (name, shape, meaning), s in zip(self.entries, self.slices.values()):
            rows.append(f"| `{name}` | {shape} | {s.start} | {meaning} |")
        return "\n".join(rows)


class Encoder:
    """Writes the observation (and full state) of a :class:`~arschloch_env.engine.Game`."""

    def __init__(self, R: int):
        self.R = R
        self.layout = Layout(R)
        self.state_layout = Layout(R, full_state=True)
        self.size = self.layout.size
        self.state_size = self.state_layout.size
        self.o = {name: s.start for name, s in self.state_layout.slices.items()}

    def observe(self, game, seat: int) -> np.ndarray:
        """The observation of ``seat``: what a careful human player in that seat knows."""
        out = np.zeros(self.size, dtype=np.float32)
        self._fill(game, seat, out)
        return out

    def state(self, game, seat: int) -> np.ndarray:
        """The full-information vector from ``seat``'s point of view (all hands)."""
        out = np.zeros(self.state_size, dtype=np.float32)
        self._fill(game, seat, out)
        o, n, ones = self.o, game.n, []
        for rel in range(n):
            base = o["all_hands"] + rel * 4 * self.R
            self._thermo_masks(game.hands[(seat + rel) % n], base, ones)
        self._thermo_masks(game.face_down, o["face_down"], ones)
        out[ones] = 1.0
        return out

    def _thermo_masks(self, masks, base: int, ones: list[int]) -> None:
        for r, m in enumerate(masks):
            if m:
                b = base + 4 * r
                ones.extend(range(b, b + POPCOUNT[m]))

    def _thermo_counts(self, counts, base: int, ones: list[int]) -> None:
        for r, c in enumerate(counts):
            if c:
                b = base + 4 * r
                ones.extend(range(b, b + c))

    def _fill(self, g, seat: int, out: np.ndarray) -> None:
        o, n, R = self.o, g.n, self.R
        ones: list[int] = []
        self._thermo_masks(g.hands[seat], o["hand"], ones)
        self._thermo_counts(g.played, o["played"], ones)
        self._thermo_masks(g.face_up, o["face_up"], ones)
        shown = sum(POPCOUNT[m] for m in g.revealed)
        if shown:
            ones.extend(range(o["revealed"], o["revealed"] + shown))
        if g.top_alive >= 0:
            ones.append(o["highest_in_play"] + g.top_alive)
        if g.table_count:
            ones.append(o["table_rank"] + g.table_rank)
            ones.append(o["table_count"] + g.table_count - 1)
            ones.append(o["table_seat"] + (g.table_seat - seat) % n)
        acting = g.current == seat and g.phase != "over"
        if acting and g.phase == "play" and not g.table_count:
            ones.append(o["leading"])
        self._thermo_masks(g.given[seat], o["given"], ones)
        self._thermo_masks(g.received[seat], o["received"], ones)
        if g.phase in PHASE_INDEX:
            ones.append(o["phase"] + PHASE_INDEX[g.phase])
        ones.append(o["to_give"] + (g.to_give if acting and g.phase == "give" else 0))
        rules = g.rules
        mp = o["match_progress"]
        if rules.rounds is not None:
            out[mp] = min(g.round / rules.rounds, 1.0)
            out[mp + 1] = 1.0 if g.round >= rules.rounds else 0.0
        else:
            out[mp] = min(max(g.totals) / rules.target_points, 1.0)
        for rel in range(n):
            s = (seat + rel) % n
            ones.append(o["seat_present"] + rel)
            out[o["seat_held"] + rel] = g.sizes[s] / 10.0
            place = g.places[s]
            if place is not None:
                ones.append(o["seat_out"] + rel)
                ones.append(o["seat_place"] + rel * SEATS + place - 1)
            if g.passed[s]:
                ones.append(o["seat_passed"] + rel)
            title = g.titles[s] if g.round > 1 else None
            if title is not None:
                ones.append(o["seat_title"] + rel * 5 + TITLE_INDEX[title])
            out[o["seat_total"] + rel] = g.totals[s] / 15.0
        out[ones] = 1.0
