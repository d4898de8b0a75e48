"""Decisions per second of each built-in bot in 4-player culo and tavern.

Every decision the bot is asked for counts (forced passes are applied by the runner and never
reach a bot; the Monte-Carlo bot answers a decision with one legal action without searching).
The time is the bot's own ``act`` time, view building included. The bot under test sits in
seat 0 against three experts, so that it sees realistic positions.

Usage::

    python bench/bots.py                 # all bots, about 40 s
    python bench/bots.py --bots mc --seconds 20
"""

from __future__ import annotations

import argparse
import time

from agents.base import make_agent
from agents.expert import ExpertAgent
from agents.runner import play_match
from arschloch_env.rules import make_rules


class Timed:
    """Wraps an agent and measures its decisions."""

    def __init__(self, agent):
        self.agent = agent
        self.name = getattr(agent, "name", "bot")
        self.uses_view = getattr(agent, "uses_view", True)
        self.calls = 0
        self.searched = 0
        self.seconds = 0.0

    def reset(self, rules, seat, seed=None):
        if hasattr(self.agent, "reset"):
            self.agent.reset(rules, seat, seed)

    def act(self, observation, view):
        t = time.perf_counter()
        a = self.agent.act(observation, view)
        self.seconds += time.perf_counter() - t
        self.calls += 1
        self.searched += int(observation["action_mask"].sum() > 1)
        return a


def bench(spec: str, preset: str, seconds: float, players: int = 4) -> dict:
    rules = make_rules(preset, num_players=players)
    bot = Timed(make_agent(spec))
    seed, t0 = 0, time.perf_counter()
    while bot.seconds < seconds and time.perf_counter() - t0 < 2 * seconds + 2:
        agents = [bot] + [ExpertAgent() for _ in range(players - 1)]
        play_match(rules, agents, seed=seed)
        seed += 1
    return {"bot": spec, "rules": preset, "decisions": bot.calls, "choices": bot.searched,
            "per_second": bot.calls / bot.seconds,
            "ms_per_choice": 1000 * bot.seconds / max(1, bot.searched)}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bots", nargs="+", default=["random", "greedy", "expert", "mc"])
    p.add_argument("--rules", nargs="+", default=["culo", "tavern"])
    p.add_argument("--seconds", type=float, default=4.0, help="bot time per bot and rules")
    a = p.parse_args(argv)
    print(f"{'bot':8} {'rules':7} {'decisions':>9} {'decisions/s':>12} {'ms/decision with choice':>24}")
    for preset in a.rules:
        for spec in a.bots:
            r = bench(spec, preset, a.seconds)
            print(f"{spec:8} {preset:7} {r['decisions']:9d} {r['per_second']:12.1f} "
                  f"{r['ms_per_choice']:24.2f}", flush=True)


if __name__ == "__main__":
    main()
