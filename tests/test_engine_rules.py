"""Hand-derived rule tests of the engine: every rule of RULES.md on a small, prescribed deal.

Hands are written per seat (seat 0 = ``player_0``); play goes clockwise, seat i+1 after seat i.
Action ids follow INTERFACES.md: ``0`` pass, ``1 + 4r + (k-1)`` play k cards of rank index r.
"""

from __future__ import annotations

import numpy as np
import pytest

from arschloch_env.view import public_view

from arschloch_env.engine import Game, IllegalActionError
from arschloch_env.rules import make_rules
from conftest import snapshot

PASS = 0


# -- helpers -----------------------------------------------------------------------------------

def play(g: Game, seat: int, cards: str) -> None:
    cards = cards.split()
    g.step(g.codec.play(g.rules.rank_index[cards[0][0]], len(cards)), cards=cards, seat=seat)


def pass_(g: Game, seat: int) -> None:
    g.step(PASS, seat=seat)


def give(g: Game, seat: int, card: str) -> None:
    """A give action: the exchange return, or laying a card face down after a take."""
    g.step(g.codec.give(g.rules.rank_index[card[0]]), cards=[card], seat=seat)


def take(g: Game, seat: int, card: str) -> None:
    g.step(g.codec.take(g.rules.rank_index[card[0]]), cards=[card], seat=seat)


def moves(g: Game) -> list[str]:
    return [g.codec.describe(a) for a in g.legal_actions()]


def split(hands: list[str]) -> list[list[str]]:
    return [h.split() for h in hands]


def block_deal(rules, leftover_last: bool = True) -> tuple[list[list[str]], list[str]]:
    """The deck in rank order dealt in blocks: seat 0 the lowest cards, then seat 1, ...;
    what is not dealt (the highest cards) is left over."""
    deck = [r + s for r in rules.rank_order for s in "CSHD"]
    hands, i = [], 0
    for size in rules.hand_sizes:
        hands.append(deck[i:i + size])
        i += size
    return hands, deck[i:]


