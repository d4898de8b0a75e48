"""The batched engine (arschloch_env.vector) against the reference engine, and its adapters.

The differential test is the heart: B games of ``VectorGame`` and B reference ``Game`` objects
(the same match seeds, hence the same deals) are driven with the same random legal actions;
at every step the rewards, done flags and seats to act must be equal, the masks equal and the
observations (and full states) bit-identical on a rotating share of the games, and at the end
the game records of the finished matches of every 4th game equal to the reference's. The
default run covers 100 to 250 matches per preset and table size; ``-m slow`` runs thousands.
The first use compiles the numba kernels (cached in ``__pycache__`` afterwards).
"""

from __future__ import annotations

import pickle
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from arschloch_env.arschloch import place_reward
from arschloch_env.cli import match_seed
from arschloch_env.engine import Game
from arschloch_env.observation import Encoder
from arschloch_env.records import read_matches
from arschloch_env.replay import replay_file
from arschloch_env.rules import PRESETS, RulesError, make_rules
from arschloch_env.vector import VectorActionError, VectorGame

PLAYERS = (3, 4, 5, 6)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def _explain(vg: VectorGame, got: np.ndarray, want: np.ndarray) -> str:
    views_got, views_want = vg.layout.views(got), vg.layout.views(want)
    bad = [k for k in views_got if not np.array_equal(views_got[k], views_want[k])]
    return f"slices differ: {bad}: {[(views_got[k], views_want[k]) for k in bad[:2]]}"


