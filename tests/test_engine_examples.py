"""The worked examples of the seeds (RULES.md section 5), scripted move by move.

Seat numbering: the seeds' "player 1" is seat 0 (``player_0``), "player 2" seat 1, and so on;
play goes clockwise, seat i+1 after seat i. The dealt hands are designed here so that every
move the seeds describe is legal and the round can end in the order they describe. The table
is drawn in the comments before each trick: who holds what, and what lies on the table.
"""

from __future__ import annotations

from arschloch_env.engine import Game

PASS = 0


def play(game: Game, seat: int, cards: str) -> None:
    """``seat`` plays exactly ``cards`` (e.g. ``"8H 8D"``)."""
    cards = cards.split()
    rank = game.rules.rank_index[cards[0][0]]
    game.step(game.codec.play(rank, len(cards)), cards=cards, seat=seat)


def pass_(game: Game, seat: int) -> None:
    game.step(PASS, seat=seat)


def give(game: Game, seat: int, card: str) -> None:
    game.step(game.codec.give(game.rules.rank_index[card[0]]), cards=[card], seat=seat)


def hand(game: Game, seat: int) -> str:
    return " ".join(game.hand_of(seat))


def events_since(game: Game, start: int) -> list[dict]:
    return game.events[start:]


# ---------------------------------------------------------------------------------------------
# Seed 000 (Culo, Spanish), section 5: four players, round 1.
#
#                 P1 = seat 0
#     P4 = seat 3             P2 = seat 1        clockwise: 0 -> 1 -> 2 -> 3 -> 0
#                 P3 = seat 2
#
# Dealt hands (8 each, 32-card deck 7 8 9 T J Q K A, nothing left over):
#   seat 0 (P1): 8C TS TH TD KH KD AC AD
#   seat 1 (P2): 7S 9C 9S QS KC KS AS AH
#   seat 2 (P3): 7C 7H 7D 8S 8H 8D 9H TC      <- holds 7C: leads round 1
#   seat 3 (P4): 9D JC JS JH JD QC QH QD
# ---------------------------------------------------------------------------------------------

CULO_R1 = [
    "AC 8C KH KD AD TS TH TD".split(),
    "7S KC KS AS AH 9C 9S QS".split(),
    "7C 8H 8D TC 7H 7D 8S 9H".split(),
    "JC JS QC 9D JH JD QH QD".split(),
]
# Round 2 (dealt by the Arschloch P3, who also leads it):
#   seat 0 (P1, Vice-President): 7S 8S 9S TS JS QS KS AS
#   seat 1 (P2, President):      7H 8H 9H TH JH QH KH AH
#   seat 2 (P3, Arschloch):      7C 8C 9C TC JC QC KD AC   <- highest two: AC, KD
#   seat 3 (P4, Vice-Arschloch): 7D 8D 9D TD JD QD KC AD   <- highest one: AD
CULO_R2 = [
    "7S 8S 9S TS JS QS KS AS".split(),
    "7H 8H 9H TH JH QH KH AH".split(),
    "7C 8C 9C TC JC QC KD AC".split(),
    "7D 8D 9D TD JD QD KC AD".split(),
]


def culo_game() -> Game:
    return Game("culo", num_players=4, rounds=2, record=True,
                deals=[(CULO_R1, []), (CULO_R2, [])])


def test_seed000_player3_with_seven_of_clubs_leads():
    g = culo_game()
    assert g.round == 1 and g.phase == "play"
    assert g.leader == 2 and g.current == 2
    assert g.events[1]["leader"] == "player_2"
    assert g.leading


def test_seed000_first_trick_pair_of_eights():
    g = culo_game()
    # Trick 1. P3 leads the pair of eights.
    #   table: 8H 8D (P3)
    play(g, 2, "8H 8D")
    assert g.current == 3
    # P4 plays two jacks.              table: JC JS (P4)
    play(g, 3, "JC JS")
    # P1 passes (he could play KH KD: passing is always allowed).
    assert g.codec.play(g.rules.rank_index["K"], 2) in g.legal_actions()
    pass_(g, 0)
    # P2 plays two kings.              table: KC KS (P2)
    play(g, 1, "KC KS")
    # The king is not the top card while aces are out: the trick goes on.
    assert g.table_rank == g.rules.rank_index["K"] and g.current == 2
    start = len(g.events)
    # P3, P4 and P1 pass; P2 wins the trick and leads.
    pass_(g, 2)
    pass_(g, 3)
    pass_(g, 0)
    assert events_since(g, start) == [
        {"event": "pass", "player": "player_2"},
        {"event": "pass", "player": "player_3"},
        {"event": "pass", "player": "player_0"},
        {"event": "trick_end", "winner": "player_1"},
    ]
    assert g.current == 1 and g.leading
    assert g.played == [0, 2, 0, 0, 2, 0, 2, 0]     # two 8s, two jacks, two kings


