"""Playing matches between agents on the engine: the loop every command and env shares."""

from __future__ import annotations

import inspect
import traceback
from typing import Any

import numpy as np

from agents.base import QuitGame, agent_label, resolve_agents
from agents.bundle import BundleError
from arschloch_env.engine import Game, IllegalActionError, player_name
from arschloch_env.observation import Encoder
from arschloch_env.rules import make_rules
from arschloch_env.view import public_view


class AgentError(RuntimeError):
    """An agent returned something that is not a legal action."""


class AgentFailed(RuntimeError):
    """An agent raised an error of its own while choosing a move: the message names the agent
    and its seat, the note holds the agent's traceback as text (so that it survives the trip
    from a tournament's worker process)."""


class WorkerDied(RuntimeError):
    """A worker process (a tournament's games, a training run's environments) ended in the
    middle of the work: a bot's crash, a signal, the system."""


def observation_of(game: Game, encoder: Encoder, seat: int) -> dict:
    """The AEC observation dict of ``seat`` (mask all 0 unless it is the seat to act)."""
    return encoder.observation(game, seat)


def _agent_inputs(agent: Any, game: Game, encoder: Encoder,
                  observation: dict | None) -> tuple[dict, dict | None]:
    """The observation and view the agent of the seat to act is given."""
    seat = game.current
    view = public_view(game, seat) if getattr(agent, "uses_view", True) else None
    if observation is None:
        observation = observation_of(game, encoder, seat)
    return observation, view


def ask(agent: Any, game: Game, encoder: Encoder, observation: dict | None = None) -> int:
    """The action ``agent`` chooses for the seat to act (``observation``: that seat's, if
    the caller has encoded it already).

    Raises:
        AgentFailed: the agent raised an error.
    """
    return call_agent(agent.act, agent, game.current,
                      *_agent_inputs(agent, game, encoder, observation))


def ask_move(agent: Any, game: Game, encoder: Encoder) -> tuple[int, list[str] | None]:
    """The action ``agent`` chooses for the seat to act, with its exact cards when the agent
    names them (``act_cards``, see :mod:`agents.base`), else None: the engine picks them.

    Raises:
        AgentError: ``act_cards`` returned something else than ``(action, cards or None)``.
        AgentFailed: the agent raised an error.
    """
    observation, view = _agent_inputs(agent, game, encoder, None)
    act_cards = getattr(agent, "act_cards", None)
    if act_cards is None:
        return call_agent(agent.act, agent, game.current, observation, view), None
    move = call_agent(act_cards, agent, game.current, observation, view)
    if not (isinstance(move, tuple) and len(move) == 2
            and (move[1] is None or isinstance(move[1], list))):
        raise illegal_choice(agent, game.current, ValueError(
            f"act_cards must return (action, cards or None), got {move!r:.80}"))
    return move


def agent_step(agent: Any, game: Game, encoder: Encoder) -> None:
    """Asks the agent of the seat to act and applies its action (with the cards it names).

    Raises:
        AgentError: the agent's action is not legal (the state is unchanged).
    """
    seat = game.current
    action, cards = ask_move(agent, game, encoder)
    try:
        game.step(action, cards=cards)
    except (IllegalActionError, ValueError) as exc:
        raise illegal_choice(agent, seat, exc) from None


def call_agent(choose, agent: Any, seat: int, observation: dict, view: dict | None):
    """``choose(observation, view)``, an error of the agent's own raised as
    :class:`AgentFailed`. A person leaving (``QuitGame``) is no failure."""
    try:
        return choose(observation, view)
    except (QuitGame, AgentError):
        raise
    # SystemExit too: an agent's sys.exit() would end a command quietly, as if it had finished
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - whatever a user's agent raises
        raise failure(agent, seat, exc) from None


def failure(agent: Any, seat: int, exc: Exception, method: str = "") -> AgentFailed:
    """The :class:`AgentFailed` for ``agent`` in ``seat`` having raised ``exc`` (in
    ``method``, where not while choosing a move), its traceback as a note."""
    during = f" in {method}" if method else ""
    failed = AgentFailed(f"{who(agent, seat)} raised {type(exc).__name__}{during}: {exc}")
    failed.add_note("".join(traceback.format_exception(exc)).rstrip())
    return failed


def who(agent: Any, seat: int) -> str:
    """``agent 'NAME' in player_N``, for the messages about an agent's move."""
    return f"agent {getattr(agent, 'name', type(agent).__name__)!r} in {player_name(seat)}"


def illegal_choice(agent: Any, seat: int, exc: Exception) -> AgentError:
    """The error for ``agent`` in ``seat`` having chosen an action that ``exc`` refused."""
    return AgentError(f"{who(agent, seat)} chose an illegal action: {exc}")


AGENT_STREAM = 0x5EA7
"""Keeps the agents' seeds apart from the other streams drawn from a match seed."""


def agent_seed(match_seed: int, seat: int) -> int:
    """The ``reset`` seed of the agent in ``seat``: a hash of the match seed, so that no
    agent can work its way back to the match seed and from it redeal every hand."""
    return int(np.random.SeedSequence([match_seed, seat, AGENT_STREAM]).generate_state(1)[0])


def reset_agents(agents: list[Any], rules: dict, seed: int | None) -> None:
    """Calls ``reset(rules, seat, seed)`` on every agent that has it, with per-seat seeds.

    Raises:
        AgentFailed: an agent's ``reset`` raised an error, or does not take those three
            arguments.
    """
    for seat, agent in enumerate(agents):
        reset = getattr(agent, "reset", None)
        if reset is None:
            continue
        try:
            inspect.signature(reset).bind(rules, seat, seed)
        except TypeError as exc:
            raise AgentFailed(f"{who(agent, seat)}: its reset{inspect.signature(reset)} "
                              f"cannot be called as reset(rules, seat, seed), as every "
                              f"agent's reset is ({exc})") from None
        except ValueError:  # a builtin whose signature cannot be read: call it and see
            pass
        try:
            reset(rules, seat, None if seed is None else agent_seed(seed, seat))
        except (QuitGame, AgentError, BundleError):  # a bundle refusing the rules says why
            raise
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - as in choosing a move
            raise failure(agent, seat, exc, "reset") from None


def play_match(rules, agents: list[Any], seed: int | None = None, match_index: int = 0,
               record: bool = False, labels: list[str] | None = None) -> Game:
    """Plays one whole match with one agent per seat and returns the finished game.

    ``agents`` holds agents or agent specs (a built-in name, a bundle path,
    ``package.module:ClassName``), one per seat. The record names each seat's agent by its
    ``labels`` entry, or by the agent's label (:func:`~agents.base.agent_label`).
    """
    rules = make_rules(rules)
    if len(agents) != rules.num_players:
        raise ValueError(f"{len(agents)} agents for {rules.num_players} seats; give one agent "
                         f"per seat")
    labels = labels or [agent_label(a) for a in agents]
    agents = resolve_agents(agents)
    game = Game(rules, seed=seed, match_index=match_index, record=record, auto_pass=True,
                agents={player_name(i): l for i, l in enumerate(labels)})
    encoder = Encoder(game.R)
    reset_agents(agents, game.rules.to_dict(), seed)
    while not game.is_over:
        agent_step(agents[game.current], game, encoder)
    return game
