"""The batched-engine trainer (``algo: ppo-vec``): GAE by hand, learning, resume, export.

The learning test trains a small ppo-vec run (256 games, 60k learner samples: well under a
minute on 2 cores once the engine's kernels are compiled and cached) and then needs the bot
to beat three random players in the duplicate evaluation of ``train/evaluate.py``: the 95% CI
of its rank points per round above par ((n-1)/2, what any seat averages when all play alike)
must exclude zero. Random play is the zero-skill reference and duplicate deals cancel card
luck, so a positive lower bound means the run learned to play better than chance. The run
also seats greedy and expert bots (mirror reference games, checked move by move with
``vec.debug``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from train.config import ConfigError, load_config
from train.ppo_vec import compute_advantages, policy_files

pytestmark = pytest.mark.train_extra

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = sorted((ROOT / "configs").glob("ppo_vec_*.yaml"))
SMALL = [
    "total_steps=60000", "checkpoint_every=30000", "torch_threads=1", "vec.collect_threads=1",
    "ppo.learning_rate=0.001", "ppo.lr_final=0.0005", "ppo.n_epochs=4", "ppo.gamma=0.99", "ppo.net_arch=[64,64]",
    "league.snapshot_every=15000", "league.max_snapshots=10",
    "vec.num_games=256", "vec.rollout_steps=32", "vec.debug=true",
    "vec.mix={current: 0.4, snapshots: 0.2, random: 0.3, greedy: 0.05, expert: 0.05}",
    "eval.every=0", "eval.deals=150", "eval.opponents=[random]", "eval.best_by=random",
]


def cli(*args, timeout=600, **kw):
    return subprocess.run([sys.executable, "-m", "arschloch_env.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT, **kw)


def train_args(run: Path, *extra: str) -> list[str]:
    out = ["train", "--config", str(CONFIGS[0]), "--run-dir", str(run), "--no-progress"]
    for item in [*SMALL, *extra]:
        out += ["--set", item]
    return out


def latest_meta(run: Path) -> dict:
    return json.loads((run / json.loads((run / "latest.json").read_text())["meta"]).read_text())


# -- GAE by hand ------------------------------------------------------------------------------

GAMMA, LAM = 0.9, 0.5
# One game, three seats. Seat 1 is a frozen opponent (not trained). Seat 2's move ends a
# round (rewards arrive for every seat on it), seat 1's move at t=4 ends the match.
#
#   t  seat  trained  value  rewards after the step  done
#   0   0     yes     0.5     0  0  0
#   1   1     no      -       0  0  0
#   2   2     yes     0.2     1  0 -1               round end
#   3   0     yes     0.4     0  0  0
#   4   1     no      -      -1  1  0               match end
#   5   2     yes     0.3     0  0  0               (next match)
#   6   0     yes     0.6     0  0  0
SEAT = [0, 1, 2, 0, 1, 2, 0]
TRAINED = [1, 0, 1, 1, 0, 1, 1]
VALUE = [0.5, 0.0, 0.2, 0.4, 0.0, 0.3, 0.6]
REWARDS = [[0, 0, 0], [0, 0, 0], [1, 0, -1], [0, 0, 0], [-1, 1, 0], [0, 0, 0], [0, 0, 0]]
DONE = [0, 0, 0, 0, 1, 0, 0]


def _trajectory(games: int = 1, rotate: int = 0):
    """The table above for ``games`` games; game g has every seat moved on by g*rotate."""
    T = len(SEAT)
    seat = np.zeros((T, games), np.int64)
    rewards = np.zeros((T, games, 6), np.float32)
    for g in range(games):
        shift = g * rotate
        seat[:, g] = (np.array(SEAT) + shift) % 3
        rewards[:, g, :3] = np.roll(np.array(REWARDS, np.float32), shift, axis=1)
    rep = lambda x, dt: np.repeat(np.array(x, dt)[:, None], games, axis=1)  # noqa: E731
    return seat, rep(TRAINED, bool), rewards, rep(DONE, bool), rep(VALUE, np.float32)


def test_gae_by_hand():
    seat, trained, rewards, done, values = _trajectory()
    adv, valid, open_return = compute_advantages(seat, trained, rewards, done, values,
                                                 gamma=GAMMA, lam=LAM)
    # Backwards. t=6 and t=5: the seats' last moves of the rollout, their next information
    # state is not known (seat 1 is to act): open, not trained on yet (valid False). t=4: the
    # match ends, every carry is terminal; then its rewards (-1, 1, 0) are added.
    # t=3, seat 0: delta = -1 + 0.9*0 - 0.4 = -1.4, A = -1.4 (terminal next)
    # t=2, seat 2: its reward -1 arrived on its own move; delta = -1 - 0.2 = -1.2, A = -1.2
    # t=0, seat 0: the +1 of t=2 arrived on seat 2's move; its next transition is t=3:
    #      delta = 1 + 0.9*0.4 - 0.5 = 0.86, A = 0.86 + 0.9*0.5*(-1.4) = 0.23
    expected = np.array([0.23, 0, -1.2, -1.4, 0, 0, 0])
    np.testing.assert_allclose(adv[:, 0], expected, atol=1e-6)
    assert valid[:, 0].tolist() == [True, False, True, True, False, False, False]
    np.testing.assert_allclose((adv + values)[[0, 2, 3], 0], [0.73, -1.0, -1.0], atol=1e-6)
    assert not open_return.any()


def test_open_transitions_are_finished_by_the_next_rollout():
    """The table above as one rollout, with 0.5 more for seat 2 after the last step: seat 2's
    move at t=5 and seat 0's at t=6 are open at its end. They are carried, with the rewards
    they have had, into the next rollout and finished there:

      t  seat  trained  value  rewards after the step  done
      0   2     yes     0.7     0  0  0
      1   1     no      -       1  0 -1               match end
    """
    from train.ppo_vec import CARRIED, Rollout, carry_open_transitions

    buf = Rollout(7, 1, obs_size=2, hidden_size=None, num_actions=3)
    main = slice(CARRIED, None)
    seat, trained, rewards, done, values = _trajectory()
    rewards[6, 0, 2] = 0.5
    buf.seat[main], buf.trained[main], buf.rewards[main] = seat, trained, rewards
    buf.done[main], buf.value[main] = done, values
    buf.obs[main, 0] = np.arange(7)[:, None]  # row t's observation: (t, t)
    buf.logp[main, 0] = -np.arange(7) / 10

    def update():
        adv, valid, open_return = compute_advantages(buf.seat, buf.trained, buf.rewards,
                                                     buf.done, buf.value, GAMMA, LAM)
        carry_open_transitions(buf, valid, open_return)
        return adv[:, 0], valid[:, 0]

    adv, valid = update()
    np.testing.assert_allclose(adv[main], [0.23, 0, -1.2, -1.4, 0, 0, 0], atol=1e-6)
    assert not valid[:CARRIED].any()
    # carried: seat 0's move of t=6 to row 0, seat 2's of t=5 (with its 0.5) to row 2
    assert buf.trained[:CARRIED, 0].tolist() == [True, False, True, False, False, False]
    assert buf.obs[[0, 2], 0, 0].tolist() == [6, 5]
    np.testing.assert_allclose(buf.logp[[0, 2], 0], [-0.6, -0.5])
    np.testing.assert_allclose(buf.value[[0, 2], 0], [0.6, 0.3])
    np.testing.assert_allclose(buf.rewards[:CARRIED, 0, 2], [0, 0, 0.5, 0, 0, 0])
    assert not buf.rewards[:CARRIED, 0, [0, 1, 3, 4, 5]].any()

    buf.seat[main], buf.trained[main], buf.value[main] = 0, False, 0.0
    buf.rewards[main], buf.done[main] = 0.0, False
    buf.seat[CARRIED:CARRIED + 2, 0], buf.trained[CARRIED, 0] = [2, 1], True
    buf.value[CARRIED, 0] = 0.7
    buf.rewards[CARRIED + 1, 0, :3], buf.done[CARRIED + 1, 0] = [1, 0, -1], True
    adv, valid = update()
    # t=0, seat 2: delta = -1 + 0 - 0.7 = -1.7 (terminal next)
    # carried seat 2: delta = 0.5 + 0.9*0.7 - 0.3 = 0.83, A = 0.83 + 0.9*0.5*(-1.7) = 0.065
    # carried seat 0: the match ended before it acted again: delta = 1 + 0 - 0.6 = 0.4
    np.testing.assert_allclose(adv[[0, 2, CARRIED]], [0.4, 0.065, -1.7], atol=1e-6)
    assert np.flatnonzero(valid).tolist() == [0, 2, CARRIED]
    assert not buf.trained[:CARRIED].any()  # nothing left open


def test_gae_keeps_games_and_seats_apart():
    # Three games of the same trajectory with the seats renumbered: the same advantages.
    seat, trained, rewards, done, values = _trajectory(games=3, rotate=1)
    adv, valid, _ = compute_advantages(seat, trained, rewards, done, values, gamma=GAMMA,
                                       lam=LAM)
    for g in range(3):
        np.testing.assert_allclose(adv[:, g], [0.23, 0, -1.2, -1.4, 0, 0, 0], atol=1e-6)
        assert (valid[:, g] == valid[:, 0]).all()


# -- GAE against a slow reference -------------------------------------------------------------

def _reference_gae(seat, trained, rewards, done, values, gamma, lam, T):
    """Per-seat GAE written out decision by decision over a whole stream of rollouts of T steps
    (arrays [N, B, ...], N a multiple of T). For each game, match and trained seat: the list of
    the seat's decisions; a decision's reward is everything the seat got from its step up to
    its next decision (or through the match end); gamma and lam count the seat's decisions;
    a match end is terminal. The trainer finishes a decision in the rollout of its next
    decision (or match end), so the sum of discounted deltas runs on only while the later
    decisions are finished in that same rollout (GAE truncated at its end, where the value
    bootstraps). Returns ({(t, game): (advantage, reward)} of the finished decisions, the set
    of open ones, {(game, match, seat): (rewards credited, rewards in the match)})."""
    N, B = seat.shape
    finished, still_open, totals = {}, set(), {}
    for j in range(B):
        ends = [t for t in range(N) if done[t, j]]
        for m, first in enumerate([0] + [e + 1 for e in ends]):
            end = next((e for e in ends if e >= first), None)  # None: not over in the stream
            last = N - 1 if end is None else end
            if first > last:
                continue
            for s in range(rewards.shape[2]):
                decs = [t for t in range(first, last + 1) if seat[t, j] == s and trained[t, j]]
                if not decs:
                    continue
                after = [*decs[1:], last + 1]
                r = [float(rewards[t:nxt, j, s].sum()) for t, nxt in zip(decs, after)]
                totals[(j, m, s)] = (sum(r), float(rewards[first:last + 1, j, s].sum()))
                closed = [*decs[1:], end]  # the step that finishes each decision
                for k, t in enumerate(decs):
                    if closed[k] is None:
                        still_open.add((t, j))
                        continue
                    adv, weight = 0.0, 1.0
                    for i in range(k, len(decs)):
                        if closed[i] is None or closed[i] // T != closed[k] // T:
                            break
                        next_value = float(values[decs[i + 1], j]) if i + 1 < len(decs) else 0.0
                        adv += weight * (r[i] + gamma * next_value - float(values[decs[i], j]))
                        weight *= gamma * lam
                    finished[(t, j)] = (adv, r[k])
    return finished, still_open, totals


def _trainer_gae(rollouts, gamma, lam):
    """The rollouts (seat, trained, rewards, done, values; [T, B, ...] each) through one
    Rollout buffer as the trainer takes them: compute_advantages, then
    carry_open_transitions. Returns {(stream step, game): advantage} of every row trained on
    (each once) and the set of transitions still carried at the end."""
    from train.ppo_vec import CARRIED, Rollout, carry_open_transitions

    T, B = rollouts[0][0].shape
    buf = Rollout(T, B, obs_size=1, hidden_size=None, num_actions=2)
    steps = slice(CARRIED, None)
    trained_on = {}
    for i, (seat, trained, rewards, done, values) in enumerate(rollouts):
        buf.seat[steps], buf.trained[steps], buf.done[steps] = seat, trained, done
        buf.rewards[steps] = 0.0
        buf.rewards[steps, :, :rewards.shape[2]] = rewards
        buf.value[steps] = values
        buf.obs[steps, :, 0] = (i * T + np.arange(T))[:, None]  # the stream step, carried along
        adv, valid, open_return = compute_advantages(buf.seat, buf.trained, buf.rewards,
                                                     buf.done, buf.value, gamma, lam)
        for t, j in zip(*np.nonzero(valid)):
            key = (int(buf.obs[t, j, 0]), int(j))
            assert key not in trained_on, f"{key} trained on twice"
            trained_on[key] = float(adv[t, j])
        carry_open_transitions(buf, valid, open_return)
    carried = {(int(buf.obs[s, j, 0]), int(j)) for s, j in zip(*np.nonzero(buf.trained[:CARRIED]))}
    return trained_on, carried


def _check_gae_against_reference(rollouts, gamma, lam):
    stream = [np.concatenate([r[k] for r in rollouts]) for k in range(5)]
    finished, still_open, totals = _reference_gae(*stream, gamma, lam, len(rollouts[0][0]))
    trained_on, carried = _trainer_gae(rollouts, gamma, lam)
    assert set(trained_on) == set(finished) and carried == still_open
    for key, (adv, _) in finished.items():
        assert trained_on[key] == pytest.approx(adv, rel=1e-5, abs=1e-5), key
    return finished, totals


def _split(T, *arrays):
    return [tuple(np.asarray(a[i:i + T]) for a in arrays) for i in range(0, len(arrays[0]), T)]


def test_gae_matches_a_per_seat_reference_by_hand():
    """Two games of four seats, rollouts of 4 steps. Game 0: seat 2 goes out early in round 1
    and does not act again in its match (round end at step 5, match end at step 8), seat 3 is
    a frozen opponent; the next match (seat 0 frozen there) starts in the same slot and seat 1
    decides only once in it. Game 1
    (three seats, all trained): one long match with rewards at three round ends, one of them
    on a rollout's last step."""
    #         t:  0  1  2  3 | 4  5  6  7 | 8  9 10 11
    seat = np.array([[0, 1, 2, 3, 0, 1, 3, 0, 1, 2, 0, 3],
                     [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2]]).T
    trained = np.array([[1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 0, 0],
                        [1] * 12], bool).T
    rewards = np.zeros((12, 2, 4), np.float32)
    rewards[5, 0] = [-1, 1, 3, -3]   # round end in game 0; seat 2 last acted at t=2
    rewards[8, 0] = [2, -2, 1, -1]   # match end in game 0
    rewards[11, 0] = [1, 0, 0, -1]   # round end of the new match, nobody acted again
    rewards[3, 1, :3] = [1, 0, -1]   # round end on a rollout's last step
    rewards[4, 1, :3] = [0.5, 0, 0]
    rewards[10, 1, :3] = [-1, 1, 0]
    done = np.zeros((12, 2), bool)
    done[8, 0] = True
    values = np.linspace(-0.9, 0.8, 24, dtype=np.float32).reshape(12, 2)
    for gamma, lam in [(0.9, 0.5), (1.0, 1.0), (0.99, 0.0)]:
        finished, totals = _check_gae_against_reference(
            _split(4, seat, trained, rewards, done, values), gamma, lam)
        assert finished[(2, 0)][1] == 4  # seat 2: the round end's 3 and the match end's 1
        assert (8, 0) in finished and (9, 0) not in finished   # seat 1's one decision is open
        for (j, m, s), (credited, total) in totals.items():
            if (j, m) == (0, 0):
                assert credited == total, (j, m, s)


