"""The bots and the human-play path beyond test_bots.py: legality under odd rule combinations, sound card
counting, agent specs that fail cleanly, the move reader, and the endgame search against a
brute force over the engine itself."""

from __future__ import annotations

import random
import re
import sys

import numpy as np
import pytest

import agents.expert as expert
from agents.base import AgentSpecError, make_agent
from agents.endgame import Solver
from agents.expert import ExpertAgent
from agents.greedy import GreedyAgent
from agents.human import HumanAgent, MoveError, parse_move
from agents.knowledge import Knowledge
from agents.mc import MCAgent, _world_template, build_world
from agents.random_agent import RandomAgent
from agents.runner import observation_of, play_match
from arschloch_env.cards import ALL_RANKS, SKAT_RANKS
from arschloch_env.cli import main as cli_main
from arschloch_env.engine import Game
from arschloch_env.observation import Encoder
from arschloch_env.rules import PRESETS, make_rules
from arschloch_env.view import public_view


# -- odd rule combinations --------------------------------------------------------------------

def odd_rules(rng: random.Random):
    """A preset at a random table size with random overrides of every field."""
    overrides = dict(
        deal=rng.choice(["equal", "all"]), leftover_swap=rng.random() < 0.7,
        first_leader=rng.choice(["lowest_club", "rotate"]),
        no_finish_on_top=rng.random() < 0.5, top_card_ends_trick=rng.random() < 0.5)
    give = rng.randint(0, 3)
    overrides.update(exchange_cards=give, vice_exchange_cards=rng.randint(0, give),
                     exchange_cards_3p=rng.randint(0, 3))
    if rng.random() < 0.4:
        ranks = list(rng.choice([SKAT_RANKS, ALL_RANKS]))
        rng.shuffle(ranks)
        overrides["rank_order"] = tuple(ranks)
    if rng.random() < 0.5:
        overrides["target_points"] = rng.randint(1, 6)
    else:
        overrides["rounds"] = rng.randint(2, 3)
    return make_rules(rng.choice(sorted(PRESETS)), num_players=rng.randint(3, 6), **overrides)


def test_bots_play_legal_matches_under_odd_rule_combinations():
    rng = random.Random(11)
    for _ in range(40):
        rules = odd_rules(rng)
        makers = [RandomAgent, GreedyAgent, ExpertAgent, lambda: MCAgent(budget=4, min_worlds=1)]
        seats = [rng.choice(makers)() for _ in range(rules.num_players)]
        game = play_match(rules, seats, seed=rng.randrange(10 ** 6))
        assert game.is_over


def test_expert_threat_variants_play_legal_matches_and_decide_otherwise(monkeypatch):
    """The threat heuristics are tunables, off in the default expert: under odd rules each
    variant plays legal matches, and its threat branches choose other moves than the default
    would in the same positions."""
    decide = expert.decide
    differed = []

    def comparing(c):
        chosen = decide(c)
        params, c.p = c.p, expert.DEFAULT
        differed.append(decide(c) != chosen)
        c.p = params
        return chosen

    monkeypatch.setattr(expert, "decide", comparing)
    rng = random.Random(5)
    variants = [dict(threat_lead=True), dict(threat_follow="win"),
                dict(threat_follow="any", threat_near=2), dict(threat_lead=True, threat_size=3)]
    for _ in range(60):
        rules = odd_rules(rng)
        seats = [ExpertAgent(**rng.choice(variants)) if rng.random() < 0.75 else GreedyAgent()
                 for _ in range(rules.num_players)]
        assert play_match(rules, seats, seed=rng.randrange(10 ** 6)).is_over
    assert 0 < sum(differed) < len(differed) / 4


def _true_hidden_cards(g: Game, k: Knowledge):
    ids = lambda masks: [4 * r + s for r, m in enumerate(masks) for s in range(4) if m >> s & 1]
    hands = {o: ids(g.hands[o]) for o in range(g.n) if o != k.seat and g.sizes[o]}
    return hands, [c for c in ids(g.face_down) if c not in k.laid_known]


def knowledge_of_every_seat(rules) -> list[Knowledge]:
    """A :class:`Knowledge` per seat, reset for a new match under ``rules``."""
    knowledge = [Knowledge() for _ in range(rules.num_players)]
    for s, k in enumerate(knowledge):
        k.reset(rules.to_dict(), s)
    return knowledge


