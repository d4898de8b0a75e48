"""Samples per second of the training loop (collect + update), end to end.

Builds the trainer of a config exactly as ``arschloch train`` does and times it over a fixed
number of learner steps (no evaluation, no checkpoints):

* ``algo: ppo``: the envs and MaskablePPO model, timing ``model.learn``;
* ``algo: ppo-vec``: the batched tables and networks of :mod:`train.ppo_vec`, timing whole
  iterations (rollout + GAE + update), with the split between collecting and updating;
  ``--profile`` prints the top of a cProfile of the timed iterations, ``--repeat N`` times
  them N times in a row and prints the median.

    python bench/train_throughput.py [--config configs/ppo_vec_tavern_multi.yaml] \\
        [--steps 400000] [--repeat 3]
    taskset -c 0,1 python bench/train_throughput.py --config configs/ppo_culo_4p.yaml

By default it times the figure of the README's 50,000 samples/s target: the shipped tavern
bot's config and network, whose ``vec.bfloat16: auto`` runs in bfloat16 where the CPU has its
products.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from common import DefaultsHelp, at_least, host_line

ROOT = Path(__file__).resolve().parents[1]


def bench_sb3(cfg, args) -> None:
    import torch

    from train.export import policy_mlp
    from train.league import League
    from train.sb3_trainer import (check_env_workers_fit, make_envs, make_model,
                                   uses_env_processes)

    check_env_workers_fit(cfg)
    torch.set_num_threads(cfg.torch_threads)
    with tempfile.TemporaryDirectory() as tmp:
        league_dir = Path(tmp) / "league"
        league = League(league_dir, cfg.league.max_snapshots)
        envs = make_envs(cfg, league_dir)
        model = make_model(cfg, envs, Path(tmp) / "tb")
        league.update_current(policy_mlp(model))
        league.add_snapshot(policy_mlp(model), 0)
        model.learn(total_timesteps=cfg.ppo.n_steps * cfg.n_envs)  # warm-up rollout
        start, before = time.perf_counter(), model.num_timesteps
        model.learn(total_timesteps=args.steps, reset_num_timesteps=False)
        elapsed = time.perf_counter() - start
        steps = model.num_timesteps - before  # whole rollouts: at least --steps
        envs.close()
    net = "x".join(map(str, cfg.ppo.net_arch))
    where = "env processes" if uses_env_processes(cfg) else "env(s) in this process"
    print(f"{args.config}: {cfg.n_envs} {where}, MLP {net}, opponents {cfg.league.mix}")
    print(f"{steps} learner steps in {elapsed:.1f} s: {steps / elapsed:,.0f} "
          f"samples/s (collect + update)")


def time_iterations(tables, nets, opt, buf, cfg, gen, device,
                    at_least: int) -> tuple[int, int, float, float]:
    """The trainer's iterations until ``at_least`` learner samples: ``(samples, decisions,
    seconds collecting, seconds updating)``."""
    from train import ppo_vec
    collect = update = 0.0
    steps = rows = 0
    while steps < at_least:
        samples, stats, _ = ppo_vec.iteration(tables, nets, opt, buf, cfg, gen, device)
        assert stats["illegal"] == 0
        collect, update = collect + stats["collect_s"], update + stats["update_s"]
        steps += samples
        rows += buf.steps * buf.seat.shape[1]
    return steps, rows, collect, update


def bench_vec(cfg, args) -> None:
    import numpy as np
    from train import ppo_vec
    from train.league import League
    from train.ppo_vec_io import actor_mlp

    with tempfile.TemporaryDirectory() as tmp:
        league = League(Path(tmp) / "league", cfg.league.max_snapshots)
        tables, nets, opt, buf, pool, gen, device = ppo_vec.setup(cfg, league, 0)
        # a long run's pool is full: max_snapshots snapshots, each its own inference group
        for k in range(args.snapshots if args.snapshots is not None
                       else cfg.league.max_snapshots):
            league.add_snapshot(actor_mlp(nets.actor, nets.activation), k)
        pool.refresh()
        for table in tables:  # seat the league's snapshot from the start
            table.seat_games(np.arange(table.B))
        ppo_vec.iteration(tables, nets, opt, buf, cfg, gen, device)  # warm-up
        profiler = None
        if args.profile:
            import cProfile
            profiler = cProfile.Profile()
            profiler.enable()
        timings = [time_iterations(tables, nets, opt, buf, cfg, gen, device, args.steps)
                   for _ in range(args.repeat)]
        if profiler is not None:
            import pstats
            profiler.disable()
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
        for table in tables:
            table.vg.close()
    net = "x".join(map(str, cfg.ppo.net_arch))
    print(f"{args.config}: ppo-vec, {cfg.vec.num_games} games x {cfg.vec.rollout_steps} steps "
          f"per rollout, players {cfg.players}, MLP {net} ({cfg.ppo.activation}), critic on "
          f"{'state' if cfg.vec.critic_state else 'observation'}, {cfg.ppo.n_epochs} epochs x "
          f"{cfg.vec.minibatches} minibatches, "
          f"{'bfloat16' if nets.bfloat16 else 'float32'} forwards"
          f"{' (vec.bfloat16 auto)' if cfg.vec.bfloat16 == 'auto' else ''}, device {device}, "
          f"torch threads {cfg.torch_threads}, engine threads {cfg.vec.engine_threads}, "
          f"opponents {cfg.vec.mix}, "
          + (f"{len(pool.active)} snapshots" if cfg.vec.mix.get("snapshots") else
             "no snapshot seats")
          + (" (init_from not loaded: weights do not change the speed)" if cfg.init_from
             else ""))
    for steps, rows, collect, update in timings:
        elapsed = collect + update
        print(f"{steps} learner samples ({rows} decisions) in {elapsed:.1f} s: "
              f"{steps / elapsed:,.0f} samples/s (collect + update); collect {collect:.1f} s "
              f"({rows / collect:,.0f} decisions/s), update {update:.1f} s "
              f"({steps * cfg.ppo.n_epochs / update:,.0f} sample-epochs/s)")
    if len(timings) > 1:
        rates = sorted(steps / (collect + update) for steps, _, collect, update in timings)
        print(f"{len(rates)} repeats: median {statistics.median(rates):,.0f} samples/s, "
              f"{rates[0]:,.0f} to {rates[-1]:,.0f}")
    if ppo_vec.bfloat16_is_slow(nets, device):
        print(ppo_vec.SLOW_BFLOAT16)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=DefaultsHelp)
    parser.add_argument("--config", default=str(ROOT / "configs" / "ppo_vec_tavern_multi.yaml"),
                        help="a training config, as arschloch train --config")
    parser.add_argument("--steps", type=at_least(1),
                        help="learner samples to time (ppo-vec: whole rollouts, at least this) "
                        "(default: 400000 for ppo-vec, 20000 for ppo)")
    parser.add_argument("--set", action="append", default=[], dest="overrides",
                        metavar="KEY=VALUE", help="override a config field, as arschloch train")
    parser.add_argument("--profile", action="store_true", help="cProfile (ppo-vec only)")
    parser.add_argument("--snapshots", type=at_least(0), help="ppo-vec: snapshots in the league "
                        "(default: league.max_snapshots, a long run's full pool)")
    parser.add_argument("--repeat", type=at_least(1), default=1,
                        help="ppo-vec: time --steps this many times in a row, a line each, then "
                        "their median (on a shared host the speed varies from minute to minute)")
    args = parser.parse_args()

    from train.config import ConfigError, load_config

    try:
        cfg = load_config(args.config, args.overrides)
    except ConfigError as exc:
        parser.error(str(exc))
    for flag, given in (("--profile", args.profile), ("--snapshots", args.snapshots is not None),
                        ("--repeat", args.repeat != 1)):
        if given and cfg.algo != "ppo-vec":  # bench_sb3 has none of them
            parser.error(f"{flag} is for ppo-vec configs; {args.config} has algo {cfg.algo}")
    if args.steps is None:
        args.steps = 400_000 if cfg.algo == "ppo-vec" else 20_000
    print(host_line(), flush=True)
    try:
        (bench_vec if cfg.algo == "ppo-vec" else bench_sb3)(cfg, args)
    except ConfigError as exc:  # found when the trainer is built (a policy file, memory)
        parser.error(str(exc))


if __name__ == "__main__":
    main()
