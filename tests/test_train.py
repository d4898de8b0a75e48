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
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from agents.bundle import BundleError, load_bundle
from agents.mlp import MLP
from arschloch_env.engine import Game
from arschloch_env.observation import Encoder
from train.config import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "configs" / "ppo_smoke.yaml"


def cli(*args, timeout=600, **kw):
    return subprocess.run([sys.executable, "-m", "arschloch_env.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT, **kw)


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
    ("rules=nonsense", "unknown preset"),
    ("seed=-1", "seed: -1 is not allowed"),
    ("league.mix={nope: 1.0}", "league.mix: unknown agent spec 'nope'"),
    ("eval.opponents=[random, nope]", "eval.opponents: unknown agent spec 'nope'"),
    ("eval.opponents=[random, bots/ppo_vec_tavern_multi]",
     "eval.opponents: bots/ppo_vec_tavern_multi does not play these rules (culo, 4 players): "
     "bundle"),
    ("eval.deals=1", "eval.deals: 1; at least 2"),
])
def test_config_errors_name_the_key(override, message):
    with pytest.raises((ConfigError, ValueError), match=None) as info:
        load_config(SMOKE, [override])
    assert message in str(info.value)


def test_train_cli_rejects_bad_config_cleanly(tmp_path):
    res = cli("train", "--config", SMOKE, "--set", "bogus=1", "--run-dir", tmp_path / "r")
    assert res.returncode == 2
    assert "unknown config key(s) bogus" in res.stderr and "Traceback" not in res.stderr
    res = cli("train", "--config", tmp_path / "missing.yaml")
    assert res.returncode == 2 and "does not exist" in res.stderr


# -- a short real run -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("smoke") / "run"
    res = cli("train", "--config", SMOKE, "--run-dir", run, "--set", "eval.deals=150",
              timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    # not a terminal: no progress bar by default, but the evaluation lines
    assert "step/s" not in res.stderr + res.stdout
    assert "rank points over par vs random" in res.stdout
    return run


def test_short_training_beats_random(smoke_run):
    meta = json.loads((smoke_run / json.loads((smoke_run / "latest.json").read_text())["meta"])
                      .read_text())
    assert meta["steps"] >= 40_000
    result = meta["evaluations"][-1]["results"]["random"]
    assert result["advantage_ci_low"] > 0, result
    assert meta["illegal_actions"] == 0


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
    # A temporary (*.part.zip) may be left by the kill; every file under a final name is whole.
    for final in [p for p in (run / "checkpoints").glob("step_*.zip") if ".part" not in p.name]:
        import zipfile
        assert zipfile.is_zipfile(final), f"{final} is half-written"

    # the run's own config; --set extends it (and config.yaml says so for the next resume)
    res = cli("train", "--run-dir", run, "--resume", "--no-progress",
              "--set", "total_steps=14000")
    assert res.returncode == 0, res.stderr[-3000:]
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


def test_new_run_refuses_an_existing_run_dir(smoke_run):
    res = cli("train", "--config", SMOKE, "--run-dir", smoke_run)
    assert res.returncode == 2 and "--resume" in res.stderr


@pytest.mark.parametrize("args, says", [
    (["--set", "ppo.net_arch=[32]"], "ppo.net_arch cannot change in a resumed run"),
    (["--set", "league.mix={random: 1.0}"], "league.mix.random"),
    (["--config", "configs/ppo_demo.yaml"], "differs in"),
])
def test_resume_refuses_changes_the_checkpoint_fixes(smoke_run, args, says):
    before = (smoke_run / "config.yaml").read_text()
    res = cli("train", "--run-dir", smoke_run, "--resume", *args)
    assert res.returncode == 2 and says in res.stderr, res.stderr
    assert (smoke_run / "config.yaml").read_text() == before


def test_resuming_a_finished_run_writes_nothing(smoke_run):
    def files():
        return {p: p.stat().st_mtime_ns for p in smoke_run.rglob("*") if p.is_file()}

    before = files()
    res = cli("train", "--run-dir", smoke_run, "--resume", "--no-progress")
    assert res.returncode == 0 and "nothing to train" in res.stderr, res.stderr[-2000:]
    assert files() == before


def test_train_needs_a_config():
    res = cli("train", "--no-progress")
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
    from train.export import policy_mlp, torchscript_policy, write_bundle
    from train.sb3_trainer import rules_for
    model = _untrained_model(seed=3)
    mlp = policy_mlp(model)
    out = tmp_path_factory.mktemp("bots") / "parity"
    rules = rules_for(load_config(SMOKE)).to_dict()
    write_bundle(out, mlp, rules, ["culo"], [4], "parity", {"steps": 0},
                 torchscript_model=torchscript_policy(mlp))
    return out, model


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
    ts = torch.jit.load(str(out / "policy.torchscript.pt"))
    ts_actions, _ = ts(torch.as_tensor(obs), torch.as_tensor(masks))
    assert (ts_actions.numpy() == actions).all()


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
        "print('played', g.totals)\n")
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
    res = cli("export", smoke_run, "--out", out)
    assert res.returncode == 0, res.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["presets"] == ["culo"] and manifest["players"] == [4]
    assert manifest["training"]["evaluation"]["results"]["random"]["rank_points"] > 1.5
    res = cli("simulate", "--rules", "culo", "--players", "4", "--matches", "3",
              "--agents", out, "random", "random", "random")
    assert res.returncode == 0, res.stderr
    res = cli("simulate", "--rules", "tavern", "--players", "4", "--matches", "1",
              "--agents", out, "random", "random", "random")
    assert res.returncode != 0 and "trained for preset" in res.stderr
    assert "Traceback" not in res.stderr
    res = cli("export", tmp_path / "nothing-here", "--out", tmp_path / "x")
    assert res.returncode == 2 and "checkpoint" in res.stderr


