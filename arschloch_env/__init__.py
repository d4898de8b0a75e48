"""Arschloch: the rules engine, the PettingZoo AEC environment and the Gymnasium wrapper.

The engine (``arschloch_env.engine``, ``rules``, ``actions``, ``observation``, ...) imports
nothing from gymnasium, pettingzoo or torch; ``env``/``raw_env`` load PettingZoo on first use.
"""

from arschloch_env.engine import Game, IllegalActionError
from arschloch_env.rules import PRESETS, Rules, RulesError, make_rules

__all__ = ["Game", "IllegalActionError", "PRESETS", "Rules", "RulesError", "make_rules", "env",
           "raw_env", "SingleSeatEnv"]
__version__ = "0.1.0"


def __getattr__(name: str):
    if name in ("env", "raw_env"):
        from arschloch_env import arschloch
        return getattr(arschloch, name)
    if name == "SingleSeatEnv":
        from arschloch_env.single import SingleSeatEnv
        return SingleSeatEnv
    raise AttributeError(f"module 'arschloch_env' has no attribute {name!r}")
