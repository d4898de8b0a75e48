"""The public view of INTERFACES.md: a JSON-serialisable dict of what one seat knows."""

from __future__ import annotations

from typing import Any

from arschloch_env.cards import hand_cards, mask_cards


def move_words(game, action: int) -> str:
    """An action in plain words as the seat to act would make it: ``"pair of 9s"``,
    ``"give 7C"``, ``"take AS"``, ``"lay 8D face down"``."""
    codec = game.codec
    m = codec.decode(action)
    if m.kind in ("pass", "play"):
        return codec.describe(action)
    card = mask_cards(game.rules.rank_order[m.rank], game.default_mask(action))[0]
    if m.kind == "take":
        return f"take {card}"
    if game.phase == "lay":
        return f"lay {card} face down"
    return f"give {card}"


def public_view(game, seat: int) -> dict[str, Any]:
    """What ``seat`` knows, with its legal moves when it is the seat to act. A finished match
    shows the phase it ended in, ``"play"``: the contract's phases are the decisions' kinds."""
    order = game.rules.rank_order
    over = game.phase == "over"
    acting = seat == game.current and not over
    table = None
    if game.phase == "play" and game.table_count:
        last = next(m for s, q, m in reversed(game.plays))
        table = {"cards": mask_cards(order[game.table_rank], last), "seat": game.table_seat}
    legal = [{"id": a, "move": move_words(game, a)} for a in game.legal_actions()] if acting else []
    return {
        "seat": seat,
        "phase": "play" if over else game.phase,
        "to_give": game.to_give if acting and game.phase == "give" else 0,
        "hand": hand_cards(game.hands[seat], order),
        "table": table,
        "legal": legal,
        "played": [c for _, q, m in game.plays for c in mask_cards(order[q], m)],
        "face_up": hand_cards(game.face_up, order),
        # beyond INTERFACES.md's keys: these cards are public, and nothing else shows them
        "revealed": [mask_cards(order[game.top], m) for m in game.revealed],
        "counts": list(game.sizes),
        "passed": list(game.passed),
        "places": list(game.places),
        "titles": game.round_titles(),
        "totals": list(game.totals),
        "round": game.round,
        "given": hand_cards(game.given[seat], order),
        "received": hand_cards(game.received[seat], order),
        "rules": game.rules.to_dict(),
    }
