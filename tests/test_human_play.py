"""``arschloch play``: the move reader, and the real program driven through a pseudo-terminal.

The pexpect tests type like a person: bad input, help, moves as cards (``9 9``, ``9C 9D``,
``t`` for a ten) and by number, through whole matches with an exchange (and, with five
players, the left-over swap). The typed strategy is "lowest play, pass only when forced", so
the seeds below are ones where seat 0 finishes round 1 in the place that the phase needs.
"""

import json
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pexpect  # the dev extra (scripts/env.sh installs it): a missing one fails, not skips
import pytest

from agents.human import HumanAgent, MoveError, QuitGame, follow_hands, narrate, parse_move
from arschloch_env.engine import Game
from arschloch_env.view import public_view

ROOT = Path(__file__).resolve().parent.parent
EXE = str(Path(sys.executable).with_name("arschloch"))
PROMPT = r"your move> "
MOVE_LINE = re.compile(r"^\s+(\d+)\) (.+?)\s+type: (.+?)\s*$", re.M)

#           player_0 holds 7C and leads round 1
HANDS = [["7C", "8H", "8D", "TS", "TD", "JC", "AC", "AD"],
         ["7S", "8C", "9C", "9S", "JS", "QC", "KC", "AS"],
         ["7H", "8S", "9H", "TC", "JH", "QS", "KS", "AH"],
         ["7D", "9D", "TH", "JD", "QH", "QD", "KH", "KD"]]


def _lead_view():
    game = Game("culo", seed=0, deals=[(HANDS, [])], rounds=1)
    assert game.current == 0
    return game, public_view(game, 0)


def _id(view, words):
    return next(x["id"] for x in view["legal"] if x["move"] == words)


# -- the move reader --------------------------------------------------------------------------

def test_moves_typed_as_cards_or_numbers():
    game, view = _lead_view()
    assert [x["move"] for x in view["legal"]] == [
        "single 7", "single 8", "pair of 8s", "single 10", "pair of 10s", "single jack",
        "single ace", "pair of aces"]
    pair8 = _id(view, "pair of 8s")
    assert parse_move("8 8", view) == (pair8, None)
    assert parse_move("8H 8D", view) == (pair8, ["8H", "8D"])
    assert parse_move("8h,8d", view) == (pair8, ["8H", "8D"])
    assert parse_move("  8d ", view) == (_id(view, "single 8"), ["8D"])
    assert parse_move("8h 8", view) == (pair8, ["8H", "8D"])  # the untyped suit: lowest left
    assert parse_move("t", view) == (_id(view, "single 10"), None)
    assert parse_move("T 10", view) == (_id(view, "pair of 10s"), None)
    assert parse_move("play a a", view) == (_id(view, "pair of aces"), None)
    assert parse_move("3", view) == (pair8, None)
    assert parse_move("#7", view) == (_id(view, "single ace"), None)
    assert parse_move("2", view) == (_id(view, "single 8"), None)  # 2 is no rank here
    for word in ("QUIT", "exit"):
        with pytest.raises(QuitGame):
            parse_move(word, view)


def test_untyped_suits_are_the_lowest_ones_left():
    hands = [[c if c != "TS" else "8S" for c in HANDS[0]], HANDS[1],
             [c if c != "8S" else "TS" for c in HANDS[2]], HANDS[3]]
    view = public_view(Game("culo", seed=0, deals=[(hands, [])], rounds=1), 0)
    assert view["hand"][1:4] == ["8S", "8H", "8D"]  # the hand's order, lowest first
    assert parse_move("8s 8", view) == (_id(view, "pair of 8s"), ["8S", "8H"])
    assert parse_move("8 8h 8", view) == (_id(view, "triple of 8s"), ["8H", "8S", "8D"])


def test_followed_hands_are_the_engines_through_swaps_exchanges_and_plays():
    """The narrator follows every hand from the records (it shows the hand an only-top exit
    reveals): whenever a card is to be played they are the cards the engine holds for each
    seat. (A give is recorded once all its cards are given.)"""
    import random

    from arschloch_env.cards import mask_cards

    for preset, n in (("culo", 5), ("culo", 6), ("tavern", 4)):
        game = Game(preset, num_players=n, seed=n, record=True, auto_pass=True)
        rng = random.Random(n)
        hands, seen, kinds = {}, 0, Counter()
        while not game.is_over:
            game.step(rng.choice(game.legal_actions()))
            for event in game.events[seen:]:
                follow_hands(hands, event)
                kinds[event["event"]] += 1
            seen = len(game.events)
            if game.phase != "play":
                continue
            order = game.rules.rank_order
            for s in range(n):
                held = [c for r, m in enumerate(game.hands[s]) for c in mask_cards(order[r], m)]
                assert sorted(hands[f"player_{s}"]) == sorted(held), (preset, s)
        assert kinds["exchange"] and kinds["play"] and kinds["out"]
        assert kinds["leftover_swap"] or preset == "tavern"


