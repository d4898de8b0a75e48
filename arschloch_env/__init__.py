"""Arschloch: the rules engine, the PettingZoo AEC environment and the Gymnasium wrapper.

The engine (``arschloch_env.engine``, ``rules``, ``actions``, ``observation``, ...) imports
nothing from gymnasium, pettingzoo or torch; ``env``/``raw_env`` load PettingZoo on first use.
"""

import importlib
import importlib.util

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
    if _is_submodule(name):
        # Loaded on first access (as after an import statement), so that
        # ``arschloch_env.observation`` or ``help(arschloch_env.arschloch)`` work in a fresh
        # interpreter while ``import arschloch_env`` alone still loads no PettingZoo.
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'arschloch_env' has no attribute {name!r}")


def _is_submodule(name: str) -> bool:
    # Dotted or private names are never submodules here; find_spec would import a dotted
    # name's parent and fail with ModuleNotFoundError instead of AttributeError.
    return (name.isidentifier() and not name.startswith("_")
            and importlib.util.find_spec(f"{__name__}.{name}") is not None)