def shed(g: Game) -> None:
    """A fixed policy: the leader plays every card of its lowest rank it may play, followers
    pass, givers/layers/takers choose their lowest legal card."""
    acts = g.legal_actions()
    if g.phase == "play" and g.leading:
        lowest = (acts[0] - 1) // 4
        g.step(max(a for a in acts if (a - 1) // 4 == lowest))
    elif g.phase == "play":
        g.step(PASS)
    else:
        g.step(acts[0])


def finish_round(g: Game) -> None:
    rnd = g.round
    while g.round == rnd and not g.is_over:
        shed(g)


def events(g: Game, kind: str) -> list[dict]:
    return [e for e in g.events if e["event"] == kind]


# -- legal moves, hand-derived -----------------------------------------------------------------

# Four players, culo (7 8 9 T J Q K A). Seat 0 holds 7C and leads round 1.
CULO4 = split([
    "7C 7S 9H JC JS JH AC AD",
    "7H 8C 9C 9S 9D QC KC KS",
    "7D 8S 8H TC TS TH QS KH",
    "8D TD JD QH QD KD AS AH",
])


def culo4(**kw) -> Game:
    return Game("culo", num_players=4, deals=[(CULO4, [])], record=True, **kw)


def test_lead_moves_exact():
    g = culo4()
    assert g.current == 0 and g.leading
    assert moves(g) == ["single 7", "pair of 7s", "single 9", "single jack", "pair of jacks",
                        "triple of jacks", "single ace", "pair of aces"]
    assert g.legal_actions() == [1, 2, 9, 17, 18, 19, 29, 30]
    assert list(g.legal_mask().nonzero()[0]) == [1, 2, 9, 17, 18, 19, 29, 30]


def test_an_illegal_action_is_named_with_its_id_and_the_legal_ids():
    g = culo4()
    before = snapshot(g)
    with pytest.raises(IllegalActionError) as exc:
        g.step(0)
    assert str(exc.value) == (
        "player_0 cannot 'pass' (action 0): the leader may not pass; legal now: 1 (single 7), "
        "2 (pair of 7s), 9 (single 9), 17 (single jack), 18 (pair of jacks), 19 (triple of "
        "jacks), 29 (single ace), 30 (pair of aces)")
    with pytest.raises(IllegalActionError, match=r"allowed now: plays \(a leader may not "
                                                 r"pass\); legal now: 1 \(single 7\)"):
        g.step(g.codec.take(0))
    assert snapshot(g) == before


def test_an_illegal_action_in_the_lay_phase_names_lays():
    rng = np.random.default_rng(0)
    g = Game("culo", num_players=5, seed=0, auto_pass=True)
    while g.phase != "lay":
        g.step(int(rng.choice(g.legal_actions())))
    with pytest.raises(IllegalActionError, match=r"allowed now: lay a card face down; legal "
                                                 r"now: \d+ \(lay an? \w+ face down\)"):
        g.step(0)


def test_follow_moves_exact_pair_only_by_pair():
    g = culo4()
    play(g, 0, "7C 7S")
    # Seat 1: 7H 8C 9C 9S 9D QC KC KS on a pair of 7s: a pair of 9s (from three) or of kings,
    # or pass. No single, no triple.
    assert moves(g) == ["pass", "pair of 9s", "pair of kings"]
    assert g.legal_actions() == [0, 10, 26]


def test_follow_single_equal_rank_never_beats():
    g = culo4()
    play(g, 0, "9H")
    # Seat 1 holds 9C 9S 9D: equal, not higher. Q and K beat a 9.
    assert moves(g) == ["pass", "single queen", "single king"]
    before = snapshot(g)
    with pytest.raises(IllegalActionError, match="equal is never enough"):
        play(g, 1, "9C")
    assert snapshot(g) == before


@pytest.mark.parametrize("cards,words", [
    ("KC", "only exactly 2 card(s)"),
    ("9C 9S 9D", "only exactly 2 card(s)"),
    ("7H", "only exactly 2 card(s)"),
])
def test_pair_is_beaten_only_by_a_pair(cards, words):
    g = culo4()
    play(g, 0, "7C 7S")
    before = snapshot(g)
    with pytest.raises(IllegalActionError, match=words.replace("(", r"\(").replace(")", r"\)")):
        play(g, 1, cards)
    assert snapshot(g) == before


def test_pass_always_allowed_when_following():
    g = culo4()
    play(g, 0, "7C")
    for seat in (1, 2, 3):
        assert PASS in g.legal_actions() and len(g.legal_actions()) > 1
        pass_(g, seat)
    # All three passed: the trick ends and the player who played last leads again.
    assert g.events[-1] == {"event": "trick_end", "winner": "player_0"}
    assert g.current == 0 and g.leading


def test_leader_cannot_pass():
    g = culo4()
    assert PASS not in g.legal_actions()
    assert g.legal_mask()[PASS] == 0
    before = snapshot(g)
    with pytest.raises(IllegalActionError) as e:
        g.step(PASS)
    assert "player_0" in str(e.value) and "the leader may not pass" in str(e.value)
    assert snapshot(g) == before


def test_reentry_after_passing():
    g = culo4()
    play(g, 0, "7C 7S")
    pass_(g, 1)                          # seat 1 could play 9 9 or K K but passes
    assert g.passed == [False, True, False, False]
    play(g, 2, "8S 8H")
    assert g.passed == [False, False, False, False]   # "passed since the last play"
    pass_(g, 3)
    play(g, 0, "JC JS")
    assert g.current == 1
    play(g, 1, "KC KS")                  # the one who passed plays again in the same trick
    assert g.table_seat == 1 and g.current == 2


def test_trick_ends_after_every_other_player_passed_in_a_row():
    g = culo4()
    play(g, 0, "7C")
    play(g, 1, "8C")
    pass_(g, 2)
    pass_(g, 3)
    assert g.current == 0 and not g.leading      # seat 0 has not passed since the 8
    pass_(g, 0)
    assert g.events[-1] == {"event": "trick_end", "winner": "player_1"}
    assert g.current == 1 and g.leading
    assert g.table_count == 0


# -- players out, skipped, winner out ------------------------------------------------------------

# Seat 0 sheds two quads nobody can beat and is out first.
QUADS = split([
    "7C 7S 7H 7D 8C 8S 8H 8D",
    "9C TC JC QC KC AC 9S TS",
    "JS QS KS AS 9H TH JH QH",
    "KH AH 9D TD JD QD KD AD",
])


def test_trick_winner_out_next_with_cards_leads_and_out_players_are_skipped():
    g = Game("culo", num_players=4, deals=[(QUADS, [])], record=True)
    play(g, 0, "7C 7S 7H 7D")
    for seat in (1, 2, 3):
        assert g.legal_actions() == [PASS]
        pass_(g, seat)
    assert g.current == 0
    play(g, 0, "8C 8S 8H 8D")
    assert g.events[-1] == {"event": "out", "player": "player_0", "place": 1,
                            "reason": "emptied"}
    assert g.places == [1, None, None, None]
    pass_(g, 1)
    pass_(g, 2)
    pass_(g, 3)
    # Seat 0 won the trick but has no cards: the next player clockwise with cards leads.
    assert g.events[-1] == {"event": "trick_end", "winner": "player_0"}
    assert g.current == 1 and g.leading
    play(g, 1, "9C")
    play(g, 2, "TH")
    play(g, 3, "JD")
    # Seat 0 is skipped: after seat 3 comes seat 1.
    assert g.current == 1
    pass_(g, 1)
    pass_(g, 2)
    # Two passes end it: seat 0 holds no cards and is not asked.
    assert g.events[-1] == {"event": "trick_end", "winner": "player_3"}
    assert g.current == 3


# -- top card ends the trick -----------------------------------------------------------------------

def test_ace_ends_the_trick_at_once():
    g = culo4()
    play(g, 0, "7C")
    play(g, 1, "8C")
    start = len(g.events)
    play(g, 2, "QS")
    assert g.current == 3                # a queen is not the top card
    play(g, 3, "AS")
    assert g.events[start + 1:] == [
        {"event": "play", "player": "player_3", "cards": ["AS"]},
        {"event": "trick_end", "winner": "player_3"},
    ]
    assert g.current == 3 and g.leading


def test_tavern_never_ends_a_trick_at_once():
    g = Game("tavern", num_players=4, match_index=0, deals=[(TAVERN4, [])], record=True)
    play(g, 0, "3C")
    play(g, 1, "2S")                     # the 2 is the top card: unbeatable
    start = len(g.events)
    assert g.current == 2                # ... but the trick goes on: forced passes
    for seat in (2, 3, 0):
        assert g.legal_actions() == [PASS]
        pass_(g, seat)
    assert g.events[start:] == [
        {"event": "pass", "player": "player_2"}, {"event": "pass", "player": "player_3"},
        {"event": "pass", "player": "player_0"}, {"event": "trick_end", "winner": "player_1"},
    ]
    assert g.current == 1 and g.leading


def test_tavern_auto_pass_applies_forced_passes_and_records_them():
    g = Game("tavern", num_players=4, match_index=0, deals=[(TAVERN4, [])], record=True,
             auto_pass=True)
    play(g, 0, "3C")
    play(g, 1, "2S")
    assert [e["event"] for e in g.events[-4:]] == ["pass", "pass", "pass", "trick_end"]
    assert g.current == 1 and g.leading


def test_top_card_ends_trick_override_off_in_culo():
    g = culo4(top_card_ends_trick=False)
    play(g, 0, "7C")
    play(g, 1, "8C")
    play(g, 2, "QS")
    play(g, 3, "AS")
    assert g.current == 0 and g.events[-1]["event"] == "play"


def test_king_is_top_once_every_ace_is_gone():
    # Three players, culo: 10 each, two left over (face down in round 1: still in play).
    hands = split([
        "7C AC AS AH AD 8C 9C TC JC QC",
        "KS 7S 8S 9S TS JS QS 7H 8H 9H",
        "KH TH JH QH 7D 8D 9D TD JD QD",
    ])
    g = Game("culo", num_players=3, deals=[(hands, ["KC", "KD"])], record=True)
    for ace in ("AC", "AS", "AH"):
        play(g, 0, ace)
        assert g.current == 0 and g.leading
    assert g.highest_in_play() == g.rules.rank_index["A"]
    play(g, 0, "AD")
    assert g.highest_in_play() == g.rules.rank_index["K"]
    play(g, 0, "8C")
    start = len(g.events)
    play(g, 1, "KS")                     # every ace is gone: the king is the top card now
    assert g.events[start:] == [{"event": "play", "player": "player_1", "cards": ["KS"]},
                                {"event": "trick_end", "winner": "player_1"}]
    assert g.current == 1 and g.leading


def test_hidden_leftover_cards_are_still_in_play():
    # AH and AD lie face down (round 1): the king never becomes the top card.
    hands = split([
        "7C AC AS KC 8C 9C TC JC QC 7S",
        "KS 8S 9S TS JS QS 7H 8H 9H TH",
        "KH JH QH 7D 8D 9D TD JD QD KD",
    ])
    g = Game("culo", num_players=3, deals=[(hands, ["AH", "AD"])], record=True)
    play(g, 0, "AC")
    play(g, 0, "AS")
    play(g, 0, "8C")
    play(g, 1, "KS")
    assert g.highest_in_play() == g.rules.rank_index["A"]
    assert g.current == 2 and g.events[-1]["event"] == "play"


# Three players, culo, round 1 in blocks: seat 0 (7s, 8s, 9C 9S) goes out first, seat 1 second,
# seat 2 (queens, kings, AC AS) is the Arschloch; AH AD left over.
# Round 2 (dealt after it; AD and 7D left over, face up):
#   seat 0 (President): AC AS AH 7C 8C 9C TC JC QC KC
#   seat 1 (Citizen):   7S 8S 9S TS JS QS KS 8D 9D TD
#   seat 2 (Arschloch): 7H 8H 9H TH JH QH KH JD QD KD
ROUND2_3P = split([
    "AC AS AH 7C 8C 9C TC JC QC KC",
    "7S 8S 9S TS JS QS KS 8D 9D TD",
    "7H 8H 9H TH JH QH KH JD QD KD",
])


def three_player_round2(**kw) -> Game:
    rules = make_rules("culo", 3, **kw)
    g = Game(rules, deals=[block_deal(rules), (ROUND2_3P, ["7D", "AD"])], record=True)
    finish_round(g)
    assert g.prev_places == [1, 2, 3]
    return g


def test_face_up_ace_makes_the_king_the_top_card():
    g = three_player_round2()
    # 3rd place (the Arschloch, seat 2) takes 7D and lays a card face down: here the one just
    # taken. With 3 players the other card, AD, stays aside face up.
    assert g.phase == "take" and g.current == 2
    take(g, 2, "7D")
    assert g.phase == "lay" and g.current == 2 and "7D" in g.hand_of(2)
    give(g, 2, "7D")
    # The exchange (one card with 3 players): one of seat 2's kings (KH, KD: which one is its
    # suit order's choice) goes to seat 0, who returns 7C.
    kept = g.hand_of(2)
    assert kept[:-1] == "7H 8H 9H TH JH JD QH QD".split() and kept[-1] in ("KH", "KD")
    king = "KD" if kept[-1] == "KH" else "KH"
    assert g.phase == "give" and g.current == 0 and g.to_give == 1 and king in g.hand_of(0)
    give(g, 0, "7C")
    assert g.phase == "play" and g.current == 2
    assert g.highest_in_play() == g.rules.rank_index["A"]
    # seat 0: AC AS AH 8C 9C TC JC QC KC and the king; AD lies face up, out of play.
    play(g, 2, "7H")
    play(g, 0, "AC")                     # top card: ends at once
    assert g.current == 0 and g.leading
    play(g, 0, "AS")
    play(g, 0, "AH")
    # Three aces played and the fourth face up: the king is now the highest still in play.
    assert g.highest_in_play() == g.rules.rank_index["K"]
    play(g, 0, "8C")
    start = len(g.events)
    play(g, 1, "KS")
    assert g.events[start:] == [{"event": "play", "player": "player_1", "cards": ["KS"]},
                                {"event": "trick_end", "winner": "player_1"}]


def test_laid_down_card_is_hidden_and_still_in_play():
    g = three_player_round2()
    take(g, 2, "AD")                     # the ace taken and laid face down: hidden again
    give(g, 2, "AD")
    assert g.face_up == [1 << 3] + [0] * 7      # 7D stays face up
    give(g, 0, "7C")
    play(g, 2, "7H")
    play(g, 0, "AC")
    play(g, 0, "AS")
    play(g, 0, "AH")
    assert g.highest_in_play() == g.rules.rank_index["A"]
    play(g, 0, "8C")
    play(g, 1, "KS")
    assert g.current == 2 and g.events[-1]["event"] == "play"


# Six players, culo: 5 each, two left over (8C JC, low, face down).
SIX = split([
    "7C AC AS KH AD",
    "AH 8S 9S TS JS",
    "7S 8H 9H TH JH",
    "7H 8D 9D TD JD",
    "7D QC QS QH QD",
    "KC KS KD 9C TC",
])


def test_revealed_only_top_hand_counts_as_gone_for_that_play():
    g = Game("culo", num_players=6, deals=[(SIX, ["8C", "JC"])], record=True)
    play(g, 0, "AC")
    play(g, 0, "AS")
    play(g, 0, "7C")
    play(g, 1, "AH")                     # an ace: top card, seat 1 leads
    play(g, 1, "8S")
    for seat in (2, 3, 4, 5):
        pass_(g, seat)
    start = len(g.events)
    # Seat 0 plays KH and keeps only AD: a top-rank-only hand, shown and ranked last. With AD
    # revealed every ace is gone, so the king is the top card and the trick ends at once; seat
    # 0 is out, the next player with cards leads.
    play(g, 0, "KH")
    assert g.events[start:] == [
        {"event": "play", "player": "player_0", "cards": ["KH"]},
        {"event": "out", "player": "player_0", "place": 6, "reason": "only_top"},
        {"event": "trick_end", "winner": "player_0"},
    ]
    assert g.revealed[0] == 1 << 3 and g.sizes[0] == 0
    assert g.highest_in_play() == g.rules.rank_index["K"]
    assert g.current == 1 and g.leading


# Six players, culo: seats 0 and 1 shed a quad each and keep one ace: both only-top hands.
TWO_ONLY_TOP = split([
    "7C 7S 7H 7D AC",
    "8C 8S 8H 8D AS",
    "9C TC JC QC KC",
    "9S TS JS QS KS",
    "9H TH JH QH KH",
    "9D TD JD QD KD",
])


def test_two_only_top_hands_are_ranked_from_the_bottom():
    g = Game("culo", num_players=6, deals=[(TWO_ONLY_TOP, ["AH", "AD"])], record=True)
    play(g, 0, "7C 7S 7H 7D")
    assert g.events[-1] == {"event": "out", "player": "player_0", "place": 6,
                            "reason": "only_top"}
    for seat in (1, 2, 3, 4, 5):
        pass_(g, seat)
    assert g.current == 1                # seat 0 won the trick but is out
    play(g, 1, "8C 8S 8H 8D")
    assert g.events[-1] == {"event": "out", "player": "player_1", "place": 5,
                            "reason": "only_top"}
    assert g.revealed[:2] == [1, 2]      # AC, AS shown
    finish_round(g)
    end = events(g, "round_end")[0]
    assert end["places"] == {"player_0": 6, "player_1": 5, "player_2": 1, "player_3": 2,
                             "player_4": 3, "player_5": 4}
    assert end["titles"]["player_0"] == "Arschloch"
    assert end["titles"]["player_1"] == "Vice-Arschloch"
    assert [e["reason"] for e in events(g, "out")] == [
        "only_top", "only_top", "emptied", "emptied", "emptied", "last"]


# Tavern, four players: seat 0 sheds three quads, then its last card is a 2.
TAVERN4 = split([
    "3C 3S 3H 3D 4C 4S 4H 4D 5C 5S 5H 5D 2C",
    "6C 7C 8C 9C TC JC QC KC AC 6S 7S 8S 2S",
    "9S TS JS QS KS AS 6H 7H 8H 9H TH JH 2H",
    "QH KH AH 6D 7D 8D 9D TD JD QD KD AD 2D",
])


def test_tavern_may_finish_on_a_two():
    g = Game("tavern", num_players=4, match_index=0, deals=[(TAVERN4, [])], record=True,
             auto_pass=True)
    for quad in ("3C 3S 3H 3D", "4C 4S 4H 4D", "5C 5S 5H 5D"):
        play(g, 0, quad)
    assert g.current == 0 and moves(g) == ["single 2"]
    play(g, 0, "2C")
    assert events(g, "out")[0] == {"event": "out", "player": "player_0", "place": 1,
                                   "reason": "emptied"}


def test_tavern_with_no_finish_on_top_override():
    g = Game("tavern", num_players=4, match_index=0, deals=[(TAVERN4, [])], record=True,
             auto_pass=True, no_finish_on_top=True)
    for quad in ("3C 3S 3H 3D", "4C 4S 4H 4D"):
        play(g, 0, quad)
    play(g, 0, "5C 5S 5H 5D")
    # Only the 2C is left: a top-rank-only hand, last place at once.
    assert events(g, "out")[0] == {"event": "out", "player": "player_0", "place": 4,
                                   "reason": "only_top"}


# -- left-over swap ----------------------------------------------------------------------------------

def test_leftover_swap_third_then_fourth_place_five_players():
    rules = make_rules("culo", 5, rounds=2)
    r1 = block_deal(rules)
    # Round 2 (leftover KD and AD, face up):
    r2 = split([
        "7C 7S 8C 8S 9C 9S",
        "7H 7D 8H 8D 9H 9D",
        "TC TS TH TD JC JS",
        "JH JD QC QS QH QD",
        "KC KS KH AC AS AH",
    ])
    g = Game(rules, deals=[r1, (r2, ["KD", "AD"])], record=True)
    finish_round(g)
    assert g.prev_places == [1, 2, 3, 4, 5]
    assert g.leader == 4                 # the Arschloch leads round 2
    # 3rd place (seat 2) takes one face-up card and lays one card face down.
    assert g.phase == "take" and g.current == 2
    assert moves(g) == ["take a king", "take an ace"]
    view = public_view(g, 2)
    assert view["phase"] == "take" and view["face_up"] == ["KD", "AD"]
    assert [m["move"] for m in view["legal"]] == ["take KD", "take AD"]
    assert g.hand_of(2) == r2[2]
    take(g, 2, "AD")
    assert g.phase == "lay" and g.current == 2 and "AD" in g.hand_of(2)
    view = public_view(g, 2)
    assert view["phase"] == "lay" and view["received"] == ["AD"] and view["face_up"] == ["KD"]
    # a lay names the card it moves: for a rank held twice, the seat's own choice of suit
    laid = [m["move"].split() for m in view["legal"]]
    assert [w[2:] for w in laid] == [["face", "down"]] * 3
    assert [w[1][0] for w in laid] == ["T", "J", "A"] and all(w[1] in view["hand"] for w in laid)
    give(g, 2, "TC")
    # Then 4th place (seat 3) takes the other one and lays a card in its place.
    assert g.phase == "take" and g.current == 3
    assert moves(g) == ["take a king"]
    take(g, 3, "KD")
    give(g, 3, "JH")
    assert not any(g.face_up)
    # The exchange follows at once: the Arschloch's two highest (AS AH) already went to the
    # President, who now chooses two to return.
    assert g.sizes == [8, 6, 6, 6, 4]
    swaps = events(g, "leftover_swap")
    assert swaps == [
        {"event": "leftover_swap", "player": "player_2", "take": "AD", "lay": "TC"},
        {"event": "leftover_swap", "player": "player_3", "take": "KD", "lay": "JH"},
    ]
    # The swaps come before the exchange.
    kinds = [e["event"] for e in g.events]
    r2_start = kinds.index("round", 2)
    assert kinds[r2_start + 1:r2_start + 4] == ["leftover_swap", "leftover_swap", "exchange"]
    assert g.phase == "give" and g.current == 0


def test_leftover_swap_three_players_second_card_stays_aside():
    g = three_player_round2()
    assert g.face_up[0] and g.face_up[-1]        # 7D and AD turned face up
    take(g, 2, "AD")
    give(g, 2, "7H")
    # No 4th place with three players: 7D stays face up, public and out of play.
    assert g.phase == "give" and g.current == 0
    assert "AD" in g.hand_of(0) and "AD" not in g.hand_of(2)    # then given in the exchange
    assert public_view(g, 1)["face_up"] == ["7D"]
    assert events(g, "leftover_swap") == [
        {"event": "leftover_swap", "player": "player_2", "take": "AD", "lay": "7H"}]


def test_leftover_swap_52_cards_six_players_rest_stays_face_up():
    rules = make_rules("culo-52", 6, rounds=2)
    g = Game(rules, seed=3, deals=[block_deal(rules)], record=True)
    finish_round(g)
    assert g.prev_places == [1, 2, 3, 4, 5, 6]
    assert sum(bin(m).count("1") for m in g.face_up) == 4
    third, fourth = g.seat_with_place(3), g.seat_with_place(4)
    assert g.phase == "take" and g.current == third
    shed(g)
    shed(g)
    assert g.phase == "take" and g.current == fourth
    shed(g)
    shed(g)
    assert sum(bin(m).count("1") for m in g.face_up) == 2
    assert [e["player"] for e in events(g, "leftover_swap")] == [
        f"player_{third}", f"player_{fourth}"]
    assert g.phase == "give"


def test_no_swap_without_leftover_or_when_switched_off():
    rules = make_rules("culo", 4, rounds=2)
    g = Game(rules, seed=1, deals=[block_deal(rules)], record=True)
    finish_round(g)
    assert g.phase == "give" and not events(g, "leftover_swap")
    rules = make_rules("culo", 5, rounds=2, leftover_swap=False)
    g = Game(rules, seed=1, deals=[block_deal(rules)], record=True)
    finish_round(g)
    assert g.phase == "give" and not any(g.face_up) and sum(map(bool, g.face_down)) > 0
    assert not events(g, "leftover_swap")


# -- exchange ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("preset,n,pres,vice", [
    ("culo", 3, 1, 0), ("culo", 4, 2, 1), ("culo", 5, 2, 1), ("culo", 6, 2, 1),
    ("culo-52", 3, 1, 0), ("tavern", 3, 2, 0), ("tavern", 4, 2, 1), ("tavern", 5, 2, 1),
    ("tavern", 6, 2, 1),
])
def test_exchange_counts_per_family_and_players(preset, n, pres, vice):
    rules = make_rules(preset, n, rounds=2)
    g = Game(rules, seed=11, deals=[block_deal(rules)], record=True)
    finish_round(g)
    places = g.prev_places
    seat = {p: f"player_{places.index(p)}" for p in range(1, n + 1)}
    while g.phase != "play":
        shed(g)
    got = [(e["from"], e["to"], len(e["cards"])) for e in events(g, "exchange")]
    want = [(seat[n], seat[1], pres), (seat[1], seat[n], pres)]
    if vice:
        want += [(seat[n - 1], seat[2], vice), (seat[2], seat[n - 1], vice)]
    assert got == want
    assert len(set(g.sizes)) <= 2 and sum(g.sizes) == sum(rules.hand_sizes)