@pytest.mark.parametrize("text,message", [
    ("pass", "you lead this trick, so you cannot pass"),
    ("zz", "'zz' is not understood"),
    ("", "type a move"),
    ("9", "you hold no card of rank 9 (your hand: "),
    ("8 8 8", "you hold only 2 card(s) of rank 8 (8H 8D)"),
    ("pass pass", "'pass' goes on a line of its own"),
    ("8 pass", "'pass' goes on a line of its own"),
    ("help me", "'help' goes on a line of its own"),
    ("8c", "8C is not in your hand; your 8s: 8H 8D"),
    ("8 9", "the same rank"),
    ("8h 8h", "typed twice"),
    ("8", "'8' is ambiguous: type '#8' for move 8 (pair of aces), or '8h' for a single 8"),
    ("#12", "there is no move 12; the moves are numbered 1 to 8"),
    ("#123", "there is no move 123; the moves are numbered 1 to 8"),
    ("#0", "there is no move 0; the moves are numbered 1 to 8"),  # not the last one
    ("0", "there is no move 0; the moves are numbered 1 to 8"),
    ("8 p", "'p' goes on a line of its own"),
    ("8 quit", "'quit' goes on a line of its own"),
    ("7", "'7' is ambiguous: type '#7' for move 7 (single ace), or '7c' for a single 7"),
    ("k k k k k", "at most 4 cards"),
    ("kings", "'kings' is not understood"),  # not the king of spades
    ("aces", "'aces' is not understood"),
])
def test_bad_moves_are_explained(text, message):
    game, view = _lead_view()
    with pytest.raises(MoveError) as exc:
        parse_move(text, view)
    assert message in str(exc.value)



@pytest.mark.parametrize("phase", ["take", "lay", "give"])
@pytest.mark.parametrize("text", ["", "   ", "give", "xyz", "pass 8", "8 p"])
def test_bad_input_in_the_swap_and_exchange_says_what_this_phase_takes(phase, text):
    """An empty or not-understood line while a card is to be taken, laid or given is answered
    with that phase's moves, never with '8 8' or 'pass', which are refused there."""
    from arschloch_env.rules import make_rules

    game = Game(make_rules("culo", 3), seed=1, auto_pass=True)
    while public_view(game, game.current)["phase"] != phase:  # round 2's swap and exchange
        game.step(game.legal_actions()[0])
    view = public_view(game, game.current)
    if text == "give" and phase == "give":
        text = "give xyz"
    with pytest.raises(MoveError) as exc:
        parse_move(text, view)
    message = str(exc.value)
    assert "'8 8'" not in message and "'pass'" not in message, message
    assert {"take": "take one of the face-up", "lay": "lay one card",
            "give": "giving cards back"}[phase] in message


@pytest.mark.parametrize("preset, players, words", [
    ("culo", 3, "this round you received or took: "),  # the left-over swap's cards too
    ("tavern", 4, "this round you received: "),
])
def test_the_cards_given_and_received_are_named_as_the_rules_move_them(preset, players, words):
    from arschloch_env.rules import make_rules

    game = Game(make_rules(preset, players), seed=1, auto_pass=True)
    while public_view(game, game.current)["phase"] != "give":  # round 2's exchange
        game.step(game.legal_actions()[0])
    assert words in HumanAgent().describe(public_view(game, game.current))


@pytest.mark.parametrize("phase", ["take", "lay", "give"])
def test_two_cards_where_one_is_chosen_at_a_time_say_so(phase):
    """Two cards of different ranks in the swap or the exchange: the answer is that one card
    goes at a time, not that a move's cards need one rank (which would not help)."""
    from arschloch_env.rules import make_rules

    game = Game(make_rules("culo", 3), seed=1, auto_pass=True)
    while public_view(game, game.current)["phase"] != phase:
        game.step(game.legal_actions()[0])
    view = public_view(game, game.current)
    pool = view["face_up"] if phase == "take" else view["hand"]
    assert pool[0][0] != pool[-1][0]
    for text in (f"{pool[0]} {pool[-1]}", f"{pool[0][0]} {pool[0][0]}"):
        with pytest.raises(MoveError, match=r"\(one card at a time\)$"):
            parse_move(text.lower(), view)


@pytest.mark.parametrize("players", [3, 4, 5])
def test_the_give_back_prompt_names_the_seat_that_receives(players):
    """The President gives back to the Arschloch, the Vice-President to the Vice-Arschloch."""
    from arschloch_env.rules import make_rules

    game = Game(make_rules("culo", players, rounds=2), seed=1, auto_pass=True)
    receivers = set()
    while not game.is_over:
        view = public_view(game, game.current)
        if view["phase"] == "give":
            to = {"President": "Arschloch", "Vice-President": "Vice-Arschloch"}[
                view["titles"][view["seat"]]]
            seat = view["titles"].index(to)
            receivers.add(to)
            with pytest.raises(MoveError, match=f"giving cards back to player_{seat} in"):
                parse_move("", view)
            labels = [f"bot{s}" for s in range(players)]
            shown = HumanAgent(labels=labels).describe(view)
            assert f"giving cards back to player_{seat} (bot{seat}) in the exchange" in shown
        game.step(game.legal_actions()[0])
    assert receivers == ({"Arschloch"} if players == 3 else {"Arschloch", "Vice-Arschloch"})

