"""Where a bot's margin over a field bot comes from: the kind of move at which it first leaves
the field bot's play.

Each deal is played once with the field bot in every seat, and once with the bot in each seat
against n-1 copies of the field bot, one round per deal: the deals and games of ``arschloch
tournament --rules R --players N --bots BOT FIELD --seed S``. Agents are seeded per match, so a
game with the bot runs move for move as the field's game up to the bot's first move of its own;
the bot's rank points minus the field bot's in the same seat of the field's game are put down to
that move. Its kinds:

- a lead (nothing on the table) of a higher or lower rank than the field bot's, or of more or
  fewer cards;
- an answer: a pass where the field bot plays, a play where it passes, a higher or lower rank,
  or more or fewer cards.

Printed per kind: its share of the games, the bot's mean gain in them, and its rank points per
round with a 95% interval over deals; these sum to the bot's rank points per round over par
against n-1 copies of the field bot, the tournament's figure on the same deals. ``--examples
K`` shows the first K games of each kind, dealt and played up to the bot's move of its own::

    python scripts/deviations.py bots/ppo_vec_culo_expert --deals 2000
    python scripts/deviations.py bots/ppo_vec_culo_expert --deals 50 --examples 2
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arschloch_env.replay import describe_event  # noqa: E402
from arschloch_env.rules import RulesError, make_rules  # noqa: E402
from train.stats import mean_ci  # noqa: E402
from train.tournament import BlockPlayer, TournamentError, make_bots, seatings_of  # noqa: E402

TABLE_EVENTS = ("play", "pass", "trick_end", "round")
"""The events that say whether the table is empty: a round's start and a trick's end empty it."""
SAME = "no move of its own"
KINDS = tuple(f"{where}: {how}" for where in ("lead", "answer")
              for how in ("higher rank", "lower rank", "more cards", "fewer cards")) + (
    "answer: passes where the field bot plays", "answer: plays where the field bot passes")


class NotReproducible(Exception):
    """The field's game and a game with the bot parted at a move that was not the bot's."""


def leading(events: list[dict], i: int) -> bool:
    """Whether the table is empty at event ``i``: the last of :data:`TABLE_EVENTS` before it
    is a round's start or a trick's end (going out, say, does not change it)."""
    last = next(e["event"] for e in reversed(events[:i]) if e["event"] in TABLE_EVENTS)
    return last in ("round", "trick_end")


def move_kind(ours: dict, theirs: dict, leads: bool, ranks: list[str]) -> str:
    """What the bot's move ``ours`` did instead of the field bot's ``theirs``."""
    if ours["event"] == "pass":
        return "answer: passes where the field bot plays"
    if theirs["event"] == "pass":
        return "answer: plays where the field bot passes"
    where = "lead" if leads else "answer"
    if len(ours["cards"]) != len(theirs["cards"]):
        return f"{where}: {'more' if len(ours['cards']) > len(theirs['cards']) else 'fewer'} cards"
    higher = ranks.index(ours["cards"][0][:-1]) > ranks.index(theirs["cards"][0][:-1])
    return f"{where}: {'higher' if higher else 'lower'} rank"


def first_own_move(ours: list[dict], theirs: list[dict], seat: int) -> int | None:
    """The index of the first event of the game with the bot that is not the field's game's,
    the bot's first move of its own; None where the two games are the same.

    Raises:
        NotReproducible: the games part at another seat's move.
    """
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if a == b or a["event"] == "match":  # the match event names the agents
            continue
        if a.get("player") != f"player_{seat}":
            raise NotReproducible(f"the games part at event {i} of the record, {a} against {b}, "
                                  f"which is not the bot's (seat {seat}): the field bot does not "
                                  f"play the same moves from the same seed")
        return i
    return None


def example(kind: str, deal: int, seat: int, ours: list[dict], i: int, theirs: dict,
            places: tuple[int, int]) -> str:
    """A game of ``kind`` as text: the deal and the moves up to the bot's own, with the field
    bot's move there and both places."""
    head = (f"== {kind}: deal {deal}, the bot in player_{seat}: place {places[0]}, the field "
            f"bot's {places[1]} ({places[1] - places[0]:+d})")
    lines = [head] + [describe_event(e) for e in ours[1:i]]
    lines.append(f"{describe_event(ours[i])}   <- the bot's own; the field bot: "
                 f"{describe_event(theirs).strip()}")
    return "\n".join(lines)


