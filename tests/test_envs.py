"""Environment compliance: PettingZoo AEC env, Gymnasium single-seat env, SB3, bad input."""

from __future__ import annotations

import warnings
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from pettingzoo.test import api_test, render_test, seed_test

import arschloch_env
from arschloch_env.actions import ActionError
from arschloch_env.engine import IllegalActionError
from arschloch_env.rules import RulesError, make_rules
from arschloch_env.single import SingleSeatEnv

PRESETS = ("culo", "culo-points", "culo-ten", "culo-52", "tavern")
ALL_TABLES = [(p, n) for p in PRESETS for n in (3, 4, 5, 6)]


@pytest.fixture(autouse=True)
def _quiet_space_warnings():
    # PettingZoo warns about Dict observation spaces (as for its own classic games).
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Observation space for each agent")
        warnings.filterwarnings("ignore", message="Observation is not a NumPy array")
        # api_test calls reset(options={"options": 1}) to check the signature of reset().
        warnings.filterwarnings("ignore", message=".*unknown reset option 'options'")
        yield


def short_env(preset, n, **kw):
    over = {"target_points": 4} if preset == "culo-points" else {"rounds": 2}
    return arschloch_env.env(rules=preset, num_players=n, **{**over, **kw})


# -- PettingZoo ------------------------------------------------------------------------------------

@pytest.mark.parametrize("preset,n", ALL_TABLES)
def test_pettingzoo_api(preset, n):
    api_test(arschloch_env.env(rules=preset, num_players=n), num_cycles=300)


def test_versioned_entry_point():
    from arschloch_env import arschloch_v0
    env = arschloch_v0.env(rules="tavern", num_players=5)
    assert env.metadata["name"] == "arschloch_v0"
    api_test(env, num_cycles=50)


@pytest.mark.parametrize("preset,n", ALL_TABLES)
def test_pettingzoo_seed(preset, n):
    seed_test(lambda: arschloch_env.env(rules=preset, num_players=n), num_cycles=300)


def test_pettingzoo_render_test():
    render_test(lambda render_mode=None: arschloch_env.env(rules="culo", num_players=4,
                                                            render_mode=render_mode))


def test_render_ansi_returns_text_and_human_prints(capsys):
    env = arschloch_env.env(rules="tavern", num_players=5, render_mode="ansi")
    env.reset(seed=3)
    text = env.render()
    assert isinstance(text, str)
    assert "tavern, 5 players, round 1" in text and "player_4" in text and "to act" in text
    env = arschloch_env.env(rules="culo", num_players=4, render_mode="human")
    env.reset(seed=3)
    capsys.readouterr()
    assert env.render() is None
    out = capsys.readouterr().out
    assert "culo, 4 players" in out and "player_0" in out


def test_render_at_the_end_shows_the_titles_the_last_round_earned():
    """Beside each seat's place in the last round, the title that place earned (not the one
    the round was played under)."""
    from agents.runner import play_match
    from arschloch_env.render import render_text
    game = play_match("culo", ["greedy"] * 4, seed=5)
    assert game.is_over and game.round > 1
    names = game.rules.titles_for()
    for s, line in enumerate(render_text(game).splitlines()[1:5]):
        assert line.split()[:2] == [f"player_{s}", names[game.round_places[-1][s] - 1]], line



def test_render_fits_80_columns_with_every_hand_shown():
    """A hand of 18 cards (tavern, 3 players) is shown on a line of its own, not at the end
    of its seat's row, so that every line fits an 80-column terminal."""
    from arschloch_env.engine import Game
    from arschloch_env.render import render_text
    from arschloch_env.rules import make_rules
    game = Game(make_rules("tavern", 3), seed=1)
    for text in (render_text(game), render_text(game, reveal=True)):
        assert max(len(line) for line in text.splitlines()) <= 80, text
    shown = render_text(game, reveal=True)
    for s in range(3):
        assert f"hand of player_{s}: " in shown

def test_render_without_mode_warns():
    env = arschloch_env.env(rules="culo", num_players=4)
    env.reset(seed=0)
    with pytest.warns(UserWarning, match="render_mode"):
        assert env.render() is None
    single = SingleSeatEnv(rules="culo", num_players=4)
    single.reset(seed=0)
    with pytest.warns(UserWarning, match="render_mode"):
        assert single.render() is None


def play_random_episode(env, seed):
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    steps = 0
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        totals[agent] += reward
        if term or trunc:
            env.step(None)
            continue
        assert env.observation_space(agent).contains(obs)
        mask = obs["action_mask"]
        # Only the agent to act has a mask; the others see all zeros.
        for other in env.agents:
            if other != agent:
                assert not env.observe(other)["action_mask"].any()
        legal = np.flatnonzero(mask)
        assert list(legal) == env.unwrapped.game.legal_actions()
        env.step(int(rng.choice(legal)))
        steps += 1
    return totals, steps


@pytest.mark.parametrize("preset,n", [("culo", 3), ("tavern", 6), ("culo-52", 5)])
def test_place_rewards_are_zero_sum_per_round(preset, n):
    env = short_env(preset, n)
    totals, steps = play_random_episode(env, seed=n)
    assert steps > 0
    assert abs(sum(totals.values())) < 1e-9
    game = env.unwrapped.game
    rounds = game.rounds_done
    # President +1, Arschloch -1, evenly spaced: the cumulated reward of each seat.
    want = {f"player_{s}": sum(1 - 2 * (places[s] - 1) / (n - 1) for places in game.round_places)
            for s in range(n)}
    assert rounds == len(game.round_places) and rounds >= 1
    assert totals == pytest.approx(want)


