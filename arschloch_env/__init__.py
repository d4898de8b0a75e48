"""Arschloch: the rules engine, the PettingZoo AEC environment and the Gymnasium wrapper.

The engine (``arschloch_env.engine``, ``rules``, ``actions``, ``observation``, ...) imports
nothing from gymnasium, pettingzoo or torch; ``env``/``raw_env`` load PettingZoo on first use.
"""

import importlib
import importlib.util
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from arschloch_env.arschloch import env, raw_env
    from arschloch_env.engine import Game, IllegalActionError
    from arschloch_env.rules import PRESETS, Rules, RulesError, make_rules
    from arschloch_env.single import SingleSeatEnv

__all__ = ["Game", "IllegalActionError", "PRESETS", "Rules", "RulesError", "make_rules", "env",
           "raw_env", "SingleSeatEnv"]
__version__ = "0.1.0"

_HOME = {"Game": "engine", "IllegalActionError": "engine", "PRESETS": "rules", "Rules": "rules",
         "RulesError": "rules", "make_rules": "rules", "env": "arschloch", "raw_env": "arschloch",
         "SingleSeatEnv": "single"}
"""The module of each name above. Each loads on first use, so that ``import arschloch_env``
loads nothing: the ``arschloch`` command's guard against a Ctrl-C while it starts
(:mod:`arschloch_env.launch`) then covers numpy and the engine too."""


def __getattr__(name: str):
    if name in _HOME:
        return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    if _is_submodule(name):
        # Loaded on first access (as after an import statement), so that
        # ``arschloch_env.observation`` or ``help(arschloch_env.arschloch)`` work in a fresh
        # interpreter while ``import arschloch_env`` alone still loads no PettingZoo.
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'arschloch_env' has no attribute {name!r}")


def __dir__() -> list[str]:
    # the lazy names too, so that tab completion (and dir()) offers them before first use
    return sorted({*globals(), *__all__})


def _is_submodule(name: str) -> bool:
    # Dotted or private names are never submodules here; find_spec would import a dotted
    # name's parent and fail with ModuleNotFoundError instead of AttributeError.
    return (name.isidentifier() and not name.startswith("_")
            and importlib.util.find_spec(f"{__name__}.{name}") is not None)