def test_exchange_count_zero_writes_no_event():
    rules = make_rules("culo", 4, rounds=2, exchange_cards=0, vice_exchange_cards=0)
    g = Game(rules, seed=2, deals=[block_deal(rules)], record=True)
    finish_round(g)
    assert g.phase == "play" and g.current == g.seat_with_place(4)
    assert not events(g, "exchange")


def test_the_suits_a_seat_moves_are_a_uniform_choice_among_those_it_holds():
    """An action names a rank; which of its cards of that rank a seat plays or hands over is
    the seat's own choice (its suit order, drawn from the seed), as good as uniform, so the
    others learn nothing of the suits it keeps (taking the lowest suits first would tell them
    it holds no lower one)."""
    from collections import Counter
    rules = make_rules("culo", 4, rounds=2)
    r2 = split(["7C 8C 9C TC 7S 8S 9S TS", "7H 8H 9H TH 7D 8D 9D TD",
                "JC JS JH JD QC QS QH QD", "KC KS KH KD AC AS AH AD"])
    singles, pairs, gifts = Counter(), Counter(), Counter()
    games = 480
    for seed in range(games):
        # seat 0 holds the four sevens and leads round 1
        g = Game(rules, seed=seed, deals=[block_deal(rules)], record=True)
        g.step(g.codec.play(0, 1 + seed % 2))
        (cards,) = [e["cards"] for e in g.events if e["event"] == "play"]
        (singles if len(cards) == 1 else pairs)[" ".join(cards)] += 1
        # the Arschloch of round 1 (seat 3) holds four aces in round 2 and gives two
        g = Game(rules, seed=seed, deals=[block_deal(rules), (r2, [])], record=True)
        finish_round(g)
        gifts[" ".join(events(g, "exchange")[0]["cards"])] += 1
    # expected: 60 of each of the 4 sevens, 40 of each of the 6 pairs of them, 80 of each of
    # the 6 pairs of aces (bounds about 4 standard deviations out)
    assert sorted(singles) == ["7C", "7D", "7H", "7S"]
    assert all(30 <= c <= 90 for c in singles.values()), singles
    assert len(pairs) == 6 and all(15 <= c <= 65 for c in pairs.values()), pairs
    assert len(gifts) == 6 and all(45 <= c <= 115 for c in gifts.values()), gifts