def test_the_end_of_a_match_terminates_every_agent_and_truncates_none():
    """PettingZoo's api_test and agent_iter take either flag; a match that ends is a
    termination (truncation is for a cut-off episode), for every agent at once."""
    env = short_env("culo", 3)
    env.reset(seed=3)
    while not any(env.terminations.values()):
        mask = env.observe(env.agent_selection)["action_mask"]
        env.step(int(np.flatnonzero(mask)[0]))
    assert all(env.terminations.values()) and not any(env.truncations.values())


def test_a_drawn_seat_is_every_seat_in_turn_of_the_seeds():
    seats = set()
    for seed in range(40):
        _, info = SingleSeatEnv(rules="culo", num_players=4, seat=None, rounds=1).reset(
            seed=seed)
        seats.add(info["seat"])
    assert seats == {0, 1, 2, 3}


def test_points_rewards():
    env = short_env("tavern", 4, reward="points")
    totals, _ = play_random_episode(env, seed=1)
    game = env.unwrapped.game
    assert totals == {f"player_{s}": float(game.totals[s]) for s in range(4)}
    assert sum(totals.values()) == 6 * game.rounds_done


def test_only_the_seat_giving_back_sees_cards_to_give():
    from arschloch_env.engine import Game
    from arschloch_env.view import public_view
    g = Game(make_rules("culo", 4, rounds=2), seed=1, auto_pass=True)
    while g.phase != "give":
        g.step(g.legal_actions()[0])
    views = [public_view(g, s) for s in range(4)]
    assert views[g.current]["to_give"] == 2 and views[g.current]["phase"] == "give"
    assert [v["to_give"] for s, v in enumerate(views) if s != g.current] == [0, 0, 0]


def test_state_and_view():
    env = arschloch_env.env(rules="culo", num_players=4)
    env.reset(seed=0)
    assert env.state_space.contains(env.state())
    view = env.view()
    assert view["seat"] == env.agent_name_mapping[env.agent_selection]
    assert [m["id"] for m in view["legal"]] == list(
        np.flatnonzero(env.observe(env.agent_selection)["action_mask"]))


def test_the_view_shows_every_seat_the_top_cards_a_hand_revealed():
    """Under no_finish_on_top a hand of top-rank cards only is shown and goes out: the cards
    leave its hand without being played, and the view names them until the round ends."""
    from arschloch_env.engine import Game
    from arschloch_env.view import public_view
    rng = np.random.default_rng(0)
    reveals = 0
    for seed in range(40):
        g = Game(make_rules("culo", 3), seed=seed, record=True)
        shown: list[list[str]] = [[], [], []]
        while not g.is_over:
            hands, start = [g.hand_of(s) for s in range(3)], len(g.events)
            g.step(int(rng.choice(g.legal_actions())))
            for e in g.events[start:]:
                if e["event"] == "round":
                    shown = [[], [], []]
                elif e["event"] == "play":
                    hands[int(e["player"][-1])] = [
                        c for c in hands[int(e["player"][-1])] if c not in e["cards"]]
                elif e["event"] == "out" and e["reason"] == "only_top":
                    s = int(e["player"][-1])
                    shown[s] = hands[s]
                    reveals += 1
            for seat in range(3):
                assert public_view(g, seat)["revealed"] == shown
    assert reveals >= 5


@pytest.mark.parametrize("rounds", [1, 3])
def test_view_of_a_finished_match_keeps_to_the_contract(rounds):
    env = arschloch_env.env(rules="culo", num_players=4, rounds=rounds)
    play_random_episode(env, seed=2)
    game = env.unwrapped.game
    assert game.is_over and len(game.round_places) == rounds
    names = game.rules.titles_for()
    # the titles the last round was played under: the round before it, none in round 1
    titles = [names[p - 1] for p in game.round_places[-2]] if rounds > 1 else [None] * 4
    for agent in env.possible_agents:
        view = env.view(agent)
        assert view["phase"] == "play" and view["legal"] == [] and view["to_give"] == 0
        assert view["places"] == game.round_places[-1] and view["round"] == rounds
        assert view["titles"] == titles


def test_seeded_reset_is_reproducible_and_match_index_counts():
    env = arschloch_env.env(rules="tavern", num_players=4)
    env.reset(seed=5)
    hands_a = [env.unwrapped.game.hand_of(s) for s in range(4)]
    assert env.unwrapped.match_index == 0 and env.unwrapped.game.leader == 0
    env.reset()
    assert env.unwrapped.match_index == 1 and env.unwrapped.game.leader == 1
    env.reset(seed=5)
    assert [env.unwrapped.game.hand_of(s) for s in range(4)] == hands_a
    env.reset(options={"match_index": 6})
    assert env.unwrapped.game.leader == 2


def test_aec_reset_refuses_a_bad_seed_naming_it_and_keeps_the_match():
    env = arschloch_env.env(rules="culo", num_players=4)
    env.reset(seed=5)
    game = env.unwrapped.game
    for bad in (-1, 1.5, "7", True):
        with pytest.raises(ValueError, match=r"seed .* allowed: an int >= 0, or None"):
            env.reset(seed=bad)
    assert env.unwrapped.game is game and env.unwrapped.match_index == 0


def test_aec_illegal_and_bad_actions_raise_and_change_nothing():
    env = arschloch_env.env(rules="culo", num_players=4)
    env.reset(seed=0)
    agent = env.agent_selection
    mask = env.observe(agent)["action_mask"]
    before = env.observe(agent)["observation"].copy()
    illegal = int(np.flatnonzero(mask == 0)[0])
    with pytest.raises(IllegalActionError) as e:
        env.step(illegal)
    assert agent in str(e.value)
    with pytest.raises(ActionError, match=r"out of range \(allowed: 0..48\)"):
        env.step(49)
    with pytest.raises(ActionError, match="not an integer"):
        env.step("pass")
    with pytest.raises(ActionError, match="not an integer"):
        env.step(1.0)
    assert env.agent_selection == agent
    assert np.array_equal(env.observe(agent)["observation"], before)


