"""The rules configuration: one frozen object, built from a preset plus overrides.

Every difference between the rule families of RULES.md is a field here; the engine, the
environments, the bots, the records and the command line all read this one object. Its JSON
form has exactly the fields of INTERFACES.md ("Rules configuration").
"""

from __future__ import annotations

import dataclasses
import json
import numbers
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from arschloch_env.cards import ALL_RANKS, SKAT_RANKS, SUITS


class RulesError(ValueError):
    """A rules configuration that names an unknown preset or field, or a value out of range."""


_CULO = dict(
    rank_order=SKAT_RANKS, deal="equal", leftover_swap=True, first_leader="lowest_club",
    no_finish_on_top=True, top_card_ends_trick=True, exchange_cards=2, exchange_cards_3p=1,
    vice_exchange_cards=1, rounds=5, target_points=None, winner="president",
)
PRESETS: dict[str, dict[str, Any]] = {
    "culo": _CULO,
    "culo-points": {**_CULO, "rounds": None, "target_points": 15, "winner": "points"},
    "culo-ten": {**_CULO, "rank_order": ("7", "8", "9", "J", "Q", "K", "A", "T")},
    "culo-52": {**_CULO, "rank_order": ALL_RANKS},
    "tavern": dict(
        rank_order=("3", "4", "5", "6", "7", "8", "9", "T", "J", "Q", "K", "A", "2"),
        deal="all", leftover_swap=False, first_leader="rotate", no_finish_on_top=False,
        top_card_ends_trick=False, exchange_cards=2, exchange_cards_3p=2, vice_exchange_cards=1,
        rounds=5, target_points=None, winner="points",
    ),
}

_CHOICES = {
    "deal": ("equal", "all"),
    "first_leader": ("lowest_club", "rotate"),
    "winner": ("president", "points"),
}
_BOOLS = ("leftover_swap", "no_finish_on_top", "top_card_ends_trick")
_EXCHANGE = ("exchange_cards", "exchange_cards_3p", "vice_exchange_cards")
RANK_ORDER_EXAMPLE = "[7,8,9,J,Q,K,A,T]"
"""A rank order as ``--set``, YAML rules files and train's ``--set`` all take it."""
TITLES = ("President", "Vice-President", "Citizen", "Vice-Arschloch", "Arschloch")