def test_without_a_seed_the_suit_orders_are_fresh():
    """A game with no seed draws its suit orders from fresh entropy: a fixed stand-in would be
    known to every seat, which could then tell the suits a player holds from those it plays."""
    rules = make_rules("culo", 4)
    played = set()
    for _ in range(40):
        g = Game(rules, deals=[block_deal(rules)], record=True)  # seat 0: the four sevens
        g.step(g.codec.play(0, 1))
        played |= {c for e in events(g, "play") for c in e["cards"]}
    assert played == {"7C", "7S", "7H", "7D"}


def test_prescribed_gifts_give_those_suits_where_they_are_the_highest_cards():
    """A record's automatic gift is replayed with its own suits (which are the giver's choice);
    cards that are not the giver's highest by rank, or not its own, are not taken."""
    rules = make_rules("culo", 4, rounds=2)
    r2 = split(["7C 8C 9C TC 7S 8S 9S TS", "7H 8H 9H TH 7D 8D 9D TD",
                "JC JS JH JD QC QS QH QD", "KC KS KH KD AC AS AH AD"])
    # the Arschloch holds two aces only: a gift of aces it lacks is not taken from the others
    two_aces = split(["7C 8C 9C TC 7S 8S 9S TS", "7H 8H 9H TH 7D 8D 9D AH",
                      "JC JS JH JD QC QS QH AD", "KC KS KH KD AC AS QD TD"])
    for deal, gift, taken in [(r2, ["AC", "AS"], ["AC", "AS"]), (r2, ["AH", "AD"], ["AH", "AD"]),
                              (r2, ["AS", "KC"], None), (r2, ["AC", "7C"], None),
                              (two_aces, ["AH", "AD"], ["AC", "AS"]),
                              (two_aces, ["AC", "AH"], ["AC", "AS"])]:
        g = Game(rules, seed=5, deals=[block_deal(rules), (deal, [])], record=True,
                 gifts={(2, "player_3"): gift})
        finish_round(g)
        cards = events(g, "exchange")[0]["cards"]
        assert cards == taken if taken else (len(cards) == 2 and {c[0] for c in cards} == {"A"})
        assert sorted(g.hand_of(0) + g.hand_of(3)) == sorted(deal[0] + deal[3])


