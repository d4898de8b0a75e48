"""The rules configuration, the card notation and the action codec (INTERFACES.md)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from arschloch_env.actions import ActionCodec, ActionError
from arschloch_env.cards import CardError, cards_to_hand, hand_cards, parse_card
from arschloch_env.rules import (
    FIELD_NAMES, PRESETS, Rules, RulesError, make_rules, parse_override,
)

INTERFACE_FIELDS = {
    "preset", "num_players", "rank_order", "deal", "leftover_swap", "first_leader",
    "no_finish_on_top", "top_card_ends_trick", "exchange_cards", "exchange_cards_3p",
    "vice_exchange_cards", "rounds", "target_points", "winner",
}
SKAT = ["7", "8", "9", "T", "J", "Q", "K", "A"]
ALL13 = ["2", "3", "4", "5", "6", "7", "8", "9", "T", "J", "Q", "K", "A"]
TAVERN = ["3", "4", "5", "6", "7", "8", "9", "T", "J", "Q", "K", "A", "2"]


# -- presets (RULES.md section 4) ---------------------------------------------------------------

CULO = dict(preset="culo", num_players=4, rank_order=SKAT, deal="equal", leftover_swap=True,
            first_leader="lowest_club", no_finish_on_top=True, top_card_ends_trick=True,
            exchange_cards=2, exchange_cards_3p=1, vice_exchange_cards=1, rounds=5,
            target_points=None, winner="president")
EXPECTED = {
    "culo": CULO,
    "culo-points": {**CULO, "preset": "culo-points", "rounds": None, "target_points": 15,
                    "winner": "points"},
    "culo-ten": {**CULO, "preset": "culo-ten",
                 "rank_order": ["7", "8", "9", "J", "Q", "K", "A", "T"]},
    "culo-52": {**CULO, "preset": "culo-52", "rank_order": ALL13},
    "tavern": dict(preset="tavern", num_players=4, rank_order=TAVERN, deal="all",
                   leftover_swap=False, first_leader="rotate", no_finish_on_top=False,
                   top_card_ends_trick=False, exchange_cards=2, exchange_cards_3p=2,
                   vice_exchange_cards=1, rounds=5, target_points=None, winner="points"),
}


def test_preset_names():
    assert set(PRESETS) == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_preset_fields_exactly(name):
    assert Rules.from_preset(name).to_dict() == EXPECTED[name]


def test_json_form_has_exactly_the_interface_fields():
    d = make_rules("tavern", 5).to_dict()
    assert set(d) == INTERFACE_FIELDS == set(FIELD_NAMES)
    assert isinstance(d["rank_order"], list)
    assert json.loads(json.dumps(d)) == d


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("n", [3, 4, 5, 6])
def test_json_round_trip(name, n):
    r = make_rules(name, n)
    assert Rules.from_dict(json.loads(r.to_json())) == r
    assert make_rules(r.to_dict()) == r


def test_label_names_the_preset_and_every_field_that_differs_from_it():
    assert make_rules("culo", 4).label() == "culo"
    assert make_rules("tavern", 5, no_finish_on_top=True).label() == \
        "tavern (no_finish_on_top=true)"
    r = make_rules("culo", 3, rounds=1, rank_order=["8", "9", "T", "J", "Q", "K", "A", "7"])
    assert r.overrides() == {"rank_order": ["8", "9", "T", "J", "Q", "K", "A", "7"],
                             "rounds": 1}
    assert r.label() == 'culo (rank_order=["8", "9", "T", "J", "Q", "K", "A", "7"], rounds=1)'
    assert r.label(match_end=False) == 'culo (rank_order=["8", "9", "T", "J", "Q", "K", "A", "7"])'
    points = make_rules("culo", 4, target_points=20)
    assert points.label() == "culo (rounds=null, target_points=20)"
    assert points.label(match_end=False) == "culo"


def test_derived_facts():
    culo, ten, tav = make_rules("culo"), make_rules("culo-ten"), make_rules("tavern")
    assert culo.deck_size == 32 and tav.deck_size == 52 and make_rules("culo-52").deck_size == 52
    assert culo.rank_order[culo.top_rank] == "A"
    assert ten.rank_order[ten.top_rank] == "T"          # "El 10 manda": the ten is the top rank
    assert tav.rank_order[tav.top_rank] == "2"
    assert culo.lowest_club == (0, 0)                   # 7C
    assert tav.rank_order[tav.lowest_club[0]] == "3"    # 3C in the tavern order


# -- dealing sizes -----------------------------------------------------------------------------

@pytest.mark.parametrize("preset,n,sizes,left", [
    ("culo", 3, (10, 10, 10), 2), ("culo", 4, (8,) * 4, 0), ("culo", 5, (6,) * 5, 2),
    ("culo", 6, (5,) * 6, 2),
    ("culo-52", 3, (17,) * 3, 1), ("culo-52", 4, (13,) * 4, 0), ("culo-52", 5, (10,) * 5, 2),
    ("culo-52", 6, (8,) * 6, 4),
    ("tavern", 3, (18, 17, 17), 0), ("tavern", 4, (13,) * 4, 0),
    ("tavern", 5, (11, 11, 10, 10, 10), 0), ("tavern", 6, (9, 9, 9, 9, 8, 8), 0),
])
def test_hand_sizes(preset, n, sizes, left):
    r = make_rules(preset, n)
    assert r.hand_sizes == sizes
    assert r.num_leftover == left


# -- titles and exchange counts ----------------------------------------------------------------

@pytest.mark.parametrize("n,titles", [
    (3, ("President", "Citizen", "Arschloch")),
    (4, ("President", "Vice-President", "Vice-Arschloch", "Arschloch")),
    (5, ("President", "Vice-President", "Citizen", "Vice-Arschloch", "Arschloch")),
    (6, ("President", "Vice-President", "Citizen", "Citizen", "Vice-Arschloch", "Arschloch")),
])
def test_titles_per_table_size(n, titles):
    assert make_rules("culo", n).titles_for() == titles


@pytest.mark.parametrize("preset,n,pres,vice", [
    ("culo", 3, 1, 0), ("culo", 4, 2, 1), ("culo", 5, 2, 1), ("culo", 6, 2, 1),
    ("culo-points", 3, 1, 0), ("culo-52", 3, 1, 0),
    ("tavern", 3, 2, 0), ("tavern", 4, 2, 1), ("tavern", 6, 2, 1),
])
def test_exchange_counts(preset, n, pres, vice):
    r = make_rules(preset, n)
    assert (r.president_exchange, r.vice_exchange) == (pres, vice)


# -- overrides ---------------------------------------------------------------------------------

def test_override_any_field():
    r = make_rules("tavern", 4, no_finish_on_top=True)
    assert r.no_finish_on_top and r.preset == "tavern" and r.deal == "all"
    r = make_rules("culo", 5, exchange_cards=3, vice_exchange_cards=2, rounds=9)
    assert (r.exchange_cards, r.vice_exchange_cards, r.rounds) == (3, 2, 9)


def test_numpy_scalars_are_taken_as_the_values_they_hold():
    # e.g. a table size from np.arange; the rules keep plain values, so they stay JSON
    r = make_rules("culo", np.int64(5), leftover_swap=np.bool_(False), rounds=np.int32(3))
    assert (r.num_players, r.leftover_swap, r.rounds) == (5, False, 3)
    assert [type(v) for v in (r.num_players, r.leftover_swap, r.rounds)] == [int, bool, int]
    assert json.loads(json.dumps(r.to_dict())) == r.to_dict()
    assert make_rules(r, np.int64(4)).num_players == 4
    with pytest.raises(RulesError, match="num_players: 7"):
        make_rules("culo", np.int64(7))


def test_setting_target_points_clears_rounds_and_back():
    r = make_rules("tavern", 4, target_points=15)
    assert r.rounds is None and r.target_points == 15
    r = make_rules("culo-points", 4, rounds=3)
    assert r.rounds == 3 and r.target_points is None
    assert r.replace(target_points=7).rounds is None


def test_setting_the_unset_match_end_to_null_changes_nothing():
    """Null for the field that is null already is no change: it does not clear the other and
    leave the match with no end."""
    assert make_rules("culo", target_points=None).rounds == 5
    assert make_rules("culo-points", rounds=None).target_points == 15
    with pytest.raises(RulesError, match="exactly one of them must be set"):
        make_rules("culo", rounds=None)


def test_set_reads_an_integer_only_as_plain_digits():
    """int() reads more than a user means: 1_0 as 10, an Arabic-Indic digit as 3."""
    assert parse_override("rounds=+3") == ("rounds", 3)
    assert parse_override("rounds=1_0") == ("rounds", "1_0")
    assert parse_override("rounds=\u0663") == ("rounds", "\u0663")
    with pytest.raises(RulesError, match="rounds: '1_0' is not allowed"):
        make_rules("culo", rounds=parse_override("rounds=1_0")[1])


def test_a_rules_dict_or_file_takes_the_other_match_end_too(tmp_path):
    """The JSON form names both fields, one of them null; overriding the other is as valid
    as on the preset's name."""
    culo = make_rules("culo", 4)
    path = tmp_path / "culo.json"
    path.write_text(culo.to_json())
    for rules in (culo.to_dict(), str(path)):
        r = make_rules(rules, target_points=10)
        assert (r.rounds, r.target_points) == (None, 10)
        assert make_rules(r.to_dict(), rounds=3).target_points is None


