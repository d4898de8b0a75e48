"""Decisions per second of each built-in bot in 4-player culo and tavern.

Every decision the bot is asked for counts (forced passes are applied by the runner and never
reach a bot; the Monte-Carlo bot answers a decision with one legal action without searching).
The time of a decision is all that the runner spends on it for the bot: its public view (for
bots that read it), its observation, and its ``act``. The bot under test sits in seat 0
against three experts, so that it sees realistic positions. The process runs on one core.

Usage::

    python bench/bots.py                 # all bots, about 70 s
    python bench/bots.py --bots mc --seconds 20
"""

from __future__ import annotations

import argparse
import time

from common import DefaultsHelp, duration, host_line, pin_to_one_core

from agents.base import AgentSpecError, make_agent
from agents.expert import ExpertAgent
from agents.runner import agent_step, ask, reset_agents
from arschloch_env.cli import CliError, check_support
from arschloch_env.engine import Game
from arschloch_env.observation import Encoder
from arschloch_env.rules import PRESETS, make_rules


def bench(spec: str, preset: str, budget: float, players: int = 4) -> dict:
    rules = make_rules(preset, num_players=players)
    bot = make_agent(spec)
    calls = choices = 0
    spent = spent_choosing = 0.0  # all decisions', and those with a real choice
    seed, t0 = 0, time.perf_counter()
    while spent < budget and time.perf_counter() - t0 < 2 * budget + 2:
        game = Game(rules, seed=seed, auto_pass=True)
        agents = [bot] + [ExpertAgent() for _ in range(players - 1)]
        reset_agents(agents, rules.to_dict(), seed)
        encoder = Encoder(game.R)
        while not game.is_over:
            if game.current != 0:
                agent_step(agents[game.current], game, encoder)
                continue
            choice = len(game.legal_actions()) > 1
            t = time.perf_counter()
            action = ask(bot, game, encoder)
            took = time.perf_counter() - t
            spent += took
            choices += choice
            spent_choosing += took if choice else 0.0
            calls += 1
            game.step(action)
        seed += 1
    return {"bot": spec, "rules": preset, "decisions": calls, "choices": choices,
            "per_second": calls / spent, "ms_per_choice": 1000 * spent_choosing / max(1, choices)}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=DefaultsHelp)
    p.add_argument("--bots", nargs="+", default=["random", "greedy", "expert", "mc"],
                   help="agent specs to time")
    p.add_argument("--rules", nargs="+", default=["culo", "tavern"], choices=PRESETS,
                   metavar="PRESET", help=f"presets to time them in: {', '.join(PRESETS)}")
    p.add_argument("--seconds", type=duration, default=4.0,
                   help="time in the bot's own decisions per bot and rules; the three experts "
                        "it plays against take time too, and a run stops at 2 x SECONDS + 2 "
                        "wall-clock seconds whatever the bot's share (a fast bot's share is small)")
    a = p.parse_args(argv)
    for spec in a.bots:  # before any bot is timed: a misspelt last bot is no traceback
        try:
            bot = make_agent(spec)
            for preset in a.rules:  # nor a bundle of other rules than the last ones asked for
                check_support([bot], [spec], make_rules(preset, num_players=4))
        except (AgentSpecError, CliError) as exc:
            p.error(f"--bots: {exc}")
    pin_to_one_core()
    print(host_line())
    print(f"4 players; {a.seconds:g} s of the bot's own decisions per row")
    print(f"{'bot':8} {'rules':7} {'decisions':>9} {'decisions/s':>12} "
          f"{'ms/decision with choice':>24}")
    for preset in a.rules:
        for spec in a.bots:
            r = bench(spec, preset, a.seconds)
            print(f"{spec:8} {preset:7} {r['decisions']:9d} {r['per_second']:12.1f} "
                  f"{r['ms_per_choice']:24.2f}", flush=True)


if __name__ == "__main__":
    main()
