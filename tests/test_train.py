"""Training, checkpoints, resume, export and bundles.

The learning test trains the smoke config (40k learner steps, a couple of minutes on 2 cores)
and then needs the bot to beat three random players in a duplicate evaluation: the 95% CI of
its rank points per round above par ((n-1)/2, what any seat averages when all play alike)
must exclude zero. Random play is the zero-skill reference and duplicate deals cancel card
luck, so a positive lower bound means the run learned to play better than chance.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from agents.bundle import NO_ACTION, BundleError, load_bundle, load_torch_program
from agents.mlp import MLP
from arschloch_env.engine import Game
from arschloch_env.observation import Encoder
from conftest import cli_in_process, made_once
from train.config import ConfigError, TrainConfig, load_config

pytestmark = pytest.mark.train_extra

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "configs" / "ppo_smoke.yaml"


def cli(*args, timeout=600, cwd=ROOT, **kw):
    return subprocess.run([sys.executable, "-m", "arschloch_env.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, cwd=cwd, **kw)


# -- configs ----------------------------------------------------------------------------------

def test_shipped_configs_load():
    for path in sorted((ROOT / "configs").glob("*.yaml")):
        cfg = load_config(path)
        assert cfg.total_steps > 0, path


@pytest.mark.parametrize("override, message", [
    ("bogus=1", "unknown config key(s) bogus"),
    ("ppo.bogus=1", "unknown config key(s) ppo.bogus"),
    ("players=[2]", "players"),
    ("ppo.n_steps=many", "ppo.n_steps: expected int"),
    ("ppo.activation=gelu", "ppo.activation"),
    ("eval.best_by=expert", "eval.best_by"),
    ("rules=nonsense", "rules: unknown preset 'nonsense'"),
    ("rules_overrides={bogus: 1}", "rules_overrides: unknown rules field(s) bogus; allowed: "),
    ("rules_overrides={exchange_cards: 9}", "rules_overrides: exchange_cards: 9 is not allowed"),
    ("seed=-1", "seed: -1 is not allowed"),
    ("seed=4294967296", "seed: 4294967296 is not allowed; it must be 0 .. 2**32 - 1"),
    ("players=[7]", "players: [7] must be a non-empty list of 3..6"),
    ("ppo.net_arch=[64, 0]", "ppo.net_arch: [64, 0] must be positive layer sizes"),
    ("ppo.critic_arch=[]", "ppo.critic_arch: [] must be positive layer sizes"),
    ("ppo.critic_arch=[0]", "ppo.critic_arch: [0] must be positive layer sizes"),
    ("league.mix={nope: 1.0}", "league.mix: unknown agent spec 'nope'"),
    ("league.mix={current: 1.0, snapshot: 0}", "league.mix: unknown agent spec 'snapshot'"),
    ("eval.opponents=[random, nope]", "eval.opponents: unknown agent spec 'nope'"),
    # the typo is named, not the best_by it leaves without its opponent
    ("eval.opponents=[gredy]", "eval.opponents: unknown agent spec 'gredy'"),
    ("eval.opponents=[random, greedy, random]", "eval.opponents: random named more than once"),
    ("eval.opponents=[random, bots/ppo_vec_tavern_multi]",
     "eval.opponents: bots/ppo_vec_tavern_multi does not play these rules (culo, 4 players): "
     "bundle"),
    ("eval.deals=1", "eval.deals: 1 is not allowed; it must be at least 2"),
    ("device=banana", "device: 'banana' is not a torch device; allowed: cpu, cuda"),
    ("device=mps", "device: 'mps'; allowed: cpu, cuda, cuda:N, auto"),
    ("league.mix={snapshot: 1}", "(a share of the mix may also name current, snapshots)"),
    ("league.mix={current:0.5}", "league.mix: 'current:0.5' reads as one key with no value; "
                                 "YAML needs a space after the colon (current: 0.5)"),
    # a block mapping's line without the space (ppo:\n  learning_rate:0.1) is one string
    ("ppo=learning_rate:0.1", "ppo: expected a mapping, got 'learning_rate:0.1'; YAML needs a "
                              "space after the colon (learning_rate: 0.1)"),
    ("league.mix=greedy:0.5", "league.mix: expected a mapping, got 'greedy:0.5'; YAML needs a "
                              "space after the colon (greedy: 0.5)"),
    ("vec.num_games=64", "vec.num_games: not read by algo ppo; only algo ppo-vec reads it (set "
                         "algo: ppo-vec to use it); remove it from the config or --set"),
])
def test_config_errors_name_the_key(override, message):
    with pytest.raises((ConfigError, ValueError), match=None) as info:
        load_config(SMOKE, [override])
    assert message in str(info.value)


@pytest.mark.parametrize("config", [SMOKE, ROOT / "configs" / "ppo_vec_culo.yaml"])
def test_both_trainers_take_a_device(config):
    """``auto`` anywhere; ``cuda`` where torch finds no CUDA device is a clear error; a
    resumed run may move to another device."""
    import torch

    from train.config import resume_config
    assert load_config(config, ["device=auto"]).device == "auto"
    assert load_config(config, ["device=cpu:0"]).device == "cpu:0"
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="device: 'cuda', but torch finds no CUDA device"):
            load_config(config, ["device=cuda"])
    assert resume_config(load_config(config).to_dict(), ["device=auto"]).device == "auto"


def test_train_cli_rejects_bad_config_cleanly(tmp_path):
    res = cli_in_process("train", "--config", SMOKE, "--set", "bogus=1", "--run-dir",
                         tmp_path / "r")
    assert res.returncode == 2
    assert "unknown config key(s) bogus" in res.stderr and "Traceback" not in res.stderr
    res = cli_in_process("train", "--config", tmp_path / "missing.yaml")
    assert res.returncode == 2 and "does not exist" in res.stderr
    assert "the kit's configs are in configs/: ppo_culo_4p.yaml" in res.stderr


def test_more_env_processes_than_the_memory_holds_are_refused_before_any_starts(tmp_path):
    from train.sb3_trainer import check_env_workers_fit
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemAvailable:    1048576 kB\n")  # 1 GiB: room for 5 workers
    check_env_workers_fit(load_config(SMOKE, ["n_envs=5"]), str(meminfo), str(tmp_path))
    with pytest.raises(ConfigError, match=r"n_envs: 6 env processes of about 200 MiB each need "
                       r"1\.2 GiB, more than the 1\.0 GiB of memory available; lower n_envs, "
                       r"or set subproc: false"):
        check_env_workers_fit(load_config(SMOKE, ["n_envs=6"]), str(meminfo), str(tmp_path))
    # in the trainer's own process the envs take little
    check_env_workers_fit(load_config(SMOKE, ["n_envs=6", "subproc=false"]), str(meminfo),
                          str(tmp_path))
    run = tmp_path / "run"
    res = cli_in_process("train", "--config", SMOKE, "--set", "n_envs=100000", "--run-dir", run)
    assert res.returncode == 2, res.stderr
    assert "n_envs: 100000 env processes of about 200 MiB each need" in res.stderr
    assert "Traceback" not in res.stderr and not run.exists()


def test_the_schedule_falls_due_at_each_multiple_or_the_first_step_past_it():
    from train.callbacks import Schedule
    cfg = load_config(None, ["league.snapshot_every=100", "eval.every=250",
                             "checkpoint_every=1000"])
    schedule = Schedule(cfg, steps=0)
    due = [(step, [w for w in ("snapshot", "eval", "checkpoint") if schedule.due(w, step)])
           for step in (99, 100, 100, 150, 250, 260, 510, 999, 1000)]
    assert due == [(99, []), (100, ["snapshot"]), (100, []), (150, []),
                   (250, ["snapshot", "eval"]), (260, []), (510, ["snapshot", "eval"]),
                   (999, ["snapshot", "eval"]), (1000, ["snapshot", "eval", "checkpoint"])]
    resumed = Schedule(cfg, steps=250)  # what was due at 250 went with the checkpoint there
    assert [resumed.due("eval", s) for s in (250, 499, 500)] == [False, False, True]
    never = Schedule(load_config(None, ["eval.every=0"]), steps=0)
    assert not any(never.due("eval", s) for s in (1, 50_000, 10**9))


def test_a_number_in_exponent_form_is_taken_for_an_int_field():
    """YAML 1.1 reads 2e7 as a string, as it reads 1e-4 (which float fields take)."""
    assert load_config(SMOKE, ["total_steps=2e7"]).total_steps == 20_000_000
    with pytest.raises(ConfigError, match="total_steps: expected int, got 2.5"):
        load_config(SMOKE, ["total_steps=2.5"])


def test_a_key_given_twice_is_refused_in_configs_and_rules_files(tmp_path):
    from arschloch_env.rules import RulesError, make_rules
    (tmp_path / "twice.yaml").write_text("algo: ppo-vec\nalgo: ppo\n")
    with pytest.raises(ConfigError, match="found the key 'algo' twice; give each key once"):
        load_config(tmp_path / "twice.yaml")
    (tmp_path / "rules.yaml").write_text("preset: culo\nrounds: 3\nrounds: 1\n")
    (tmp_path / "rules.json").write_text('{"preset": "culo", "rounds": 3, "rounds": 1}')
    for name in ("rules.yaml", "rules.json"):
        with pytest.raises(RulesError, match="found the key 'rounds' twice"):
            make_rules(str(tmp_path / name))
    # ... in --set values, and in a run's config.yaml read on resuming
    with pytest.raises(ConfigError, match="found the key 'current' twice"):
        load_config(None, ["vec.mix={current: 1, current: 2}"])
    from train.sb3_trainer import load_run_config
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.yaml").write_text("algo: ppo-vec\nalgo: ppo\n")
    with pytest.raises(ConfigError, match=r"damaged: found the key 'algo' twice; give each "
                                          r"key once \(line 2, column 1\)$"):  # one line
        load_run_config(tmp_path / "run")
    with pytest.raises(ConfigError, match="no key before '='"):
        load_config(None, ["=5"])
    # --set given twice: the later stands (a script's defaults, then the user's own)
    assert load_config(None, ["total_steps=5", "total_steps=6"]).total_steps == 6
    assert load_config(None, ["league.mix={greedy: 1}", "league.mix.expert=1"]).league.mix == {
        "greedy": 1, "expert": 1}  # a section and a field of it are two keys
    with pytest.raises(ConfigError, match=r"the key '.total_steps' has an empty part"):
        load_config(None, [".total_steps=5"])
    with pytest.raises(ConfigError, match=r"eval.opponents: empty; name at least one"):
        load_config(None, ["eval.opponents=[]"])
    with pytest.raises(ConfigError, match="cannot parse the value: found unhashable key"):
        load_config(None, ["league.mix={[1]: 2}"])


def test_ppo_vec_minibatches_of_a_sample_or_less_are_refused():
    with pytest.raises(ConfigError, match=r"vec.minibatches: 129 is more than half the "
                                          r"decisions of a rollout .* = 256.*at most 128"):
        load_config(None, ["algo=ppo-vec", "vec.num_games=16", "vec.rollout_steps=16",
                           "vec.minibatches=129"])
    assert load_config(None, ["algo=ppo-vec", "vec.num_games=16", "vec.rollout_steps=16",
                              "vec.minibatches=128"]).vec.minibatches == 128


def test_ppo_vec_rollouts_shorter_than_two_turns_of_the_largest_table_are_refused():
    with pytest.raises(ConfigError, match=r"vec.rollout_steps: 11 is too short for tables of "
                                          r"6; at least 12"):
        load_config(None, ["algo=ppo-vec", "players=[3,6]", "vec.rollout_steps=11"])
    assert load_config(None, ["algo=ppo-vec", "players=[3,6]",
                              "vec.rollout_steps=12"]).vec.rollout_steps == 12


def test_players_left_out_are_the_table_size_the_rules_name(tmp_path):
    """As clone and tournament take it: a rules file's or rules_overrides' num_players (it
    trained at 4 players, or refused the overrides as 'given as 4 and as 3')."""
    (tmp_path / "rules3.yaml").write_text("preset: culo\nnum_players: 3\n")
    (tmp_path / "c.yaml").write_text(f"algo: ppo-vec\nrules: {tmp_path / 'rules3.yaml'}\n")
    assert load_config(tmp_path / "c.yaml").players == [3]
    assert load_config(tmp_path / "c.yaml", ["players=[4, 5]"]).players == [4, 5]
    assert load_config(None, ["rules_overrides={num_players: 5}"]).players == [5]
    assert load_config(None, ["rules=tavern"]).players == [4]
    # overrides that name the size but fail otherwise: what fails, not a size of 4
    with pytest.raises(ConfigError, match="rules_overrides: .*bogus"):
        load_config(None, ["rules_overrides={num_players: 3, bogus: 1}"])


def test_an_empty_config_file_is_refused_and_an_empty_section_takes_set(tmp_path):
    for text in ("", "# only a comment\n"):
        (tmp_path / "empty.yaml").write_text(text)
        with pytest.raises(ConfigError, match=r"empty.yaml' is empty \(or only comments\); "
                                              r"give the settings of the run; the kit's configs"):
            load_config(tmp_path / "empty.yaml")
    (tmp_path / "bare.yaml").write_text("algo: ppo-vec\nppo:\n")
    cfg = load_config(tmp_path / "bare.yaml", ["ppo.learning_rate=1e-4"])
    assert cfg.ppo.learning_rate == 1e-4 and cfg.ppo.n_epochs == TrainConfig().ppo.n_epochs


def test_a_config_that_yaml_reads_oddly_is_a_clean_error(tmp_path):
    (tmp_path / "int_key.yaml").write_text("1: 2\n")
    with pytest.raises(ConfigError, match="unknown config key.s. 1; allowed in the top level"):
        load_config(tmp_path / "int_key.yaml")
    (tmp_path / "binary.yaml").write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigError, match="binary.yaml' is not valid YAML"):
        load_config(tmp_path / "binary.yaml")


@pytest.mark.parametrize("damage,says", [
    ({"config.yaml": "foo: ["}, "config.yaml is damaged"),
    ({"config.yaml": ""}, "config.yaml is damaged: it holds NoneType"),
    ({"config.yaml": "[]"}, "config.yaml is damaged: it holds list"),
    ({"latest.json": "{bad"}, "latest.json cannot be read"),
    ({"latest.json": '{"steps": 5}'}, "latest.json is damaged: checkpoint, meta missing"),
    ({"latest.json": '{"checkpoint": "checkpoints/x.zip", "meta": "checkpoints/x.json", '
                     '"steps": 5}'},
     "it names checkpoints/x.zip, checkpoints/x.json, which the run does not hold"),
])
def test_resume_of_a_damaged_run_names_the_file(tmp_path, damage, says):
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.yaml").write_text(Path(SMOKE).read_text())
    (run / "checkpoints" / "best.zip").write_text("kept")
    for name, text in damage.items():
        (run / name).write_text(text)
    res = cli_in_process("train", "--resume", "--run-dir", run)
    assert res.returncode == 2 and says in res.stderr, res.stderr[-2000:]
    assert "Traceback" not in res.stderr
    # a refused resume moves nothing of the run
    assert (run / "checkpoints" / "best.zip").read_text() == "kept"
    assert not (run / "earlier_attempts").exists()


def test_resume_keeps_the_rules_the_run_was_trained_with(tmp_path, monkeypatch):
    """A rules file edited since the run started is refused, not trained on; one that is not
    there from where the run is resumed (a relative path) says where to resume from."""
    from train.sb3_trainer import RunDir
    monkeypatch.chdir(tmp_path)
    Path("rf.yaml").write_text("preset: culo\nrounds: 2\n")
    RunDir("run").create(load_config(SMOKE, ["rules=rf.yaml"]))
    Path("rf.yaml").write_text("preset: culo\nrounds: 2\nno_finish_on_top: false\n")
    res = cli_in_process("train", "--resume", "--run-dir", "run", cwd=tmp_path)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-2000:]
    assert ("the run was trained with no_finish_on_top=True" in res.stderr and
            "now give no_finish_on_top=False" in res.stderr), res.stderr
    assert "restore the file, or resume with --set rules=" in res.stderr
    res = cli_in_process("train", "--resume", "--run-dir", tmp_path / "run")  # from the repo root
    assert res.returncode == 2 and "names 'rf.yaml' (rules), which is not there" in res.stderr
    assert "resume from there" in res.stderr


def test_a_run_whose_rules_file_is_gone_resumes_with_its_own_rules_json(tmp_path, monkeypatch):
    """The message names the way on, --set rules=RUN/rules.json, which plays the same rules at
    every table size; another source of other rules is refused, as an edited file is."""
    from train.sb3_trainer import RunDir, load_run_config
    monkeypatch.chdir(tmp_path)
    Path("rf.yaml").write_text("preset: culo\nrounds: 2\n")
    RunDir("run").create(load_config(SMOKE, ["rules=rf.yaml", "players=[3, 4, 5]", "n_envs=3"]))
    Path("rf.yaml").unlink()
    saved = (tmp_path / "run" / "rules.json").resolve()
    with pytest.raises(ConfigError, match=rf"or resume with the rules the run was trained "
                                          rf"with, --set rules={re.escape(str(saved))}"):
        load_run_config(Path("run"))
    cfg = load_run_config(Path("run"), [f"rules={saved}"])
    assert cfg.rules == str(saved)
    with pytest.raises(ConfigError, match=rf"the run was trained with rounds=2 .*, but the "
                                          rf"preset 'culo' gives rounds=5; the rules cannot "
                                          rf"change in a resumed run: resume with --set "
                                          rf"rules={re.escape(str(saved))}, or start a new run"):
        load_run_config(Path("run"), ["rules=culo"])
    (tmp_path / "run" / "rules.json").unlink()  # a run that kept none has nothing to compare
    with pytest.raises(ConfigError, match="rules cannot change in a run that kept no "
                                          "rules.json"):
        load_run_config(Path("run"), ["rules=culo"])


def test_resume_finds_the_default_run_directory(tmp_path):
    """--config with --resume and no --run-dir continues the run a new start would make."""
    res = cli_in_process("train", "--config", SMOKE, "--resume", "--set", "seed=12345",
                         cwd=tmp_path)
    assert res.returncode == 2, res.stderr[-2000:]
    assert "runs/ppo_smoke-seed12345 is not a run directory" in res.stderr, res.stderr


def test_a_config_named_without_its_folder_points_to_it(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(ConfigError, match="the kit's config of that name is "
                                          "configs/ppo_vec_culo.yaml"):
        load_config("ppo_vec_culo.yaml")
    # from elsewhere, the path that works from there (the relative one fails again)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="the kit's config of that name is "
                                          f"{ROOT / 'configs/ppo_vec_culo.yaml'}"):
        load_config("configs/ppo_vec_culo.yaml")


# -- a short real run -------------------------------------------------------------------------

def train_smoke_run(run: Path) -> None:
    # the envs in the trainer's process: on two cores a quarter faster than in processes of
    # their own, the same run bit for bit (test_same_seed_same_run_on_one_process_and_several)
    res = cli("train", "--config", SMOKE, "--run-dir", run, "--set", "eval.deals=150",
              "--set", "subproc=false", timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    # not a terminal: no progress bar by default, but the evaluation lines
    assert "step/s" not in res.stderr + res.stdout
    assert "rank points over par vs random" in res.stdout


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    return made_once(tmp_path_factory, "smoke_run", train_smoke_run)


def test_short_training_learns(smoke_run):
    """The trained policy beats random play, and by more than the network it started from:
    an untrained network playing its most likely move already beats random on some seeds,
    so beating random alone would not show that anything was learned."""
    from train.evaluate import evaluate_fields
    from train.export import policy_mlp
    from train.sb3_trainer import eval_players, rules_for

    meta = json.loads((smoke_run / json.loads((smoke_run / "latest.json").read_text())["meta"])
                      .read_text())
    assert meta["steps"] >= 40_000
    result = meta["evaluations"][-1]["results"]["random"]
    assert result["advantage_ci_low"] > 0, result
    assert meta["illegal_actions"] == 0
    cfg = load_config(smoke_run / "config.yaml")
    start = evaluate_fields(policy_mlp(_untrained_model(cfg.seed)),
                            rules_for(cfg, eval_players(cfg.players)), ["random"],
                            result["deals"], seed=cfg.seed + 1)["random"]  # the same deals
    assert result["advantage_ci_low"] > start["advantage_ci_high"], (result, start)


def test_tensorboard_has_our_scalars(smoke_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    (logdir,) = [p for p in (smoke_run / "tb").iterdir() if p.is_dir()]
    acc = EventAccumulator(str(logdir))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    from tests.test_ppo_vec import SB3_SCALARS
    for tag in ("eval/vs_random/rank_points", "eval/vs_random/ci_low", "charts/samples_per_s",
                "charts/illegal_actions", "league/pool_size", "rollout/ep_rew_mean",
                *SB3_SCALARS):
        assert tag in tags, tags
    assert all(e.value == 0 for e in acc.Scalars("charts/illegal_actions"))
    assert "config/text_summary" in acc.Tags()["tensors"]


def _untrained_model(seed: int = 0):
    from stable_baselines3.common.vec_env import DummyVecEnv

    from train.sb3_trainer import make_env, make_model
    cfg = load_config(SMOKE, [f"seed={seed}"])
    envs = DummyVecEnv([make_env(cfg, 0, Path("/nonexistent-league"))])
    return make_model(cfg, envs, Path("/tmp"))


# -- kill and resume --------------------------------------------------------------------------

def test_sigkill_then_resume_loses_nothing(tmp_path):
    run = tmp_path / "run"
    args = [sys.executable, "-m", "arschloch_env.cli", "train", "--config", str(SMOKE),
            "--run-dir", str(run), "--no-progress", "--set", "total_steps=12000",
            "--set", "checkpoint_every=4096", "--set", "ppo.n_steps=256",
            "--set", "league.snapshot_every=2048", "--set", "eval.deals=5",
            "--set", "ppo.lr_final=0.0001", "--set", "league.max_snapshots=20"]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while not (run / "latest.json").exists() and time.time() < deadline:
        time.sleep(0.2)
    assert (run / "latest.json").exists(), "no checkpoint was written"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    first = json.loads((run / "latest.json").read_text())
    assert first["steps"] < 12000
    from conftest import event_files, logged_steps
    before = event_files(run)
    # A temporary (*.part.zip) may be left by the kill; every file under a final name is whole.
    for final in [p for p in (run / "checkpoints").glob("step_*.zip") if ".part" not in p.name]:
        import zipfile
        assert zipfile.is_zipfile(final), f"{final} is half-written"

    # the run's own config; --set extends it (and config.yaml says so for the next resume)
    at = json.loads((run / "latest.json").read_text())["steps"]
    res = cli("train", "--run-dir", run, "--resume", "--no-progress",
              "--set", "total_steps=14000")
    assert res.returncode == 0, res.stderr[-3000:]
    assert f"resuming {run} from its checkpoint at step {at} (total_steps=14000)" in res.stderr
    assert yaml.safe_load((run / "config.yaml").read_text())["total_steps"] == 14000
    last = json.loads((run / "latest.json").read_text())
    assert last["steps"] >= 14000
    from sb3_contrib import MaskablePPO
    model = MaskablePPO.load(str(run / last["checkpoint"]), device="cpu")
    # the decay follows the run's steps across the resume and ends at lr_final
    assert model.policy.optimizer.param_groups[0]["lr"] == pytest.approx(0.0001)
    meta = json.loads((run / last["meta"]).read_text())
    assert meta["config"]["total_steps"] == 14000
    steps = [s["steps"] for s in meta["league"]]
    assert steps == sorted(steps) and steps[0] <= first["steps"]
    # the resumed process counted on from the checkpoint's step, not from 0
    resumed = logged_steps(event_files(run) - before, "time/fps")
    assert resumed and first["steps"] < min(resumed) <= first["steps"] + 4096, resumed


def test_new_run_refuses_an_existing_run_dir(smoke_run):
    res = cli_in_process("train", "--config", SMOKE, "--run-dir", smoke_run)
    assert res.returncode == 2 and "--resume" in res.stderr


@pytest.mark.parametrize("args, says", [
    (["--set", "ppo.net_arch=[32]"], "ppo.net_arch cannot change in a resumed run"),
    (["--set", "ppo.critic_arch=[32]"], "ppo.critic_arch cannot change in a resumed run"),
    (["--set", "league.mix={random: 1.0}"], "league.mix.random"),
    (["--config", "configs/ppo_demo.yaml"], "differs in"),
])
def test_resume_refuses_changes_the_checkpoint_fixes(smoke_run, args, says):
    before = (smoke_run / "config.yaml").read_text()
    res = cli_in_process("train", "--run-dir", smoke_run, "--resume", *args)
    assert res.returncode == 2 and says in res.stderr, res.stderr
    assert (smoke_run / "config.yaml").read_text() == before


def test_resume_refuses_a_rules_json_edited_since_the_checkpoint(smoke_run, tmp_path):
    """The rules a run's checkpoint records are those it trained with; a rules.json changed
    by hand since is refused (with --set rules= pointing at it too), never trained on."""
    import shutil
    run = tmp_path / "run"
    shutil.copytree(smoke_run, run)
    saved = json.loads((run / "rules.json").read_text())
    (run / "rules.json").write_text(json.dumps({**saved, "vice_exchange_cards": 0}))
    before = sorted((p.name, p.stat().st_mtime_ns) for p in run.rglob("*"))
    for extra in ([], ["--set", f"rules={run / 'rules.json'}"]):
        res = cli_in_process("train", "--run-dir", run, "--resume", "--set",
                             "total_steps=100000", *extra)
        assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-2000:]
        assert "rules.json says vice_exchange_cards=0, but the run's checkpoint" in res.stderr
        assert "was trained with vice_exchange_cards=1" in res.stderr, res.stderr
    assert sorted((p.name, p.stat().st_mtime_ns) for p in run.rglob("*")) == before


def test_resume_of_a_run_whose_config_yaml_is_gone_takes_its_checkpoints_config(smoke_run,
                                                                               tmp_path):
    import shutil
    run = tmp_path / "run"
    shutil.copytree(smoke_run, run)
    saved = yaml.safe_load((run / "config.yaml").read_text())
    (run / "config.yaml").unlink()
    steps = json.loads((run / "latest.json").read_text())["steps"]
    res = cli("train", "--run-dir", run, "--resume", "--set", f"total_steps={steps + 1}")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "config.yaml is missing: resuming with the config the run's last checkpoint " \
           "recorded" in res.stderr
    again = yaml.safe_load((run / "config.yaml").read_text())
    assert again == {**saved, "total_steps": steps + 1}
    assert json.loads((run / "latest.json").read_text())["steps"] > steps


def test_resume_refuses_a_run_whose_checkpoints_folder_cannot_be_written(smoke_run,
                                                                         monkeypatch, capsys):
    """Up front, not at the first checkpoint after the training (os.access stands in for a
    folder its user cannot write: root writes every folder)."""
    import arschloch_env.cli as cli_module

    real = os.access
    monkeypatch.setattr(cli_module.os, "access", lambda path, mode: (
        Path(path).name != "checkpoints" and real(path, mode)))
    before = sorted(p.name for p in smoke_run.rglob("*"))
    assert cli_module.main(["train", "--run-dir", str(smoke_run), "--resume",
                            "--set", "total_steps=100000"]) == 2
    err = capsys.readouterr().err
    assert f"--run-dir {str(smoke_run)!r}: checkpoints/" in err and "not a writable" in err
    assert sorted(p.name for p in smoke_run.rglob("*")) == before


def test_resuming_a_finished_run_writes_nothing(smoke_run):
    def files():
        return {p: p.stat().st_mtime_ns for p in smoke_run.rglob("*") if p.is_file()}

    before = files()
    res = cli_in_process("train", "--run-dir", smoke_run, "--resume", "--no-progress")
    assert res.returncode == 0 and "nothing to train" in res.stderr, res.stderr[-2000:]
    assert files() == before


def test_train_needs_a_config():
    res = cli_in_process("train", "--no-progress")
    assert res.returncode == 2 and "--config" in res.stderr


# -- export and bundles -----------------------------------------------------------------------

def _observations(count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Real observations and masks from random culo games."""
    rng = np.random.default_rng(seed)
    enc = Encoder(8)
    obs, masks = [], []
    g = Game("culo", seed=seed, auto_pass=True)
    while len(obs) < count:
        if g.is_over:
            g = Game("culo", seed=int(rng.integers(1 << 30)), auto_pass=True)
        obs.append(enc.observe(g, g.current))
        masks.append(g.legal_mask())
        legal = g.legal_actions()
        g.step(legal[int(rng.integers(len(legal)))])
    return np.stack(obs), np.stack(masks)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    from train.export import policy_mlp, torch_policy, write_bundle
    from train.sb3_trainer import rules_for
    model = _untrained_model(seed=3)
    mlp = policy_mlp(model)
    out = tmp_path_factory.mktemp("bots") / "parity"
    rules = rules_for(load_config(SMOKE)).to_dict()
    write_bundle(out, mlp, rules, ["culo"], [4], "parity", {"steps": 0},
                 torch_program=torch_policy(mlp))
    return out, model