def test_same_seed_same_run_on_one_process(tmp_path):
    import torch
    from sb3_contrib import MaskablePPO

    from train.sb3_trainer import train
    cfg_args = ["total_steps=1024", "ppo.n_steps=256", "ppo.batch_size=128", "subproc=false",
                "n_envs=2", "eval.deals=3", "checkpoint_every=100000"]
    finals = [train(load_config(SMOKE, cfg_args), tmp_path / f"run{i}", progress=False)
              for i in range(2)]
    a, b = (MaskablePPO.load(str(f), device="cpu").policy.state_dict() for f in finals)
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_export_never_deletes_what_is_not_a_bundle(smoke_run, tmp_path):
    keep = tmp_path / "keep"
    (keep / "sub").mkdir(parents=True)
    (keep / "notes.txt").write_text("mine")
    afile = tmp_path / "afile.txt"
    afile.write_text("mine")
    for out in (keep, afile, smoke_run):
        res = cli("export", smoke_run, "--out", out)
        assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
        assert "not part of a bundle" in res.stderr or "is a file" in res.stderr
    assert (keep / "notes.txt").read_text() == "mine" and afile.read_text() == "mine"
    assert (smoke_run / "config.yaml").is_file()
    # a bare bundle is replaced, and nothing is left beside it
    out = tmp_path / "bots" / "smoke"
    for _ in range(2):
        assert cli("export", smoke_run, "--out", out).returncode == 0
    assert sorted(p.name for p in out.parent.iterdir()) == ["smoke"]


def test_demo_clears_only_its_own_folder(tmp_path):
    from train.demo import MARKER, fresh_run_dir
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.txt").write_text("mine")
    with pytest.raises(SystemExit, match="not a demo's folder"):
        fresh_run_dir(precious)
    assert (precious / "thesis.txt").read_text() == "mine"
    demo = tmp_path / "demo"
    fresh_run_dir(demo)
    (demo / "old.txt").write_text("from the last demo")
    fresh_run_dir(demo)
    assert sorted(p.name for p in demo.iterdir()) == [MARKER]


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


def test_learning_curves_of_any_field_and_table_size(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    from train.curves import eval_fields, eval_table_size, plot_learning_curves, read_scalars
    run = tmp_path / "run"
    run.mkdir()
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
