"""A Stable-Baselines3 ``VecEnv`` on the batched engine: one learner seat in each of B games.

| | |
|---|---|
| Import | `from arschloch_env.vector_env import ArschlochVecEnv` |
| Envs | `num_envs` games of one :class:`~arschloch_env.vector.VectorGame` |
| Observation | float32 (413,) or (593,), the AEC observation vector of the learner's seat |
| Action | Discrete(1 + 6R); `env_method("action_masks")` / `get_action_masks(env)` give the masks |
| Reward | the learner's round-end rewards (`"place"` or `"points"`), as the AEC env |
| Episode | one match; the game restarts by itself (SB3's auto-reset) |

```python
from sb3_contrib import MaskablePPO
env = ArschlochVecEnv("culo", num_players=4, num_envs=256, seed=0)
# minibatches of 4,096 rows: SB3's default of 64 makes the update, not the env, take the time
# (about 15 minutes for these samples on 2 cores, against 8 s)
MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=4096, n_epochs=4).learn(100_000)
```

The learner holds ``seat`` in every game, or with ``seat=None`` a seat drawn per match and
game. The other seats are played by ``opponent``: ``"random"`` (uniform legal moves, drawn in
the kernels), a callable ``opponent(obs, mask) -> actions`` on batches (float32 [k, D], int8
[k, A] -> ints [k]) of the games where an opponent is to act, e.g. a frozen policy, or an agent
(an object with ``act``, or its spec: a built-in name, a bundle path, ``package.module:Class``).
An agent whose class defines a batched method ``policy(observations, masks) -> (actions,
logits)`` and reads no view (``uses_view = False``; a bundle) plays every opponent seat as one
object, its whole batch in one call, so it must keep no state between moves (it is reset as
seat 0 when the env is made and at each ``reset()`` that follows ``seed()``, with a seed drawn
from the env's, so that a seeded env replays one that samples). Any other agent (``greedy``,
``expert``, ``mc``, a class of your own) gets its own copy for every opponent seat of every
game, reset with its seat at the start of every match, as the agent protocol has it, and is
asked row by row at Python speed; one that reads the public view gets it from a reference
game per table that follows the batched one move for move (:class:`MirroredOpponent`). An
action an agent returns that is not a legal id raises :class:`~agents.runner.AgentError`
naming it and its seat, and the env then refuses to step until ``reset()``. Forced passes are
applied by the engine, so every observation returned is a real decision.

A step applies the learner's actions, then lets the opponents move in every game until the
learner is to act again. ``rewards[i]`` sums the learner's rewards in between. When game
``i``'s match ends, ``dones[i]`` is true, ``infos[i]`` holds ``terminal_observation`` (the
learner's last observation of the match: the engine moves on to the next match at once, so
there is no later one), ``totals``, ``winners`` and ``seat``; the returned observation is the
learner's first decision of the next match, and rewards that fall in the next match before it
are paid with the next step. A match in which the learner has no decision at all (every move of
its seat a forced pass; rare, in single rounds at 5 or 6 players) is played through with no
episode of its own: its rewards are dropped and ``infos[i]["skipped_matches"]`` counts it.
"""

from __future__ import annotations

import inspect
import weakref
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from gymnasium import spaces
try:
    from stable_baselines3.common.vec_env import VecEnv
except ModuleNotFoundError as exc:  # the base install has the engine and the envs, not SB3
    missing = (exc.name or "stable_baselines3").partition(".")[0]
    raise ModuleNotFoundError(f"ArschlochVecEnv is a stable-baselines3 VecEnv: {missing} is "
                              f"not installed; install the training extra, pip install -e "
                              f"'.[train]' (VectorGame, the batched engine, needs no extra)",
                              name=missing) from None

from arschloch_env.arschloch import observation_bounds
from arschloch_env.engine import Game, player_name
from arschloch_env.observation import Encoder
from arschloch_env.rules import Rules, is_integer
from arschloch_env.single import LEARNER_LABEL
from arschloch_env.vector import VectorActionError, VectorGame, action_array, check_seed
from arschloch_env.view import public_view