def _after_first_trick() -> Game:
    g = culo_game()
    play(g, 2, "8H 8D")
    play(g, 3, "JC JS")
    pass_(g, 0)
    play(g, 1, "KC KS")
    pass_(g, 2)
    pass_(g, 3)
    pass_(g, 0)
    return g


def test_seed000_second_trick_ace_ends_it_at_once():
    g = _after_first_trick()
    #   seat 0 (P1): 8C TS TH TD KH KD AC AD
    #   seat 1 (P2): 7S 9C 9S QS AS AH            <- leads
    #   seat 2 (P3): 7C 7H 7D 8S 9H TC
    #   seat 3 (P4): 9D JH JD QC QH QD
    # Trick 2. P2 leads a single 7, P3 a ten, P4 a queen.
    play(g, 1, "7S")
    play(g, 2, "TC")
    play(g, 3, "QC")
    assert g.current == 0
    start = len(g.events)
    # P1 plays an ace, the highest card still in play: nobody can beat it, the trick ends at
    # once (P2, P3 and P4 are not asked) and P1 leads.
    play(g, 0, "AC")
    assert events_since(g, start) == [
        {"event": "play", "player": "player_0", "cards": ["AC"]},
        {"event": "trick_end", "winner": "player_0"},
    ]
    assert g.current == 0 and g.leading
    assert g.sizes == [7, 5, 5, 5]


