"""Re-playing game records through the engine: a record is valid when the engine, fed the
record's deals and decisions (and the suits of its automatic exchange gifts, which are the
giver's choice: a record of another version or tool may have chosen others), writes exactly
the record's events."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Iterator

from arschloch_env.cards import CardError, parse_card
from arschloch_env.engine import GIVE, LAY, TAKE, DealError, Game, IllegalActionError
from arschloch_env.records import RecordError, read_matches
from arschloch_env.rules import Rules, RulesError, is_integer

_CARD_LISTS = ("cards", "leftover")


@dataclass
class ReplayResult:
    """The outcome of re-playing one match."""

    index: int
    lines: list[str] = field(default_factory=list)
    error: str | None = None
    error_line: int | None = None
    game: Game | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def _canon(event: dict) -> dict:
    """Card lists compared as sets: a record may list a hand in any order."""
    out = dict(event)
    for key in _CARD_LISTS:
        if isinstance(out.get(key), list):
            out[key] = sorted(map(str, out[key]))
    if isinstance(out.get("hands"), dict):
        out["hands"] = {k: sorted(map(str, v)) if isinstance(v, list) else v
                        for k, v in out["hands"].items()}
    return out


def _json(value) -> str:
    """``value`` as JSON: 1, 1.0 and true differ, as they do in a record."""
    return json.dumps(value, sort_keys=True)


def _differences(mine: dict, theirs: dict) -> list[str]:
    """The fields in which a recorded event differs from the one the rules give."""
    keys = sorted(set(mine) | set(theirs))
    return [f"{k}: the record has {_json(theirs[k]) if k in theirs else 'none'}, the rules "
            f"give {_json(mine[k]) if k in mine else 'none'}"
            for k in keys if _json(mine.get(k)) != _json(theirs.get(k)) or
            (k in mine) != (k in theirs)]


EVENT_KINDS = ("match", "round", "leftover_swap", "exchange", "play", "pass", "trick_end", "out",
               "round_end", "match_end")
"""Every event a game record holds (INTERFACES.md), in the order a match can have them."""


def _described(event: dict) -> str:
    """:func:`describe_event`, or the event as JSON where its fields are too malformed to
    describe (the line that reports it must not fail in turn)."""
    try:
        return describe_event(event).strip()
    except Exception:  # noqa: BLE001 - any malformed field
        return _json(event)


def _rules_label(rules) -> str:
    """The record's rules as :meth:`Rules.label` reads them; its preset name where they are
    not rules (describing an event must not fail on what replaying it would refuse)."""
    try:
        return Rules.from_dict(rules).label()
    except (RulesError, TypeError):
        return str(rules.get("preset") if isinstance(rules, dict) else None)


def _cards(cards) -> str:
    """A card list as text; also a corrupt one (a number, a list of numbers), since the
    line that reports the corruption describes the event."""
    return " ".join(map(str, cards)) if isinstance(cards, list) else str(cards)


def describe_event(event: dict) -> str:
    """One event as a line of a readable game."""
    kind = event.get("event")
    who = event.get("player", "")
    if kind == "match":
        agents = event.get("agents") or {}
        seats = ", ".join(f"{p}" + (f" ({agents[p]})" if p in agents else "")
                          for p in event.get("players", []))
        return (f"== match {event.get('index')} ({_rules_label(event.get('rules'))}, "
                f"seed {event.get('seed')}): {seats}")
    if kind == "round":
        hands = "\n".join(f"     {p}: {_cards(h)}" for p, h in event.get("hands", {}).items())
        left = _cards(event.get("leftover", [])) or "none"
        return (f"-- round {event.get('round')}, {event.get('leader')} leads; dealt:\n{hands}\n"
                f"     left over: {left}")
    if kind == "leftover_swap":
        return f"   {who} takes {event.get('take')} and lays a card face down ({event.get('lay')})"
    if kind == "exchange":
        return f"   {event.get('from')} gives {_cards(event.get('cards', []))} to {event.get('to')}"
    if kind == "play":
        return f"   {who} plays {_cards(event.get('cards', []))}"
    if kind == "pass":
        return f"   {who} passes"
    if kind == "trick_end":
        return f"   trick to {event.get('winner')}"
    if kind == "out":
        return f"   {who} is out: place {event.get('place')} ({event.get('reason')})"
    if kind == "round_end":
        order = sorted(event.get("places", {}).items(), key=lambda kv: kv[1])
        titles = event.get("titles", {})
        return "-- round end: " + ", ".join(f"{p} {titles.get(p, '')}" for p, _ in order)
    if kind == "match_end":
        return (f"== match end: totals {event.get('totals')}, winners "
                f"{', '.join(event.get('winners', []))}")
    return f"   {_json(event)}"  # as the record has it


def _seat(name, n: int) -> int:
    if isinstance(name, str) and name.startswith("player_") and name[7:].isdigit():
        seat = int(name[7:])
        if seat < n:
            return seat
    raise ValueError(f"unknown player {name!r} (players: player_0..player_{n - 1})")


def _rank_of(game: Game, card) -> int:
    return parse_card(card, game.rules.rank_index)[0]


def _apply(game: Game, ev: dict) -> None:
    """Feeds one decision event of the record into the engine."""
    kind, codec = ev["event"], game.codec
    if kind == "pass":
        game.step(0, seat=_seat(ev.get("player"), game.n))
    elif kind == "play":
        cards = ev.get("cards")
        if not isinstance(cards, list):
            raise ValueError(f"its 'cards' must be a list of 1 to 4 cards, got "
                             f"{'nothing' if cards is None else repr(cards)[:40]}")
        if not cards or len(cards) > 4:
            raise ValueError("a play needs 1 to 4 cards")
        action = codec.play(_rank_of(game, cards[0]), len(cards))
        game.step(action, cards=cards, seat=_seat(ev.get("player"), game.n))
    elif kind == "leftover_swap":
        seat = _seat(ev.get("player"), game.n)
        if game.phase != TAKE:
            raise ValueError("no left-over swap is due here")
        game.step(codec.take(_rank_of(game, ev.get("take"))), cards=[ev.get("take")], seat=seat)
        if game.phase != LAY:
            raise ValueError("no card is to be laid down here")
        game.step(codec.give(_rank_of(game, ev.get("lay"))), cards=[ev.get("lay")], seat=seat)
    elif kind == "exchange" and game.phase == GIVE:
        seat = _seat(ev.get("from"), game.n)
        cards = ev.get("cards")
        if not isinstance(cards, list) or len(cards) != game.to_give:
            raise ValueError(f"{ev.get('from')} must return exactly {game.to_give} card(s)")
        if _seat(ev.get("to"), game.n) != game.give_to:
            raise ValueError(f"the return goes to player_{game.give_to}, not {ev.get('to')}")
        for card in cards:
            game.step(codec.give(_rank_of(game, card)), cards=[card], seat=seat)
    elif kind not in EVENT_KINDS:
        raise ValueError(f"unknown event {kind!r}; a record's events are "
                         f"{', '.join(EVENT_KINDS)}")
    else:
        raise ValueError(f"the rules produce no {kind!r} event here")


def _deal(event: dict) -> tuple[dict, list]:
    """A round event's deal, its shape checked here: the engine deals later rounds in the
    middle of the replay and takes the cards as given.

    Raises:
        ValueError: ``hands`` or ``leftover`` missing, ``hands`` not a mapping to card lists,
            or ``leftover`` not a list.
    """
    missing = [k for k in ("hands", "leftover") if k not in event]
    if missing:
        raise ValueError(f"{' and '.join(missing)} missing (the deal of the round)")
    hands, leftover = event["hands"], event["leftover"]
    if not isinstance(hands, dict) or not all(isinstance(h, list) for h in hands.values()):
        raise ValueError(f"hands: {hands!r} is not a mapping of each player to a list of cards")
    if not isinstance(leftover, list):
        raise ValueError(f"leftover: {leftover!r} is not a list of cards")
    return hands, leftover


def replay_match(events: list[tuple[int, dict]], deals_from_seed: bool = False) -> ReplayResult:
    """Re-plays one match (as read by :func:`read_matches`) and reports the first break.

    The engine deals as the record says; with ``deals_from_seed`` it deals from the match's
    seed instead (and takes the suits of automatic gifts from it), as it did for a record the
    kit wrote: a deal changed since then breaks the replay at its ``round`` event."""
    no, header = events[0]
    res = ReplayResult(index=header.get("index", 0))
    seed = header.get("seed")
    if deals_from_seed and not (is_integer(seed) and seed >= 0):
        res.error, res.error_line = (f"match.seed is {seed!r}: no seed to deal from (a record "
                                     f"dealt by its seed has a non-negative integer)"), no
        return res
    deals, deal_lines = [], []
    gifts = {}  # every exchange's cards: the engine takes an automatic gift's suits from them
    for round_no, ev in events:
        if ev.get("event") == "round":
            try:
                deals.append(_deal(ev))
            except ValueError as exc:
                res.error, res.error_line = f"round {ev.get('round')}: {exc}", round_no
                return res
            deal_lines.append(round_no)
        elif (ev.get("event") == "exchange" and isinstance(ev.get("cards"), list)
              and isinstance(ev.get("from"), str)):  # any other giver fails its own check
            gifts.setdefault((len(deals), ev["from"]), ev["cards"])
    if deals_from_seed:
        deals, gifts = None, None
    # INTERFACES.md allows any int; the engine's generator takes none below 0, but a replay
    # deals from the record and only writes the seed back into its header
    foreign_seed = is_integer(seed) and seed < 0
    try:
        if seed is not None and not is_integer(seed):  # the engine's message says >= 0
            raise ValueError(f"match.seed: {seed!r} is not allowed; allowed: an integer or "
                             f"null")
        rules = Rules.from_dict(header.get("rules"))
        players = header.get("players")
        if isinstance(players, list) and len(players) != rules.num_players:
            raise ValueError(f"match.players: {len(players)} players, but the rules say "
                             f"num_players {rules.num_players}")
        game = Game(rules, seed=None if foreign_seed else seed,
                    match_index=header.get("index", 0), record=True,
                    agents=header.get("agents"), deals=deals, gifts=gifts)
        if foreign_seed:
            game.events[0]["seed"] = int(seed)
    except DealError as exc:  # the first round's deal
        res.error, res.error_line = f"round 1: {exc}", deal_lines[0] if deal_lines else no
        return res
    except (RulesError, CardError, TypeError, ValueError) as exc:
        res.error, res.error_line = f"cannot set up the match: {exc}", no
        return res
    res.game = game
    done = 0
    while done < len(events):
        while done < len(game.events) and done < len(events):
            no, ev = events[done]
            mine = game.events[done]
            differences = _differences(_canon(mine), _canon(ev))
            if differences:
                res.error_line = no
                res.error = (f"event {ev.get('event')!r} is not what the rules give here: "
                             + (f"they give a {mine['event']!r} event"
                                if mine["event"] != ev.get("event")
                                else "; ".join(differences)))
                if deals_from_seed and mine["event"] in ("round", "exchange"):
                    res.error += f" (dealt from the match's seed {seed})"
                return res
            res.lines.append(describe_event(ev))
            done += 1
        if done >= len(events):
            break
        no, ev = events[done]
        try:
            _apply(game, ev)
        except DealError as exc:  # the engine deals the next round as this event ends one
            res.error = f"round {game.round}: {exc}"
            res.error_line = (deal_lines[game.round - 1] if game.round <= len(deal_lines)
                              else no)
            return res
        except (IllegalActionError, CardError, ValueError) as exc:
            res.error, res.error_line = f"{_described(ev)}: {exc}", no
            return res
    if len(game.events) > len(events):
        res.error_line = events[-1][0]
        res.error = f"the record ends early; the rules continue with {game.events[len(events)]}"
    return res


def replay_matches(path, deals_from_seed: bool = False) -> Iterator[ReplayResult]:
    """Re-plays the matches of a record file one by one as they are read: a long record is
    never held whole, and a match that breaks the rules is reported before a damaged line
    further on.

    Raises:
        RecordError: the file is missing, empty, not JSON Lines, or truncated (raised when
            the reading gets there).
    """
    replayed = 0
    for match in read_matches(path):
        replayed += 1
        yield replay_match(match, deals_from_seed)
    if not replayed:
        raise RecordError(f"{path}: holds no match (a record starts with a 'match' event)")


def replay_file(path, deals_from_seed: bool = False) -> list[ReplayResult]:
    """Every match of a record file re-played (:func:`replay_matches`), as a list."""
    return list(replay_matches(path, deals_from_seed))


__all__ = ["ReplayResult", "RecordError", "describe_event", "replay_file", "replay_match",
           "replay_matches"]