Opponent = Callable[[np.ndarray, np.ndarray], np.ndarray]


class MirroredOpponent:
    """An agent played row by row: per game a reference :class:`~arschloch_env.engine.Game`
    that follows the batched one move for move (the batched engine reproduces the reference:
    ``tests/test_vector.py``) and gives the public view and the legality check, and a fresh
    copy of the agent in every opponent seat, reset with its seat at the start of every
    match."""

    def __init__(self, make: Callable[[], Any], rules: Rules):
        self.make = make
        self.rules = rules
        self.mirrors: dict[int, Game] = {}
        self.agents: dict[int, list[Any]] = {}

    def start(self, game: int, seed: int, match_index: int, learner: int) -> None:
        """Game ``game`` begins the match with ``seed`` and ``match_index``."""
        from agents.runner import reset_agents
        self.mirrors[game] = Game(self.rules, seed=seed, match_index=match_index,
                                  auto_pass=True)
        agents = [None if s == learner else self.make() for s in range(self.rules.num_players)]
        reset_agents(agents, self.rules.to_dict(), seed)
        self.agents[game] = agents

    def act(self, game: int, obs: np.ndarray, mask: np.ndarray) -> int:
        """The legal action of the agent to act in ``game``.

        Raises:
            AgentError: the agent chose something else.
            AgentFailed: the agent raised an error.
        """
        from agents.runner import call_agent, illegal_choice
        mirror = self.mirrors[game]
        seat = mirror.current
        agent = self.agents[game][seat]
        view = public_view(mirror, seat) if getattr(agent, "uses_view", True) else None
        action = call_agent(agent.act, agent, seat, {"observation": obs, "action_mask": mask},
                            view)
        try:
            return mirror.check(action)
        except ValueError as exc:  # ActionError, IllegalActionError
            raise illegal_choice(agent, seat, exc) from None

    def follow(self, game: int, action: int) -> None:
        self.mirrors[game].step(int(action))


def batched_opponent(opponent: Any,
                     rules: Rules) -> str | Opponent | MirroredOpponent | SharedOpponent:
    """``"random"``, a batched callable, for an agent with a batched ``policy`` a
    :class:`SharedOpponent`, for any other agent a :class:`MirroredOpponent` (see the module
    docstring).

    Raises:
        ValueError: an unknown spec, or an agent that does not play these rules.
    """
    if isinstance(opponent, str) and opponent == "random":
        return opponent
    if callable(opponent) and not hasattr(opponent, "act"):
        return opponent
    from agents.base import AgentSpecError, agent_maker, make_agent

    try:
        agent = make_agent(opponent) if isinstance(opponent, (str, Path)) else opponent
        if not callable(getattr(agent, "act", None)):
            raise ValueError(f"opponent {opponent!r}: expected 'random', a callable (obs, "
                             f"mask) -> actions, or an agent (spec)")
        if has_batched_policy(agent):
            return SharedOpponent(agent, rules)
        return MirroredOpponent(agent_maker(opponent), rules)
    except AgentSpecError as exc:
        raise ValueError(f"opponent: {exc}") from None


def has_batched_policy(agent: Any) -> bool:
    """Whether ``agent``'s class defines a method ``policy(observations, masks)`` and reads
    no view (``uses_view = False``), as a bundle does. An attribute that happens to be named
    ``policy`` (a network an agent keeps, say), or a helper of that name on an agent that reads
    the view, does not count: that agent is asked through ``act``, and reset every match, like
    any other."""
    if getattr(agent, "uses_view", True) is not False:
        return False
    method = getattr(agent, "policy", None)
    if not inspect.ismethod(method) or not callable(getattr(type(agent), "policy", None)):
        return False
    try:
        inspect.signature(method).bind(None, None)
    except (TypeError, ValueError):
        return False
    return True