Seats = list[tuple[str, int]]
"""Per seat of a deal: the kind of the bot's first move of its own, and its gain."""


def deviations(bots: list, rules, deals: int, seed: int, examples: int = 0,
               made: dict | None = None) -> tuple[list[Seats], dict[str, list[str]]]:
    """Per deal and seat, the kind of the bot's first move of its own there and its rank
    points minus the field bot's in that seat; and the first ``examples`` games of each kind
    (:func:`example`). ``bots`` is the bot and the field bot, as specs or agents, and ``made``
    agents already made of them, as a tournament takes them; their games are the tournament's
    (:class:`train.tournament.BlockPlayer`), with the field alone first."""
    n, ranks = rules.num_players, list(rules.rank_order)
    seatings = [(1,) * n] + seatings_of((0,) + (1,) * (n - 1))
    player = BlockPlayer(rules, bots, ["bot", "field"], seatings, seed, record=True, made=made)
    per_deal, shown = [], {}
    for d in range(deals):
        block = player.play(d)
        (base, *games), (theirs, *played) = block["games"], block["events"]
        seats = []
        for game, ours in zip(games, played):
            seat = game["seating"].index(0)
            i = first_own_move(ours, theirs, seat)
            kind = SAME if i is None else move_kind(ours[i], theirs[i], leading(ours, i), ranks)
            places = (game["rounds"][0][seat], base["rounds"][0][seat])
            seats.append((kind, places[1] - places[0]))
            if i is not None and len(shown.setdefault(kind, [])) < examples:
                shown[kind].append(example(kind, d, seat, ours, i, theirs[i], places))
        per_deal.append(seats)
    return per_deal, shown


def table(per_deal: list[Seats]) -> list[str]:
    """The report's rows: each kind's share of the games, its mean gain when it is the bot's
    first move of its own, and its rank points per round with a 95% interval over deals."""
    n = len(per_deal[0])
    kinds = Counter(kind for seats in per_deal for kind, _ in seats)
    rows = [f"{'first move of its own':44} {'games':>6} {'gain then':>9}  "
            f"rank points per round ± 95% CI"]
    for kind, count in kinds.most_common():
        points = [sum(g for k, g in seats if k == kind) / n for seats in per_deal]
        rows.append(f"{kind:44} {count / (n * len(per_deal)):6.1%} "
                    f"{sum(points) * n / count:+9.3f}  {signed(mean_ci(points))}")
    over_par = mean_ci([sum(g for _, g in seats) / n for seats in per_deal])
    rows.append(f"{'all (over par)':44} {1:6.1%} {'':9}  {signed(over_par)}")
    return rows


def signed(estimate) -> str:
    """``+0.177 ± 0.035``: an estimate's text with the sign of its mean, as the tournament
    writes its differences."""
    text = estimate.text()
    return text if text.startswith("-") else f"+{text}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("bot", help="the bot: a bundle directory, a built-in name or "
                               "package.module:ClassName")
    p.add_argument("--field", default="expert", help="the field bot (default: expert)")
    p.add_argument("--rules", default="culo", help="preset (default: culo)")
    p.add_argument("--players", type=int, default=4, help="table size (default: 4)")
    p.add_argument("--deals", type=int, default=2000, help="deals (default: 2000)")
    p.add_argument("--seed", type=int, default=7, help="tournament seed (default: 7)")
    p.add_argument("--examples", type=int, default=0, metavar="K",
                   help="show the first K games of each kind (default: 0)")
    a = p.parse_args(argv)
    if a.deals < 2 or a.examples < 0:
        p.error("--deals: at least 2 (an interval needs two); --examples: 0 or more")
    try:  # refused before any game: rules or bots that cannot play
        rules = make_rules(a.rules, a.players, rounds=1)
        bots = [a.bot, a.field]
        made = dict(enumerate(make_bots(bots, bots, rules)))
    except (RulesError, TournamentError) as exc:
        p.error(str(exc))
    print(f"{a.bot} against {a.players - 1}x {a.field}, {a.rules}, {a.players} players, "
          f"{a.deals} deals from seed {a.seed}, one round each; rank points of the bot minus the "
          f"field bot's in the same seat, put down to the bot's first move of its own", flush=True)
    try:
        per_deal, shown = deviations(bots, rules, a.deals, a.seed, a.examples, made)
    except NotReproducible as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print("\n".join(table(per_deal)))
    for kind in KINDS:
        for text in shown.get(kind, []):
            print(f"\n{text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