def test_following_moves():
    game, _ = _lead_view()
    game.step(1)  # player_0 leads the single 7
    view = public_view(game, 1)
    with pytest.raises(MoveError, match="the table holds a single 7: play exactly 1"):
        parse_move("9 9", view)
    assert parse_move("p", view) == (0, None)
    game.step(game.codec.play(1, 1))  # player_1 plays a single 8
    view = public_view(game, 2)
    with pytest.raises(MoveError, match="does not beat the single 8 on the table"):
        parse_move("7h", view)
    with pytest.raises(MoveError, match="'7' is ambiguous: type '#7' for move 7 "
                                        r"\(single ace\); a single 7 is not legal now"):
        parse_move("7", view)  # move 7 (single ace), or the 7 player_2 holds, which is low
    game.step(0)
    view = public_view(game, 3)
    assert parse_move("#2", view) == (view["legal"][1]["id"], None)


def test_a_play_of_the_tables_rank_is_told_that_equal_is_never_enough():
    from arschloch_env.rules import make_rules
    rng = np.random.default_rng(0)
    for seed in range(50):
        g = Game(make_rules("culo", 4), seed=seed, auto_pass=True)
        while not g.is_over:
            view = public_view(g, g.current)
            table = view["table"]
            if table and len(table["cards"]) == 1 and any(
                    c[0] == table["cards"][0][0] for c in view["hand"]):
                with pytest.raises(MoveError, match="equal is never enough"):
                    parse_move(table["cards"][0][0], view)
                return
            g.step(int(rng.choice(g.legal_actions())))
    pytest.fail("no position with the table's rank in the hand")


def test_the_list_shows_the_card_where_a_bare_rank_would_be_a_move_number():
    """With 8 moves listed, '7' and '8' are move numbers too: a single of them is shown as
    the card to type; a 10 is no move number here and is shown bare."""
    _, view = _lead_view()
    assert len(view["legal"]) == 8
    shown = HumanAgent().describe(view)
    for line in ("1) single 7       type: 7c", "2) single 8       type: 8h",
                 "4) single 10      type: 10"):
        assert line in shown, shown


def test_a_number_that_is_a_rank_the_player_lacks_asks_for_the_move_number():
    """In a 52-card deck 2..10 are ranks too: a bare "5" without a 5 in hand may be a misread
    hand as well as move 5, so it is asked, never played as the move listed under it."""
    from arschloch_env.rules import make_rules
    g = Game(make_rules("tavern", 4), seed=0, auto_pass=True)
    view = public_view(g, g.current)
    held = {c[0] for c in view["hand"]}
    k = next(k for k in range(2, 10) if str(k) not in held and k <= len(view["legal"]))
    with pytest.raises(MoveError) as exc:
        parse_move(str(k), view)
    assert str(exc.value) == (f"you hold no {k}: type '#{k}' for move {k} "
                              f"({view['legal'][k - 1]['move']})")
    assert parse_move(f"#{k}", view) == (view["legal"][k - 1]["id"], None)


@pytest.mark.parametrize("seat", ["4", "-1"])
def test_play_refuses_a_seat_the_table_does_not_have(seat, capsys):
    from arschloch_env.cli import main
    assert main(["play", "--players", "4", "--bots", "random", "--seat", seat]) == 2
    assert f"--seat {seat}: allowed 0..3" in capsys.readouterr().err


def test_human_agent_reprompts_until_legal_and_shows_the_table():
    game, view = _lead_view()
    typed = iter(["zz", "help", "pass", "8 8"])
    out = []
    agent = HumanAgent(input_fn=lambda prompt: next(typed), output=out.append,
                       labels=["human", "random", "random", "random"])
    assert agent.choose(view) == (_id(view, "pair of 8s"), None)
    text = "\n".join(out)
    assert "your hand: 7C 8H 8D TS TD JC AC AD" in text
    assert "3) pair of 8s" in text and "type: 8 8" in text
    assert "'zz' is not understood" in text and "Type a move as cards" in text
    assert "cannot pass" in text
    eof = HumanAgent(input_fn=lambda prompt: (_ for _ in ()).throw(EOFError()), output=out.append)
    with pytest.raises(QuitGame):
        eof.act({}, view)


def test_narration_hides_other_players_cards():
    labels = ["human", "bot", "bot", "bot"]
    secret = {"event": "exchange", "from": "player_1", "to": "player_2", "cards": ["AS"]}
    mine = {"event": "exchange", "from": "player_3", "to": "player_0", "cards": ["AS", "AH"]}
    swap = {"event": "leftover_swap", "player": "player_2", "take": "AS", "lay": "7D"}
    assert narrate(secret, 0, labels) == "  exchange: player_1 (bot) gives 1 card(s) to player_2 (bot)"
    assert "AS AH to you" in narrate(mine, 0, labels)
    assert "7D" not in narrate(swap, 0, labels) and "takes AS" in narrate(swap, 0, labels)
    assert narrate({"event": "round", "round": 1, "hands": {}, "leftover": [],
                    "leader": "player_0"}, 0, labels).endswith("you lead the first trick")
    # the left-over cards are counted, never named
    line = narrate({"event": "round", "round": 1, "hands": {}, "leftover": ["7C", "AS"],
                    "leader": "player_1"}, 0, labels)
    assert line.endswith("leads the first trick (2 card(s) left over, not dealt)"), line