def test_card_counting_is_sound_and_worlds_match_the_game_under_odd_rules():
    rng = random.Random(5)
    for _ in range(15):
        rules = odd_rules(rng)
        seed = rng.randrange(10 ** 6)
        g = Game(rules, seed=seed, auto_pass=True)
        enc = Encoder(g.R)
        sample_rng = np.random.default_rng(seed)
        bots = [ExpertAgent() if s % 2 else GreedyAgent() for s in range(g.n)]
        knowledge = knowledge_of_every_seat(rules)
        for s in range(g.n):
            bots[s].reset(rules.to_dict(), s, seed)
        while not g.is_over:
            s = g.current
            obs, view = observation_of(g, enc, s), public_view(g, s)
            k = knowledge[s].update(view)
            assert k.consistent(*_true_hidden_cards(g, k)) == []
            hands, face_down = k.sample(sample_rng)
            assert k.consistent(hands, face_down) == []
            world = build_world(_world_template(rules), k, hands, face_down)
            assert (world.phase, world.current, world.to_give, world.give_to) == (
                g.phase, g.current, g.to_give, g.give_to)
            assert world.tasks == g.tasks and world.legal_actions() == g.legal_actions()
            action = bots[s].act(obs, view)
            k.note_action(action)
            g.step(action)


@pytest.mark.parametrize("preset,n", [("culo", 5), ("culo", 6), ("culo-52", 5), ("culo-52", 6)])
def test_card_counting_stays_sound_when_every_seat_reads_every_view(preset, n):
    """Knowledge read by a seat between its own turns too (a bot that watches every move): the
    first swapper's left-over cards are only known as such by the seat that swaps first, not
    by one that saw the left-over cards face up while another seat took. (Two seats swap at 5
    and 6 players; at 4 culo leaves no card over, at 3 the second card stays aside.)"""
    rng = random.Random(n)
    for match in range(12):
        rules = make_rules(preset, num_players=n, rounds=3)
        g = Game(rules, seed=100 * n + match, auto_pass=True)
        knowledge = knowledge_of_every_seat(rules)
        while not g.is_over:
            for s in range(n):
                k = knowledge[s].update(public_view(g, s))
                assert k.consistent(*_true_hidden_cards(g, k)) == [], (match, s, g.phase)
            actions = g.legal_actions()
            action = actions[rng.randrange(len(actions))]
            knowledge[g.current].note_action(action)
            g.step(action)


@pytest.mark.parametrize("preset,n", [("culo", 5), ("culo", 6), ("culo-52", 6)])
def test_sampling_finds_a_deal_where_every_uniform_deal_fails(preset, n):
    """``tries=0``: only the deals that place the restricted left-over cards first. Where such
    a card lies decides whether the rest can be dealt (an ace that must be face down, or the
    only card of a seat that may not hold aces alone), and those deals still find one."""
    rng = random.Random(n)
    sample_rng = np.random.default_rng(n)
    positions = 0
    for match in range(80):
        rules = make_rules(preset, num_players=n, rounds=3)
        g = Game(rules, seed=match, auto_pass=True)
        knowledge = knowledge_of_every_seat(rules)
        while not g.is_over:
            k = knowledge[g.current].update(public_view(g, g.current))
            if k.restricted:
                positions += 1
                for _ in range(4):
                    assert k.consistent(*k.sample(sample_rng, tries=0)) == [], (match, g.phase)
            actions = g.legal_actions()
            action = actions[rng.randrange(len(actions))]
            k.note_action(action)
            g.step(action)
    assert positions > 300


# -- agent specs ------------------------------------------------------------------------------

@pytest.mark.parametrize("spec", [":GreedyAgent", ".greedy:GreedyAgent", "agents.:GreedyAgent",
                                  "agents.greedy:", "agents.greedy:Greedy Agent",
                                  "agents:greedy:GreedyAgent"])
def test_malformed_class_specs_name_the_expected_form(spec):
    with pytest.raises(AgentSpecError, match="package.module:ClassName"):
        make_agent(spec)


def test_a_class_spec_never_calls_what_is_not_a_class(monkeypatch):
    """os:system would have run a shell (and os:abort ended the process) before the spec
    was found not to name an agent."""
    import os
    calls = []
    monkeypatch.setattr(os, "system", lambda *a: calls.append(a) or 0)
    with pytest.raises(AgentSpecError, match="'system' of module 'os' is a function, not a "
                                             "class"):
        make_agent("os:system")
    assert calls == []


