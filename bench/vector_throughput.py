"""Decisions per second of the batched engine beside the single-game engine.

Every decision computes the observation and the mask of the seat to act and picks a random
legal action:

- ``VectorGame``: ``vg.step(vg.sample_actions())`` (obs, mask, rewards, done for all B games;
  the random legal actions are drawn from the masks in the kernels);
- ``Game``: ``Encoder.observe`` + ``legal_actions()`` + ``step`` of a random legal action,
  one game after another (the reference engine, pure Python).

Columns: one core (one thread), both cores as two worker threads of one ``VectorGame``
(``threads=2``; the kernels release the GIL), and both cores as two processes each running
the whole workload (their rates added). Each cell is the median and range of ``--runs`` runs
of ``--seconds`` each.

    python bench/vector_throughput.py            # the full table (about three minutes)
    python bench/vector_throughput.py --quick    # a short look while developing
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import statistics
import sys
import time

import numpy as np

from common import DefaultsHelp, at_least, duration, host_line

from arschloch_env.engine import Game
from arschloch_env.observation import Encoder
from arschloch_env.rules import PRESETS, make_rules

PLAYERS = 4


def vector_rate(preset: str, B: int, threads: int, seconds: float, seed: int) -> float:
    """Decisions per second of one VectorGame stepping B games."""
    from arschloch_env.vector import VectorGame  # main() times its first import

    vg = VectorGame(preset, PLAYERS, num_games=B, seed=seed, threads=threads)
    vg.reset()
    for _ in range(20):
        vg.step(vg.sample_actions())
    every = max(1, 4096 // B)
    steps, t0 = 0, time.perf_counter()
    while True:
        for _ in range(every):
            vg.step(vg.sample_actions())
        steps += every
        dt = time.perf_counter() - t0
        if dt >= seconds:
            vg.close()
            return steps * B / dt


def single_rate(preset: str, B: int, threads: int, seconds: float, seed: int) -> float:
    """Decisions per second of the reference engine, one game at a time."""
    rules = make_rules(preset, PLAYERS)
    enc = Encoder(rules.num_ranks)
    rnd = random.Random(seed)
    match = 0
    g = Game(rules, seed=seed, auto_pass=True)
    decisions, t0 = 0, time.perf_counter()
    while True:
        for _ in range(256):
            if g.is_over:
                match += 1
                g = Game(rules, seed=seed + match, match_index=match, auto_pass=True)
            enc.observe(g, g.current)
            legal = g.legal_actions()
            g.step(legal[rnd.randrange(len(legal))])
        decisions += 256
        dt = time.perf_counter() - t0
        if dt >= seconds:
            return decisions / dt


def _child(args) -> float:
    fn, preset, B, seconds, seed = args
    return fn(preset, B, 1, seconds, seed)


def two_process_rate(pool, fn, preset: str, B: int, seconds: float, seed: int) -> float:
    return sum(pool.map(_child, [(fn, preset, B, seconds, seed + k) for k in range(2)]))


def measure(cell, runs: int) -> tuple[float, float, float]:
    rates = [cell(run) for run in range(runs)]
    return statistics.median(rates), min(rates), max(rates)


def fmt(stat: tuple[float, float, float] | None) -> str:
    if stat is None:
        return "n/a"
    med, lo, hi = stat
    return f"{med / 1e6:6.3f} M [{lo / 1e6:.3f}-{hi / 1e6:.3f}]"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=DefaultsHelp)
    p.add_argument("--seconds", type=duration, default=1.5, help="length of one run")
    p.add_argument("--runs", type=at_least(1), default=3,
                   help="runs per cell (median and range)")
    p.add_argument("--sizes", type=at_least(1), nargs="+", default=[1, 256, 4096],
                   help="batch sizes")
    p.add_argument("--presets", nargs="+", default=["culo", "tavern"], choices=PRESETS,
                   metavar="PRESET", help=f"presets to run: {', '.join(PRESETS)}")
    p.add_argument("--quick", action="store_true", help="--seconds 0.3 --runs 1")
    args = p.parse_args(argv)
    if args.quick:
        args.seconds, args.runs = 0.3, 1
    import numba
    print(host_line())
    t = time.perf_counter()
    # the first import compiles (on a fresh machine) or loads the eagerly typed kernels, the
    # first game the lazily compiled ones: both are the start-up a user waits for
    vector_rate("culo", 2, 1, 0.0, 0)
    load = time.perf_counter() - t
    print(f"# numpy {np.__version__}, numba {numba.__version__}; kernels ready in {load:.1f} s")
    print(f"# {PLAYERS} players; decisions/s, median [min-max] of {args.runs} run(s) of "
          f"{args.seconds} s; obs + mask + random legal action every decision\n")
    head = ("engine", "rules", "B", "1 core", "2 cores: threads=2", "2 cores: 2 processes")
    rows = []
    ctx = mp.get_context("fork")
    with ctx.Pool(2) as pool:
        for preset in args.presets:
            for B in args.sizes:
                one = measure(lambda k: vector_rate(preset, B, 1, args.seconds, k), args.runs)
                thr = None if B < 2 else measure(
                    lambda k: vector_rate(preset, B, 2, args.seconds, k), args.runs)
                two = measure(lambda k: two_process_rate(pool, vector_rate, preset, B,
                                                         args.seconds, 10 * k), args.runs)
                rows.append(("VectorGame", preset, str(B), fmt(one), fmt(thr), fmt(two)))
                print(" | ".join(rows[-1]), flush=True)
            one = measure(lambda k: single_rate(preset, 1, 1, args.seconds, k), args.runs)
            two = measure(lambda k: two_process_rate(pool, single_rate, preset, 1,
                                                     args.seconds, 10 * k), args.runs)
            rows.append(("Game (reference)", preset, "1", fmt(one), "n/a", fmt(two)))
            print(" | ".join(rows[-1]), flush=True)
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |"
    print("\n" + line)
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
