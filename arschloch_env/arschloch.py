"""# Arschloch (President, Scum)

| | |
|---|---|
| Import | `import arschloch_env; env = arschloch_env.env(rules="culo", num_players=4)` |
| Actions | Discrete |
| Parallel API | No |
| Manual control | No (see `arschloch play`) |
| Agents | `agents = ['player_0', ..., 'player_{n-1}']`, clockwise seat order |
| Agents (count) | 3 to 6 |
| Action shape | Discrete(1 + 6R): 49 with a 32-card deck, 79 with 52 cards |
| Action values | Discrete(49) or Discrete(79) |
| Observation shape | (413,) with 32 cards, (593,) with 52 cards, whatever the player count |
| Observation values | [0, 1], except `seat_held` and `seat_total` (>= 0) |

A shedding game for 3 to 6 players under every rule variant of RULES.md: the presets `culo`,
`culo-points`, `culo-ten`, `culo-52` and `tavern`, each field overridable
(`arschloch_env.env(rules="tavern", no_finish_on_top=True)`). One episode is one match.

### Arguments

`env(rules="culo", num_players=4, render_mode=None, reward="place", auto_pass=True,
**overrides)`: `rules` is a preset name, a rules dict, a YAML/JSON file or a `Rules`;
`reward` is `"place"` or `"points"`; `auto_pass` applies every decision where passing is the
only legal action by itself (those passes still appear in the game record).

### Matches and seeds

`reset()` starts the next match of a series: k counts the matches since the series began, and
under `first_leader: rotate` seat k mod n leads round 1. `reset(seed=s)` begins a new series at
k = 0, so that a seed always gives the same match; to go on rotating while seeding each match,
pass `options={"match_index": k}` (an int >= 0). `SingleSeatEnv` counts the same way.
`options={"agents": {"player_0": "random", ...}}` names the agents in the game record. Other
option keys are ignored with a warning here and refused by `SingleSeatEnv` (which takes
`match_index` only).

With `record_path`, every match is written as a game record, finalised by `close()` (or, without
it, when the env is garbage-collected or the interpreter exits); a closed environment then
refuses to play on rather than write into the finished file. A recording env cannot be copied.

### Observation

A dict: `observation` (float32 vector) and `action_mask` (int8, 1 for the legal ids of the
agent to act, all 0 for the others). The vector gives the observer what a careful human player
knows and nothing more; its layout depends only on the deck. Seat features are relative to the
observer (offset 0 is the observer) and padded to 6 seats. The slices (R ranks, "thermometer"
= four bits per rank, the first c of them 1 for c cards):

| slice | shape | meaning |
|---|---|---|
| `hand` | (R, 4) | own cards per rank |
| `played` | (R, 4) | cards of each rank played so far this round |
| `face_up` | (R, 4) | face-up left-over cards still on the table |
| `revealed` | (4,) | top-rank cards shown by hands that held only them |
| `highest_in_play` | (R,) | one-hot highest rank not yet wholly gone |
| `table_rank` | (R,) | one-hot rank of the play to beat (0 when leading) |
| `table_count` | (4,) | one-hot card count of the play to beat |
| `table_seat` | (6,) | one-hot relative seat of who played it |
| `leading` | (1,) | the observer leads |
| `given`, `received` | (R, 4) each | own exchange and swap cards this round |
| `phase` | (4,) | one-hot play, give, take, lay |
| `to_give` | (4,) | one-hot cards still to give (0..3) |
| `match_progress` | (2,) | round / rounds (or best total / target), last-round flag |
| `seat_present`, `seat_held`, `seat_out`, `seat_passed` | (6,) each | per relative seat; held is cards / 10 |
| `seat_place` | (6, 6) | one-hot place taken this round |
| `seat_title` | (6, 5) | one-hot title of the previous round |
| `seat_total` | (6,) | match points / 15 |
| `unseen` | (R, 4) | cards of each rank not in the own hand, played, face up or revealed |
| `opp_most` | (R, 4) | most cards of each rank one opponent in the round can hold |
| `beat_most` | (R, 4) | most cards of one higher rank an opponent can hold |
| `own_dominant` | (R,) | own ranks that, led whole, no opponent can beat |
| `open_groups` | (R,) | thermometer of own ranks that are not dominant |
| `threat` | (4,) | bit j: an opponent in the round holds at most j + 1 cards |

The last six (card counting, layout version 2) are functions of the ones above, given because
a small network learns several times faster with them.

`arschloch_env.observation.Layout(R).views(obs["observation"])` gives these as named,
reshaped arrays.
`state()` returns the full-information vector for centralised critics: the acting agent's
observation followed by every seat's hand (relative order) and the face-down cards.

### Action mask

`action_mask` is 1 exactly for the legal action ids of the agent to act.

### Actions

`0` pass; `1 + 4r + (k-1)` play k cards (1..4) of rank index r; `1 + 4R + r` give a card of
rank r (exchange return, or the card laid face down in the left-over swap); `1 + 5R + r` take
the face-up left-over card of rank r. An illegal action raises `IllegalActionError` naming the
player, the move and the reason; an id outside the action space (not an integer, or not in
`0..A-1`) raises `arschloch_env.actions.ActionError` naming the id and the allowed range. Both
are `ValueError`s, and neither changes anything.

### Rewards

At every round end each agent receives `1 - 2*(place-1)/(n-1)` (President +1, Arschloch -1,
zero-sum), or with `reward="points"` the round's points (`n - place`). All agents terminate at
the match end; nothing truncates.

### Version history

* v0: initial release.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from arschloch_env.engine import Game
from arschloch_env.observation import Encoder
from arschloch_env.records import RecordWriter, RefusesCopyWhileRecording
from arschloch_env.render import render_text
from arschloch_env.rules import Rules, is_integer, make_rules, players_or_default
from arschloch_env.view import public_view

REWARD_MODES = ("place", "points")
# Reset options of the AEC env, with the values each takes.
RESET_OPTIONS = {"match_index": "an int >= 0",
                 "agents": "a dict of player name to agent spec (str) for the game record"}


def env(rules: Rules | str | dict = "culo", num_players: int | None = None,
        render_mode: str | None = None, reward: str = "place", auto_pass: bool = True,
        record_path: str | None = None, **overrides: Any) -> "raw_env":
    """The environment (see the module docstring, ``help(arschloch_env.arschloch)``). Order
    enforcing and action checks are built in (no wrapper stack).

    Args:
        rules: a preset name, a rules dict, a YAML/JSON file or a ``Rules``.
        num_players: 3..6 (default: the table size the rules name, else 4).
        render_mode: ``None``, ``"ansi"`` or ``"human"``.
        reward: ``"place"`` (+1 .. -1 per round) or ``"points"`` (the round's points).
        auto_pass: apply by itself every decision where passing is the only legal action.
        record_path: write every match there as a game record (JSON Lines).
        **overrides: rules fields to override (``no_finish_on_top=True`` ...).
    """
    return raw_env(rules, num_players, render_mode, reward, auto_pass, record_path, **overrides)


def _next_match_index(current: int, seed: int | None, options: dict | None) -> int:
    """k of the next match: ``options["match_index"]`` if given, 0 after a seeded reset (a
    seed starts a new series, so that seeded resets are reproducible), else one more."""
    if options and "match_index" in options:
        return int(options["match_index"])
    return 0 if seed is not None else current + 1


def check_reset_options(options: Any, allowed: dict[str, str],
                        strict: bool = True) -> None:
    """Refuses bad reset options before the reset changes anything: not a dict, a bad
    ``match_index``, and a key not in ``allowed`` (``strict``; else a warning)."""
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"reset options must be a dict or None, not {type(options).__name__}")
    if not options:
        return
    unknown = [k for k in options if k not in allowed]
    if unknown:
        message = (f"unknown reset option {unknown[0]!r}; allowed: "
                   + "; ".join(f"{k!r} ({v})" for k, v in allowed.items()))
        if strict:
            raise ValueError(message)
        import gymnasium
        gymnasium.logger.warn(message)
    k = options.get("match_index", 0)
    if not (is_integer(k) and k >= 0):
        raise ValueError(f"reset option 'match_index' {k!r} is not a match number; allowed: "
                         f"{RESET_OPTIONS['match_index']}")


def _refuse_if_closed(writer: RecordWriter | None, closed: bool) -> None:
    # close() finalised the record: the next match end would write into a closed file, and
    # reopening the record would replace the matches already in it.
    if closed:
        raise RuntimeError(f"the environment was closed, which finalised its game record "
                           f"{str(writer.path)!r}; make a new environment to play more matches")


def place_reward(place: int, n: int) -> float:
    """President +1, Arschloch -1, evenly spaced in between."""
    return 1.0 - 2.0 * (place - 1) / (n - 1)


def observation_dict_space(encoder: Encoder, rules: Rules) -> spaces.Dict:
    """The space of the observation dict: the vector and the int8 mask of the legal ids."""
    low, high = observation_bounds(encoder, rules)
    return spaces.Dict({
        "observation": spaces.Box(low=low, high=high, dtype=np.float32),
        "action_mask": spaces.Box(low=0, high=1, shape=(1 + 6 * rules.num_ranks,),
                                  dtype=np.int8),
    })


def observation_bounds(encoder: Encoder, rules: Rules) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of the observation vector: [0, 1] but for cards held and match totals."""
    high = np.ones(encoder.size, dtype=np.float32)
    # Independent of the player count, so that one policy sees one space at every table size.
    high[encoder.layout.slices["seat_held"]] = (math.ceil(rules.deck_size / 3) + 3) / 10.0
    most_points = rules.rounds * 5 if rules.rounds is not None else rules.target_points + 4
    high[encoder.layout.slices["seat_total"]] = most_points / 15.0
    return np.zeros(encoder.size, dtype=np.float32), high


class raw_env(RefusesCopyWhileRecording, AECEnv):
    """The Arschloch AEC environment; see the module docstring."""

    metadata = {"render_modes": ["ansi", "human"], "name": "arschloch_v0", "render_fps": 1,
                "is_parallelizable": False}

    def __init__(self, rules: Rules | str | dict = "culo", num_players: int | None = None,
                 render_mode: str | None = None, reward: str = "place", auto_pass: bool = True,
                 record_path: str | None = None, **overrides: Any):
        super().__init__()
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode {render_mode!r} is not supported; allowed: None, "
                             f"{', '.join(self.metadata['render_modes'])}")
        if reward not in REWARD_MODES:
            raise ValueError(f"reward {reward!r} is not supported; allowed: "
                             f"{', '.join(REWARD_MODES)}")
        if not isinstance(auto_pass, (bool, np.bool_)):
            raise ValueError(f"auto_pass {auto_pass!r} is not a bool; allowed: True, False")
        num_players = players_or_default(rules, num_players, overrides)
        self.rules = make_rules(rules, num_players, **overrides)
        self.render_mode = render_mode
        self.reward_mode = reward
        self.auto_pass = bool(auto_pass)
        n = self.rules.num_players
        self.possible_agents = [f"player_{i}" for i in range(n)]
        self.agent_name_mapping = {a: i for i, a in enumerate(self.possible_agents)}
        self.encoder = Encoder(self.rules.num_ranks)
        self.num_actions = 1 + 6 * self.rules.num_ranks
        obs_space = observation_dict_space(self.encoder, self.rules)
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(self.num_actions) for a in self.possible_agents}
        slow, shigh = np.zeros(self.encoder.state_size, np.float32), np.full(
            self.encoder.state_size, np.inf, np.float32)
        self.state_space = spaces.Box(low=slow, high=shigh, dtype=np.float32)
        self._seeder = np.random.default_rng()
        self.match_index = -1
        self.game: Game | None = None
        self._writer = (RecordWriter(record_path).close_with(self) if record_path is not None
                        else None)
        self._closed = False

    # -- PettingZoo API -----------------------------------------------------------------------

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[self._known_agent(agent)]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[self._known_agent(agent)]

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        _refuse_if_closed(self._writer, self._closed)
        self._check_options(options)
        if seed is not None and not (is_integer(seed) and seed >= 0):
            raise ValueError(f"seed {seed!r} is not a seed; allowed: an int >= 0, or None")
        if seed is not None:
            self._seeder = np.random.default_rng(seed)
        self.match_index = _next_match_index(self.match_index, seed, options)
        game_seed = int(self._seeder.integers(2**31 - 1))
        self.game = Game(self.rules, seed=game_seed, match_index=self.match_index,
                         record=self._writer is not None, auto_pass=self.auto_pass,
                         agents=(options or {}).get("agents"))
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._rewarded = False
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
        self.agent_selection = self.possible_agents[self.game.current]
        if self.render_mode == "human":
            self.render()

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        self._require_reset()
        return self.encoder.observation(self.game, self._seat_of(agent))

    def state(self) -> np.ndarray:
        self._require_reset()
        return self.encoder.state(self.game, self.agent_name_mapping[self.agent_selection])

    def last(self, observe: bool = True):
        self._require_reset()
        self._require_agents_left()
        return super().last(observe)

    def step(self, action) -> None:
        self._require_reset()
        self._require_agents_left()
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        _refuse_if_closed(self._writer, self._closed)
        g = self.game
        g.step(action)
        self._cumulative_rewards[agent] = 0.0
        # Rewards only come at round ends; on every other step they stay all zero, so the
        # dicts are rebuilt and accumulated only when something changes.
        if self._rewarded:
            self.rewards = dict.fromkeys(self.agents, 0.0)
            self._rewarded = False
        if g.last_places is not None:
            n = g.n
            for i, a in enumerate(self.possible_agents):
                place = g.last_places[i]
                self.rewards[a] = (place_reward(place, n) if self.reward_mode == "place"
                                   else float(n - place))
            self._rewarded = True
            self._accumulate_rewards()
        if g.is_over:
            self.terminations = dict.fromkeys(self.agents, True)
            if self._writer is not None:
                self._writer.write_match(g.events)
        else:
            self.agent_selection = self.possible_agents[g.current]
        if self.render_mode == "human":
            self.render()

    def render(self) -> str | None:
        if self.render_mode is None:
            import gymnasium
            gymnasium.logger.warn("render() called without a render_mode; pass "
                                  "render_mode='ansi' or 'human' to env()")
            return None
        self._require_reset()
        text = render_text(self.game)
        if self.render_mode == "human":
            print(text + "\n")
            return None
        return text

    def close(self) -> None:
        """Finalises the game record; an environment with ``record_path`` then plays no more."""
        if self._writer is not None:
            self._writer.close()
            self._closed = True

    # -- extras -------------------------------------------------------------------------------

    def view(self, agent: str | None = None) -> dict[str, Any]:
        """The public view (INTERFACES.md) of ``agent``, default the agent to act."""
        self._require_reset()
        seat = self._seat_of(self.agent_selection if agent is None else agent)
        return public_view(self.game, seat)

    def _require_reset(self) -> None:
        if self.game is None:
            raise RuntimeError("call reset() before using the environment")

    def _require_agents_left(self) -> None:
        # Every agent was stepped out with step(None) after the match end (the agent_iter()
        # loop does that), so there is no agent left to act or to report on.
        if not self.agents:
            raise RuntimeError("the match is over and every agent has left: call reset() to "
                               "start the next match")

    def _seat_of(self, agent: Any) -> int:
        try:
            return self.agent_name_mapping[agent]
        except (KeyError, TypeError):
            raise ValueError(f"unknown agent {agent!r}; agents: {self.possible_agents[0]}.."
                             f"{self.possible_agents[-1]}") from None

    def _known_agent(self, agent: Any) -> str:
        return self.possible_agents[self._seat_of(agent)]

    def _check_options(self, options: Any) -> None:
        # A warning for an unknown key, not an error: PettingZoo's api_test checks the
        # signature of reset() with a made-up option.
        check_reset_options(options, RESET_OPTIONS, strict=False)
        if options:
            self._check_agents_option(options)

    def _check_agents_option(self, options: dict) -> None:
        labels = options.get("agents")
        if labels is None:
            return
        if not (isinstance(labels, dict) and all(isinstance(v, str) for v in labels.values())):
            raise ValueError(f"reset option 'agents' {labels!r}; allowed: "
                             f"{RESET_OPTIONS['agents']}")
        unknown = [name for name in labels if name not in self.agent_name_mapping]
        if unknown:
            raise ValueError(f"reset option 'agents' names unknown agent {unknown[0]!r}; "
                             f"agents: {self.possible_agents[0]}..{self.possible_agents[-1]}")
