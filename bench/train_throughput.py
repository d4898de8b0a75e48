"""Samples per second of the training loop (collect + update), end to end.

Builds the envs and the model of a config exactly as ``arschloch train`` does and times
``model.learn`` over a fixed number of learner steps (no evaluation, no checkpoints).

    python bench/train_throughput.py [--config configs/ppo_culo_4p.yaml] [--steps 20000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/ppo_culo_4p.yaml")
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    args = parser.parse_args()

    import torch
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    from train.config import load_config
    from train.export import policy_mlp
    from train.league import League
    from train.sb3_trainer import make_env, make_model

    cfg = load_config(args.config, args.overrides)
    torch.set_num_threads(cfg.torch_threads)
    with tempfile.TemporaryDirectory() as tmp:
        league_dir = Path(tmp) / "league"
        league = League(league_dir, cfg.league.max_snapshots)
        thunks = [make_env(cfg, i, league_dir) for i in range(cfg.n_envs)]
        envs = SubprocVecEnv(thunks) if cfg.subproc and cfg.n_envs > 1 else DummyVecEnv(thunks)
        model = make_model(cfg, envs, Path(tmp) / "tb")
        league.update_current(policy_mlp(model))
        league.add_snapshot(policy_mlp(model), 0)
        model.learn(total_timesteps=cfg.ppo.n_steps * cfg.n_envs)  # warm-up rollout
        start = time.perf_counter()
        model.learn(total_timesteps=args.steps, reset_num_timesteps=False)
        elapsed = time.perf_counter() - start
        envs.close()
    net = "x".join(map(str, cfg.ppo.net_arch))
    print(f"{args.config}: {cfg.n_envs} env processes, MLP {net}, opponents {cfg.league.mix}")
    print(f"{args.steps} learner steps in {elapsed:.1f} s: {args.steps / elapsed:,.0f} "
          f"samples/s (collect + update)")


if __name__ == "__main__":
    main()