def test_a_trick_ended_by_the_top_card_rule_says_so():
    """A trick that ends on a play (not on the last pass) ended by the top-card rule, which
    is not always an ace: once the aces are gone, a king ends it."""
    labels = ["human", "bot", "bot", "bot"]
    end = {"event": "trick_end", "winner": "player_1"}
    king = {"event": "play", "player": "player_1", "cards": ["KS"]}
    assert narrate(end, 0, labels, last_move=king) == (
        "  -- trick to player_1 (bot) (the king is the highest rank still in play: no one "
        "can beat it)")
    passed = {"event": "pass", "player": "player_3"}
    assert narrate(end, 0, labels, last_move=passed) == "  -- trick to player_1 (bot)"


def test_a_play_that_leaves_only_top_rank_cards_is_marked_in_the_list():
    """Under no_finish_on_top, a hand of only top-rank cards takes the lowest place left at
    once: the list of moves says which plays would leave one."""
    from agents.human import _only_top_warning
    order = ["7", "8", "9", "T", "J", "Q", "K", "A"]
    view = {"rules": {"rank_order": order, "no_finish_on_top": True},
            "hand": ["KC", "KS", "AS", "AH"]}
    single_king, pair_of_kings, single_ace = 1 + 4 * 6, 1 + 4 * 6 + 1, 1 + 4 * 7
    assert (_only_top_warning(view, pair_of_kings)
            == "(leaves only aces: the lowest place left)")
    assert _only_top_warning(view, single_king) == ""  # a king is left
    assert _only_top_warning(view, single_ace) == ""
    assert _only_top_warning(view, 0) == ""  # pass
    view["rules"]["no_finish_on_top"] = False
    assert _only_top_warning(view, pair_of_kings) == ""


def test_a_play_is_named_in_the_narration_as_in_the_list_of_moves():
    game, _ = _lead_view()
    labels = ["human", "bot", "bot", "bot"]
    for action in game.legal_actions()[1:]:
        move = game.codec.decode(action)
        cards = [game.rules.rank_order[move.rank] + s for s in "CSHD"[:move.count]]
        line = narrate({"event": "play", "player": "player_1", "cards": cards}, 0, labels)
        assert line.endswith(f"({game.codec.describe(action)})"), line


# -- the real program in a pseudo-terminal ----------------------------------------------------

def _spawn(args, cwd):
    return pexpect.spawn(EXE, args, encoding="utf-8", timeout=30, cwd=str(cwd),
                         dimensions=(80, 220))


def _reply(screen: str, k: int) -> str:
    """The lowest legal play (pass only when forced), typed in one of three ways."""
    moves = MOVE_LINE.findall(screen.replace("\r", ""))
    num, words, typed = next((m for m in moves if m[1] != "pass"), moves[0])
    hand = re.findall(r"your hand: (.*)", screen.replace("\r", ""))[-1].split()
    mode = k % 3
    if mode == 1:  # by number
        return num if int(num) < 7 else f"#{num}"
    tokens = typed.split()
    if mode == 2 and re.match(r"(single|pair|triple|quad) ", words):  # exact cards: 9C 9D
        rank = {"10": "T"}.get(tokens[0], tokens[0].upper())[0]
        return " ".join([c for c in hand if c[0] == rank][:len(tokens)])
    return " ".join("t" if t == "10" else t for t in tokens)


def _play(child, opening=(), quit_at=None):
    """Answers every prompt; returns the transcript and the set of phases met."""
    transcript, screen, k = [], "", 0
    opening = list(opening)
    phases = set()
    while True:
        if child.expect([PROMPT, pexpect.EOF]) == 1:
            transcript.append(child.before)
            return "".join(transcript), phases
        transcript.append(child.before + PROMPT)
        if "legal moves:" in child.before or "type: " in child.before:
            screen = child.before
        for marker, phase in (("giving cards back", "give"), ("face-up left-over cards (",
                                                              "take"), ("face down: type", "lay")):
            if marker in child.before:
                phases.add(phase)
        if quit_at is not None and k == quit_at:
            quit_at(child) if callable(quit_at) else None
        if opening:
            child.sendline(opening.pop(0))
            continue
        child.sendline(_reply(screen, k))
        k += 1