def test_exchange_gives_highest_cards_and_president_may_return_them():
    rules = make_rules("culo", 4, rounds=2)
    r2 = split([
        "7C 8C 9C TC 7S 8S 9S TS",
        "7H 8H 9H TH 7D 8D 9D TD",
        "JC JS JH JD QC QS QH QD",
        "KC KS KH KD AC AS AH AD",
    ])
    g = Game(rules, deals=[block_deal(rules), (r2, [])], record=True)
    finish_round(g)
    assert g.prev_places == [1, 2, 3, 4]
    # The Arschloch (seat 3) gives two of its aces (the highest rank; which two, its suit
    # order chooses).
    (gift,) = events(g, "exchange")
    aces = gift["cards"]
    assert gift == {"event": "exchange", "from": "player_3", "to": "player_0", "cards": aces}
    assert len(aces) == 2 and all(c[0] == "A" for c in aces)
    assert g.phase == "give" and g.current == 0 and g.to_give == 2
    view = public_view(g, 0)
    assert view["phase"] == "give" and view["to_give"] == 2 and view["received"] == aces
    # a give names the card it moves: seat 0's own choice among its sevens, eights, nines
    words = [m["move"] for m in view["legal"]][:3]
    assert [w[:6] for w in words] == ["give 7", "give 8", "give 9"]
    assert all(w.split()[1] in view["hand"] for w in words)
    a_give = g.codec.give(g.rules.rank_index["A"])
    assert a_give in g.legal_actions()
    assert moves(g)[-1] == "give an ace"
    give(g, 0, aces[1])                  # the President returns a card just received
    give(g, 0, "7C")
    assert events(g, "exchange")[1] == {"event": "exchange", "from": "player_0",
                                        "to": "player_3", "cards": ["7C", aces[1]]}
    # Vices: seat 2 gives a queen (its highest rank), seat 1 returns one of its choice.
    (queen,) = events(g, "exchange")[2]["cards"]
    assert queen[0] == "Q"
    assert g.current == 1 and g.to_give == 1
    give(g, 1, queen)
    assert g.phase == "play" and g.current == 3
    suit = {s: 1 << i for i, s in enumerate("CSHD")}
    assert g.given[0] == [1, 0, 0, 0, 0, 0, 0, suit[aces[1][1]]]
    assert g.received[0][7] == suit[aces[0][1]] | suit[aces[1][1]]