@pytest.mark.parametrize("body,why", [("def broken(:\n", "SyntaxError"),
                                      ("raise RuntimeError('no config')\n", "no config")])
def test_user_module_that_fails_to_load_is_a_spec_error(tmp_path, monkeypatch, body, why):
    (tmp_path / "audit_user_bot.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "audit_user_bot", raising=False)
    with pytest.raises(AgentSpecError, match=f"audit_user_bot.*{why}"):
        make_agent("audit_user_bot:Bot")


@pytest.mark.parametrize("spec", ["", "   "])
def test_empty_spec_says_it_is_empty(spec):
    with pytest.raises(AgentSpecError, match="empty; allowed: a built-in name"):
        make_agent(spec)


def test_manifest_file_instead_of_bundle_directory_is_explained(tmp_path):
    manifest = tmp_path / "manifest.json"
    manifest.write_text("{}")
    with pytest.raises(AgentSpecError, match="give the bundle directory"):
        make_agent(str(manifest))


def test_an_agent_maker_loads_a_bundle_once_and_makes_other_specs_anew(monkeypatch):
    """Seats of many matches (ppo-vec's vec.mix, the SB3 league, the vector env's opponents)
    take their agents from a maker: a bundle is loaded once, each seat gets its own object."""
    import agents.bundle
    from agents.base import agent_maker
    from conftest import calls_of
    loads = calls_of(monkeypatch, agents.bundle, "load_bundle")
    make = agent_maker("bots/ppo_vec_culo_multi")
    seats = [make() for _ in range(5)]
    assert len(loads) == 1
    assert len({id(a) for a in seats}) == 5
    assert all(a.session is seats[0].session for a in seats)
    make = agent_maker("expert")
    first, second = make(), make()
    assert isinstance(first, ExpertAgent) and first is not second
    with pytest.raises(AgentSpecError, match="allowed: a built-in name"):
        agent_maker("no-such-bot")


def test_command_line_reports_a_malformed_spec_without_a_traceback(capsys):
    code = cli_main(["simulate", "--rules", "culo", "--players", "3", "--matches", "1",
                     "--agents", ":GreedyAgent", "random", "random"])
    err = capsys.readouterr().err
    assert code != 0
    assert "package.module:ClassName" in err and "Traceback" not in err


MOVE_LINE = re.compile(r"^\s+(\d+)\) .+?\s+type: (.+?)\s*$", re.M)


# -- the move reader --------------------------------------------------------------------------

def _lead_view():
    hands = [["7C", "8H", "8D", "TS", "TD", "JC", "AC", "AD"],
             ["7S", "8C", "9C", "9S", "JS", "QC", "KC", "AS"],
             ["7H", "8S", "9H", "TC", "JH", "QS", "KS", "AH"],
             ["7D", "9D", "TH", "JD", "QH", "QD", "KH", "KD"]]
    return public_view(Game("culo", seed=0, deals=[(hands, [])], rounds=1), 0)


@pytest.mark.parametrize("text", ["²", "#²", "¹²", "3²"])
def test_superscript_digits_are_explained(text):
    with pytest.raises(MoveError, match="not understood"):
        parse_move(text, _lead_view())


@pytest.mark.parametrize("text", ["9" * 5000, "#" + "1" * 4400, "0" * 4400 + "77777777777"])
def test_a_pasted_huge_number_is_no_move(text):
    with pytest.raises(MoveError, match="there is no move .*numbered 1 to 8"):
        parse_move(text, _lead_view())


def test_decimal_digits_of_other_scripts_still_number_moves():
    view = _lead_view()
    assert parse_move("#３", view) == parse_move("#3", view) == parse_move("#٣", view)
    assert parse_move("#" + "0" * 5000 + "3", view) == parse_move("#3", view)


def test_human_is_prompted_again_after_a_superscript_digit():
    lines, typed = [], iter(["³", "8 8"])
    human = HumanAgent(input_fn=lambda prompt: next(typed), output=lines.append)
    view = _lead_view()
    pair8 = next(x["id"] for x in view["legal"] if x["move"] == "pair of 8s")
    assert human.choose(view) == (pair8, None)
    assert any("'³' is not understood" in line for line in lines)


def test_every_listed_move_reads_back_as_typed_in_every_phase():
    rng = random.Random(5)
    checked = set()
    for _ in range(40):
        rules = odd_rules(rng)
        g = Game(rules, seed=rng.randrange(10 ** 6), auto_pass=True)
        bot = RandomAgent(0)
        human = HumanAgent(output=lambda line: None)
        while not g.is_over:
            view = public_view(g, g.current)
            listed = MOVE_LINE.findall(human.describe(view))
            assert [int(i) for i, _ in listed] == list(range(1, len(view["legal"]) + 1))
            for (_, typed), move in zip(listed, view["legal"]):
                assert parse_move(typed, view)[0] == move["id"]
            checked.add(view["phase"])
            g.step(bot.act({"action_mask": g.legal_mask()}, None))
    assert checked == {"play", "give", "take", "lay"}


def test_a_typed_verb_must_name_the_phase():
    """'take 7d' in the lay phase must not lay the 7D face down: a verb is part of the move."""
    rng = random.Random(5)
    checked = set()
    for _ in range(40):
        rules = odd_rules(rng)
        g = Game(rules, seed=rng.randrange(10 ** 6), auto_pass=True)
        bot = RandomAgent(0)
        while not g.is_over:
            view = public_view(g, g.current)
            pool = view["face_up"] if view["phase"] == "take" else view["hand"]
            for verb in ("give", "take", "lay", "play"):
                if verb != view["phase"] and pool:
                    with pytest.raises(MoveError, match=f"'{verb}' is not a move now"):
                        parse_move(f"{verb} {pool[0].lower()}", view)
                    checked.add(view["phase"])
            g.step(bot.act({"action_mask": g.legal_mask()}, None))
    assert checked == {"play", "give", "take", "lay"}


# -- the endgame search against the engine ----------------------------------------------------

def _race(rules, mine, other, table=(-1, 0), table_seat=-1, mover=0, other_passed=False):
    """Seats 0 and 1 hold ``mine``/``other`` (the mover holds ``mine``) as counts per rank;
    seat 2 went out first; every other card is played."""
    g = Game(rules, seed=0)
    hands = [mine, other] if mover == 0 else [other, mine]
    g.hands = [[(1 << c) - 1 for c in h] for h in hands] + [[0] * g.R]
    g.sizes = [sum(h) for h in hands] + [0]
    g.places, g.active, g.next_top, g.next_bottom = [None, None, 1], 2, 2, 3
    g.table_rank, g.table_count = table
    g.table_seat = table_seat
    g.passed = [other_passed if s != mover and s < 2 else False for s in range(3)]
    g.passes = sum(g.passed)
    g.plays = [(table_seat, table[0], (1 << table[1]) - 1)] if table[1] else []
    g.gone = [4 - x - y for x, y in zip(mine, other)]
    g.played = list(g.gone)
    g.face_down, g.face_up = [0] * g.R, [0] * g.R
    g._recompute_top_alive()
    g.current = mover
    return g


def _engine_outcomes(g: Game) -> dict[int, bool]:
    """Every legal action of the seat to act with whether it finishes above the other seat,
    by exhaustive play on the engine."""
    me, memo = g.current, {}

    def wins(state: Game) -> bool:
        if state.is_over:
            return state.last_places[me] < state.last_places[1 - me]
        key = (tuple(map(tuple, state.hands)), state.table_rank, state.table_count,
               state.table_seat, state.current, tuple(state.passed))
        if key not in memo:
            results = (wins(_after(state, a)) for a in state.legal_actions())
            memo[key] = any(results) if state.current == me else all(results)
        return memo[key]

    return {a: wins(_after(g, a)) for a in g.legal_actions()}


def _after(g: Game, action: int) -> Game:
    nxt = g.clone(keep_rng=False)
    nxt.step(action)
    return nxt


def _solver_outcomes(solver, mine, other, table, answer=False) -> dict[int, bool]:
    return {0 if m is None else 4 * m[0] + m[1]: w
            for m, w in solver.outcomes(tuple(mine), tuple(other), *table, answer=answer)}


def _random_race_hands(rng, nf):
    while True:
        deck = [r for r in range(8) for _ in range(4)]
        rng.shuffle(deck)
        na, nb = rng.randint(1, 4), rng.randint(1, 4)
        mine, other = [0] * 8, [0] * 8
        for c in deck[:na]:
            mine[c] += 1
        for c in deck[na:na + nb]:
            other[c] += 1
        if not nf or (mine[7] < na and other[7] < nb):  # only-top hands are already out
            return mine, other


@pytest.mark.parametrize("nf", [True, False])
@pytest.mark.parametrize("tcet", [True, False])
def test_solver_agrees_with_exhaustive_engine_play(nf, tcet):
    rules = make_rules("culo", num_players=3, rounds=1, no_finish_on_top=nf,
                       top_card_ends_trick=tcet)
    solver = Solver(8, nf, max_nodes=10 ** 7)
    rng = random.Random(int(nf) * 2 + int(tcet))
    for _ in range(60):
        mine, other = _random_race_hands(rng, nf)
        table = (rng.randint(0, 6), rng.randint(1, 2))
        cases = [  # (engine position, table for the solver, answer)
            (_race(rules, mine, other), (-1, 0), False),
            (_race(rules, mine, other, table, table_seat=1), table, False),
            # the table's seat went out; the other already passed on it
            (_race(rules, mine, other, table, table_seat=2, mover=1, other_passed=True),
             table, False),
            # the table's seat went out; the other answers after the mover
            (_race(rules, mine, other, table, table_seat=2), table, True),
        ]
        for g, solver_table, answer in cases:
            assert _engine_outcomes(g) == _solver_outcomes(solver, mine, other, solver_table,
                                                           answer), (mine, other, solver_table)


def test_expert_passes_when_only_a_pass_wins_after_a_third_seat_went_out():
    rules = make_rules("culo", num_players=3, rounds=1)
    mine, other = [1, 0, 1, 0, 0, 0, 0, 1], [1, 0, 0, 1, 0, 0, 0, 0]  # 7 9 A vs 7 10
    g = _race(rules, mine, other, (3, 1), table_seat=2)  # a single 10 by the seat now out
    assert _engine_outcomes(g) == {0: True, 29: False}
    assert expert.decide(expert.ctx_from_game(g, params=expert.DEFAULT)) == 0


def test_an_agent_cannot_work_back_from_its_reset_seed_to_the_deal():
    """reset() gets a seed per seat; it must not give away the match seed, from which the
    deal (every seat's hand) is drawn."""
    from agents.runner import play_match

    class SeedLog:
        seeds: list = []

        def reset(self, rules, seat, seed):
            SeedLog.seeds.append((seat, seed))

        def act(self, observation, view):
            return view["legal"][0]["id"]

    for match_seed in range(40):
        play_match("culo", [SeedLog(), "greedy", "greedy", SeedLog()], seed=match_seed,
                   match_index=0).rules
    by_seat = {s: [x for seat, x in SeedLog.seeds if seat == s] for s in (0, 3)}
    for seeds in by_seat.values():
        steps = np.diff(np.array(seeds, np.int64))
        assert len(set(seeds)) == 40 and len(set(steps.tolist())) > 30  # no line through them
    assert not set(by_seat[0]) & set(by_seat[3])


class CardsOfAnotherKind:
    """An agent with an act_cards method that answers something else than (action, cards)."""
    name = "odd"

    def __init__(self, answer):
        self.answer = answer

    def act(self, observation, view):
        return int(observation["action_mask"].argmax())

    def act_cards(self, observation, view):
        return self.answer


@pytest.mark.parametrize("answer", [3, (), (1, "8h"), [1, None]])
def test_an_act_cards_answer_of_another_shape_names_the_agent(answer):
    from agents.runner import AgentError, agent_step
    from arschloch_env.engine import Game
    from arschloch_env.observation import Encoder
    game = Game("culo", num_players=4, seed=0)
    with pytest.raises(AgentError, match=r"agent 'odd' in player_\d chose an illegal action: "
                                         r"act_cards must return \(action, cards or None\)"):
        agent_step(CardsOfAnotherKind(answer), game, Encoder(game.R))


def test_endgame_under_unknown_face_down_cards_can_answer_pass():
    """best_move_uncertain answers as best_move does, a pass (None) included: it took the
    pass for "no move wins" and the expert then played on where only a pass wins."""
    mine, other = (1, 0, 1, 0, 0, 0, 0, 1), (1, 0, 0, 1, 0, 0, 0, 0)  # 7 9 A vs 7 10
    solver = Solver(8, True)
    assert solver.best_move(mine, other, 3, 1, answer=True) is None
    # the other hand is known to be 2 of exactly these 2 cards: the same position
    assert solver.best_move_uncertain(mine, other, 2, 3, 1, answer=True) is None
    # the single 10 lies by a seat now out; one card (a 9) lies face down, not played
    rules = make_rules("culo", num_players=3, rounds=1)
    g = _race(rules, list(mine), list(other), (3, 1), table_seat=2)
    g.gone[2] -= 1
    g.played[2] -= 1
    g.face_down[2] = 0b1000
    c = expert.ctx_from_game(g, params=expert.DEFAULT)
    assert c.fd_unknown == 1
    assert expert.decide(c) == 0


def test_a_card_handed_back_in_the_exchange_is_not_pinned_on_the_partner():
    """Culo, 4 players, seed 206: the Vice-Arschloch gives AS up and gets AS back, then goes
    out with its aces revealed. Its knowledge must not pin AS on the Vice-President (nor
    count an ace as unseen): every ace is gone."""
    from arschloch_env.view import public_view

    g = Game("culo", num_players=4, seed=206, auto_pass=True)
    rng = np.random.default_rng(206)
    ks = [Knowledge() for _ in range(4)]
    for s, k in enumerate(ks):
        k.reset(g.rules.to_dict(), s)
    handed_back = False
    while not g.is_over:
        for s, k in enumerate(ks):
            view = public_view(g, s)
            k.update(view)
            own = int(g.hands[s][g.top]).bit_count()
            assert sum(c >> 2 == g.top for c in k.unseen) == 4 - own - g.gone[g.top], (
                g.round, g.phase, s, k.forced)
            handed_back |= bool(set(view["given"]) & set(view["received"]))
        a = int(rng.choice(g.legal_actions()))
        if g.phase in ("take", "lay"):
            ks[g.current].note_action(a)
        g.step(a)
    assert handed_back


@pytest.mark.parametrize("overrides, says", [
    ({"endgame_cards": "16"}, "endgame_cards='16' is not allowed; it must be a whole number"),
    ({"threat_follow": "bogus"}, "threat_follow='bogus' is not allowed; it must be one of off, "
                                 "win, any"),
    ({"conserve": 1}, "conserve=1 is not allowed; it must be True or False"),
    ({"pair_bonus": float("nan")}, "pair_bonus=nan is not allowed; it must be a finite number"),
])
def test_expert_parameters_are_checked_when_made_not_mid_game(overrides, says):
    with pytest.raises(ValueError, match=re.escape(says)):
        ExpertAgent(**overrides)
    ExpertAgent(endgame_cards=np.int64(10), pair_bonus=np.float32(0.5))


def test_mc_with_a_policy_plays_without_reset(monkeypatch):
    """reset() is optional in the agent protocol; the policy's encoder was made only there.
    The policy is asked (not dropped for the expert), and every move is legal."""
    from pathlib import Path

    from agents.bundle import load_bundle
    from conftest import calls_of

    bundle = load_bundle(Path(__file__).resolve().parents[1] / "bots" / "ppo_vec_culo_expert")
    asked = calls_of(monkeypatch, bundle, "policy")
    bot = MCAgent(policy=bundle, budget=4, min_worlds=2)
    game = Game(make_rules("culo", 4), seed=3, auto_pass=True)
    encoder = Encoder(game.R)
    rng = np.random.default_rng(0)
    decisions = 0
    for _ in range(12):
        seat = game.current
        obs = observation_of(game, encoder, seat)
        if seat == 0:
            action = bot.act(obs, public_view(game, seat))
            assert action in game.legal_actions()
            decisions += 1
        else:
            action = int(rng.choice(game.legal_actions()))
        game.step(action)
    assert decisions and len(asked) >= decisions


def test_knowledge_without_reset_follows_any_change_of_the_rules_or_seat():
    """Knowledge re-read the rules without reset() only when the table size or rank order
    changed: expert last reset for culo, then shown culo without no_finish_on_top, passed
    where it could go out with a lone ace."""
    rules = make_rules("culo", 4, no_finish_on_top=False)
    game = Game(rules, seed=1, auto_pass=True)
    k = Knowledge()
    k.reset(make_rules("culo", 4).to_dict(), 0)
    k.update(public_view(game, 0))
    assert k.rules == rules
    k.taken, k.laid = 5, {6}  # what seat 0 did with the left-over cards this round
    k.update(public_view(game, 2))
    assert k.seat == 2 and k.taken is None and k.laid == set()


@pytest.mark.parametrize("n", [3, 5])
def test_play_match_counts_the_agents_first(n):
    with pytest.raises(ValueError, match=f"^{n} agents for 4 seats; give one agent per seat"):
        play_match("culo", ["random"] * n, seed=1)