def test_seed000_round_runs_to_p2_p1_p4_p3_and_next_exchange():
    g = _after_first_trick()
    play(g, 1, "7S")
    play(g, 2, "TC")
    play(g, 3, "QC")
    play(g, 0, "AC")
    assert hand(g, 0) == "8C TS TH TD KH KD AD"
    assert hand(g, 1) == "9C 9S QS AS AH"
    assert hand(g, 2) == "7C 7H 7D 8S 9H"
    assert hand(g, 3) == "9D JH JD QH QD"

    # Trick 3. P1 leads 8C; P2's ace is the top card and ends the trick at once.
    play(g, 0, "8C")
    play(g, 1, "AS")
    assert g.current == 1 and g.leading
    # Trick 4. P2 leads AH: the top card again, he leads once more.
    play(g, 1, "AH")
    assert g.current == 1 and g.leading
    # Trick 5. P2 leads 9C 9S. P3 holds no pair above 9s (7 7 7, 8S, 9H): he can only pass.
    play(g, 1, "9C 9S")
    assert g.legal_actions() == [PASS]
    pass_(g, 2)
    pass_(g, 3)
    pass_(g, 0)
    assert g.current == 1
    # Trick 6. P2 leads his last card, QS: out, 1st place (President).
    #   seat 0 (P1): TS TH TD KH KD AD
    #   seat 2 (P3): 7C 7H 7D 8S 9H
    #   seat 3 (P4): 9D JH JD QH QD
    play(g, 1, "QS")
    assert g.events[-1] == {"event": "out", "player": "player_1", "place": 1,
                            "reason": "emptied"}
    assert g.current == 2                    # P3 follows; P2 is skipped from now on
    pass_(g, 2)
    pass_(g, 3)
    play(g, 0, "KH")                         # K is not the top card: AD is still in play
    pass_(g, 2)
    pass_(g, 3)                              # P2 has no cards: two passes end the trick
    assert g.current == 0 and g.leading
    # Trick 7. P1 leads three tens; nobody holds a higher triple.
    play(g, 0, "TS TH TD")
    assert g.legal_actions() == [PASS]       # P3's 7 7 7 is lower
    pass_(g, 2)
    pass_(g, 3)
    # Trick 8. P1 plays the last ace (the top card), then leads KD, his last card: with every
    # ace gone the king is now the highest card still in play, so the trick ends at once too;
    # P1 is out (2nd, Vice-President) and the next player with cards, P3, leads.
    play(g, 0, "AD")
    assert g.current == 0 and g.highest_in_play() == g.rules.rank_index["K"]
    start = len(g.events)
    play(g, 0, "KD")
    assert events_since(g, start) == [
        {"event": "play", "player": "player_0", "cards": ["KD"]},
        {"event": "out", "player": "player_0", "place": 2, "reason": "emptied"},
        {"event": "trick_end", "winner": "player_0"},
    ]
    assert g.current == 2 and g.leading
    # Trick 9. P3 leads three 7s; P4 has no triple.
    play(g, 2, "7C 7H 7D")
    pass_(g, 3)
    # Trick 10. P3 leads 8S; P4's QH is the highest card still in play (aces and kings are
    # gone, QC and QS played): the trick ends at once.
    play(g, 2, "8S")
    assert g.highest_in_play() == g.rules.rank_index["Q"]
    play(g, 3, "QH")
    assert g.current == 3 and g.leading
    # Trick 11 and 12. P4 leads J J, then 9D; P3's 9H is equal, not higher.
    play(g, 3, "JH JD")
    pass_(g, 2)
    play(g, 3, "9D")
    assert g.legal_actions() == [PASS]
    pass_(g, 2)
    # Trick 13. P4 plays his last card: 3rd place (Vice-Arschloch). P3 is the only one left
    # holding cards: 4th place (Arschloch), and the round ends without another trick.
    start = len(g.events)
    play(g, 3, "QD")
    end = events_since(g, start)
    assert [e["event"] for e in end[:4]] == ["play", "out", "out", "round_end"]
    assert end[1] == {"event": "out", "player": "player_3", "place": 3, "reason": "emptied"}
    assert end[2] == {"event": "out", "player": "player_2", "place": 4, "reason": "last"}
    assert end[3] == {
        "event": "round_end", "round": 1,
        "places": {"player_0": 2, "player_1": 1, "player_2": 4, "player_3": 3},
        "titles": {"player_0": "Vice-President", "player_1": "President",
                   "player_2": "Arschloch", "player_3": "Vice-Arschloch"},
        "points": {"player_0": 2, "player_1": 3, "player_2": 0, "player_3": 1},
        "totals": {"player_0": 2, "player_1": 3, "player_2": 0, "player_3": 1},
    }

    # Round 2. P3 deals; the exchange comes first.
    assert end[4]["event"] == "round" and end[4]["round"] == 2
    assert end[4]["leader"] == "player_2"
    # P3 (Arschloch) gives P2 (President) his two highest cards automatically: AC and KD.
    assert end[5] == {"event": "exchange", "from": "player_2", "to": "player_1",
                      "cards": ["KD", "AC"]}
    assert len(end) == 6                     # now P2 chooses: nothing more happened yet
    assert g.phase == "give" and g.current == 1 and g.to_give == 2
    assert hand(g, 1) == "7H 8H 9H TH JH QH KH KD AC AH"
    assert hand(g, 2) == "7C 8C 9C TC JC QC"
    # P2 gives back two bad cards of his choice, one step per card.
    give(g, 1, "7H")
    assert g.phase == "give" and g.current == 1 and g.to_give == 1
    give(g, 1, "8H")
    # Then P4 (Vice-Arschloch) gives P1 (Vice-President) his highest card, AD, and P1
    # returns one card of his choice.
    assert g.events[-2:] == [
        {"event": "exchange", "from": "player_1", "to": "player_2", "cards": ["7H", "8H"]},
        {"event": "exchange", "from": "player_3", "to": "player_0", "cards": ["AD"]},
    ]
    assert g.phase == "give" and g.current == 0 and g.to_give == 1
    give(g, 0, "7S")
    assert g.events[-1] == {"event": "exchange", "from": "player_0", "to": "player_3",
                            "cards": ["7S"]}
    # P3 leads the first trick of round 2.
    assert g.phase == "play" and g.current == 2 and g.leading
    assert sorted(g.hand_of(1)) == sorted("9H TH JH QH KH AH KD AC".split())
    assert sorted(g.hand_of(2)) == sorted("7C 8C 9C TC JC QC 7H 8H".split())
    assert sorted(g.hand_of(0)) == sorted("8S 9S TS JS QS KS AS AD".split())
    assert sorted(g.hand_of(3)) == sorted("7D 8D 9D TD JD QD KC 7S".split())
    assert g.sizes == [8, 8, 8, 8]
    assert g.titles == ["Vice-President", "President", "Arschloch", "Vice-Arschloch"]


