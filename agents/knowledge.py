"""Card counting for the bots: what one seat knows of the hidden cards, and samples of them.

A card is an int ``4 * rank + suit`` (rank index in the rules' ``rank_order``, suit index in
``C S H D``), so the natural int order is the engine's card order (rank first, then suit): the
Arschloch's "highest cards" are the largest ids of its hand.

:class:`Knowledge` is fed every public view (and observation) the seat receives in a match and
keeps what it must remember between them (the face-up cards it saw, the card it took and the
card it laid in the left-over swap). From that it derives, for the current decision:

* ``unseen``: the cards the seat has not seen, i.e. in another hand or face down (the
  top-rank cards a hand of only them revealed when it went out are seen);
* ``forced``: cards known to be in one seat's hand (cards the seat gave in the exchange, while
  not played: the receiver cannot pass them on);
* ``caps``: an exclusive upper bound on the other cards of a seat: a forced giver handed over
  its highest cards, so what it kept is of no higher rank than the lowest card it gave (of that
  rank it may keep any suit: within a rank the engine moves a seat's cards in a suit order no
  other seat knows);
* ``fd_unknown``: how many face-down cards (left-over, laid down) the seat has not seen;
* ``restricted``: the face-up left-over cards the seat saw as the first to swap and left for
  the second: each is with that seat, face down (laid), or with the seat it gave cards to in
  the exchange, unless played since.

:meth:`Knowledge.sample` deals the unseen cards to the other seats and the face-down pile
consistently with all of it (counts, forced cards, caps, restricted cards, and no hand of
top-rank cards only under ``no_finish_on_top``, which would already have been revealed).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from arschloch_env.cards import SUITS
from arschloch_env.rules import Rules, make_rules

SUIT_INDEX = {s: i for i, s in enumerate(SUITS)}
FACE_DOWN = -1
"""Where a restricted card may be besides seats: the face-down cards."""


SEEDED_TRIES = 20
"""Deals that place the restricted cards first, after the uniform ones (``Knowledge.sample``)."""


class SampleError(RuntimeError):
    """No deal consistent with the knowledge was found (a bug: the true deal is one)."""


class Deck:
    """Card ids of one rules' deck and their card strings."""

    def __init__(self, rules: Rules):
        self.order = tuple(rules.rank_order)
        self.R = len(self.order)
        self.size = 4 * self.R
        self.index = {r + s: 4 * i + j for i, r in enumerate(self.order)
                      for j, s in enumerate(SUITS)}
        self.names = [r + s for r in self.order for s in SUITS]

    def ids(self, cards) -> list[int]:
        idx = self.index
        return [idx[c] for c in cards]

    def counts(self, ids) -> list[int]:
        """Cards per rank."""
        out = [0] * self.R
        for c in ids:
            out[c >> 2] += 1
        return out

    def masks(self, ids) -> list[int]:
        """A hand in the engine's form: one suit mask per rank."""
        out = [0] * self.R
        for c in ids:
            out[c >> 2] |= 1 << (c & 3)
        return out


def role_seats(titles: list[str | None]) -> dict[str, int]:
    """Seat of each unique title of the previous round (President, Arschloch, the vices)."""
    out = {}
    for t in ("President", "Vice-President", "Vice-Arschloch", "Arschloch"):
        if t in titles:
            out[t] = titles.index(t)
    return out