# -- round-1 leader, later rounds ------------------------------------------------------------------------

@pytest.mark.parametrize("holder", [0, 1, 2, 3])
def test_round1_leader_holds_the_seven_of_clubs(holder):
    hands = [h[:] for h in CULO4]
    hands[0], hands[holder] = hands[holder], hands[0]
    g = Game("culo", num_players=4, deals=[(hands, [])], record=True)
    assert g.leader == holder and g.current == holder
    assert events(g, "round")[0]["leader"] == f"player_{holder}"


@pytest.mark.parametrize("leftover,lowest", [
    (["7C", "AD"], "7S"),                # 7C aside: the lowest dealt card is 7S
    (["7C", "7S"], "7H"),                # rank first, then suits C S H D
])
def test_round1_leader_when_seven_of_clubs_is_left_over(leftover, lowest):
    deck = [r + s for r in "789TJQKA" for s in "CSHD"]
    rest = [c for c in deck if c not in leftover and c != lowest]
    hands = [rest[0:10], rest[10:20], rest[20:29] + [lowest]]
    g = Game("culo", num_players=3, deals=[(hands, leftover)])
    assert g.leader == 2 and g.current == 2


def test_round1_leader_lowest_club_of_each_deck():
    rules = make_rules("culo-52", 4)
    hands, _ = block_deal(rules)
    hands[0], hands[2] = hands[2], hands[0]          # 2C now with seat 2
    assert Game(rules, deals=[(hands, [])]).leader == 2
    rules = make_rules("tavern", 4, first_leader="lowest_club")
    hands, _ = block_deal(rules)
    hands[0], hands[3] = hands[3], hands[0]          # 3C with seat 3
    assert Game(rules, deals=[(hands, [])]).leader == 3
    rules = make_rules("culo-52", 6)
    hands, left = block_deal(rules)                  # left over: the four aces
    hands[0], hands[4] = hands[4], hands[0]
    assert Game(rules, deals=[(hands, left)]).leader == 4


def test_round1_lowest_club_left_over_in_52_card_deck():
    rules = make_rules("culo-52", 3)                 # 17 each, one left over
    deck = [r + s for r in rules.rank_order for s in "CSHD"]
    rest = deck[1:]                                   # 2C aside; 2S is the lowest dealt
    hands = [rest[17:34], rest[34:51], rest[0:17]]
    assert Game(rules, deals=[(hands, ["2C"])]).leader == 2


@pytest.mark.parametrize("k,n", [(0, 4), (1, 4), (5, 4), (2, 3), (7, 6), (4, 5)])
def test_round1_leader_rotates_with_the_match_index(k, n):
    g = Game("tavern", num_players=n, seed=k, match_index=k, record=True)
    assert g.leader == k % n and g.current == k % n
    sizes = [len(h) for h in events(g, "round")[0]["hands"].values()]
    # All 52 cards, dealt one at a time beginning with the leader.
    want = make_rules("tavern", n).hand_sizes
    assert sizes == [want[(i - k % n) % n] for i in range(n)]


def test_rotate_override_in_culo():
    g = Game("culo", num_players=5, seed=0, match_index=3, first_leader="rotate")
    assert g.leader == 3


@pytest.mark.parametrize("preset,n", [("culo", 4), ("culo", 3), ("tavern", 3), ("tavern", 5),
                                      ("culo-52", 6)])