def test_full_match_with_exchange_bad_input_and_numbers(tmp_path):
    rec = tmp_path / "me.jsonl"
    child = _spawn(["play", "--rules", "culo", "--players", "4", "--bots", "random", "random",
                    "random", "--seat", "0", "--seed", "0", "--set", "rounds=2", "--hint",
                    "random", "--record", str(rec)], tmp_path)
    text, phases = _play(child, opening=["zz", "help", "k k k k k", "#99"])
    child.close()
    assert child.exitstatus == 0, text[-2000:]
    assert "'zz' is not understood" in text
    assert "Type a move as cards" in text
    assert "a play has at most 4 cards" in text
    assert "there is no move 99" in text
    assert "hint (random): " in text
    assert "your hand: " in text and "cards points" in text
    assert "== round 1 over:" in text and "== round 2 over:" in text
    assert "== match over: winner(s)" in text
    assert "give" in phases  # seat 0 was President after round 1 with this seed
    assert re.search(r"you play \w\w \w\w \(pair", text)  # a pair typed as cards went through
    assert "record:" in text and "1 finished match(es)" in text  # a long path wraps the line
    events = [json.loads(line) for line in rec.read_text().splitlines()]
    assert events[0]["agents"]["player_0"] == "human"
    assert [e for e in events if e["event"] == "exchange" and e["from"] == "player_0"]
    from arschloch_env.cli import main as cli_main
    assert cli_main(["replay", "--quiet", str(rec)]) == 0


def test_left_over_swap_with_five_players(tmp_path):
    child = _spawn(["play", "--players", "5", "--bots", "random", "--seed", "5", "--set",
                    "rounds=2"], tmp_path)
    text, phases = _play(child)
    child.close()
    assert child.exitstatus == 0, text[-2000:]
    assert {"take", "lay"} <= phases  # seat 0 finished round 1 third with this seed
    assert re.search(r"you take \w\w and lay a card face down \(\w\w\)", text)


def _play_first_of_two_matches(tmp_path, rec):
    """``play`` of two single-round matches, at the first prompt of the second."""
    child = _spawn(["play", "--bots", "random", "--seed", "4", "--matches", "2", "--set",
                    "rounds=1", "--record", str(rec)], tmp_path)
    transcript, k = "", 0
    while True:
        child.expect(PROMPT)
        transcript += child.before
        if "match over" in transcript:
            return child
        child.sendline(_reply(child.before if "type: " in child.before else transcript, k))
        k += 1