@dataclass(frozen=True)
class Rules:
    """One complete rule set. Build it with :meth:`from_preset` or :func:`make_rules`."""

    preset: str
    """Name of the preset it was built from (RULES.md section 4)."""
    num_players: int
    """Players at the table, 3..6."""
    rank_order: tuple[str, ...]
    """Ranks from lowest to highest; the deck is these ranks in four suits."""
    deal: str
    """``"equal"``: equal hands, the rest left over; ``"all"``: every card is dealt."""
    leftover_swap: bool
    """From round 2 on, 3rd and 4th place swap a card with the face-up left-over cards."""
    first_leader: str
    """Round-1 leader: ``"lowest_club"`` (holder of the lowest club) or ``"rotate"`` (seat k mod n)."""
    no_finish_on_top: bool
    """A finishing play may not be of the top rank; a top-rank-only hand is ranked from the bottom."""
    top_card_ends_trick: bool
    """A play of the highest rank still in play ends the trick at once."""
    exchange_cards: int
    """Cards the President/Arschloch pair swaps with 4 or more players."""
    exchange_cards_3p: int
    """Cards the President/Arschloch pair swaps with 3 players."""
    vice_exchange_cards: int
    """Cards the Vice pair swaps (4 or more players)."""
    rounds: int | None
    """The match is this many rounds (exactly one of ``rounds`` and ``target_points`` is set)."""
    target_points: int | None
    """The match ends with the round in which someone reaches this total."""
    winner: str
    """``"president"``: the President of the last round wins; ``"points"``: highest total, ties share."""

    def __post_init__(self) -> None:
        if isinstance(self.rank_order, list):  # the JSON form's list, as from_dict takes it
            object.__setattr__(self, "rank_order", tuple(self.rank_order))
        _validate(self)

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_preset(cls, preset: str = "culo", num_players: int = 4, **overrides: Any) -> "Rules":
        """A preset with any of its fields overridden.

        Setting one of ``rounds``/``target_points`` without the other clears the other, so that
        ``tavern`` with ``target_points=15`` is a valid first-to-15 match.

        Raises:
            RulesError: unknown preset or field, or a value out of range.
        """
        # A non-string name (e.g. a list from a JSON file) must not end in a TypeError.
        if not isinstance(preset, str) or preset not in PRESETS:
            raise RulesError(f"unknown preset {preset!r}; allowed: {', '.join(PRESETS)}")
        values = dict(PRESETS[preset])
        unknown = sorted(set(overrides) - set(values) - {"num_players", "preset"})
        if unknown:
            raise RulesError(f"unknown rules field(s) {', '.join(unknown)}; allowed: "
                             f"{', '.join(FIELD_NAMES)}")
        values.update(_with_one_match_end(overrides))
        values["preset"] = preset
        values.setdefault("num_players", num_players)
        values = {name: _plain(v) for name, v in values.items()}
        if isinstance(values.get("rank_order"), str):  # a rules file may write it as text
            values["rank_order"] = _parse_ranks(values["rank_order"])
        if "rank_order" in values and isinstance(values["rank_order"], (list, tuple)):
            # YAML reads the digit ranks of [7, 8, 9, J, ...] as integers.
            values["rank_order"] = tuple(str(x) if _is_int(x) else x
                                         for x in map(_plain, values["rank_order"]))
        return cls(**values)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Rules":
        """From the JSON form, or from ``{"preset": ..., <some fields>}`` (the rest from the
        preset; without ``preset``, from ``culo``).

        Raises:
            RulesError: as :meth:`from_preset`, or ``data`` is not a mapping.
        """
        if not isinstance(data, dict):
            raise RulesError(f"rules must be a mapping of field names to values, got "
                             f"{type(data).__name__}")
        odd = [k for k in data if not isinstance(k, str)]
        if odd:  # YAML reads a key such as 1: as an integer
            raise RulesError(f"unknown rules field(s) {', '.join(map(repr, odd))}; allowed: "
                             f"{', '.join(FIELD_NAMES)}")
        data = dict(data)
        preset = data.pop("preset", "culo")
        return cls.from_preset(preset, **data)

    def replace(self, **overrides: Any) -> "Rules":
        """A copy with some fields changed (same semantics as :meth:`from_preset`)."""
        values = self.to_dict()
        preset = values.pop("preset")
        _drop_same_preset(preset, overrides)
        values.update(_with_one_match_end(overrides))
        return Rules.from_preset(preset, **values)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: exactly the fields of INTERFACES.md, ``rank_order`` as a list."""
        out = {f: getattr(self, f) for f in FIELD_NAMES}
        out["rank_order"] = list(self.rank_order)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    def overrides(self, match_end: bool = True) -> dict[str, Any]:
        """The fields that differ from the preset's at this table size, in the JSON form;
        without ``rounds`` and ``target_points`` with ``match_end=False``."""
        preset = Rules.from_preset(self.preset, self.num_players).to_dict()
        skip = () if match_end else MATCH_END
        return {k: v for k, v in self.to_dict().items() if preset[k] != v and k not in skip}

    def label(self, match_end: bool = True) -> str:
        """The preset's name and the fields that differ from it, for people to read:
        ``tavern (no_finish_on_top=true)``; ``match_end=False`` leaves out a match length
        that the reader is told otherwise, or that is not played (duplicate tournaments)."""
        changed = ", ".join(f"{k}={json.dumps(v)}"
                            for k, v in self.overrides(match_end).items())
        return f"{self.preset} ({changed})" if changed else self.preset

    # -- derived facts (not serialised) -------------------------------------------------------

    @cached_property
    def num_ranks(self) -> int:
        return len(self.rank_order)

    @cached_property
    def deck_size(self) -> int:
        return 4 * len(self.rank_order)

    @cached_property
    def top_rank(self) -> int:
        """Index of the highest rank (the ace in ``culo``, the 2 in ``tavern``)."""
        return len(self.rank_order) - 1

    @cached_property
    def rank_index(self) -> dict[str, int]:
        return {r: i for i, r in enumerate(self.rank_order)}

    @cached_property
    def lowest_club(self) -> tuple[int, int]:
        """The round-1 starting card under ``lowest_club``: the club of the lowest rank."""
        return 0, SUITS.index("C")

    @cached_property
    def president_exchange(self) -> int:
        """Cards the President/Arschloch pair swaps at this table size."""
        return self.exchange_cards_3p if self.num_players == 3 else self.exchange_cards

    @cached_property
    def vice_exchange(self) -> int:
        """Cards the Vice pair swaps at this table size (0 with 3 players)."""
        return 0 if self.num_players == 3 else self.vice_exchange_cards

    @cached_property
    def hand_sizes(self) -> tuple[int, ...]:
        """Cards dealt to the dealer's first, second, ... recipient."""
        n, d = self.num_players, self.deck_size
        if self.deal == "equal":
            return (d // n,) * n
        return tuple(d // n + (1 if i < d % n else 0) for i in range(n))

    @cached_property
    def num_leftover(self) -> int:
        return self.deck_size - sum(self.hand_sizes)

    @cached_property
    def max_total(self) -> int:
        """The most match points a seat can hold (a round's winner scores ``num_players - 1``):
        all rounds won, or one point short of ``target_points`` and then a round won."""
        per_round = self.num_players - 1
        if self.rounds is not None:
            return self.rounds * per_round
        return self.target_points - 1 + per_round

    def titles_for(self) -> tuple[str, ...]:
        """Titles by place (index 0 = 1st place) at this table size."""
        n = self.num_players
        if n == 3:
            return ("President", "Citizen", "Arschloch")
        return ("President", "Vice-President") + ("Citizen",) * (n - 4) + (
            "Vice-Arschloch", "Arschloch")


FIELD_NAMES = tuple(f.name for f in dataclasses.fields(Rules))

TABLE_SIZES = range(3, 7)
"""The table sizes the game is for: 3 to 6 players."""


def _is_int(v: Any) -> bool:
    # A stored field is a plain int, as JSON has it (from_preset converts NumPy's first).
    return isinstance(v, int) and not isinstance(v, bool)


def is_integer(value: Any) -> bool:
    """A Python or NumPy integer, but not a bool (``True`` is an int to Python)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _plain(value: Any) -> Any:
    """A NumPy scalar as the Python value it holds (``np.int64(4)`` as ``4``): a table size
    taken from ``np.arange`` is a table size, and the rules must stay JSON."""
    if type(value).__module__ == "numpy" and getattr(value, "shape", None) == ():
        return value.item()
    return value


MATCH_END = ("rounds", "target_points")
"""The fields that say when a match ends."""


def _with_one_match_end(overrides: dict[str, Any]) -> dict[str, Any]:
    """``overrides``, where they set one of ``rounds``/``target_points`` but not the other,
    with the other cleared, so that ``target_points=15`` on a 5-round match (a preset, a
    rules object, its JSON form or a file) is a first-to-15 match. Setting one to null (as
    it is already, say) clears nothing: the other stays the match's end."""
    out = dict(overrides)
    for field, other in (MATCH_END, MATCH_END[::-1]):
        if overrides.get(field) is not None and other not in overrides:
            out[other] = None
    return out


def _drop_same_preset(preset: str, overrides: dict[str, Any]) -> None:
    """Removes a ``preset`` override naming the preset already chosen; another one is an error,
    since the preset is where every other field comes from, not a field to override."""
    if "preset" not in overrides:
        return
    other = overrides.pop("preset")
    if other != preset:
        raise RulesError(f"preset: given as {preset!r} and as {other!r}; name the preset once, "
                         f"as the rules argument (allowed: {', '.join(PRESETS)})")


def _validate(r: Rules) -> None:
    if not isinstance(r.preset, str) or r.preset not in PRESETS:
        raise RulesError(f"preset: unknown preset {r.preset!r}; allowed: {', '.join(PRESETS)}")
    if not _is_int(r.num_players) or r.num_players not in TABLE_SIZES:
        raise RulesError(f"num_players: {r.num_players!r} is not allowed; the game is for "
                         f"3 to 6 players")
    order = r.rank_order
    if (not isinstance(order, tuple) or not all(isinstance(x, str) for x in order)
            or sorted(order) not in (sorted(SKAT_RANKS), sorted(ALL_RANKS))):
        raise RulesError(f"rank_order: {list(order) if isinstance(order, tuple) else order!r} "
                         f"must be a permutation of the 8 ranks {' '.join(SKAT_RANKS)} or of "
                         f"all 13 ranks {' '.join(ALL_RANKS)}, lowest first, e.g. "
                         f"{RANK_ORDER_EXAMPLE}")
    for name, allowed in _CHOICES.items():
        if getattr(r, name) not in allowed:
            raise RulesError(f"{name}: {getattr(r, name)!r} is not allowed; allowed: "
                             f"{', '.join(allowed)}")
    for name in _BOOLS:
        if not isinstance(getattr(r, name), bool):
            raise RulesError(f"{name}: {getattr(r, name)!r} is not allowed; allowed: true, false")
    for name in _EXCHANGE:
        v = getattr(r, name)
        if not _is_int(v) or not 0 <= v <= 3:
            raise RulesError(f"{name}: {v!r} is not allowed; allowed: an integer 0..3")
    if r.vice_exchange_cards > r.exchange_cards:
        raise RulesError(f"vice_exchange_cards: {r.vice_exchange_cards} is more than "
                         f"exchange_cards ({r.exchange_cards}); allowed: 0..{r.exchange_cards}")
    if (r.rounds is None) == (r.target_points is None):
        raise RulesError("rounds, target_points: exactly one of them must be set (the other "
                         f"null); got rounds={r.rounds!r}, target_points={r.target_points!r}")
    for name in ("rounds", "target_points"):
        v = getattr(r, name)
        if v is not None and (not _is_int(v) or not 1 <= v <= 1000):
            raise RulesError(f"{name}: {v!r} is not allowed; allowed: an integer 1..1000 or null")


def make_rules(rules: "Rules | str | dict | None" = "culo", num_players: int | None = None,
               /, **overrides: Any) -> Rules:
    """Rules from a preset name, a dict, a YAML/JSON file path or a Rules object, plus overrides.

    ``num_players`` (when given) and ``overrides`` are applied on top. The two leading
    arguments are positional-only, so that ``num_players`` may also come among the overrides
    (``--set num_players=5``) as any other field does.

    Raises:
        RulesError: anything invalid, naming the field and the allowed values, or
            ``num_players`` given both ways with different values.
    """
    if num_players is not None:
        if overrides.get("num_players", num_players) != num_players:
            raise RulesError(f"num_players: given as {num_players} and as "
                             f"{overrides['num_players']!r}; give the table size once")
        overrides["num_players"] = num_players
    if rules is None:
        rules = "culo"
    if isinstance(rules, Rules):
        return rules.replace(**overrides) if overrides else rules
    if isinstance(rules, dict):
        if "preset" in rules:
            _drop_same_preset(rules["preset"], overrides)
        return Rules.from_dict({**rules, **_with_one_match_end(overrides)})
    if isinstance(rules, (str, Path)):
        name = str(rules)
        if name in PRESETS:
            _drop_same_preset(name, overrides)
            return Rules.from_preset(name, **overrides)
        if name.endswith((".json", ".yaml", ".yml")) or Path(name).is_file():
            data = load_rules_file(name)
            try:
                if "preset" in data:
                    _drop_same_preset(data["preset"], overrides)
                return Rules.from_dict({**data, **_with_one_match_end(overrides)})
            except RulesError as exc:  # the message's start names the field; callers read it
                if str(exc).split(":")[0] in overrides or _is_valid(data):
                    raise  # the overrides are at fault, not the file
                raise RulesError(f"{exc} (rules file {name!r})") from None
        raise RulesError(f"unknown preset {name!r}; allowed: {', '.join(PRESETS)} "
                         f"(or a .yaml/.json rules file)")
    raise RulesError(f"rules: expected a preset name ({', '.join(PRESETS)}), a dict or a "
                     f".yaml/.json rules file, got {type(rules).__name__}")


def _is_valid(data: dict) -> bool:
    """Whether a rules file's fields make rules on their own (without the overrides)."""
    try:
        Rules.from_dict(data)
    except RulesError:
        return False
    return True


def players_or_default(rules: "Rules | str | dict | None", num_players: int | None,
                       overrides: dict[str, Any]) -> int | None:
    """``num_players``, or 4 where neither it nor the rules (object, dict, file) nor the
    overrides name the table size: the envs' default, which never overrides a rules file's."""
    if num_players is None and not names_num_players(rules, overrides):
        return 4
    return num_players


def names_num_players(rules: "Rules | str | dict | None", overrides: dict[str, Any]) -> bool:
    """Whether the rules (a Rules object, a dict, a rules file) or the overrides name the
    table size themselves, which a count of the players given must then not override."""
    if "num_players" in overrides or isinstance(rules, Rules):
        return True
    if isinstance(rules, dict):
        return "num_players" in rules
    if isinstance(rules, (str, Path)) and str(rules) not in PRESETS:
        try:
            return "num_players" in load_rules_file(rules)
        except RulesError:
            return False
    return False


def make_rules_for_seats(rules: "Rules | str | dict | None", players: int | None, seats: int,
                         counted_from: str, **overrides: Any) -> "Rules":
    """:func:`make_rules`, with a table of ``seats`` players (counted from what the user gave,
    e.g. one bot per seat) where neither ``players``, the rules nor the overrides name the
    table size.

    Raises:
        RulesError: as :func:`make_rules`; a counted table size the rules refuse says where
            the count came from (``counted_from``), as the user never typed that number.
    """
    counted = players is None and not names_num_players(rules, overrides)
    try:
        return make_rules(rules, seats if counted else players, **overrides)
    except RulesError as exc:
        if counted and str(exc).startswith("num_players:"):
            raise RulesError(f"{counted_from} make a table of {seats} players; {exc}") from None
        raise


def load_rules_file(path: str | Path) -> dict[str, Any]:
    """Reads a rules mapping from a YAML or JSON file."""
    p = Path(path)
    if p.is_dir():
        raise RulesError(f"rules file {str(p)!r} is a directory; give a .yaml or .json file")
    if not p.is_file():
        raise RulesError(f"rules file {str(p)!r} does not exist")
    if p.suffix == ".jsonl":
        raise RulesError(f"rules file {str(p)!r} is JSON Lines, as a game record is; a rules "
                         f"file is one mapping of field names to values, in YAML or JSON "
                         f"(.json)")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RulesError(f"rules file {str(p)!r} cannot be read as UTF-8 text: {exc}") from None
    try:
        from arschloch_env.unique_keys import load_json, load_yaml, yaml_error_line
        data = load_json(text) if p.suffix == ".json" else load_yaml(text)
    except Exception as exc:  # noqa: BLE001 - any parse error becomes one clear message
        raise RulesError(f"rules file {str(p)!r} cannot be parsed as "
                         f"{'JSON' if p.suffix == '.json' else 'YAML'}: "
                         f"{yaml_error_line(exc)}") from None
    if not isinstance(data, dict):
        raise RulesError(f"rules file {str(p)!r} must hold a mapping of field names to values")
    return data


def parse_override(text: str) -> tuple[str, Any]:
    """Parses one ``FIELD=VALUE`` of ``--set`` into a typed pair.

    Values: ``true``/``false``, ``null``/``none``, integers, lists of ranks, comma-separated
    (``rank_order=7,8,9,J,Q,K,A,T``) or in YAML's brackets as train's ``--set`` takes them
    (``rank_order=[7,8,9,J,Q,K,A,T]``), otherwise the string.

    Raises:
        RulesError: no ``=``, or an unknown field.
    """
    if "=" not in text:
        raise RulesError(f"--set {text!r}: expected FIELD=VALUE, e.g. rounds=1")
    key, raw = text.split("=", 1)
    key = key.strip()
    if key == "preset":
        raise RulesError(f"--set {text!r}: the preset is where the other fields come from, "
                         f"not a field to override; name another preset instead (allowed: "
                         f"{', '.join(PRESETS)})")
    if key not in FIELD_NAMES:
        raise RulesError(f"--set {text!r}: unknown rules field {key!r}; allowed: "
                         f"{', '.join(f for f in FIELD_NAMES if f != 'preset')}")
    raw = raw.strip()
    low = raw.lower()
    value: Any
    if key == "rank_order":
        value = _parse_ranks(raw)
    elif low in ("true", "yes", "on"):
        value = True
    elif low in ("false", "no", "off"):
        value = False
    elif low in ("null", "none", ""):
        value = None
    elif re.fullmatch(r"[+-]?[0-9]+", raw):  # int() would also read 1_0 as 10, and "٣" as 3
        value = int(raw)
    else:
        value = raw  # the field's check names what it allows
    return key, value


def _parse_ranks(raw: str) -> tuple[str, ...]:
    """``7,8,9,J``, ``7 8 9 J``, YAML's ``[7, 8, 9, 'J']`` or the rules table's ``789J`` as
    upper-case rank names (each one character: ``T`` is the ten)."""
    names = raw.removeprefix("[").removesuffix("]").replace(" ", ",").split(",")
    names = [x.strip("'\"").upper() for x in names if x.strip("'\"")]
    return tuple(names[0]) if len(names) == 1 else tuple(names)
