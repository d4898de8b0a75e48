"""The agent protocol and agent specs.

An agent is any object with ``act(observation, view) -> int`` returning a legal action id,
where ``observation`` is the AEC observation dict of its seat (``observation`` and
``action_mask``) and ``view`` the public view of INTERFACES.md. It may have
``reset(rules, seat, seed)`` (rules as the JSON dict), called at the start of every match.
An agent whose ``uses_view`` attribute is ``False`` is handed ``None`` instead of the view,
which saves building it. An agent that knows the very cards of its move (a person who typed
``8h``) may also have ``act_cards(observation, view) -> (action, cards or None)``: the kit's
runner (every command and :func:`agents.runner.agent_step`) then moves those cards, where
``act`` can only name the rank, since the action space has no suits. An agent played by a
person raises :class:`QuitGame` when the person leaves, and has ``interactive = True``: a
tournament then plays in its own process, where the person's terminal is (workers have none).

Agent specs, accepted by every command and API that takes agents:

* a built-in name: ``random``, ``greedy``, ``expert``, ``mc`` (see :data:`BUILTIN`);
* a bundle path: a directory holding an exported bot's ``manifest.json``;
* ``package.module:ClassName``: a user's own class, constructed without arguments.
"""

from __future__ import annotations

import copy
import importlib
import os
import re
import sys
from functools import partial
from pathlib import Path
from typing import Any, Callable, Protocol, runtime_checkable


class AgentSpecError(ValueError):
    """An agent spec that names no built-in bot, bundle or importable class."""


class QuitGame(Exception):
    """The person playing a seat asked to leave (``quit``, Ctrl-D): an agent may raise it from
    ``act``, and every command then stops cleanly, keeping the matches that finished."""


@runtime_checkable
class Agent(Protocol):
    def act(self, observation: dict, view: dict | None) -> int: ...


def _random() -> Any:
    from agents.random_agent import RandomAgent
    return RandomAgent()


def _greedy() -> Any:
    from agents.greedy import GreedyAgent
    return GreedyAgent()


def _expert() -> Any:
    from agents.expert import ExpertAgent
    return ExpertAgent()


def _mc() -> Any:
    from agents.mc import MCAgent
    return MCAgent()


BUILTIN: dict[str, Callable[[], Any]] = {"random": _random, "greedy": _greedy,
                                          "expert": _expert, "mc": _mc}


def register_builtin(name: str, factory: Callable[[], Any]) -> None:
    """Makes ``name`` a built-in agent spec."""
    BUILTIN[name] = factory


class CallableAgent:
    """Wraps a plain function ``f(observation, view) -> int`` as an agent."""

    def __init__(self, fn: Callable[[dict, dict | None], int]):
        self.fn = fn
        self.name = getattr(fn, "__name__", "callable")
        self.uses_view = getattr(fn, "uses_view", True)

    def act(self, observation: dict, view: dict | None) -> int:
        return int(self.fn(observation, view))


_CLASS_SPEC = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")


def _allowed() -> str:
    return (f"allowed: a built-in name ({', '.join(sorted(BUILTIN))}), a bundle directory, "
            f"or package.module:ClassName")


def is_bundle_dir(path: str | Path) -> bool:
    """Whether ``path`` is a bot bundle's directory (it holds ``manifest.json``)."""
    return (Path(path) / "manifest.json").is_file()


def make_agent(spec: Any) -> Any:
    """An agent from a spec string, or the object itself if it already is an agent.

    Raises:
        AgentSpecError: the spec is unknown, the class cannot be imported or made, or the
            object has no ``act`` method.
    """
    if not isinstance(spec, (str, Path)):
        if hasattr(spec, "act"):
            return spec
        if callable(spec):
            return CallableAgent(spec)
        raise AgentSpecError(f"agent {spec!r} has no act(observation, view) method")
    text = str(spec)
    if text in BUILTIN:
        return BUILTIN[text]()
    if not text.strip():
        # Path("") is the working directory, which would be blamed for a missing bundle.
        raise AgentSpecError(f"agent spec {text!r} is empty; {_allowed()}")
    path = Path(text)
    if is_bundle_dir(path):
        from agents.bundle import load_bundle
        return load_bundle(path)
    if ":" in text and not path.exists():
        return _agent_from_class_spec(text)
    if path.is_file() and path.name == "manifest.json":
        raise AgentSpecError(f"agent spec {text!r}: give the bundle directory "
                             f"({path.parent}), not its manifest.json")
    if path.is_file() and path.suffix == ".npz":
        raise AgentSpecError(f"agent spec {text!r}: a policy file (.npz, e.g. a clone) plays "
                             f"only in a ppo-vec run's vec.mix; {_allowed()}")
    if path.is_file():
        raise AgentSpecError(f"agent spec {text!r}: {path} is a file, not a bot bundle "
                             f"directory; {_allowed()}")
    if path.exists():
        raise AgentSpecError(f"agent spec {text!r}: {path} holds no bot bundle "
                             f"(manifest.json missing)")
    if "/" in text or "\\" in text or text.startswith("."):
        raise AgentSpecError(f"agent spec {text!r}: no such bundle directory (a relative path "
                             f"is read from the working directory, {Path.cwd()}); "
                             f"{_allowed()}")
    raise AgentSpecError(f"unknown agent spec {text!r}; {_allowed()}")