def test_gae_matches_a_per_seat_reference_on_random_streams():
    rng = np.random.default_rng(0)
    for _ in range(200):
        B, n, T, K = (int(rng.integers(1, 4)), int(rng.integers(3, 7)), int(rng.integers(1, 9)),
                      int(rng.integers(1, 6)))
        N = T * K
        seat = np.zeros((N, B), np.int64)
        trained = np.zeros((N, B), bool)
        rewards = np.zeros((N, B, n), np.float32)
        done = rng.random((N, B)) < rng.choice([0.0, 0.05, 0.2])
        values = rng.normal(size=(N, B)).astype(np.float32)
        for j in range(B):
            kind = rng.random(n) < 0.6  # drawn per match
            for t in range(N):
                w = rng.random(n) ** 3  # some seats wait long
                seat[t, j] = rng.choice(n, p=w / w.sum())
                trained[t, j] = kind[seat[t, j]]
                if done[t, j] or rng.random() < 0.2:
                    rewards[t, j] = rng.integers(-3, 4, size=n)
                if done[t, j]:
                    kind = rng.random(n) < 0.6
        gamma, lam = float(rng.choice([1.0, 0.9, 0.5])), float(rng.choice([1.0, 0.95, 0.0]))
        _check_gae_against_reference(_split(T, seat, trained, rewards, done, values), gamma, lam)


def test_gae_matches_the_reference_on_real_rollouts_and_loses_no_reward(tmp_path):
    """Real rollouts of tables of 3..6 (culo): the trainer's advantages over carries, match
    ends and auto-resets are the reference's, and every trained seat is credited, summed over
    its decisions, all its rewards of every match, as the engine gave them."""
    from train import ppo_vec
    from train.league import League

    cfg = load_config(ROOT / "configs" / "ppo_vec_culo_multi.yaml", [
        "torch_threads=1", "vec.collect_threads=1", "vec.num_games=8", "vec.rollout_steps=12",
        "vec.mix={current: 0.5, snapshots: 0.2, random: 0.3}", "ppo.net_arch=[16]"])
    tables, nets, _, buf, _, gen, device = ppo_vec.setup(cfg, League(tmp_path, 1), 0)
    steps = slice(ppo_vec.CARRIED, None)
    rollouts = []
    for _ in range(40):
        ppo_vec.collect_rollout(tables, nets, buf, gen, device)
        ppo_vec.critic_values(nets, buf, ppo_vec.update_inputs(nets, buf, device), device)
        rollouts.append(tuple(a[steps].copy() for a in (buf.seat, buf.trained, buf.rewards,
                                                        buf.done, buf.value)))
    for table in tables:
        table.vg.close()
    assert sum(r[3].sum() for r in rollouts) >= 4  # matches ended (and restarted)
    for gamma, lam in [(cfg.ppo.gamma, cfg.ppo.gae_lambda), (1.0, 1.0)]:
        _, totals = _check_gae_against_reference(rollouts, gamma, lam)
    assert sum(total != 0 for _, total in totals.values()) > 20
    for key, (credited, total) in totals.items():
        assert credited == pytest.approx(total, abs=1e-5), key


def test_update_entropy_is_over_legal_actions_and_a_single_legal_action_or_row_is_finite():
    """ppo_update's masked log-softmax: the entropy it logs is that of the policy over the legal
    actions only (illegal ones exactly 0), a row with one legal action adds 0 and no NaN, and a
    minibatch of one row (7 rows in 4 minibatches: 2, 2, 2, 1) keeps every parameter finite."""
    import torch

    from train import ppo_vec

    cfg = load_config(CONFIGS[0], ["ppo.net_arch=[8]", "vec.critic_state=false",
                                   "ppo.n_epochs=1", "vec.minibatches=1"])
    torch.manual_seed(0)
    O, A, T = 5, 4, 7
    nets = ppo_vec.Nets(ppo_vec.mlp([O, 8, A], "relu", 30.0), ppo_vec.mlp([O, 8, 1], "relu", 1.0),
                        False, "relu")
    buf = ppo_vec.Rollout(T, 1, O, None, A)
    rng = np.random.default_rng(0)
    buf.obs[:] = rng.normal(size=buf.obs.shape)
    buf.mask[..., [0, 2]] = 1
    buf.mask[ppo_vec.CARRIED, 0, 2] = 0  # one legal action
    buf.logp[:] = -1.0
    valid = np.zeros((ppo_vec.CARRIED + T, 1), bool)
    valid[ppo_vec.CARRIED:] = True
    adv = rng.normal(size=valid.shape).astype(np.float32)
    x = torch.from_numpy(buf.obs[ppo_vec.CARRIED:, 0])
    legal = torch.from_numpy(buf.mask[ppo_vec.CARRIED:, 0].astype(bool))
    with torch.no_grad():
        logits = nets.actor(x)
    expected = np.mean([float(torch.distributions.Categorical(logits=row[ok]).entropy())
                        for row, ok in zip(logits, legal)])
    gen = torch.Generator().manual_seed(0)
    out = ppo_vec.ppo_update(nets, ppo_vec.make_optimizer(nets, cfg), buf,
                             ppo_vec.update_inputs(nets, buf, "cpu"), adv, valid, cfg, gen,
                             "cpu")
    assert -out["entropy_loss"] == pytest.approx(expected, rel=1e-5)
    cfg = load_config(CONFIGS[0], ["ppo.net_arch=[8]", "vec.critic_state=false",
                                   "ppo.n_epochs=2", "vec.minibatches=4"])
    out = ppo_vec.ppo_update(nets, ppo_vec.make_optimizer(nets, cfg), buf,
                             ppo_vec.update_inputs(nets, buf, "cpu"), adv, valid, cfg, gen,
                             "cpu")
    assert all(np.isfinite(v) for k, v in out.items() if k != "explained_variance")
    for p in [*nets.actor.parameters(), *nets.critic.parameters()]:
        assert torch.isfinite(p).all() and torch.isfinite(p.grad).all()
    # a rollout without a sample to train on has no losses to log (not zeros) and moves nothing
    before = [p.detach().clone() for p in nets.actor.parameters()]
    assert ppo_vec.ppo_update(nets, ppo_vec.make_optimizer(nets, cfg), buf,
                              ppo_vec.update_inputs(nets, buf, "cpu"), adv,
                              np.zeros_like(valid), cfg, gen, "cpu") == {}
    assert all(torch.equal(a, b) for a, b in zip(before, nets.actor.parameters()))