def test_a_rules_file_that_cannot_be_read_is_a_clean_error(tmp_path):
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe")
    with pytest.raises(RulesError, match="cannot be read as UTF-8 text"):
        make_rules(str(tmp_path / "binary.json"))
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(RulesError, match="is a directory"):
        make_rules(str(tmp_path / "dir.json"))
    # a game record given for rules: named as such, not as bad YAML
    (tmp_path / "games.jsonl").write_text('{"event": "match"}\n{"event": "round"}\n')
    with pytest.raises(RulesError, match="games.jsonl' is JSON Lines, as a game record is; a "
                                         "rules file is one mapping"):
        make_rules(str(tmp_path / "games.jsonl"))
    (tmp_path / "broken.json").write_text('{"preset": ')
    with pytest.raises(RulesError, match="broken.json' cannot be parsed as JSON: "):
        make_rules(str(tmp_path / "broken.json"))
    (tmp_path / "broken.yaml").write_text("preset: [culo\n")
    with pytest.raises(RulesError, match="broken.yaml' cannot be parsed as YAML: "):
        make_rules(str(tmp_path / "broken.yaml"))
    (tmp_path / "int_key.yaml").write_text("preset: culo\n1: 2\n")
    with pytest.raises(RulesError, match="unknown rules field.s. 1; allowed: preset"):
        make_rules(str(tmp_path / "int_key.yaml"))
    # a field's error names the file it came from (after the field, which callers read)
    bogus = tmp_path / "bogus.yaml"
    bogus.write_text("preset: culo\nbogus: 1\n")
    with pytest.raises(RulesError, match=rf"^unknown rules field.s. bogus.*\(rules file "
                                         rf"'{bogus}'\)$"):
        make_rules(str(bogus))
    bogus.write_text("preset: culo\nrounds: 0\n")
    with pytest.raises(RulesError, match=rf"^rounds: .*\(rules file '{bogus}'\)$"):
        make_rules(str(bogus), 4)
    # ... and only its own: a bad override beside a good file is the override's
    bogus.write_text("preset: tavern\nno_finish_on_top: true\n")
    with pytest.raises(RulesError, match=r"^first_leader: 'bogus' is not allowed; allowed: "
                                         r"lowest_club, rotate$"):
        make_rules(str(bogus), 4, first_leader="bogus")
    # a file valid only with the overrides is taken with them
    bogus.write_text("preset: culo\nrounds: 0\n")
    assert make_rules(str(bogus), 4, rounds=3).rounds == 3
    # beside a bad file, a bad override is still the override's
    with pytest.raises(RulesError, match=r"^first_leader: 'bogus' is not allowed; allowed: "
                                         r"lowest_club, rotate$"):
        make_rules(str(bogus), 4, first_leader="bogus")


