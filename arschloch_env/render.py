"""Text rendering of a game: the table as a careful player sees it."""

from __future__ import annotations

from arschloch_env.cards import hand_cards, mask_cards
from arschloch_env.engine import player_name


def render_text(game, seat: int | None = None, reveal: bool = False) -> str:
    """The table as text: one line per seat, the play to beat, and the hand of ``seat``
    (default: the seat to act). ``reveal`` shows every hand."""
    order = game.rules.rank_order
    me = game.current if seat is None else seat
    lines = [f"{game.rules.preset}, {game.n} players, round {game.round}, phase {game.phase}"]
    # at the end, the titles the last round earned, beside the places that earned them
    titles = list(game.titles) if game.phase == "over" else game.round_titles()
    for s in range(game.n):
        title = titles[s]
        flags = []
        if game.places[s] is not None:
            flags.append(f"out: place {game.places[s]}")
        if game.passed[s]:
            flags.append("passed")
        if s == game.current and game.phase != "over":
            flags.append("to act")
        lines.append(f"  {player_name(s):9} {title or '':15} cards {game.sizes[s]:2}  "
                     f"points {game.totals[s]:3}  {', '.join(flags)}".rstrip())
    # the hands under the table, one line each, so that a line fits 80 columns
    for s in range(game.n):
        if reveal or s == me:
            lines.append(f"  hand of {player_name(s)}: "
                         f"{' '.join(hand_cards(game.hands[s], order)) or '-'}")
    if game.phase == "play" and game.table_count:
        last = next(m for s, q, m in reversed(game.plays))
        cards = " ".join(mask_cards(order[game.table_rank], last))
        lines.append(f"  table: {cards} by {player_name(game.table_seat)}")
    elif game.phase == "play":
        lines.append("  table: empty (lead)")
    if any(game.face_up):
        lines.append(f"  face up: {' '.join(hand_cards(game.face_up, order))}")
    if game.phase == "over":
        lines.append(f"  match over; winners: "
                     f"{', '.join(player_name(w) for w in game.winners)}")
    return "\n".join(lines)