def test_env_before_reset():
    env = arschloch_env.env(rules="culo", num_players=4)
    with pytest.raises(RuntimeError, match="reset"):
        env.observe("player_0")


# -- bad configuration ---------------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda **kw: arschloch_env.env(**kw),
    lambda **kw: SingleSeatEnv(**kw),
])
@pytest.mark.parametrize("kw,words", [
    ({"rules": "poker"}, ["unknown preset 'poker'", "culo", "tavern"]),
    ({"rules": "culo", "jokers": 2}, ["unknown rules field", "jokers", "allowed"]),
    ({"rules": "culo", "num_players": 2}, ["num_players", "2", "3 to 6"]),
    ({"rules": "tavern", "num_players": 7}, ["num_players", "7", "3 to 6"]),
    ({"rules": "culo", "exchange_cards": 5}, ["exchange_cards", "0..3"]),
])
def test_bad_rules_clear_message(make, kw, words):
    with pytest.raises(RulesError) as e:
        make(**kw)
    for w in words:
        assert w in str(e.value)


def test_bad_env_arguments():
    with pytest.raises(ValueError, match="render_mode 'rgb_array'"):
        arschloch_env.env(render_mode="rgb_array")
    with pytest.raises(ValueError, match="reward 'score'"):
        arschloch_env.env(reward="score")
    with pytest.raises(ValueError, match="seat 4 is not a seat of a 4-player table"):
        SingleSeatEnv(seat=4)
    with pytest.raises(ValueError, match="on_illegal"):
        SingleSeatEnv(on_illegal="ignore")
    with pytest.raises(ValueError, match=r"opponents: 2 opponents for 3 other seats; give one "
                                         r"agent or spec for every other seat, or a list of 3"):
        SingleSeatEnv(opponents=["random", "random"])
    from agents.base import AgentSpecError
    with pytest.raises(AgentSpecError, match="unknown agent spec 'nobody'"):
        SingleSeatEnv(opponents="nobody")
    with pytest.raises(ValueError, match="give opponents or opponent_sampler, not both"):
        SingleSeatEnv(opponents="greedy", opponent_sampler=lambda rng, k: ["random"] * k)


# -- Gymnasium single seat ---------------------------------------------------------------------------

