"""A single-seat Gymnasium environment for sb3-contrib's MaskablePPO.

The learner holds one seat (fixed, or drawn per episode); the other seats are played by
agents (any object with ``act(observation, view)``, a plain callable of the same signature,
or an agent spec such as ``"random"``). One episode is one match; the reward is the learner's
own round-end reward (as in the AEC env), summed over the opponents' moves between two of its
decisions (rounds that end before its first decision are paid with its first step), so that
an episode's rewards sum to its result of the match. The observation is the AEC env's dict,
the vector with its int8 ``action_mask`` (INTERFACES.md's action encoding), which Gymnasium's
``action_space.sample(mask)`` takes; ``mask_in_observation=False`` gives the vector alone, as
SB3's ``MlpPolicy`` needs, with the mask from ``action_masks()`` (bool), a method of the env
itself, so it works through ``SubprocVecEnv``. ``info["action_mask"]`` has it too (int8).

SB3's and Gymnasium's checkers sample actions without a mask, so an illegal action here is void
as the rules say: nothing changes, the same seat acts again, and the step returns
``illegal_penalty`` with ``info["illegal"] = True`` (or raises, with ``on_illegal="raise"``).
A policy without the mask may pick the same illegal action over and over on the same
observation: ``max_illegal`` void actions in a row truncate the episode (an unfinished match,
which the record leaves out; a masked policy never meets it).
An id outside the action space is no move at all: it raises
``arschloch_env.actions.ActionError`` either way.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from arschloch_env.arschloch import (
    REWARD_MODES, RESET_OPTIONS, _next_match_index, _refuse_if_closed,
    check_reset_options, observation_bounds, observation_dict_space, place_reward,
)
from arschloch_env.engine import Game, IllegalActionError, player_name
from arschloch_env.observation import Encoder
from arschloch_env.records import RecordWriter, RefusesCopyWhileRecording
from arschloch_env.render import render_text
from arschloch_env.rules import Rules, is_integer, make_rules, players_or_default

OpponentSampler = Callable[[np.random.Generator, int], list]
# The env names the agents in the game record itself, so of the AEC env's reset options only
# this one.
SINGLE_RESET_OPTIONS = {"match_index": RESET_OPTIONS["match_index"]}
LEARNER_LABEL = "learner"
"""The agent name of the learner's seat in the game record."""


def _refuse_unsupported(agents: list, labels: list[str], rules: Rules) -> None:
    """Refuses, when the env is made rather than at its first reset, an opponent that
    declares it cannot play the rules (a bundle of another preset)."""
    from arschloch_env.cli import CliError, check_support
    try:
        check_support(agents, labels, rules)
    except CliError as exc:
        raise ValueError(f"opponents: {exc}") from None