def test_a_numpy_seed_is_recorded_as_a_json_int():
    from arschloch_env.engine import Game

    g = Game("culo", num_players=4, seed=np.int64(5), record=True)
    assert json.loads(json.dumps(g.events[0]))["seed"] == 5


def test_replace_keeps_other_fields():
    r = make_rules("culo-ten", 3)
    r2 = r.replace(leftover_swap=False)
    assert r2.leftover_swap is False
    assert {k: v for k, v in r2.to_dict().items() if k != "leftover_swap"} == {
        k: v for k, v in r.to_dict().items() if k != "leftover_swap"}


def test_rules_from_files(tmp_path):
    y = tmp_path / "r.yaml"
    y.write_text("preset: tavern\nnum_players: 5\nrounds: 2\n")
    assert make_rules(str(y)).to_dict() == {**EXPECTED["tavern"], "num_players": 5, "rounds": 2}
    j = tmp_path / "r.json"
    j.write_text(json.dumps(make_rules("culo-52", 6).to_dict()))
    assert make_rules(str(j)) == make_rules("culo-52", 6)
    # the preset is where the other fields come from: naming another one is an error, as it
    # is on a preset's name, not a silent change of base
    for rules in (str(y), make_rules(str(y)).to_dict(), "tavern"):
        with pytest.raises(RulesError, match="preset: given as 'tavern' and as 'culo'"):
            make_rules(rules, preset="culo")
        assert make_rules(rules, preset="tavern").preset == "tavern"
    bad = tmp_path / "bad.yaml"
    bad.write_text("- just\n- a list\n")
    with pytest.raises(RulesError, match="mapping"):
        make_rules(str(bad))