def test_ctrl_c_and_ctrl_d_quit_cleanly_keeping_finished_matches(tmp_path):
    rec = tmp_path / "two.jsonl"
    child = _play_first_of_two_matches(tmp_path, rec)
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert "interrupted (Ctrl-C)" in child.before and "Traceback" not in child.before
    assert "1 finished match(es); the unfinished one is not kept" in child.before
    assert child.exitstatus == 130
    lines = [json.loads(x) for x in rec.read_text().splitlines()]
    assert [e["event"] for e in lines].count("match_end") == 1

    child = _spawn(["play", "--bots", "random", "--seed", "4"], tmp_path)
    child.expect(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert "you left the game" in child.before and child.exitstatus == 0


def test_a_closed_terminal_keeps_the_finished_matches(tmp_path):
    """A terminal window that closes sends SIGHUP: play stops as on Ctrl-C, keeping the
    finished match, with exit status 128 + 1."""
    import signal
    rec = tmp_path / "two.jsonl"
    child = _play_first_of_two_matches(tmp_path, rec)
    child.kill(signal.SIGHUP)
    child.expect(pexpect.EOF)
    child.close()
    assert "interrupted (SIGHUP)" in child.before and "Traceback" not in child.before
    assert child.exitstatus == 129
    lines = [json.loads(x) for x in rec.read_text().splitlines()]
    assert [e["event"] for e in lines].count("match_end") == 1
    assert not list(tmp_path.glob("*.part"))


def test_ctrl_c_works_even_when_the_parent_ignores_it(tmp_path):
    import signal
    # SIG_IGN is inherited across exec (nohup, some test runners): the game must undo it
    child = pexpect.spawn(EXE, ["play", "--bots", "random", "--seed", "4"], encoding="utf-8",
                          timeout=30, cwd=str(tmp_path), dimensions=(80, 220),
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    child.expect(PROMPT)
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert "interrupted (Ctrl-C)" in child.before and child.exitstatus == 130


def test_hint_learns_the_lay_the_player_made_instead_of_its_own():
    """A card-counting hint notes its suggested lay; the player lays another card, and the
    hint's knowledge follows the move made."""
    from agents import ExpertAgent
    from agents.runner import observation_of
    from arschloch_env.observation import Encoder
    from arschloch_env.rules import make_rules

    game = Game(make_rules("culo", 3), seed=1, auto_pass=True)
    while public_view(game, game.current)["phase"] != "lay":  # round 2's left-over swap
        game.step(game.legal_actions()[0])
    seat, view = game.current, public_view(game, game.current)
    obs = observation_of(game, Encoder(game.R), seat)
    ids = [x["id"] for x in view["legal"]]
    other = next(a for a in ids if a != ExpertAgent().act(obs, view))  # not the hint's lay
    hint = ExpertAgent()
    hint.reset(view["rules"], seat)
    human = HumanAgent(input_fn=lambda prompt: f"#{ids.index(other) + 1}",
                       output=lambda text: None, hint=hint)
    assert human.act(obs, view) == other
    assert [c >> 2 for c in hint.knowledge.laid] == [other - (1 + 4 * game.R)]


class _Hint:
    def __init__(self, answer):
        self.answer = answer

    def act(self, observation, view):
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer(view) if callable(self.answer) else self.answer


@pytest.mark.parametrize("answer, says", [
    (SystemExit(3), "(no hint: SystemExit: 3)"),
    (ValueError("boom"), "(no hint: ValueError: boom)"),
    (lambda view: view["legal"][0]["id"] + 0.9, "is not an integer action id"),
    (lambda view: str(view["legal"][0]["id"]), "is not an integer action id"),
    (lambda view: view["legal"][0]["id"], "hint (h): "),
])
def test_a_broken_hint_is_shown_as_no_hint_and_not_blamed_on_the_player(answer, says):
    """A hint bot's sys.exit() ended the game as the human's failure, and its float was
    shown as the move it rounds down to."""
    from agents.runner import observation_of
    from arschloch_env.observation import Encoder
    from arschloch_env.rules import make_rules

    game = Game(make_rules("culo", 4), seed=1, auto_pass=True)
    view = public_view(game, game.current)
    human = HumanAgent(input_fn=lambda prompt: "#1", output=lambda text: None,
                       hint=_Hint(answer), hint_label="h")
    text = human.describe(view, observation_of(game, Encoder(game.R), game.current))
    assert says in text
    if not callable(answer) or not isinstance(answer(view), int):
        assert "hint (h): (no hint: " in text


def test_play_refuses_a_record_path_it_cannot_write_and_says_why_a_bot_cannot_play(
        tmp_path, capsys):
    from arschloch_env.cli import main
    assert main(["play", "--record", str(tmp_path), "--seed", "1"]) == 2
    assert "--record" in capsys.readouterr().err
    bundle = str(Path(__file__).resolve().parents[1] / "bots" / "ppo_culo_4p")
    assert main(["play", "--rules", "culo", "--players", "5", "--bots", bundle]) == 2
    assert "trained for [4] players, not 5" in capsys.readouterr().err


def test_hint_learns_the_very_card_the_player_laid():
    """The player names a suit the engine would not have picked for that rank: the hint's
    knowledge holds that card, not the engine's choice."""
    from agents import ExpertAgent
    from agents.runner import observation_of
    from arschloch_env.observation import Encoder
    from arschloch_env.rules import make_rules

    rules = make_rules("culo", 3)
    for seed in range(50):
        game = Game(rules, seed=seed, auto_pass=True)
        while public_view(game, game.current)["phase"] != "lay":  # round 2's left-over swap
            game.step(game.legal_actions()[0])
        view = public_view(game, game.current)
        hand = view["hand"]
        pairs = [m for m in view["legal"] if sum(c[0] == m["move"][4] for c in hand) > 1]
        if pairs:
            break
    move = pairs[0]
    default = move["move"].split()[1]  # the card the engine lays for this rank
    card = next(c for c in hand if c[0] == default[0] and c != default)
    hint = ExpertAgent()
    hint.reset(view["rules"], view["seat"])
    human = HumanAgent(input_fn=lambda prompt: card.lower(), output=lambda text: None, hint=hint)
    obs = observation_of(game, Encoder(game.R), view["seat"])
    assert human.choose(view, obs) == (move["id"], [card])
    assert [hint.knowledge.deck.names[c] for c in hint.knowledge.laid] == [card]


def test_play_keeps_the_table_size_of_a_rules_file(tmp_path, capsys):
    """Counting the seats from --bots must not override a rules file that names its table
    size (as tournament does not)."""
    from arschloch_env.cli import main as cli_main

    rules = tmp_path / "five.json"
    rules.write_text(json.dumps({"preset": "culo", "num_players": 5}))
    assert cli_main(["play", "--rules", str(rules), "--bots", "random", "random",
                     "random"]) == 2
    assert "3 bot(s) for the 4 other seats" in capsys.readouterr().err


def test_play_says_a_table_too_big_comes_from_counting_the_bots(capsys):
    from arschloch_env.cli import main as cli_main

    assert cli_main(["play", "--bots", *["random"] * 6]) == 2
    assert ("--bots: 6 bots, one per other seat, and you make a table of 7 players; "
            "num_players: 7 is not allowed" in capsys.readouterr().err)


def test_the_hand_an_only_top_rank_exit_reveals_is_shown():
    """The rules reveal a hand that holds only top-rank cards; the narration names whose and
    which cards, as the engine took them out of play."""
    import random

    from arschloch_env.cards import mask_cards

    labels = ["human", "random", "random", "random"]
    checked = 0
    for seed in range(200):
        game, rng = Game("culo", seed=seed, record=True, auto_pass=True), random.Random(seed)
        hands, shown = {}, 0
        while not game.is_over and checked < 5:
            game.step(rng.choice(game.legal_actions()))
            new, shown = game.events[shown:], len(game.events)
            for i, event in enumerate(new):
                line = narrate(event, 0, labels, hands)
                follow_hands(hands, event)
                if event["event"] != "out" or event["reason"] != "only_top" or any(
                        e["event"] == "round" for e in new[i:]):  # a new deal clears it
                    continue
                s = int(event["player"].split("_")[1])
                cards = " ".join(mask_cards(game.rules.rank_order[-1], game.revealed[s]))
                who = "you are" if s == 0 else f"player_{s} (random) is"
                assert line == (f"  ** {who} out: place {event['place']} (only top-rank cards "
                                f"left, revealed: {cards})")
                checked += 1
    assert checked == 5


def test_the_runner_moves_the_very_cards_typed_as_play_does():
    """Every command steps agents through agents.runner.agent_step, play too: a suit typed
    goes through to the engine (the record shows that card), not the engine's own pick."""
    from agents.runner import agent_step
    from arschloch_env.observation import Encoder

    for typed in ("8h", "8d", "8d 8h"):
        game, view = _lead_view()
        out = []
        human = HumanAgent(input_fn=lambda prompt: typed, output=out.append)
        agent_step(human, game, Encoder(game.R))
        assert sorted(public_view(game, 1)["played"]) == sorted(typed.upper().split())
        assert not any("engine picks" in line for line in out)


def test_act_alone_says_the_typed_suits_do_not_go_with_the_action():
    """A caller that steps the game by action ids cannot move the card typed: say so."""
    game, view = _lead_view()
    out = []
    human = HumanAgent(input_fn=lambda prompt: "8d", output=out.append)
    assert human.act({}, view) == _id(view, "single 8")
    assert ("the engine picks the cards of that rank, not necessarily 8D"
            in " ".join(out[-1].split()))  # wrapped at 80 columns
    human = HumanAgent(input_fn=lambda prompt: "t", output=out.append)
    assert human.act({}, view) == _id(view, "single 10") and "engine picks" not in out[-1]


@pytest.mark.parametrize("typed,ascii_twin", [
    ("８", "8"), ("٨", "8"), ("７", "7"), ("＃８", "#8"), ("８ｈ　８ｄ", "8h 8d"),
    ("ｐａｓｓ", "pass"), ("ｔ", "t"), ("ＱＵＩＴ", "quit"),
])
def test_full_width_and_other_digits_read_as_their_ascii_twins(typed, ascii_twin):
    """'８' (an East Asian input method's) asks which move is meant exactly as '8' does,
    instead of silently taking move 8."""
    _, view = _lead_view()

    def outcome(text):
        try:
            return parse_move(text, view)
        except (MoveError, QuitGame) as exc:
            return type(exc), str(exc)

    assert outcome(typed) == outcome(ascii_twin)


def test_full_width_help_is_help():
    _, view = _lead_view()
    typed, out = iter(["ｈｅｌｐ", "8 8"]), []
    HumanAgent(input_fn=lambda prompt: next(typed), output=out.append).choose(view)
    assert any("Type a move as cards" in line for line in out)


def test_a_long_unknown_word_is_echoed_cut_with_what_is_allowed():
    _, view = _lead_view()
    with pytest.raises(MoveError) as exc:
        parse_move("x" * 5000, view)
    assert str(exc.value) == ("'xxxxxxxxxxxxxxxxx...' is not understood: type cards like '8', "
                              "'8h', 't' or '10' (ten), 'pass', or a move number; 'help' "
                              "explains")
    with pytest.raises(MoveError, match="^'x{20}' is not understood"):
        parse_move("x" * 20, view)  # up to 20 characters are echoed whole


LONG_LABELS = ["human", "bots/ppo_vec_culo_expert", "random", "bots/ppo_vec_culo_multi"]


def test_long_bot_names_are_cut_alike_and_both_tables_align():
    """The seat table and the round summary show the same player column, 14 wide, a longer
    name cut at its start with '...' (bundles of one folder differ at the end); every row's
    title starts in the same column."""
    game, view = _lead_view()
    seats = HumanAgent(labels=LONG_LABELS).describe(view).splitlines()[1:6]
    assert seats == [
        "  seat      player         title           cards points",
        "  player_0  you            -                   8      0",
        "  player_1  ...culo_expert -                   8      0",
        "  player_2  random         -                   8      0",
        "  player_3  ..._culo_multi -                   8      0"]
    places = {"player_0": 2, "player_1": 1, "player_2": 4, "player_3": 3}
    titles = ["Vice-President", "President", "Arschloch", "Vice-Arschloch"]
    end = {"event": "round_end", "round": 1, "places": places,
           "titles": {p: titles[i] for i, p in enumerate(places)},
           "points": {p: 4 - place for p, place in places.items()},
           "totals": {p: 4 - place for p, place in places.items()}}
    assert narrate(end, 0, LONG_LABELS).splitlines()[2:] == [
        "  1. player_1  ...culo_expert President       +3 point(s), total 3",
        "  2. player_0  you            Vice-President  +2 point(s), total 2",
        "  3. player_3  ..._culo_multi Vice-Arschloch  +1 point(s), total 1",
        "  4. player_2  random         Arschloch       +0 point(s), total 0"]


@pytest.mark.parametrize("preset,overrides,president_wins", [
    ("culo", {"rounds": 1}, True), ("culo-points", {"target_points": 2}, False)])
def test_totals_say_when_they_do_not_decide_the_winner(preset, overrides, president_wins):
    """Under winner: president (the culo presets) the totals are shown with a note that the
    President of the last round wins; under points they decide, and no note is shown."""
    from agents.human import PRESIDENT_WINS, play_terminal
    from agents.random_agent import RandomAgent
    from arschloch_env.rules import make_rules

    rules = make_rules(preset, 4, **overrides)
    screens, out = [], []
    human = HumanAgent(input_fn=lambda prompt: "#1", output=screens.append)
    play_terminal(rules, [RandomAgent() for _ in range(3)], ["human"] + ["random"] * 3, 0, 3, 0,
                  human, output=out.append)
    summary = next(line for line in out if "round 1 over:" in line)
    end = next(line for line in out if "match over:" in line)
    assert (f"({PRESIDENT_WINS})" in screens[0]) is president_wins
    assert summary.endswith(f"\n  ({PRESIDENT_WINS})") is president_wins
    assert end.endswith(", the President of the last round") is president_wins


@pytest.mark.parametrize("preset,players", [("culo-52", 6), ("tavern", 5), ("culo", 3)])
def test_every_line_of_a_match_fits_80_columns(preset, players):
    """Screens, help, refusals and narration (a bundle's long name included) stay within 80
    columns: a longer line would break words on an 80-column terminal."""
    import itertools

    from agents.human import play_terminal
    from agents.random_agent import RandomAgent
    from arschloch_env.rules import make_rules

    typed = itertools.cycle(["help", "xyz", "#99", "#1"])
    out = []
    human = HumanAgent(input_fn=lambda prompt: next(typed), output=out.append,
                       labels=["human"] + ["bots/ppo_vec_culo_multi"] * (players - 1))
    play_terminal(make_rules(preset, players, rounds=2), [RandomAgent()] * (players - 1),
                  human.labels, 0, 7, 0, human, output=out.append)
    lines = "\n".join(out).splitlines()
    assert any("match over" in line for line in lines)
    assert [line for line in lines if len(line) > 80] == []


def test_moves_read_from_a_pipe_are_echoed_after_the_prompt():
    """Moves piped in are not echoed by a terminal: the game shows each line it read after
    its prompt, so the transcript says what was typed and the next line does not run on."""
    import os
    import subprocess

    res = subprocess.run([sys.executable, "-m", "arschloch_env.cli", "play", "--rules", "culo",
                          "--players", "3", "--bots", "greedy", "--seed", "1"],
                         input="zz\n#1\n", capture_output=True, text=True, timeout=60, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"})
    assert res.returncode == 0, res.stderr
    prompts = [line for line in res.stdout.splitlines() if line.startswith(PROMPT)]
    assert prompts[:2] == [PROMPT + "zz", PROMPT + "#1"], prompts
    assert res.stdout.rstrip().endswith("you left the game")


@pytest.mark.parametrize("args,says", [
    (["--set", "rounds=1", "--matches", "2"],
     ["4 players, 1 round a match; ranks from low to high: 7 8 9 10 J Q K A.",
      "== match 1 of 2 =="]),
    (["--rules", "culo-ten"], ["5 rounds a match; ranks from low to high: 7 8 9 J Q K A 10."]),
    (["--rules", "culo-points"], ["a match ends in the round someone reaches"]),
])
def test_the_greeting_says_how_long_a_match_is_and_how_the_ranks_go(args, says):
    import subprocess
    res = subprocess.run([EXE, "play", "--bots", "random", "--seed", "1", *args],
                         input="quit\n", capture_output=True, text=True, timeout=60)
    text = " ".join(res.stdout.split())
    assert res.returncode == 0 and all(s in text for s in says), res.stdout


@pytest.mark.parametrize("preset,n", [("culo", 4), ("tavern", 5), ("culo-52", 6)])
def test_a_trick_won_by_a_player_who_went_out_names_who_leads_next(preset, n):
    """The rules pass the lead to the next player clockwise still holding cards; the
    narration says who that is, and it is who plays next."""
    from agents.runner import play_match
    from arschloch_env.rules import make_rules
    labels = ["human"] + ["greedy"] * (n - 1)
    named = 0
    for seed in range(6):
        events = play_match(make_rules(preset, n), ["greedy"] * n, seed=seed,
                            record=True).events
        hands: dict = {}
        for i, event in enumerate(events):
            line = narrate(event, 0, labels, hands, "points")
            follow_hands(hands, event)
            found = re.search(r"who (?:is|are) out: (you|player_(\d))", line or "")
            if found is None:
                continue
            following = next(e for e in events[i + 1:] if e["event"] in ("play", "round_end"))
            leader = "player_0" if found.group(1) == "you" else found.group(1)
            assert following.get("player") == leader, (line, following)
            named += 1
    assert named > 0
