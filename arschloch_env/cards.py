"""Card notation: two characters, rank then suit (``7C``, ``TH``, ``AS``).

Inside the engine a card is a pair (rank index in the rules' ``rank_order``, suit index), and a
hand is one 4-bit suit mask per rank. Suits only matter for dealing, the round-1 starting card
and display; the fixed suit order clubs, spades, hearts, diamonds breaks ties (clubs lowest).

An action names a rank, not suits. Which of its cards of that rank a seat plays, returns, lays
down or hands over in the exchange is up to the seat, and a real player's choice tells the
others nothing; so the engine takes them in the seat's own suit order for that rank in that
round (:func:`suit_order`), drawn like the deal from the match's seed. Taking the lowest suits
instead would tell every seat that the player holds none of the lower ones.
"""

from __future__ import annotations

from itertools import permutations

ALL_RANKS = ("2", "3", "4", "5", "6", "7", "8", "9", "T", "J", "Q", "K", "A")
SKAT_RANKS = ("7", "8", "9", "T", "J", "Q", "K", "A")
SUITS = ("C", "S", "H", "D")
SUIT_INDEX = {s: i for i, s in enumerate(SUITS)}

RANK_WORDS = {
    "2": "2", "3": "3", "4": "4", "5": "5", "6": "6", "7": "7", "8": "8", "9": "9",
    "T": "10", "J": "jack", "Q": "queen", "K": "king", "A": "ace",
}

POPCOUNT = tuple(bin(m).count("1") for m in range(16))
# The suits of a mask, lowest suit first.
MASK_SUITS = tuple(tuple(s for s in range(4) if m >> s & 1) for m in range(16))
# The mask of the k lowest suits present in m, for k = 0..4.
LOWEST_K = tuple(
    tuple(sum(1 << s for s in MASK_SUITS[m][:k]) for k in range(5)) for m in range(16)
)


# The 24 orders of the four suits, and the mask of the first k suits of mask m in order o:
# ``PICK[o][m][k]`` for k = 0..4.
SUIT_ORDERS = tuple(permutations(range(4)))
PICK = tuple(
    tuple(tuple(sum(1 << s for s in [s for s in order if m >> s & 1][:k]) for k in range(5))
          for m in range(16))
    for order in SUIT_ORDERS
)


def round_suit_key(seed: int, match_index: int, rnd: int) -> int:
    """A 32-bit key of round ``rnd`` of the match with ``seed`` and ``match_index``, from which
    :func:`suit_order` draws every seat's suit orders. Integer arithmetic that stays below
    2**63, so that the batched engine's compiled kernels compute the same keys."""
    x = 0
    for v in (seed & 0xFFFFFFFF, match_index & 0xFFFFFFFF, rnd & 0xFFFFFFFF):
        x = x ^ v
        x = ((x >> 16) ^ x) * 0x45D9F3B & 0xFFFFFFFF
        x = ((x >> 16) ^ x) * 0x45D9F3B & 0xFFFFFFFF
        x = (x >> 16) ^ x
    return x


def suit_order(round_key: int, seat: int, rank: int) -> int:
    """The index in :data:`SUIT_ORDERS` of the order in which ``seat`` moves its cards of
    ``rank`` this round: as good as uniform and independent for every seat and rank, so the
    suits a seat moves are a uniformly random choice among those it holds."""
    x = round_key ^ ((seat & 15) << 4 | (rank & 15))
    x = ((x >> 16) ^ x) * 0x45D9F3B & 0xFFFFFFFF
    x = ((x >> 16) ^ x) * 0x45D9F3B & 0xFFFFFFFF
    x = (x >> 16) ^ x
    return x % 24


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
