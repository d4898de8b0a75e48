"""Evaluation of a policy against fixed fields: a duplicate tournament per field, the bot in
every seat against n-1 copies of the field bot, one round per deal."""

from __future__ import annotations

from typing import Any

from agents.mlp import MLP, MLPAgent


def evaluate_fields(mlp: MLP, rules, fields: list[str], deals: int, seed: int,
                    jobs: int = 1) -> dict[str, dict[str, Any]]:
    """Per field: the greedy policy's rank points per round (n - place) with the 95% CI over
    deals, its advantage over par ((n-1)/2) with CI, and its President and Arschloch rates.
    With one deal the CI bounds are ``None``."""
    from train.tournament import run_tournament

    out = {}
    par = (rules.num_players - 1) / 2
    for field_spec in fields:
        res = run_tournament(rules, [MLPAgent(mlp, sample=False, name="policy"), field_spec],
                             deals=deals, seed=seed, mode="duplicate", jobs=jobs)
        if not res.complete:
            # The tournament stops at Ctrl-C and returns what it has; training must stop too
            # rather than log a partial evaluation and go on.
            raise KeyboardInterrupt
        m = res.metrics["policy"]
        rp = m["rank_points"]
        out[field_spec] = {
            "deals": res.deals_done,
            "rank_points": rp.mean, "ci_low": rp.low, "ci_high": rp.high,
            "advantage": rp.mean - par, "advantage_ci_low": _shifted(rp.low, par),
            "advantage_ci_high": _shifted(rp.high, par),
            "president_rate": m["president"].mean, "arschloch_rate": m["arschloch"].mean,
        }
    return out


def _shifted(bound: float | None, par: float) -> float | None:
    """An interval bound over par; one deal has no interval (``None``)."""
    return None if bound is None else bound - par