def test_sb3_envs_take_the_table_sizes_in_turn(tmp_path):
    from train.sb3_trainer import make_env
    cfg = load_config(SMOKE, ["players=[3,5]", "n_envs=4"])
    sizes = []
    for i in range(cfg.n_envs):
        env = make_env(cfg, i, tmp_path)()
        sizes.append(env.unwrapped.rules.num_players)
        env.close()
    assert sizes == [3, 5, 3, 5]


@pytest.mark.parametrize("activation", ["relu", "tanh"])
def test_policy_mlp_takes_the_sb3_actor_with_its_activation(activation):
    import torch
    from sb3_contrib import MaskablePPO

    from arschloch_env.single import SingleSeatEnv
    from train.export import policy_mlp
    env = SingleSeatEnv(rules="culo", num_players=4, mask_in_observation=False)
    act = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}[activation]
    model = MaskablePPO("MlpPolicy", env, seed=0, device="cpu",
                        policy_kwargs=dict(net_arch=[16, 8], activation_fn=act))
    mlp = policy_mlp(model)
    assert mlp.activation == activation
    obs, _ = _observations(200)
    with torch.no_grad():
        ref = model.policy.get_distribution(torch.as_tensor(obs)).distribution.logits.numpy()
    got = mlp(obs)
    got, ref = got - got.max(1, keepdims=True), ref - ref.max(1, keepdims=True)
    assert np.abs(got - ref).max() < 1e-5