def test_gymnasium_check_env():
    from gymnasium.utils.env_checker import check_env
    for preset, n in (("culo", 4), ("tavern", 3)):
        env = SingleSeatEnv(rules=preset, num_players=n, seat=1, rounds=1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check_env(env, skip_render_check=True)


@pytest.mark.parametrize("render_mode", [None, "ansi", "human"])
def test_gymnasium_check_env_finds_nothing_to_warn_of(render_mode):
    """Every check of Gymnasium's env checker passes without a warning, the render modes'
    (which need ``render_fps``) included."""
    import contextlib
    import io

    from gymnasium.utils.env_checker import check_env
    env = gymnasium.make("arschloch_env.single:Arschloch-v0", rules="culo", num_players=4,
                         render_mode=render_mode)
    with warnings.catch_warnings(record=True) as caught, \
            contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    assert [str(w.message) for w in caught] == []


def test_gymnasium_make_and_make_vec_know_the_single_seat_env():
    import contextlib
    import io

    from gymnasium.utils.env_checker import check_env
    env_id = "arschloch_env.single:Arschloch-v0"
    env = gymnasium.make(env_id, rules="tavern", num_players=4, seat=1, rounds=1)
    game = env.unwrapped
    assert isinstance(game, SingleSeatEnv) and game.rules.num_players == 4 and game.fixed_seat == 1
    assert env.spec.id == "Arschloch-v0"
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        check_env(game)  # with a spec: its render modes are made and checked too
    obs, info = env.reset(seed=3)
    assert np.array_equal(env.get_wrapper_attr("action_masks")(), info["action_mask"] == 1)
    vec = gymnasium.make_vec(env_id, num_envs=2, rules="culo", num_players=4,
                             mask_in_observation=False)
    try:
        obs, _ = vec.reset(seed=1)
        assert obs.shape == (2, *vec.single_observation_space.shape) and obs.ndim == 2
        ended = 0
        for _ in range(200):
            masks = vec.call("action_masks")  # none legal in an episode's end, before reset
            obs, reward, terminated, truncated, info = vec.step(
                [(np.flatnonzero(m).tolist() or [0])[0] for m in masks])
            ended += int(terminated.sum())
        assert ended >= 2
    finally:
        vec.close()


def test_single_seat_observation_carries_the_mask():
    """INTERFACES.md: the observation carries an int8 action_mask (Gymnasium's
    sample(mask) takes it); mask_in_observation=False gives the vector alone, for SB3."""
    from gymnasium.utils.env_checker import check_env
    env = SingleSeatEnv(rules="tavern", num_players=4, seat=2, rounds=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(env, skip_render_check=True)
    flat = SingleSeatEnv(rules="tavern", num_players=4, seat=2, rounds=1,
                         mask_in_observation=False)
    assert isinstance(flat.observation_space, gymnasium.spaces.Box)
    obs, info = env.reset(seed=3)
    same, _ = flat.reset(seed=3)
    done = False
    while not done:
        assert env.observation_space.contains(obs)
        assert obs["action_mask"].dtype == info["action_mask"].dtype == np.int8
        assert np.array_equal(obs["action_mask"], env.action_masks().astype(np.int8))
        assert np.array_equal(info["action_mask"], obs["action_mask"])
        assert np.array_equal(obs["observation"], same)
        action = int(env.action_space.sample(mask=obs["action_mask"]))
        assert obs["action_mask"][action] == 1
        obs, _, done, _, info = env.step(action)
        same, *_ = flat.step(action)
    with pytest.raises(ValueError, match="mask_in_observation 1 is not a bool"):
        SingleSeatEnv(mask_in_observation=1)
    assert SingleSeatEnv(mask_in_observation=np.bool_(False)).mask_in_observation is False


@pytest.mark.train_extra
def test_sb3_check_env():
    from stable_baselines3.common.env_checker import check_env
    env = SingleSeatEnv(rules="culo-52", num_players=5, seat=None, rounds=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(env, warn=True)


def test_single_seat_episode_and_masks():
    env = SingleSeatEnv(rules="culo", num_players=4, seat=2, rounds=2)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert info["seat"] == 2
    rng = np.random.default_rng(0)
    total, done, steps = 0.0, False, 0
    while not done:
        mask = env.action_masks()
        assert mask.dtype == bool and mask.any()
        assert env.game.current == 2
        obs, reward, done, trunc, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        assert not trunc and not info["illegal"]
        total += reward
        steps += 1
    assert info["places"] is not None and len(info["totals"]) == 4 and info["winners"]
    assert not env.action_masks().any()
    assert steps > 0 and -2.0 <= total <= 2.0
    with pytest.raises(RuntimeError, match="match is over"):
        env.step(0)


@pytest.mark.parametrize("rounds", [1, 5])
def test_single_seat_episodes_start_at_a_decision_and_sum_to_the_match(rounds):
    """At 6 players the learner's seat can have only forced passes until its round ends: in a
    single round that match is no episode (reset plays on to the next), and in a longer match
    that round's reward is paid with the first step."""
    from arschloch_env.arschloch import place_reward
    env = SingleSeatEnv(rules="culo", num_players=6, rounds=rounds, seat=None)
    _, info = env.reset(seed=3381)  # the learner's first match starts so (found by search)
    assert env.action_masks().any() and env.game.current == env.seat
    if rounds == 1:
        assert info["skipped_matches"] == 1
    else:
        assert info["skipped_matches"] == 0 and info["reward_before_first_move"] == -1.0
    rng = np.random.default_rng(0)
    total, done = 0.0, False
    while not done:
        _, reward, done, _, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        total += reward
    g = env.game
    assert total == pytest.approx(sum(place_reward(p[env.seat], 6) for p in g.round_places))


def test_single_seat_illegal_action_is_void_with_penalty():
    env = SingleSeatEnv(rules="culo", num_players=4, seat=0, illegal_penalty=-0.5)
    obs, _ = env.reset(seed=1)
    mask = env.action_masks()
    illegal = int(np.flatnonzero(~mask)[0])
    state_before = [h[:] for h in env.game.hands], env.game.sizes[:], env.game.current
    obs2, reward, term, trunc, info = env.step(illegal)
    assert reward == -0.5 and not term and not trunc
    assert info["illegal"] is True and info["illegal_count"] == 1
    assert all(np.array_equal(obs[k], obs2[k]) for k in ("observation", "action_mask"))
    assert ([h[:] for h in env.game.hands], env.game.sizes[:], env.game.current) == state_before
    assert np.array_equal(env.action_masks(), mask)
    # And a legal action afterwards goes through.
    env.step(int(np.flatnonzero(mask)[0]))
    assert env.illegal_count == 1
    # The count is per episode: a seeded reset reproduces the same infos (check_env needs it).
    env.reset(seed=1)
    assert env.illegal_count == 0
    assert env.step(illegal)[4]["illegal_count"] == 1


def test_single_seat_illegal_actions_in_a_row_truncate_the_episode():
    """A policy without the mask picks the same illegal id on the same observation forever
    (SB3's evaluate_policy with a deterministic plain PPO hung): max_illegal stops it."""
    env = SingleSeatEnv(rules="culo", num_players=4, seat=0, max_illegal=3)
    env.reset(seed=1)
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    assert [env.step(illegal)[3] for _ in range(2)] == [False, False]
    env.step(int(np.flatnonzero(env.action_masks())[0]))  # a legal move starts the count over
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    assert [env.step(illegal)[3] for _ in range(3)] == [False, False, True]
    assert env.illegal_count == 5 and not env.game.is_over
    env.reset(seed=1)
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    assert [env.step(illegal)[3] for _ in range(3)] == [False, False, True]  # per episode
    assert SingleSeatEnv("culo").max_illegal == 100
    never = SingleSeatEnv("culo", max_illegal=None)
    never.reset(seed=1)
    illegal = int(np.flatnonzero(~never.action_masks())[0])
    assert not any(never.step(illegal)[3] for _ in range(150))
    for bad in (0, -1, 2.5, "3", True):
        with pytest.raises(ValueError, match=rf"max_illegal {bad!r}; allowed: a whole number"):
            SingleSeatEnv("culo", max_illegal=bad)


@pytest.mark.train_extra
@pytest.mark.filterwarnings("ignore:.*render_mode='rgb_array' that is not in the possible")
def test_sb3_make_vec_env_builds_the_registered_env():
    """make_vec_env asks for render_mode="rgb_array" and retries without it on a TypeError."""
    from stable_baselines3.common.env_util import make_vec_env
    venv = make_vec_env("arschloch_env.single:Arschloch-v0", n_envs=2,
                        env_kwargs=dict(mask_in_observation=False))
    assert venv.num_envs == 2 and venv.env_method("action_masks")[0].dtype == bool
    venv.close()
    with pytest.raises(ValueError, match="render_mode 'rgb_array'; allowed: None, ansi, human"):
        SingleSeatEnv("culo", render_mode="rgb_array")


def test_single_seat_illegal_action_raises_when_asked():
    env = SingleSeatEnv(rules="tavern", num_players=3, seat=0, on_illegal="raise")
    env.reset(seed=2)
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    with pytest.raises(IllegalActionError, match="player_0 cannot"):
        env.step(illegal)


def test_single_seat_bad_action_types():
    env = SingleSeatEnv(rules="culo", num_players=4, seat=0)
    env.reset(seed=0)
    for bad, words in ((49, "out of range"), (-1, "out of range"), (0.5, "not an integer"),
                       ("3", "not an integer"), (None, "not an integer")):
        with pytest.raises(ActionError) as e:
            env.step(bad)
        assert words in str(e.value) and "0..48" in str(e.value)
    with pytest.raises(RuntimeError, match="reset"):
        SingleSeatEnv().step(0)


def test_single_seat_opponent_specs():
    calls = []

    def lowest(observation, view):
        calls.append(view["seat"])
        return int(np.flatnonzero(observation["action_mask"])[0])

    env = SingleSeatEnv(rules="culo", num_players=4, seat=0,
                        opponents=[lowest, "greedy", "agents.random_agent:RandomAgent"],
                        rounds=1)
    env.reset(seed=4)
    assert [type(a).__name__ for a in env.opponents] == ["CallableAgent", "GreedyAgent",
                                                         "RandomAgent"]
    # clockwise from the learner's left: the first opponent plays seat 1
    assert {s: type(a).__name__ for s, a in env.seat_agents.items()} == {
        1: "CallableAgent", 2: "GreedyAgent", 3: "RandomAgent"}
    done = False
    while not done:
        _, _, done, _, _ = env.step(int(np.flatnonzero(env.action_masks())[0]))
    assert calls and set(calls) == {1}


def test_single_seat_refuses_a_bundle_of_other_rules_when_made():
    bundle = str(Path(__file__).resolve().parents[1] / "bots" / "ppo_vec_culo_multi")
    with pytest.raises(ValueError, match=r"opponents: agent .*ppo_vec_culo_multi does not "
                                         r"support these rules \(tavern, 4 players\): bundle: "
                                         r"trained for preset\(s\) \['culo'\], not 'tavern'"):
        SingleSeatEnv(rules="tavern", num_players=4, opponents=bundle)
    SingleSeatEnv(rules="culo", num_players=4, opponents=bundle).reset(seed=0)


def test_env_takes_the_arguments_of_raw_env():
    import inspect
    assert (list(inspect.signature(arschloch_env.env).parameters)
            == list(inspect.signature(arschloch_env.raw_env).parameters))
    env = arschloch_env.env("tavern", 5, None, "points", False, None, rounds=2)
    assert (env.rules.preset, env.rules.num_players, env.reward_mode, env.auto_pass,
            env.rules.rounds) == ("tavern", 5, "points", False, 2)


def test_single_seat_render(capsys):
    env = SingleSeatEnv(rules="culo", num_players=3, seat=1, render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    assert isinstance(text, str) and "culo, 3 players" in text
    env = SingleSeatEnv(rules="culo", num_players=3, seat=1, render_mode="human")
    env.reset(seed=0)
    assert env.render() is None
    assert "culo, 3 players" in capsys.readouterr().out


def _make_single():  # as SB3 trains it: the vector, with action_masks() on the env
    return SingleSeatEnv(rules="culo", num_players=4, seat=None, rounds=1,
                         mask_in_observation=False)


@pytest.mark.train_extra
def test_action_masks_through_subproc_vec_env():
    from stable_baselines3.common.vec_env import SubprocVecEnv
    venv = SubprocVecEnv([_make_single, _make_single], start_method="fork")
    try:
        venv.seed(0)
        obs = venv.reset()
        assert obs.shape == (2, 413)
        masks = np.stack(venv.env_method("action_masks"))
        assert masks.shape == (2, 49) and masks.dtype == bool and masks.any(axis=1).all()
        actions = np.array([np.flatnonzero(m)[0] for m in masks])
        venv.step(actions)
        masks2 = np.stack(venv.env_method("action_masks"))
        assert masks2.shape == (2, 49) and masks2.any(axis=1).all()
    finally:
        venv.close()


@pytest.mark.train_extra
def test_maskable_utils_get_action_masks():
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
    from stable_baselines3.common.vec_env import DummyVecEnv
    venv = DummyVecEnv([_make_single])
    venv.reset()
    assert is_masking_supported(venv)
    masks = get_action_masks(venv)
    assert masks.shape == (1, 49) and masks.any()
    venv.close()


def test_gymnasium_registry_free_construction():
    # The env is built directly (no registry): make sure gymnasium's passive checker agrees.
    from gymnasium.utils.passive_env_checker import env_reset_passive_checker
    env = SingleSeatEnv(rules="tavern", num_players=6, seat=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        obs, info = env_reset_passive_checker(env, seed=0)
    assert obs["observation"].shape == (593,) and obs["action_mask"].shape == (79,)
    assert isinstance(info, dict) and isinstance(env.observation_space, gymnasium.spaces.Dict)


# -- robustness ------------------------------------------------------------------------------------

def _failing_opponent(fail_on_call):
    calls = []

    def opponent(observation, view):
        calls.append(view["seat"])
        if len(calls) == fail_on_call:
            return 999
        return int(np.flatnonzero(observation["action_mask"])[0])
    return opponent


def _first_legal(env):
    return int(np.flatnonzero(env.action_masks())[0])


def test_single_seat_refuses_to_move_for_an_opponent_that_failed():
    from agents.runner import AgentError
    env = SingleSeatEnv(rules="culo", num_players=4, seat=0, opponents=_failing_opponent(8))
    env.reset(seed=0)
    with pytest.raises(AgentError, match="999"):
        for _ in range(20):
            env.step(_first_legal(env))
    stuck = env.game.current
    assert stuck != 0
    hands = [h[:] for h in env.game.hands]
    for call in (lambda: env.step(0), env.action_masks):
        with pytest.raises(RuntimeError, match=r"broken by the error of the opponent in "
                                               rf"player_{stuck} \(AgentError.*reset\(\)"):
            call()
    # Nothing was played for the opponent's seat.
    assert env.game.current == stuck and [h[:] for h in env.game.hands] == hands
    env.reset(seed=1)
    assert env.game.current == 0 and env.action_masks().any()


def test_single_seat_refuses_to_go_on_after_an_opponent_failed_in_reset():
    from agents.runner import AgentError
    env = SingleSeatEnv(rules="culo", num_players=4, seat=0, opponents=_failing_opponent(1))
    with pytest.raises(AgentError):
        env.reset(seed=0)
    with pytest.raises(RuntimeError, match="broken by the error of the opponent"):
        env.step(0)


def test_aec_after_every_agent_left_and_unknown_agents_clear_errors():
    env = arschloch_env.env(rules="culo", num_players=4, rounds=1)
    play_random_episode(env, seed=0)
    assert env.agents == []
    for call in (lambda: env.step(None), lambda: env.step(0), env.last):
        with pytest.raises(RuntimeError, match=r"match is over.*call reset\(\)"):
            call()
    for call in (lambda: env.observe("player_9"), lambda: env.view("bob"),
                 lambda: env.observation_space("player_4"), lambda: env.action_space(["x"])):
        with pytest.raises(ValueError, match=r"unknown agent .*; agents: player_0..player_3"):
            call()
    env.reset(seed=0)
    assert env.last()[0]["action_mask"].any()


def test_submodules_are_attributes_in_a_fresh_interpreter():
    import subprocess
    import sys
    code = ("import pydoc, sys, arschloch_env\n"
            "assert 'pettingzoo' not in sys.modules\n"
            "assert arschloch_env.observation.Encoder\n"
            "assert 'pettingzoo' not in sys.modules\n"
            "pydoc.render_doc(arschloch_env.arschloch)\n"
            "assert arschloch_env.single.SingleSeatEnv is arschloch_env.SingleSeatEnv\n"
            "assert {'env', 'raw_env', 'SingleSeatEnv', 'Game'} <= set(dir(arschloch_env))\n"
            "for name in ('nothing', '_private', 'a.b'):\n"
            "    try:\n"
            "        getattr(arschloch_env, name)\n"
            "    except AttributeError:\n"
            "        pass\n"
            "    else:\n"
            "        raise SystemExit(name)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_single_seat_accepts_numpy_seats_and_refuses_bools():
    env = SingleSeatEnv(rules="culo", num_players=4, seat=np.int64(1))
    assert env.reset(seed=0)[1]["seat"] == 1 and type(env.seat) is int
    for bad in (True, np.bool_(False), 1.0):
        with pytest.raises(ValueError, match="is not a seat of a 4-player table"):
            SingleSeatEnv(rules="culo", num_players=4, seat=bad)


def test_single_seat_human_render_prints_on_reset_as_the_aec_env(capsys):
    for make in (lambda: SingleSeatEnv(rules="culo", num_players=3, render_mode="human"),
                 lambda: arschloch_env.env(rules="culo", num_players=3, render_mode="human")):
        make().reset(seed=0)
        assert "culo, 3 players" in capsys.readouterr().out


@pytest.mark.parametrize("bad", ["x", None, True, float("nan"), float("inf"), -float("inf"),
                                 0.5])
def test_single_seat_bad_illegal_penalty_is_named(bad):
    with pytest.raises(ValueError, match=r"illegal_penalty .* is not a penalty; allowed: a "
                                         r"finite number of at most 0"):
        SingleSeatEnv(illegal_penalty=bad)
    assert SingleSeatEnv(illegal_penalty=np.float32(-1)).illegal_penalty == -1.0
    assert SingleSeatEnv(illegal_penalty=0).illegal_penalty == 0.0


def _play_aec_match(env, seed):
    env.reset(seed=seed)
    for _ in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else int(np.flatnonzero(obs["action_mask"])[0]))


def _play_single_match(env, seed):
    env.reset(seed=seed)
    done = False
    while not done:
        done = env.step(_first_legal(env))[2]


@pytest.mark.parametrize("make,play", [
    (lambda path: arschloch_env.env(rules="culo", num_players=4, rounds=1, record_path=path),
     _play_aec_match),
    (lambda path: SingleSeatEnv(rules="culo", num_players=4, rounds=1, record_path=path),
     _play_single_match),
])
def test_closed_env_with_a_record_refuses_to_play_on(tmp_path, make, play):
    from arschloch_env.records import read_matches
    path = tmp_path / "rec.jsonl"
    env = make(str(path))
    play(env, 0)
    env.reset(seed=1)
    env.close()
    assert len(list(read_matches(path))) == 1
    with pytest.raises(RuntimeError, match=r"closed, which finalised its game record .*rec"):
        env.step(0)
    with pytest.raises(RuntimeError, match="make a new environment"):
        env.reset()
    assert len(list(read_matches(path))) == 1
    # Without a record there is nothing to finalise, and close() ends nothing.
    env = make(None)
    env.close()
    play(env, 0)


@pytest.mark.parametrize("make", [
    "arschloch_env.env(rules='culo', num_players=4, rounds=1, record_path=PATH)",
    "SingleSeatEnv(rules='culo', num_players=4, rounds=1, record_path=PATH)",
])
def test_a_record_reaches_its_file_without_close(tmp_path, make):
    """A script or notebook that never calls close() still gets its record file when the env
    is dropped or the interpreter exits; a recording env refuses to be copied (two copies
    would write one file)."""
    from arschloch_env.records import read_matches
    from conftest import run_python
    path = tmp_path / "rec.jsonl"
    code = ("import copy\nimport arschloch_env\nfrom arschloch_env.single import SingleSeatEnv\n"
            f"env = {make.replace('PATH', repr(str(path)))}\n"
            "env.reset(seed=0)\n"
            "try:\n    copy.deepcopy(env)\nexcept TypeError as exc:\n    print(exc)\n"
            "done = False\n"
            "while not done:\n"
            "    if hasattr(env, 'agent_iter'):\n"
            "        obs, _, term, trunc, _ = env.last()\n"
            "        env.step(None if term or trunc else int(obs['action_mask'].argmax()))\n"
            "        done = not env.agents\n"
            "    else:\n"
            "        done = env.step(int(env.action_masks().argmax()))[2]\n")
    res = run_python(code)
    assert res.returncode == 0, res.stderr
    assert "cannot be copied or pickled (two copies would write one file)" in res.stdout
    assert path.is_file() and not list(path.parent.glob("*.part"))
    assert len(list(read_matches(path))) == 1


def _recording_vec_env(path):
    from arschloch_env.vector_env import ArschlochVecEnv
    env = ArschlochVecEnv("culo", 4, num_envs=2, rounds=1, record_path=path, record_games=[0])
    env.reset()
    return env


@pytest.mark.parametrize("make", [
    lambda path: arschloch_env.env(rules="culo", num_players=4, rounds=1, record_path=path),
    lambda path: SingleSeatEnv(rules="culo", num_players=4, rounds=1, record_path=path),
    pytest.param(_recording_vec_env, marks=pytest.mark.train_extra),
])
def test_a_recording_env_dropped_unclosed_frees_its_record_at_once(tmp_path, make):
    """A second writer of a record is refused while the first lives; an env dropped without
    close() (a notebook cell run again) must not live on in a reference cycle until the
    garbage collector runs."""
    import gc
    path = tmp_path / "rec.jsonl"
    # A first import of torch pins every frame on the stack (torch.fx keeps its own frame in
    # a reference cycle) until the collector runs, and with them the env this test drops.
    make(tmp_path / "warm.jsonl").close()
    gc.collect()
    gc.disable()
    try:
        env = make(path)
        with pytest.raises(ValueError, match="being written by another writer"):
            make(path)
        del env
        make(path).close()
    finally:
        gc.enable()


@pytest.mark.parametrize("make", [
    lambda path: arschloch_env.env(rules="culo", num_players=4, rounds=1, record_path=path),
    lambda path: SingleSeatEnv(rules="culo", num_players=4, rounds=1, record_path=path),
])
def test_a_recording_env_refuses_a_shallow_copy_too(tmp_path, make):
    """copy.copy() would share the record writer: after the original's close() the copy
    would write its next match into the finalised file."""
    import copy
    env = make(tmp_path / "rec.jsonl")
    for copier in (copy.copy, copy.deepcopy):
        with pytest.raises(TypeError, match="cannot be copied or pickled"):
            copier(env)
    env.close()
    # without a record an env copies; a deep copy plays on alone
    import pickle
    plain = make(None)
    plain.reset(seed=0)
    copy.copy(plain)
    twin = copy.deepcopy(plain)
    before = pickle.dumps(plain.game)
    assert pickle.dumps(twin.game) == before
    twin.step(max(twin.game.legal_actions()))  # a play, not a pass
    assert pickle.dumps(plain.game) == before and pickle.dumps(twin.game) != before


def test_single_seat_record_names_the_learner_and_its_opponents(tmp_path):
    from agents.greedy import GreedyAgent
    from arschloch_env.records import read_matches
    path = tmp_path / "rec.jsonl"
    fixed = SingleSeatEnv(rules="culo", num_players=4, rounds=1, seat=2, record_path=str(path),
                          opponents=["greedy", "random", "expert"])
    _play_single_match(fixed, 0)
    # a league's opponents, drawn per match, are named by their agents
    drawn = SingleSeatEnv(rules="culo", num_players=3, rounds=1, seat=None,
                          record_path=str(tmp_path / "drawn.jsonl"),
                          opponent_sampler=lambda rng, k: [GreedyAgent()] * k)
    _play_single_match(drawn, 5)
    fixed.close()
    drawn.close()
    (_, match), = [m[0] for m in read_matches(path)]
    assert match["agents"] == {"player_0": "random", "player_1": "expert",
                               "player_2": "learner", "player_3": "greedy"}
    (_, match), = [m[0] for m in read_matches(tmp_path / "drawn.jsonl")]
    learner = f"player_{drawn.seat}"
    assert match["agents"] == {p: "learner" if p == learner else "greedy" for p in match["players"]}


@pytest.mark.parametrize("make", [
    lambda: arschloch_env.env(rules="tavern", num_players=4),
    lambda: SingleSeatEnv(rules="tavern", num_players=4),
])
@pytest.mark.parametrize("options", [
    {"match_index": -3}, {"match_index": "a"}, {"match_index": True}, {"match_index": 1.0},
])
def test_bad_reset_options_are_named_and_change_nothing(make, options):
    env = make()
    env.reset(seed=0)
    game = env.unwrapped.game
    with pytest.raises(ValueError, match=r"reset option 'match_index' .* allowed: an int >= 0"):
        env.reset(options=options)
    assert env.unwrapped.game is game and env.unwrapped.match_index == 0
    with pytest.raises(TypeError, match="options must be a dict or None, not list"):
        env.reset(options=["match_index"])
    env.reset(options={"match_index": np.int64(3)})
    assert env.unwrapped.match_index == 3 and env.unwrapped.game.leader == 3


def test_misspelled_reset_option_is_not_silent():
    env = SingleSeatEnv(rules="culo", num_players=4)
    with pytest.raises(ValueError, match=r"unknown reset option 'match_idx'; allowed: "
                                         r"'match_index'"):
        env.reset(options={"match_idx": 2})
    assert env.game is None
    aec = arschloch_env.env(rules="culo", num_players=4)
    with pytest.warns(UserWarning, match=r"unknown reset option 'match_idx'; allowed: "
                                         r"'match_index' .*'agents'"):
        aec.reset(options={"match_idx": 2})
    for agents, words in (({"bob": "random"}, "names unknown agent 'bob'"),
                          ({"player_1": 3}, "agent spec")):
        with pytest.raises(ValueError, match=words):
            aec.reset(options={"agents": agents})


def test_auto_pass_must_be_a_bool():
    for bad in ("no", 0, None):
        with pytest.raises(ValueError, match=r"auto_pass .* is not a bool; allowed: True, "
                                             r"False"):
            arschloch_env.env(auto_pass=bad)
    assert arschloch_env.env(auto_pass=np.bool_(False)).auto_pass is False


class SeatKeeper:
    """An agent that remembers the seat it was reset with and checks it at every move."""

    def reset(self, rules, seat, seed):
        self.seat = seat

    def act(self, observation, view):
        assert view["seat"] == self.seat, f"reset as seat {self.seat}, asked for {view['seat']}"
        return view["legal"][0]["id"]


def test_single_seat_gives_each_opponent_seat_its_own_agent():
    """One agent object for every opponent seat is copied per seat, each reset with its own
    seat (the agent protocol); a sampler may return specs and callables, as opponents may."""
    keeper = SeatKeeper()
    env = SingleSeatEnv(rules="culo", num_players=5, seat=0, opponents=keeper, rounds=2)
    env.reset(seed=0)
    done = False
    while not done:
        _, _, done, _, _ = env.step(int(np.flatnonzero(env.action_masks())[0]))
    assert len({id(a) for a in env.opponents}) == 4 and env.opponents[0] is keeper

    def lowest(observation, view):
        return int(np.flatnonzero(observation["action_mask"])[0])

    env = SingleSeatEnv(rules="culo", num_players=4, seat=0,
                        opponent_sampler=lambda rng, k: ["random", lowest, "greedy"][:k])
    env.reset(seed=1)
    env.step(int(np.flatnonzero(env.action_masks())[0]))
    assert [type(a).__name__ for a in env.opponents] == ["RandomAgent", "CallableAgent",
                                                         "GreedyAgent"]


class HoldsALock:
    """An agent object that cannot be copied (it holds a lock), as one wrapping a socket or a
    process would be."""
    uses_view = False

    def __init__(self):
        import threading
        self.lock = threading.Lock()

    def act(self, observation, view):
        return int(np.flatnonzero(observation["action_mask"])[0])


@pytest.mark.train_extra
def test_an_agent_object_that_cannot_be_copied_for_each_seat_is_refused_clearly():
    """Several seats need as many copies; one that refuses to be copied is an AgentSpecError
    that says why and what to give instead, before any game (not a bare TypeError later)."""
    from agents.base import AgentSpecError
    from arschloch_env.vector_env import ArschlochVecEnv
    from train.tournament import TournamentError, run_tournament
    words = r"agent 'HoldsALock' plays several seats.*cannot be copied.*package\.module:ClassName"
    with pytest.raises(AgentSpecError, match=words):
        SingleSeatEnv(rules="culo", num_players=4, opponents=HoldsALock())
    with pytest.raises(ValueError, match=words):
        ArschlochVecEnv("culo", 4, num_envs=2, opponent=HoldsALock())
    with pytest.raises(TournamentError, match=words):
        run_tournament("culo", [HoldsALock(), "greedy"], deals=2, seed=0, players=4)


@pytest.mark.train_extra
def test_every_env_keeps_the_table_size_a_rules_file_names(tmp_path):
    """A rules file's num_players is its table size, as for make_rules and the commands; the
    envs' default of 4 is for a preset name (or a file that names none)."""
    import json

    from arschloch_env.rules import make_rules
    from arschloch_env.vector import VectorGame
    from arschloch_env.vector_env import ArschlochVecEnv
    five = tmp_path / "five.json"
    five.write_text(json.dumps(make_rules("tavern", 5).to_dict()))
    bare = tmp_path / "bare.json"
    bare.write_text('{"preset": "tavern"}')
    for path, n in ((five, 5), (bare, 4)):
        assert arschloch_env.env(rules=str(path)).unwrapped.rules.num_players == n
        assert SingleSeatEnv(rules=str(path)).rules.num_players == n
        assert VectorGame(rules=str(path), num_games=2).rules.num_players == n
        assert ArschlochVecEnv(str(path), num_envs=2).rules.num_players == n
    assert SingleSeatEnv(rules=str(five), num_players=3).rules.num_players == 3


def test_an_opponent_sampler_must_return_one_agent_per_other_seat():
    for k in (2, 4):
        env = SingleSeatEnv(rules="culo", num_players=4,
                            opponent_sampler=lambda rng, n, k=k: ["random"] * k)
        with pytest.raises(ValueError, match=rf"opponent_sampler returned {k} agent\(s\) for "
                                             rf"the 3 other seats"):
            env.reset(seed=0)


@pytest.mark.train_extra
def test_a_bad_num_envs_is_named_as_given():
    from arschloch_env.vector_env import ArschlochVecEnv
    with pytest.raises(ValueError, match=r"^num_envs 0: must be an integer >= 1"):
        ArschlochVecEnv("culo", 4, num_envs=0)


def test_single_seat_reset_refused_by_the_sampler_leaves_the_episode_as_it_was():
    """A sampler that returns too few agents fails the reset; the learner's seat must not
    move away from the episode still in play (its steps were then refused as an opponent's)."""
    calls = []

    def sampler(rng, k):
        calls.append(k)
        return ["random"] * (k if len(calls) == 1 else k - 1)

    env = SingleSeatEnv(rules="culo", num_players=4, opponent_sampler=sampler)
    obs, info = env.reset(seed=0)
    seat = env.seat
    for _ in range(8):  # the seat is drawn again at every try
        with pytest.raises(ValueError, match="opponent_sampler returned 2"):
            env.reset()
        assert env.seat == seat == env.game.current
    assert (env.action_masks() == obs["action_mask"].astype(bool)).all()
    obs, reward, terminated, truncated, info = env.step(int(obs["action_mask"].argmax()))
    assert not info["illegal"]