class Knowledge:
    """What one seat knows of the hidden cards in the current round.

    Call :meth:`reset` at the start of a match, :meth:`update` with the seat's view before
    each of its decisions (views between its turns may be read too), and :meth:`note_action`
    with the action chosen in a ``take`` or ``lay`` phase.

    It knows what the public view and the observation carry, and what the seat itself saw.
    Neither view nor observation says which seat took which face-up left-over card (only the
    first to swap knows where the cards it left went), nor who led round 1 under
    ``lowest_club`` (that seat held the lowest club), so :meth:`sample` may deal such a card to
    another seat.
    """

    def __init__(self) -> None:
        self.rules: Rules | None = None
        self._rules_dict: dict | None = None
        self.seat = 0
        self.round = 0
        self.taken: int | None = None
        self.laid: set[int] = set()
        self.left_for_second: set[int] = set()
        self._before_note: tuple[int | None, set[int]] = (None, set())

    def reset(self, rules: Rules | dict | str, seat: int) -> None:
        # the same rules again (every match of a tournament): the deck and rules stand
        if not (isinstance(rules, dict) and rules == self._rules_dict):
            self.rules = rules if isinstance(rules, Rules) else make_rules(rules)
            self._rules_dict = self.rules.to_dict()
            self.deck = Deck(self.rules)
        self.seat = seat
        self.round = 0
        self.taken = None
        self.laid = set()
        self.left_for_second = set()

    # -- per decision ---------------------------------------------------------------------------

    def update(self, view: dict) -> "Knowledge":
        """Reads one public view."""
        # an agent used without reset(), or reset for other rules or another seat
        if view["rules"] != self._rules_dict or view["seat"] != self.seat:
            self.reset(view["rules"], view["seat"])
        if view["round"] != self.round:
            self.round = view["round"]
            self.taken = None
            self.laid = set()
            self.left_for_second = set()
        self._before_note = (self.taken, set(self.laid))
        rules, deck = self.rules, self.deck
        self.seat = seat = view["seat"]
        self.n = rules.num_players
        self.R = deck.R
        self.top = deck.R - 1
        self.phase = view["phase"]
        self.view = view
        self.hand = deck.ids(view["hand"])
        self.h = deck.counts(self.hand)
        self.played = set(deck.ids(view["played"]))
        self.face_up = deck.ids(view["face_up"])
        self.sizes = list(view["counts"])
        self.places = list(view["places"])
        self.titles = list(view["titles"])
        if (self.phase == "take" and view["legal"]
                and sum(self.sizes) + len(self.face_up) == deck.size):
            # the first to swap sees every left-over card; what it leaves face up goes on to
            # the second (the card it takes it notes itself). Only its own turn says so:
            # every seat's view shows those cards while the first takes (``legal`` is empty
            # in a view of another seat's turn)
            self.left_for_second = set(self.face_up)
        table = view["table"]
        if table:
            cards = deck.ids(table["cards"])
            self.table = (cards[0] >> 2, len(cards), table["seat"])
        else:
            self.table = None
        # the top-rank cards of hands that held only them, shown when they went out
        self.revealed = [deck.ids(cards) for cards in view["revealed"]]
        self.revealed_known = {c for cards in self.revealed for c in cards}
        given = set(deck.ids(view["given"]))
        received = set(deck.ids(view["received"]))
        mine = set(self.hand)
        laid = self.laid & given
        seen = mine | self.played | set(self.face_up) | laid | self.revealed_known
        self.forced: dict[int, set[int]] = {}
        self.caps: dict[int, int] = {}
        roles = role_seats(self.titles)
        title = self.titles[seat]
        if title in ("President", "Vice-President"):
            partner = roles.get("Arschloch" if title == "President" else "Vice-Arschloch")
            got = received - ({self.taken} if self.taken is not None else set())
            if partner is not None and partner != seat:
                if got:
                    self.caps[partner] = 4 * ((min(got) >> 2) + 1)
                held = (given - laid) - seen
                if held:
                    self.forced[partner] = held
        elif title in ("Arschloch", "Vice-Arschloch"):
            partner = roles.get("President" if title == "Arschloch" else "Vice-President")
            # it gives first: a card its partner handed back is this seat's again, even
            # once it is no longer in its hand (revealed when it went out)
            held = (given - laid) - seen - received
            if partner is not None and partner != seat and held:
                self.forced[partner] = held
        unseen = set(range(deck.size)) - seen
        pinned = set().union(*self.forced.values()) if self.forced else set()
        for s in list(self.caps):
            if self.sizes[s] == 0:
                del self.caps[s]
        self.unseen = sorted(unseen)
        others = sum(self.sizes) - self.sizes[seat]
        self.fd_unknown = len(self.unseen) - others
        self.laid_known = laid
        self.restricted = self._restricted(unseen - pinned, roles)
        return self

    def _restricted(self, free: set[int], roles: dict[str, int]) -> dict[int, set[int]]:
        """The cards this seat left face up as the first to swap that the second took: each
        with the second swapper (its hand, or laid face down) or with its exchange partner."""
        left = (self.left_for_second - {self.taken}) & free
        if not left:
            return {}
        n, seat = self.n, self.seat
        # the second to swap took 4th place last round: at 4 players the Arschloch, at 5 the
        # Vice-Arschloch, at 6 the other citizen (this seat took 3rd)
        if n == 6:
            second = next(s for s in range(n) if s != seat and s not in roles.values())
        else:
            second = roles.get({4: "Arschloch", 5: "Vice-Arschloch"}.get(n, ""), -2)
        if second < 0:
            return {}
        where = {second, FACE_DOWN}
        cards = self.rules.exchange_cards if n == 4 else self.rules.vice_exchange_cards
        if n in (4, 5) and cards:
            where.add(roles["President" if n == 4 else "Vice-President"])
        return {c: where for c in left}

    def note_action(self, action: int, card: str | None = None) -> None:
        """Remembers the card moved by a take or lay: ``card`` where the player named it,
        else the one the view's legal move names (``"take AS"``, ``"lay 8D face down"``). A
        second note in one decision replaces the first: an adviser notes its suggestion, then
        the move the player made instead (:class:`agents.human.HumanAgent`)."""
        self.taken, self.laid = self._before_note[0], set(self._before_note[1])
        if self.phase not in ("take", "lay"):
            return
        if card is None:
            card = next(m["move"] for m in self.view["legal"] if m["id"] == action).split()[1]
        card = self.deck.index[card]
        if self.phase == "take":
            self.taken = card
        else:
            self.laid.add(card)

    # -- derived counts -----------------------------------------------------------------------

    def unseen_counts(self) -> list[int]:
        return self.deck.counts(self.unseen)

    def possible_counts(self, s: int) -> list[int]:
        """Per rank, the most cards of that rank seat ``s`` can hold (an upper bound)."""
        R = self.R
        forced = self.forced.get(s, ())
        cap = self.caps.get(s)
        pinned = set().union(*self.forced.values()) if self.forced else set()
        out = self.deck.counts(forced)
        for c in self.unseen:
            if c in pinned:
                continue
            if cap is None or c < cap:
                out[c >> 2] += 1
        size = self.sizes[s]
        return [min(x, size) for x in out[:R]]

    # -- sampling -------------------------------------------------------------------------------

    def sample(self, rng: np.random.Generator, tries: int = 50) -> tuple[dict[int, list[int]],
                                                                        list[int]]:
        """One deal of the unseen cards consistent with the knowledge.

        Returns:
            ``(hands, face_down)``: the card ids of every other seat still holding cards, and
            the unknown face-down cards.

        Deals are drawn uniformly and those with a restricted card out of place or a hand of
        top-rank cards only (under ``no_finish_on_top``) rejected; when all ``tries`` are, as
        late in a round where most unseen cards are of the top rank, up to ``SEEDED_TRIES``
        more deals each first put the restricted cards in their places and hand every seat
        that would otherwise hold only top-rank cards one card of another rank: consistent,
        though not uniform. (Where a restricted card may lie decides whether the rest can
        be dealt, so one such deal can still fail.)

        Raises:
            SampleError: nothing consistent was found.
        """
        seat = self.seat
        others = [s for s in range(self.n) if s != seat and self.sizes[s] > 0]
        pinned = set().union(*self.forced.values()) if self.forced else set()
        free = [c for c in self.unseen if c not in pinned]
        capped = sorted((s for s in others if s in self.caps), key=lambda s: self.caps[s])
        top = self.top
        nf = self.rules.no_finish_on_top
        for attempt in range(tries + SEEDED_TRIES):
            pool = list(free)
            hands: dict[int, list[int]] = {s: sorted(self.forced.get(s, ())) for s in others}
            need = {s: self.sizes[s] - len(hands[s]) for s in others}
            laid = self._seed_deal(rng, pool, hands, need) if attempt >= tries else []
            ok = True
            for s in capped:
                cap = self.caps[s]
                allowed = [c for c in pool if c < cap]
                k = need[s]
                if len(allowed) < k:
                    ok = False
                    break
                pick = rng.choice(len(allowed), size=k, replace=False) if k else []
                chosen = {allowed[i] for i in pick}
                hands[s].extend(chosen)
                pool = [c for c in pool if c not in chosen]
            if not ok:
                continue
            order = rng.permutation(len(pool))
            i = 0
            for s in others:
                if s in self.caps:
                    continue
                k = need[s]
                hands[s].extend(pool[j] for j in order[i:i + k])
                i += k
            face_down = laid + [pool[j] for j in order[i:]]
            if nf and any(all(c >> 2 == top for c in hands[s]) for s in others):
                continue
            if self._misplaced(hands, face_down):
                continue
            return hands, face_down
        raise SampleError(f"no consistent deal found for seat {seat} in "
                          f"{tries + SEEDED_TRIES} tries")

    def _seed_deal(self, rng: np.random.Generator, pool: list[int],
                   hands: dict[int, list[int]], need: dict[int, int]) -> list[int]:
        """Before a seeded deal: each restricted card to one of its places with room left
        (weighted by the room; under ``no_finish_on_top`` not a top-rank card into the last
        place of a hand that holds only top-rank cards so far), then under
        ``no_finish_on_top`` a card of a rank below the top to every seat that holds only
        top-rank cards so far; returns the cards put face down. Takes them from ``pool`` and
        ``need``."""
        laid: list[int] = []
        room = {**need, FACE_DOWN: self.fd_unknown}
        nf, top = self.rules.no_finish_on_top, self.top

        def leaves_top_only(c: int, w: int) -> bool:
            return (nf and w != FACE_DOWN and c >> 2 == top and room[w] == 1
                    and all(x >> 2 == top for x in hands[w]))

        for c in sorted(self.restricted):
            if c not in pool:
                continue
            places = [w for w in sorted(self.restricted[c]) if room.get(w, 0) > 0
                      and (w == FACE_DOWN or c < self.caps.get(w, c + 1))
                      and not leaves_top_only(c, w)]
            if not places:
                continue
            weights = np.array([room[w] for w in places], float)
            w = places[int(rng.choice(len(places), p=weights / weights.sum()))]
            (laid if w == FACE_DOWN else hands[w]).append(c)
            pool.remove(c)
            room[w] -= 1
            if w != FACE_DOWN:
                need[w] -= 1
        if nf:
            for s in need:
                low = [c for c in pool if c >> 2 != top and c < self.caps.get(s, c + 1)]
                if need[s] and low and all(c >> 2 == top for c in hands[s]):
                    card = low[rng.integers(len(low))]
                    hands[s].append(card)
                    pool.remove(card)
                    need[s] -= 1
        return laid

    def _misplaced(self, hands: dict[int, list[int]], face_down: list[int]) -> list[int]:
        """The restricted cards a deal puts where they cannot be."""
        if not self.restricted:
            return []
        where = {c: s for s, h in hands.items() for c in h}
        return sorted(c for c, places in self.restricted.items()
                      if where.get(c, FACE_DOWN) not in places)

    def consistent(self, hands: dict[int, list[int]], face_down: list[int]) -> list[str]:
        """Why a deal of the hidden cards contradicts the knowledge (empty when it does not)."""
        errors = []
        seen = (set(self.hand) | self.played | set(self.face_up) | self.laid_known
                | self.revealed_known)
        allc: list[int] = [c for h in hands.values() for c in h] + list(face_down)
        if len(allc) != len(set(allc)):
            errors.append("a card is dealt twice")
        if set(allc) & seen:
            errors.append(f"seen cards dealt: {sorted(set(allc) & seen)}")
        if sorted(allc) != self.unseen:
            errors.append("the dealt cards are not exactly the unseen cards")
        for s in range(self.n):
            if s == self.seat:
                continue
            h = hands.get(s, [])
            if len(h) != self.sizes[s]:
                errors.append(f"seat {s}: {len(h)} cards, holds {self.sizes[s]}")
            forced = self.forced.get(s, set())
            if not forced <= set(h):
                errors.append(f"seat {s}: misses forced cards {sorted(forced - set(h))}")
            if s in self.caps:
                bad = [c for c in h if c not in forced and c >= self.caps[s]]
                if bad:
                    errors.append(f"seat {s}: cards {bad} above its cap {self.caps[s]}")
            if (self.rules.no_finish_on_top and h and all(c >> 2 == self.top for c in h)):
                errors.append(f"seat {s}: only top-rank cards")
        if len(face_down) != self.fd_unknown:
            errors.append(f"{len(face_down)} face-down cards, {self.fd_unknown} unknown")
        misplaced = self._misplaced(hands, face_down)
        if misplaced:
            errors.append(f"cards left for the second swapper elsewhere: {misplaced}")
        return errors


def describe(knowledge: Knowledge) -> dict[str, Any]:
    """A readable summary (for debugging and tests)."""
    names = knowledge.deck.names
    return {
        "unseen": [names[c] for c in knowledge.unseen],
        "forced": {s: [names[c] for c in sorted(v)] for s, v in knowledge.forced.items()},
        # per seat under a cap, the highest rank it can still hold
        "caps": {s: knowledge.deck.order[(c >> 2) - 1] for s, c in knowledge.caps.items()},
        "fd_unknown": knowledge.fd_unknown,
        "restricted": {names[c]: sorted(where) for c, where in knowledge.restricted.items()},
    }