@pytest.mark.parametrize("critic_state", [False, True])
def test_critic_values_fill_the_trained_rows_of_the_steps_only(critic_state):
    """critic_values: the critic's value of every trained row of the rollout's steps, on its
    input (the state or the observation); 0 in the untrained rows; the carried rows keep the
    values they were collected with."""
    import torch

    from train import ppo_vec

    O, S, A, T, B = 3, 4, 2, 5, 4
    critic_in = S if critic_state else O
    nets = ppo_vec.Nets(ppo_vec.mlp([O, 8, A], "relu", 1.0),
                        ppo_vec.mlp([critic_in, 8, 1], "relu", 1.0), critic_state, "relu")
    buf = ppo_vec.Rollout(T, B, O, S - O if critic_state else None, A)
    rng = np.random.default_rng(5)
    buf.obs[:] = rng.normal(size=buf.obs.shape)
    if critic_state:
        buf.hidden[:] = rng.normal(size=buf.hidden.shape)
    buf.trained[:] = rng.random(buf.trained.shape) < 0.5
    buf.value[:] = 9.0  # carried values, and leftovers of an earlier rollout in the steps
    ppo_vec.critic_values(nets, buf, ppo_vec.update_inputs(nets, buf, "cpu"), "cpu")
    steps = slice(ppo_vec.CARRIED, None)
    with torch.no_grad():
        x = torch.from_numpy((np.concatenate([buf.obs, buf.hidden], axis=2) if critic_state
                              else buf.obs)[steps])
        expected = nets.critic(x)[..., 0].numpy()
    trained = buf.trained[steps]
    np.testing.assert_allclose(buf.value[steps][trained], expected[trained], rtol=1e-5)
    assert not buf.value[steps][~trained].any()
    assert (buf.value[:ppo_vec.CARRIED] == 9.0).all()


