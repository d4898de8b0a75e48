"""The PettingZoo environment under its versioned name, imported the way PettingZoo's own are:
``from arschloch_env import arschloch_v0; env = arschloch_v0.env(rules="culo", num_players=4)``."""

from arschloch_env.arschloch import env, raw_env

__all__ = ["env", "raw_env"]