# -- rejected configurations: the error names the field and the allowed values -----------------

def test_unknown_preset():
    with pytest.raises(RulesError) as e:
        make_rules("poker")
    msg = str(e.value)
    assert "poker" in msg and all(p in msg for p in PRESETS)


def test_unknown_field():
    with pytest.raises(RulesError) as e:
        make_rules("culo", 4, jokers=True)
    assert "jokers" in str(e.value) and "no_finish_on_top" in str(e.value)


@pytest.mark.parametrize("n", [0, 1, 2, 7, 10, "4", 4.0, True])
def test_player_count_out_of_range(n):
    with pytest.raises(RulesError) as e:
        make_rules("culo", n)
    assert "num_players" in str(e.value) and "3 to 6" in str(e.value)


@pytest.mark.parametrize("field,value,words", [
    ("deal", "some", ["deal", "equal", "all"]),
    ("first_leader", "dealer", ["first_leader", "lowest_club", "rotate"]),
    ("winner", "everyone", ["winner", "president", "points"]),
    ("leftover_swap", "yes", ["leftover_swap", "true", "false"]),
    ("no_finish_on_top", 1, ["no_finish_on_top", "true", "false"]),
    ("top_card_ends_trick", None, ["top_card_ends_trick"]),
    ("exchange_cards", 4, ["exchange_cards", "0..3"]),
    ("exchange_cards_3p", -1, ["exchange_cards_3p", "0..3"]),
    ("vice_exchange_cards", 3, ["vice_exchange_cards", "exchange_cards"]),
    ("rounds", 0, ["rounds", "1..1000"]),
    ("rounds", 1001, ["rounds", "1..1000"]),
    ("target_points", 0, ["target_points", "1..1000"]),
    ("rank_order", ("7", "8", "9"), ["rank_order", "permutation"]),
    ("rank_order", tuple("7899JQKA"), ["rank_order", "permutation"]),
])
def test_value_out_of_range(field, value, words):
    with pytest.raises(RulesError) as e:
        make_rules("culo", 4, **{field: value})
    for w in words:
        assert w in str(e.value)


def test_exactly_one_of_rounds_and_target_points():
    with pytest.raises(RulesError, match="exactly one"):
        make_rules("culo", 4, rounds=None, target_points=None)
    with pytest.raises(RulesError, match="exactly one"):
        make_rules("culo", 4, rounds=3, target_points=15)


def test_rank_order_permutations_accepted():
    assert make_rules("culo", 4, rank_order=list("789JQKAT")).rank_order[-1] == "T"
    assert len(make_rules("culo", 4, rank_order=tuple(TAVERN)).rank_order) == 13


def test_the_rules_tables_rank_order_round_trips(tmp_path):
    """`arschloch rules` prints the order as one word (789JQKAT): --set and a rules file
    take it back."""
    from arschloch_env.rules import parse_override
    assert parse_override("rank_order=789jqkat") == ("rank_order", tuple("789JQKAT"))
    path = tmp_path / "r.yaml"
    path.write_text("preset: culo\nrank_order: 789JQKAT\n")
    assert make_rules(str(path)).rank_order == tuple("789JQKAT")


def test_the_json_form_constructs_rules_directly():
    """Rules(**rules.to_dict()) is the same rules: the JSON form's rank order is a list."""
    for preset in PRESETS:
        rules = make_rules(preset, 5)
        again = Rules(**rules.to_dict())
        assert again == rules and isinstance(again.rank_order, tuple)
        assert hash(again) == hash(rules)


def test_not_a_mapping():
    with pytest.raises(RulesError, match="mapping"):
        Rules.from_dict(["culo"])


def test_rules_of_another_type_list_the_presets():
    with pytest.raises(RulesError) as e:
        make_rules(123)
    msg = str(e.value)
    assert msg.startswith("rules:") and "int" in msg and all(p in msg for p in PRESETS)


