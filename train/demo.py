"""The main job: train a bot briefly, measure it in a duplicate tournament against the
heuristic bots, export it, and say how to look at it and play against it.

    python -m train.demo [--steps N] [--deals D] [--run-dir DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = ".arschloch-demo"
"""Marks a folder as the demo's own, whose outputs a later demo replaces."""

OUTPUTS = ("bot", "train", "vs_*.jsonl")
"""What the demo writes in its folder: a later demo replaces these and keeps anything else
(a curves PNG the closing hints suggest, say)."""


def fresh_run_dir(run_dir: Path) -> None:
    """Clears the outputs of an earlier demo from ``run_dir``; refuses a folder that holds
    files of its own and was not made by a demo."""
    if run_dir.exists():
        if not run_dir.is_dir() or any(run_dir.iterdir()) and not (run_dir / MARKER).is_file():
            sys.exit(f"demo: --run-dir {run_dir} exists and is not a demo's folder; name a "
                     f"new one (the demo writes {', '.join(OUTPUTS)} there, replacing any)")
        earlier = sorted(p for pattern in OUTPUTS for p in run_dir.glob(pattern))
        if earlier:
            print(f"demo: replacing an earlier demo's {', '.join(p.name for p in earlier)} "
                  f"in {run_dir}")
        for p in earlier:
            if p.is_dir():
                shutil.rmtree(p)
            else:
                p.unlink()
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / MARKER).write_text("made by the demo (python -m train.demo); it replaces its "
                                  f"{', '.join(OUTPUTS)} here when it runs again\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/demo.sh",
                                     description=__doc__.split("\n\n")[0].replace("\n", " "))
    parser.add_argument("--steps", type=int, default=None, help="training steps (default: "
                        "the demo config's)")
    parser.add_argument("--deals", type=int, default=200, help="tournament deals per field")
    parser.add_argument("--run-dir", default="runs/demo", help="where the demo writes; "
                        "run again, it replaces its own bot/, train/ and vs_*.jsonl there and "
                        "keeps other files (scripts/demo.sh runs it from the repository root, "
                        "which a relative path is then under)")
    args = parser.parse_args(argv)
    # checked before the minutes of training, and before an earlier demo's outputs go
    if args.steps is not None and args.steps < 1:
        parser.error(f"--steps {args.steps}: at least 1 (or leave it out: the config's)")
    if args.deals < 1:
        parser.error(f"--deals {args.deals}: at least 1")

    from train.config import ConfigError, load_config
    from train.cli import export_run
    from train.report import text_report
    from train.sb3_trainer import rules_for, train
    from train.tournament import run_tournament

    overrides = [] if args.steps is None else [f"total_steps={args.steps}"]
    try:
        cfg = load_config(ROOT / "configs" / "ppo_demo.yaml", overrides)
    except ConfigError as exc:
        parser.error(str(exc))
    run_dir = Path(args.run_dir)
    fresh_run_dir(run_dir)
    rules = rules_for(cfg)
    print(f"== 1. training a bot: MaskablePPO, {cfg.total_steps} steps of {rules.preset} "
          f"with {rules.num_players} players, league {cfg.league.mix}")
    started = time.time()
    checkpoint = train(cfg, run_dir / "train")
    print(f"   trained in {time.time() - started:.0f} s")
    bundle, *_ = export_run(checkpoint, run_dir / "bot", name="demo")
    print(f"\n== 2. the bot in a duplicate tournament ({args.deals} deals, the bot in every "
          f"seat, the same cards for every seating)")
    for field_bot in ("random", "greedy", "expert"):
        res = run_tournament(rules, [str(bundle), field_bot], deals=args.deals, seed=1,
                             jobs=None, progress=None, record=run_dir / f"vs_{field_bot}.jsonl")
        print(f"\n-- bot vs 3x {field_bot}")
        print(text_report(res))
    bin_dir = scripts_dir()
    print(f"""
== 3. what next (from {Path.cwd()})
   TensorBoard (learning curves):  {bin_dir}/tensorboard --logdir {run_dir / 'train' / 'tb'}
   the learning curves as a PNG:   {bin_dir}/arschloch curves {run_dir / 'train'} \\
                                       --out {run_dir / 'curves.png'}
   play against the bot:           {bin_dir}/arschloch play --rules culo --players 4 \\
                                       --bots {bundle} {bundle} greedy
   replay a tournament game:       {bin_dir}/arschloch replay {run_dir / 'vs_greedy.jsonl'} | less
   train for real:                 {bin_dir}/arschloch train --config configs/ppo_culo_4p.yaml
""")
    return 0


def scripts_dir() -> str:
    """The scripts folder of the environment this runs in (scripts/env.sh's, wherever
    ARSCHLOCH_VENV put it), named from here when it lies below this folder."""
    scripts = Path(sys.executable).parent
    return os.path.relpath(scripts) if scripts.is_relative_to(Path.cwd()) else str(scripts)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