def differential(tmp_path, rules, B: int, steps: int, seed: int, check_every: int = 4,
                 record_every: int = 4, reward: str = "place", check_state: bool = False) -> int:
    """Drives VectorGame and the reference side by side; returns the matches played.

    Every step compares rewards, done flags and seats to act of all games, the masks of every
    other game and the observations (and full states) of every ``check_every``-th game
    (rotating), every 8th step also the observations of other seats; the game records of
    every ``record_every``-th game are compared at the end.
    (Each action is also checked by the reference, which raises on an illegal one.)
    """
    path = tmp_path / "vector.jsonl"
    recorded = range(0, B, record_every)
    vg = VectorGame(rules, num_games=B, seed=seed, record_path=path, record_games=recorded,
                    reward=reward)
    n = vg.n
    enc = Encoder(vg.R)
    obs, mask = vg.reset()
    rec = [j % record_every == 0 for j in range(B)]
    refs = [Game(rules, seed=int(vg.match_seed[j]), match_index=int(vg.match_index[j]),
                 record=rec[j], auto_pass=True) for j in range(B)]
    for j, g in enumerate(refs):
        assert _same_bits(obs[j], enc.observe(g, g.current)), _explain(vg, obs[j],
                                                                        enc.observe(g, g.current))
    assert np.array_equal(mask, np.stack([g.legal_mask() for g in refs]))
    finished: list[list[dict]] = []
    matches = 0
    exp_rew = np.zeros((B, n), np.float32)
    exp_done = np.zeros(B, bool)
    for t in range(steps):
        actions = vg.sample_actions()
        obs, mask, rew, done = vg.step(actions)
        seeds, index = vg.match_seed.tolist(), vg.match_index.tolist()
        exp_rew[:] = 0
        exp_done[:] = False
        for j, a in enumerate(actions.tolist()):
            g = refs[j]
            g.step(a)
            if g.last_places is not None:
                exp_rew[j] = [place_reward(p, n) if reward == "place" else n - p
                              for p in g.last_places]
            if g.is_over:
                exp_done[j] = True
                matches += 1
                if rec[j]:
                    finished.append(g.events)
                assert vg.last_totals[j].tolist() == g.totals
                assert np.flatnonzero(vg.last_winners[j]).tolist() == g.winners
                refs[j] = Game(rules, seed=seeds[j], match_index=index[j], record=rec[j],
                               auto_pass=True)
        assert np.array_equal(rew, exp_rew), (t, np.argwhere(rew != exp_rew))
        assert np.array_equal(done, exp_done), t
        assert vg.current_seat.tolist() == [g.current for g in refs], t
        for j in range(t % 2, B, 2):
            legal = refs[j].legal_actions()
            assert np.flatnonzero(mask[j]).tolist() == legal, (t, j, legal)
        state = vg.state() if check_state else None
        if check_state:  # the observation, then the hidden part a trainer stores
            assert _same_bits(state[:, :vg.obs_size], obs), t
            assert _same_bits(state[:, vg.obs_size:], vg.hidden_state()), t
        if t % 8 == 0:  # what the other seats see
            seats = (vg.current_seat + 1 + t // 8 % (n - 1)) % n
            other = vg.observe(seats)
            for j in range(t // 8 % check_every, B, check_every):
                want = enc.observe(refs[j], int(seats[j]))
                assert _same_bits(other[j], want), (t, j, _explain(vg, other[j], want))
        for j in range(t % check_every, B, check_every):
            g = refs[j]
            want = enc.observe(g, g.current)
            assert _same_bits(obs[j], want), (t, j, _explain(vg, obs[j], want))
            if check_state:
                assert _same_bits(state[j], enc.state(g, g.current)), (t, j)
    vg.close()
    got = [[e for _, e in m] for m in read_matches(path)]
    assert len(got) == len(finished)
    for m, (x, y) in enumerate(zip(got, finished)):
        if x != y:
            first = next((i for i, (a, b) in enumerate(zip(x, y)) if a != b), None)
            raise AssertionError(f"record of match {m} differs at event {first}: "
                                 f"{x[first] if first is not None else len(x)} != "
                                 f"{y[first] if first is not None else len(y)}")
    return matches


# -- the same deals ---------------------------------------------------------------------------

def test_shuffles_and_seeds_match_numpy():
    from arschloch_env import vector_rng as vr
    r = np.zeros(vr.NRNG, np.uint64)
    for seed in (0, 1, 7, 2**31 - 2, 2**32 + 5, 2**62 + 3):
        pcg = np.random.PCG64(seed).state["state"]
        vr.pcg_seed(r, seed)
        assert (int(r[vr.SHI]) << 64 | int(r[vr.SLO])) == pcg["state"]
        assert (int(r[vr.IHI]) << 64 | int(r[vr.ILO])) == pcg["inc"]
        for size in (32, 52):
            out = np.zeros((6, size), np.int32)
            vr.permutations(seed, size, 6, out, r)
            rng = np.random.default_rng(seed)
            assert all(np.array_equal(out[k], rng.permutation(size)) for k in range(6))
    for seed in (0, 5, 2**31 - 1, 2**40):
        for index in (0, 1, 99, 2**33):
            assert vr.series_seed(r, seed, index) == match_seed(seed, index)


def test_games_are_reference_matches():
    vg = VectorGame("tavern", 5, num_games=6, seed=[3, 1, 4, 1, 5, 9])
    vg.reset()
    assert vg.series_seed.tolist() == [3, 1, 4, 1, 5, 9]
    assert vg.match_seed.tolist() == [match_seed(s, 0) for s in (3, 1, 4, 1, 5, 9)]
    vg2 = VectorGame("tavern", 5, num_games=3, seed=11)
    assert vg2.series_seed.tolist() == [match_seed(11, j) for j in range(3)]


# -- the differential test --------------------------------------------------------------------

@pytest.mark.parametrize("n", PLAYERS)
@pytest.mark.parametrize("preset", list(PRESETS))
def test_differential(tmp_path, preset, n):
    rules = make_rules(preset, n)
    matches = differential(tmp_path, rules, B=64, steps=800, seed=1000 + n,
                           check_state=n == 4)
    assert matches >= 80  # 100 (culo-points, 3 players) to 250 (culo, 4 players)


@pytest.mark.parametrize("n", PLAYERS)
@pytest.mark.parametrize("preset", list(PRESETS))
def test_differential_one_round_matches(tmp_path, preset, n):
    """Thousands of short matches per preset and table size in the default run: one round
    each (deal, leaders, tricks, outs, match end), beside the whole matches above (which add
    the swaps and exchanges of later rounds)."""
    rules = make_rules(preset, n, rounds=1)
    matches = differential(tmp_path, rules, B=128, steps=800, seed=3000 + n,
                           check_state=False)
    assert matches >= 1000


@pytest.mark.slow
@pytest.mark.parametrize("n", PLAYERS)
@pytest.mark.parametrize("preset", list(PRESETS))
def test_differential_thousands(tmp_path, preset, n):
    """The long run: thousands of matches per preset and table size (``-m slow``)."""
    rules = make_rules(preset, n)
    matches = differential(tmp_path, rules, B=256, steps=4000, seed=2000 + n,
                           check_state=True)
    assert matches >= 2000


@pytest.mark.parametrize("overrides", [
    dict(preset="tavern", no_finish_on_top=True, top_card_ends_trick=True, num_players=4),
    dict(preset="culo", top_card_ends_trick=False, leftover_swap=False, num_players=5),
    dict(preset="culo", deal="all", first_leader="rotate", num_players=3, rounds=3),
    dict(preset="culo-52", exchange_cards=3, vice_exchange_cards=3, num_players=6),
    dict(preset="culo-points", target_points=4, exchange_cards=0, vice_exchange_cards=0,
         num_players=4),
    dict(preset="culo", exchange_cards_3p=3, num_players=3, rounds=2),
    dict(preset="culo-ten", rank_order=["9", "8", "7", "T", "J", "Q", "K", "A"],
         num_players=6, rounds=1),
])
def test_differential_overrides(tmp_path, overrides):
    rules = make_rules(overrides.pop("preset"), **overrides)
    assert differential(tmp_path, rules, B=32, steps=500, seed=7) >= 20


def _random_rules(rng: np.random.Generator):
    """A preset at a random table size with every field overridden at random."""
    from arschloch_env.cards import ALL_RANKS, SKAT_RANKS
    give = int(rng.integers(0, 4))
    overrides = dict(
        deal="equal" if rng.random() < 0.7 else "all", leftover_swap=bool(rng.random() < 0.7),
        first_leader=str(rng.choice(["lowest_club", "rotate"])),
        no_finish_on_top=bool(rng.random() < 0.5), top_card_ends_trick=bool(rng.random() < 0.5),
        exchange_cards=give, vice_exchange_cards=int(rng.integers(0, give + 1)),
        exchange_cards_3p=int(rng.integers(0, 4)))
    if rng.random() < 0.5:
        overrides["rank_order"] = [str(r) for r in rng.permutation(
            list(SKAT_RANKS if rng.random() < 0.5 else ALL_RANKS))]
    if rng.random() < 0.5:
        overrides["target_points"] = int(rng.integers(1, 7))
    else:
        overrides["rounds"] = int(rng.integers(1, 4))
    return make_rules(str(rng.choice(sorted(PRESETS))), int(rng.integers(3, 7)), **overrides)


def differential_of_random_rules(tmp_path, rules, seed: int) -> int:
    """``differential`` as both random-rules tests run it (every state checked); returns the
    matches played."""
    return differential(tmp_path, rules, B=16, steps=300, seed=seed, check_every=2,
                        check_state=True)


@pytest.mark.parametrize("seed", range(16))
def test_differential_random_rules(tmp_path, seed):
    """Random rule sets (every field at once): observations of the seat to act and of the
    others, full states, masks and records in every phase, as under the presets."""
    rules = _random_rules(np.random.default_rng(seed))
    assert differential_of_random_rules(tmp_path, rules, seed) >= 10, rules


@pytest.mark.slow
@pytest.mark.parametrize("block", range(10))
def test_differential_random_rules_many(tmp_path, block):
    """The long run of the test above: 500 more random rule sets (seeds 16 to 515), 50 per
    test so that a failure names a small block; the message names the seed and the rules."""
    for seed in range(16 + 50 * block, 16 + 50 * (block + 1)):
        rules = _random_rules(np.random.default_rng(seed))
        try:
            played = differential_of_random_rules(tmp_path / str(seed), rules, seed)
        except Exception as exc:  # an assertion here, or the reference refusing a move
            raise AssertionError(f"seed {seed}, {rules}: {exc!r}") from exc
        assert played >= 10, (seed, rules)


def test_differential_points_reward(tmp_path):
    rules = make_rules("culo-points", 5)
    assert differential(tmp_path, rules, B=32, steps=600, seed=3, reward="points") >= 20


def test_records_replay(tmp_path):
    from arschloch_env.cli import main
    path = tmp_path / "games.jsonl"
    with VectorGame("culo", 4, num_games=16, seed=5, record_path=path,
                    record_games=[0, 7, 15]) as vg:
        vg.reset()
        assert not path.exists()  # written atomically: the file appears on close
        for _ in range(700):
            vg.step(vg.sample_actions())
    results = replay_file(path)
    assert len(results) >= 6 and all(r.ok for r in results), [r.error for r in results]
    assert main(["replay", "--quiet", str(path)]) == 0


def test_records_written_without_close(tmp_path):
    """A script that never calls close() still gets its record file when it exits."""
    from conftest import run_python
    path = tmp_path / "vg.jsonl"
    code = ("from arschloch_env.vector import VectorGame\n"
            f"vg = VectorGame('culo', 4, num_games=4, seed=1, record_path={str(path)!r}, "
            "record_games=(0, 1))\n"
            "vg.reset()\n"
            "for _ in range(300):\n"
            "    vg.step(vg.sample_actions())\n")
    res = run_python(code)
    assert res.returncode == 0, res.stderr
    assert path.is_file() and not path.with_name(path.name + ".part").exists()
    assert all(r.ok for r in replay_file(path))


# -- determinism, seeds, threads --------------------------------------------------------------

def _run(vg: VectorGame, steps: int):
    out = [vg.reset()]
    for _ in range(steps):
        out.append(vg.step(vg.sample_actions()))
    return out


def test_deterministic_and_threads_agree():
    a = _run(VectorGame("tavern", 4, num_games=50, seed=9), 300)
    b = _run(VectorGame("tavern", 4, num_games=50, seed=9, threads=3), 300)
    for x, y in zip(a, b):
        assert all(np.array_equal(u, v) for u, v in zip(x, y))


def test_reset_continues_the_series():
    vg = VectorGame("culo", 3, num_games=4, seed=2)
    vg.reset()
    assert vg.match_index.tolist() == [0] * 4
    first = vg.match_seed
    vg.step(vg.sample_actions())
    vg.reset()
    assert vg.match_index.tolist() == [1] * 4
    assert vg.match_seed.tolist() == [match_seed(s, 1) for s in vg.series_seed.tolist()]
    vg.reset(seed=2)
    assert vg.match_index.tolist() == [0] * 4 and np.array_equal(vg.match_seed, first)


def test_batch_of_one_and_shapes():
    vg = VectorGame("culo-52", 6, num_games=1, seed=0)
    obs, mask = vg.reset()
    assert obs.shape == (1, 593) and obs.dtype == np.float32
    assert mask.shape == (1, 79) and mask.dtype == np.int8
    obs, mask, rew, done = vg.step(vg.sample_actions())
    assert rew.shape == (1, 6) and rew.dtype == np.float32 and done.dtype == bool
    assert vg.current_seat.shape == (1,) and vg.state().shape == (1, vg.state_size)


def test_the_masks_returned_are_the_callers_to_change():
    vg = VectorGame(rules="culo", num_players=4, num_games=4, seed=0)
    _, mask = vg.reset()
    true = mask.copy()
    mask[:] = 0  # e.g. a caller's own filter, in place
    assert (vg.action_masks == true).all() and vg.action_masks is not vg.action_masks
    vg.action_masks[:] = 0
    actions = vg.sample_actions()
    assert true[np.arange(4), actions].all()
    _, mask, _, _ = vg.step(actions)
    true = mask.copy()
    mask[:] = 0
    assert true[np.arange(4), vg.sample_actions()].all()


def test_step_where_moves_only_those_games():
    vg = VectorGame("culo-52", 5, num_games=10, seed=6)
    obs, mask = vg.reset()
    where = np.arange(10) % 3 == 0
    before = vg._st[~where].copy()
    actions = np.where(where, vg.sample_actions(), -1)  # ignored where not moving
    obs2, mask2, rew, done = vg.step(actions, where=where)
    assert np.array_equal(vg._st[~where], before)
    assert np.array_equal(obs2[~where], obs[~where]) and np.array_equal(mask2[~where],
                                                                        mask[~where])
    assert not rew[~where].any() and not done[~where].any()
    assert not np.array_equal(obs2[where], obs[where])
    with pytest.raises(VectorActionError, match="where: expected a bool array"):
        vg.step(actions, where=where.astype(int))
    with pytest.raises(ValueError, match="seats: expected"):
        vg.observe(np.full(10, 5))



def test_step_where_ignores_the_actions_of_waiting_games_whatever_they_are():
    """A waiting game's action is ignored, also one an unsigned array holds beyond int64
    (e.g. the largest uint64 as a "no action" filler); an active game's is still refused."""
    vg = VectorGame("culo", 4, num_games=3, seed=1)
    vg.reset()
    where = np.array([True, False, True])
    actions = vg.sample_actions().astype(np.uint64)
    actions[1] = np.iinfo(np.uint64).max
    before = vg._st[1].copy()
    vg.step(actions, where=where)
    assert np.array_equal(vg._st[1], before)
    actions = vg.sample_actions().astype(np.uint64)
    actions[2] = 2**63
    with pytest.raises(VectorActionError, match="game 2: action 9223372036854775808 is out"):
        vg.step(actions, where=where)

# -- bad input --------------------------------------------------------------------------------

def test_bad_actions_name_the_game_and_change_nothing():
    vg = VectorGame("culo", 4, num_games=8, seed=1)
    obs, mask = vg.reset()
    actions = vg.sample_actions()
    before = (vg._st.copy(), vg._rng.copy())
    bad = actions.copy()
    # a play the game cannot make: a pair of the rank of a card the seat lacks, or beyond it
    j = 5
    illegal = next(a for a in range(1, 33) if not mask[j, a])
    bad[j] = illegal
    with pytest.raises(VectorActionError, match=rf"game {j}: player_\d cannot "
                                                rf"'{vg.codec.describe(illegal)}'") as exc:
        vg.step(bad)
    assert exc.value.game == j
    # a worker process hands the error back pickled
    copy = pickle.loads(pickle.dumps(exc.value))
    assert (copy.game, str(copy)) == (j, str(exc.value))
    bad[j] = 49
    with pytest.raises(VectorActionError, match="game 5: action 49 is out of range"):
        vg.step(bad)
    with pytest.raises(VectorActionError, match=r"expected shape \(8,\)"):
        vg.step(actions[:7])
    with pytest.raises(VectorActionError, match=r"expected shape \(8,\)"):
        vg.step(actions.reshape(2, 4))
    with pytest.raises(VectorActionError, match="integer array, got dtype float64"):
        vg.step(actions.astype(float))
    with pytest.raises(VectorActionError, match="integer array, got dtype bool"):
        vg.step(np.ones(8, bool))
    with pytest.raises(VectorActionError, match=r"shape \(8,\), one action id per game, got "
                                                r"a tuple of parts of different shapes"):
        vg.step((actions, np.zeros((8, vg.num_actions))))  # a bundle's policy() as it comes
    assert np.array_equal(vg._st, before[0]) and np.array_equal(vg._rng, before[1])
    assert np.array_equal(vg.action_masks, mask)
    vg.step(actions.astype(np.int32))  # other integer dtypes are fine


def test_pair_error_message():
    vg = VectorGame("culo", 4, num_games=3, seed=4)
    _, mask = vg.reset()
    a = vg.sample_actions()
    pair = next(x for x in range(2, 33, 4) if not mask[2, x])
    a[2] = pair
    legal = " ".join(str(x) for x in np.flatnonzero(mask[2]))
    with pytest.raises(VectorActionError, match=rf"game 2: .* cannot 'pair of \w+s' \(action "
                                                rf"{pair}\) now \(play phase; legal: "
                                                rf"{np.flatnonzero(mask[2])[0]} \(") as exc:
        vg.step(a)
    named = [int(w) for w in str(exc.value).split("legal: ")[1].split() if w.isdigit()]
    assert " ".join(map(str, named)) == legal


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_step_refuses_exactly_what_the_mask_leaves_out(preset):
    """Every action id the mask leaves out is refused in every phase (an equal rank, a pass
    when leading, a give of a rank the seat lacks, a take of a card not face up ...), naming
    its game and changing nothing: the check on a step is code of its own, apart from the
    mask's."""
    B, n = 6, 4 if preset == "tavern" else 5  # 5 culo players leave cards over to swap
    vg = VectorGame(preset, n, num_games=B, seed=11)
    _, mask = vg.reset()
    phases, refused = set(), 0
    for _ in range(60):
        legal = vg.sample_actions()  # draws from the sampler streams: before the snapshot
        before = (vg._st.copy(), vg._rng.copy())
        phases |= set(vg.phase.tolist())
        for b in range(B):
            where = np.arange(B) == b
            for a in np.flatnonzero(mask[b] == 0):
                actions = legal.copy()
                actions[b] = a
                with pytest.raises(VectorActionError, match=rf"^game {b}: ") as exc:
                    vg.step(actions, where=where)
                assert exc.value.game == b
                refused += 1
        assert np.array_equal(vg._st, before[0]) and np.array_equal(vg._rng, before[1])
        _, mask, _, _ = vg.step(legal)
    swapped = make_rules(preset, n).num_leftover > 0
    assert phases == ({0, 1, 2, 3} if swapped else {0, 1}), phases  # play, give, take, lay
    assert refused > 60 * B * 20


def test_bad_construction():
    with pytest.raises(ValueError, match="num_games 0"):
        VectorGame("culo", 4, num_games=0)
    with pytest.raises(RulesError, match="unknown preset 'poker'"):
        VectorGame("poker", 4, num_games=2)
    with pytest.raises(RulesError, match="num_players"):
        VectorGame("culo", 7, num_games=2)
    with pytest.raises(RulesError, match="unknown rules field"):
        VectorGame("culo", 4, num_games=2, jokers=True)
    with pytest.raises(RulesError, match="exchange_cards"):
        VectorGame("culo", 4, num_games=2, exchange_cards=5)
    with pytest.raises(ValueError, match="reward 'money'"):
        VectorGame("culo", 4, num_games=2, reward="money")
    with pytest.raises(ValueError, match="record_games"):
        VectorGame("culo", 4, num_games=2, record_games=[0])
    with pytest.raises(ValueError, match="seed: expected"):
        VectorGame("culo", 4, num_games=2, seed=[1, 2, 3])
    with pytest.raises(RuntimeError, match="reset"):
        VectorGame("culo", 4, num_games=2).step(np.zeros(2, int))
    # the games' state before the first reset would read as zeros: seat 0 to act, round 0
    unstarted = VectorGame("culo", 4, num_games=2)
    for name in ("current_seat", "action_masks", "round", "totals", "phase"):
        with pytest.raises(RuntimeError, match=rf"^call reset\(\) before {name}$"):
            getattr(unstarted, name)
    for name, call in [("state", unstarted.state), ("hidden_state", unstarted.hidden_state),
                       ("observe", lambda: unstarted.observe(np.zeros(2, int)))]:
        with pytest.raises(RuntimeError, match=rf"^call reset\(\) before {name}\(\)$"):
            call()


def test_bad_record_games(tmp_path):
    with pytest.raises(ValueError, match=r"record_games \[5\]"):
        VectorGame("culo", 4, num_games=2, record_path=tmp_path / "x.jsonl", record_games=[5])
    for games in ([0.7], [True], "01", 3):
        with pytest.raises(ValueError, match="must be a list of game indices"):
            VectorGame("culo", 4, num_games=2, record_path=tmp_path / "x.jsonl",
                       record_games=games)
    assert VectorGame("culo", 4, num_games=2, threads=np.int64(2)).threads == 2


def test_a_closed_game_refuses_to_go_on(tmp_path):
    """close() writes the record: a later step must not change the games and then fail."""
    vg = VectorGame("culo", 4, num_games=2, record_path=tmp_path / "x.jsonl", record_games=[0])
    vg.reset()
    before = vg.state()
    vg.close()
    for call in (lambda: vg.step(vg.sample_actions()), vg.reset):
        with pytest.raises(RuntimeError, match="closed"):
            call()
    assert np.array_equal(vg.state(), before)


@pytest.mark.parametrize("part", ["state", "hidden_state"])
def test_state_into_a_given_array(part):
    """state(out=...) and hidden_state(out=...) write into the caller's array (a trainer's
    buffer row) what they return without it; an array of another shape, type or layout is
    refused, and left as it was."""
    vg = VectorGame("tavern", 5, num_games=3, seed=4)
    vg.reset()
    vg.step(vg.sample_actions())
    write = getattr(vg, part)
    size = vg.state_size if part == "state" else vg.hidden_size
    buf = np.zeros((2, 3, size), np.float32)
    written = write(out=buf[1])
    assert np.shares_memory(written, buf[1])
    assert np.array_equal(buf[1], write()) and not buf[0].any() and buf[1].any()
    for bad in (np.zeros((3, size), np.float64), np.zeros((2, size), np.float32),
                np.zeros((size, 3), np.float32).T):
        with pytest.raises(ValueError, match=rf"float32 array of shape \(3, {size}\)"):
            write(out=bad)
        assert not bad.any()


# -- the SB3 vector env -----------------------------------------------------------------------

def _random_masked(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    scores = rng.random(masks.shape) * masks
    return scores.argmax(axis=1)


@pytest.mark.train_extra
@pytest.mark.parametrize("seat", [None, 2])
def test_vec_env_episode_returns_are_match_points(seat):
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
    from arschloch_env.vector_env import ArschlochVecEnv
    env = ArschlochVecEnv("culo", 4, num_envs=16, seed=3, seat=seat, reward="points")
    assert is_masking_supported(env)
    obs = env.reset()
    assert obs.shape == (16, 413) and env.observation_space.contains(obs[0])
    rng = np.random.default_rng(0)
    returns = np.zeros(16)
    episodes = 0
    for _ in range(800):
        masks = get_action_masks(env)
        assert masks.shape == (16, 49) and masks.dtype == bool and masks.any(axis=1).all()
        assert np.array_equal(env.game.current_seat, env.seats)  # the learner decides
        obs, rewards, dones, infos = env.step(_random_masked(masks, rng))
        returns += rewards
        for i in np.flatnonzero(dones):
            info = infos[i]
            if seat is not None:
                assert info["seat"] == seat
            # points reward: the episode's return is the learner's match total
            assert returns[i] == info["totals"][info["seat"]]
            assert info["terminal_observation"].shape == (413,)
            returns[i] = 0
            episodes += 1
    assert episodes >= 16
    env.close()


@pytest.mark.train_extra
def test_vec_env_says_how_to_watch_its_games_instead_of_images():
    from arschloch_env.vector_env import ArschlochVecEnv
    env = ArschlochVecEnv("culo", 4, num_envs=2, seed=0)
    with pytest.raises(NotImplementedError, match="draws no images; to watch games, record "
                                                  "them"):
        env.get_images()
    env.close()


@pytest.mark.train_extra
def test_vec_env_names_the_opponent_callable_that_chose_an_illegal_action():
    """Not a bare engine error, which reads as if the learner had made the move."""
    from agents.runner import AgentError
    from arschloch_env.vector_env import ArschlochVecEnv

    def illegal_lowest(obs, mask):
        return np.argmin(mask, axis=1)

    env = ArschlochVecEnv("culo", 4, num_envs=2, seed=0, seat=0, opponent=illegal_lowest)
    with pytest.raises(AgentError, match=r"the opponent callable 'illegal_lowest', playing "
                                         r"player_\d, chose an illegal action: game \d: "):
        env.reset()
        for _ in range(50):
            env.step_async(env.action_masks().argmax(axis=1))
            env.step_wait()
    env.close()


@pytest.mark.train_extra
def test_vec_env_batched_opponent_and_maskable_ppo():
    from sb3_contrib import MaskablePPO
    from arschloch_env.vector_env import ArschlochVecEnv
    calls = []

    def lowest_legal(obs, mask):
        calls.append(len(obs))
        assert obs.shape[1] == 593 and mask.shape == (len(obs), 79)
        return mask.argmax(axis=1)

    env = ArschlochVecEnv("tavern", 4, num_envs=8, seed=1, seat=0, opponent=lowest_legal)
    model = MaskablePPO("MlpPolicy", env, n_steps=16, batch_size=64, n_epochs=1, seed=0,
                        policy_kwargs=dict(net_arch=[16]))
    model.learn(total_timesteps=128)
    assert calls and max(calls) <= 8
    with pytest.raises(ValueError, match="seat 4"):
        ArschlochVecEnv("culo", 4, num_envs=2, seat=4)
    with pytest.raises(ValueError, match="seat True"):
        ArschlochVecEnv("culo", 4, num_envs=2, seat=True)
    with pytest.raises(TypeError, match="takes num_envs, the number of games stepped together"):
        ArschlochVecEnv("culo", 4, num_games=8)
    numpy_seat = ArschlochVecEnv("culo", 4, num_envs=2, seat=np.int64(2))
    numpy_seat.reset()
    assert numpy_seat.seats.tolist() == [2, 2] and type(numpy_seat.fixed_seat) is int


@pytest.mark.train_extra
def test_vec_env_takes_agents_that_play_on_the_observation():
    from agents.base import make_agent
    from agents.bundle import BundleError
    from agents.greedy import GreedyAgent
    from arschloch_env.vector_env import ArschlochVecEnv, MirroredOpponent, batched_opponent
    from arschloch_env.rules import make_rules

    env = ArschlochVecEnv("culo", 4, num_envs=8, seed=2, seat=0, opponent="greedy")
    assert isinstance(env.opponent, MirroredOpponent)  # a greedy of its own in every seat
    env.reset()
    for _ in range(30):  # whole matches against greedy
        env.step(env.action_masks().argmax(axis=1))
    copies = [a for seats in env.opponent.agents.values() for a in seats if a is not None]
    assert len({id(a) for a in copies}) == len(copies) == 8 * 3
    assert all(isinstance(a, GreedyAgent) for a in copies)
    obs, mask = env.game.reset(seed=5)
    bundle = str(Path(__file__).resolve().parents[1] / "bots" / "ppo_vec_culo_expert")
    play = batched_opponent(bundle, make_rules("culo", 4))
    assert play(obs, mask).tolist() == make_agent(bundle).policy(obs, mask)[0].tolist()
    with pytest.raises(BundleError, match="preset"):
        ArschlochVecEnv("tavern", 4, num_envs=2, opponent=bundle)
    with pytest.raises(ValueError, match="opponent: unknown agent spec"):
        ArschlochVecEnv("culo", 4, num_envs=2, opponent="greedyy")


@pytest.mark.train_extra
@pytest.mark.parametrize("make", ["random_agent", "sampling_clone"])
def test_vec_env_replays_a_sampling_observation_opponent(make):
    """One object plays every opponent seat; a seeded env reseeds it, so that an agent that
    samples replays exactly, at construction and on a reset after seed()."""
    from agents.mlp import MLP, MLPAgent
    from agents.random_agent import RandomAgent
    from arschloch_env.vector_env import ArschlochVecEnv

    def opponent():
        if make == "random_agent":
            return RandomAgent()
        return MLPAgent(MLP.load(Path(__file__).resolve().parents[1] / "bots"
                                 / "expert_clone_culo.npz"))

    def rollout(env):
        out = [env.reset()]
        for _ in range(30):
            out.append(env.step(env.action_masks().argmax(1))[0])
        return np.stack(out)

    envs = [ArschlochVecEnv("culo", 4, num_envs=8, seed=0, seat=0, opponent=opponent())
            for _ in range(2)]
    first = rollout(envs[0])
    assert np.array_equal(first, rollout(envs[1]))
    envs[0].seed(0)
    assert np.array_equal(first, rollout(envs[0]))


@pytest.mark.train_extra
def test_vec_env_refused_step_keeps_the_carried_reward():
    """Rewards of a new match before the learner's first decision are paid with its next
    step; a step refused for an illegal action must change nothing, those rewards included."""
    from arschloch_env.vector import VectorActionError
    from arschloch_env.vector_env import ArschlochVecEnv

    envs = [ArschlochVecEnv("culo", 6, num_envs=256, seed=1, seat=None, rounds=2)
            for _ in range(2)]
    for env in envs:
        env.reset()
    rng = np.random.default_rng(0)
    for _ in range(2000):  # a carried reward comes within a few hundred steps
        if envs[0]._carry.any():
            break
        m = envs[0].action_masks()
        actions = (rng.random(m.shape) * m).argmax(1)
        for env in envs:
            env.step(actions)
    else:
        pytest.fail("no match paid a reward before its learner's first decision")
    i = int(np.flatnonzero(envs[0]._carry)[0])
    m = envs[0].action_masks()
    legal = m.argmax(1)
    bad = legal.copy()
    bad[i] = int(np.flatnonzero(m[i] == 0)[0])
    with pytest.raises(VectorActionError):
        envs[0].step(bad)
    assert np.array_equal(envs[0].step(legal)[1], envs[1].step(legal)[1])


@pytest.mark.train_extra
def test_vec_env_keeps_sb3_vec_env_contracts():
    """reset_infos name each game's seat after every automatic restart; get_attr of a per-game
    attribute is per game; set_attr is for all games at once and not for what is fixed;
    seed(None) draws a seed, as SB3's VecEnv does."""
    from arschloch_env.vector_env import ArschlochVecEnv
    env = ArschlochVecEnv("culo", 4, num_envs=4, seed=1, seat=None, rounds=1)
    env.reset()
    rng = np.random.default_rng(0)
    restarts = 0
    for _ in range(60):
        m = env.action_masks()
        _, _, done, _ = env.step((rng.random(m.shape) * m).argmax(1))
        restarts += int(done.sum())
        assert [i["seat"] for i in env.reset_infos] == env.seats.tolist()
    assert restarts > 4
    assert env.get_attr("seats", [1, 3]) == [env.seats[1], env.seats[3]]
    assert env.get_attr("num_envs", [0]) == [4]
    with pytest.raises(ValueError, match="share its attributes"):
        env.set_attr("fixed_seat", 2, indices=[0])
    with pytest.raises(ValueError, match="make a new ArschlochVecEnv"):
        env.set_attr("opponent", "greedy")
    env.set_attr("fixed_seat", 2)
    assert env.fixed_seat == 2
    drawn = env.seed(None)
    assert len(set(drawn)) == 1 and isinstance(drawn[0], int)
    # an env-wide method runs once for all the games, never once per game
    assert env.env_method("seed", 9) == [[9] * 4] * 4 and env._next_seed == 9
    with pytest.raises(ValueError, match="share its methods"):
        env.env_method("reset", indices=[0, 1])
    assert len(env.env_method("action_masks", indices=[2])) == 1
    env.set_options(None)
    env.set_options([{}] * 4)
    with pytest.raises(ValueError, match="reset takes no options"):
        env.set_options({"match_index": 3})


@pytest.mark.train_extra
def test_vec_env_refuses_actions_of_another_shape():
    """One action per game along the first axis: 3 actions for 4 games were refused with
    numpy's reshape error, and a 2x2 array was flattened into the games' actions."""
    from arschloch_env.vector_env import ArschlochVecEnv
    env, twin = (ArschlochVecEnv("culo", 4, num_envs=4, seed=1, seat=0) for _ in range(2))
    env.reset()
    twin.reset()
    legal = env.action_masks().argmax(1)
    for bad in (legal[:3], legal.reshape(2, 2), legal.reshape(1, 4), np.append(legal, 0)):
        with pytest.raises(VectorActionError, match=r"expected shape \(4,\), one action id "
                                                    r"per game, got shape "
                                                    + re.escape(str(bad.shape))):
            env.step(bad)
    with pytest.raises(VectorActionError, match=r"shape \(4,\), one action id per game, got a "
                                                r"tuple of parts of different shapes"):
        env.step((legal, np.zeros((4, env.action_space.n))))  # a bundle's policy() as it comes
    obs, rew, done, _ = env.step(legal.reshape(4, 1))  # a policy's column is fine
    want = twin.step(legal)
    assert np.array_equal(obs, want[0]) and np.array_equal(rew, want[1])


@pytest.mark.train_extra
def test_vec_env_set_attr_refuses_a_seat_off_the_table():
    """set_attr("fixed_seat") is checked as the constructor's seat: seat 7 at four seats was
    taken and broke the step that ended a match (an IndexError after the engine moved)."""
    from arschloch_env.vector_env import ArschlochVecEnv
    env = ArschlochVecEnv("culo", 4, num_envs=4, seed=1, seat=None, rounds=1)
    env.reset()
    for bad in (7, -1, 1.5, True):
        with pytest.raises(ValueError, match=rf"seat {bad!r} is not a seat of a 4-player "
                                             rf"table \(0..3"):
            env.set_attr("fixed_seat", bad)
    assert env.fixed_seat is None
    env.set_attr("fixed_seat", np.int64(2))
    assert type(env.fixed_seat) is int
    rng = np.random.default_rng(0)
    for _ in range(60):  # matches end, the learner now at seat 2
        m = env.action_masks()
        env.step((rng.random(m.shape) * m).argmax(1))
    assert 2 in env.seats.tolist()


@pytest.mark.train_extra
@pytest.mark.parametrize("bad", [-1, 2**63, "a", 1.5, [1, 2]])
def test_vec_env_refuses_a_bad_seed_when_given(bad):
    """seed() refuses what the games cannot be seeded with, and keeps the seed asked for
    before: taken, it made the next reset fail with numpy's words and lost that seed."""
    from arschloch_env.vector_env import ArschlochVecEnv
    env, twin = (ArschlochVecEnv("culo", 4, num_envs=3, seed=1) for _ in range(2))
    env.seed(5)
    twin.seed(5)
    with pytest.raises(ValueError, match="seed"):
        env.seed(bad)
    assert np.array_equal(env.reset(), twin.reset())
    assert env.seats.tolist() == twin.seats.tolist()


@pytest.mark.train_extra
def test_vec_env_records_name_the_agents(tmp_path):
    """The record of every match names the learner's seat of that match and the opponent."""
    from arschloch_env.vector_env import ArschlochVecEnv
    path = tmp_path / "games.jsonl"
    env = ArschlochVecEnv("culo", 4, num_envs=3, seed=2, seat=None, opponent="greedy",
                          rounds=1, record_path=path, record_games=[0, 2])
    env.reset()
    seats = {0: [], 2: []}
    rng = np.random.default_rng(0)
    for _ in range(80):
        m = env.action_masks()
        _, _, done, infos = env.step((rng.random(m.shape) * m).argmax(1))
        for j in (0, 2):
            if done[j]:
                seats[j].append(infos[j]["seat"])
    env.close()
    learner_seats = [[int(name[-1]) for name, label in match[0][1]["agents"].items()
                      if label == "learner"] for match in read_matches(path)]
    assert all(len(s) == 1 for s in learner_seats) and len(learner_seats) >= 10
    assert sorted(s[0] for s in learner_seats) == sorted(seats[0] + seats[2])
    labels = {label for match in read_matches(path) for label in match[0][1]["agents"].values()}
    assert labels == {"learner", "greedy"}


class SeatLog:
    """An agent of one's own that reads the view: logs every reset and checks every view."""
    resets: list = []

    def reset(self, rules, seat, seed):
        self.seat = seat
        SeatLog.resets.append(seat)

    def act(self, observation, view):
        assert view["seat"] == self.seat  # its own copy for its own seat
        legal = [m["id"] for m in view["legal"]]
        assert legal == np.flatnonzero(observation["action_mask"]).tolist()
        return legal[-1]


class ObservationSeatLog(SeatLog):
    """The same on the observation alone: no view, and still reset per match and seat."""
    uses_view = False

    def act(self, observation, view):
        assert view is None
        return int(np.flatnonzero(observation["action_mask"])[-1])


@pytest.mark.train_extra
@pytest.mark.parametrize("opponent", ["expert", SeatLog(), ObservationSeatLog()])
def test_vec_env_plays_agents_that_read_the_view(opponent):
    """Agents that read the public view get it from a reference game per table that follows
    the batched one, and every agent without a batched policy a copy per opponent seat, reset
    with its seat in every match (the agent protocol's reset)."""
    from arschloch_env.observation import Encoder
    from arschloch_env.vector_env import ArschlochVecEnv, MirroredOpponent
    SeatLog.resets = []
    env = ArschlochVecEnv("culo", 4, num_envs=6, seed=3, seat=None, opponent=opponent,
                          rounds=2)
    assert isinstance(env.opponent, MirroredOpponent)
    enc = Encoder(env.game.R)
    obs = env.reset()
    rng = np.random.default_rng(0)
    episodes = skipped = 0
    for _ in range(120):
        for j, mirror in env.opponent.mirrors.items():  # the mirrors keep up
            seat = int(env.seats[j])
            assert mirror.current == seat == env.game.current_seat[j]
            assert np.array_equal(enc.observe(mirror, seat), obs[j])
            assert env.opponent.agents[j][seat] is None  # the learner's seat
        m = env.action_masks()
        obs, _, done, infos = env.step((rng.random(m.shape) * m).argmax(1))
        episodes += int(done.sum())
        skipped += sum(i.get("skipped_matches", 0) for i in infos)
    assert episodes >= 6
    if isinstance(opponent, SeatLog):  # either kind
        # three opponent seats reset per match begun: the first six and one per match ended
        assert len(SeatLog.resets) == 3 * (6 + episodes + skipped)
        assert sorted(set(SeatLog.resets)) == [0, 1, 2, 3]


class Returns:
    """An agent that answers every decision with ``value``."""
    uses_view = False

    def __init__(self, value):
        self.value = value

    def act(self, observation, view):
        return self.value


class Fails:
    """An agent that raises, or calls sys.exit(), at its first decision."""
    uses_view = False

    def __init__(self, exit_code=None):
        self.exit_code = exit_code

    def act(self, observation, view):
        if self.exit_code is not None:
            sys.exit(self.exit_code)
        raise ValueError("boom in act")


@pytest.mark.train_extra
@pytest.mark.parametrize("exit_code, says", [(None, "ValueError: boom in act"),
                                             (3, "SystemExit: 3")])
def test_vec_env_names_an_agent_that_failed(exit_code, says):
    """As SingleSeatEnv does: the agent and its seat named, its sys.exit() no quiet end."""
    from agents.runner import AgentFailed
    from arschloch_env.vector_env import ArschlochVecEnv
    env = ArschlochVecEnv("culo", 4, num_envs=2, seed=0, seat=0, opponent=Fails(exit_code),
                          rounds=1)
    with pytest.raises(AgentFailed, match=rf"agent 'Fails' in player_\d raised {says}"):
        env.reset()
        env.step(env.action_masks().argmax(axis=1))


@pytest.mark.train_extra
@pytest.mark.parametrize("value,words", [
    ("1", "'1' is not an integer action id"),
    (1.0, "1.0 is not an integer action id"),
    (999, "999 is out of range"),
    (41, "cannot 'take"),  # a take in the play phase
])
def test_vec_env_names_an_agent_that_chose_an_illegal_action(value, words):
    """What an opponent agent returns is checked as the other envs check it (never cast to an
    int: 5.9 would play 5), and the env then refuses to step until it is reset."""
    from agents.runner import AgentError
    from arschloch_env.vector_env import ArschlochVecEnv
    env = ArschlochVecEnv("culo", 4, num_envs=2, seed=0, seat=0, opponent=Returns(value),
                          rounds=1)
    with pytest.raises(AgentError, match=rf"agent 'Returns' in player_\d chose an illegal "
                                         rf"action: .*{words}"):
        env.reset()  # an opponent leads a game, or, if the learner leads both, its answer:
        env.step(env.action_masks().argmax(axis=1))
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(np.zeros(2, np.int64))
    env.opponent = ArschlochVecEnv("culo", 4, num_envs=2, opponent="greedy").opponent
    env.reset()
    env.step(env.action_masks().argmax(axis=1))


class BatchedReturns:
    """A stateless agent with a batched ``policy`` (as a bundle has), so that one object plays
    every opponent seat, answering every decision with ``value``."""
    name = "batched"
    uses_view = False

    def __init__(self, value):
        self.value = value

    def policy(self, observations, masks):
        chosen = np.full(len(observations), self.value)
        return chosen, np.zeros(masks.shape, np.float32)

    def act(self, observation, view):
        return self.value


@pytest.mark.train_extra
@pytest.mark.parametrize("value,words", [
    (0.0, r"returned float64 values of shape \(\d,\); expected \d integer action ids"),
    (999, r"chose an illegal action: game \d: action 999 is out of range"),
    (41, r"chose an illegal action: game \d: player_\d cannot 'take"),
])
def test_vec_env_names_a_batched_agent_that_chose_an_illegal_action(value, words):
    """An agent played as one batched object is checked like one asked row by row: the error
    names it (and, for an illegal action, its seat), and the env then waits for a reset."""
    from agents.runner import AgentError
    from arschloch_env.vector_env import ArschlochVecEnv, SharedOpponent
    env = ArschlochVecEnv("culo", 4, num_envs=2, seed=0, seat=0,
                          opponent=BatchedReturns(value), rounds=1)
    assert isinstance(env.opponent, SharedOpponent)
    with pytest.raises(AgentError, match=rf"agent 'batched'.*{words}"):
        env.reset()
        env.step(env.action_masks().argmax(axis=1))
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(np.zeros(2, np.int64))


@pytest.mark.train_extra
def test_vec_env_refuses_a_batched_opponent_that_returns_no_integers():
    from arschloch_env.vector_env import ArschlochVecEnv

    def floats(obs, mask):
        return mask.argmax(axis=1) + 0.9

    env = ArschlochVecEnv("culo", 4, num_envs=2, seed=0, seat=0, opponent=floats)
    with pytest.raises(ValueError, match=r"opponent floats returned float64 values of shape "
                                         r"\(1,\); expected 1 integer action ids"):
        env.reset()


@pytest.mark.train_extra
def test_vec_env_skips_a_match_without_a_learner_decision():
    """In single rounds at 6 players a seat sometimes only ever passes by force: that match
    is no episode, and its rewards do not leak into the next one."""
    from arschloch_env.vector_env import ArschlochVecEnv
    env = ArschlochVecEnv("culo", 6, num_envs=512, seed=1, rounds=1, reward="points")
    env.reset()
    rng = np.random.default_rng(0)
    ret, skipped, episodes = np.zeros(512), 0, 0
    for _ in range(150):
        m = env.action_masks()
        _, rew, done, infos = env.step((rng.random(m.shape) * m).argmax(1))
        ret += rew
        skipped += sum(i.get("skipped_matches", 0) for i in infos)
        for i in np.flatnonzero(done):
            assert ret[i] == infos[i]["totals"][infos[i]["seat"]]
            ret[i], episodes = 0.0, episodes + 1
    assert skipped > 0 and episodes > 1000


@pytest.mark.train_extra
def test_vec_env_reset_counts_the_matches_it_skipped():
    """A match without a learner decision can also be played through by reset() itself (about
    one game in 8,000 at 6 players, single rounds): reset_infos count it, as step's infos do."""
    from arschloch_env.vector_env import ArschlochVecEnv
    env = ArschlochVecEnv("culo", 6, num_envs=16384, seed=11, rounds=1)
    env.reset()
    played_through = env.game.match_index  # each reset game starts at match 0
    assert played_through.sum() > 0
    assert [i.get("skipped_matches", 0) for i in env.reset_infos] == played_through.tolist()
    assert [i["seat"] for i in env.reset_infos] == env.seats.tolist()


def test_the_kernel_cache_stamp_covers_every_jitted_source():
    """Numba checks a cached kernel against its own file only: the stamp that drops the cache
    must hash every module whose functions the kernels compile, ``cards`` (the suit orders)
    included, or an edit there would leave the batched engine on the old code."""
    import re

    from arschloch_env.vector_rng import KERNEL_MODULES

    here = Path(__file__).resolve().parents[1] / "arschloch_env"
    jitted = set()
    for name in KERNEL_MODULES:
        if (here / f"{name}.py").is_file():
            jitted |= set(re.findall(r"njit\(\*\*JIT\)\((\w+)\.", (here / f"{name}.py")
                                     .read_text()))
    assert jitted and jitted <= set(KERNEL_MODULES), jitted - set(KERNEL_MODULES)


class KeepsANetworkAsPolicy:
    """An agent that plays through ``act`` and keeps a callable named ``policy`` (a network,
    say): it is not a batched agent."""
    name = "keeps-net"

    def __init__(self):
        self.policy = lambda x: x.sum()
        self.resets = []

    def reset(self, rules, seat, seed=None):
        self.resets.append(seat)

    def act(self, observation, view):
        return int(np.flatnonzero(observation["action_mask"])[0])


class HasAPolicyHelper(KeepsANetworkAsPolicy):
    """An agent of one's own with a two-argument method named ``policy`` that reads the view
    (the protocol's default): it is not a batched agent either."""
    name = "helper"

    def __init__(self):
        super().__init__()
        del self.policy  # the class's method below, not the network attribute

    def policy(self, observation, view):
        assert view is not None and view["seat"] in (1, 2, 3)
        return int(np.flatnonzero(observation["action_mask"])[0])

    def act(self, observation, view):
        return self.policy(observation, view)


@pytest.mark.train_extra
@pytest.mark.parametrize("agent", [KeepsANetworkAsPolicy, HasAPolicyHelper])
def test_vec_env_asks_an_agent_whose_policy_is_no_batched_one_through_act(agent):
    """A copy per opponent seat, reset with its seat every match, as the agent protocol has
    it."""
    from arschloch_env.vector_env import ArschlochVecEnv, MirroredOpponent
    env = ArschlochVecEnv("culo", 4, num_envs=2, seed=0, seat=0, opponent=agent(), rounds=1)
    assert isinstance(env.opponent, MirroredOpponent)
    env.reset()
    for _ in range(60):
        env.step(env.action_masks().argmax(axis=1))
    copies = [a for row in env.opponent.agents.values() for a in row if a is not None]
    assert {seat for a in copies for seat in a.resets} == {1, 2, 3}


@pytest.mark.train_extra
def test_vec_env_takes_a_bundle_path_as_a_path(tmp_path):
    from pathlib import Path
    from arschloch_env.vector_env import ArschlochVecEnv, SharedOpponent
    env = ArschlochVecEnv("culo", 4, num_envs=2, seed=0, seat=0,
                          opponent=Path("bots/ppo_vec_culo_expert"), rounds=1)
    assert isinstance(env.opponent, SharedOpponent)
    env.reset()
    env.step(env.action_masks().argmax(axis=1))


def test_a_threaded_vectorgame_copies_and_plays_on_as_the_original():
    """Its worker threads are no state: pickle and deepcopy refused them (a thread queue)."""
    import copy as copying

    vg = VectorGame("culo", 4, 5, seed=1, threads=2)
    vg.reset()
    copies = [pickle.loads(pickle.dumps(vg)), copying.deepcopy(vg)]
    for _ in range(120):
        actions = vg.sample_actions()
        expected = [a.copy() for a in vg.step(actions)]
        for other in copies:
            for got, want in zip(other.step(actions), expected):
                np.testing.assert_array_equal(got, want)
    for g in (vg, *copies):
        g.close()


def test_a_recording_vectorgame_refuses_a_shallow_copy_too(tmp_path):
    """copy.copy shared the record writer; the copy failed at its next match end, its games
    already stepped, once the original had closed the file."""
    import copy as copying

    vg = VectorGame("culo", 4, 2, seed=0, record_path=str(tmp_path / "r.jsonl"),
                    record_games=[0], rounds=1)
    vg.reset()
    for make_copy in (copying.copy, copying.deepcopy, lambda g: pickle.dumps(g)):
        with pytest.raises(TypeError, match="cannot be copied or pickled"):
            make_copy(vg)
    vg.close()


@pytest.mark.train_extra
def test_vec_env_before_reset_says_to_reset():
    from arschloch_env.vector_env import ArschlochVecEnv
    env = ArschlochVecEnv("culo", 4, num_envs=3, seed=0)
    with pytest.raises(RuntimeError, match=r"^call reset\(\) before action_masks\(\)"):
        env.action_masks()
    with pytest.raises(RuntimeError, match=r"^call reset\(\) before step\(\)"):
        env.step(np.zeros(3, np.int64))
    env.reset()
    assert env.action_masks().shape == (3, env.game.num_actions)
    env.close()
