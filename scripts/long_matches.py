"""How a bundle plays late in matches longer than it trained on, with its match totals as the
observation gives them and as :meth:`agents.bundle.BundleAgent.act` scales them.

The bundle sits in one seat (seat ``m % n`` in match ``m``) against copies of a field bot,
in matches of ``--rounds`` rounds; the rank points per round (n - place) of three stretches
of the match are printed, with a 95% interval over matches, once with the totals unscaled and
once scaled (the same match seeds: the two differ only in what the bundle is shown)::

    python scripts/long_matches.py bots/ppo_vec_tavern_multi --rules tavern --matches 200
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents.base import AgentSpecError, make_agent  # noqa: E402
from agents.bundle import BundleError, load_bundle  # noqa: E402
from agents.runner import play_match  # noqa: E402
from arschloch_env.rules import RulesError, make_rules  # noqa: E402
from train.stats import mean_ci  # noqa: E402


class Unscaled:
    """The bundle shown the totals as the observation has them: its ``policy``, which takes
    observations as they are (``act`` scales the totals of long matches)."""

    uses_view = False

    def __init__(self, path: str):
        self.bundle = load_bundle(path)
        self.name = self.bundle.name

    def reset(self, rules, seat, seed=None):
        self.bundle.reset(rules, seat, seed)

    def act(self, observation, view):
        actions, _ = self.bundle.policy(observation["observation"], observation["action_mask"])
        return int(actions[0])


def stretches(rounds: int) -> list[tuple[int, int]]:
    """The first five rounds, the ten after them, and the last third of the match."""
    spans = [(0, min(5, rounds)), (5, min(15, rounds)), (rounds - rounds // 3, rounds)]
    return [(lo, hi) for lo, hi in dict.fromkeys(spans) if lo < hi]


def rank_points(bot, field: str, rules, matches: int, seed: int) -> np.ndarray:
    """[matches, rounds]: the bundle's rank points in each round of each match (``bot`` is
    reset at each, as the agent protocol has it)."""
    n = rules.num_players
    points = np.zeros((matches, rules.rounds))
    for m in range(matches):
        seat = m % n
        agents = [make_agent(field) for _ in range(n)]
        agents[seat] = bot
        game = play_match(rules, agents, seed=seed + m)
        for r, places in enumerate(game.round_places):
            points[m, r] = n - places[seat]
    return points


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("bundle", help="a bot bundle directory")
    p.add_argument("--rules", default="culo", help="preset (default: culo)")
    p.add_argument("--players", type=int, default=4, help="table size (default: 4)")
    p.add_argument("--field", default="expert", help="the other seats' agent (default: expert)")
    p.add_argument("--rounds", type=int, default=60, help="rounds per match (default: 60)")
    p.add_argument("--matches", type=int, default=200, help="matches (default: 200)")
    p.add_argument("--seed", type=int, default=1000, help="seed of the first match")
    a = p.parse_args(argv)
    if a.rounds < 1 or a.matches < 2:
        p.error("--rounds: at least 1; --matches: at least 2 (an interval needs two)")
    if not Path(a.bundle).is_dir():
        p.error(f"bundle {a.bundle}: no such directory")
    try:  # refused before any game: a preset, table size, field or bundle that cannot play
        rules = make_rules(a.rules, num_players=a.players, rounds=a.rounds)
        make_agent(a.field)
        bots = (("totals unscaled", Unscaled(a.bundle)), ("totals scaled", load_bundle(a.bundle)))
        for _, bot in bots:
            bot.reset(rules, 0)
    except (RulesError, AgentSpecError, BundleError) as exc:
        p.error(str(exc))
    print(f"{a.bundle} against {a.players - 1}x {a.field}, {a.rules}, {a.rounds}-round matches, "
          f"{a.matches} matches from seed {a.seed}; rank points per round (par "
          f"{(a.players - 1) / 2:g}), 95% CI over matches")
    for label, bot in bots:
        points = rank_points(bot, a.field, rules, a.matches, a.seed)
        cells = [f"rounds {lo + 1}-{hi}: {mean_ci(points[:, lo:hi].mean(axis=1)).text()}"
                 for lo, hi in stretches(a.rounds)]
        print(f"{label:16} " + "; ".join(cells), flush=True)


if __name__ == "__main__":
    main()
