"""A person at the table: the terminal game ``arschloch play`` and its :class:`HumanAgent`.

The agent prompts on the terminal: it shows the sorted hand, the table, who passed, the cards
left per player, titles and totals, and the legal moves numbered and in plain words. Moves are
typed as cards or by number:

* ``8 8`` or ``8h 8d`` (a pair of eights; without suits the engine picks them: any of yours
  is the same move, as suits never matter for play),
  ``t``/``10`` for a ten, ``j q k a`` for the pictures, case-insensitive;
* ``pass`` (or ``p``); ``3`` or ``#3`` for move 3 of the list (a bare number that is also a
  rank of the deck, like ``8``, asks which is meant, also when that card cannot be played
  now or is not in your hand);
* in the exchange and the left-over swap the card to give, take or lay: ``7c``, ``give 7c``;
* ``help`` shows this, ``quit`` (or Ctrl-D, Ctrl-C) leaves the game.

Bad input is answered with what is wrong and prompts again. ``--hint BOT`` shows what that bot
would play. Finished matches are kept in ``--record``; an unfinished one is not written.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import re
import signal
import sys
import textwrap
import unicodedata
from typing import Any, Callable

from agents.base import QuitGame
from arschloch_env.actions import ActionCodec, play_words

RANK_ALIASES = {"10": "T", "t": "T", "j": "J", "q": "Q", "k": "K", "a": "A",
                "ten": "T", "jack": "J", "queen": "Q", "king": "K", "ace": "A"}
# a suit only after a one-character rank or 10: "kings" is not the king of spades
CARD_RE = re.compile(r"^(?:(10|[2-9tjqka])([cshd])?|(ten|jack|queen|king|ace))$")
PROMPT = "your move> "
HELP = ("Type a move as cards, e.g. '8 8' or '8h 8d' (a pair of eights), 't' or '10' for a "
        "ten, 'pass' (or 'p'), or the number of a move in the list ('#3'; a bare '3' asks "
        "which is meant where 3 is a rank of the deck). In the "
        "exchange and the left-over swap type the card to give, take or lay ('7c'). 'quit' "
        "or Ctrl-D leaves the game.")


class MoveError(ValueError):
    """Input that is not a legal move now; the message says why."""


ECHO_WIDTH = 20
"""The most of a not-understood word an error message repeats (a pasted line can be long)."""
NAME_WIDTH = 14
"""The player column of the seat table and of the round summary: longer names are cut."""
PRESIDENT_WINS = "points do not decide here: the President of the last round wins the match"
"""Said wherever totals are shown under rules with ``winner: president`` (the culo presets),
where the totals only show what the places would score."""


WIDTH = 80
"""The terminal width the game's lines fit: longer ones are wrapped, never cut."""


def wrapped(text: str, width: int = WIDTH) -> str:
    """``text`` with every line longer than ``width`` wrapped at spaces, its continuation
    lines indented 4 more than the line, so that an 80-column terminal breaks no word."""
    lines = []
    for line in text.split("\n"):
        indent = " " * (len(line) - len(line.lstrip(" ")))
        lines.extend([line] if len(line) <= width else textwrap.wrap(
            line, width, subsequent_indent=indent + "    ", break_long_words=False,
            break_on_hyphens=False))
    return "\n".join(lines)


def show_rank(rank: str) -> str:
    return "10" if rank == "T" else rank