def test_onnx_bundle_matches_torch_policy(bundle):
    import torch
    out, model = bundle
    obs, masks = _observations(3000)
    agent = load_bundle(out)
    actions, logits = agent.policy(obs, masks)
    with torch.no_grad():
        dist = model.policy.get_distribution(torch.as_tensor(obs))
        torch_logits = dist.distribution.logits.numpy()
    # SB3 normalises logits (log-softmax); compare up to the per-row constant.
    raw = logits - logits.max(axis=1, keepdims=True)
    ref = torch_logits - torch_logits.max(axis=1, keepdims=True)
    assert np.abs(raw - ref).max() < 1e-5
    masked = np.where(masks > 0, torch_logits, -np.inf)
    assert (actions == masked.argmax(axis=1)).all()
    program = load_torch_program(out).module()
    torch_actions, _ = program(torch.as_tensor(obs), torch.as_tensor(masks))
    assert (torch_actions.numpy() == actions).all()
    one_action, _ = program(torch.as_tensor(obs[:1]), torch.as_tensor(masks[:1]))
    assert one_action.tolist() == actions[:1].tolist()
    # rows it cannot answer: as the ONNX graph, never an action id
    bad_obs, bad_masks = obs[:3].copy(), masks[:3].copy()
    bad_masks[0] = 0
    bad_obs[1, 0], bad_obs[2, 4] = np.nan, np.inf
    bad_actions, _ = program(torch.as_tensor(bad_obs), torch.as_tensor(bad_masks))
    assert bad_actions.tolist() == [NO_ACTION] * 3
    # a mask of other values than 0/1 (outside the contract) is read alike by both: non-zero
    # is legal
    odd = masks[:200].astype(np.int8) * np.int8(-1)
    graph_actions, _ = agent.session.run(["action", "logits"], {
        "observation": obs[:200], "action_mask": odd})
    torch_actions, _ = program(torch.as_tensor(obs[:200]), torch.as_tensor(odd))
    assert (torch_actions.numpy() == graph_actions).all()
    assert (graph_actions == actions[:200]).all()