def test_arschloch_leads_later_rounds(preset, n):
    rules = make_rules(preset, n, rounds=3)
    g = Game(rules, seed=5, record=True)
    for rnd in (2, 3):
        finish_round(g)
        assert g.round == rnd
        arschloch = g.prev_places.index(n)
        assert g.leader == arschloch
        assert events(g, "round")[-1]["leader"] == f"player_{arschloch}"
        while g.phase != "play":
            shed(g)
        assert g.current == arschloch and g.leading


def test_later_round_deal_begins_with_the_leader():
    rules = make_rules("tavern", 3, rounds=2)
    g = Game(rules, seed=9, match_index=0, record=True)
    finish_round(g)
    hands = events(g, "round")[1]["hands"]
    leader = g.prev_places.index(3)
    sizes = [len(hands[f"player_{s}"]) for s in range(3)]
    assert sizes[leader] == 18 and sorted(sizes) == [17, 17, 18]


# -- dealing sizes --------------------------------------------------------------------------------------

@pytest.mark.parametrize("preset,n,over,sizes,left", [
    ("culo", 3, {}, [10, 10, 10], 2), ("culo", 4, {}, [8] * 4, 0), ("culo", 5, {}, [6] * 5, 2),
    ("culo", 6, {}, [5] * 6, 2), ("culo-ten", 5, {}, [6] * 5, 2),
    ("culo-52", 3, {}, [17] * 3, 1), ("culo-52", 5, {}, [10] * 5, 2),
    ("culo-52", 6, {}, [8] * 6, 4),
    ("tavern", 3, {}, [18, 17, 17], 0), ("tavern", 4, {}, [13] * 4, 0),
    ("tavern", 5, {}, [11, 11, 10, 10, 10], 0), ("tavern", 6, {}, [9, 9, 9, 9, 8, 8], 0),
    # culo dealt out completely: round 1 dealing starts at seat 0.
    ("culo", 3, {"deal": "all"}, [11, 11, 10], 0),
    ("culo", 5, {"deal": "all"}, [7, 7, 6, 6, 6], 0),
    # tavern with an equal deal: the rest is left over.
    ("tavern", 5, {"deal": "equal"}, [10] * 5, 2),
])
def test_dealt_hand_sizes(preset, n, over, sizes, left):
    g = Game(preset, num_players=n, seed=4, record=True, **over)
    ev = events(g, "round")[0]
    assert [len(ev["hands"][f"player_{s}"]) for s in range(n)] == sizes
    assert len(ev["leftover"]) == left
    dealt = [c for h in ev["hands"].values() for c in h] + ev["leftover"]
    assert len(dealt) == len(set(dealt)) == g.rules.deck_size


def test_prescribed_deal_is_checked():
    from arschloch_env.engine import DealError
    hands = [h[:] for h in CULO4]
    with pytest.raises(DealError, match="more than once"):
        Game("culo", num_players=4, deals=[([hands[0], hands[0], hands[2], hands[3]], [])])
    with pytest.raises(DealError, match="hand sizes"):
        Game("culo", num_players=4, deals=[([hands[0] + hands[1][:1], hands[1][1:], hands[2],
                                              hands[3]], [])])
    with pytest.raises(DealError, match="3 hands"):
        Game("culo", num_players=4, deals=[(hands[:3], [])])
    with pytest.raises(DealError, match="whole deck"):
        Game("culo", num_players=4, deals=[([hands[0], hands[1], hands[2], hands[3][:-1]],
                                             [])])


@pytest.mark.parametrize("deal, words", [
    (lambda h: h, ["not a pair (hands, leftover)", "list of 4 card lists"]),
    (lambda h: (h,), ["not a pair (hands, leftover)"]),
    (lambda h: (h, None), ["leftover: None is not a list of cards"]),
    (lambda h: ("7C 8C", []), ["hands '7C 8C' are not a list of 4 card lists"]),
    (lambda h: ([h[0], h[1], h[2], "7C"], []), ["player_3: '7C' is not a list of cards"]),
    (lambda h: ({**{f"player_{i}": x for i, x in enumerate(h)}, "player_9": ["7C"]}, []),
     ["unknown player(s) 'player_9'", "allowed: player_0, player_1, player_2, player_3"]),
])
def test_a_prescribed_deal_of_the_wrong_shape_is_a_deal_error(deal, words):
    """A malformed deal is refused naming what is wrong and what is allowed, not with an
    unpacking error or (a hand of an unknown player) silently dropped cards."""
    from arschloch_env.engine import DealError
    with pytest.raises(DealError) as e:
        Game("culo", num_players=4, deals=[deal([h[:] for h in CULO4])])
    for w in words:
        assert w in str(e.value), (w, str(e.value))


# -- round and match end ---------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [3, 4, 5, 6])
def test_titles_and_points_per_table_size(n):
    g = Game("culo", num_players=n, seed=n, rounds=1, record=True)
    finish_round(g)
    end = events(g, "round_end")[0]
    titles = make_rules("culo", n).titles_for()
    for p, place in end["places"].items():
        assert end["titles"][p] == titles[place - 1]
        assert end["points"][p] == n - place
    assert sorted(end["places"].values()) == list(range(1, n + 1))
    assert sum(end["points"].values()) == n * (n - 1) // 2


def test_match_ends_after_fixed_rounds_president_wins():
    g = Game("culo", num_players=4, seed=8, rounds=3, record=True)
    while not g.is_over:
        shed(g)
    ends = events(g, "round_end")
    assert [e["round"] for e in ends] == [1, 2, 3]
    last = ends[-1]["places"]
    president = min(last, key=last.get)
    assert events(g, "match_end") == [{"event": "match_end", "totals": ends[-1]["totals"],
                                       "winners": [president]}]
    assert g.events[-1]["event"] == "match_end"
    assert g.winners == [int(president[7:])]
    with pytest.raises(IllegalActionError, match="the match is over"):
        g.step(1)


def test_points_tie_shares_the_win():
    # Under the shedding policy the leader goes out first and the next seats follow in order;
    # the Arschloch leads the next round, so after three rounds every seat has 2 + 1 + 0.
    g = Game("tavern", num_players=3, seed=0, rounds=3, match_index=0, record=True)
    while not g.is_over:
        shed(g)
    assert [e["places"] for e in events(g, "round_end")] == [
        {"player_0": 1, "player_1": 2, "player_2": 3},
        {"player_0": 2, "player_1": 3, "player_2": 1},
        {"player_0": 3, "player_1": 1, "player_2": 2},
    ]
    assert g.events[-1] == {"event": "match_end",
                            "totals": {"player_0": 3, "player_1": 3, "player_2": 3},
                            "winners": ["player_0", "player_1", "player_2"]}