def _shortened(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, a cut marked with '...'."""
    return text if len(text) <= width else text[:width - 3] + "..."


def _typed(move: str, legal_cards: list[str]) -> str:
    """How to type a legal move (``8 8``, ``pass``, ``7C``)."""
    return " ".join(legal_cards) if legal_cards else move


# -- reading a move ---------------------------------------------------------------------------

def _ranks(view: dict) -> list[str]:
    return list(view["rules"]["rank_order"])


def _move_cards(view: dict, action: int) -> list[str]:
    """What to type for a legal action: ``["8", "8"]`` for a pair, ``["7C"]`` for a give."""
    R = len(_ranks(view))
    order = _ranks(view)
    if action == 0:
        return ["pass"]
    if action < 1 + 4 * R:
        r, k = (action - 1) // 4, (action - 1) % 4 + 1
        shown = show_rank(order[r])
        if k == 1 and shown.isdigit() and int(shown) <= len(view["legal"]):
            # a bare "8" would also be move 8 of the list: show the card itself
            return [next(c for c in view["hand"] if c[0] == order[r])]
        return [shown] * k
    words = next(x["move"] for x in view["legal"] if x["id"] == action).split()
    return [words[1]]  # "give 7C", "take AS", "lay 8D face down"


def _only_top_warning(view: dict, action: int) -> str:
    """A note on a play that would leave only top-rank cards under ``no_finish_on_top``:
    such a hand is shown and takes the lowest place left at once, which a player new to the
    rule does not see coming."""
    order = _ranks(view)
    move = ActionCodec(order).decode(action)
    if not view["rules"]["no_finish_on_top"] or move.kind != "play":
        return ""
    left = [c[0] for c in view["hand"]]
    for _ in range(move.count):
        left.remove(order[move.rank])
    top = order[-1]
    if left and set(left) == {top}:
        tops = play_words(top, 2).removeprefix("pair of ")
        return f"(leaves only {tops}: the lowest place left)"
    return ""


def _table_words(view: dict) -> str:
    cards = view["table"]["cards"]
    return play_words(cards[0][0], len(cards))


def _explain(view: dict, rank: int, count: int, held: int) -> str:
    """Why playing ``count`` cards of ``rank`` is illegal now."""
    order = _ranks(view)
    name = show_rank(order[rank])
    if count > 4:
        return "a play has at most 4 cards (one rank in four suits)"
    if held < count:
        if not held:
            return f"you hold no card of rank {name} (your hand: {' '.join(view['hand'])})"
        return (f"you hold only {held} card(s) of rank {name} "
                f"({' '.join(c for c in view['hand'] if c[0] == order[rank])})")
    table = view["table"]
    if table is not None:
        k = len(table["cards"])
        on = _table_words(view)
        if count != k:
            return (f"the table holds a {on}: play exactly {k} card(s) of a higher rank, "
                    f"or pass")
        if rank <= order.index(table["cards"][0][0]):
            return (f"that does not beat the {on} on the table: a strictly higher rank is "
                    f"needed (equal is never enough)")
    if view["rules"]["no_finish_on_top"] and rank == len(order) - 1 and count == len(view["hand"]):
        return (f"you may not go out with the top rank ({name}); keep a lower card for the "
                f"last play")
    return "that is not a legal move now"


def _normalized(text: str) -> str:
    """What ``text`` says, as its ASCII twin would: stripped, lower case, full-width forms
    (an East Asian input method's '２', 'ｐａｓｓ') folded by NFKC and the decimal digits of
    every script ('٣') made ASCII, so that '２' asks which is meant just as '2' does. Other
    look-alikes stay as typed (a superscript '³' is no number: NFKC would make it one)."""
    folded = "".join(
        unicodedata.normalize("NFKC", c) if unicodedata.east_asian_width(c) == "F"
        else str(unicodedata.decimal(c)) if c.isdecimal() else c for c in text)
    return folded.strip().lower()


def _move_number(digits: str, moves: int) -> int:
    """The number typed; ``int`` refuses numbers of thousands of digits (a pasted line), which
    are past the end of any list of moves."""
    significant = digits.lstrip("0") or "0"
    if len(significant) > 9:
        raise MoveError(f"there is no move {significant[:12]}...; the moves are numbered 1 "
                        f"to {moves}")
    return int(significant)


def parse_move(text: str, view: dict) -> tuple[int, list[str] | None]:
    """The action (and exact cards, if suits were typed) that ``text`` means in ``view``.

    Raises:
        MoveError: not understood or not legal, with a message that says why.
        QuitGame: ``quit``.
    """
    order = _ranks(view)
    R = len(order)
    legal = [x["id"] for x in view["legal"]]
    phase = view["phase"]
    raw = _normalized(text)
    if raw in ("quit", "exit"):  # not "q": that is a queen
        raise QuitGame()
    if not raw:
        raise MoveError(_what_to_type(view))
    number = raw[1:] if raw.startswith("#") else raw
    # isdecimal, not isdigit: int() refuses digits such as '²' that isdigit accepts
    if number.isdecimal():
        i = _move_number(number, len(legal))
        by_number = legal[i - 1] if 1 <= i <= len(legal) else None
        as_rank = RANK_ALIASES.get(number, number.upper())
        is_rank = as_rank in order
        if is_rank:  # what the bare rank would mean in this phase
            r = order.index(as_rank)
            rank_action = {"play": 1 + 4 * r, "take": 1 + 5 * R + r}.get(phase, 1 + 4 * R + r)
        if raw.startswith("#") or not is_rank:
            if by_number is None:
                raise MoveError(f"there is no move {i}; the moves are numbered 1 to "
                                f"{len(legal)}")
            return by_number, None
        pool = view["face_up"] if phase == "take" else view["hand"]
        held = [c for c in pool if c[0] == as_rank]
        if by_number is not None and by_number != rank_action:
            if not held:  # "5" without a 5 in hand: a misread hand as likely as a move number
                raise MoveError(f"you hold no {show_rank(as_rank)}: type '#{i}' for move {i} "
                                f"({view['legal'][i - 1]['move']})")
            what = (f"a single {show_rank(as_rank)}" if phase == "play"
                    else f"{phase} the {show_rank(as_rank)}")
            # the card reading is offered only when it is a legal move
            card = (f", or '{raw}{held[0][1].lower()}' for {what}" if rank_action in legal
                    else f"; {what} is not legal now")
            raise MoveError(f"'{raw}' is ambiguous: type '#{i}' for move {i} "
                            f"({view['legal'][i - 1]['move']}){card}")
        # otherwise it names the rank: read it as cards below
    tokens = [t for t in re.split(r"[\s,]+", raw) if t]
    if tokens and tokens[0] in ("give", "take", "lay", "play"):
        if tokens[0] != phase:  # a typed verb is a promise: lay is not take
            raise MoveError(f"'{tokens[0]}' is not a move now: {_phase_hint(view)}")
        tokens = tokens[1:]
    if tokens in (["pass"], ["p"]):
        if phase != "play":
            raise MoveError(_phase_hint(view))
        if 0 not in legal:
            raise MoveError("you lead this trick, so you cannot pass: play one or more cards "
                            "of one rank")
        return 0, None
    alone = next((t for t in tokens if t in ("pass", "p", "help", "quit", "exit")), None)
    if alone is not None:
        if phase != "play" and alone in ("pass", "p"):  # there is no passing here at all
            raise MoveError(_phase_hint(view))
        raise MoveError(f"'{alone}' goes on a line of its own; a move is 'pass' or cards of "
                        f"one rank, not both")
    parsed = []
    for t in tokens:
        m = CARD_RE.match(t)
        if m is None:
            raise MoveError(f"'{_shortened(t, ECHO_WIDTH)}' is not understood: "
                            + ("type cards like '8', '8h', 't' or '10' (ten), 'pass', or a "
                               "move number; 'help' explains" if phase == "play"
                               else _phase_hint(view)))
        word, suit = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), None)
        rank = RANK_ALIASES.get(word, word.upper())
        if rank not in order:
            raise MoveError(f"there is no rank {show_rank(rank)} in this deck (ranks: "
                            f"{' '.join(show_rank(r) for r in order)})")
        parsed.append((rank, suit.upper() if suit else None))
    if not parsed:
        raise MoveError(_what_to_type(view))
    if phase != "play" and len(parsed) != 1:
        raise MoveError(f"{_phase_hint(view)} (one card at a time)")
    if len({r for r, _ in parsed}) > 1:
        raise MoveError("all cards of one move must have the same rank (suits never matter "
                        "for play)")
    rank = parsed[0][0]
    r = order.index(rank)
    suited = [rank + s for _, s in parsed if s]
    if len(set(suited)) != len(suited):
        raise MoveError("the same card is typed twice")
    if phase == "take":
        source, where = view["face_up"], "face up on the table"
    else:
        source, where = view["hand"], "in your hand"
    of_rank = [c for c in source if c[0] == rank]
    missing = [c for c in suited if c not in of_rank]
    if phase != "play":
        if not of_rank:
            raise MoveError(f"there is no card of rank {show_rank(rank)} {where}"
                            + (f" (face up: {' '.join(view['face_up'])})" if phase == "take"
                               else ""))
        if missing:
            raise MoveError(f"{missing[0]} is not {where}; of rank {show_rank(rank)} there "
                            f"is {' '.join(of_rank)}")
        base = 1 + 5 * R if phase == "take" else 1 + 4 * R
        return base + r, suited or None
    k = len(parsed)
    action = 1 + 4 * r + k - 1 if k <= 4 else -1
    if action not in legal:
        if k <= 4 and missing and len(of_rank) >= k:
            raise MoveError(f"{missing[0]} is not {where}; your {show_rank(rank)}s: "
                            f"{' '.join(of_rank)}")
        raise MoveError(_explain(view, r, k, len(of_rank)))
    if missing:
        raise MoveError(f"{missing[0]} is not {where}; your {show_rank(rank)}s: "
                        f"{' '.join(of_rank)}")
    if not suited:
        return action, None
    rest = [c for c in of_rank if c not in suited]  # untyped suits: the lowest ones left
    return action, suited + rest[:k - len(suited)]


def _what_to_type(view: dict) -> str:
    """What an empty line is answered with: the moves of this phase (no '8 8' or 'pass' when
    a card is to be given, taken or laid)."""
    if view["phase"] == "play":
        return "type a move (e.g. '8 8', 'pass' or a number); 'help' explains"
    return _phase_hint(view)


GIVES_BACK_TO = {"President": "Arschloch", "Vice-President": "Vice-Arschloch"}
"""The title a title gives cards back to in the exchange: the one that handed it its best."""


def _phase_hint(view: dict, labels: list[str] | None = None) -> str:
    if view["phase"] == "give":
        titles = view["titles"]
        to = GIVES_BACK_TO.get(titles[view["seat"]])
        seat = titles.index(to) if to in titles else None
        whom = ""
        if seat is not None:
            whom = " to " + (_name(seat, view["seat"], labels) if labels else f"player_{seat}")
        return (f"you are giving cards back{whom} in the exchange ({view['to_give']} more): "
                f"type a card of your hand, e.g. '{view['hand'][0].lower()}', or a move "
                f"number")
    if view["phase"] == "take":
        return (f"take one of the face-up left-over cards ({' '.join(view['face_up'])}): type "
                f"it, e.g. '{view['face_up'][0].lower()}', or a move number")
    if view["phase"] == "lay":
        return ("lay one card of your hand face down: type it, e.g. "
                f"'{view['hand'][0].lower()}', or a move number")
    return "play cards or pass"


# -- the agent --------------------------------------------------------------------------------

def _echoed_input(prompt: str) -> str:
    """:func:`input` for moves read from a pipe or file, which the terminal does not echo:
    the line read is shown after the prompt, so the next output does not run on after it."""
    text = input(prompt)
    print(text)
    return text


def _line_editing() -> None:
    """Arrow keys and history for :func:`input` at a terminal: without readline an arrow key
    types escape codes into the move, and Ctrl-D in the middle of a line sends what was typed
    so far (a half-typed "pa" would pass)."""
    try:
        importlib.import_module("readline")  # loading it is what gives input() line editing
    except ImportError:  # Windows, or a Python built without it: plain input()
        pass


class HumanAgent:
    """The agent protocol on a terminal: shows the seat's view and reads a move.

    Args:
        input_fn: reads one line (default :func:`input`, which echoes what it read when
            stdin is no terminal); EOF (Ctrl-D) leaves the game.
        output: writes one line (default :func:`print`).
        hint: an agent whose choice is shown as a hint at every decision.
        labels: names of the seats' players, for the table.
    """

    name = "human"
    uses_view = True
    interactive = True

    def __init__(self, input_fn: Callable[[str], str] | None = None,
                 output: Callable[[str], Any] = print, hint: Any = None,
                 hint_label: str = "hint", labels: list[str] | None = None):
        if input_fn is None:
            terminal = sys.stdin is not None and sys.stdin.isatty()
            if terminal:
                _line_editing()
            input_fn = input if terminal else _echoed_input
        self.input_fn = input_fn
        self.output = output
        self.hint = hint
        self.hint_label = hint_label
        self.labels = labels
        self.seat = 0

    def reset(self, rules: dict, seat: int, seed: int | None = None) -> None:
        self.seat = seat
        if self.hint is not None and hasattr(self.hint, "reset"):
            self.hint.reset(rules, seat, seed)

    def act(self, observation: dict, view: dict | None) -> int:
        """The action id alone, for a caller that steps the game by ids (a PettingZoo loop):
        the suits typed cannot go with it, and the player is told so. The kit's runner calls
        :meth:`act_cards` instead and moves the very cards typed."""
        action, cards = self.act_cards(observation, view)
        if cards:
            self.output(wrapped(f"  (this game takes moves without suits: the engine picks "
                                f"the cards of that rank, not necessarily {' '.join(cards)}; "
                                f"suits never matter for play)"))
        return action

    def act_cards(self, observation: dict, view: dict | None) -> tuple[int, list[str] | None]:
        """The move and the exact cards typed (None without suits): see :mod:`agents.base`."""
        return self.choose(view, observation)

    def _tell_hint(self, view: dict, action: int, cards: list[str] | None) -> None:
        """A hint bot that counts cards noted its own take or lay; it learns the move made."""
        knowledge = getattr(self.hint, "knowledge", None)
        if view["phase"] in ("take", "lay") and hasattr(knowledge, "note_action"):
            knowledge.note_action(action, cards[0] if cards else None)

    def choose(self, view: dict, observation: dict | None = None) -> tuple[int, list[str] | None]:
        """Shows the view and reads moves until one is legal: ``(action, exact cards)``.

        Raises:
            QuitGame: ``quit`` or end of input.
        """
        self.output(wrapped(self.describe(view, observation)))
        while True:
            try:
                text = self.input_fn(PROMPT)
            except EOFError:
                raise QuitGame() from None
            if _normalized(text) in ("help", "h", "?"):
                self.output(wrapped(HELP))
                continue
            try:
                action, cards = parse_move(text, view)
            except MoveError as exc:
                self.output(wrapped(f"  ! {exc}"))
                continue
            self._tell_hint(view, action, cards)
            return action, cards

    def describe(self, view: dict, observation: dict | None = None) -> str:
        """The table as this seat sees it, with the numbered legal moves."""
        n = len(view["counts"])
        me = view["seat"]
        labels = self.labels or [f"player_{s}" for s in range(n)]
        lines = [f"== round {view['round']}: your turn (player_{me}) " + "=" * 30,
                 f"  {'seat':9} {'player':{NAME_WIDTH}} {'title':15} {'cards':>5} "
                 f"{'points':>6}"]
        for s in range(n):
            flags = []
            if view["places"][s] is not None:
                flags.append(f"place {view['places'][s]}")  # with 'on the table', in 80 columns
            if view["passed"][s]:
                flags.append("passed")
            if view["table"] is not None and view["table"]["seat"] == s:
                flags.append("on the table")
            row = (f"  player_{s:<2} {_table_name(s, me, labels):{NAME_WIDTH}} "
                   f"{view['titles'][s] or '-':15} {view['counts'][s]:5} "
                   f"{view['totals'][s]:6}  ")
            # flags that pass the 80th column go on under the flags column
            lines.extend(textwrap.wrap(row + ", ".join(flags), WIDTH, subsequent_indent=" "
                                       * len(row), break_on_hyphens=False))
        if view["rules"]["winner"] == "president":
            lines.append(f"  ({PRESIDENT_WINS})")
        if view["phase"] == "play":
            if view["table"] is None:
                lines.append("  table: empty: you lead (any single, pair, triple or quad)")
            else:
                lines.append(f"  table: {_table_words(view)} ({' '.join(view['table']['cards'])})"
                             f" by player_{view['table']['seat']}: beat it with the same "
                             f"number of a higher rank, or pass")
        if view["face_up"]:
            lines.append(f"  face-up left-over cards: {' '.join(view['face_up'])}")
        if view["received"] or view["given"]:
            # the view's lists hold the left-over swap's cards too: say so where it is played
            got, gave = (("received or took", "gave or laid down")
                         if view["rules"]["leftover_swap"] else ("received", "gave"))
            lines.append(f"  this round you {got}: {' '.join(view['received']) or '-'}; "
                         f"{gave}: {' '.join(view['given']) or '-'}")
        lines.append(f"  your hand: {' '.join(view['hand'])}")
        lines.append("  " + _phase_hint(view, labels) if view["phase"] != "play" else
                     "  legal moves:")
        width = max(len(x["move"]) for x in view["legal"])
        for i, x in enumerate(view["legal"], 1):
            typed = " ".join(_move_cards(view, x["id"])).lower()
            lines.append(f"   {i:2}) {x['move']:{width}}   type: {typed}")
            warning = _only_top_warning(view, x["id"])
            if warning:  # a line of its own: "type:" ends its line, for eyes and scripts
                lines.append(f"       {warning}")
        if self.hint is not None and observation is not None:
            lines.append(f"  hint ({self.hint_label}): {self._hint_words(observation, view)}")
        return "\n".join(lines)

    def _hint_words(self, observation: dict, view: dict) -> str:
        """The hint bot's move in words; a broken hint (an error, its sys.exit(), something
        that is not an action id) must not end the game, nor be blamed on the player."""
        try:
            a = self.hint.act(observation, view)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - whatever a user's bot raises
            return f"(no hint: {type(exc).__name__}: {exc})"
        try:
            a = ActionCodec(tuple(view["rules"]["rank_order"])).check(a)
        except ValueError as exc:
            return f"(no hint: {exc})"
        return next((x["move"] for x in view["legal"] if x["id"] == a), f"illegal action {a}")


# -- the terminal game ------------------------------------------------------------------------

def _seat(player: str) -> int:
    """The seat of a player name (``player_2`` -> 2)."""
    return int(player.split("_")[1])


def _name(seat: int, human: int, labels: list[str]) -> str:
    return "you" if seat == human else f"player_{seat} ({labels[seat]})"


def _table_name(seat: int, human: int, labels: list[str]) -> str:
    """The player column of a table: cut alike in every table, so that columns align."""
    name = "you" if seat == human else labels[seat]
    # a cut keeps the end, where bundles of one folder (bots/ppo_vec_culo_...) differ
    return name if len(name) <= NAME_WIDTH else "..." + name[3 - NAME_WIDTH:]


def follow_hands(hands: dict[str, list[str]], event: dict) -> None:
    """Keeps ``hands`` (player name -> cards held) up to date with one record event.

    The narrator needs the hand that an only-top-rank exit reveals, and the ``out`` event
    does not list it (INTERFACES.md fixes its fields), so the hands are followed from the
    deal through every swap, exchange and play. A player out of the round holds nothing from
    then on (an only-top hand, revealed, is played no more).
    """
    kind = event["event"]
    if kind == "round":
        hands.clear()
        hands.update({p: list(cards) for p, cards in event["hands"].items()})
    elif kind == "leftover_swap":
        hands[event["player"]].append(event["take"])
        hands[event["player"]].remove(event["lay"])
    elif kind == "exchange":
        for card in event["cards"]:
            hands[event["from"]].remove(card)
            hands[event["to"]].append(card)
    elif kind == "play":
        for card in event["cards"]:
            hands[event["player"]].remove(card)
    elif kind == "out":
        hands[event["player"]] = []


def narrate(event: dict, human: int, labels: list[str],
            hands: dict[str, list[str]] | None = None, winner: str = "points",
            last_move: dict | None = None) -> str | None:
    """One record event as the human at ``human`` may see it (hidden cards stay hidden).

    Args:
        hands: the cards held before ``event``, as :func:`follow_hands` keeps them; needed
            to show the hand an only-top-rank exit reveals (the rules make it public).
        winner: the rules field: under ``"president"`` the totals shown are said not to
            decide the winner.
        last_move: the ``play`` or ``pass`` event before ``event``: a trick that ends on a
            play ended by the top-card rule, which is then said (it is not always an ace).
    """
    kind = event["event"]

    def who(key: str = "player") -> str:
        return _name(_seat(event[key]), human, labels)

    def is_me(key: str) -> bool:
        return event[key] == f"player_{human}"

    def verb(key: str, mine: str, theirs: str) -> str:
        return mine if is_me(key) else theirs

    if kind == "round":
        left = len(event.get("leftover", []))  # unequal deals set cards aside: say how many
        return (f"\n-- round {event['round']}: {who('leader')} "
                f"{verb('leader', 'lead', 'leads')} the first trick"
                + (f" ({left} card(s) left over, not dealt)" if left else ""))
    if kind == "leftover_swap":
        lay = f" ({event['lay']})" if is_me("player") else ""
        return (f"  {who()} {verb('player', 'take', 'takes')} {event['take']} and "
                f"{verb('player', 'lay', 'lays')} a card face down{lay}")
    if kind == "exchange":
        cards = event["cards"]
        what = " ".join(cards) if is_me("from") or is_me("to") else f"{len(cards)} card(s)"
        return f"  exchange: {who('from')} {verb('from', 'give', 'gives')} {what} to {who('to')}"
    if kind == "play":
        words = play_words(event["cards"][0][0], len(event["cards"]))
        return f"  {who()} {verb('player', 'play', 'plays')} {' '.join(event['cards'])} ({words})"
    if kind == "pass":
        return f"  {who()} {verb('player', 'pass', 'passes')}"
    if kind == "trick_end":
        line = f"  -- trick to {who('winner')}"
        if last_move is not None and last_move["event"] == "play":
            rank = play_words(last_move["cards"][0][0], 1).removeprefix("single ")
            line += f" (the {rank} is the highest rank still in play: no one can beat it)"
        winner = _seat(event["winner"])
        if hands is None or hands.get(event["winner"]):
            return line
        n = len(hands)  # out: the next player clockwise who still holds cards leads
        after = [(winner + k) % n for k in range(1, n)]
        leader = next((s for s in after if hands.get(f"player_{s}")), None)
        if leader is None:
            return line
        return (f"{line}, who {'are' if winner == human else 'is'} out: "
                f"{_name(leader, human, labels)} {'lead' if leader == human else 'leads'}")
    if kind == "out":
        why = {"emptied": "played the last card", "only_top": "only top-rank cards left",
               "last": "the last one holding cards"}[event["reason"]]
        if event["reason"] == "only_top" and hands is not None:
            from arschloch_env.cards import SUIT_INDEX
            shown = sorted(hands[event["player"]], key=lambda c: SUIT_INDEX[c[1]])
            why += f", revealed: {' '.join(shown)}"
        return f"  ** {who()} {verb('player', 'are', 'is')} out: place {event['place']} ({why})"
    if kind == "round_end":
        rows = [f"\n== round {event['round']} over:"]
        for p, place in sorted(event["places"].items(), key=lambda kv: kv[1]):
            s = _seat(p)
            rows.append(f"  {place}. player_{s:<2} {_table_name(s, human, labels):{NAME_WIDTH}} "
                        f"{event['titles'][p]:15} +{event['points'][p]} point(s), total "
                        f"{event['totals'][p]}")
        if winner == "president":
            rows.append(f"  ({PRESIDENT_WINS})")
        return "\n".join(rows)
    if kind == "match_end":
        names = ", ".join(_name(_seat(w), human, labels) for w in event["winners"])
        why = ", the President of the last round" if winner == "president" else ""
        return f"\n== match over: winner(s) {names}{why}"
    return None


def play_terminal(rules, bots: list[Any], labels: list[str], seat: int, seed: int | None,
                  match_index: int, human: HumanAgent, output: Callable[[str], Any] = print):
    """Plays one match with ``human`` at ``seat``; returns the finished game.

    Raises:
        QuitGame: the player left.
    """
    from agents.runner import AgentError, agent_step, reset_agents
    from arschloch_env.engine import Game, player_name
    from arschloch_env.observation import Encoder

    agents = list(bots)
    agents.insert(seat, human)
    game = Game(rules, seed=seed, match_index=match_index, record=True, auto_pass=True,
                agents={player_name(i): l for i, l in enumerate(labels)})
    encoder = Encoder(game.R)
    reset_agents(agents, game.rules.to_dict(), seed)
    shown = 0
    hands: dict[str, list[str]] = {}
    last_move = None
    while True:
        for event in game.events[shown:]:
            line = narrate(event, seat, labels, hands, game.rules.winner, last_move)
            if line is not None:
                output(wrapped(line))
            follow_hands(hands, event)
            if event["event"] in ("play", "pass"):
                last_move = event
        shown = len(game.events)
        if game.is_over:
            return game
        try:
            agent_step(agents[game.current], game, encoder)
        except AgentError as exc:
            if game.current != seat:
                raise
            output(wrapped(f"  ! {exc}"))  # parse_move checks first; this is a safety net


def add_parser(sub) -> None:
    """Adds the ``play`` subcommand to the ``arschloch`` parser."""
    from arschloch_env.cli import add_rules_args

    p = sub.add_parser("play", help="play a match against bots on the terminal",
                       description="Play Arschloch against bots on the terminal. " + HELP)
    add_rules_args(p)
    p.add_argument("--bots", nargs="+", default=["random"], metavar="SPEC",
                   help="the other seats' bots in seat order, or one for all (default random)")
    p.add_argument("--seat", type=int, default=0, metavar="S", help="your seat (default 0)")
    p.add_argument("--seed", type=int, default=None, metavar="S",
                   help="seed of the deals (default: a new one each time)")
    p.add_argument("--matches", type=int, default=1, metavar="M",
                   help="matches to play (default 1)")
    p.add_argument("--hint", metavar="BOT", help="show what this bot would play")
    p.add_argument("--record", metavar="FILE", help="write the finished matches' records")
    p.set_defaults(func=_cmd_play)


def _cmd_play(args: argparse.Namespace) -> int:
    from agents.base import agent_label, make_agent, resolve_agents
    from arschloch_env.cli import (
        EXIT_INTERRUPTED, CliError, check_support, input_paths, interrupt_deferred,
        interruption, match_seed, open_record, overrides_from_args, rules_from_args,
    )
    from arschloch_env.rules import make_rules_for_seats

    if args.players is None and len(args.bots) > 1:
        rules = make_rules_for_seats(args.rules, None, len(args.bots) + 1,
                                     f"--bots: {len(args.bots)} bots, one per other seat, and "
                                     f"you", **overrides_from_args(args))
    else:
        rules = rules_from_args(args)
    n = rules.num_players
    specs = args.bots * (n - 1) if len(args.bots) == 1 else args.bots
    if len(specs) != n - 1:
        raise CliError(f"--bots: {len(specs)} bot(s) for the {n - 1} other seats; give one "
                       f"per other seat (in seat order) or one for all")
    if not 0 <= args.seat < n:
        raise CliError(f"--seat {args.seat}: allowed 0..{n - 1}")
    if args.matches < 1:
        raise CliError(f"--matches {args.matches}: must be at least 1")
    bots = resolve_agents(specs)
    hint = make_agent(args.hint) if args.hint else None
    check_support([*bots, *([hint] if hint else [])], [*specs, *([args.hint] if hint else [])],
                  rules)
    labels = [agent_label(s) for s in specs]
    labels.insert(args.seat, "human")
    seed = args.seed
    if seed is None:
        import secrets
        seed = secrets.randbits(31)
    writer = open_record(args.record,
                         input_paths(args.rules, "--bots", [*specs, *filter(None, [args.hint])]))
    human = HumanAgent(hint=hint, hint_label=args.hint or "hint", labels=labels)
    length = (f"{rules.rounds} round{'s' * (rules.rounds != 1)} a match"
              if rules.rounds is not None
              else f"a match ends in the round someone reaches {rules.target_points} points")
    print(wrapped(f"Arschloch: {rules.label(match_end=False)}, {n} players, {length}; ranks "
                  f"from low to high: {' '.join(show_rank(r) for r in rules.rank_order)}. You are "
                  f"player_{args.seat}; seed {seed}. 'help' explains the input."))
    # A parent that ignores SIGINT (nohup, some test runners) would pass that on to us and
    # leave Ctrl-C dead; the player must always be able to leave.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    code, finished = 0, 0
    with writer or contextlib.nullcontext():  # a bot's error: the note says what it holds
        try:
            for k in range(args.matches):
                if args.matches > 1:
                    print(f"\n== match {k + 1} of {args.matches} ==")
                game = play_terminal(rules, bots, labels, args.seat, match_seed(seed, k), k,
                                     human)
                with interrupt_deferred():  # the count and the record agree
                    finished += 1
                    if writer is not None:
                        writer.write_match(game.events)
        except QuitGame:
            print("\nyou left the game")
        except KeyboardInterrupt:
            print(f"\ninterrupted ({interruption()}); you left the game")
            code = EXIT_INTERRUPTED
    if writer is not None and finished:
        print(wrapped(f"record: {args.record} ({finished} finished match(es)"
                      + ("" if finished == args.matches else "; the unfinished one is not kept")
                      + ")"))
    elif writer is not None:
        print(wrapped(f"record: none written to {args.record} (no match finished)"))
    sys.stdout.flush()
    return code


__all__ = ["HumanAgent", "MoveError", "QuitGame", "add_parser", "follow_hands", "narrate",
           "parse_move", "play_terminal"]