# -- --set FIELD=VALUE ---------------------------------------------------------------------------

@pytest.mark.parametrize("text,pair", [
    ("rounds=1", ("rounds", 1)),
    ("no_finish_on_top=false", ("no_finish_on_top", False)),
    ("leftover_swap=true", ("leftover_swap", True)),
    ("target_points=null", ("target_points", None)),
    ("deal=all", ("deal", "all")),
    ("rank_order=7,8,9,J,Q,K,A,T", ("rank_order", tuple("789JQKAT"))),
    (" num_players = 5 ", ("num_players", 5)),
])
def test_parse_override(text, pair):
    assert parse_override(text) == pair


def test_parse_override_errors():
    with pytest.raises(RulesError, match="FIELD=VALUE"):
        parse_override("rounds")
    with pytest.raises(RulesError) as e:
        parse_override("jokers=2")
    assert "jokers" in str(e.value) and "rounds" in str(e.value)


# -- card notation ---------------------------------------------------------------------------------

def test_card_notation():
    idx = make_rules("culo").rank_index
    assert parse_card("7C", idx) == (0, 0)
    assert parse_card("TH", idx) == (3, 2)
    assert parse_card("AD", idx) == (7, 3)
    hand = cards_to_hand(["AS", "7D", "TH", "7C"], idx)
    assert hand_cards(hand, make_rules("culo").rank_order) == ["7C", "7D", "TH", "AS"]
    # typed by a person: either case
    assert parse_card("th", idx) == parse_card("tH", idx) == (3, 2)
    assert cards_to_hand(["as", "7d", "th", "7c"], idx) == hand


@pytest.mark.parametrize("text,words", [
    ("7", "two characters"), ("2C", "rank '2' is not in this deck"), ("7X", "suit 'X'"),
    ("10H", "two characters"), (7, "two characters"),
])
def test_bad_cards(text, words):
    with pytest.raises(CardError) as e:
        parse_card(text, make_rules("culo").rank_index)
    assert words in str(e.value)


def test_duplicate_card():
    with pytest.raises(CardError, match="twice"):
        cards_to_hand(["7C", "7C"], make_rules("culo").rank_index)


# -- action encoding -----------------------------------------------------------------------------

def test_action_space_sizes():
    assert ActionCodec(tuple(SKAT)).size == 49
    assert ActionCodec(tuple(TAVERN)).size == 79


def test_action_ids_follow_the_interface():
    R = 8
    c = ActionCodec(tuple(SKAT))
    assert c.decode(0).kind == "pass"
    for r in range(R):
        for k in range(1, 5):
            a = 1 + 4 * r + (k - 1)
            assert c.play(r, k) == a
            m = c.decode(a)
            assert (m.kind, m.rank, m.count) == ("play", r, k)
        assert c.give(r) == 1 + 4 * R + r and c.decode(1 + 4 * R + r).kind == "give"
        assert c.take(r) == 1 + 5 * R + r and c.decode(1 + 5 * R + r).kind == "take"


@pytest.mark.parametrize("order,action,words", [
    (SKAT, 0, "pass"),
    (SKAT, 1 + 4 * 2 + 1, "pair of 9s"),
    (SKAT, 1 + 4 * 7, "single ace"),
    (SKAT, 1 + 4 * 3 + 2, "triple of 10s"),
    (SKAT, 1 + 4 * 4 + 3, "quad of jacks"),
    (SKAT, 1 + 4 * 8 + 6, "give a king"),
    (SKAT, 1 + 4 * 8 + 7, "give an ace"),
    (SKAT, 1 + 5 * 8 + 1, "take an 8"),
    (TAVERN, 1 + 4 * 12 + 1, "pair of 2s"),
])
def test_action_words(order, action, words):
    assert ActionCodec(tuple(order)).describe(action) == words


@pytest.mark.parametrize("bad,words", [
    (-1, "out of range"), (49, "out of range"), (1.5, "not an integer"), ("3", "not an integer"),
    (True, "not an integer"), (None, "not an integer"),
])
def test_bad_action_ids(bad, words):
    with pytest.raises(ActionError) as e:
        ActionCodec(tuple(SKAT)).check(bad)
    assert words in str(e.value) and "0..48" in str(e.value)


def test_numpy_action_ids_accepted():
    c = ActionCodec(tuple(SKAT))
    assert c.check(np.int64(5)) == 5
    assert c.check(np.array(7)) == 7
