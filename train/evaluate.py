"""Evaluation of a policy against fixed fields: duplicate deals, the bot in every seat."""

from __future__ import annotations

from typing import Any

from agents.mlp import MLP, MLPAgent


def evaluate_fields(mlp: MLP, rules, fields: list[str], deals: int, seed: int,
                    jobs: int = 1) -> dict[str, dict[str, Any]]:
    """Rank points per round (n - place) of the greedy policy against n-1 copies of each
    field, over ``deals`` duplicate deals, with 95% CIs over deals."""
    from train.tournament import run_tournament

    out = {}
    for field_spec in fields:
        res = run_tournament(rules, [MLPAgent(mlp, sample=False, name="policy"), field_spec],
                             deals=deals, seed=seed, mode="duplicate", jobs=jobs,
                             progress=False)
        out[field_spec] = res.candidate_summary()
    return out
