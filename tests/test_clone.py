"""Behaviour cloning (``arschloch clone``) and policy files as league members of ppo-vec.

greedy is deterministic and simple, so a small clone of it must agree with it on most
held-out decisions that offer a choice; the clone then plays in a short ppo-vec run at its
share of the opponent seats, batched with the snapshots.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from agents.base import make_agent
from agents.mlp import MLP
from arschloch_env.engine import Game
from arschloch_env.observation import Encoder
from arschloch_env.rules import make_rules
from train.clone import Decisions, clone, collect
from tests.test_ppo_vec import cli, latest_meta, train_args

pytestmark = pytest.mark.train_extra


@pytest.fixture(scope="module")
def greedy_clone(tmp_path_factory):
    out = tmp_path_factory.mktemp("clone") / "greedy.npz"
    agreement = clone("greedy", "culo", [3, 4], 60_000, out, [64, 64], "relu", epochs=6,
                      log=lambda _: None)
    return out, agreement


def test_collect_records_only_the_teacher():
    data = collect("greedy", "culo", [4], 500, seed=3, partner="random")
    assert len(data) >= 500 and data.obs.dtype == np.float16
    assert (data.mask[np.arange(len(data)), data.action] == 1).all()
    greedy = make_agent("greedy")
    # greedy decides on the observation alone, so each recorded action is its choice there
    for obs, mask, action in list(zip(data.obs, data.mask, data.action))[:200]:
        assert greedy.act({"observation": obs.astype(np.float32), "action_mask": mask},
                          None) == action


def test_clone_agrees_with_its_teacher(greedy_clone):
    out, agreement = greedy_clone
    assert agreement > 0.85  # about 0.9 at these sizes
    mlp = MLP.load(out)
    assert [w.shape for w, _ in mlp.layers] == [(64, 413), (64, 64), (49, 64)]
    # fresh matches: every clone move is legal, and it is greedy's also where greedy departs
    # from the fixed rule it resembles (the lowest play, never a pass): learned, not the rule
    encoder, greedy = Encoder(8), make_agent("greedy")
    same = departures = 0
    for seed in range(11, 21):
        game = Game(make_rules("culo", 4), seed=seed, auto_pass=True)
        while not game.is_over:
            o = encoder.observation(game, game.current)
            legal = o["action_mask"].astype(bool)
            move = int(np.where(legal, mlp(o["observation"]), -np.inf).argmax())
            teacher = greedy.act(o, None)
            if teacher != next(a for a in np.flatnonzero(legal) if a):
                same += move == teacher
                departures += 1
            game.step(move)
    # the rule scores 0 there by construction; the clone about 0.6
    assert departures > 50 and same / departures > 0.45, (same, departures)


def test_clone_cli_errors_name_the_argument(tmp_path):
    from conftest import cli_in_process
    for args, message in [(["greedy", "--out", tmp_path / "c.zip"], "ends in .npz"),
                          (["greedyy", "--out", tmp_path / "c.npz"], "unknown agent spec"),
                          (["greedy", "--players", "7", "--out", tmp_path / "c.npz"], "3..6"),
                          (["greedy", "--decisions", "0", "--out", tmp_path / "c.npz"],
                           "--decisions 0"),
                          (["greedy", "--net-arch", "64", "0", "--out", tmp_path / "c.npz"],
                           "--net-arch 64 0: every hidden layer needs at least 1 unit"),
                          (["greedy", "--set", "rounds=0", "--out", tmp_path / "c.npz"],
                           "rounds: 0 is not allowed"),
                          (["greedy", "--players", "3", "--set", "num_players=5", "--out",
                            tmp_path / "c.npz"], "num_players: given as 3 and as 5"),
                          (["greedy", "--out", tmp_path / "d.npz"],
                           "is a directory; name the policy file")]:
        (tmp_path / "d.npz").mkdir(exist_ok=True)
        res = cli_in_process("clone", *args)
        assert res.returncode == 2 and message in res.stderr, res.stderr
        assert "Traceback" not in res.stderr
    assert not (tmp_path / "c.npz").exists()


class IllegalAgent:
    """Answers an action id out of range (``tests.test_clone:IllegalAgent``)."""

    def act(self, observation, view):
        return 999


@pytest.mark.parametrize("args", [["tests.test_clone:IllegalAgent", "--jobs", "1"],
                                  ["greedy", "--partner", "tests.test_clone:IllegalAgent",
                                   "--jobs", "2"]])
def test_clone_of_an_agent_that_plays_an_illegal_action_says_so_in_one_line(tmp_path, args):
    """As simulate and tournament say it (exit status 1), also from a worker process."""
    res = cli("clone", *args, "--decisions", "3000", "--out", tmp_path / "c.npz")
    assert res.returncode == 1, res.stderr[-2000:]
    assert "Traceback" not in res.stderr
    assert "agent 'IllegalAgent' in player_" in res.stderr
    assert "chose an illegal action: action 999 is out of range" in res.stderr
    assert not (tmp_path / "c.npz").exists()


def test_clone_replaces_only_a_policy_file(tmp_path, greedy_clone):
    """--out may name an earlier clone (or an empty file), never another kind of .npz."""
    other = tmp_path / "arrays.npz"
    np.savez(other, x=np.arange(3))
    before = other.read_bytes()
    res = cli("clone", "greedy", "--decisions", "600", "--out", other)
    assert res.returncode == 2, res.stderr
    assert "is not a policy file" in res.stderr and "give another name" in res.stderr
    assert "Traceback" not in res.stderr and other.read_bytes() == before
    earlier = tmp_path / "earlier.npz"
    earlier.write_bytes(greedy_clone[0].read_bytes())
    res = cli("clone", "greedy", "--players", "4", "--decisions", "600", "--epochs", "1",
              "--net-arch", "8", "--out", earlier)
    assert res.returncode == 0, res.stderr
    assert MLP.load(earlier).layers[0][0].shape[0] == 8  # the new clone: 8 hidden units


def test_clone_refuses_to_write_into_a_training_run(tmp_path, greedy_clone):
    """A run's league holds policy files too: a clone written over a snapshot would be played
    by the resumed run without a word."""
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "league").mkdir()
    (run / "config.yaml").write_text("algo: ppo-vec\n")  # a run before its first checkpoint
    snapshot = run / "league" / "snap_000000008192.npz"
    snapshot.write_bytes(greedy_clone[0].read_bytes())
    for out in (snapshot, run / "clone.npz"):
        res = cli("clone", "greedy", "--decisions", "600", "--out", out)
        assert res.returncode == 2, res.stderr
        assert (f"--out {str(out)!r} is inside the training run {str(run)!r}, whose files the "
                f"run keeps; give a path outside it" in res.stderr), res.stderr
    assert snapshot.read_bytes() == greedy_clone[0].read_bytes()
    assert not (run / "clone.npz").exists()


def test_fewer_decisions_than_a_minibatch_still_train():
    """Under one minibatch (2,048) of decisions the fit takes them all as one, instead of no
    step at all (an untrained network written as the clone)."""
    from train.clone import fit
    data = collect("greedy", "culo", [4], 1500, seed=1)
    _, before = fit(data, [64], epochs=1, learning_rate=0.0, log=lambda _: None)
    _, after = fit(data, [64], epochs=40, log=lambda _: None)
    assert after > before + 0.2, (before, after)
    one = Decisions(data.obs[:1], data.mask[:1], data.action[:1])
    with pytest.raises(ValueError, match="leave none to fit"):
        fit(one, [8], log=lambda _: None)


def test_clone_cli_plays_the_rules_of_set(tmp_path):
    out = tmp_path / "c52.npz"
    res = cli("clone", "greedy", "--rules", "culo", "--set",
              "rank_order=2,3,4,5,6,7,8,9,T,J,Q,K,A", "--set", "rounds=1", "--players", "5",
              "--decisions", "300", "--epochs", "1", "--net-arch", "8", "--out", out)
    assert res.returncode == 0, res.stderr
    # the 13-rank deck of the override: 1 + 6 * 13 = 79 actions, not culo's 49
    assert MLP.load(out).layers[-1][0].shape == (79, 8)


def test_clone_cli_plays_a_rules_files_table_size(tmp_path):
    (tmp_path / "r3.yaml").write_text("preset: culo\nnum_players: 3\nrounds: 1\n")
    out = tmp_path / "c3.npz"
    res = cli("clone", "greedy", "--rules", tmp_path / "r3.yaml", "--decisions", "300",
              "--epochs", "1", "--net-arch", "8", "--out", out)
    assert res.returncode == 0, res.stderr
    assert MLP.load(out).rules["num_players"] == 3


def test_collect_plays_the_rules_given():
    rules = make_rules("culo", 4, rank_order=tuple("23456789TJQKA"), rounds=1)
    data = collect("greedy", rules, [3], 100, seed=1)
    assert data.mask.shape[1] == 79 and len(data) >= 100


def test_policy_file_plays_its_share_in_ppo_vec(greedy_clone, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out, _ = greedy_clone
    run = tmp_path / "run"
    res = cli(*train_args(run, "total_steps=10000", "checkpoint_every=10000",
                          "vec.debug=false", f"vec.mix={{current: 0.5, {out}: 0.5}}"))
    assert res.returncode == 0, res.stderr[-3000:]
    assert latest_meta(run)["illegal_actions"] == 0
    acc = EventAccumulator(str(run / "tb" / "ppo_vec_1"))
    acc.Reload()
    shares = [e.value for e in acc.Scalars(f"league/share/{out}")]
    assert shares and 0.4 < np.mean(shares) < 0.6


@pytest.mark.parametrize("override, message", [
    ("ppo.net_arch=[32,32]", "has layers [(64, 413), (64, 64), (49, 64)] (relu); this run's "
                             "policy has [(32, 413), (32, 32), (49, 32)] (relu)"),
    ("ppo.activation=tanh", "(tanh)"),
])
def test_policy_file_of_another_shape_is_refused(greedy_clone, tmp_path, override, message):
    out, _ = greedy_clone
    res = cli(*train_args(tmp_path / "run", override, f"vec.mix={{current: 0.5, {out}: 0.5}}"))
    assert res.returncode == 2 and message in res.stderr, res.stderr[-2000:]
    assert not (tmp_path / "run").exists()


def test_missing_policy_file_is_named(tmp_path):
    res = cli(*train_args(tmp_path / "run", f"vec.mix={{current: 0.5, {tmp_path}/no.npz: 0.5}}"))
    assert res.returncode == 2 and "no.npz cannot be read" in res.stderr, res.stderr[-2000:]


def test_clone_records_its_rules_and_a_run_of_other_rules_refuses_it(greedy_clone, tmp_path):
    out, _ = greedy_clone
    assert MLP.load(out).rules["rank_order"] == list("789TJQKA")
    # culo-ten has culo's deck size (so the same shapes) but another rank order
    res = cli(*train_args(tmp_path / "run", "rules=culo-ten",
                          f"vec.mix={{current: 0.5, {out}: 0.5}}"))
    assert res.returncode == 2, res.stderr[-2000:]
    assert f"policy file {out} was made for other rules: trained with rank_order=" \
        in res.stderr, res.stderr[-2000:]
    assert not (tmp_path / "run").exists()


def test_policy_file_keeps_its_rules_through_save_and_load(tmp_path):
    rules = make_rules("tavern", 5).to_dict()
    mlp = MLP([(np.ones((2, 3)), np.zeros(2))], "relu", rules)
    mlp.save(tmp_path / "p.npz")
    assert MLP.load(tmp_path / "p.npz").rules == rules
    MLP([(np.ones((2, 3)), np.zeros(2))], "relu").save(tmp_path / "q.npz")
    assert MLP.load(tmp_path / "q.npz").rules is None  # a league snapshot names none


def test_a_partner_gets_its_own_agent_in_every_seat(monkeypatch):
    """The partner is reset with its seat in each seat it takes, so no two seats share one;
    it takes 0 to half of the seats, so the teacher plays at least half of every table."""
    from agents import runner
    from agents.random_agent import RandomAgent
    from train import clone

    tables, partners = [], []
    real = runner.reset_agents

    def spy(agents, rules, seed):
        tables.append(len({id(a) for a in agents}))
        partners.append(sum(isinstance(a, RandomAgent) for a in agents))
        return real(agents, rules, seed)

    monkeypatch.setattr(clone, "reset_agents", spy)
    clone._collect_part("greedy", "culo", 6, 3000, seed=1, partner="random")
    assert tables and tables == [6] * len(tables)
    assert set(partners) == {0, 1, 2, 3}, partners


def agreement_on(mlp: MLP, data: Decisions, rows: np.ndarray) -> tuple[float, int]:
    """How often ``mlp``'s most likely legal action is the teacher's, over those of ``rows``
    with a choice, and how many they are."""
    rows = rows[data.mask[rows].sum(axis=1) > 1]
    logits = np.where(data.mask[rows] == 1, mlp(data.obs[rows].astype(np.float32)), -np.inf)
    return float((logits.argmax(axis=1) == data.action[rows]).mean()), len(rows)


def test_held_out_agreement_is_the_written_clones_and_not_its_memory():
    """The agreement ``fit`` reports is that of the network it returns (the clone written),
    on held-out decisions with a choice only: recomputed here from the returned network on
    the same split. Where the teacher's choices are noise the clone learns the training
    decisions by heart and agrees with the held-out ones by chance only."""
    from train.clone import fit
    rng = np.random.default_rng(0)
    N, D, A = 1200, 413, 49
    obs = rng.standard_normal((N, D)).astype(np.float16)
    mask = np.zeros((N, A), np.int8)
    legal = np.stack([rng.choice(A, 4, replace=False) for _ in range(N)])
    forced = rng.random(N) < 0.4  # a single legal action: agreement there says nothing
    legal[forced, 1:] = legal[forced, :1]
    for row, acts in enumerate(legal):
        mask[row, acts] = 1
    action = legal[np.arange(N), rng.integers(0, 4, N)]
    data = Decisions(obs, mask, action)
    mlp, agreement = fit(data, [128, 128], epochs=60, batch_size=64, seed=3, held_out=0.5,
                         log=lambda _: None)

    order = np.random.default_rng(3).permutation(N)  # fit's split: held out first
    held_out, choices = agreement_on(mlp, data, order[:N // 2])
    # one near-tie may fall the other way in numpy's sums than in torch's
    assert agreement == pytest.approx(held_out, abs=1.01 / choices)
    assert agreement < 0.4, agreement  # chance: a quarter; by heart it would be near 1
    # the training decisions, learned by heart
    assert agreement_on(mlp, data, order[N // 2:])[0] > 0.9


def test_a_tanh_clone_is_written_as_tanh_and_reports_its_own_agreement(tmp_path):
    """The activation the fit trained with is the one the policy file plays with, and
    ``clone`` returns (and the command prints) the agreement its last epoch logged: that of
    the file written, recomputed here on fit's held-out split."""
    from train.clone import fit
    data = collect("greedy", "culo", [4], 1500, seed=1)
    mlp, agreement = fit(data, [32], activation="tanh", epochs=3, seed=5, log=lambda _: None)
    assert mlp.activation == "tanh"
    held = np.random.default_rng(5).permutation(len(data))[:max(1, int(len(data) * 0.05))]
    held_out, choices = agreement_on(mlp, data, held)
    assert agreement == pytest.approx(held_out, abs=1.01 / choices)
    lines = []
    out = tmp_path / "new" / "folder" / "c.npz"  # made for it, as the command's --out is
    returned = clone("greedy", "culo", [4], 1500, out, [16], "tanh", epochs=2, log=lines.append)
    assert lines[-1].startswith(f"epoch 2/2: held-out agreement {returned:.3f} (")
    assert MLP.load(out).activation == "tanh"