@pytest.mark.parametrize("bfloat16", [False, True])
def test_each_epoch_trains_on_every_valid_row_once(bfloat16):
    """The update's epochs: each passes every valid row (carried rows included) once, in
    ``vec.minibatches`` slices of one shuffle, and never an invalid one; the critic reads the
    same rows' states as the actor their observations."""
    import torch

    from train import ppo_vec

    cfg = load_config(CONFIGS[0], ["ppo.net_arch=[8]", "vec.critic_state=true",
                                   "ppo.n_epochs=3", "vec.minibatches=4",
                                   f"vec.bfloat16={str(bfloat16).lower()}"])
    O, S, A, T, B = 3, 4, 4, 6, 5
    nets = ppo_vec.Nets(ppo_vec.mlp([O, 8, A], "relu", 1.0), ppo_vec.mlp([S, 8, 1], "relu", 1.0),
                        True, "relu", bfloat16)
    buf = ppo_vec.Rollout(T, B, O, S - O, A)
    rows = np.arange(buf.obs.shape[0] * B, dtype=np.float32).reshape(-1, B)
    buf.obs[..., 0], buf.hidden[..., 0] = rows, -rows  # exact in bfloat16 too (below 256)
    buf.mask[..., [0, 2]] = 1
    rng = np.random.default_rng(3)
    valid = rng.random(rows.shape) < 0.6
    valid[:ppo_vec.CARRIED, 0] = True
    seen: dict[str, list] = {"actor": [], "critic": [], "critic_hidden": []}
    for name, net, col, sign in [("actor", nets.actor, 0, 1), ("critic", nets.critic, 0, 1),
                                 ("critic_hidden", nets.critic, O, -1)]:
        net.register_forward_pre_hook(lambda _, args, name=name, col=col, sign=sign:
                                      seen[name].append((sign * args[0][:, col]).tolist()))
    adv = rng.normal(size=valid.shape).astype(np.float32)
    ppo_vec.ppo_update(nets, ppo_vec.make_optimizer(nets, cfg), buf,
                       ppo_vec.update_inputs(nets, buf, "cpu"), adv, valid, cfg,
                       torch.Generator().manual_seed(0), "cpu")
    assert seen["actor"] == seen["critic"] == seen["critic_hidden"]
    N, size = int(valid.sum()), -(-int(valid.sum()) // 4)
    assert [len(mb) for mb in seen["actor"]] == [size, size, size, N - 3 * size] * 3
    epochs = [sum(seen["actor"][k:k + 4], []) for k in range(0, 12, 4)]
    assert all(sorted(e) == sorted(rows[valid].tolist()) for e in epochs)
    assert epochs[0] != epochs[1]  # reshuffled


def collecting_policy_rollout(settings: list[str]):
    """A small config (one epoch of one minibatch, plus ``settings``), networks, and a
    rollout whose log-probabilities and values are the networks' own (every ratio 1), its
    rows after the carried ones valid. Returns them with the rollout's entropy and a
    generator for more of its numbers."""
    import torch

    from train import ppo_vec
    from train.ppo_vec_seats import masked_log_softmax

    cfg = load_config(CONFIGS[0], ["ppo.net_arch=[8]", "vec.critic_state=false",
                                   "ppo.n_epochs=1", "vec.minibatches=1", *settings])
    torch.manual_seed(0)
    O, A, T, B = 5, 4, 6, 3
    nets = ppo_vec.Nets(ppo_vec.mlp([O, 8, A], "relu", 1.0), ppo_vec.mlp([O, 8, 1], "relu", 1.0),
                        False, "relu")
    buf = ppo_vec.Rollout(T, B, O, None, A)
    rng = np.random.default_rng(1)
    buf.obs[:] = rng.normal(size=buf.obs.shape)
    buf.mask[..., [0, 1, 3]] = 1
    buf.action[:] = rng.choice([0, 1, 3], size=buf.action.shape)
    with torch.no_grad():
        x = torch.from_numpy(buf.obs)
        logp = masked_log_softmax(nets.actor(x), torch.from_numpy(buf.mask.astype(bool)))
        buf.logp[:] = logp.gather(-1, torch.from_numpy(buf.action)[..., None])[..., 0].numpy()
        buf.value[:] = nets.critic(x)[..., 0].numpy()
        p = logp.exp()
        entropy = float(-(p * logp.clamp(min=ppo_vec.LOGP_FLOOR) * torch.from_numpy(
            buf.mask.astype(bool)))[ppo_vec.CARRIED:].sum(-1).mean())
    valid = np.zeros(buf.action.shape, bool)
    valid[ppo_vec.CARRIED:] = True
    return cfg, nets, buf, valid, entropy, rng


def update_of(cfg, nets, buf, adv, valid) -> dict[str, float]:
    """One ``ppo_update`` of ``buf`` with a fresh optimizer."""
    import torch

    from train import ppo_vec

    return ppo_vec.ppo_update(nets, ppo_vec.make_optimizer(nets, cfg), buf,
                              ppo_vec.update_inputs(nets, buf, "cpu"), adv, valid, cfg,
                              torch.Generator().manual_seed(0), "cpu")


def test_update_losses_by_hand_at_the_collecting_policy():
    """One minibatch whose log-probabilities and values are the networks' own (every ratio
    1), with advantages far from mean 0: the policy loss is that of the minibatch's normalised
    advantages (0), the value loss the squared advantage (the target is advantage plus the
    old value), and the loss the policy loss, minus the entropy bonus, plus the value term."""
    cfg, nets, buf, valid, entropy, rng = collecting_policy_rollout([])
    adv = (3 + 5 * rng.normal(size=valid.shape)).astype(np.float32)
    out = update_of(cfg, nets, buf, adv, valid)
    assert out["policy_gradient_loss"] == pytest.approx(0.0, abs=1e-5)
    assert out["value_loss"] == pytest.approx(float(np.mean(adv[valid] ** 2)), rel=1e-5)
    assert -out["entropy_loss"] == pytest.approx(entropy, rel=1e-5)
    assert out["loss"] == pytest.approx(out["policy_gradient_loss"]
                                        + cfg.ppo.ent_coef * out["entropy_loss"]
                                        + cfg.ppo.vf_coef * out["value_loss"], rel=1e-5)
    assert out["loss"] < cfg.ppo.vf_coef * out["value_loss"]  # the bonus lowers it


def test_update_clips_the_ratio_where_the_advantage_would_push_it_further():
    """Rows whose ratio already lies beyond the clip range in the direction their advantage
    pushes (above 1 + clip with a positive advantage, below 1 - clip with a negative one) give
    the clipped objective no slope: without the entropy bonus the actor does not move, and
    every row counts as clipped."""
    cfg, nets, buf, valid, _, _ = collecting_policy_rollout(["ppo.ent_coef=0"])
    adv = np.where(np.arange(valid.size).reshape(valid.shape) % 2, 1.0, -1.0).astype(np.float32)
    assert adv[valid].mean() == 0.0  # the minibatch's normalisation keeps every sign
    buf.logp[:] -= np.sign(adv)  # ratio e where the advantage is positive, 1/e where negative
    actor = [w.detach().clone() for w in nets.actor.parameters()]
    out = update_of(cfg, nets, buf, adv, valid)
    assert out["clip_fraction"] == 1.0
    assert all((w == before).all() for w, before in zip(nets.actor.parameters(), actor))


def test_update_clips_the_gradient_norm():
    """``ppo.max_grad_norm`` bounds the gradient's norm: at a bound of 1e-12 the actor's
    Adam step (its epsilon 1e-5) all but vanishes, where at 0.5 it is about the learning
    rate."""
    import torch

    moved = {}
    for bound in (1e-12, 0.5):
        cfg, nets, buf, valid, _, rng = collecting_policy_rollout([f"ppo.max_grad_norm={bound}"])
        before = torch.cat([w.detach().flatten() for w in nets.actor.parameters()])
        update_of(cfg, nets, buf, rng.normal(size=valid.shape).astype(np.float32), valid)
        after = torch.cat([w.detach().flatten() for w in nets.actor.parameters()])
        moved[bound] = float((after - before).abs().max())
    assert moved[0.5] > 0.5 * cfg.ppo.learning_rate
    assert moved[1e-12] < 1e-4 * moved[0.5], moved


@pytest.mark.parametrize("bfloat16", [False, True])
def test_the_update_starts_from_the_policy_that_collected(tmp_path, bfloat16):
    """At learning rate 0 the update recomputes the collecting policy's log-probabilities:
    every ratio is 1 (no clipping, approximate KL 0), in bfloat16 too, where collecting and
    the update share one autocast (bfloat16 logits against float32 ones moved the ratios)."""
    check_the_update_starts_at_ratio_1(tmp_path, bfloat16, "cpu")


def check_the_update_starts_at_ratio_1(tmp_path, bfloat16: bool, device: str,
                                       max_kl: float = 1e-6) -> None:
    """(Float32 collecting under a bfloat16 update gave an approximate KL of 1.5e-5.)"""
    import torch

    from train import ppo_vec
    from train.league import League

    cfg = load_config(ROOT / "configs" / "ppo_vec_culo_multi.yaml", [
        "torch_threads=1", "vec.collect_threads=1", "vec.num_games=64", "vec.rollout_steps=16",
        "vec.mix={current: 0.5, snapshots: 0.5}", f"vec.bfloat16={str(bfloat16).lower()}",
        f"device={device}"])
    tables, nets, optimizer, buf, _, gen, dev = ppo_vec.setup(cfg, League(tmp_path, 1), 0)
    assert nets.bfloat16 is bfloat16
    for group in optimizer.param_groups:
        group["lr"] = 0.0
    with torch.no_grad():  # logits as large as a trained policy's, not the initial ~0.01
        nets.actor[-1].weight.mul_(1000.0)
    for _ in range(3):
        samples, _, losses = ppo_vec.iteration(tables, nets, optimizer, buf, cfg, gen, dev)
        assert samples > 300
        assert losses["clip_fraction"] == 0.0
        assert abs(losses["approx_kl"]) < max_kl, losses
    for table in tables:
        table.vg.close()


def test_freed_memory_is_kept_only_where_glibc_mallopt_is(monkeypatch):
    """keep_freed_memory sets glibc's mmap and trim thresholds through ``mallopt``; on another
    system, or a C library without ``mallopt``, it changes nothing and does not fail."""
    import ctypes

    from train import ppo_vec

    calls = []

    class Libc:
        def mallopt(self, param, value):
            calls.append((param, value))
            return 1

    monkeypatch.setattr(ctypes, "CDLL", lambda name: Libc())
    monkeypatch.setattr(sys, "platform", "linux")
    ppo_vec.keep_freed_memory()
    assert sorted(calls) == [(ppo_vec.M_MMAP_THRESHOLD, 1 << 30),
                             (ppo_vec.M_TRIM_THRESHOLD, 1 << 30)]
    calls.clear()
    monkeypatch.setattr(ctypes, "CDLL", lambda name: object())
    ppo_vec.keep_freed_memory()  # a C library without mallopt
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setattr(ctypes, "CDLL", lambda name: pytest.fail("loaded a C library"))
    ppo_vec.keep_freed_memory()
    assert calls == []


@pytest.mark.parametrize("critic_state", [False, True])
def test_rollout_buffers_are_the_bytes_counted_before_they_are_made(critic_state):
    from train.ppo_vec import Rollout
    sizes = (16, 12, 413, 224 if critic_state else None, 49)
    buf = Rollout(*sizes)
    made = [a for a in vars(buf).values() if isinstance(a, np.ndarray)]
    assert len(made) == len(Rollout.arrays(*sizes)) == 9 + critic_state
    assert Rollout.nbytes(*sizes) == sum(a.nbytes for a in made)


def test_a_rollout_larger_than_the_available_memory_is_refused_before_it_starts(tmp_path):
    from train.ppo_vec import check_rollout_fits
    meminfo = tmp_path / "meminfo"
    cfg = load_config(ROOT / "configs" / "ppo_vec_culo_multi.yaml")  # about 190 MB of buffers
    meminfo.write_text("MemTotal:       1000000 kB\nMemAvailable:     100000 kB\n")
    with pytest.raises(ConfigError, match=r"vec.num_games 1024 x vec.rollout_steps 64: the "
                       r"rollout's buffers alone need 0\.\d GiB, more than the 0\.1 GiB"):
        check_rollout_fits(cfg, str(meminfo), str(tmp_path))  # no cgroup files there
    meminfo.write_text("MemAvailable:    8000000 kB\n")
    check_rollout_fits(cfg, str(meminfo), str(tmp_path))
    check_rollout_fits(cfg, str(tmp_path / "absent"), str(tmp_path))  # nothing to check against
    # a container's limit is what the run has, however much the host has
    (tmp_path / "memory.max").write_text("1073741824\n")
    (tmp_path / "memory.current").write_text("973078528\n")
    with pytest.raises(ConfigError, match=r"more than the 0\.1 GiB of memory available"):
        check_rollout_fits(cfg, str(meminfo), str(tmp_path))
    (tmp_path / "memory.max").write_text("max\n")
    check_rollout_fits(cfg, str(meminfo), str(tmp_path))


def test_a_huge_run_is_refused_at_once_and_leaves_no_run_directory(tmp_path):
    from conftest import cli_in_process
    run = tmp_path / "run"
    res = cli_in_process(*train_args(run, "vec.num_games=100000000"))
    assert res.returncode == 2, res.stderr
    assert "vec.num_games 100000000 x vec.rollout_steps 32" in res.stderr
    assert "GiB of memory available; lower either" in res.stderr
    assert not run.exists()


@pytest.mark.parametrize("flags, slow", [
    ("fpu avx2 avx512f avx512_bf16", False), ("fpu avx2 amx_bf16 amx_tile", False),
    ("fpu avx avx2 fma", True), ("Features: fp asimd bf16", False)])
def test_bfloat16_on_a_cpu_without_its_products_is_told(tmp_path, flags, slow):
    from train import ppo_vec

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
    nets = ppo_vec.Nets(None, None, False, "relu", bfloat16=True)
    assert ppo_vec.bfloat16_is_slow(nets, "cpu", str(cpuinfo)) is slow
    assert not ppo_vec.bfloat16_is_slow(nets, "cpu", str(tmp_path / "absent"))
    assert not ppo_vec.bfloat16_is_slow(ppo_vec.Nets(None, None, False, "relu"), "cpu",
                                        str(cpuinfo))


@pytest.mark.parametrize("native", [False, True])
def test_bfloat16_on_a_gpu_that_only_emulates_it_is_told(monkeypatch, native):
    import torch

    from train import ppo_vec

    asked = []
    monkeypatch.setattr(torch.cuda, "is_bf16_supported",
                        lambda including_emulation=True: asked.append(including_emulation)
                        or native)
    nets = ppo_vec.Nets(None, None, False, "relu", bfloat16=True)
    assert ppo_vec.bfloat16_is_slow(nets, "cuda") is not native and asked == [False]


@pytest.mark.parametrize("flags, auto", [
    ("fpu avx2 avx512f avx512_bf16", True), ("fpu avx2 amx_bf16 amx_tile", True),
    ("fpu avx avx2 fma", False), ("Features: fp asimd bf16", False), (None, False)])
def test_bfloat16_auto_is_bfloat16_where_the_cpu_has_its_products(tmp_path, flags, auto):
    """vec.bfloat16 auto: bfloat16 on a CPU known to multiply in it, float32 on one known not
    to, and where it cannot be told (not x86, or no flags to read)."""
    from train import ppo_vec
    from train.config import load_config

    cpuinfo = tmp_path / "cpuinfo"
    if flags is not None:
        cpuinfo.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
    assert ppo_vec.uses_bfloat16("auto", "cpu", str(cpuinfo)) is auto
    for given in (False, True):  # an explicit setting stands, fast or slow
        assert ppo_vec.uses_bfloat16(given, "cpu", str(cpuinfo)) is given
    cfg = load_config(ROOT / "configs" / "ppo_vec_culo.yaml", ["vec.bfloat16=auto"])
    native = ppo_vec.uses_bfloat16("auto", "cpu")  # this machine's, as make_nets reads it
    assert ppo_vec.make_nets(cfg, 8, 8, 4, "cpu").bfloat16 is native


@pytest.mark.parametrize("native", [False, True])
def test_bfloat16_auto_on_a_gpu_follows_its_products(monkeypatch, native):
    import torch

    from train import ppo_vec

    monkeypatch.setattr(torch.cuda, "is_bf16_supported",
                        lambda including_emulation=True: including_emulation or native)
    assert ppo_vec.uses_bfloat16("auto", "cuda") is native


# -- the league's snapshots and sampling ------------------------------------------------------

def test_snapshots_of_the_latest_checkpoint_survive_until_the_next(tmp_path):
    """A run killed after its pool dropped a snapshot that the latest checkpoint lists
    resumes with the checkpoint's whole pool."""
    from agents.mlp import MLP
    from train.league import League

    mlp = MLP([(np.ones((3, 2)), np.zeros(3))], "tanh")
    league = League(tmp_path, max_snapshots=2)
    for k in range(2):
        league.add_snapshot(mlp, k)
    league.checkpointed()
    at_checkpoint = list(league.snapshots)
    league.add_snapshot(mlp, 2)  # drops snapshot 0 from the pool; the run is killed here
    assert [s["steps"] for s in league.snapshots] == [1, 2]
    resumed = League(tmp_path, max_snapshots=2)
    resumed.restore(at_checkpoint)
    assert resumed.snapshots == at_checkpoint
    assert sorted(p.name for p in tmp_path.glob("snap_*")) == [s["file"] for s in at_checkpoint]
    resumed.add_snapshot(mlp, 3)
    resumed.checkpointed()  # now nothing pins snapshot 0
    assert sorted(p.name for p in tmp_path.glob("snap_*")) == [s["file"]
                                                               for s in resumed.snapshots]


def test_a_resume_says_which_snapshots_the_league_lost(tmp_path, capsys):
    """A snapshot the latest checkpoint lists but the league folder lost (removed by hand)
    is named: the resumed run does not have the same league."""
    from agents.mlp import MLP
    from train.league import League

    league = League(tmp_path, max_snapshots=3)
    for k in range(2):
        league.add_snapshot(MLP([(np.ones((3, 2)), np.zeros(3))], "tanh"), k)
    (tmp_path / league.snapshots[0]["file"]).unlink()
    resumed = League(tmp_path, max_snapshots=3)
    resumed.restore(league.snapshots)
    assert resumed.snapshots == league.snapshots[1:]
    assert f"lists {league.snapshots[0]['file']}, which" in capsys.readouterr().err


def random_snapshot_mlp(rng):
    """A small policy of random weights (12 inputs, 16 tanh units, 5 actions) for the pool."""
    from agents.mlp import MLP

    return MLP([(rng.normal(size=(16, 12)), rng.normal(size=16)),
                (rng.normal(size=(5, 16)), rng.normal(size=5))], "tanh")


def test_batched_snapshots_match_each_snapshots_mlp(tmp_path):
    from train.league import League
    from train.ppo_vec_seats import SnapshotPool

    rng = np.random.default_rng(0)
    league = League(tmp_path / "league", max_snapshots=3)
    pool = SnapshotPool(league)
    mlps = []
    for k in range(4):  # the first one leaves the pool, and stays usable by running games
        mlp = random_snapshot_mlp(rng)
        league.add_snapshot(mlp, k)
        mlps.append(mlp)
        pool.refresh()
    assert pool.active.tolist() == [1, 2, 3] and len(pool.mlps) == 4
    which = rng.integers(4, size=40)
    obs = rng.normal(size=(40, 12)).astype(np.float32)
    got = pool.logits(which, obs).numpy()
    for i in range(40):
        np.testing.assert_allclose(got[i], mlps[which[i]](obs[i]), rtol=1e-4, atol=1e-4)


def test_seat_draws_spread_the_learner_over_the_seats_and_the_snapshots_over_the_league(
        tmp_path):
    """Each match draws the learner's seat uniformly, and each snapshots seat one of the
    league's snapshots uniformly: over 2,000 draws of 5-player tables every seat and every
    snapshot get their share to within a few standard errors."""
    from arschloch_env.rules import make_rules
    from train.league import League
    from train.ppo_vec_seats import LEARNER, SNAPSHOT, SnapshotPool, Table

    rng = np.random.default_rng(0)
    league = League(tmp_path / "league", max_snapshots=4)
    pool = SnapshotPool(league)
    for k in range(4):
        league.add_snapshot(random_snapshot_mlp(rng), k)
    pool.refresh()
    table = Table(make_rules("culo", 5), 40, 1, {"current": 0.5, "snapshots": 0.5}, pool, rng,
                  None)
    seats, snapshots = np.zeros(5), np.zeros(len(pool.mlps))
    for _ in range(50):
        table.seat_games(np.arange(table.B))
        seats += (table.kind == LEARNER).sum(0)
        np.add.at(snapshots, table.which[table.kind == SNAPSHOT], 1)
    assert seats.sum() == 2000 and snapshots.sum() > 3000
    for counts in (seats, snapshots):
        share = 1 / len(counts)
        sd = np.sqrt(counts.sum() * share * (1 - share))
        assert np.all(np.abs(counts - counts.sum() * share) < 4 * sd), counts


def test_the_pool_drops_a_snapshot_once_no_game_seats_it(tmp_path):
    """A snapshot that left the league plays on in the games that seat it and leaves the pool
    once none does: a run holds at most max_snapshots plus those still in play, however many
    it makes, and every seat keeps playing the snapshot it drew."""
    from arschloch_env.rules import make_rules
    from train.league import League
    from train.ppo_vec_seats import SNAPSHOT, SnapshotPool, Table

    rng = np.random.default_rng(0)
    league = League(tmp_path / "league", max_snapshots=2)
    pool = SnapshotPool(league)

    def add_snapshot(k):
        league.add_snapshot(random_snapshot_mlp(rng), k)

    for k in range(2):
        add_snapshot(k)
    pool.refresh()
    table = Table(make_rules("culo", 4), 6, 1, {"snapshots": 1.0}, pool, rng, None)
    seated = table.kind == SNAPSHOT

    def seated_mlps():
        return [pool.mlps[i] for i in table.which[seated]]

    first = pool.mlps[0]
    assert first in seated_mlps()
    before = seated_mlps()
    add_snapshot(2)  # the first leaves the league, not the games that seat it
    pool.refresh([table])
    assert len(pool.mlps) == 3 and pool.mlps[0] is first and seated_mlps() == before
    table.seat_games(np.arange(table.B))
    seated = table.kind == SNAPSHOT
    before = seated_mlps()
    add_snapshot(3)
    pool.refresh([table])  # the first is gone; the second is still seated
    assert first not in pool.mlps and len(pool.mlps) == 3
    assert seated_mlps() == before
    assert [pool.mlps[i] for i in pool.active] == [pool.mlps[pool.index[s["file"]]]
                                                   for s in league.snapshots]
    obs = rng.normal(size=(int(seated.sum()), 12)).astype(np.float32)
    got = pool.logits(table.which[seated], obs).numpy()
    for row, mlp in enumerate(before):
        np.testing.assert_allclose(got[row], mlp(obs[row]), rtol=1e-4, atol=1e-4)
    for k in range(4, 40):
        table.seat_games(np.arange(table.B))
        add_snapshot(k)
        pool.refresh([table])
        assert len(pool.mlps) <= 3  # the league's two and the one that just left it
    table.seat_games(np.arange(table.B))
    pool.refresh([table])
    assert len(pool.mlps) == 2


def test_rollouts_over_tables_of_every_size_drop_no_transition(tmp_path):
    """Tables of 3, 5 and 6 players step into one buffer, the learner's rows of all of them in
    one forward and the snapshots' in another: each row keeps its table's seats, legal
    actions and rewards, and the log-probability and value of its own observation. Agent
    seats are checked move by move against mirror games (``vec.debug``)."""
    import torch

    from train import ppo_vec
    from train.config import load_config
    from train.league import League
    from train.ppo_vec_io import actor_mlp
    from train.ppo_vec_seats import NEG

    cfg = load_config(CONFIGS[0], [*SMALL, "players=[3,5,6]", "vec.num_games=96",
                                   "vec.critic_state=true"])
    league = League(tmp_path / "league", cfg.league.max_snapshots)
    tables, nets, opt, buf, pool, gen, device = ppo_vec.setup(cfg, league, 0)
    for k in range(2):
        league.add_snapshot(actor_mlp(nets.actor, nets.activation), k)
    pool.refresh()
    for table in tables:
        table.seat_games(np.arange(table.B))
    stats = ppo_vec.collect_rollout(tables, nets, buf, gen, device)
    assert stats["illegal"] == 0
    assert {"current", "snapshots", "random", "greedy", "expert"} <= set(stats["seats"])
    start = 0
    steps = slice(ppo_vec.CARRIED, None)
    assert not buf.trained[:ppo_vec.CARRIED].any()  # nothing carried into the first rollout
    for table in tables:
        c = slice(start, start + table.B)
        start += table.B
        assert (buf.seat[steps, c] < table.n).all() and not buf.rewards[:, c, table.n:].any()
        assert np.take_along_axis(buf.mask[steps, c], buf.action[steps, c, None], axis=2).all()
    trained = buf.trained
    assert trained.any() and (~trained[steps]).any() and not buf.logp[~trained].any()
    ppo_vec.critic_values(nets, buf, ppo_vec.update_inputs(nets, buf, device), device)
    assert not buf.value[~trained].any()
    with torch.no_grad():
        legal = torch.from_numpy(buf.mask[trained].astype(bool))
        logp = torch.log_softmax(torch.where(legal, nets.actor(torch.from_numpy(
            buf.obs[trained])), NEG), dim=-1)
        chosen = logp.gather(1, torch.from_numpy(buf.action[trained])[:, None])[:, 0]
        value = nets.critic(torch.from_numpy(np.concatenate(
            [buf.obs[trained], buf.hidden[trained]], axis=1)))[:, 0]
    np.testing.assert_allclose(chosen.numpy(), buf.logp[trained], atol=1e-4)
    np.testing.assert_allclose(value.numpy(), buf.value[trained], atol=1e-4)

    # No trained transition is dropped: each is trained on once, in its rollout's update or,
    # open at its end, in a later one, unless it is still open.
    collected, updated = int(buf.trained[steps].sum()), 0
    for _ in range(3):
        samples, _ = ppo_vec.learn(nets, opt, buf, cfg, gen, device)
        updated += samples
        assert buf.trained[:ppo_vec.CARRIED].sum() > len(tables)  # about one per seat, game
        ppo_vec.collect_rollout(tables, nets, buf, gen, device)
        collected += int(buf.trained[steps].sum())
    assert collected == updated + int(buf.trained.sum())


def test_same_seed_same_weights(tmp_path):
    """Two trainers of one config and seed, each with a snapshot in its league, agents in
    some seats and the critic on the state, end three iterations with the same weights, bit
    for bit; another seed does not."""
    import torch

    from train import ppo_vec
    from train.league import League
    from train.ppo_vec_io import actor_mlp

    def weights(seed: int, name: str) -> list:
        cfg = load_config(CONFIGS[0], [*SMALL, "players=[3,4]", "vec.num_games=64",
                                       "vec.critic_state=true", f"seed={seed}"])
        league = League(tmp_path / name, cfg.league.max_snapshots)
        tables, nets, opt, buf, pool, gen, device = ppo_vec.setup(cfg, league, 0)
        league.add_snapshot(actor_mlp(nets.actor, nets.activation), 0)
        pool.refresh()
        for _ in range(3):
            ppo_vec.iteration(tables, nets, opt, buf, cfg, gen, device)
        for table in tables:
            table.vg.close()
        return [p.detach().clone() for p in [*nets.actor.parameters(),
                                              *nets.critic.parameters()]]

    first, again, other = weights(0, "a"), weights(0, "b"), weights(1, "c")
    assert all(torch.equal(x, y) for x, y in zip(first, again, strict=True))
    assert not all(torch.equal(x, y) for x, y in zip(first, other, strict=True))


def test_device_auto_is_cuda_where_there_is_one(tmp_path):
    import torch

    from train import ppo_vec
    from train.league import League

    cfg = load_config(CONFIGS[0], [*SMALL, "vec.num_games=8", "device=auto"])
    tables, nets, *_, device = ppo_vec.setup(cfg, League(tmp_path, 1), 0)
    assert device.type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert next(nets.actor.parameters()).device.type == device.type
    for table in tables:
        table.vg.close()


def test_sampling_is_legal_and_follows_the_policy():
    import torch

    from train.ppo_vec_seats import sample_masked
    gen = torch.Generator().manual_seed(0)
    logits = torch.tensor([[0.0, 1.0, 2.0, 3.0]]).repeat(20000, 1)
    mask = torch.tensor([[True, False, True, True]]).repeat(20000, 1)
    mask[:5, :] = torch.tensor([False, False, True, False])  # one legal move
    actions, logp = sample_masked(logits, mask, gen)
    assert mask[torch.arange(20000), actions].all()
    assert (actions[:5] == 2).all() and torch.allclose(logp[:5], torch.zeros(5))
    p = torch.softmax(torch.tensor([0.0, 2.0, 3.0]), 0)
    freq = torch.bincount(actions[5:], minlength=4).float() / (20000 - 5)
    assert torch.allclose(freq[[0, 2, 3]], p, atol=0.015) and freq[1] == 0
    assert torch.allclose(logp[5:], torch.log(p)[torch.tensor([0, 0, 1, 2])[actions[5:]]])


# -- configs ----------------------------------------------------------------------------------

def test_shipped_ppo_vec_configs_load(monkeypatch):
    monkeypatch.chdir(ROOT)  # their paths are relative to the repository root
    names = {p.name for p in CONFIGS}
    assert {"ppo_vec_culo.yaml", "ppo_vec_tavern.yaml", "ppo_vec_culo_multi.yaml",
            "ppo_vec_culo_expert.yaml"} <= names
    for path in CONFIGS:
        cfg = load_config(path)
        assert cfg.algo == "ppo-vec" and cfg.total_steps > 0
        assert "Network" in path.read_text(), f"{path.name}: state the network size"
        policy_files(cfg)  # the policy files its mix names are shipped and fit its network


@pytest.mark.parametrize("override, message", [
    ("vec.bogus=1", "unknown config key(s) vec.bogus"),
    ("vec.num_games=0", "vec.num_games"),
    ("vec.mix={current: -1}", "vec.mix: {'current': -1.0} needs finite non-negative shares"),
    # a positive sum does not make up for a negative share
    ("vec.mix={current: 1, greedy: -0.5}", "vec.mix: {'current': 1.0, 'greedy': -0.5} needs "
                                           "finite non-negative shares"),
    ("vec.mix={current: 1, greedy: .inf}", "vec.mix: {'current': 1.0, 'greedy': inf} needs "
                                           "finite non-negative shares"),
    ("league.mix={current: .inf}", "league.mix: {'current': inf} needs finite non-negative"),
    ("vec.mix={snapshots: 1e308, greedy: 1e308}", "with a positive, finite sum"),
    ("vec.mix={current: 1, snapshot: 0}", "vec.mix: unknown agent spec 'snapshot'"),
    ("vec.mix={snapshot: 1}", "(a share of the mix may also name current, snapshots, random, "
                              "a policy file (.npz))"),
    ("league.mix={snapshots: 1}", "league.mix: not read by algo ppo-vec"),
    ("n_envs=8", "n_envs: not read by algo ppo-vec"),
    ("algo=ppo-fast", "algo: 'ppo-fast' is not known; allowed: ppo, ppo-vec"),
    ("ppo.lr_final=fast", "ppo.lr_final: expected a number"),
    ("ppo.lr_final=-1", "ppo.lr_final: -1.0 is not allowed; it must be greater than 0"),
])
def test_vec_config_errors_name_the_key(override, message):
    with pytest.raises(ConfigError) as info:
        load_config(CONFIGS[0], [override])
    assert message in str(info.value)


def test_vec_config_needs_a_game_per_table_size():
    with pytest.raises(ConfigError, match=r"^vec.num_games: 3 is fewer than one game per table "
                                          r"size of players \[3, 4, 5, 6\]$"):
        load_config(CONFIGS[0], ["players=[3,4,5,6]", "vec.num_games=3"])


# -- a short real run -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("ppo_vec") / "run"
    res = cli(*train_args(run), timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return run


def test_short_run_beats_random(small_run):
    meta = latest_meta(small_run)
    assert meta["algo"] == "ppo-vec" and meta["steps"] >= 60_000
    result = meta["evaluations"][-1]["results"]["random"]
    assert result["advantage_ci_low"] > 0, result
    assert meta["illegal_actions"] == 0
    assert (small_run / "checkpoints" / "best.pt").is_file()


SB3_SCALARS = ("train/policy_gradient_loss", "train/value_loss", "train/entropy_loss",
               "train/approx_kl", "train/clip_fraction", "train/explained_variance",
               "train/loss", "train/learning_rate", "train/clip_range", "time/fps")
"""What SB3's PPO logs of its update, which the ppo-vec trainer logs under the same names."""


def test_tensorboard_has_the_sb3_trainers_scalars(small_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    (logdir,) = [p for p in (small_run / "tb").iterdir() if p.is_dir()]
    acc = EventAccumulator(str(logdir))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    for tag in ("eval/vs_random/rank_points", "eval/vs_random/ci_low", "charts/samples_per_s",
                "charts/illegal_actions", "league/pool_size", "league/share/current",
                "league/share/expert", "rollout/ep_rew_mean", "rollout/ep_len_mean",
                *SB3_SCALARS):
        assert tag in tags, tags
    # a culo match of 4 players has at least 5 rounds of at least one decision each
    assert all(e.value >= 5 for e in acc.Scalars("rollout/ep_len_mean"))
    assert all(e.value <= 0 for e in acc.Scalars("train/entropy_loss"))  # SB3's sign
    assert all(e.value == 0 for e in acc.Scalars("charts/illegal_actions"))
    assert "config/text_summary" in acc.Tags()["tensors"]


def test_checkpoints_are_plain_state_dicts(small_run):
    import torch
    paths = sorted((small_run / "checkpoints").glob("*.pt"))
    assert len(paths) >= 2, paths  # the periodic ones and best.pt
    for path in paths:
        data = torch.load(str(path), weights_only=True)
        assert data["format"] == "arschloch-ppo-vec" and "optimizer" in data


def test_learning_rate_decays_to_lr_final(small_run):
    import torch
    cfg = load_config(CONFIGS[0], SMALL)
    assert cfg.learning_rate_at(0) == 0.001
    assert cfg.learning_rate_at(cfg.total_steps // 2) == pytest.approx(0.00075)
    assert cfg.learning_rate_at(10 * cfg.total_steps) == pytest.approx(0.0005)
    lrs = {}
    for path in (small_run / "checkpoints").glob("*.pt"):
        data = torch.load(str(path), weights_only=True)
        lrs[data["steps"]] = data["optimizer"]["param_groups"][0]["lr"]
    # each rollout trains at the rate of the samples before it, so the last one is above final
    assert len(lrs) >= 2 and all(0.0005 < lr < 0.001 for lr in lrs.values())
    assert [lrs[k] for k in sorted(lrs)] == sorted(lrs.values(), reverse=True)


def test_export_lists_a_table_size_trained_twice_once(small_run, tmp_path):
    """players [4, 4] trains twice the share at 4 players; the bundle plays at 4."""
    import shutil
    from conftest import cli_in_process

    run = tmp_path / "run"
    shutil.copytree(small_run, run)
    latest = json.loads((run / "latest.json").read_text())
    meta = json.loads((run / latest["meta"]).read_text())
    meta["config"]["players"] = [4, 4]
    (run / latest["meta"]).write_text(json.dumps(meta))
    res = cli_in_process("export", run / latest["checkpoint"], "--out", tmp_path / "bots" / "twice")
    assert res.returncode == 0, res.stderr
    assert json.loads((tmp_path / "bots" / "twice" / "manifest.json").read_text())[
        "players"] == [4]


def test_export_matches_the_torch_actor(small_run, tmp_path):
    import torch

    from agents.bundle import load_bundle
    from arschloch_env.vector import VectorGame
    from train.ppo_vec_io import load_checkpoint
    from conftest import cli_in_process

    out = tmp_path / "bots" / "vec"
    res = cli_in_process("export", small_run, "--out", out, "--torch")
    assert res.returncode == 0, res.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["training"]["algo"] == "ppo-vec" and manifest["players"] == [4]
    assert manifest["training"]["forwards"] == "float32"  # vec.bfloat16 unset: false

    vg = VectorGame("culo", num_players=4, num_games=512, seed=5)
    obs, masks = vg.reset()
    rows_obs, rows_mask = [obs], [masks]
    for _ in range(6):
        obs, masks, _, _ = vg.step(vg.sample_actions())
        rows_obs.append(obs)
        rows_mask.append(masks)
    obs, masks = np.concatenate(rows_obs), np.concatenate(rows_mask)

    state = load_checkpoint(small_run / "checkpoints" / "best.pt")
    from train.ppo_vec import mlp
    actor = mlp([obs.shape[1], *state["net_arch"], masks.shape[1]], state["activation"], 1.0)
    actor.load_state_dict(state["actor"])
    with torch.no_grad():
        ref = actor(torch.from_numpy(obs)).numpy()
    actions, logits = load_bundle(out).policy(obs, masks)
    assert np.abs(logits - ref).max() < 1e-4
    assert (actions == np.where(masks > 0, ref, -np.inf).argmax(axis=1)).all()
    program = torch.export.load(str(out / "policy.pt2")).module()
    torch_actions, torch_logits = program(torch.from_numpy(obs), torch.from_numpy(masks))
    assert (torch_actions.numpy() == actions).all()
    assert np.abs(torch_logits.numpy() - ref).max() < 1e-4
    res = cli_in_process("simulate", "--rules", "culo", "--players", "4", "--matches", "2",
                         "--agents", out, "random", "random", "random")
    assert res.returncode == 0, res.stderr


def test_new_run_refuses_an_existing_run_dir(small_run):
    from conftest import cli_in_process
    res = cli_in_process(*train_args(small_run))
    assert res.returncode == 2 and "--resume" in res.stderr


# -- kill and resume --------------------------------------------------------------------------

def test_sigkill_then_resume_continues(tmp_path):
    run = tmp_path / "run"
    total = 40_000
    extra = (f"total_steps={total}", "checkpoint_every=8000", "league.snapshot_every=5000",
             "eval.deals=5", "vec.debug=false", "vec.mix={current: 0.5, snapshots: 0.5}")
    args = train_args(run, *extra)
    proc = subprocess.Popen([sys.executable, "-m", "arschloch_env.cli", *args], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while not (run / "latest.json").exists() and time.time() < deadline:
        time.sleep(0.1)
    assert (run / "latest.json").exists(), "no checkpoint was written"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    first = json.loads((run / "latest.json").read_text())
    assert first["steps"] < total
    first_league = latest_meta(run)["league"]
    assert first_league, "a snapshot was due before the first checkpoint"
    from conftest import event_files, logged_steps
    before = event_files(run)

    res = cli(*train_args(run, *extra), "--resume")  # the same command again, resumed
    assert res.returncode == 0, res.stderr[-3000:]
    assert (f"resuming {run} from its checkpoint at step {first['steps']} (total_steps="
            f"{total})") in res.stderr
    meta = latest_meta(run)
    assert meta["steps"] >= total and meta["config"]["total_steps"] == total
    # the league of the checkpoint, then the snapshots of the resumed run
    assert meta["league"][:len(first_league)] == first_league
    steps = [s["steps"] for s in meta["league"]]
    assert steps == sorted(steps) and steps[-1] > first["steps"]
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(str(run / "tb" / "ppo_vec_1"))
    acc.Reload()
    logged = [e.step for e in acc.Scalars("charts/samples_per_s")]
    assert max(logged) >= total and any(s > first["steps"] for s in logged)
    # the resumed process counted on from the checkpoint's step, not from 0
    resumed = logged_steps(event_files(run) - before, "charts/samples_per_s")
    assert resumed and first["steps"] < min(resumed) <= first["steps"] + 8000, resumed


# -- a new run from another run's checkpoint -------------------------------------------------

def test_init_from_starts_a_new_run_from_the_checkpoint(small_run, tmp_path):
    import torch

    run = tmp_path / "run"
    res = cli(*train_args(run, f"init_from={small_run}", "total_steps=8000",
                          "checkpoint_every=8000", "ppo.learning_rate=1e-12",
                          "ppo.lr_final=null", "vec.debug=false",
                          "vec.mix={current: 0.5, snapshots: 0.5}"))
    assert res.returncode == 0, res.stderr[-3000:]
    meta = latest_meta(run)
    assert 8000 <= meta["steps"] < 20_000 and meta["config"]["init_from"] == str(small_run)
    assert all(s["steps"] <= meta["steps"] for s in meta["league"])  # a league of its own
    start = torch.load(str(small_run / json.loads((small_run / "latest.json").read_text())
                           ["checkpoint"]), weights_only=True)
    end = torch.load(str(run / json.loads((run / "latest.json").read_text())["checkpoint"]),
                     weights_only=True)
    for net in ("actor", "critic"):  # a step size of 1e-12 leaves the weights where they were
        for key, value in start[net].items():
            assert torch.allclose(end[net][key], value, atol=1e-6), (net, key)


@pytest.mark.parametrize("override, message", [
    ("ppo.net_arch=[32,32]", "ppo.net_arch [32, 32] (checkpoint: [64, 64])"),
    ("ppo.critic_arch=[32]", "ppo.critic_arch [32] (checkpoint: [64, 64])"),
    ("vec.critic_state=true", "vec.critic_state True (checkpoint: False)"),
    # found only once the networks are built: the run directory made by then goes again
    ("rules=tavern", "the checkpoint's actor is 413 -> 64 -> 64 -> 49, this run's 593 -> 64 -> "
                     "64 -> 79 (inputs, ppo.net_arch, outputs): a checkpoint of another network "
                     "or another deck"),
])
def test_init_from_refuses_another_network(small_run, tmp_path, override, message):
    from conftest import cli_in_process
    res = cli_in_process(*train_args(tmp_path / "run", f"init_from={small_run}", override))
    assert res.returncode == 2 and message in res.stderr, res.stderr[-2000:]
    assert not (tmp_path / "run").exists()


def test_critic_arch_sizes_the_critic_alone(tmp_path):
    """``ppo.critic_arch`` gives the critic its own hidden layers; the actor, and so the
    bundle, keep ``ppo.net_arch``'s, and a checkpoint records both."""
    from train.ppo_vec import train
    from train.ppo_vec_io import checkpoint_mlp, layer_sizes, load_checkpoint

    cfg = load_config(CONFIGS[0], ["total_steps=1024", "checkpoint_every=1024", "eval.every=0",
                                   "vec.num_games=64", "vec.rollout_steps=16",
                                   "torch_threads=1", "vec.collect_threads=1",
                                   "ppo.net_arch=[24,24]", "ppo.critic_arch=[8]"])
    run = tmp_path / "run"
    final = train(cfg, run, progress=False)
    state = load_checkpoint(final)
    assert layer_sizes(state["actor"]) == [413, 24, 24, 49]
    assert layer_sizes(state["critic"]) == [state["critic_input"], 8, 1]
    assert state["net_arch"] == [24, 24] and state["critic_arch"] == [8]
    assert [w.shape for w, _ in checkpoint_mlp(final).layers] == [(24, 413), (24, 24), (49, 24)]


def test_init_from_a_run_not_trained_yet_says_what_to_do(tmp_path):
    from conftest import cli_in_process
    res = cli_in_process(*train_args(tmp_path / "run", f"init_from={tmp_path / 'stage1'}"))
    assert res.returncode == 2 and "does not exist; train the run it names first" in res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "run").exists()


def test_init_from_widens_a_checkpoint_of_layout_version_1():
    """The slices of version 2 get zero weights (and zero Adam moments): the networks compute
    what they computed on version 1's inputs."""
    import torch

    from arschloch_env.observation import Layout
    from train.ppo_vec_io import widen_inputs

    old = Layout(8).version_size(1)
    new, extras = Layout(8).size, Layout(8, full_state=True).size - Layout(8).size
    g = torch.Generator().manual_seed(0)
    actor_w = torch.randn(4, old, generator=g)
    critic_w = torch.randn(4, old + extras, generator=g)
    moment = {"step": torch.tensor(3.0), "exp_avg": critic_w.clone(),
              "exp_avg_sq": critic_w.abs()}
    state = {"net_arch": [4], "critic_state": True,
             "actor": {"0.weight": actor_w, "0.bias": torch.zeros(4)},
             "critic": {"0.weight": critic_w, "0.bias": torch.zeros(4)},
             "optimizer": {"state": {4: moment}, "param_groups": []}}
    wide = widen_inputs(state, 8)
    assert wide["actor"]["0.weight"].shape == (4, new)
    assert wide["critic"]["0.weight"].shape == (4, new + extras)
    x = torch.rand(old + extras, generator=g)
    x_new = torch.cat([x[:old], torch.rand(new - old, generator=g), x[old:]])
    assert torch.allclose(wide["critic"]["0.weight"] @ x_new, critic_w @ x)
    assert torch.allclose(wide["actor"]["0.weight"] @ x_new[:new], actor_w @ x[:old])
    for key in ("exp_avg", "exp_avg_sq"):
        m = wide["optimizer"]["state"][4][key]
        assert m.shape == (4, new + extras) and not m[:, old:new].any()
    assert state["critic"]["0.weight"] is critic_w  # the loaded payload is left as it was
    assert widen_inputs(wide, 8)["critic"]["0.weight"].shape == (4, new + extras)


def test_init_from_names_a_missing_checkpoint(tmp_path):
    from train.ppo_vec_io import init_checkpoint
    from conftest import cli_in_process
    res = cli_in_process(*train_args(tmp_path / "run", f"init_from={tmp_path}"))
    assert res.returncode == 2 and "holds no checkpoint" in res.stderr, res.stderr[-2000:]
    with pytest.raises(ConfigError, match="only algo ppo-vec"):
        load_config(ROOT / "configs" / "ppo_culo_4p.yaml", [f"init_from={tmp_path}"])
    bundle = ROOT / "bots" / "ppo_vec_culo_multi"
    with pytest.raises(ConfigError, match=f"init_from: {bundle} is a bot bundle, which holds "
                                          f"the policy alone"):
        init_checkpoint(load_config(CONFIGS[0], [f"init_from={bundle}"]))


def test_init_from_a_run_of_the_sb3_trainer_says_so(tmp_path):
    from train.ppo_vec_io import init_checkpoint

    run = tmp_path / "sb3run"
    (run / "checkpoints").mkdir(parents=True)
    for name in ("final.zip", "final.json"):
        (run / "checkpoints" / name).write_text("{}")
    (run / "latest.json").write_text(json.dumps(
        {"checkpoint": "checkpoints/final.zip", "meta": "checkpoints/final.json", "steps": 8}))
    cfg = load_config(CONFIGS[0], [*SMALL, f"init_from={run}"])
    with pytest.raises(ConfigError, match=r"is a run of another trainer \(its last checkpoint "
                                          r"is final.zip\); a new ppo-vec run starts from"):
        init_checkpoint(cfg)


def test_agent_specs_are_seated_at_their_own_shares(tmp_path):
    """vec.mix gives every agent spec its own share of the opponent seats, not an equal split
    of the agents' total."""
    from arschloch_env.rules import make_rules
    from train.league import League
    from train.ppo_vec_seats import SnapshotPool, Table

    mix = {"current": 0.5, "greedy": 0.05, "expert": 0.45}
    pool = SnapshotPool(League(tmp_path / "league", 5))
    pool.refresh()
    table = Table(make_rules("culo", 4), 4, 1, mix, pool, np.random.default_rng(0), None)
    table.take_seat_counts()
    for _ in range(500):
        table.seat_games(np.arange(4))
    counts = table.take_seat_counts()
    seats = sum(counts.values())
    for kind, share in mix.items():
        assert counts.get(kind, 0) / seats == pytest.approx(share, abs=0.03), kind


def test_a_bundle_in_the_mix_is_loaded_once_for_every_seat(tmp_path, monkeypatch):
    """A bundle's agent seats share one loaded bundle: loading it again for every seat of
    every match cost milliseconds each, more than the seat's moves."""
    import agents.bundle
    from arschloch_env.rules import make_rules
    from conftest import calls_of
    from train.league import League
    from train.ppo_vec_seats import AGENT, SnapshotPool, Table

    loads = calls_of(monkeypatch, agents.bundle, "load_bundle")
    pool = SnapshotPool(League(tmp_path / "league", 5))
    pool.refresh()
    table = Table(make_rules("culo", 4), 8, 1, {"bots/ppo_vec_culo_multi": 1.0}, pool,
                  np.random.default_rng(0), None)
    for _ in range(3):
        table.seat_games(np.arange(8))
    assert (table.kind == AGENT).sum() == 8 * 3
    assert len(loads) == 1
    actions = np.zeros(8, np.int64)
    seat = table.seat
    kind = table.acting_kind(seat)
    table.agent_actions(actions, seat, kind)
    played = np.flatnonzero(kind == AGENT)  # the learner's rows are the trainer's to fill
    assert len(played) and table.mask[played, actions[played]].all()


def test_resume_from_a_damaged_checkpoint_names_it(small_run, tmp_path):
    import shutil
    from conftest import cli_in_process

    run = tmp_path / "run"
    shutil.copytree(small_run, run)
    latest = json.loads((run / "latest.json").read_text())
    (run / latest["checkpoint"]).write_bytes(b"garbage")
    config = (run / "config.yaml").read_text()
    res = cli_in_process("train", "--run-dir", str(run), "--resume", "--no-progress", "--set",
                         f"total_steps={latest['steps'] + 10000}")
    assert res.returncode == 2, res.stderr[-2000:]
    assert (f"--resume: {run / latest['checkpoint']}: cannot be loaded (damaged, or not a "
            f"ppo-vec checkpoint: UnpicklingError)") in res.stderr
    assert "Traceback" not in res.stderr
    assert (run / "config.yaml").read_text() == config  # as it was: its --config still fits


@pytest.mark.parametrize("content, says", [
    (b"", "is not a policy file: those are .npz archives"),
    (b"PK\x03\x04 not a zip", "is not a policy file: those are .npz archives"),
    (b"garbage\n", "is not a policy file: those are .npz archives"),  # no word of pickles
    (None, "is not a policy file: it holds x, not activation, W0, b0, ..."),
    ("missing", "clone.npz does not exist"),
])
def test_a_damaged_policy_file_is_a_config_error(tmp_path, content, says):
    bad = tmp_path / "clone.npz"
    if content is None:
        np.savez(bad, x=np.zeros(2))
    elif content != "missing":
        bad.write_bytes(content)
    cfg = load_config(CONFIGS[0], [f"vec.mix={{current: 0.5, {bad}: 0.5}}"])
    with pytest.raises(ConfigError, match="cannot be read") as err:
        policy_files(cfg)
    assert says in str(err.value) and "pickle" not in str(err.value)


@pytest.mark.parametrize("layer, kind, shape", [(1, "b", (63,)), (0, "b", (64, 1)),
                                                (2, "W", (49, 65))])
def test_a_policy_file_with_a_tensor_of_another_shape_is_a_config_error(tmp_path, layer, kind,
                                                                         shape):
    """Every tensor is compared, not only the weights: a bias of another shape passed the
    check and failed once training stacked it with the learner's snapshots."""
    from agents.mlp import MLP

    cfg = load_config(CONFIGS[0])
    assert CONFIGS[0].name == "ppo_vec_culo.yaml"
    sizes = [413, *cfg.ppo.net_arch, 49]  # culo's observation and actions
    layers = [[np.zeros((n_out, n_in), np.float32), np.zeros(n_out, np.float32)]
              for n_in, n_out in zip(sizes, sizes[1:])]
    slot = {"W": 0, "b": 1}[kind]
    expected = layers[layer][slot].shape
    layers[layer][slot] = np.zeros(shape, np.float32)
    bad = tmp_path / "clone.npz"
    MLP(layers, cfg.ppo.activation).save(bad)
    cfg = load_config(CONFIGS[0], [f"vec.mix={{current: 0.5, {bad}: 0.5}}"])
    with pytest.raises(ConfigError) as err:
        policy_files(cfg)
    assert f"policy file {bad} has layers" in str(err.value)
    assert f"tensor {kind}{layer} has shape {shape}, expected {expected}" in str(err.value)


def test_resume_refuses_a_policy_file_rewritten_since(tmp_path):
    """The run's checkpoints name the policy files' sha256: a clone rewritten under the same
    name would change the opponents of a resumed run without a word."""
    from agents.mlp import MLP
    from train.ppo_vec import train

    def write_policy(value: float):
        sizes = [413, *load_config(CONFIGS[0]).ppo.net_arch, 49]
        MLP([[np.full((n_out, n_in), value, np.float32), np.zeros(n_out, np.float32)]
             for n_in, n_out in zip(sizes, sizes[1:])], "relu").save(clone)

    clone = tmp_path / "clone.npz"
    write_policy(0.0)
    tiny = ["checkpoint_every=1024", "eval.every=0", "vec.num_games=64", "vec.rollout_steps=16",
            "torch_threads=1", "vec.collect_threads=1", f"vec.mix={{current: 0.5, {clone}: 0.5}}"]
    run = tmp_path / "run"
    train(load_config(CONFIGS[0], ["total_steps=1024", *tiny]), run, progress=False)
    assert set(latest_meta(run)["policy_files"]) == {str(clone)}
    train(load_config(CONFIGS[0], ["total_steps=2048", *tiny]), run, resume=True,
          progress=False)  # the same file: the run goes on
    write_policy(0.01)
    with pytest.raises(ConfigError, match=rf"policy file\(s\) {clone} changed since the "
                                          r"run's last checkpoint"):
        train(load_config(CONFIGS[0], ["total_steps=4096", *tiny]), run, resume=True,
              progress=False)


@pytest.mark.parametrize("every", [2000, 0])
def test_the_last_checkpoint_is_written_once(tmp_path, monkeypatch, every):
    """A run's last checkpoint is written once, after its closing evaluation (with
    ``eval.every`` 0 that evaluation comes after the last update): written on the last update
    too, it would be replaced in place, and a kill in the closing evaluation would leave a
    run that --resume calls finished, never evaluated at its end."""
    from conftest import calls_of
    from train import ppo_vec_run
    from train.config import load_config
    from train.ppo_vec import train
    calls = calls_of(monkeypatch, ppo_vec_run, "save_checkpoint")  # (run, name, ...)
    cfg = load_config(CONFIGS[0], ["total_steps=4000", "checkpoint_every=2000",
                                   f"eval.every={every}",
                                   "eval.deals=2", "eval.opponents=[random]",
                                   "eval.best_by=random", "vec.num_games=64",
                                   "vec.rollout_steps=16", "torch_threads=1",
                                   "vec.collect_threads=1"])
    final = train(cfg, tmp_path / "run", progress=False)
    written = [args[1] for args in calls]
    steps = [name for name in written if name.startswith("step_")]  # best may improve again
    assert len(steps) == len(set(steps)), written
    assert steps[-1] == final.stem
    assert int(final.stem.split("_")[1]) >= 4000 > int(steps[-2].split("_")[1])


def test_seat_counts_name_only_kinds_that_played_or_the_mix_names(tmp_path):
    """league/share/<kind> is logged from the seat counts: a kind the mix leaves out (random
    here) gets no 0 share, as the SB3 trainer logs only the kinds of league.mix."""
    from arschloch_env.rules import make_rules
    from train.league import League
    from train.ppo_vec_seats import SnapshotPool, Table

    pool = SnapshotPool(League(tmp_path / "league", 5))
    pool.refresh()
    table = Table(make_rules("culo", 4), 4, 1, {"snapshots": 0.9, "greedy": 0.1}, pool,
                  np.random.default_rng(0), None)
    for _ in range(50):
        table.seat_games(np.arange(4))
    counts = table.take_seat_counts()
    assert "random" not in counts, counts
    # no snapshot yet: the snapshots seats play current, and say so
    assert counts["current"] > 0 and counts["greedy"] > 0, counts


class IllegalAgent:
    """Always answers action 0 (a pass), which is illegal at a lead."""

    name = "always-pass"

    def act(self, observation, view):
        return 0


def _play_with_agent_seats(table, steps: int = 40) -> None:
    """Steps ``table``: its agent seats answer for themselves, every other seat at random."""
    from train.ppo_vec_seats import AGENT

    actions = np.zeros(table.B, np.int64)
    for _ in range(steps):
        kind = table.acting_kind(table.seat)
        actions[kind != AGENT] = table.vg.sample_actions()[kind != AGENT]
        table.agent_actions(actions, table.seat, kind)
        table.step(actions)


@pytest.mark.parametrize("tamper, says", [
    ("observation", r"the mirror reference game left the vector engine"),
    ("mask", r"the mirror reference game left the vector engine"),
    ("end", r"the mirror's match end \(True\) differs from the vector engine's \(False\)"),
])
def test_vec_debug_finds_a_mirror_that_left_the_vector_engine(tmp_path, monkeypatch, tamper,
                                                              says):
    """``vec.debug``, which the rollout tests rely on to check the agent seats, must notice
    a mirror game whose observation, legal actions or match end differ from the engine's."""
    from arschloch_env.engine import Game
    from arschloch_env.rules import make_rules
    from train.league import League
    from train.ppo_vec_seats import SnapshotPool, Table

    pool = SnapshotPool(League(tmp_path / "league", 5))
    pool.refresh()
    table = Table(make_rules("culo", 4), 8, 1, {"greedy": 1.0}, pool,
                  np.random.default_rng(0), None, debug=True)
    _play_with_agent_seats(table, steps=5)  # the mirrors agree so far
    assert table.mirrors
    if tamper == "observation":
        observe = table.encoder.observe
        monkeypatch.setattr(table.encoder, "observe", lambda game, seat: observe(game, seat) + 1)
    elif tamper == "mask":
        monkeypatch.setattr(Game, "legal_mask", lambda game: np.zeros_like(table.mask[0]))
    else:
        monkeypatch.setattr(Game, "is_over", property(lambda game: True))
    with pytest.raises(AssertionError, match=says):
        _play_with_agent_seats(table, steps=1)


def test_an_agent_seat_with_an_illegal_action_is_named(tmp_path):
    from agents.runner import AgentError
    from arschloch_env.rules import make_rules
    from train.league import League
    from train.ppo_vec_seats import SnapshotPool, Table

    pool = SnapshotPool(League(tmp_path / "league", 5))
    pool.refresh()
    table = Table(make_rules("culo", 4), 8, 1, {"test_ppo_vec:IllegalAgent": 1.0}, pool,
                  np.random.default_rng(0), None)
    with pytest.raises(AgentError, match=r"agent 'always-pass' in player_\d chose an illegal "
                                         r"action: game \d+: player_\d cannot 'pass'"):
        _play_with_agent_seats(table)  # until an agent seat leads


class BrokenAgent:
    """Fails as it is told: an error in reset or act, sys.exit() in act, or an answer that
    is no action id."""

    name = "broken"
    how = "raise"

    def reset(self, rules, seat, seed=None):
        if self.how == "reset":
            raise KeyError("boom in reset")

    def act(self, observation, view):
        if self.how == "raise":
            raise ValueError("boom in act")
        if self.how == "exit":
            sys.exit(3)
        legal = int(np.flatnonzero(observation["action_mask"])[0])
        return {"float": legal + 0.9, "str": str(legal), "none": None}[self.how]


@pytest.mark.parametrize("how, error, says", [
    ("raise", "AgentFailed", "raised ValueError: boom in act"),
    ("exit", "AgentFailed", "raised SystemExit: 3"),
    ("reset", "AgentFailed", "raised KeyError in reset: 'boom in reset'"),
    ("float", "AgentError", r"chose an illegal action: action \d\.9 is not an integer"),
    ("str", "AgentError", r"chose an illegal action: action '\d+' is not an integer"),
    ("none", "AgentError", "chose an illegal action: action None is not an integer"),
])
def test_an_agent_seat_that_fails_is_named(tmp_path, monkeypatch, how, error, says):
    """An agent of vec.mix fails as it would in a tournament: named with its seat, its
    sys.exit() no quiet end of the run, a float or a string never cast to an action."""
    import agents.runner
    from arschloch_env.rules import make_rules
    from train.league import League
    from train.ppo_vec_seats import SnapshotPool, Table

    monkeypatch.setattr(BrokenAgent, "how", how)
    pool = SnapshotPool(League(tmp_path / "league", 5))
    pool.refresh()
    with pytest.raises(getattr(agents.runner, error),
                       match=rf"agent 'broken' in player_\d {says}"):
        _play_with_agent_seats(Table(make_rules("culo", 4), 8, 1,
                                     {"test_ppo_vec:BrokenAgent": 1.0}, pool,
                                     np.random.default_rng(0), None))


def test_a_checkpoint_that_cannot_be_written_says_why_and_leaves_no_part(tmp_path,
                                                                          monkeypatch):
    """torch.save on a full disk raised a RuntimeError that did not say so ("unexpected
    pos"), and left its part file: the checkpoint is made in memory and written as bytes."""
    import errno
    from pathlib import Path as P

    from train.ppo_vec_io import save_checkpoint
    from train.sb3_trainer import RunDir

    run = RunDir(tmp_path / "run")
    run.checkpoints.mkdir(parents=True)

    def full(self, data):
        open(self, "wb").write(bytes(data)[:10])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(P, "write_bytes", full)
    with pytest.raises(OSError, match="No space left on device"):
        save_checkpoint(run, "step_1", {"weights": np.zeros(3)}, {"steps": 1}, latest=True)
    assert list(run.checkpoints.iterdir()) == [] and not run.latest.exists()


def test_a_snapshot_pruned_while_the_pool_reads_it_is_skipped(tmp_path):
    """Env workers read the league while the trainer prunes it: a snapshot gone in between
    is skipped, not taken for a damaged file."""
    from train.league import _load_if_there
    assert _load_if_there(tmp_path / "snap_000001.npz") is None
