"""Who plays which seat in the batched games of ``ppo-vec``: the learner, its league, the bots.

A :class:`Table` is one :class:`~arschloch_env.vector.VectorGame` (one player count) plus a
controller for every seat of every game, drawn again whenever a game starts a new match:

| kind | plays with | trained on |
|---|---|---|
| ``LEARNER`` | the learner's torch actor (one random seat per game) | yes |
| ``CURRENT`` | the learner's torch actor (``current`` in the mix) | yes |
| ``SNAPSHOT`` | a frozen league snapshot, batched per snapshot | no |
| ``RANDOM`` | a uniform legal action from the engine's sampler (``random``) | no |
| ``SNAPSHOT`` | also a policy file (``.npz`` in the mix, e.g. from ``arschloch clone``): a member of the pool that never leaves it | no |
| ``AGENT`` | any other agent spec (``greedy``, ``expert``, a bundle ...) at Python speed | no |

The trainer asks the learner's actor for the ``LEARNER``/``CURRENT`` rows and the pool
(:meth:`SnapshotPool.logits`) for the ``SNAPSHOT`` rows, each in one batch over every table,
and samples both together; then :meth:`Table.agent_actions` fills in the rest.

**Agent seats.** Agent seats are grouped into whole games: a share ``a`` of the games (``a``
= the summed share of the agent specs in the mix) seat agents in every opponent seat, the
others draw only from ``current``/``snapshots``/``random``. So each kind still gets its share
of the opponent seats, and ``a`` is also the share of games that run at Python speed.
Every agent is asked as :func:`agents.runner.ask` would (``act(observation dict, view)``)
with the vector engine's observation row and mask. One that reads the public view
(``uses_view``, e.g. expert) takes it from a mirror reference game ``Game(rules,
seed=vg.match_seed[j], match_index=vg.match_index[j], auto_pass=True)`` stepped with the same
actions; the vector engine reproduces the reference move for move (``tests/test_vector.py``),
which ``debug=True`` checks on every step (observation, mask, seat to act, match end).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from agents.base import agent_maker
from agents.mlp import MLP
from agents.runner import call_agent, illegal_choice, reset_agents
from arschloch_env.actions import ActionCodec
from arschloch_env.engine import Game
from arschloch_env.observation import Encoder
from arschloch_env.vector import VectorActionError, VectorGame
from arschloch_env.view import public_view

LEARNER, CURRENT, SNAPSHOT, RANDOM, AGENT = range(5)
POLICY_KINDS = ("current", "snapshots", "random")


def is_policy_file(key: str) -> bool:
    """A ``vec.mix`` key naming a policy file (:class:`~agents.mlp.MLP` ``.npz``), which plays
    batched in the snapshot pool, not at Python speed like other agent specs."""
    return key.endswith(".npz")


NEG = -1e8
"""The logit of an illegal action: its probability is exactly 0 (not -inf, which turns the
entropy's gradient into NaN)."""
LOGP_FLOOR = -80.0
"""exp() is fast only above about -87; probabilities are taken from log-probabilities clamped
here (and masked), which changes nothing a float32 sum can see."""


def masked_log_softmax(logits, mask):
    """Log-probabilities over the legal actions (``mask``: bool); an illegal one's is NEG or
    less, its probability exactly 0, and so is the gradient its logit gets."""
    import torch
    return torch.log_softmax(torch.where(mask, logits, NEG), dim=-1)


def sample_masked(logits, mask, generator):
    """Samples one legal action per row; returns (actions, log-probabilities).

    One uniform ``u`` per row, scaled into ``[0, total)``, picks the first action whose
    cumulative probability exceeds it; illegal probabilities are exactly 0, so that action
    has a positive probability: it is legal."""
    import torch

    logp_all = masked_log_softmax(logits, mask)
    cdf = (logp_all.clamp(min=LOGP_FLOOR).exp_() * mask).cumsum_(dim=-1)
    # drawn where the generator is (the CPU), so a run on CUDA samples the CPU run's uniforms
    u = torch.rand((len(cdf), 1), generator=generator).to(cdf.device)
    u *= cdf[:, -1:] * (1.0 - 2.0 ** -20)  # strictly below the total after rounding
    actions = (cdf <= u).sum(dim=-1)
    return actions, logp_all.gather(1, actions[:, None])[:, 0]


def bool_tensor(mask: np.ndarray):
    """A torch bool view of an int8 0/1 mask (no copy)."""
    import torch
    return torch.from_numpy(mask.view(np.bool_))


class SnapshotPool:
    """The league's frozen snapshots, run together in one batched forward.

    New seats draw from :attr:`active` only. A snapshot that leaves the league stays in the
    pool while a running game still seats it; :meth:`refresh` given the tables then drops it
    and renumbers their seats (``which`` holds pool indices), so the pool holds at most
    ``max_snapshots``, the policy files and the snapshots still in play, however many a run
    makes: keeping every one would grow the memory, and the cost of restacking, with the
    length of the run. Their weights are stacked ([K, in, out] per layer), so the rows of
    every snapshot in use go through one ``baddbmm`` per layer, grouped by snapshot and padded
    to the largest group, instead of one small forward per snapshot."""

    def __init__(self, league, device="cpu", fixed: tuple[str, ...] = ()):
        self.league, self.device = league, device
        self.mlps: list[MLP] = []
        self.index: dict[str, int] = {}
        self.active = np.zeros(0, np.int64)
        self.stack: list[tuple[Any, Any]] = []
        self.activation = "tanh"
        self.fixed: dict[str, int] = {}
        """Policy files that stay in the pool for the whole run (never drawn as snapshots):
        file -> index in :attr:`mlps`."""
        for path in fixed:
            self.fixed[path] = len(self.mlps)
            self.mlps.append(MLP.load(path))
        self._stale = True

    def refresh(self, tables: Sequence[Table] = ()) -> None:
        """Loads the league's new snapshots and, given the run's ``tables``, drops those that
        left the league and that no game of theirs seats any more."""
        import torch

        for snap in self.league.snapshots:
            if snap["file"] not in self.index:
                path = self.league.root / snap["file"]
                try:
                    mlp = MLP.load(path)
                except ValueError as exc:  # damaged since it was written
                    from train.config import ConfigError
                    raise ConfigError(f"the league's snapshot {path} cannot be read: "
                                      f"{exc}") from None
                self.index[snap["file"]] = len(self.mlps)
                self.mlps.append(mlp)
                self._stale = True
        if tables:
            self._drop_unseated(tables)
        self.active = np.array([self.index[s["file"]] for s in self.league.snapshots], np.int64)
        if self._stale and self.mlps:
            self._stale = False
            self.activation = self.mlps[0].activation
            self.stack = [
                (torch.from_numpy(np.stack([m.layers[i][0].T for m in self.mlps])).to(self.device),
                 torch.from_numpy(np.stack([m.layers[i][1][None] for m in self.mlps]))
                 .to(self.device))
                for i in range(len(self.mlps[0].layers))]

    def _drop_unseated(self, tables) -> None:
        keep = {*self.fixed.values(), *(self.index[s["file"]] for s in self.league.snapshots)}
        for table in tables:
            keep.update(np.unique(table.which[table.kind == SNAPSHOT]).tolist())
        if len(keep) == len(self.mlps):
            return
        order = sorted(keep)
        renumber = np.full(len(self.mlps), -1, np.int64)
        renumber[order] = np.arange(len(order))
        self.mlps = [self.mlps[i] for i in order]
        self.index = {f: int(renumber[i]) for f, i in self.index.items() if renumber[i] >= 0}
        self.fixed = {path: int(renumber[i]) for path, i in self.fixed.items()}
        for table in tables:
            seated = table.kind == SNAPSHOT
            table.which[seated] = renumber[table.which[seated]]
        self._stale = True

    def logits(self, which: np.ndarray, obs: np.ndarray):
        """The logits of snapshot ``which[i]`` for observation ``obs[i]`` (torch [rows, A])."""
        import torch

        groups, group, counts = np.unique(which, return_inverse=True, return_counts=True)
        order = np.argsort(group, kind="stable")
        pos = np.empty(len(which), np.int64)
        pos[order] = np.arange(len(which)) - np.repeat(np.cumsum(counts) - counts, counts)
        G, M = len(groups), int(counts.max())
        flat = torch.from_numpy(group * M + pos).to(self.device)  # row -> padded slot
        x = torch.zeros((G * M, obs.shape[1]), device=self.device)
        x.index_copy_(0, flat, torch.from_numpy(obs).to(self.device))
        x = x.view(G, M, -1)
        every = G == len(self.mlps)
        used = None if every else torch.from_numpy(groups).to(self.device)
        act = torch.tanh if self.activation == "tanh" else torch.relu
        for i, (w, b) in enumerate(self.stack):
            x = torch.baddbmm(b, x, w) if every else torch.baddbmm(b[used], x, w[used])
            if i < len(self.stack) - 1:
                x = act(x)
        return x.reshape(G * M, -1).index_select(0, flat)


class Table:
    """One VectorGame and the controllers of its seats (see the module docstring).

    Args:
        rules: the rules object (with its player count).
        num_games: B of this table.
        seed: series seed of the VectorGame.
        mix: share per opponent kind (``current``, ``snapshots``, ``random``, agent specs).
        pool: the snapshot pool (shared by every table).
        rng: numpy generator for the seat draws.
        generator: torch generator for the snapshots' sampling.
        threads: numba threads of the engine.
        debug: check every mirror game against the vector engine on every step.
    """

    def __init__(self, rules, num_games: int, seed: int, mix: dict[str, float],
                 pool: SnapshotPool, rng: np.random.Generator, generator, threads: int = 1,
                 debug: bool = False):
        self.vg = VectorGame(rules, num_games=num_games, seed=seed, threads=threads)
        self.rules, self.B, self.n = self.vg.rules, num_games, self.vg.n
        self.rules_dict = self.rules.to_dict()
        self.pool, self.rng, self.generator, self.debug = pool, rng, generator, debug
        self.named = set(mix)
        """The kinds the mix names: seat counts (``league/share/<kind>``) are kept for these
        and for what played without being named (``current`` in the ``snapshots`` seats
        while the pool is empty), never a 0 for a kind the mix leaves out."""
        total = sum(mix.values())
        self.files = [k for k in mix if is_policy_file(k) and mix[k] > 0]
        self.policy_share = {k: mix.get(k, 0.0) / total for k in (*POLICY_KINDS, *self.files)}
        self.specs = [k for k in mix if k not in POLICY_KINDS and not is_policy_file(k)
                      and mix[k] > 0]
        weights = np.array([mix[k] for k in self.specs], np.float64)
        self.agent_share = weights.sum() / total
        self.spec_share = weights / weights.sum() if len(weights) else weights
        """Each spec's share of the agent seats: its share of the specs' total."""
        self.makers = [agent_maker(spec) for spec in self.specs]  # a bad spec fails here
        self.encoder = Encoder(self.vg.R)
        self.codec = ActionCodec(self.rules.rank_order)
        self.kind = np.zeros((num_games, self.n), np.int8)
        self.which = np.zeros((num_games, self.n), np.int64)
        self.agents: dict[int, list[Any]] = {}     # game -> agent per seat (None elsewhere)
        self.mirrors: dict[int, Game] = {}         # game -> reference game (view agents)
        self.seat_counts: dict[str, int] = {}
        self.returns = np.zeros((num_games, self.n), np.float64)
        self.decisions = np.zeros(num_games, np.int64)  # the learner's, this match
        self.finished: list[tuple[np.ndarray, np.ndarray]] = []  # per match: return, decisions
        self.obs, self.mask = self.vg.reset()
        self.seat_games(np.arange(num_games))

    # -- seating ------------------------------------------------------------------------------

    def seat_games(self, games: np.ndarray) -> None:
        """Draws the controllers of every seat of ``games`` for their new match."""
        k, n, rng = len(games), self.n, self.rng
        if k == 0:
            return
        shares = np.array(list(self.policy_share.values()))
        if shares.sum() > 0:
            drawn = rng.choice(len(shares), size=(k, n), p=shares / shares.sum())
        else:
            drawn = np.zeros((k, n), np.int64)
        kind = np.array([CURRENT, SNAPSHOT, RANDOM] + [SNAPSHOT] * len(self.files),
                        np.int8)[drawn]
        which = np.zeros((k, n), np.int64)
        snap = drawn == POLICY_KINDS.index("snapshots")
        if len(self.pool.active):
            which[snap] = self.pool.active[rng.integers(len(self.pool.active),
                                                        size=int(snap.sum()))]
        else:
            kind[snap] = CURRENT  # no snapshot yet: the learner's current weights
        for i, path in enumerate(self.files):
            which[drawn == len(POLICY_KINDS) + i] = self.pool.fixed[path]
        agent_game = rng.random(k) < self.agent_share
        if agent_game.any():
            kind[agent_game] = AGENT
            which[agent_game] = rng.choice(len(self.specs), size=(int(agent_game.sum()), n),
                                           p=self.spec_share)
        learner = rng.integers(n, size=k)
        kind[np.arange(k), learner] = LEARNER
        self.kind[games], self.which[games] = kind, which
        for g, row in zip(games.tolist(), kind):
            self.agents.pop(g, None)
            self.mirrors.pop(g, None)
            if (row == AGENT).any():
                self._seat_agents(g)
        self._count(kind, which, learner)

    def _seat_agents(self, g: int) -> None:
        seed = int(self.vg.match_seed[g])
        agents: list[Any] = [None] * self.n
        for s in np.flatnonzero(self.kind[g] == AGENT).tolist():
            agents[s] = self.makers[int(self.which[g, s])]()
        reset_agents(agents, self.rules_dict, seed)
        self.agents[g] = agents
        if self.debug or any(getattr(a, "uses_view", True) for a in agents if a is not None):
            self.mirrors[g] = Game(self.rules, seed=seed, match_index=int(self.vg.match_index[g]),
                                   auto_pass=True)

    def _count(self, kind, which, learner) -> None:
        names = {CURRENT: "current", SNAPSHOT: "snapshots", RANDOM: "random"}
        opp = np.ones(kind.shape, bool)
        opp[np.arange(len(kind)), learner] = False
        files = {self.pool.fixed[path]: path for path in self.files}
        fixed = np.isin(which, list(files)) & (kind == SNAPSHOT)
        for code, name in names.items():
            count = int((kind[opp & ~fixed] == code).sum())
            if count or name in self.named:
                self.seat_counts[name] = self.seat_counts.get(name, 0) + count
        for index, path in files.items():
            self.seat_counts[path] = self.seat_counts.get(path, 0) + int(
                (which[opp & fixed] == index).sum())
        agent_which = which[opp & (kind == AGENT)]
        for i, spec in enumerate(self.specs):
            self.seat_counts[spec] = self.seat_counts.get(spec, 0) + int((agent_which == i).sum())

    # -- acting -------------------------------------------------------------------------------

    @property
    def seat(self) -> np.ndarray:
        """int64 [B]: the seat to act in each game."""
        return self.vg.current_seat

    def acting_kind(self, seat: np.ndarray) -> np.ndarray:
        return self.kind[np.arange(self.B), seat]

    def snapshot_which(self, seat: np.ndarray) -> np.ndarray:
        """int64 [B]: the pool index of the seat to act in each game (meaningful in its
        ``SNAPSHOT`` rows)."""
        return self.which[np.arange(self.B), seat]

    def agent_actions(self, actions: np.ndarray, seat: np.ndarray, kind: np.ndarray) -> None:
        """Fills ``actions`` for the ``RANDOM`` and ``AGENT`` rows (``kind`` of the seat to
        act per game); the trainer fills the learner's and the snapshots' rows, batched over
        every table."""
        rand_rows = np.flatnonzero(kind == RANDOM)
        if len(rand_rows):
            actions[rand_rows] = self.vg.sample_actions()[rand_rows]
        for g in np.flatnonzero(kind == AGENT).tolist():
            s = int(seat[g])
            agent = self.agents[g][s]
            # the engine's row is the observation the mirror would encode (checked by debug)
            view = public_view(self.mirrors[g], s) if getattr(agent, "uses_view", True) else None
            action = call_agent(agent.act, agent, s,
                                {"observation": self.obs[g], "action_mask": self.mask[g]}, view)
            try:  # an int action id; whether it is legal the engine's step says
                actions[g] = self.codec.check(action)
            except ValueError as exc:
                raise illegal_choice(agent, s, exc) from None

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Steps the games (and the mirrors), re-seats the games whose match ended; returns
        ``(rewards [B, n], done [B])``."""
        self.decisions += self.acting_kind(self.seat) == LEARNER
        try:
            self.obs, self.mask, rewards, done = self.vg.step(actions)
        except VectorActionError as exc:  # the engine names the game, not the agent
            g = exc.game
            if g is None or self.kind[g, self.seat[g]] != AGENT:
                raise
            s = int(self.seat[g])
            raise illegal_choice(self.agents[g][s], s, exc) from None
        for g, game in self.mirrors.items():
            game.step(int(actions[g]))
            if self.debug:
                self._check_mirror(g, game, bool(done[g]))
        self.returns += rewards
        if done.any():
            games = np.flatnonzero(done)
            learner = np.argmax(self.kind[games] == LEARNER, axis=1)
            self.finished.append((self.returns[games, learner], self.decisions[games]))
            self.returns[games] = 0.0
            self.decisions[games] = 0
            self.seat_games(games)
        return rewards, done

    def _check_mirror(self, g: int, game: Game, done: bool) -> None:
        if game.is_over != done:
            raise AssertionError(f"game {g}: the mirror's match end ({game.is_over}) differs "
                                 f"from the vector engine's ({done})")
        if done:
            return
        seat = int(self.vg.current_seat[g])
        if game.current != seat or not np.array_equal(
                self.encoder.observe(game, seat), self.obs[g]) or not np.array_equal(
                game.legal_mask(), self.mask[g]):
            raise AssertionError(f"game {g}: the mirror reference game left the vector "
                                 f"engine (seat {game.current} vs {seat})")

    def take_finished(self) -> tuple[np.ndarray, np.ndarray]:
        """The learner seat's return and number of decisions in every match finished since
        the last call."""
        done, self.finished = self.finished, []
        if not done:
            return np.zeros(0), np.zeros(0, np.int64)
        returns, decisions = zip(*done)
        return np.concatenate(returns), np.concatenate(decisions)

    def take_seat_counts(self) -> dict[str, int]:
        counts, self.seat_counts = self.seat_counts, {}
        return counts


__all__ = ["AGENT", "CURRENT", "LEARNER", "RANDOM", "SNAPSHOT", "SnapshotPool",
           "LOGP_FLOOR", "NEG", "Table", "bool_tensor", "is_policy_file", "masked_log_softmax",
           "sample_masked"]