class SharedOpponent:
    """An agent with a batched ``policy`` (a bundle), one object for every opponent seat,
    asked for the rows of a whole batch; reset when made, and again with a seed drawn from the
    env's whenever the env is seeded, so that a seeded env replays one that samples exactly."""

    def __init__(self, agent: Any, rules: Rules):
        self.agent = agent
        self.rules = rules
        self.reset(None)  # a bundle refuses rules it was not made for

    def reset(self, seed: int | None) -> None:
        if callable(getattr(self.agent, "reset", None)):
            self.agent.reset(self.rules.to_dict(), 0, seed)

    def __call__(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return self.agent.policy(obs, mask)[0]


class ArschlochVecEnv(VecEnv):
    """Args:
        rules, num_players, **overrides: the rules (see :class:`VectorGame`).
        num_envs: games stepped together.
        seed: seeds the games (as ``VectorGame``) and the seat draws.
        seat: the learner's seat in every game, or ``None`` for a seat drawn per match.
        opponent: ``"random"``, a batched callable ``(obs, mask) -> actions``, or an agent
            (or agent spec); one that reads the public view plays at Python speed.
        reward: ``"place"`` or ``"points"``.
        threads, record_path, record_games: passed to :class:`VectorGame`; a record names
            the learner's seat ``"learner"`` and the others by the opponent's label.
    """

    metadata = {"render_modes": []}
    render_mode = None

    def __init__(self, rules: Rules | str | dict = "culo", num_players: int | None = None,
                 num_envs: int = 64, seed: int | None = 0, seat: int | None = None,
                 opponent: str | Opponent = "random", reward: str = "place", threads: int = 1,
                 record_path: str | None = None, record_games: Sequence[int] = (),
                 **overrides: Any):
        if "num_games" in overrides:
            raise TypeError(f"ArschlochVecEnv takes num_envs, the number of games stepped "
                            f"together, not num_games (VectorGame's name for it); got "
                            f"num_games={overrides['num_games']!r}")
        if not is_integer(num_envs) or num_envs < 1:
            raise ValueError(f"num_envs {num_envs!r}: must be an integer >= 1 (the number of "
                             f"games stepped together)")
        self.game = VectorGame(rules, num_players, num_envs, seed=seed, record_path=record_path,
                               record_games=record_games, reward=reward, threads=threads,
                               **overrides)
        self.rules = self.game.rules
        self.fixed_seat = self._checked_seat(seat)
        self.opponent = batched_opponent(opponent, self.rules)
        from agents.base import agent_label
        self.opponent_label = agent_label(opponent)
        if record_path is not None:  # the labels are the record's; a recording env is not
            # pickled, and a bound method would make a cycle that keeps the record writer
            # open after the env is dropped, until the garbage collector runs
            labels = weakref.WeakMethod(self._agent_labels)
            self.game.agent_labels = lambda game: labels()(game)
        self._seat_rng = np.random.default_rng(seed)
        self._reseed_opponent(seed)
        self._next_seed = None
        self._actions: np.ndarray | None = None
        self._broken: str | None = None  # an opponent's error, until the next reset()
        self._obs: np.ndarray | None = None  # the learner's, from reset() on
        self._mask: np.ndarray | None = None
        low, high = observation_bounds(Encoder(self.game.R), self.rules)
        super().__init__(num_envs, spaces.Box(low=low, high=high, dtype=np.float32),
                         spaces.Discrete(self.game.num_actions))
        self.seats = np.zeros(num_envs, np.int64)
        self._carry = np.zeros(num_envs, np.float32)
        self._rows = np.arange(num_envs)

    # -- VecEnv API ---------------------------------------------------------------------------

    def reset(self) -> np.ndarray:
        seed, self._next_seed = self._next_seed, None
        if seed is not None:
            self._seat_rng = np.random.default_rng(seed)
            self._reseed_opponent(seed)
        obs, mask = self.game.reset(seed=seed)
        self._broken, self._actions = None, None
        self.seats = self._draw_seats(self.num_envs)
        self._start_mirrors(self._rows)
        self._carry[:] = 0.0
        # rewards before the learner's first decision belong to its first step
        ended = np.ones(self.num_envs, bool)
        episode = np.zeros(self.num_envs, np.float32)
        infos: list[dict] = [{} for _ in range(self.num_envs)]  # matches skipped meanwhile
        obs, mask = self._play_opponents(obs, mask, ended, infos, episode, None)
        self._obs, self._mask = obs, mask
        self.reset_infos = [{**info, "seat": int(s)} for info, s in zip(infos, self.seats)]
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        """Takes one action id per game, along the first axis (shape [num_envs], or
        [num_envs, 1] as a policy may give them).

        Raises:
            VectorActionError: another shape (flattening one of the same size would hand
                games each other's actions); the env is unchanged.
        """
        n = self.num_envs
        a = action_array(actions, n)
        if a.size != n or (a.ndim and a.shape[0] != n):
            raise VectorActionError(f"actions: expected shape ({n},), one action id per game, "
                                    f"got shape {a.shape}")
        self._actions = a.reshape(n)

    def step_wait(self):
        self._check_reset("step()")
        if self._actions is None:
            raise RuntimeError("call step_async() before step_wait()")
        if self._broken is not None:
            raise RuntimeError(f"the opponents could not move on after an error "
                               f"({self._broken}); call reset() to start new matches")
        actions = self._actions
        last_obs = self._obs
        obs, mask, rew, done = self.game.step(actions)  # refuses illegal actions, unchanged
        self._actions = None
        episode = self._carry.copy()
        self._carry[:] = 0.0
        ended = np.zeros(self.num_envs, bool)
        infos: list[dict] = [{} for _ in range(self.num_envs)]
        episode += rew[self._rows, self.seats]
        self._ended(done, ended, infos, last_obs)
        self._follow(actions, self._rows, done)
        obs, mask = self._play_opponents(obs, mask, ended, infos, episode, last_obs)
        self._obs, self._mask = obs, mask
        return obs, episode, ended, infos

    def close(self) -> None:
        self.game.close()

    def get_images(self) -> Sequence[np.ndarray | None]:
        raise NotImplementedError(
            "ArschlochVecEnv draws no images; to watch games, record them (record_path=..., "
            "record_games=[...]) and read the record with `arschloch replay`, or render one "
            "game with arschloch_env.env(render_mode='ansi')")

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """The seed of the next :meth:`reset` (games and seat draws); ``None`` draws one, as
        SB3's ``VecEnv.seed`` does.

        Raises:
            ValueError: a seed the games cannot take (as ``VectorGame``'s ``seed``), refused
                here: at the reset it would fail, and the seed asked for would be lost.
        """
        if seed is None:
            seed = int(np.random.randint(0, np.iinfo(np.uint32).max, dtype=np.uint32))
        check_seed(seed, self.num_envs)
        self._next_seed = seed
        return [seed] * self.num_envs

    def action_masks(self) -> np.ndarray:
        """bool [num_envs, A]: the learner's legal actions in every game."""
        self._check_reset("action_masks()")
        return self._mask.astype(bool)

    def _check_reset(self, what: str) -> None:
        if self._mask is None:
            raise RuntimeError(f"call reset() before {what}")

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        """Per game: a row of the per-game arrays (``seats``), else the env's one value."""
        value = getattr(self, attr_name)
        if attr_name in self.PER_GAME:
            return [value[i] for i in self._indices(indices)]
        return [value for _ in self._indices(indices)]

    PER_GAME = ("seats",)
    """Attributes with one entry per game."""

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        """Sets an attribute that all games share; only for all of them at once."""
        self._refuse_some_games(self._indices(indices), f"set_attr({attr_name!r})",
                                "attributes", "set it")
        if attr_name in ("opponent", "game", "rules", *self.PER_GAME):
            raise ValueError(f"set_attr({attr_name!r}): fixed when the env is made; make a "
                             f"new ArschlochVecEnv to change it")
        if attr_name == "fixed_seat":  # a seat off the table would break the next match
            value = self._checked_seat(value)
        setattr(self, attr_name, value)

    def set_options(self, options: list[dict] | dict | None = None) -> None:
        """Refuses options: :meth:`reset` takes none (:meth:`seed` seeds it)."""
        given = options if isinstance(options, (list, tuple)) else [options]
        if any(o not in (None, {}) for o in given):
            raise ValueError(f"set_options({options!r:.80}): ArschlochVecEnv's reset takes no "
                             f"options; seed it with seed(), and give the rules and seats when "
                             f"making the env")

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs):
        """``action_masks`` per game; any other method is the env's own, called once for all
        the games (so only with ``indices=None``, or every index) and its result repeated."""
        idx = self._indices(indices)
        if method_name == "action_masks":
            masks = self.action_masks()
            return [masks[i] for i in idx]
        self._refuse_some_games(idx, f"env_method({method_name!r})", "methods", "call it")
        result = getattr(self, method_name)(*method_args, **method_kwargs)
        return [result for _ in idx]

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [False for _ in self._indices(indices)]

    # -- internals ----------------------------------------------------------------------------

    def _agent_labels(self, game: int) -> dict[str, str]:
        """The record's ``agents`` of game ``game``'s match (asked before the next seat draw)."""
        learner = int(self.seats[game])
        return {player_name(s): LEARNER_LABEL if s == learner else self.opponent_label
                for s in range(self.game.n)}

    def _checked_seat(self, seat: Any) -> int | None:
        """The learner's seat as an int (``None``: drawn per match), refused if it is not a
        seat of the table."""
        n = self.game.n
        if seat is not None and not (is_integer(seat) and 0 <= seat < n):
            raise ValueError(f"seat {seat!r} is not a seat of a {n}-player table (0..{n - 1} "
                             f"or None for a seat drawn per match)")
        return None if seat is None else int(seat)

    def _refuse_some_games(self, idx: list[int], call: str, what: str, do: str) -> None:
        """What all games share is set or called for all of them or none."""
        if sorted(idx) != list(range(self.num_envs)):
            raise ValueError(f"{call}: the games of an ArschlochVecEnv share its {what}; {do} "
                             f"for all of them (indices=None)")

    def _indices(self, indices) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        if isinstance(indices, int):
            return [indices]
        return list(indices)

    def _draw_seats(self, k: int) -> np.ndarray:
        if self.fixed_seat is not None:
            return np.full(k, self.fixed_seat, np.int64)
        return self._seat_rng.integers(self.game.n, size=k)

    def _ended(self, done, ended, infos, last_obs) -> None:
        """Matches that just ended: episode ends, infos, the next match's seat."""
        if not done.any():
            return
        g = self.game
        idx = np.flatnonzero(done)
        for i in idx:
            if ended[i]:
                # a whole match without a decision of the learner: no episode to report, and
                # its rewards must not count in the next one
                self._carry[i] = 0.0
                if infos is not None:
                    infos[i]["skipped_matches"] = infos[i].get("skipped_matches", 0) + 1
            elif infos is not None:
                infos[i].update(terminal_observation=last_obs[i], seat=int(self.seats[i]),
                                totals=g.last_totals[i].tolist(),
                                winners=np.flatnonzero(g.last_winners[i]).tolist())
            ended[i] = True
        self.seats[idx] = self._draw_seats(len(idx))
        for i in idx:
            self.reset_infos[i] = {"seat": int(self.seats[i])}

    def _reseed_opponent(self, seed: int | None) -> None:
        if seed is not None and isinstance(self.opponent, SharedOpponent):
            self.opponent.reset(int(np.random.SeedSequence([seed, 1]).generate_state(1)[0]))

    def _start_mirrors(self, rows: np.ndarray) -> None:
        """The mirrored opponent's games ``rows`` begin a match (seats already drawn)."""
        if isinstance(self.opponent, MirroredOpponent):
            seeds, index = self.game.match_seed, self.game.match_index
            for j in rows.tolist():
                self.opponent.start(j, int(seeds[j]), int(index[j]), int(self.seats[j]))

    def _follow(self, actions: np.ndarray, rows: np.ndarray, done: np.ndarray) -> None:
        """The mirrors take the moves just made in ``rows``; those whose match ended begin
        the next one."""
        if isinstance(self.opponent, MirroredOpponent):
            for j in rows.tolist():
                self.opponent.follow(j, actions[j])
            self._start_mirrors(np.flatnonzero(done))

    def _batched_actions(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The batched opponent's actions for these rows, if they are one integer each (the
        engine then checks that each is legal). An agent's wrong answer is an
        :class:`~agents.runner.AgentError`, a callable's a ``ValueError``."""
        from agents.base import agent_label
        from agents.runner import AgentError
        chosen = np.asarray(self.opponent(obs, mask))
        if chosen.shape != (len(obs),) or chosen.dtype.kind not in "iu":
            shared = isinstance(self.opponent, SharedOpponent)
            name = (f"agent {agent_label(self.opponent.agent)!r}" if shared else
                    f"opponent {getattr(self.opponent, '__name__', repr(self.opponent))}")
            raise (AgentError if shared else ValueError)(
                f"{name} returned {chosen.dtype} values of shape {chosen.shape}; expected "
                f"{len(obs)} integer action ids, one per game to move")
        return chosen

    def _step_opponents(self, actions: np.ndarray, waiting: np.ndarray):
        """``VectorGame.step`` of the opponents' moves; an illegal one of an agent's is an
        :class:`~agents.runner.AgentError` naming it and its seat, as the other envs have it."""
        try:
            return self.game.step(actions, where=waiting)
        except VectorActionError as exc:
            if exc.game is None or not (isinstance(self.opponent, SharedOpponent)
                                        or callable(self.opponent)):
                raise
            from agents.base import agent_label
            from agents.runner import AgentError, illegal_choice
            seat = int(self.game.current_seat[exc.game])
            if isinstance(self.opponent, SharedOpponent):
                raise illegal_choice(self.opponent.agent, seat, exc) from None
            # not the learner's move: the message would otherwise read as if it were
            raise AgentError(f"the opponent callable {agent_label(self.opponent)!r}, playing "
                             f"{player_name(seat)}, chose an illegal action: {exc}") from None

    def _play_opponents(self, obs, mask, ended, infos, episode, last_obs):
        """Opponent moves until the learner is to act in every game. The learner's rewards
        go to ``episode`` until its match ended (``ended``), after that to the next step.
        An opponent's error leaves the env refusing to step until ``reset()``."""
        try:
            return self._opponent_moves(obs, mask, ended, infos, episode, last_obs)
        except BaseException as exc:
            self._broken = f"{type(exc).__name__}: {exc}"
            raise

    def _opponent_moves(self, obs, mask, ended, infos, episode, last_obs):
        g = self.game
        while True:
            waiting = g.current_seat != self.seats
            if not waiting.any():
                return obs, mask
            rows = np.flatnonzero(waiting)
            if isinstance(self.opponent, MirroredOpponent):
                actions = np.zeros(self.num_envs, np.int64)
                for j in rows.tolist():
                    actions[j] = self.opponent.act(j, obs[j], mask[j])
            elif self.opponent == "random":
                actions = g.sample_actions()
            else:
                actions = np.zeros(self.num_envs, np.int64)
                actions[waiting] = self._batched_actions(obs[waiting], mask[waiting])
            obs, mask, rew, done = self._step_opponents(actions, waiting)
            r = rew[self._rows, self.seats]
            episode += np.where(ended, 0.0, r).astype(np.float32)
            self._carry += np.where(ended, r, 0.0).astype(np.float32)
            self._ended(done, ended, infos, last_obs)
            self._follow(actions, rows, done)