class SingleSeatEnv(RefusesCopyWhileRecording, gym.Env):
    """Args:
        rules, num_players, **overrides: the rules (see :func:`make_rules`).
        seat: the learner's seat, or ``None`` to draw it uniformly per episode.
        opponents: one agent/spec for every other seat, or a list of ``n-1`` of them
            (clockwise from the learner). Default: random legal play.
        opponent_sampler: instead of ``opponents`` (give one or the other), a function
            ``(rng, k) -> k agents`` called at every reset (for leagues).
        reward: ``"place"`` or ``"points"``.
        on_illegal: ``"penalty"`` (void, penalised) or ``"raise"``.
        illegal_penalty: reward of a void illegal action (at most 0).
        max_illegal: void illegal actions in a row that truncate the episode (``None``:
            never; a deterministic policy without the mask could then loop forever).
        record_path: write every finished match as a game record there (closed by
            ``close()``, or when the env is dropped or the interpreter exits), with the
            learner's seat named ``"learner"`` and each opponent by its spec; a match cut short
            by ``max_illegal`` is left out, and its index with it.
        mask_in_observation: the observation is the AEC env's dict, the vector with its int8
            ``action_mask`` (as INTERFACES.md's action encoding has it; the default), or with
            ``False`` the vector alone, which SB3's ``MlpPolicy`` with ``action_masks()``
            needs.
    """

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 1}

    def __init__(self, rules: Rules | str | dict = "culo", num_players: int | None = None,
                 seat: int | None = None, opponents: Any = None,
                 opponent_sampler: OpponentSampler | None = None, reward: str = "place",
                 on_illegal: str = "penalty", illegal_penalty: float = -0.1,
                 render_mode: str | None = None, record_path: str | None = None,
                 mask_in_observation: bool = True, max_illegal: int | None = 100,
                 **overrides: Any):
        from agents.base import agent_label, resolve_agents
        num_players = players_or_default(rules, num_players, overrides)
        self.rules = make_rules(rules, num_players, **overrides)
        n = self.rules.num_players
        if seat is not None and not (is_integer(seat) and 0 <= seat < n):
            raise ValueError(f"seat {seat!r} is not a seat of a {n}-player table (0..{n - 1} "
                             f"or None for a random seat)")
        if reward not in REWARD_MODES:
            raise ValueError(f"reward {reward!r}; allowed: {', '.join(REWARD_MODES)}")
        if on_illegal not in ("penalty", "raise"):
            raise ValueError(f"on_illegal {on_illegal!r}; allowed: penalty, raise")
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise RenderModeError(f"render_mode {render_mode!r}; allowed: None, ansi, human")
        if max_illegal is not None and not (is_integer(max_illegal) and max_illegal >= 1):
            raise ValueError(f"max_illegal {max_illegal!r}; allowed: a whole number >= 1 (void "
                             f"illegal actions in a row that truncate the episode) or None")
        self.fixed_seat = None if seat is None else int(seat)
        self.reward_mode = reward
        self.on_illegal = on_illegal
        self.illegal_penalty = _penalty("illegal_penalty", illegal_penalty)
        self.max_illegal = None if max_illegal is None else int(max_illegal)
        self.render_mode = render_mode
        if opponent_sampler is not None and opponents is not None:
            raise ValueError("give opponents or opponent_sampler, not both: the sampler draws "
                             "every opponent at each reset")
        self.opponent_sampler = opponent_sampler
        if opponent_sampler is None:
            opponents = "random" if opponents is None else opponents
            specs = opponents if isinstance(opponents, (list, tuple)) else [opponents] * (n - 1)
            if len(specs) != n - 1:
                raise ValueError(f"opponents: {len(specs)} opponents for {n - 1} other seats; "
                                 f"give one agent or spec for every other seat, or a list of "
                                 f"{n - 1} (one per seat, in seat order after the learner's)")
            self.opponents = resolve_agents(specs)
            self.opponent_labels = [agent_label(s) for s in specs]
            _refuse_unsupported(self.opponents, self.opponent_labels, self.rules)
        else:
            self.opponents, self.opponent_labels = [], []
        self.encoder = Encoder(self.rules.num_ranks)
        self.num_actions = 1 + 6 * self.rules.num_ranks
        if not isinstance(mask_in_observation, (bool, np.bool_)):
            raise ValueError(f"mask_in_observation {mask_in_observation!r} is not a bool; "
                             f"allowed: True, False")
        self.mask_in_observation = mask_in_observation = bool(mask_in_observation)
        if mask_in_observation:
            self.observation_space = observation_dict_space(self.encoder, self.rules)
        else:
            low, high = observation_bounds(self.encoder, self.rules)
            self.observation_space = spaces.Box(low=low, high=high, dtype=np.float32)
        self.action_space = spaces.Discrete(self.num_actions)
        self.match_index = -1
        self.game: Game | None = None
        self.seat = 0
        self.illegal_count = 0
        self._illegal_run = 0
        self._writer = (RecordWriter(record_path).close_with(self) if record_path is not None
                        else None)
        self._closed = False
        self._opponent_error: str | None = None
        self._carry = 0.0  # rewards before the learner's first decision, paid with its first step

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Starts the next match at the learner's first decision. A match in which the learner
        has none (every move of its seat a forced pass: rare, in single rounds at 5 or 6
        players) is played through and written to the record, with no episode of its own:
        ``info["skipped_matches"]`` counts them. Rewards of the rounds that end before the
        first decision (``info["reward_before_first_move"]``) are paid with the first step,
        so that an episode's rewards sum to the learner's result of the match."""
        _refuse_if_closed(self._writer, self._closed)
        check_reset_options(options, SINGLE_RESET_OPTIONS)
        super().reset(seed=seed)
        self.match_index = _next_match_index(self.match_index, seed, options)
        # Counted per episode, so that a seeded reset reproduces every step's info.
        self.illegal_count = self._illegal_run = 0
        skipped = 0
        while True:
            reward = self._start_match()
            if not self.game.is_over:
                break
            if self._writer is not None:
                self._writer.write_match(self.game.events)
            skipped += 1
            self.match_index += 1
        self._carry = reward
        if self.render_mode == "human":
            self.render()
        return self._obs(), {"action_mask": self._info_mask(), "seat": self.seat,
                             "reward_before_first_move": reward, "skipped_matches": skipped}

    def _start_match(self) -> float:
        """Seats the learner and its opponents in match ``match_index`` and plays up to the
        learner's first decision (or the match end); returns the learner's rewards so far."""
        from agents.base import agent_label, resolve_agents
        from agents.runner import reset_agents
        n = self.rules.num_players
        # The learner's seat changes with the game only: a sampler that fails leaves the
        # current episode as it was.
        seat = (self.fixed_seat if self.fixed_seat is not None
                else int(self.np_random.integers(n)))
        if self.opponent_sampler is not None:
            drawn = list(self.opponent_sampler(self.np_random, n - 1))
            if len(drawn) != n - 1:
                raise ValueError(f"opponent_sampler returned {len(drawn)} agent(s) for the "
                                 f"{n - 1} other seats; it is called as sampler(rng, k) and "
                                 f"must return k")
            self.opponents = resolve_agents(drawn)
            self.opponent_labels = [agent_label(a) for a in drawn]
        game_seed = int(self.np_random.integers(2**31 - 1))
        self.seat = seat
        labels = {(self.seat + 1 + i) % n: label for i, label in enumerate(self.opponent_labels)}
        labels[self.seat] = LEARNER_LABEL
        self.game = Game(self.rules, seed=game_seed, match_index=self.match_index,
                         record=self._writer is not None, auto_pass=True,
                         agents={player_name(s): labels[s] for s in range(n)})
        self.seat_agents = {(self.seat + 1 + i) % n: a for i, a in enumerate(self.opponents)}
        reset_agents([self.seat_agents.get(s) for s in range(n)], self.rules.to_dict(),
                     game_seed)
        self._opponent_error = None
        return self._play_opponents()

    def step(self, action):
        if self.game is None:
            raise RuntimeError("call reset() before step()")
        g = self.game
        if g.is_over:
            raise RuntimeError("the match is over; call reset()")
        _refuse_if_closed(self._writer, self._closed)
        self._require_learner_to_act()
        try:
            g.step(action)
        except IllegalActionError:
            if self.on_illegal == "raise":
                raise
            self.illegal_count += 1
            self._illegal_run += 1
            truncated = self.max_illegal is not None and self._illegal_run >= self.max_illegal
            return self._obs(), self.illegal_penalty, False, truncated, {
                "action_mask": self._info_mask(), "illegal": True,
                "illegal_count": self.illegal_count}
        self._illegal_run = 0
        reward, self._carry = self._carry + self._learner_reward(), 0.0
        reward += self._play_opponents()
        terminated = g.is_over
        info = {"action_mask": self._info_mask(), "illegal": False,
                "illegal_count": self.illegal_count}
        if terminated:
            info["places"] = g.last_places
            info["totals"] = list(g.totals)
            info["winners"] = list(g.winners)
            if self._writer is not None:
                self._writer.write_match(g.events)
        if self.render_mode == "human":
            self.render()
        return self._obs(), reward, terminated, False, info

    def action_masks(self) -> np.ndarray:
        """Bool mask of the learner's legal actions (all False once the match is over)."""
        g = self.game
        if g is None or g.is_over:
            return np.zeros(self.num_actions, dtype=bool)
        self._require_learner_to_act()
        return g.legal_mask().astype(bool)

    def _info_mask(self) -> np.ndarray:
        return self.action_masks().astype(np.int8)  # as the observation's, for sample(mask)

    def render(self) -> str | None:
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi' or "
                            "'human' to SingleSeatEnv")
            return None
        if self.game is None:
            return None
        text = render_text(self.game, seat=self.seat)
        if self.render_mode == "human":
            print(text + "\n")
            return None
        return text

    def close(self) -> None:
        """Finalises the game record; an env with ``record_path`` then plays no more."""
        if self._writer is not None:
            self._writer.close()
            self._closed = True

    # -- internals ----------------------------------------------------------------------------

    def _obs(self) -> np.ndarray | dict[str, np.ndarray]:
        if self.mask_in_observation:
            return self.encoder.observation(self.game, self.seat)
        return self.encoder.observe(self.game, self.seat)

    def _learner_reward(self) -> float:
        g = self.game
        if g.last_places is None:
            return 0.0
        place = g.last_places[self.seat]
        return place_reward(place, g.n) if self.reward_mode == "place" else float(g.n - place)

    def _play_opponents(self) -> float:
        """Lets the other seats act until the learner is to act or the match is over."""
        from agents.runner import agent_step
        g, reward = self.game, 0.0
        while not g.is_over and g.current != self.seat:
            try:
                agent_step(self.seat_agents[g.current], g, self.encoder)
            except BaseException as exc:
                self._opponent_error = f"{type(exc).__name__}: {exc}"
                raise
            reward += self._learner_reward()
        return reward

    def _require_learner_to_act(self) -> None:
        """Refuses to go on after an opponent failed: its seat is still to act, and an action
        or a mask now would be that opponent's, not the learner's."""
        g = self.game
        if g is not None and not g.is_over and g.current != self.seat:
            raise RuntimeError(
                f"the episode was broken by the error of the opponent in "
                f"{player_name(g.current)} ({self._opponent_error or 'see the earlier error'}); "
                f"call reset() to start a new episode")


class RenderModeError(ValueError, TypeError):
    """A render mode the env does not draw. Also a ``TypeError``, as an unexpected argument
    is: SB3's ``make_vec_env(ENV_ID)`` passes ``render_mode="rgb_array"`` and makes the env
    again without it only on a ``TypeError``."""


def _penalty(name: str, value: Any) -> float:
    """A reward of at most 0: a positive one would pay for illegal moves."""
    is_number = (isinstance(value, (int, float, np.integer, np.floating))
                 and not isinstance(value, bool))
    if not (is_number and math.isfinite(value) and value <= 0):
        raise ValueError(f"{name} {value!r} is not a penalty; allowed: a finite number of at "
                         f"most 0, such as -0.1 (the reward of an illegal move)")
    return float(value)


ENV_ID = "Arschloch-v0"
"""The id :func:`gymnasium.make` knows :class:`SingleSeatEnv` by once this module is imported;
``gymnasium.make("arschloch_env.single:Arschloch-v0", rules="tavern", num_players=4)`` imports
it first (Gymnasium has no other way to find a package's envs)."""

if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point="arschloch_env.single:SingleSeatEnv")