# ---------------------------------------------------------------------------------------------
# Seed 002 (Tavern, German), "Beispiel: ein Stich zu viert".
#
#                 Anna = seat 0
#     Dana = seat 3           Ben = seat 1        clockwise: Anna, Ben, Cem, Dana
#                 Cem = seat 2
#
# Dealt hands (13 each, 52 cards 3 4 5 6 7 8 9 T J Q K A 2; the 2 is the top card). Nobody
# holds two 2s. Anna leads round 1 (first match of the series: seat 0 mod 4).
#   Anna: 6H 6S 7C 7S 7H 7D 8C 8S 8H 8D TC TS 2C
#   Ben:  3C 3S 3H 3D 5C 5S 5H 5D 9C 9S JD KH 2S
#   Cem:  4C 6C 6D 9H 9D TH TD QC QS QH AC AD 2H   <- a single 4, two aces
#   Dana: 4S 4H 4D JC JS JH QD KC KS KD AS AH 2D
# ---------------------------------------------------------------------------------------------

TAVERN_R1 = [
    "6H 6S 2C 7C 7S 7H 7D 8C 8S 8H 8D TC TS".split(),
    "9C 9S 2S 3C 3S 3H 3D 5C 5S 5H 5D KH JD".split(),
    "AC AD 4C 2H 9H 9D QC QS QH TH TD 6C 6D".split(),
    "KC KS 2D 4S 4H 4D JC JS JH QD KD AS AH".split(),
]
# Round 2, dealt from Dana (the Arschloch, who leads):
#   Anna: 3C 4C 5D 6C 7C 8C 9C TC JC QC KC AC 2C
#   Ben:  3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS 2H
#   Cem:  3H 4H 5H 6H 7H 8H 9H TH JH QH KH AD 2D
#   Dana: 3D 4D 5C 6D 7D 8D 9D TD JD QD KD AH 2S   <- her two highest: 2S and AH
TAVERN_R2 = [
    "3C 4C 5D 6C 7C 8C 9C TC JC QC KC AC 2C".split(),
    "3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS 2H".split(),
    "3H 4H 5H 6H 7H 8H 9H TH JH QH KH AD 2D".split(),
    "3D 4D 5C 6D 7D 8D 9D TD JD QD KD AH 2S".split(),
]
ANNA, BEN, CEM, DANA = 0, 1, 2, 3


def tavern_game() -> Game:
    return Game("tavern", num_players=4, rounds=2, record=True, match_index=0,
                deals=[(TAVERN_R1, []), (TAVERN_R2, [])])


def _tavern_example_trick(g: Game) -> None:
    # Anna leads 6H 6S.                table: 6H 6S (Anna)
    play(g, ANNA, "6H 6S")
    # Ben plays two nines.             table: 9C 9S (Ben)
    play(g, BEN, "9C 9S")
    # Cem does not want to give up his two aces yet and passes, though he could play them.
    assert g.codec.play(g.rules.rank_index["A"], 2) in g.legal_actions()
    pass_(g, CEM)
    # Dana plays two kings.            table: KC KS (Dana)
    play(g, DANA, "KC KS")
    # Anna and Ben pass.
    pass_(g, ANNA)
    pass_(g, BEN)
    # It is Cem's turn again: his earlier pass does not matter. He plays AC AD.
    assert g.current == CEM and g.passed == [True, True, False, False]
    play(g, CEM, "AC AD")
    # Only a pair of 2s could beat them and nobody holds one, so Dana, Anna and Ben can only
    # pass; in this family the trick does not end at once, they pass in turn.
    for seat in (DANA, ANNA, BEN):
        assert g.current == seat and g.legal_actions() == [PASS]
        pass_(g, seat)


def test_seed002_trick_with_pass_and_reentry():
    g = tavern_game()
    assert g.leader == ANNA and g.current == ANNA
    start = len(g.events)
    _tavern_example_trick(g)
    assert [(e["event"], e.get("player", e.get("winner"))) for e in events_since(g, start)] == [
        ("play", "player_0"), ("play", "player_1"), ("pass", "player_2"),
        ("play", "player_3"), ("pass", "player_0"), ("pass", "player_1"),
        ("play", "player_2"), ("pass", "player_3"), ("pass", "player_0"),
        ("pass", "player_1"), ("trick_end", "player_2"),
    ]
    # Cem wins the trick, leads again and gets rid of his single 4.
    assert g.current == CEM and g.leading
    play(g, CEM, "4C")
    assert g.sizes == [11, 11, 10, 11]
    assert "4C" not in g.hand_of(CEM)
    assert not any(c[0] == "4" for c in g.hand_of(CEM))