def _agent_from_class_spec(text: str) -> Any:
    """The agent of a ``package.module:ClassName`` spec."""
    if not _CLASS_SPEC.fullmatch(text):
        # importlib refuses empty and relative names with ValueError/TypeError, not
        # ImportError, and an unchecked name would end the command in a traceback.
        raise AgentSpecError(f"agent spec {text!r} is not of the form "
                             f"package.module:ClassName (dotted module name, a colon, a class "
                             f"name); {_allowed()}")
    module_name, _, cls_name = text.partition(":")
    try:
        module = import_user_module(module_name)
    except ImportError as exc:
        raise AgentSpecError(f"agent spec {text!r}: cannot import module {module_name!r} "
                             f"({exc})") from None
    except Exception as exc:  # noqa: BLE001 - a user's module failing as it loads
        raise AgentSpecError(f"agent spec {text!r}: importing module {module_name!r} failed: "
                             f"{type(exc).__name__}: {exc}") from exc
    cls = getattr(module, cls_name, None)
    if cls is None:
        raise AgentSpecError(f"agent spec {text!r}: module {module_name!r} has no "
                             f"{cls_name!r}")
    if not isinstance(cls, type):  # never call what is not a class: os:system, os:abort
        raise AgentSpecError(f"agent spec {text!r}: {cls_name!r} of module {module_name!r} is "
                             f"a {type(cls).__name__}, not a class; the spec names an agent "
                             f"class, with act(observation, view)")
    try:
        agent = cls()
    except Exception as exc:  # noqa: BLE001 - any constructor failure is the spec's fault
        raise AgentSpecError(f"agent spec {text!r}: {cls_name}() failed: {exc}") from None
    if not hasattr(agent, "act"):
        raise AgentSpecError(f"agent spec {text!r}: {cls_name} has no act(observation, "
                             f"view) method")
    return agent


def import_user_module(name: str):
    """A user's module, also from the working directory, as ``python -m`` would find it: the
    ``arschloch`` console script does not put the working directory on ``sys.path``."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        cwd = os.getcwd()
        if exc.name != name.partition(".")[0] or cwd in sys.path or "" in sys.path:
            raise
        sys.path.append(cwd)  # last, so that it never shadows an installed module
        return importlib.import_module(name)


def resolve_agents(specs: list[Any]) -> list[Any]:
    """One agent per seat from its spec, failing on the first bad one before any game. An
    object given for several seats plays the first of them; each other gets a copy, since
    every seat's agent is reset with that seat (the agent protocol) and keeps its own state."""
    agents, taken = [], set()
    for spec in specs:
        agent = make_agent(spec)
        agents.append(copy_agent(agent) if id(agent) in taken else agent)
        taken.add(id(agent))
    return agents


def copy_agent(agent: Any) -> Any:
    """An independent copy of an agent object, for another seat than the one it plays.

    Raises:
        AgentSpecError: the object cannot be copied (it holds a lock, a socket, a process).
    """
    try:
        return copy.deepcopy(agent)
    except Exception as exc:  # noqa: BLE001 - whatever a user's object refuses to copy
        raise AgentSpecError(
            f"agent {agent_label(agent)!r} plays several seats, so every seat needs its own "
            f"copy, but it cannot be copied ({type(exc).__name__}: {exc}); give its spec "
            f"(package.module:ClassName) instead, or give it a __deepcopy__") from None


def agent_maker(spec: Any) -> Callable[[], Any]:
    """A function that makes a fresh agent of ``spec`` for one more seat, after making one now
    so that a bad spec fails here.

    A spec by name or class is made anew each time (cheaper than a copy). A bundle is loaded
    once and every seat gets a copy that shares its inference session: loading one costs
    milliseconds, far more than its moves in a match. An agent object is copied.

    Raises:
        AgentSpecError: a bad spec, or an object that cannot be copied.
    """
    agent = make_agent(spec)
    if isinstance(spec, (str, Path)) and (str(spec) in BUILTIN or not is_bundle_dir(spec)):
        return partial(make_agent, spec)
    copy_agent(agent)  # one that cannot be copied fails here, not at its first seat
    return partial(copy_agent, agent)


def agent_label(spec: Any) -> str:
    """A short name of an agent or spec, for records and tables."""
    if isinstance(spec, (str, Path)):
        return str(spec)
    name = getattr(spec, "name", None) or getattr(spec, "__name__", None)
    return str(name or type(spec).__name__)