def test_no_held_out_decision_with_a_choice_is_an_error_not_full_agreement(tmp_path):
    """Agreement is over held-out decisions with a choice: where the one held-out decision
    (seed 89's single 18-decision round) has a single legal action there is no figure, and
    the command says so instead of reporting an agreement of 1.000."""
    from conftest import cli_in_process
    out = tmp_path / "c.npz"
    res = cli_in_process("clone", "greedy", "--players", "3", "--set", "rounds=1", "--decisions",
                         "1", "--seed", "89", "--epochs", "1", "--net-arch", "8", "--out", out)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "none of the 1 held-out decision(s) of 18 offers a choice" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and not out.exists()


def test_a_table_size_listed_twice_plays_other_matches():
    """--players 4 4 gives 4 players twice the share in new matches, not the same matches
    twice (a held-out decision would then also be a training one)."""
    data = collect("greedy", "culo", [4, 4], 600, seed=0)
    half = len(data) // 2
    assert not np.array_equal(data.action[:half], data.action[half:])
    assert len({(o.tobytes(), a) for o, a in zip(data.obs, data.action)}) > 0.9 * len(data)
    # a list without repeats collects what it did
    both, four = collect("greedy", "culo", [3, 4], 600), collect("greedy", "culo", [4], 300)
    assert np.array_equal(both.action[len(both) - len(four):], four.action)


