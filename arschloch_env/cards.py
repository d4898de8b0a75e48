"""Card notation: two characters, rank then suit (``7C``, ``TH``, ``AS``).

Inside the engine a card is a pair (rank index in the rules' ``rank_order``, suit index), and a
hand is one 4-bit suit mask per rank. Suits only matter for dealing, the round-1 starting card
and display; the fixed suit order clubs, spades, hearts, diamonds breaks ties (clubs lowest).
"""

from __future__ import annotations

ALL_RANKS = ("2", "3", "4", "5", "6", "7", "8", "9", "T", "J", "Q", "K", "A")
SKAT_RANKS = ("7", "8", "9", "T", "J", "Q", "K", "A")
SUITS = ("C", "S", "H", "D")
SUIT_INDEX = {s: i for i, s in enumerate(SUITS)}

RANK_WORDS = {
    "2": "2", "3": "3", "4": "4", "5": "5", "6": "6", "7": "7", "8": "8", "9": "9",
    "T": "10", "J": "jack", "Q": "queen", "K": "king", "A": "ace",
}

POPCOUNT = tuple(bin(m).count("1") for m in range(16))
# The suits of a mask, lowest suit first: the engine always takes cards of a rank in this order.
MASK_SUITS = tuple(tuple(s for s in range(4) if m >> s & 1) for m in range(16))
# The mask of the k lowest suits present in m, for k = 0..4.
LOWEST_K = tuple(
    tuple(sum(1 << s for s in MASK_SUITS[m][:k]) for k in range(5)) for m in range(16)
)
# The mask of the k highest suits present in m, for k = 0..4.
HIGHEST_K = tuple(
    tuple(sum(1 << s for s in MASK_SUITS[m][len(MASK_SUITS[m]) - k:]) if k else 0
          for k in range(5))
    for m in range(16)
)


class CardError(ValueError):
    """A card string that is not in the notation or not in the deck of the rules."""


def parse_card(text: str, rank_index: dict[str, int]) -> tuple[int, int]:
    """Parses ``"7C"`` into (rank index, suit index) for a deck given by ``rank_index``.

    Raises:
        CardError: the text is not two characters of a rank of this deck and a suit.
    """
    if not isinstance(text, str) or len(text) != 2:
        raise CardError(f"card {text!r}: expected two characters, rank then suit, e.g. '7C'")
    rank, suit = text[0].upper(), text[1].upper()
    if rank not in rank_index:
        raise CardError(
            f"card {text!r}: rank {rank!r} is not in this deck (ranks: {' '.join(rank_index)})")
    if suit not in SUIT_INDEX:
        raise CardError(f"card {text!r}: suit {suit!r} is not one of C S H D")
    return rank_index[rank], SUIT_INDEX[suit]


def mask_cards(rank: str, mask: int) -> list[str]:
    """The card strings of one rank's suit mask, lowest suit first."""
    return [rank + SUITS[s] for s in MASK_SUITS[mask]]


def hand_cards(hand: list[int], rank_order: tuple[str, ...]) -> list[str]:
    """A hand (suit mask per rank) as card strings sorted low to high."""
    out: list[str] = []
    for r, m in enumerate(hand):
        if m:
            out.extend(mask_cards(rank_order[r], m))
    return out


def cards_to_hand(cards, rank_index: dict[str, int]) -> list[int]:
    """Card strings into a hand (suit mask per rank).

    Raises:
        CardError: a card is malformed, not in the deck or given twice.
    """
    hand = [0] * len(rank_index)
    for text in cards:
        r, s = parse_card(text, rank_index)
        if hand[r] >> s & 1:
            raise CardError(f"card {text!r} is given twice")
        hand[r] |= 1 << s
    return hand
