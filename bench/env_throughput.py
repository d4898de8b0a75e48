"""Decisions and rounds per second of random legal play, on one core.

(a) the engine alone (``Game.legal_actions`` + ``Game.step``), (b) what ``arschloch_env.env()``
returns, through the full AEC loop (``agent_iter``, ``last``, pick from the mask, ``step``),
(picks by Python's ``random``, the same in every loop, so that the harness costs little),
and beside them the same AEC loop over PettingZoo's ``leduc_holdem_v4`` (needs the ``bench``
extra: rlcard and pygame). Median and range of 3 runs.

    python bench/env_throughput.py [--seconds 3] [--runs 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import numpy as np

from common import DefaultsHelp, at_least, duration, host_line, pin_to_one_core


def engine_loop(preset: str, seconds: float) -> tuple[float, float]:
    from arschloch_env.engine import Game

    pick = random.Random(0).random
    decisions = rounds = 0
    seed = 0
    end = time.perf_counter() + seconds
    start = time.perf_counter()
    while time.perf_counter() < end:
        game = Game(preset, seed=seed, auto_pass=True)
        seed += 1
        while not game.is_over:
            legal = game.legal_actions()
            game.step(legal[int(pick() * len(legal))])
            decisions += 1
        rounds += game.rounds_done
    elapsed = time.perf_counter() - start
    return decisions / elapsed, rounds / elapsed


def aec_loop(make_env, seconds: float, rounds_of) -> tuple[float, float]:
    env = make_env()
    env.reset(seed=0)
    pick = random.Random(0).random
    steps = rounds = 0
    end = time.perf_counter() + seconds
    start = time.perf_counter()
    while time.perf_counter() < end:
        for agent in env.agent_iter():
            obs, reward, term, trunc, info = env.last()
            if term or trunc:  # the agent leaves: PettingZoo's dead step, no decision
                env.step(None)
                continue
            legal = np.flatnonzero(obs["action_mask"])
            env.step(int(legal[int(pick() * len(legal))]))
            steps += 1
        rounds += rounds_of(env)
        env.reset()
    elapsed = time.perf_counter() - start
    return steps / elapsed, rounds / elapsed


def summarize(values: list[float], width: int) -> str:
    """The median under its column's name (``width`` wide), then the range."""
    spread = f"[{min(values):,.0f} .. {max(values):,.0f}]"
    return f"{statistics.median(values):>{width},.0f} {spread:<26}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=DefaultsHelp)
    parser.add_argument("--seconds", type=duration, default=3.0, help="length of one run")
    parser.add_argument("--runs", type=at_least(1), default=3,
                        help="runs per loop (median and range)")
    args = parser.parse_args()
    pin_to_one_core()

    import arschloch_env

    cases = []
    for preset in ("culo", "tavern"):
        cases.append((f"engine {preset} 4p", lambda p=preset: engine_loop(p, args.seconds)))
        cases.append((f"env()  {preset} 4p", lambda p=preset: aec_loop(
            lambda: arschloch_env.env(rules=p, num_players=4), args.seconds,
            lambda e: e.game.rounds_done)))
    try:
        from pettingzoo.classic import leduc_holdem_v4
        cases.append(("pettingzoo leduc_holdem_v4", lambda: aec_loop(
            leduc_holdem_v4.env, args.seconds, lambda e: 1)))
    except ImportError as exc:
        print(f"(leduc_holdem_v4 not measured: {exc}; pip install -e '.[bench]')")

    print(host_line())
    print(f"one core, {args.runs} runs of {args.seconds:g} s, median [range]")
    print(f"{'loop':28} {'decisions/s':>11} {'':26} {'rounds/s':>8}")
    for name, fn in cases:
        results = [fn() for _ in range(args.runs)]
        print(f"{name:28} {summarize([r[0] for r in results], 11)} "
              f"{summarize([r[1] for r in results], 8)}".rstrip())


if __name__ == "__main__":
    main()