def test_seed002_round_and_exchange_dana_to_anna():
    g = tavern_game()
    _tavern_example_trick(g)
    play(g, CEM, "4C")
    pass_(g, DANA)
    # Anna's 2C cannot be beaten; the trick still runs round (forced passes).
    play(g, ANNA, "2C")
    for seat in (BEN, CEM, DANA):
        assert g.current == seat and g.legal_actions() == [PASS]
        pass_(g, seat)
    assert g.current == ANNA and g.leading
    # Anna leads two quads nobody can beat, then her last pair: 1st place.
    for quad in ("7C 7S 7H 7D", "8C 8S 8H 8D"):
        play(g, ANNA, quad)
        for seat in (BEN, CEM, DANA):
            assert g.legal_actions() == [PASS]
            pass_(g, seat)
    play(g, ANNA, "TC TS")
    assert g.places[ANNA] == 1
    #   Ben:  3C 3S 3H 3D 5C 5S 5H 5D JD KH 2S
    #   Cem:  6C 6D 9H 9D TH TD QC QS QH 2H
    #   Dana: 4S 4H 4D JC JS JH QD KD AS AH 2D
    pass_(g, BEN)
    pass_(g, CEM)
    pass_(g, DANA)
    # Anna won the trick but is out: the next player with cards, Ben, leads.
    assert g.current == BEN and g.leading
    play(g, BEN, "3C 3S 3H 3D")
    pass_(g, CEM)
    pass_(g, DANA)
    play(g, BEN, "5C 5S 5H 5D")
    pass_(g, CEM)
    pass_(g, DANA)
    play(g, BEN, "2S")
    pass_(g, CEM)                            # 2H is only equal
    pass_(g, DANA)
    play(g, BEN, "JD")
    pass_(g, CEM)
    pass_(g, DANA)
    play(g, BEN, "KH")                       # Ben's last card: 2nd place
    assert g.places[BEN] == 2
    play(g, CEM, "2H")
    pass_(g, DANA)
    play(g, CEM, "QC QS QH")
    pass_(g, DANA)
    play(g, CEM, "6C 6D")
    pass_(g, DANA)
    play(g, CEM, "9H 9D")
    pass_(g, DANA)
    play(g, CEM, "TH TD")
    # Cem 3rd; Dana is left holding cards: Arschloch. Anna is President.
    round_end = next(e for e in g.events if e["event"] == "round_end")
    assert round_end["places"] == {"player_0": 1, "player_1": 2, "player_2": 3, "player_3": 4}
    assert round_end["titles"]["player_0"] == "President"
    assert round_end["titles"]["player_3"] == "Arschloch"
    assert round_end["points"] == {"player_0": 3, "player_1": 2, "player_2": 1, "player_3": 0}

    # Round 2: Dana gives Anna her two highest cards automatically: 2S and AH.
    assert g.round == 2 and g.leader == DANA
    exchanges = [e for e in g.events if e["event"] == "exchange"]
    assert exchanges == [{"event": "exchange", "from": "player_3", "to": "player_0",
                          "cards": ["AH", "2S"]}]
    assert g.phase == "give" and g.current == ANNA and g.to_give == 2
    # Anna gives back two of her choice, 3C and 5D.
    give(g, ANNA, "3C")
    give(g, ANNA, "5D")
    # Then the vices: Cem (Vice-Arschloch) gives Ben (Vice-President) his highest card, 2D;
    # Ben returns one of his choice.
    assert g.phase == "give" and g.current == BEN and g.to_give == 1
    give(g, BEN, "3S")
    exchanges = [e for e in g.events if e["event"] == "exchange"]
    assert exchanges[1:] == [
        {"event": "exchange", "from": "player_0", "to": "player_3", "cards": ["3C", "5D"]},
        {"event": "exchange", "from": "player_2", "to": "player_1", "cards": ["2D"]},
        {"event": "exchange", "from": "player_1", "to": "player_2", "cards": ["3S"]},
    ]
    assert "2S" in g.hand_of(ANNA) and "AH" in g.hand_of(ANNA)
    assert "3C" in g.hand_of(DANA) and "5D" in g.hand_of(DANA)
    assert "2S" not in g.hand_of(DANA) and "AH" not in g.hand_of(DANA)
    assert g.sizes == [13, 13, 13, 13]
    # Dana, the Arschloch, leads the new round.
    assert g.phase == "play" and g.current == DANA and g.leading