def test_more_jobs_than_cores_collect_what_they_would_on_a_bigger_machine(monkeypatch):
    """--jobs splits the matches; the processes are capped at the usable cores (300 jobs on
    2 cores had failed to start its processes, and hung), and the decisions do not change."""
    import train.clone

    wide = collect("greedy", "culo", [4], 300, seed=2, jobs=3)
    monkeypatch.setattr(train.clone, "default_jobs", lambda: 1)
    pools = []
    real_pool = train.clone.ProcessPoolExecutor
    monkeypatch.setattr(train.clone, "ProcessPoolExecutor",
                        lambda workers: pools.append(workers) or real_pool(workers))
    narrow = collect("greedy", "culo", [4], 300, seed=2, jobs=3)
    assert pools == [1]
    for field in ("obs", "mask", "action"):
        assert np.array_equal(getattr(wide, field), getattr(narrow, field))


def test_more_jobs_than_cores_fit_on_the_cores(monkeypatch, tmp_path):
    """The fit's torch threads are capped at the usable cores as the processes are: a thread
    per job beyond them would only make the threads wait on each other."""
    import torch

    import train.clone

    monkeypatch.setattr(train.clone, "default_jobs", lambda: 1)
    threads = torch.get_num_threads()
    try:
        clone("greedy", "culo", [4], 300, tmp_path / "c.npz", [8], epochs=1, jobs=3,
              log=lambda _: None)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(threads)


class EndsItsProcess:
    """A teacher whose process ends at its first decision, as a crash or the system would end
    it."""

    def act(self, observation, view):
        os._exit(7)


def test_a_collecting_worker_that_dies_is_named():
    """concurrent.futures' BrokenProcessPool came out as a traceback."""
    from agents.runner import WorkerDied
    with pytest.raises(WorkerDied, match="a worker process collecting the decisions ended"):
        collect("test_clone:EndsItsProcess", "culo", [4], 100, jobs=2)