def test_policy_graphs_answer_no_action_where_the_logits_overflow():
    """Finite observations far beyond any real one overflow a relu network's logits to inf
    and NaN, where ArgMax names any action, legal or not: both policy graphs answer
    NO_ACTION there, as for a NaN observation."""
    import onnxruntime as ort
    import torch

    from train.export import mlp_to_onnx, torch_policy

    rng = np.random.default_rng(0)
    mlp = MLP([(rng.normal(size=(16, 8)), rng.normal(size=16)),
               (rng.normal(size=(5, 16)), rng.normal(size=5))], "relu")
    obs = rng.random((3, 8), dtype=np.float32)
    obs[1] *= np.float32(3e38)
    mask = np.zeros((3, 5), np.int8)
    mask[:, 1:3] = 1  # action 0 (ArgMax's pick over NaN) is illegal in every row
    session = ort.InferenceSession(mlp_to_onnx(mlp, 5).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    graph_actions, graph_logits = session.run(["action", "logits"],
                                              {"observation": obs, "action_mask": mask})
    assert not np.isfinite(graph_logits[1]).all()
    program = torch_policy(mlp).module()
    torch_actions, _ = program(torch.as_tensor(obs), torch.as_tensor(mask))
    for actions in (graph_actions.tolist(), torch_actions.tolist()):
        assert actions[1] == NO_ACTION
        assert actions[0] in (1, 2) and actions[2] in (1, 2)


def test_torch_program_is_checked_against_its_checksum(bundle, tmp_path):
    """policy.pt2 has its sha256 in the manifest, as policy.onnx has: another program put in
    its place is refused. A bundle exported before there was one loads unverified."""
    import shutil

    import torch

    from agents.bundle import file_sha256
    from train.export import policy_mlp, torch_policy

    out, model = bundle
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["policy"]["torch"] == {"file": "policy.pt2",
                                           "sha256": file_sha256(out / "policy.pt2"),
                                           "torch_version": torch.__version__}
    swapped = tmp_path / "swapped"
    shutil.copytree(out, swapped)
    mlp = policy_mlp(model)
    other = MLP([(-w, b) for w, b in mlp.layers], mlp.activation)  # a valid program, not this
    torch.export.save(torch_policy(other), str(swapped / "policy.pt2"))
    with pytest.raises(BundleError, match="policy.pt2 is damaged"):
        load_torch_program(swapped)

    before = tmp_path / "before_checksums"
    shutil.copytree(out, before)
    del manifest["policy"]["torch"]
    (before / "manifest.json").write_text(json.dumps(manifest))
    obs, masks = _observations(50)
    actions, _ = load_bundle(before).policy(obs, masks)
    program = load_torch_program(before).module()
    assert (program(torch.as_tensor(obs), torch.as_tensor(masks))[0].numpy() == actions).all()
    (before / "policy.pt2").unlink()
    with pytest.raises(BundleError, match="no policy.pt2"):
        load_torch_program(before)


def test_a_torch_program_torch_cannot_read_names_both_torch_versions(bundle, tmp_path):
    """torch.export archives are not promised to load in another torch release: the error
    names the torch that wrote the file and the one that reads it, and the way out."""
    import shutil

    import torch

    from agents.bundle import file_sha256

    out, _ = bundle
    unreadable = tmp_path / "unreadable"
    shutil.copytree(out, unreadable)
    (unreadable / "policy.pt2").write_bytes(b"PK\x03\x04 not an archive of this torch")
    manifest = json.loads((unreadable / "manifest.json").read_text())
    manifest["policy"]["torch"].update(sha256=file_sha256(unreadable / "policy.pt2"),
                                       torch_version="9.9.9")
    (unreadable / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(BundleError, match=rf"torch {re.escape(torch.__version__)} cannot load "
                                          r"policy.pt2, written by torch 9.9.9 .*use "
                                          r"policy.onnx, or re-export with this torch"):
        load_torch_program(unreadable)
    assert load_bundle(unreadable).policy(*_observations(5))[0].shape == (5,)


def test_bundle_loads_and_plays_without_torch(bundle):
    out, _ = bundle
    code = (
        "import sys, builtins\n"
        "real = builtins.__import__\n"
        "def guard(name, *a, **k):\n"
        "    if name == 'torch' or name.startswith(('torch.', 'stable_baselines3', 'sb3_contrib')):\n"
        "        raise ImportError('torch is not allowed here: ' + name)\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = guard\n"
        "from agents.runner import play_match\n"
        "from agents import make_agent\n"
        f"bot = make_agent({str(out)!r})\n"
        "g = play_match('culo', [bot, make_agent('random'), make_agent('random'), "
        "make_agent('random')], seed=1)\n"
        "assert g.is_over\n"
        "print('played', g.totals)\n"
        "from agents.bundle import BundleError, load_torch_program\n"
        "try:\n"
        f"    load_torch_program({str(out)!r})\n"
        "except BundleError as exc:\n"
        "    assert 'policy.pt2 needs torch, which is not installed' in str(exc), exc\n"
        "else:\n"
        "    raise AssertionError('a torch program loaded without torch')\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "played" in res.stdout


def test_bundle_refuses_other_rules_and_damage(bundle, tmp_path):
    import shutil
    out, _ = bundle
    agent = load_bundle(out)
    from arschloch_env.rules import make_rules
    with pytest.raises(BundleError, match="preset"):
        agent.reset(make_rules("tavern", 4).to_dict(), 0, 0)
    with pytest.raises(BundleError, match="players"):
        agent.reset(make_rules("culo", 5).to_dict(), 0, 0)
    with pytest.raises(BundleError, match="no_finish_on_top"):
        agent.reset(make_rules("culo", 4, no_finish_on_top=False).to_dict(), 0, 0)
    agent.reset(make_rules("culo", 4, rounds=1).to_dict(), 0, 0)  # match length is fine
    agent.reset(make_rules("culo-points", 4).to_dict(), 0, 0)  # so is culo's play to points
    with pytest.raises(BundleError, match="preset"):
        agent.reset(make_rules("culo-ten", 4).to_dict(), 0, 0)

    # what is given instead of a bundle directory is named as what it is
    for where, says in [(tmp_path / "none", "no such directory"),
                        (out / "manifest.json", "a file, not a bundle directory"),
                        (tmp_path, "no manifest.json")]:
        with pytest.raises(BundleError, match=f"^bundle {re.escape(repr(str(where)))}: {says}"):
            load_bundle(where)

    damaged = tmp_path / "damaged"
    shutil.copytree(out, damaged)
    data = bytearray((damaged / "policy.onnx").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (damaged / "policy.onnx").write_bytes(bytes(data))
    with pytest.raises(BundleError, match="damaged"):
        load_bundle(damaged)

    old = tmp_path / "old_version"
    shutil.copytree(out, old)
    manifest = json.loads((old / "manifest.json").read_text())
    manifest["observation"]["version"] = 0
    (old / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(BundleError, match="observation layout version"):
        load_bundle(old)

    (old / "manifest.json").write_text("{not json")
    with pytest.raises(BundleError, match="damaged"):
        load_bundle(old)


def test_bundle_of_an_earlier_layout_reads_the_leading_part(bundle, tmp_path):
    """Layout versions only append slices: a version-1 bundle (the observation up to
    ``seat_total``) plays on today's observation as it did on version 1's."""
    import shutil

    import onnx

    from agents.bundle import file_sha256
    from train.export import mlp_to_onnx, policy_mlp

    out, model = bundle
    v1 = tmp_path / "v1"
    shutil.copytree(out, v1)
    manifest = json.loads((v1 / "manifest.json").read_text())
    layout = manifest["observation"]["layout"]
    keep = [name for name, _ in layout].index("seat_total") + 1
    D1 = sum(int(np.prod(shape)) for _, shape in layout[:keep])
    mlp = policy_mlp(model)
    w0, b0 = mlp.layers[0]
    small = MLP([(w0[:, :D1], b0), *mlp.layers[1:]], mlp.activation)
    onnx.save(mlp_to_onnx(small, mlp.output_size), v1 / "policy.onnx")
    manifest["observation"] = {"version": 1, "size": D1, "layout": layout[:keep]}
    manifest["policy"]["sha256"] = file_sha256(v1 / "policy.onnx")
    (v1 / "manifest.json").write_text(json.dumps(manifest))
    agent = load_bundle(v1)
    g = Game("culo", num_players=4, seed=3)
    obs = Encoder(g.R).observation(g, g.current)
    _, logits = agent.policy(obs["observation"][None], obs["action_mask"][None])
    assert np.allclose(logits[0], small(obs["observation"][:D1]), atol=1e-5)

    manifest["observation"]["layout"] = layout[1:keep]
    (v1 / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(BundleError, match="not a leading part"):
        load_bundle(v1)


def test_export_cli_and_bundle_as_agent_spec(smoke_run, tmp_path):
    out = tmp_path / "bots" / "smoke"
    res = cli_in_process("export", smoke_run, "--out", out)
    assert res.returncode == 0, res.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["presets"] == ["culo"] and manifest["players"] == [4]
    # it names the checkpoint it chose from the run: the best by evaluation, else the last
    assert (f"exported {Path(manifest['training']['checkpoint'])} (step "
            f"{manifest['training']['steps']})") in res.stdout
    assert Path(manifest["training"]["checkpoint"]).name in ("best.zip", "best.pt")
    # the play command it suggests runs: one spec for every other seat, whatever their number
    suggested = res.stdout.splitlines()[-1].split()
    assert suggested[:2] == ["arschloch", "play"] and suggested[-2:] == ["--bots", str(out)]
    res = cli(*suggested[1:], input="quit\n")
    assert res.returncode == 0 and "you left the game" in res.stdout, res.stderr
    assert manifest["training"]["evaluation"]["results"]["random"]["rank_points"] > 1.5
    res = cli_in_process("simulate", "--rules", "culo", "--players", "4", "--matches", "3",
                         "--agents", out, "random", "random", "random")
    assert res.returncode == 0, res.stderr
    res = cli_in_process("simulate", "--rules", "tavern", "--players", "4", "--matches", "1",
                         "--agents", out, "random", "random", "random")
    assert res.returncode != 0 and "trained for preset" in res.stderr
    assert "Traceback" not in res.stderr
    res = cli_in_process("export", tmp_path / "nothing-here", "--out", tmp_path / "x")
    assert res.returncode == 2 and f"{tmp_path / 'nothing-here'} does not exist" in res.stderr
    (tmp_path / "damaged").mkdir()
    (tmp_path / "damaged" / "latest.json").write_text("garbage")
    res = cli_in_process("export", tmp_path / "damaged", "--out", tmp_path / "x")
    assert res.returncode == 2 and "latest.json cannot be read" in res.stderr, res.stderr
    assert "give one of the run's checkpoints instead" in res.stderr
    res = cli_in_process("export", tmp_path / "nothing-here", "--out", tmp_path / "x")
    assert res.returncode == 2 and f"{tmp_path / 'nothing-here'} does not exist" in res.stderr
    (tmp_path / "afile").write_text("")
    res = cli_in_process("export", smoke_run, "--out", tmp_path / "afile" / "bot")
    assert res.returncode == 2 and "--out" in res.stderr and "Traceback" not in res.stderr
    res = cli_in_process("export", out, "--out", tmp_path / "again")
    assert res.returncode == 2 and f"{out} is a bot bundle already" in res.stderr, res.stderr
    res = cli_in_process("export", Path(smoke_run) / "checkpoints", "--out", tmp_path / "again")
    assert res.returncode == 2, res.stderr
    assert f"is the checkpoints folder of the run {str(smoke_run)!r}" in res.stderr, res.stderr


def test_evaluations_score_the_weights_of_their_step(tmp_path):
    """SB3 trains on a rollout after its end: an evaluation (and the best checkpoint it
    writes) at step N holds the weights of the checkpoint at step N, after that update."""
    import torch
    from sb3_contrib import MaskablePPO

    from train.sb3_trainer import train
    run = tmp_path / "run"
    final = train(load_config(SMOKE, [
        "total_steps=1536", "ppo.n_steps=256", "ppo.batch_size=128", "subproc=false",
        "n_envs=2", "eval.deals=3", "eval.every=512", "checkpoint_every=512"]), run,
        progress=False)
    best = json.loads((run / "checkpoints" / "best.json").read_text())
    same_step = run / "checkpoints" / f"step_{best['steps']:012d}.zip"
    a, b = (MaskablePPO.load(str(p), device="cpu").policy.state_dict()
            for p in (run / "checkpoints" / "best.zip", same_step))
    assert all(torch.equal(a[k], b[k]) for k in a)
    last = json.loads(final.with_suffix(".json").read_text())
    assert [e["steps"] for e in last["evaluations"]] == [512, 1024, 1536]


def test_a_best_cut_short_leaves_no_mismatched_metadata(tmp_path, monkeypatch):
    """A kill between a new best's weights and its metadata leaves weights without
    metadata, which count as no best; never the new weights beside the old figures."""
    from train import sb3_trainer
    from train.cli import resolve_checkpoint

    class Model:
        def save(self, path):
            Path(path).write_text("new weights")

    run = sb3_trainer.RunDir(tmp_path / "run")
    run.checkpoints.mkdir(parents=True)
    (run.checkpoints / "best.zip").write_text("old weights")
    (run.checkpoints / "best.json").write_text(json.dumps({"steps": 8, "best": 1.0}))

    def killed(*args):
        raise SystemExit("killed")

    monkeypatch.setattr(sb3_trainer, "write_json_atomic", killed)
    with pytest.raises(SystemExit):
        run.save_checkpoint(Model(), "best", {"steps": 16, "best": 2.0}, latest=False)
    assert (run.checkpoints / "best.zip").read_text() == "new weights"
    assert not (run.checkpoints / "best.json").exists() and run.best_score() is None
    # export takes the latest checkpoint instead, and a resume sets the orphan aside
    for name, text in (("step_000000000008.zip", "w"), ("step_000000000008.json", "{}")):
        (run.checkpoints / name).write_text(text)
    (run.root / "latest.json").write_text(json.dumps({
        "checkpoint": "checkpoints/step_000000000008.zip",
        "meta": "checkpoints/step_000000000008.json", "steps": 8}))
    assert resolve_checkpoint(run.root)[0].name == "step_000000000008.zip"
    moved = run.set_aside_stale_best(8)
    assert moved is not None and not (run.checkpoints / "best.zip").exists()


def test_same_seed_same_run_on_one_process_and_several(tmp_path):
    """As the README says: a seed gives the same weights, bit for bit, run again and with
    the envs in processes of their own."""
    import torch
    from sb3_contrib import MaskablePPO

    from train.sb3_trainer import train
    cfg_args = ["total_steps=1024", "ppo.n_steps=256", "ppo.batch_size=128", "n_envs=2",
                "eval.deals=3", "checkpoint_every=100000"]
    finals = [train(load_config(SMOKE, [*cfg_args, f"subproc={subproc}"]), tmp_path / f"run{i}",
                    progress=False)
              for i, subproc in enumerate(["false", "false", "true"])]
    first, *others = (MaskablePPO.load(str(f), device="cpu").policy.state_dict() for f in finals)
    for other in others:
        assert other.keys() == first.keys()
        assert all(torch.equal(other[k], first[k]) for k in first)


@pytest.mark.parametrize("subproc", ["true", "false"])
def test_the_masks_the_trainer_reads_are_the_envs_own(tmp_path, subproc):
    """MaskablePPO's masks come from the step infos, not from a call to every env per step:
    they are what the envs' action_masks() say, after a reset, a step and an episode's end."""
    from sb3_contrib.common.maskable.utils import get_action_masks

    from train.sb3_trainer import make_envs
    cfg = load_config(SMOKE, [f"subproc={subproc}", "n_envs=2", "league.mix={random: 1.0}",
                              "rules_overrides={rounds: 1}"])
    envs = make_envs(cfg, tmp_path / "league")
    try:
        envs.seed(3)
        envs.reset()
        rng = np.random.default_rng(0)
        ended = 0
        for _ in range(120):
            masks = get_action_masks(envs)
            asked = np.stack(envs.venv.env_method("action_masks"))
            assert masks.dtype == bool and np.array_equal(masks, asked)
            assert np.array_equal(np.stack(envs.env_method("action_masks", indices=[1])),
                                  asked[1:])
            _, _, dones, _ = envs.step(np.array([rng.choice(np.flatnonzero(m)) for m in masks]))
            ended += dones.sum()
        assert ended >= 10  # single rounds, of about nine decisions each
    finally:
        envs.close()


def test_export_never_deletes_what_is_not_a_bundle(smoke_run, tmp_path):
    keep = tmp_path / "keep"
    (keep / "sub").mkdir(parents=True)
    (keep / "notes.txt").write_text("mine")
    afile = tmp_path / "afile.txt"
    afile.write_text("mine")
    for out in (keep, afile, smoke_run):
        res = cli_in_process("export", smoke_run, "--out", out)
        assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
        assert "not part of a bundle" in res.stderr or "is a file" in res.stderr
    assert (keep / "notes.txt").read_text() == "mine" and afile.read_text() == "mine"
    assert (smoke_run / "config.yaml").is_file()
    # a bare bundle is replaced, and nothing is left beside it
    out = tmp_path / "bots" / "smoke"
    for _ in range(2):
        assert cli_in_process("export", smoke_run, "--out", out).returncode == 0
    assert sorted(p.name for p in out.parent.iterdir()) == ["smoke"]
    # the current directory, even empty, is not replaced (and nothing is left in it)
    here = tmp_path / "here"
    here.mkdir()
    for out in (".", ".."):
        res = cli_in_process("export", smoke_run, "--out", out, cwd=here)
        assert res.returncode == 2 and "is the current directory" in res.stderr, res.stderr
    assert list(here.iterdir()) == []


KILLED_AS_OUT_MOVES = """
import os, signal, sys
from pathlib import Path
import numpy as np
from agents.mlp import MLP
from arschloch_env.rules import make_rules
from train.export import write_bundle

out = Path(sys.argv[1])
rename = Path.rename
def killed_once_out_moves(self, target):
    if self == out:  # the old bundle leaves its name: the process dies before the new arrives
        os.kill(os.getpid(), signal.SIGKILL)
    return rename(self, target)
Path.rename = killed_once_out_moves
rng = np.random.default_rng(int(sys.argv[2]))
mlp = MLP([(rng.normal(size=(4, 413)).astype(np.float32), np.zeros(4, np.float32)),
           (rng.normal(size=(49, 4)).astype(np.float32), np.zeros(49, np.float32))], "tanh")
write_bundle(out, mlp, make_rules("culo", 4).to_dict(), ["culo"], [4], "bot", {})
"""


def test_export_onto_a_bundle_killed_midway_leaves_the_old_or_the_new(tmp_path):
    """Replacing a bundle swaps the directories in one step: a kill at any moment leaves a
    whole bundle at --out (it moved the old one aside, then renamed the new one in, and a
    kill between the two left none)."""
    out = tmp_path / "bot"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    digests = []
    for seed in (0, 1):
        res = subprocess.run([sys.executable, "-c", KILLED_AS_OUT_MOVES, str(out), str(seed)],
                             capture_output=True, text=True, env=env, timeout=120)
        assert res.returncode == 0, res.stderr[-2000:]
        digests.append(load_bundle(out).manifest["policy"]["sha256"])
    assert digests[0] != digests[1]  # the second replaced the first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bot"]


def test_an_export_removes_what_a_killed_export_to_the_same_out_left(tmp_path):
    """A kill leaves a hidden .<out>.partial-* or .<out>.replaced-* folder (the new bundle
    half-written, or the old one moved aside); the next export to that --out removes it once
    it is an hour old and holds only a bundle's files. Anything else there is left alone."""
    from arschloch_env.rules import make_rules
    from train.export import BUNDLE_FILES, STALE_AFTER_S, write_bundle

    old = time.time() - STALE_AFTER_S - 60

    def folder(name: str, files=("policy.onnx", "manifest.json"), age=old) -> Path:
        path = tmp_path / name
        path.mkdir(parents=True)
        for f in files:
            (path / f).write_text("x")
        os.utime(path, (age, age))
        return path

    assert {"policy.onnx", "manifest.json"} <= BUNDLE_FILES
    half_written = folder(".bot.partial-a1b2c3d4")
    moved_aside = folder(".bot.replaced-zz_90xy1/bot")
    os.utime(moved_aside.parent, (old, old))
    kept = [folder(".bot.partial-q1w2e3r4", age=time.time()),  # an export running now
            folder(".bot.partial-r5t6y7u8", files=("policy.onnx", "notes.txt")),
            folder(".other.partial-a1b2c3d4"),  # another --out's
            folder(".bot.backup01")]  # the user's own
    rng = np.random.default_rng(0)
    mlp = MLP([(rng.normal(size=(49, 413)), np.zeros(49))], "relu")
    write_bundle(tmp_path / "bot", mlp, make_rules("culo", 4).to_dict(), ["culo"], [4], "b",
                 {"steps": 0})
    assert not half_written.exists() and not moved_aside.parent.exists()
    assert all(k.exists() for k in kept)
    assert load_bundle(tmp_path / "bot").manifest["name"] == "b"


def test_export_of_a_checkpoint_with_damaged_metadata_says_so(smoke_run, tmp_path):
    import shutil
    latest = json.loads((smoke_run / "latest.json").read_text())
    checkpoint = tmp_path / "step.zip"
    shutil.copy(smoke_run / latest["checkpoint"], checkpoint)
    for damaged in ("{not json", "[1, 2]", b"\xff\xfe"):
        path = checkpoint.with_suffix(".json")
        path.write_bytes(damaged if isinstance(damaged, bytes) else damaged.encode())
        res = cli_in_process("export", checkpoint, "--out", tmp_path / "bot")
        assert res.returncode == 2 and "metadata is damaged" in res.stderr, res.stderr[-2000:]
        assert "Traceback" not in res.stderr and not (tmp_path / "bot").exists()
    meta = json.loads((smoke_run / latest["meta"]).read_text())
    for rules, says in [("culo", "holds rules as str, not as a rules object"),
                        (None, "names no rules"),
                        ({**meta["rules"], "num_players": 9}, "holds rules that are not valid "
                                                              "(num_players: 9")]:
        checkpoint.with_suffix(".json").write_text(json.dumps({**meta, "rules": rules}))
        res = cli_in_process("export", checkpoint, "--out", tmp_path / "bot")
        assert res.returncode == 2 and says in res.stderr, res.stderr[-2000:]
        assert "Traceback" not in res.stderr and not (tmp_path / "bot").exists()
    # a config that is no mapping, table sizes that are none (a bundle play would refuse)
    for config, says in [("oops", "its config is str, not a mapping"),
                         ({**meta["config"], "players": None}, "its config's players are None"),
                         ({**meta["config"], "players": [4, 9]}, "players are [4, 9]")]:
        checkpoint.with_suffix(".json").write_text(json.dumps({**meta, "config": config}))
        res = cli_in_process("export", checkpoint, "--out", tmp_path / "bot")
        assert res.returncode == 2 and says in res.stderr, res.stderr[-2000:]
        assert "Traceback" not in res.stderr and not (tmp_path / "bot").exists()


def test_export_refuses_a_symbolic_link_as_out(smoke_run, tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    res = cli_in_process("export", smoke_run, "--out", tmp_path / "link")
    assert res.returncode == 2 and "is a symbolic link; give the folder it points to" in res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]
    assert (tmp_path / "link").is_symlink() and not list(real.iterdir())


def test_a_damaged_league_is_named_or_rebuilt(tmp_path):
    from train.config import ConfigError
    from train.league import League
    from train.ppo_vec_seats import SnapshotPool
    root = tmp_path / "league"
    root.mkdir()
    (root / "league.json").write_text("{bad")
    league = League(root, 5)  # a resume rewrites it from its checkpoint's metadata
    assert league.snapshots == []
    for damaged, says in [(None, "its league is NoneType, not a list of snapshots"),
                          ([{"file": "../x.npz", "steps": 1}], "lists {'file': '../x.npz'")]:
        with pytest.raises(ConfigError, match=re.escape(says)):
            league.restore(damaged)
    (root / "snap_000000000512.npz").write_bytes(b"cut short")
    league.restore([{"file": "snap_000000000512.npz", "steps": 512}])
    assert json.loads((root / "league.json").read_text())["snapshots"][0]["steps"] == 512
    with pytest.raises(ConfigError, match="the league's snapshot .*snap_000000000512.npz "
                                          "cannot be read"):
        SnapshotPool(league).refresh()


def test_a_run_is_not_trained_into_a_bundle(tmp_path):
    import shutil
    bundle = tmp_path / "bot"
    shutil.copytree(ROOT / "bots" / "ppo_culo_4p", bundle)
    before = sorted(p.name for p in bundle.iterdir())
    res = cli_in_process("train", "--config", SMOKE, "--run-dir", bundle)
    assert res.returncode == 2 and "holds a bot bundle (manifest.json)" in res.stderr
    assert sorted(p.name for p in bundle.iterdir()) == before


def test_demo_replaces_only_its_own_outputs(tmp_path):
    from train.demo import MARKER, fresh_run_dir
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.txt").write_text("mine")
    with pytest.raises(SystemExit, match="not a demo's folder"):
        fresh_run_dir(precious)
    assert (precious / "thesis.txt").read_text() == "mine"
    demo = tmp_path / "demo"
    fresh_run_dir(demo)
    for name in ("bot", "train"):
        (demo / name).mkdir()
        (demo / name / "f").write_text("from the last demo")
    (demo / "vs_greedy.jsonl").write_text("from the last demo")
    (demo / "curves.png").write_text("the user's, made after the last demo")
    fresh_run_dir(demo)
    assert sorted(p.name for p in demo.iterdir()) == sorted([MARKER, "curves.png"])


@pytest.mark.parametrize("args,says", [
    (["--deals", "0"], "--deals 0: at least 1"),
    (["--steps", "0"], "--steps 0: at least 1"),
    (["--steps", "-5"], "--steps -5: at least 1"),
])
def test_demo_refuses_bad_flags_before_it_trains_or_clears(tmp_path, capsys, args, says):
    from train.demo import main

    with pytest.raises(SystemExit) as exc:
        main([*args, "--run-dir", str(tmp_path / "demo")])
    assert exc.value.code == 2 and says in capsys.readouterr().err
    assert not (tmp_path / "demo").exists()


def test_demo_end_to_end_in_brief_exports_as_arschloch_export_does(tmp_path, capsys):
    """The main job at its smallest: a rollout of training, one deal per tournament. Its
    bundle carries the training summary that ``arschloch export`` writes: the steps the run
    took, its seed and its last evaluation."""
    from train.demo import main

    run = tmp_path / "demo"
    assert main(["--steps", "1", "--deals", "1", "--run-dir", str(run)]) == 0
    out = capsys.readouterr().out
    assert "-- bot vs 3x expert" in out and "== 3. what next" in out
    training = json.loads((run / "bot" / "manifest.json").read_text())["training"]
    meta = json.loads((run / "train" / json.loads(
        (run / "train" / "latest.json").read_text())["meta"]).read_text())
    assert training["steps"] == meta["steps"] > 1 and training["seed"] == meta["seed"]
    assert training["evaluation"] == meta["evaluations"][-1]
    assert [json.loads(x)["event"] for x in (run / "vs_greedy.jsonl").read_text()
            .splitlines()].count("match") == 4


def test_demo_names_the_scripts_of_the_environment_it_runs_in(tmp_path, monkeypatch):
    """Not .venv/bin whatever the environment: scripts/env.sh takes ARSCHLOCH_VENV."""
    from train.demo import scripts_dir

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "envs" / "a" / "bin" / "python"))
    assert scripts_dir() == os.path.join("envs", "a", "bin")
    monkeypatch.setattr(sys, "executable", "/opt/elsewhere/bin/python")
    assert scripts_dir() == "/opt/elsewhere/bin"


def test_a_dead_env_worker_fails_the_run(tmp_path):
    """An opponent that crashes in a worker process ends the run with an error (exit 1), not
    a silent success."""
    import os
    (tmp_path / "boom.py").write_text(
        "class Boom:\n    def act(self, observation, view):\n        raise RuntimeError('boom')\n")
    res = cli("train", "--config", SMOKE, "--run-dir", tmp_path / "run",
              "--set", "league.mix={boom:Boom: 1.0}", "--set", "n_envs=2",
              "--set", "subproc=true",
              env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])})
    assert res.returncode == 1, res.stdout + res.stderr
    assert "worker process died" in res.stderr and "RuntimeError: boom" in res.stderr
    # before its first checkpoint: nothing to continue from, and the message does not say so
    assert "No checkpoint was written yet: fix the cause and start the run again" in res.stderr


def test_learning_curves_of_any_field_and_table_size(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    from train.curves import eval_fields, eval_table_size, plot_learning_curves, read_scalars
    run = tmp_path / "run"
    run.mkdir()
    for damaged in ("players: []\n", b"\xff\xfe"):  # the usual table, as without a config
        (run / "config.yaml").write_bytes(damaged if isinstance(damaged, bytes)
                                          else damaged.encode())
        assert eval_table_size(run) == 4
    (run / "config.yaml").write_text(
        yaml.safe_dump({**load_config(SMOKE).to_dict(), "players": [3]}))
    with SummaryWriter(str(run / "tb" / "ppo_1")) as w:
        for step in (100, 200):
            w.add_scalar("rollout/ep_rew_mean", 0.1, step)
            for field in ("greedy", "./bots/my_bot"):
                for key, value in (("rank_points", 1.1), ("ci_low", 1.0), ("ci_high", 1.2)):
                    w.add_scalar(f"eval/vs_{field}/{key}", value, step)
    assert eval_fields(read_scalars(run)) == ["./bots/my_bot", "greedy"]
    assert eval_table_size(run) == 3
    assert plot_learning_curves(run, tmp_path / "c.png").stat().st_size > 0
    with pytest.raises(FileNotFoundError, match="no such run directory"):
        read_scalars(tmp_path / "not-a-run")
    with pytest.raises(FileNotFoundError, match="c.png: a file, not a run directory"):
        read_scalars(tmp_path / "c.png")
    # logs without a scalar to draw (a run before its first rollout, a damaged file)
    (tmp_path / "empty" / "tb" / "ppo_1").mkdir(parents=True)
    (tmp_path / "empty" / "tb" / "ppo_1" / "events.out.tfevents.1.x").write_bytes(b"garbage")
    with pytest.raises(FileNotFoundError, match="hold none of the scalars drawn"):
        plot_learning_curves(tmp_path / "empty", tmp_path / "e.png")
    assert not (tmp_path / "e.png").exists()


def test_export_suggests_a_play_command_with_the_runs_rule_overrides():
    from arschloch_env.rules import make_rules
    from train.cli import rules_options
    assert rules_options(make_rules("tavern", 5).to_dict()) == ""
    assert (rules_options(make_rules("culo", 4, no_finish_on_top=False, rounds=1).to_dict())
            == " --set no_finish_on_top=false --set rounds=1")


def test_a_policy_of_an_earlier_layout_exports_as_that_version(tmp_path):
    """A checkpoint trained before layout version 2 (297 inputs in culo) exports as a
    version-1 bundle, which reads the leading part of today's observation."""
    from agents.runner import play_match
    from arschloch_env.rules import make_rules
    from train.export import write_bundle
    rng = np.random.default_rng(0)
    mlp = MLP([(rng.normal(size=(8, 297)), np.zeros(8)), (rng.normal(size=(49, 8)),
                                                            np.zeros(49))], "relu")
    rules = make_rules("culo", 4).to_dict()
    out = write_bundle(tmp_path / "v1", mlp, rules, ["culo"], [4], "v1", {"steps": 0})
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["observation"]["version"] == 1 and manifest["observation"]["size"] == 297
    assert play_match("culo", [str(out), "greedy", "greedy", "greedy"], seed=1).is_over
    bad = MLP([(rng.normal(size=(8, 300)), np.zeros(8)), (rng.normal(size=(49, 8)),
                                                           np.zeros(49))], "relu")
    with pytest.raises(BundleError, match="297 or 413"):
        write_bundle(tmp_path / "bad", bad, rules, ["culo"], [4], "bad", {"steps": 0})


def test_an_exported_graph_has_the_oldest_ir_version_its_opset_allows(tmp_path):
    """onnx stamps a graph with its own newest IR version, which an onnxruntime older than
    that onnx refuses to load (IR 14 against onnxruntime 1.30's 13)."""
    import onnx
    from onnx import helper

    from arschloch_env.rules import make_rules
    from train.export import ONNX_OPSET, write_bundle
    rng = np.random.default_rng(0)
    mlp = MLP([(rng.normal(size=(49, 413)), np.zeros(49))], "relu")
    out = write_bundle(tmp_path / "b", mlp, make_rules("culo", 4).to_dict(), ["culo"], [4],
                       "b", {"steps": 0})
    model = onnx.load(str(out / "policy.onnx"))
    assert model.ir_version == helper.find_min_ir_version_for([helper.make_opsetid("",
                                                                                 ONNX_OPSET)])


# -- numeric fields, a run stopped early, Ctrl-C ----------------------------------------------

MULTI = ROOT / "configs" / "ppo_culo_multi.yaml"


@pytest.mark.parametrize("config, override, message", [
    (SMOKE, "league.snapshot_every=0", "league.snapshot_every: 0 is not allowed; it must be at "
                                       "least 1"),
    (SMOKE, "ppo.n_steps=0", "ppo.n_steps: 0 is not allowed; it must be at least 1"),
    (SMOKE, "league.max_snapshots=-1", "league.max_snapshots: -1 is not allowed; it must be at "
                                       "least 0 (0: none"),
    (SMOKE, "eval.every=-1", "eval.every: -1 is not allowed; it must be at least 0"),
    (SMOKE, "eval.jobs=0", "eval.jobs: 0 is not allowed; it must be at least 1"),
    (SMOKE, "torch_threads=0", "torch_threads: 0 is not allowed; it must be at least 1"),
    (SMOKE, "ppo.batch_size=1", "ppo.batch_size: 1 is not allowed; it must be at least 2"),
    (SMOKE, "ppo.n_epochs=0", "ppo.n_epochs: 0 is not allowed; it must be at least 1"),
    (SMOKE, "ppo.gamma=1.5", "ppo.gamma: 1.5 is not allowed; it must be 0 .. 1"),
    (SMOKE, "ppo.gae_lambda=-0.1", "ppo.gae_lambda: -0.1 is not allowed; it must be 0 .. 1"),
    (SMOKE, "ppo.clip_range=0", "ppo.clip_range: 0.0 is not allowed; it must be greater than 0"),
    (SMOKE, "ppo.ent_coef=-0.01", "ppo.ent_coef: -0.01 is not allowed; it must be at least 0"),
    (SMOKE, "ppo.vf_coef=0", "ppo.vf_coef: 0.0 is not allowed; it must be greater than 0"),
    (SMOKE, "ppo.max_grad_norm=-1", "ppo.max_grad_norm: -1.0 is not allowed"),
    (SMOKE, "ppo.learning_rate=.nan", "ppo.learning_rate: nan is not allowed"),
    (SMOKE, "ppo.learning_rate=.inf", "ppo.learning_rate: inf is not allowed"),
    (SMOKE, "vec.engine_threads=0", "vec.engine_threads: 0 is not allowed"),
    # 2 envs of 255 steps: 510 samples, minibatches of 509 and a NaN one of 1
    (SMOKE, "ppo.n_steps=255 ppo.batch_size=509", "leaves a last minibatch of 1 sample"),
    (SMOKE, "ppo.batch_size=1025", "ppo.batch_size: 1025 is larger than a rollout of "
                                   "ppo.n_steps * n_envs = 1024 samples; choose at most 1024"),
    (MULTI, "n_envs=2", "n_envs: 2 envs cannot play all 4 table sizes of players [3, 4, 5, 6]"),
])
def test_numeric_fields_out_of_range_name_the_field_and_range(config, override, message):
    with pytest.raises(ConfigError) as info:
        load_config(config, override.split())
    assert message in str(info.value)


def test_the_n_envs_rule_is_only_algo_ppos():
    """ppo-vec plays every table size in its own games (vec.num_games): n_envs is no setting
    of it, named as such rather than by algo ppo's rule that it cover every table size."""
    with pytest.raises(ConfigError, match="^n_envs: not read by algo ppo-vec"):
        load_config(ROOT / "configs" / "ppo_vec_culo_multi.yaml", ["n_envs=1"])
    assert load_config(MULTI, ["n_envs=4"]).n_envs == 4


@pytest.mark.parametrize("override", ["league.snapshot_every=0", "eval.every=-1",
                                      "checkpoint_every=0"])
def test_resume_validates_what_set_may_change(override):
    from train.config import RESUMABLE, resume_config
    assert override.split("=")[0] in RESUMABLE
    with pytest.raises(ConfigError, match=override.split("=")[0] + ": "):
        resume_config(load_config(SMOKE).to_dict(), [override])


def test_resume_names_a_fixed_field_before_what_its_change_breaks():
    """eval.opponents alone breaks eval.best_by; the first thing wrong is that a resumed run
    may not change it."""
    from train.config import resume_config
    with pytest.raises(ConfigError, match=r"--resume: eval.opponents cannot change in a "
                                          r"resumed run .*--set may change total_steps"):
        resume_config(load_config(SMOKE).to_dict(), ["eval.opponents=[greedy]"])
    # but a mistyped key is unknown, and a field set to its own value is no change
    with pytest.raises(ConfigError, match=r"unknown config key\(s\) eval.evry"):
        resume_config(load_config(SMOKE).to_dict(), ["eval.evry=5"])
    with pytest.raises(ConfigError, match=r"^total_steps: -5 is not allowed"):
        resume_config(load_config(SMOKE).to_dict(), ["total_steps=-5", "seed=0"])


@pytest.mark.parametrize("given, read", [("true", True), ("false", False), ("auto", "auto")])
def test_vec_bfloat16_is_true_false_or_auto(given, read):
    cfg = load_config(ROOT / "configs" / "ppo_vec_culo.yaml", [f"vec.bfloat16={given}"])
    assert cfg.vec.bfloat16 == read and type(cfg.vec.bfloat16) is type(read)


@pytest.mark.parametrize("given, message", [
    ("fast", r"^vec.bfloat16: 'fast'; allowed: true, false, auto$"),
    ("1", r"^vec.bfloat16: expected bool or str, got 1$")])
def test_vec_bfloat16_refuses_anything_else(given, message):
    with pytest.raises(ConfigError, match=message):
        load_config(ROOT / "configs" / "ppo_vec_culo.yaml", [f"vec.bfloat16={given}"])


def test_resume_refuses_a_setting_the_trainer_does_not_read():
    """vec.* is resumable for ppo-vec runs; an algo ppo run took it on --resume silently and
    wrote it into its config.yaml, which a new run then refused."""
    from train.config import resume_config
    with pytest.raises(ConfigError, match=r"^vec.bfloat16: not read by algo ppo; .*remove "
                                          r"it from --set"):
        resume_config(load_config(SMOKE).to_dict(), ["vec.bfloat16=true"])
    vec = load_config(ROOT / "configs" / "ppo_vec_culo.yaml")
    assert resume_config(vec.to_dict(), ["vec.bfloat16=true"]).vec.bfloat16
    # a config that already held such a setting resumes; only a change is refused
    assert resume_config(load_config(SMOKE).to_dict(), ["total_steps=9"]).total_steps == 9


@pytest.mark.parametrize("config", [None, SMOKE])
def test_a_dotted_set_into_a_mix_changes_one_share_and_keeps_the_others(config):
    """league.mix.greedy=0.5 on a config without league.mix replaced the default mix by
    {greedy: 0.5}: every opponent greedy, no self-play, and no word of it."""
    base = load_config(config).league.mix
    mix = load_config(config, ["league.mix.greedy=0.5"]).league.mix
    assert mix == {**base, "greedy": 0.5}
    vec = load_config(None, ["algo=ppo-vec", "vec.mix.random=0.1"]).vec.mix
    assert vec == {**load_config(None, ["algo=ppo-vec"]).vec.mix, "random": 0.1}
    assert load_config(None, ["rules_overrides.rounds=3"]).rules_overrides == {"rounds": 3}


def test_a_dotted_set_names_a_policy_file_of_a_mix_whole():
    """A mix's keys may hold dots: vec.mix.bots/expert_clone_culo.npz=0.5 sets that file's
    share (it was read as vec.mix.bots/expert_clone_culo, a section with a key npz)."""
    clone = "bots/expert_clone_culo.npz"
    mix = load_config(ROOT / "configs" / "ppo_vec_culo_expert.yaml",
                      [f"vec.mix.{clone}=0.5"]).vec.mix
    assert mix == {"current": 0.2, clone: 0.5}


def test_a_bad_config_leaves_no_run_directory(tmp_path):
    res = cli_in_process("train", "--config", SMOKE, "--run-dir", tmp_path / "r", "--set",
                         "ppo.n_steps=0")
    assert res.returncode == 2, res.stderr[-2000:]
    assert "ppo.n_steps: 0 is not allowed" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "r").exists()


def test_max_snapshots_zero_keeps_no_snapshot(tmp_path):
    from train.league import League
    mlp = MLP([(np.zeros((2, 3)), np.zeros(2))], "relu")
    league = League(tmp_path, max_snapshots=0)
    for steps in (100, 200):
        league.add_snapshot(mlp, steps)
    assert league.snapshots == [] and not list(tmp_path.glob("snap_*.npz"))
    # a checkpoint of a run that kept them all (max_snapshots 0 once did) resumes with none,
    # its files pinned until the next checkpoint
    keep = League(tmp_path / "b", max_snapshots=2)
    for steps in (100, 200, 300):
        keep.add_snapshot(mlp, steps)
    listed = [{"file": f"snap_{s:012d}.npz", "steps": s} for s in (100, 200, 300)]
    (tmp_path / "b" / "snap_000000000100.npz").write_bytes(
        (tmp_path / "b" / "snap_000000000200.npz").read_bytes())
    resumed = League(tmp_path / "b", max_snapshots=0)
    resumed.restore(listed)
    assert resumed.snapshots == [] and len(list((tmp_path / "b").glob("snap_*.npz"))) == 3
    resumed.checkpointed()
    assert not list((tmp_path / "b").glob("snap_*.npz"))
    with pytest.raises(ValueError, match="max_snapshots: -1"):
        League(tmp_path / "c", max_snapshots=-1)


VEC_TINY = ["total_steps=200", "checkpoint_every=100000", "torch_threads=1",
            "vec.collect_threads=1", "vec.num_games=16", "vec.rollout_steps=8",
            "vec.mix={current: 1.0}", "eval.every=0", "eval.deals=2", "eval.opponents=[random]",
            "eval.best_by=random"]


def _stopped_before_first_checkpoint(run: Path, config: Path, overrides: list[str],
                                     suffix: str) -> bytes:
    """The run directory a kill leaves after the first evaluation, before the first
    checkpoint: config, best checkpoint, league snapshots, TensorBoard logs; no latest.json."""
    from train.sb3_trainer import RunDir
    rd = RunDir(run)
    rd.create(load_config(config, overrides))
    best = b"the best of the first evaluation"
    (rd.checkpoints / f"best{suffix}").write_bytes(best)
    (rd.checkpoints / "best.json").write_text(json.dumps({"steps": 512}))
    (rd.league / "snap_000000000512.npz").write_bytes(b"an old snapshot")
    (rd.league / "league.json").write_text(json.dumps(
        {"snapshots": [{"file": "snap_000000000512.npz", "steps": 512}]}))
    (rd.tb / "ppo_1").mkdir()
    (rd.tb / "ppo_1" / "events.out").write_bytes(b"old curves")
    return best


@pytest.mark.parametrize("algo, how", [("ppo", "resume"), ("ppo", "new"),
                                       ("ppo-vec", "resume")])
def test_a_run_stopped_before_its_first_checkpoint_starts_over(tmp_path, algo, how):
    """A kill after the first evaluation and before the first checkpoint leaves best.zip but
    no latest.json: neither --resume nor a new start may refuse the directory (each used to
    point at the other); the run starts over and the attempt's files are kept aside."""
    run = tmp_path / "run"
    if algo == "ppo":
        config, overrides, suffix = SMOKE, ["total_steps=1024", "eval.deals=2"], ".zip"
    else:
        config, overrides, suffix = ROOT / "configs" / "ppo_vec_culo.yaml", VEC_TINY, ".pt"
    best = _stopped_before_first_checkpoint(run, config, overrides, suffix)
    if how == "resume":
        args = ["--resume"]
    else:
        args = ["--config", config] + [a for o in overrides for a in ("--set", o)]
    res = cli("train", "--run-dir", run, "--no-progress", *args)
    assert res.returncode == 0, res.stderr[-3000:]
    assert ("starting it over from step 0" in res.stderr) == (how == "resume"), res.stderr
    (aside,) = (run / "earlier_attempts").iterdir()
    assert f"kept in {aside}" in res.stderr
    assert (aside / "checkpoints" / f"best{suffix}").read_bytes() == best
    assert (aside / "league" / "snap_000000000512.npz").is_file()
    assert (aside / "tb" / "ppo_1" / "events.out").is_file() and (aside / "config.yaml").is_file()
    latest = json.loads((run / "latest.json").read_text())
    assert (run / latest["checkpoint"]).is_file()
    meta = json.loads((run / latest["meta"]).read_text())
    assert all(s["steps"] != 512 for s in meta["league"])  # the old snapshot left the pool
    assert (run / "checkpoints" / f"best{suffix}").read_bytes() != best


def test_a_second_trainer_on_a_run_is_refused_and_moves_nothing(tmp_path):
    import fcntl
    run = tmp_path / "run"
    best = _stopped_before_first_checkpoint(run, SMOKE, [], ".zip")
    with open(run / "train.lock", "a") as held:  # a running trainer holds it
        fcntl.lockf(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        before = sorted(p.relative_to(run) for p in run.rglob("*"))
        res = cli("train", "--config", SMOKE, "--run-dir", run, "--no-progress")
    assert res.returncode == 2, res.stderr[-2000:]
    assert "in use by another arschloch train" in res.stderr and "Traceback" not in res.stderr
    assert sorted(p.relative_to(run) for p in run.rglob("*")) == before
    assert (run / "checkpoints" / "best.zip").read_bytes() == best


def test_train_refuses_a_folder_that_is_not_a_run_and_writes_nothing_there(tmp_path):
    mine = tmp_path / "mine"  # a config beside the rules it was made for, in a folder of one's own
    mine.mkdir()
    (mine / "config.yaml").write_text("# my commented config\n" + SMOKE.read_text())
    (mine / "rules.json").write_text('{"preset": "mine"}')
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("train a bot\n")
    for run, names in ((mine, "config.yaml, rules.json"), (notes, "todo.txt")):
        before = {p.name: p.read_bytes() for p in run.iterdir()}
        res = cli_in_process("train", "--config", SMOKE, "--run-dir", run, "--no-progress")
        assert res.returncode == 2, res.stderr[-2000:]
        assert f"holds files that are not a run's ({names})" in res.stderr
        assert {p.name: p.read_bytes() for p in run.iterdir()} == before
    # a run stopped before its first checkpoint, with its curves beside it, is a run; so is
    # one whose files were set aside; a folder with a .gitkeep alone is as good as empty
    from train.sb3_trainer import RunDir
    stopped, aside, keep = tmp_path / "stopped", tmp_path / "aside", tmp_path / "keep"
    for path in (stopped / "checkpoints", aside / "earlier_attempts" / "1", keep):
        path.mkdir(parents=True)
    (stopped / "config.yaml").write_text(SMOKE.read_text())
    (stopped / "curves.png").write_bytes(b"png")
    (keep / ".gitkeep").write_text("")
    for run in (stopped, aside, keep):
        RunDir(run).refuse_unless_a_run()
    (stopped / "checkpoints").rmdir()
    with pytest.raises(ConfigError, match=r"not a run's \(config.yaml, curves.png\)"):
        RunDir(stopped).refuse_unless_a_run()


def test_a_run_that_lost_its_latest_json_is_refused_not_started_over(tmp_path, smoke_run):
    import shutil
    run = tmp_path / "run"
    shutil.copytree(smoke_run, run)
    newest = max(p.name for p in (run / "checkpoints").glob("step_*"))
    (run / "latest.json").unlink()
    before = sorted(p.relative_to(run) for p in run.rglob("*"))
    for args in (["--resume"], ["--config", SMOKE]):
        res = cli_in_process("train", "--run-dir", run, "--no-progress", *args)
        assert res.returncode == 2, res.stderr[-2000:]
        assert f"has checkpoints (the newest: {newest}) but no latest.json" in res.stderr
        assert sorted(p.relative_to(run) for p in run.rglob("*")) == before


def test_resume_of_no_run_says_how_to_start_one(tmp_path):
    res = cli_in_process("train", "--resume", "--run-dir", tmp_path / "none")
    assert res.returncode == 2
    assert "start a run there with arschloch train --config FILE --run-dir" in res.stderr
    # a folder of other files: no run to resume, and none to start there either
    res = cli_in_process("train", "--resume", "--run-dir", ROOT / "configs")
    assert res.returncode == 2 and "start a run there" not in res.stderr
    assert ("is not a run directory (no config.yaml); give the --run-dir of a run (it holds "
            "config.yaml and checkpoints/), or start a new run in a folder of its own"
            in res.stderr), res.stderr


def test_interrupted_message_names_the_way_on(tmp_path):
    from train.cli import interrupted_message
    run = tmp_path / "my run"
    assert "run the command again" in interrupted_message(run)
    run.mkdir()
    (run / "config.yaml").write_text("algo: ppo\n")
    assert ("before the first checkpoint; arschloch train --resume --run-dir "
            f"'{run}' starts the run over") in interrupted_message(run)
    assert "export" not in interrupted_message(run)
    # an evaluation before the first checkpoint wrote a best one: it can be exported now
    (run / "checkpoints").mkdir()
    (run / "checkpoints" / "best.json").write_text(json.dumps({"steps": 1500, "best": 0.4}))
    assert "export" not in interrupted_message(run)  # its weights were never written
    (run / "checkpoints" / "best.pt").write_text("")
    assert interrupted_message(run).endswith(
        f"(keeping what this attempt wrote); its best checkpoint so far (step 1500) exports "
        f"now: arschloch export '{run}' --out DIR")
    (run / "checkpoints" / "best.json").write_text(json.dumps({"steps": None}))  # damaged
    assert "export" not in interrupted_message(run)
    for name in ("best.pt", "best.json"):
        (run / "checkpoints" / name).unlink()
    (run / "latest.json").write_text(json.dumps({"checkpoint": "checkpoints/step_2048.zip",
                                                 "meta": "checkpoints/step_2048.json",
                                                 "steps": 2048}))
    for name in ("step_2048.zip", "step_2048.json"):
        (run / "checkpoints" / name).write_text("")
    assert interrupted_message(run) == (f"interrupted; the last checkpoint (step 2048) is kept: "
                                        f"continue with arschloch train --resume --run-dir "
                                        f"'{run}'")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_ctrl_c_or_a_stop_signal_waits_until_a_checkpoint_is_whole(sig):
    from arschloch_env.cli import stopping_as_on_ctrl_c
    from arschloch_env.cli import interrupt_deferred
    done = []
    with stopping_as_on_ctrl_c(), pytest.raises(KeyboardInterrupt):
        with interrupt_deferred():
            os.kill(os.getpid(), sig)
            time.sleep(0.05)  # the signal is handled by now: it must not have raised
            done.append(True)
    assert done == [True]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_ctrl_c_stops_training_with_a_line_that_says_how_to_go_on(tmp_path):
    """Ctrl-C (SIGINT to the process group, as a terminal sends it, env workers included):
    exit 130, one line naming the resume command, whole checkpoints, and the resume works."""
    import zipfile
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "arschloch_env.cli", "train", "--config", str(SMOKE),
         "--run-dir", str(run), "--no-progress", "--set", "total_steps=40960",
         "--set", "ppo.n_steps=256", "--set", "checkpoint_every=512",
         "--set", "league.snapshot_every=512", "--set", "n_envs=2", "--set", "subproc=true"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    deadline = time.time() + 300
    while not (run / "latest.json").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.time() < deadline, "no checkpoint was written"
        time.sleep(0.1)
    time.sleep(1.5)
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    last = stderr.strip().splitlines()[-1]
    steps = json.loads((run / "latest.json").read_text())["steps"]
    assert last == (f"arschloch train: interrupted; the last checkpoint (step {steps}) is "
                    f"kept: continue with arschloch train --resume --run-dir {run}")
    assert not list((run / "checkpoints").glob("*.part*"))  # no checkpoint cut in half
    for final in (run / "checkpoints").glob("*.zip"):
        assert zipfile.is_zipfile(final) and final.with_suffix(".json").is_file(), final
    res = cli("train", "--resume", "--run-dir", run, "--no-progress",
              "--set", f"total_steps={steps + 512}")
    assert res.returncode == 0, res.stderr[-3000:]
    assert json.loads((run / "latest.json").read_text())["steps"] >= steps + 512


def test_an_evaluation_stopped_by_ctrl_c_stops_the_training(monkeypatch):
    """The tournament returns what it has at Ctrl-C; an evaluation must not log that partial
    result and let the training go on."""
    import train.tournament
    from agents.mlp import MLP
    from arschloch_env.rules import make_rules
    from train.evaluate import evaluate_fields

    real = train.tournament.run_tournament

    def stopped(*args, **kwargs):
        res = real(*args, **{**kwargs, "deals": 2})
        res.complete = False
        return res

    monkeypatch.setattr(train.tournament, "run_tournament", stopped)
    mlp = MLP([(np.zeros((49, 413)), np.zeros(49))], "relu")
    with pytest.raises(KeyboardInterrupt):
        evaluate_fields(mlp, make_rules("culo", 4), ["random"], deals=4, seed=1)


@pytest.mark.parametrize("algo", ["ppo", "ppo-vec"])
def test_resume_after_an_attempt_that_went_on_keeps_one_history(tmp_path, algo):
    """An attempt that went on past its last checkpoint (it logged, evaluated and wrote a best
    checkpoint there) and then stopped: the resumed run sets that best aside instead of
    keeping it or overwriting it by a lower score, and its TensorBoard points replace the
    attempt's instead of doubling them."""
    run = tmp_path / "run"
    if algo == "ppo":
        config, suffix = SMOKE, ".zip"
        overrides = ["total_steps=4096", "checkpoint_every=2048", "ppo.n_steps=256",
                     "n_envs=1", "league.snapshot_every=1024", "eval.every=1024",
                     "eval.deals=2"]
    else:
        config, suffix = ROOT / "configs" / "ppo_vec_culo.yaml", ".pt"
        overrides = VEC_TINY[1:] + ["total_steps=1200", "checkpoint_every=600",
                                    "eval.every=300", "league.snapshot_every=300"]
    res = cli("train", "--config", config, "--run-dir", run, "--no-progress",
              *[a for o in overrides for a in ("--set", o)])
    assert res.returncode == 0, res.stderr[-3000:]
    # as the attempt left it: the latest checkpoint the middle one, the best one past it
    (middle,) = [p for p in (run / "checkpoints").glob("step_*.json")
                 if json.loads(p.read_text())["steps"] < (4096 if algo == "ppo" else 1200)]
    mid = json.loads(middle.read_text())["steps"]
    (run / "latest.json").write_text(json.dumps({
        "checkpoint": f"checkpoints/{middle.stem}{suffix}", "meta": f"checkpoints/{middle.name}",
        "steps": mid}))
    best = json.loads((run / "checkpoints" / "best.json").read_text())
    best.update(steps=mid + 1, best=99.0)  # better than any evaluation can score
    (run / "checkpoints" / "best.json").write_text(json.dumps(best))

    resumed_at = time.time()
    res = cli("train", "--run-dir", run, "--resume", "--no-progress")
    assert res.returncode == 0, res.stderr[-3000:]
    (aside,) = (run / "earlier_attempts").iterdir()
    assert f"kept in {aside}" in res.stderr and f"past step {mid}" in res.stderr
    assert json.loads((aside / "checkpoints" / "best.json").read_text())["best"] == 99.0
    assert (aside / "checkpoints" / f"best{suffix}").is_file()
    resumed_best = json.loads((run / "checkpoints" / "best.json").read_text())
    assert mid < resumed_best["steps"] and resumed_best["best"] < 99.0
    # as TensorBoard (and arschloch curves) read the logs: past the checkpoint, only the
    # resumed run's points
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    (log,) = [p for p in (run / "tb").iterdir() if p.is_dir()]
    acc = EventAccumulator(str(log), size_guidance={"scalars": 0})
    acc.Reload()
    late = [e for tag in acc.Tags()["scalars"] for e in acc.Scalars(tag) if e.step > mid]
    assert late and all(e.wall_time >= resumed_at for e in late)
    assert any(e.step <= mid for tag in acc.Tags()["scalars"] for e in acc.Scalars(tag))


def test_resume_from_a_damaged_checkpoint_names_it(smoke_run, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(smoke_run, run)
    latest = json.loads((run / "latest.json").read_text())
    (run / latest["checkpoint"]).write_bytes(b"garbage")
    config = (run / "config.yaml").read_text()
    res = cli_in_process("train", "--run-dir", run, "--resume", "--no-progress", "--set",
                         f"total_steps={latest['steps'] + 2048}")
    assert res.returncode == 2, res.stderr[-2000:]
    assert f"--resume: {run / latest['checkpoint']} cannot be loaded" in res.stderr
    assert "Traceback" not in res.stderr
    # the run's config is as it was: its --config still fits it
    assert (run / "config.yaml").read_text() == config


@pytest.mark.parametrize("overrides, says", [
    (["ppo.net_arch=[32,32]"], "holds a network of hidden layers [32, 32], critic [32, 32] "
                               "(tanh), not this run's ppo.net_arch [128, 128], critic [128, 128] "
                               "(tanh): another run's checkpoint; put this run's back, or start "
                               "a new run"),
    (["ppo.critic_arch=[16]"], "holds a network of hidden layers [128, 128], critic [16] (tanh), "
                               "not this run's ppo.net_arch [128, 128], critic [128, 128] (tanh)"),
    (["rules=tavern"], "cannot be loaded (Observation spaces do not match: a checkpoint of "
                       "another deck or observation layout than this run's)"),
])
def test_resume_refuses_another_runs_sb3_checkpoint_in_one_line(smoke_run, tmp_path,
                                                                 overrides, says):
    """SB3 loads a checkpoint of another network as it is, and refuses one of another deck
    with its whole observation space in the message."""
    import shutil

    from stable_baselines3.common.vec_env import DummyVecEnv

    from train.config import load_config
    from train.sb3_trainer import make_env, make_model

    run = tmp_path / "run"
    shutil.copytree(smoke_run, run)
    latest = json.loads((run / "latest.json").read_text())
    other = load_config(SMOKE, overrides)
    envs = DummyVecEnv([make_env(other, 0, tmp_path / "league")])
    make_model(other, envs, tmp_path / "tb").save(str(run / latest["checkpoint"]))
    envs.close()
    res = cli_in_process("train", "--run-dir", run, "--resume", "--no-progress", "--set",
                         f"total_steps={latest['steps'] + 2048}")
    assert res.returncode == 2, res.stderr[-2000:]
    assert f"--resume: {run / latest['checkpoint']} " in res.stderr and says in res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert not list((run / "checkpoints").glob(f"step_*{latest['steps'] + 2048}*"))


@pytest.mark.parametrize("edit, field", [
    (("seed: 0", "seed: 5"), "seed"),
    (("gamma: 0.99", "gamma: 0.5"), "ppo.gamma"),
])
def test_resume_refuses_a_config_yaml_edited_where_set_could_not(smoke_run, tmp_path, edit,
                                                                 field):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(smoke_run, run)
    text = (run / "config.yaml").read_text()
    assert text.count(edit[0]) == 1
    (run / "config.yaml").write_text(text.replace(*edit))
    before = sorted(p.relative_to(run) for p in run.rglob("*"))
    latest = json.loads((run / "latest.json").read_text())
    res = cli_in_process("train", "--run-dir", run, "--resume", "--no-progress", "--set",
                         f"total_steps={latest['steps'] + 2048}")
    assert res.returncode == 2, res.stderr[-2000:]
    assert (f"config.yaml differs from the config its checkpoint {latest['checkpoint']} "
            f"trained with in {field}, which cannot change") in res.stderr
    assert sorted(p.relative_to(run) for p in run.rglob("*")) == before


def test_resume_seats_the_checkpoints_weights_as_current(smoke_run, tmp_path, monkeypatch):
    """league/current.npz may hold the weights of an attempt that went on past its last
    checkpoint: the resumed run's first episodes must play the checkpoint's weights."""
    import shutil

    import train.league as league
    from agents.mlp import MLP
    from sb3_contrib import MaskablePPO
    from train.export import policy_mlp
    from train.sb3_trainer import load_run_config, train

    run = tmp_path / "run"
    shutil.copytree(smoke_run, run)
    latest = json.loads((run / "latest.json").read_text())
    checkpoint = policy_mlp(MaskablePPO.load(str(run / latest["checkpoint"]), device="cpu"))
    later = MLP.load(run / "league" / "current.npz")
    later.layers[0][0][:] += 1.0  # what a later attempt would have left
    later.save(run / "league" / "current.npz")
    seen = []
    refresh = league.LeagueSampler._refresh

    def spy(self):
        refresh(self)
        if self._current is not None and not seen:
            seen.append(np.array_equal(self._current.layers[0][0], checkpoint.layers[0][0]))

    monkeypatch.setattr(league.LeagueSampler, "_refresh", spy)
    config = run / "config.yaml"  # envs in this process, where the spy sees them
    config.write_text(config.read_text().replace("subproc: true", "subproc: false"))
    cfg = load_run_config(run, [f"total_steps={latest['steps'] + 1}", "eval.every=1000000000"])
    train(cfg, run, resume=True, progress=False)
    assert seen == [True]


def test_output_paths_that_cannot_be_written_are_refused_first(tmp_path, smoke_run):
    (tmp_path / "afile").write_text("")
    (tmp_path / "adir").mkdir()
    for args, says in (
            (["train", "--config", SMOKE, "--run-dir", tmp_path / "afile"], "is a file"),
            (["train", "--config", SMOKE, "--run-dir", tmp_path / "afile" / "sub"],
             "afile' is a file, so no directory can be made under it"),
            (["curves", smoke_run, "--out", tmp_path / "adir"], "is a directory; give the PNG"),
    ):
        res = cli_in_process(*args)
        assert res.returncode == 2 and says in res.stderr, res.stderr[-2000:]
        assert "Traceback" not in res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "afile"]


def test_curves_never_overwrite_a_file_of_the_run(tmp_path):
    """--out may name a PNG (written again on every call), never a file of another kind: one
    the run keeps (its config.yaml, a checkpoint), a bundle's policy."""
    from torch.utils.tensorboard import SummaryWriter

    run = tmp_path / "run"
    run.mkdir()
    config = run / "config.yaml"
    config.write_text(yaml.safe_dump(load_config(SMOKE).to_dict()))
    before = config.read_bytes()
    with SummaryWriter(str(run / "tb" / "ppo_1")) as w:
        for step in (100, 200):
            w.add_scalar("rollout/ep_rew_mean", 0.1, step)
    policy = tmp_path / "bot" / "policy.onnx"
    policy.parent.mkdir()
    policy.write_bytes(b"onnx")
    for target in (config, policy):
        res = cli_in_process("curves", run, "--out", target)
        assert res.returncode == 2 and "the learning curves are a PNG file" in res.stderr, \
            res.stderr[-2000:]
        assert "Traceback" not in res.stderr
    assert config.read_bytes() == before and policy.read_bytes() == b"onnx"
    for _ in range(2):
        res = cli_in_process("curves", run, "--out", run / "curves.png")
        assert res.returncode == 0, res.stderr[-2000:]
    notes = tmp_path / "notes.png"  # a name that ends in .png is not yet a PNG image
    notes.write_text("not an image")
    res = cli_in_process("curves", run, "--out", notes)
    assert res.returncode == 2 and "is a file that is not a PNG image" in res.stderr
    assert notes.read_text() == "not an image"


def test_a_script_that_trains_without_a_main_guard_is_told_so(tmp_path):
    """The env workers import the script again; training there must say what to do, not that
    another trainer holds the run directory."""
    script = tmp_path / "unguarded.py"
    script.write_text(
        "from train.config import load_config\n"
        "from train.sb3_trainer import train\n"
        f"cfg = load_config({str(ROOT / 'configs/ppo_smoke.yaml')!r}, "
        "['total_steps=1024', 'eval.every=0'])\n"
        f"train(cfg, {str(tmp_path / 'run')!r})\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "ignore"}
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path, env=env, stdin=subprocess.DEVNULL)
    assert res.returncode != 0
    assert ("a worker process of this training run is importing your script, which starts "
            "training again: put the code that trains under 'if __name__ == \"__main__\":'"
            in res.stderr)
    assert "in use by another arschloch train" not in res.stderr


def test_a_checkpoint_holds_the_update_on_its_last_rollout(tmp_path, monkeypatch):
    """SB3 trains on a rollout after its end: the checkpoint of step 1024 in a longer run holds
    the same weights as a run that ends at step 1024, or a resume from it would go without
    that rollout's update; and no checkpoint is written twice."""
    import torch
    from sb3_contrib import MaskablePPO

    from conftest import calls_of
    from train.sb3_trainer import RunDir, train
    calls = calls_of(monkeypatch, RunDir, "save_checkpoint")  # (self, model, name, ...)
    common = ["ppo.n_steps=512", "ppo.batch_size=256", "subproc=false", "n_envs=2",
              "eval.deals=2", "checkpoint_every=1024"]
    short = train(load_config(SMOKE, ["total_steps=1024", *common]), tmp_path / "short",
                  progress=False)
    calls.clear()
    long = train(load_config(SMOKE, ["total_steps=2048", *common]), tmp_path / "long",
                 progress=False)
    written = [args[2] for args in calls]
    steps = [name for name in written if name.startswith("step_")]  # best may improve again
    assert len(steps) == len(set(steps)), written
    assert long.name == "step_000000002048.zip"
    at_1024 = long.with_name("step_000000001024.zip")
    a, b = (MaskablePPO.load(str(p), device="cpu").policy.state_dict() for p in (short, at_1024))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_ctrl_c_in_a_checkpoint_write_still_prunes_the_league(tmp_path):
    """Ctrl-C takes effect once a checkpoint's write is over; if the checkpoint was written,
    the league drops the snapshots it no longer lists, as after any other."""
    from train.callbacks import prune_if_written

    class League:
        calls = 0

        def checkpointed(self):
            self.calls += 1

    league = League()
    (tmp_path / "latest.json").write_text(json.dumps(
        {"checkpoint": "checkpoints/step_8.pt", "meta": "checkpoints/step_8.json", "steps": 8}))
    (tmp_path / "checkpoints").mkdir()
    for name in ("step_8.pt", "step_8.json"):
        (tmp_path / "checkpoints" / name).write_text("")
    prune_if_written(league, tmp_path, 16)  # the write of step 16 did not get that far
    assert league.calls == 0
    prune_if_written(league, tmp_path, 8)
    assert league.calls == 1
    prune_if_written(league, tmp_path / "nothing", 8)  # no latest.json yet
    assert league.calls == 1


def test_an_env_worker_skips_a_snapshot_pruned_while_it_read_the_pool(tmp_path, monkeypatch):
    """The trainer prunes snapshots while env workers read the pool: one listed in
    league.json but gone by the time it is loaded is left out, not a crash of the worker."""
    from agents.mlp import MLP
    from train.league import League, LeagueSampler
    rng = np.random.default_rng(0)
    mlp = MLP([(rng.normal(size=(49, 413)).astype(np.float32), np.zeros(49, np.float32))])
    pool = League(tmp_path, 5)
    pool.add_snapshot(mlp, 1)
    pool.add_snapshot(mlp, 2)
    load = MLP.load
    gone = tmp_path / pool.snapshots[0]["file"]

    def pruned_meanwhile(path):
        if Path(path) == gone:
            raise FileNotFoundError(path)
        return load(path)

    monkeypatch.setattr(MLP, "load", staticmethod(pruned_meanwhile))
    sampler = LeagueSampler(tmp_path, {"snapshots": 1.0})
    agents = sampler(np.random.default_rng(0), 3)
    assert len(sampler._pool) == 1 and len(agents) == 3


def test_the_league_sampler_draws_every_snapshot_alike_and_current_without_any(tmp_path):
    from collections import Counter

    from agents.mlp import MLP
    from train.league import League, LeagueSampler
    sampler = LeagueSampler(tmp_path, {"snapshots": 1.0})
    pool = League(tmp_path, 5)
    rng = np.random.default_rng(0)
    current = MLP([(rng.normal(size=(49, 413)).astype(np.float32), np.zeros(49, np.float32))])
    pool.update_current(current)
    assert {a.name for a in sampler(rng, 4)} == {"current"}  # no snapshot yet
    snaps = [MLP([(np.full((49, 413), i, np.float32), np.zeros(49, np.float32))])
             for i in range(3)]
    for i, mlp in enumerate(snaps):
        pool.add_snapshot(mlp, i + 1)
    drawn = Counter(float(a.mlp.layers[0][0][0, 0]) for a in sampler(rng, 300))
    assert set(drawn) == {0.0, 1.0, 2.0} and min(drawn.values()) > 70, drawn


def test_the_league_sampler_draws_each_kind_at_its_share(tmp_path):
    from collections import Counter

    from train.league import LeagueSampler
    sampler = LeagueSampler(tmp_path, {"random": 0.9, "greedy": 0.1})
    drawn = Counter(a.name for a in sampler(np.random.default_rng(0), 2000))
    assert set(drawn) == {"random", "greedy"} and 140 < drawn["greedy"] < 260, drawn


def test_the_league_sampler_plays_the_current_policy_the_trainer_wrote_last(tmp_path):
    """The env workers reload current.npz when it changes, not only when league.json does."""
    import os

    from agents.mlp import MLP
    from train.league import League, LeagueSampler
    sampler = LeagueSampler(tmp_path, {"current": 1.0})
    pool = League(tmp_path, 5)
    rng = np.random.default_rng(0)
    for weight in (1.0, 2.0):
        pool.update_current(MLP([(np.full((49, 413), weight, np.float32),
                                  np.zeros(49, np.float32))]))
        # a coarse clock could give both writes one time stamp
        os.utime(tmp_path / "current.npz", ns=(int(weight * 1e9),) * 2)
        assert {float(a.mlp.layers[0][0][0, 0]) for a in sampler(rng, 3)} == {weight}


def test_the_league_sampler_loads_a_bundle_once(tmp_path, monkeypatch):
    import agents.bundle
    from conftest import calls_of
    from train.league import LeagueSampler
    loads = calls_of(monkeypatch, agents.bundle, "load_bundle")
    sampler = LeagueSampler(tmp_path, {"bots/ppo_vec_culo_multi": 1.0})
    rng = np.random.default_rng(0)
    seats = [agent for _ in range(4) for agent in sampler(rng, 3)]
    assert len(loads) == 1 and len({id(a) for a in seats}) == 12


def test_the_trainer_removes_the_unfinished_writes_of_a_killed_one(tmp_path):
    """A kill mid-write leaves a .part file beside the whole ones; the next trainer to hold
    the run directory removes them, and nothing else."""
    from train.sb3_trainer import RunDir
    run = RunDir(tmp_path / "run")
    for folder in (run.root, run.checkpoints, run.league):
        folder.mkdir(parents=True, exist_ok=True)
    left = [run.checkpoints / "step_000000004096.part.zip", run.checkpoints / "best.part.pt",
            run.league / "snap_000000002048.npz.part.npz", run.league / "league.json.part",
            run.root / "config.yaml.part"]
    whole = [run.checkpoints / "step_000000002048.zip", run.league / "snap_000000002048.npz",
             run.root / "config.yaml", run.root / "notes.part.txt", run.root / "old.part"]
    for path in left + whole[:-1]:
        path.write_text("x")
    whole[-1].mkdir()  # a folder, whatever its name, is not a write
    with run.lock():
        assert [p for p in left if p.exists()] == []
        assert all(p.exists() for p in whole)


def test_the_last_rollouts_snapshot_is_in_the_final_checkpoint(tmp_path):
    """A snapshot due at the final step joins the league before the final checkpoint (as in
    ppo-vec): a run extended with --resume then has the pool an uninterrupted one has."""
    from train.sb3_trainer import train
    final = train(load_config(SMOKE, [
        "total_steps=1024", "ppo.n_steps=256", "ppo.batch_size=256", "ppo.n_epochs=1",
        "subproc=false", "n_envs=2", "eval.deals=2", "checkpoint_every=512",
        "league.snapshot_every=512"]), tmp_path / "run", progress=False)
    meta = json.loads(final.with_suffix(".json").read_text())
    assert [s["steps"] for s in meta["league"]] == [512, 1024]


def test_sb3_scalars_have_one_point_per_step(tmp_path):
    """An evaluation writes its eval/* at its step, and every update its train/* at the step
    of the rollout it trained on, as ppo-vec does: the last update's too (SB3 alone writes
    them with the next rollout's and never the last), and no tag twice at one step."""
    from train.curves import read_scalars
    from train.sb3_trainer import lr_schedule
    run = tmp_path / "run"
    res = cli("train", "--config", SMOKE, "--run-dir", run, "--no-progress",
              *[a for o in ("total_steps=512", "checkpoint_every=512", "ppo.n_steps=128",
                            "ppo.batch_size=64", "n_envs=1", "eval.every=256", "eval.deals=2",
                            "league.snapshot_every=256") for a in ("--set", o)])
    assert res.returncode == 0, res.stderr[-3000:]
    scalars = read_scalars(run)
    assert [s for s, _ in scalars["eval/vs_random/rank_points"]] == [256, 512]
    rollouts = [128, 256, 384, 512]
    assert [s for s, _ in scalars["rollout/ep_rew_mean"]] == rollouts
    for tag in ("train/loss", "train/learning_rate", "train/approx_kl"):
        assert [s for s, _ in scalars[tag]] == rollouts, tag
    final_lr = lr_schedule(load_config(run / "config.yaml"))(0.0)
    assert scalars["train/learning_rate"][-1][1] == pytest.approx(final_lr)
    for tag, points in scalars.items():
        steps = [s for s, _ in points]
        assert len(steps) == len(set(steps)), (tag, steps)


def test_sb3_resume_deals_on_instead_of_replaying(tmp_path, monkeypatch):
    """MaskablePPO.load reseeds everything with the run's seed, as at step 0: a resumed run
    reseeds by its step (the envs' deals and opponent draws, torch's sampling) as ppo-vec's."""
    from arschloch_env.single import SingleSeatEnv
    from train.sb3_trainer import train

    seeds: list[int] = []
    reset = SingleSeatEnv.reset

    def spy(self, *, seed=None, options=None):
        if seed is not None:
            seeds.append(seed)
        return reset(self, seed=seed, options=options)

    monkeypatch.setattr(SingleSeatEnv, "reset", spy)
    over = ["total_steps=256", "checkpoint_every=256", "ppo.n_steps=128", "ppo.batch_size=64",
            "n_envs=1", "subproc=false", "eval.deals=2"]
    train(load_config(SMOKE, over), tmp_path / "run", progress=False)
    first = list(seeds)
    seeds.clear()
    from train.sb3_trainer import load_run_config
    train(load_run_config(tmp_path / "run", ["total_steps=512"]), tmp_path / "run",
          resume=True, progress=False)
    assert first and seeds and seeds[-1] not in first, (first, seeds)


def test_learning_curves_of_logs_that_share_steps_hold_one_point_per_step(tmp_path):
    """A run whose logs hold a step twice (a resumed run logging into a second directory):
    the point written last stands, and a band whose bounds were not logged at every step of
    its curve is drawn where they were (zip of unequal lists made fill_between fail)."""
    import time

    from torch.utils.tensorboard import SummaryWriter

    from train.curves import plot_learning_curves, read_scalars
    run = tmp_path / "run"
    for log, steps, value in (("ppo_1", (100, 200, 300), 0.0), ("ppo_2", (200, 300, 400), 1.0)):
        with SummaryWriter(str(run / "tb" / log)) as w:
            for step in steps:
                w.add_scalar("rollout/ep_rew_mean", value, step)
                w.add_scalar("eval/vs_greedy/rank_points", value, step)
                if log == "ppo_2":
                    w.add_scalar("eval/vs_greedy/ci_low", value - 0.1, step)
                    w.add_scalar("eval/vs_greedy/ci_high", value + 0.1, step)
        time.sleep(0.01)
    scalars = read_scalars(run)
    assert scalars["rollout/ep_rew_mean"] == [(100, 0.0), (200, 1.0), (300, 1.0), (400, 1.0)]
    assert [s for s, _ in scalars["eval/vs_greedy/rank_points"]] == [100, 200, 300, 400]
    assert plot_learning_curves(run, tmp_path / "c.png").stat().st_size > 0


def test_learning_curves_of_a_log_resumed_in_place_drop_the_attempts_points_quietly(tmp_path,
                                                                                  caplog):
    """A run resumed from its checkpoint at step 200 logs into the same directory as the
    attempt that went on to 400: TensorBoard purges that attempt's points after 200, rightly,
    with a warning of a "TensorFlow restart" that would only alarm."""
    import time

    from torch.utils.tensorboard import SummaryWriter

    from train.curves import read_scalars
    run = tmp_path / "run"
    for steps, value, purge in (((100, 200, 300, 400), 0.0, None), ((300, 500), 1.0, 201)):
        # purge_step: as the trainers' writers of a resumed run (train/ppo_vec_run.py)
        with SummaryWriter(str(run / "tb" / "ppo_1"), purge_step=purge) as w:
            for step in steps:
                w.add_scalar("rollout/ep_rew_mean", value, step)
        # TensorBoard reads a log's files in name order: a time in whole seconds, then a
        # counter of the process's writers, unpadded, so in one second writer 10 sorts before
        # writer 9 (a resumed run, another process seconds later, never meets this)
        time.sleep(1.01 - time.time() % 1)
    with caplog.at_level("WARNING"):
        scalars = read_scalars(run)
    assert scalars["rollout/ep_rew_mean"] == [(100, 0.0), (200, 0.0), (300, 1.0), (500, 1.0)]
    assert "out of order" not in caplog.text


def test_learning_curves_of_one_rollout_show_its_point(tmp_path, monkeypatch):
    """A run of one rollout has one point of rollout/ep_rew_mean, which a line without a
    marker does not draw: the panel came out empty."""
    from matplotlib.figure import Figure
    from torch.utils.tensorboard import SummaryWriter

    from train.curves import plot_learning_curves
    run = tmp_path / "run"
    with SummaryWriter(str(run / "tb" / "ppo_1")) as w:
        w.add_scalar("rollout/ep_rew_mean", -0.9, 1024)
    figures, save = [], Figure.savefig
    monkeypatch.setattr(Figure, "savefig",
                        lambda fig, *a, **k: (figures.append(fig), save(fig, *a, **k))[1])
    plot_learning_curves(run, tmp_path / "c.png")
    (line,) = figures[0].axes[0].get_lines()
    assert list(line.get_xdata()) == [1024] and line.get_marker() not in ("", "None", None)
    assert not figures[0].axes[0].texts


def test_learning_curves_before_any_match_ended_say_so(tmp_path, monkeypatch):
    """A ppo-vec run of one short rollout has evaluations but no match return yet."""
    from matplotlib.figure import Figure
    from torch.utils.tensorboard import SummaryWriter

    from train.curves import NO_MATCH_YET, plot_learning_curves
    run = tmp_path / "run"
    with SummaryWriter(str(run / "tb" / "ppo_vec_1")) as w:
        w.add_scalar("eval/vs_greedy/rank_points", 1.6, 60_000)
    figures, save = [], Figure.savefig
    monkeypatch.setattr(Figure, "savefig",
                        lambda fig, *a, **k: (figures.append(fig), save(fig, *a, **k))[1])
    plot_learning_curves(run, tmp_path / "c.png")
    top = figures[0].axes[0]
    assert not top.get_lines() and [t.get_text() for t in top.texts] == [NO_MATCH_YET]
    lines = {line.get_label(): list(line.get_ydata()) for line in figures[0].axes[1].get_lines()}
    assert lines == {"vs 3x greedy": [pytest.approx(1.6)], "par (4 players)": [1.5, 1.5]}


def test_drawing_curves_and_tournament_plots_leaves_pyplot_alone(tmp_path):
    """In a notebook, drawing a run's curves or a tournament's plots must not switch its
    backend away (inline figures stopped showing) nor close its open figures (matplotlib
    before 3.10 closed them on a switch)."""
    import matplotlib
    import matplotlib.pyplot as plt
    from torch.utils.tensorboard import SummaryWriter

    from train.curves import plot_learning_curves
    from train.report import plots
    from train.tournament import run_tournament
    run = tmp_path / "run"
    with SummaryWriter(str(run / "tb" / "ppo_1")) as w:
        w.add_scalar("rollout/ep_rew_mean", -0.9, 1024)
    res = run_tournament("culo", ["random", "greedy"], deals=2, seed=1, jobs=1)
    before = matplotlib.get_backend()
    matplotlib.use("svg")  # not the Agg the drawing uses
    try:
        mine = plt.figure()
        plot_learning_curves(run, tmp_path / "c.png")
        assert set(plots(res)) == {"score.png", "places.png"}
        assert matplotlib.get_backend() == "svg" and plt.fignum_exists(mine.number)
        plt.close(mine)
    finally:
        matplotlib.use(before)


def test_write_atomic_leaves_the_old_file_whole_when_a_write_fails(tmp_path, monkeypatch):
    import os

    from train.files import write_atomic
    path = tmp_path / "results.json"
    write_atomic(path, "old")
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(path, b"new")
    assert path.read_text() == "old" and list(tmp_path.iterdir()) == [path]