def test_match_ends_in_the_round_someone_reaches_the_target():
    g = Game("culo-points", num_players=3, seed=1, record=True)
    assert g.rules.target_points == 15
    while not g.is_over:
        shed(g)
    totals = [max(e["totals"].values()) for e in events(g, "round_end")]
    assert all(t < 15 for t in totals[:-1]) and totals[-1] >= 15
    best = totals[-1]
    final = events(g, "round_end")[-1]["totals"]
    assert g.events[-1]["winners"] == [p for p in sorted(final) if final[p] == best]


def test_target_points_shared_win():
    import numpy as np
    found = None
    for seed in range(300):
        rng = np.random.default_rng(seed)
        g = Game("tavern", num_players=3, seed=seed, target_points=3, record=True)
        while not g.is_over:
            acts = g.legal_actions()
            g.step(acts[int(rng.integers(len(acts)))])
        if len(g.winners) > 1:
            found = g
            break
    assert found is not None, "no shared win in 300 random matches"
    final = found.events[-1]
    best = max(final["totals"].values())
    assert best >= 3
    assert final["winners"] == [p for p in sorted(final["totals"]) if final["totals"][p] == best]
    assert len(final["winners"]) >= 2
    before = [max(e["totals"].values()) for e in events(found, "round_end")[:-1]]
    assert all(t < 3 for t in before)


# -- illegal actions: error names player, move and reason, and nothing changes ---------------------

def _state(name: str) -> Game:
    g = culo4()
    if name == "pair_of_7s":
        play(g, 0, "7C 7S")
    elif name == "single_9":
        play(g, 0, "9H")
    elif name == "give":
        rules = make_rules("culo", 4, rounds=2)
        g = Game(rules, seed=0, deals=[block_deal(rules)], record=True)
        finish_round(g)
    return g


@pytest.mark.parametrize("state,action,seat,cards,words", [
    ("lead", 0, None, None, ["player_0", "'pass'", "the leader may not pass"]),
    ("lead", 1 + 4 * 2 + 1, None, None,
     ["player_0", "'pair of 9s'", "they hold 1 card(s) of rank 9"]),
    ("lead", 1 + 4 * 1, None, None, ["player_0", "'single 8'", "hold 0 card(s) of rank 8"]),
    ("pair_of_7s", 1 + 4 * 2, None, None,
     ["player_1", "'single 9'", "pair of 7s", "only exactly 2 card(s)"]),
    ("pair_of_7s", 1 + 4 * 2 + 2, None, None, ["player_1", "'triple of 9s'", "exactly 2"]),
    ("single_9", 1 + 4 * 2, None, None,
     ["player_1", "'single 9'", "does not beat the single 9", "equal is never enough"]),
    ("single_9", 1 + 4 * 0, None, None, ["player_1", "'single 7'", "does not beat"]),
    ("single_9", 1 + 4 * 6, 2, None, ["player_2", "'single king'", "player_1's turn",
                                      "out of turn"]),
    ("single_9", 1 + 4 * 5, None, ["QS"], ["player_1", "'single queen'", "QS",
                                          "not all of them are in the hand"]),
    ("single_9", 1 + 4 * 5, None, ["KC"], ["player_1", "'single queen'",
                                          "not 1 card(s) of that rank"]),
    ("give", 1, None, None, ["player_0", "'single 7'", "it is the give phase"]),
    ("give", 0, None, None, ["player_0", "'pass'", "give phase"]),
    ("give", 1 + 5 * 8, None, None, ["player_0", "'take a 7'", "give phase"]),
])
def test_illegal_action_error_and_state_unchanged(state, action, seat, cards, words):
    g = _state(state)
    assert action not in g.legal_actions() or cards is not None or seat is not None
    before = snapshot(g)
    with pytest.raises(IllegalActionError) as e:
        g.step(action, cards=cards, seat=seat)
    for w in words:
        assert w in str(e.value), (w, str(e.value))
    assert snapshot(g) == before
    # The game goes on normally afterwards.
    g.step(g.legal_actions()[0])


@pytest.mark.parametrize("seat", [4, -1, True, "1", 1.0])
def test_a_seat_that_is_not_at_the_table_is_named_as_such(seat):
    """``step(seat=...)`` takes a seat 0..n-1: another value is not "out of turn" of a seat
    ``player_99``, and ``True`` is not seat 1 even when seat 1 is to act."""
    g = _state("single_9")
    assert g.current == 1
    before = snapshot(g)
    with pytest.raises(IllegalActionError, match=r"is not a seat at this table; allowed: an "
                                                 r"integer 0\.\.3"):
        g.step(g.legal_actions()[0], seat=seat)
    assert snapshot(g) == before


@pytest.mark.parametrize("cards", ["QH", 5, {"QH": 1}])
def test_cards_that_are_not_a_list_are_refused_as_such(cards):
    """``step(cards=...)`` takes a list of card strings; a single card string is not read as
    the cards 'Q' and 'H', and a number is not a TypeError."""
    g = _state("single_9")
    before = snapshot(g)
    with pytest.raises(IllegalActionError, match="expected a list of card strings"):
        g.step(1 + 4 * 5, cards=cards)
    assert snapshot(g) == before


def test_a_pass_with_cards_is_refused():
    """A pass moves no cards: cards given with it are refused, not silently dropped."""
    g = _state("single_9")
    held = g.hand_of(1)[0]
    before = snapshot(g)
    with pytest.raises(IllegalActionError, match="a pass moves no cards"):
        g.step(0, cards=[held], seat=1)
    assert snapshot(g) == before
    g.step(0, cards=[], seat=1)
    assert g.current == 2


def test_action_not_integer_or_out_of_range_leaves_state_unchanged():
    from arschloch_env.actions import ActionError
    g = culo4()
    before = snapshot(g)
    for bad, words in ((49, "out of range"), (-3, "out of range"), (2.0, "not an integer"),
                       ("1", "not an integer")):
        with pytest.raises(ActionError, match=words):
            g.step(bad)
        assert snapshot(g) == before


def test_clone_is_independent():
    g = culo4()
    c = g.clone()
    play(c, 0, "7C 7S")
    assert g.table_count == 0 and g.hand_of(0)[0] == "7C"
    assert c.table_count == 2 and c.events is None
