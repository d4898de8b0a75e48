"""The batched engine: many matches under one rules object, stepped in lockstep.

| | |
|---|---|
| Import | `from arschloch_env.vector import VectorGame` |
| Games | `num_games` (B) independent matches, auto-reset when a match ends |
| Observations | float32 [B, D] for the seat to act in each game (`Layout(R)` of `observation`) |
| Masks | int8 [B, 1 + 6R], 1 exactly for the legal ids (action encoding of INTERFACES.md) |
| Rewards | float32 [B, n] per seat: the AEC env's round-end rewards |

```python
vg = VectorGame(rules="culo", num_players=4, num_games=4096, seed=0)
obs, mask = vg.reset()
obs, mask, rewards, done = vg.step(vg.sample_actions())
vg.current_seat          # int64 [B]: whose observation each row of obs is
```

A deliberately independent second implementation of the rules (the kernels in
:mod:`arschloch_env.vector_kernels`, compiled by numba), held to the reference engine
(:class:`arschloch_env.engine.Game`) by the differential test ``tests/test_vector.py``: the same
deals and actions give bit-identical observations, the same masks, rewards and game records.

**Seeds and deals.** The kernels reproduce the reference's shuffles exactly (numpy's
``default_rng(seed).permutation(deck_size)`` per round, card ``i`` to seat
``(start + i) % n``), so no deals are injected. Game ``j`` plays a series of matches; its
series seed is ``seed[j]`` when ``seed`` is a sequence of B ints, else
``arschloch_env.cli.match_seed(seed, j)``; match ``k`` of the series (``match.index`` = k,
which also fixes the ``rotate`` leader) has the seed ``match_seed(series_seed, k)``, the same
seeds ``arschloch simulate --seed <series seed>`` gives its matches. So every match is
``Game(rules, seed=vg.match_seed[j], match_index=vg.match_index[j])`` of the reference, and its
record names that seed.

**Steps.** ``step(actions)`` applies one action per game (every game must be given a legal
one; else nothing changes and :class:`VectorActionError` names the game and the move). Forced
passes follow automatically (as the AEC env's ``auto_pass``). ``rewards[j]`` holds the
round-end rewards of every seat of game ``j`` when a round ended in that step (``1 -
2*(place-1)/(n-1)``, or the round's points with ``reward="points"``), else zeros.
``done[j]`` is true when game ``j``'s match ended in that step; the game has then already
started its next match, and ``last_totals[j]`` / ``last_winners[j]`` hold the finished match's
totals and winners. The arrays returned are new on every call.

**Records.** With ``record_path``, every match of the games listed in ``record_games`` is
written there as a game record (INTERFACES.md), whole matches one after another in the order
they end, atomically like :class:`~arschloch_env.records.RecordWriter` (the file appears
under its name on :meth:`VectorGame.close`, at the latest when the game is garbage-collected
or the interpreter exits; ``with VectorGame(...) as vg:`` closes it); ``arschloch replay``
re-plays them. A match still running at ``close()`` is not written, and with no finished
match no file is. A record's ``agents`` is empty unless ``agent_labels`` is set: a function of
the game index that names each seat's agent, asked as the match is written.

**Waiting games.** ``step(actions, where=mask)`` moves only the games where ``mask`` is
true (the others keep their state and return zero rewards): adapters that wait for a
learner's seat use it (:mod:`arschloch_env.vector_env`).

**Threads.** ``threads=1`` (default) runs on the calling thread; ``threads=k`` steps k
blocks of games at once, on the calling thread and k-1 worker threads (the kernels release
the GIL). Each step hands the blocks to the workers and waits for them, which pays only for
thousands of games: at B = 4096 two threads ran 1.3 to 1.5 times as fast as one, at B = 256
a third to a half as fast (README, "Speed"). For small batches, run one process per core.

**Compile time.** The kernels (numba) are compiled with ``cache=True``: the first use on a
machine compiles them (about 20 s on one core), later processes load the cache from
``__pycache__`` in about a second.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

import numpy as np

from arschloch_env import vector_kernels as vk
from arschloch_env import vector_rng as vr
from arschloch_env import vector_state as vs
from arschloch_env.actions import ActionCodec
from arschloch_env.cards import SUITS
from arschloch_env.engine import IllegalActionError, player_name
from arschloch_env.observation import Layout, TITLE_INDEX
from arschloch_env.records import RecordWriter, RefusesCopyWhileRecording
from arschloch_env.rules import Rules, is_integer, make_rules, players_or_default

REWARD_MODES = ("place", "points")
PHASE_NAMES = vs.PHASE_NAMES
_EVENTS_PER_STEP = 512


class VectorActionError(IllegalActionError):
    """An action batch with an illegal action, a wrong shape or dtype; nothing was changed.
    ``game`` is the index of the game whose action was refused (``None`` for the batch's
    shape or dtype), so that an adapter can name the agent that chose it."""

    def __init__(self, message: str, game: int | None = None):
        super().__init__(message)
        self.game = game


def action_array(actions: Any, num_games: int) -> np.ndarray:
    """``actions`` as an array, or a :class:`VectorActionError` naming the shape expected where
    numpy cannot make one (ragged parts: e.g. a bundle's ``(actions, logits)`` pair)."""
    if isinstance(actions, np.ndarray):
        return actions
    try:
        return np.asarray(actions)
    except ValueError:
        raise VectorActionError(f"actions: expected an integer array of shape ({num_games},), "
                                f"one action id per game, got a {type(actions).__name__} of "
                                f"parts of different shapes") from None


def check_seed(seed: Any, num_games: int) -> None:
    """Refuses a seed that :class:`VectorGame` cannot seed ``num_games`` games with (see its
    ``seed`` argument), so that an adapter can refuse it when given, not at a later reset.

    Raises:
        ValueError: naming the seed and what is allowed.
    """
    if seed is None:
        return
    if is_integer(seed):
        if seed < 0:
            raise ValueError(f"seed {seed}: must be a non-negative integer")
        if seed >= 2**63:
            raise ValueError(f"seed {seed}: must be below 2**63")
        return
    try:
        games = np.asarray(seed)
    except Exception:  # noqa: BLE001 - reported below
        games = np.asarray([])
    if games.shape != (num_games,) or games.dtype.kind not in "iu" or (games < 0).any() \
            or (games.astype(np.uint64) >= 2**63).any():
        raise ValueError(f"seed: expected an int or a sequence of {num_games} non-negative "
                         f"integers below 2**63 (one series seed per game), got {seed!r:.80}")


class VectorGame(RefusesCopyWhileRecording):
    """B matches of Arschloch under one rules object, stepped together.

    Args:
        rules: a preset name, a rules dict, a rules file or a :class:`Rules`.
        num_players: 3..6; default: the rules' own where a :class:`Rules`, dict or rules
            file names it, else 4.
        num_games: B, at least 1.
        seed: an int (game ``j``'s series seed is ``match_seed(seed, j)``), a sequence of B
            non-negative ints (the series seeds themselves), or ``None`` (fresh entropy).
        record_path: a JSON Lines file for the game records of ``record_games``.
        record_games: indices of the games to record (needs ``record_path``).
        reward: ``"place"`` (``1 - 2*(place-1)/(n-1)``) or ``"points"`` (``n - place``).
        threads: worker threads to step blocks of games on (1: the calling thread only).
        **overrides: rules fields to override, as for :func:`make_rules`.

    Raises:
        RulesError: unknown preset or field, or a value out of range.
        ValueError: ``num_games`` < 1, bad seeds, record games or reward mode.
    """

    def __init__(self, rules: Rules | str | dict = "culo", num_players: int | None = None,
                 num_games: int = 4096, seed: int | Sequence[int] | None = 0,
                 record_path: str | None = None, record_games: Iterable[int] = (), *,
                 reward: str = "place", threads: int = 1, **overrides: Any):
        num_players = players_or_default(rules, num_players, overrides)
        self.rules = r = make_rules(rules, num_players, **overrides)
        if not is_integer(num_games) or num_games < 1:
            raise ValueError(f"num_games {num_games!r}: must be an integer >= 1 (the number "
                             f"of games stepped together)")
        if reward not in REWARD_MODES:
            raise ValueError(f"reward {reward!r} is not supported; allowed: "
                             f"{', '.join(REWARD_MODES)}")
        if not is_integer(threads) or threads < 1:
            raise ValueError(f"threads {threads!r}: must be an integer >= 1")
        self.num_games = B = int(num_games)
        self.n = n = r.num_players
        self.R = R = r.num_ranks
        self.reward_mode = reward
        self.threads = threads = int(threads)
        self.codec = ActionCodec(r.rank_order)
        self.num_actions = self.codec.size
        self.layout = Layout(R)
        self.obs_size = self.layout.size
        self.state_size = Layout(R, full_state=True).size
        self.hidden_size = self.state_size - self.obs_size
        self._config = self._make_config()
        self._alloc()
        self._set_seeds(seed)
        self._setup_records(record_path, record_games)
        self._started = False
        self._closed = False
        self._mask = np.zeros((B, self.num_actions), np.int8)
        self._zero_rew = np.zeros((B, n), np.float32)
        self._all = np.ones(B, np.uint8)
        threads = min(threads, B)
        self._blocks = [(int(b[0]), int(b[-1]) + 1) for b in np.array_split(np.arange(B), threads)]
        self._pool = self._worker_threads()

    # -- set-up -------------------------------------------------------------------------------

    def _make_config(self) -> np.ndarray:
        r, n = self.rules, self.n
        C = np.zeros(vs.C_SIZE, np.int64)
        C[vs.C_N], C[vs.C_R], C[vs.C_TOP] = n, self.R, r.top_rank
        C[vs.C_NOFIN] = r.no_finish_on_top
        C[vs.C_TOPEND] = r.top_card_ends_trick
        C[vs.C_ROTATE] = r.first_leader == "rotate"
        C[vs.C_DEALT] = sum(r.hand_sizes)
        C[vs.C_DECK] = r.deck_size
        C[vs.C_SWAP] = r.leftover_swap
        C[vs.C_PEX], C[vs.C_VEX] = r.president_exchange, r.vice_exchange
        C[vs.C_ROUNDS] = r.rounds or 0
        C[vs.C_TARGET] = r.target_points or 0
        C[vs.C_WINPTS] = r.winner == "points"
        C[vs.C_REWPTS] = self.reward_mode == "points"
        C[vs.C_D], C[vs.C_SD] = self.obs_size, self.state_size
        for p, title in enumerate(r.titles_for()):
            C[vs.C_TITLE + p] = TITLE_INDEX[title]
        slices = Layout(self.R, full_state=True).slices
        for i, name in enumerate(vs.OBS_SLICES):
            C[vs.C_OFF + i] = slices[name].start
        return C

    def _alloc(self) -> None:
        B = self.num_games
        self._st = np.zeros((B, vs.WIDTH), vs.STATE_DTYPE)
        self._rng = np.zeros((B, vr.NRNG), np.uint64)

    def _set_seeds(self, seed) -> None:
        B = self.num_games
        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1)[0])
        check_seed(seed, B)
        if is_integer(seed):
            games = np.empty(B, np.int64)
            vr.series_seeds(int(seed), games, np.zeros(vr.NRNG, np.uint64))
        else:
            games = np.asarray(seed).astype(np.int64)
        self._rng[:, vr.GSEED] = games.astype(np.uint64)
        # the action sampler's streams: independent of the deals
        self._rng[:, vr.SAMP] = (games.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
                                 + np.uint64(0x632BE59BD9B4E019))

    def _setup_records(self, record_path, record_games) -> None:
        B = self.num_games
        try:
            games = None if isinstance(record_games, (str, bytes)) else list(record_games)
        except TypeError:  # not iterable
            games = None
        if games is None or not all(is_integer(g) for g in games):
            raise ValueError(f"record_games {record_games!r:.80}: must be a list of game "
                             f"indices (integers 0..{B - 1})")
        games = [int(g) for g in games]
        if games and record_path is None:
            raise ValueError("record_games given without record_path; give the file to write")
        bad = [g for g in games if not 0 <= g < B]
        if bad:
            raise ValueError(f"record_games {bad}: not game indices (0..{B - 1})")
        if len(set(games)) != len(games):
            raise ValueError(f"record_games {games}: an index appears twice")
        if len(games) > vs.MAX_RECORDED:
            raise ValueError(f"record_games: {len(games)} games; at most {vs.MAX_RECORDED} "
                             f"can be recorded at once")
        self.record_games = games
        self._st[:, vs.SLOT] = -1
        for slot, g in enumerate(games):
            self._st[g, vs.SLOT] = slot
        self._rec_rows = np.array(games, np.int64)
        self._EV = np.zeros((max(len(games), 1), _EVENTS_PER_STEP, vs.EV_WIDTH), np.int64)
        self._writer = (RecordWriter(record_path).close_with(self) if record_path is not None
                        else None)
        self._events: list[list[dict]] = [[] for _ in games]
        self._rules_dict = self.rules.to_dict()
        self._players = [player_name(i) for i in range(self.n)]
        self.agent_labels: Callable[[int], dict[str, str]] | None = None

    # -- API ----------------------------------------------------------------------------------

    def reset(self, seed: int | Sequence[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Starts a new match in every game.

        The first call starts match 0 of every game's series. Later calls abandon the running
        matches (unrecorded) and start the next match of each series, or, with ``seed``, match
        0 of the series of the new seeds.

        Returns:
            ``(obs, mask)``: float32 [B, D] and int8 [B, A] for the seat to act in each game.
        """
        self._check_open()
        B = self.num_games
        if seed is not None:
            self._set_seeds(seed)
            index = np.zeros(B, np.int64)
        elif self._started:
            index = self._rng[:, vr.MIDX].astype(np.int64) + 1
        else:
            index = np.zeros(B, np.int64)
        self._started = True
        self._events = [[] for _ in self.record_games]
        self.last_totals = np.zeros((B, self.n), np.int64)
        self.last_winners = np.zeros((B, self.n), bool)
        obs = np.empty((B, self.obs_size), np.float32)
        mask = np.empty((B, self.num_actions), np.int8)
        vk.reset_games(self._st, self._rng, self._config, self._EV, index, obs, mask,
                       self._zero_rew)
        self._mask = mask.copy()  # the caller's to change: sampling and messages read this
        self._collect_events()
        return obs, mask

    def step(self, actions, where=None) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                 np.ndarray]:
        """Applies one legal action in every game.

        Args:
            actions: integer array of shape [B], one action id per game.
            where: optionally a bool array [B]: only these games move (the others keep their
                state, zero rewards, and their actions are ignored). For adapters that wait
                in some games, e.g. for a learner's seat.

        Returns:
            ``(obs, mask, rewards, done)``: float32 [B, D], int8 [B, A], float32 [B, n], bool
            [B] (see the module docstring).

        Raises:
            VectorActionError: wrong shape or dtype, or an illegal action in some game (the
                message names the game and the move); no game is changed.
            RuntimeError: ``reset()`` was not called.
        """
        self._check_open()
        self._require_started("step()")
        if where is None:
            active = self._all
        else:
            active = np.asarray(where)
            if active.shape != (self.num_games,) or active.dtype != bool:
                raise VectorActionError(f"where: expected a bool array of shape "
                                        f"({self.num_games},), got {active.dtype} "
                                        f"{active.shape}")
            active = active.view(np.uint8)
        acts = self._check_actions(actions, active)
        bad = vk.first_illegal(self._st, self._config, acts, active)
        if bad >= 0:
            raise VectorActionError(self._illegal_message(bad, int(acts[bad])), game=int(bad))
        B = self.num_games
        obs = np.empty((B, self.obs_size), np.float32)
        mask = np.empty((B, self.num_actions), np.int8)
        rew = np.empty((B, self.n), np.float32)
        done = np.empty(B, bool)
        if self._pool is None:
            vk.step_games(self._st, self._rng, self._config, self._EV, acts, active, obs, mask,
                          rew, done)
        else:
            self._run(vk.step_games, self._st, self._rng, _Whole(self._config),
                      _Whole(self._EV), acts, active, obs, mask, rew, done)
        self._mask = mask.copy()  # the caller's to change: sampling and messages read this
        if done.any():
            idx = np.flatnonzero(done)
            n = self.n
            self.last_totals[idx] = self._st[idx, vs.LTOT:vs.LTOT + n]
            self.last_winners[idx] = self._st[idx, vs.LWIN:vs.LWIN + n] != 0
        if self._writer is not None:
            self._collect_events()
        return obs, mask, rew, done

    def sample_actions(self) -> np.ndarray:
        """A uniformly random legal action for every game (int64 [B]), from per-game streams
        seeded with the games' seeds (independent of the deals)."""
        self._check_open()  # its worker threads are gone
        self._require_started("sample_actions()")
        out = np.empty(self.num_games, np.int64)
        if self._pool is None:
            vk.sample_legal(self._mask, self._rng, out)
        else:
            self._run(vk.sample_legal, self._mask, self._rng, out)
        return out

    def observe(self, seats) -> np.ndarray:
        """The observations (float32 [B, D]) of the given seat in each game, as
        ``Encoder.observe(game, seat)``: for the seat to act the row of ``obs``; for another
        seat what that seat knows (its own hand, no ``leading`` flag, ``to_give`` 0).

        Args:
            seats: int array [B] of seats (0..n-1), one per game.
        """
        self._require_started("observe()")
        s = np.asarray(seats)
        if s.shape != (self.num_games,) or s.dtype.kind not in "iu" or s.size and (
                s.min() < 0 or s.max() >= self.n):
            raise ValueError(f"seats: expected an integer array of shape ({self.num_games},) "
                             f"with seats 0..{self.n - 1}")
        out = np.empty((self.num_games, self.obs_size), np.float32)
        vk.observe_seats(self._st, self._config, np.ascontiguousarray(s, np.int64), out)
        return out

    def state(self, out: np.ndarray | None = None) -> np.ndarray:
        """The full-information vectors (float32 [B, state_size]) of :meth:`Encoder.state`
        for the seat to act in each game, written into ``out`` if given (a C-contiguous
        float32 array of that shape, e.g. a trainer's buffer row: no copy) and returned."""
        self._require_started("state()")
        out = self._out_rows(out, self.state_size)
        vk.states(self._st, self._config, out)
        return out

    def hidden_state(self, out: np.ndarray | None = None) -> np.ndarray:
        """The columns of :meth:`state` after the observation's (float32 [B, hidden_size]):
        every hand, from the seat to act's on, and the face-down cards. ``state()`` is
        ``obs`` then these: a trainer that keeps the observations already writes only these
        (``out`` as in :meth:`state`)."""
        self._require_started("hidden_state()")
        out = self._out_rows(out, self.hidden_size)
        vk.hidden_states(self._st, self._config, out)
        return out

    def _out_rows(self, out: np.ndarray | None, width: int) -> np.ndarray:
        shape = (self.num_games, width)
        if out is None:
            return np.empty(shape, np.float32)
        if (out.shape != shape or out.dtype != np.float32
                or not out.flags.c_contiguous or not out.flags.writeable):
            raise ValueError(f"out: expected a writeable C-contiguous float32 array of shape "
                             f"{shape}, got {out.dtype} {out.shape}")
        return out

    def _require_started(self, what: str) -> None:
        """Before the first ``reset()`` there are no games: their state would read as zeros."""
        if not self._started:
            raise RuntimeError(f"call reset() before {what}")

    @property
    def current_seat(self) -> np.ndarray:
        """int64 [B]: the seat to act in each game (whose observation is in ``obs``)."""
        self._require_started("current_seat")
        return self._st[:, vs.CUR].astype(np.int64)

    @property
    def action_masks(self) -> np.ndarray:
        """int8 [B, A]: the masks of the last ``reset``/``step`` (a new array each time)."""
        self._require_started("action_masks")
        return self._mask.copy()

    @property
    def match_index(self) -> np.ndarray:
        """int64 [B]: k of each game's running match in its series."""
        return self._rng[:, vr.MIDX].astype(np.int64)

    @property
    def match_seed(self) -> np.ndarray:
        """int64 [B]: the seed of each game's running match (``Game(seed=...)``)."""
        return self._rng[:, vr.MSEED].astype(np.int64)

    @property
    def series_seed(self) -> np.ndarray:
        """int64 [B]: each game's series seed."""
        return self._rng[:, vr.GSEED].astype(np.int64)

    @property
    def round(self) -> np.ndarray:
        """int64 [B]: the round of each game's running match, from 1."""
        self._require_started("round")
        return self._st[:, vs.ROUND].astype(np.int64)

    @property
    def totals(self) -> np.ndarray:
        """int64 [B, n]: match points so far per seat."""
        self._require_started("totals")
        return self._st[:, vs.TOT:vs.TOT + self.n].astype(np.int64)

    @property
    def phase(self) -> np.ndarray:
        """int64 [B]: 0 play, 1 give, 2 take, 3 lay (the observation's phase order)."""
        self._require_started("phase")
        return self._st[:, vs.PH].astype(np.int64)

    def close(self) -> None:
        """Closes the record file (it appears under its name now) and the worker threads;
        the games cannot be reset or stepped after it."""
        self._closed = True
        if self._writer is not None:
            self._writer.close()
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def _worker_threads(self):
        """The pool that runs every block of games but the first (None for one block)."""
        if len(self._blocks) == 1:
            return None
        from concurrent.futures import ThreadPoolExecutor
        return ThreadPoolExecutor(len(self._blocks) - 1, thread_name_prefix="vectorgame")

    def __getstate__(self) -> dict:
        # threads are no state: a copy (pickle, deepcopy) starts its own
        return {**self.__dict__, "_pool": None}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if not self._closed:
            self._pool = self._worker_threads()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this VectorGame is closed (its record written, its threads "
                               "stopped); make a new one to play on")

    def _run(self, kernel, *arrays) -> None:
        """Runs a per-game kernel over every game: on this thread, or in blocks of games, the
        first on this thread and the others on the worker threads (the kernels release the
        GIL). Arrays of one row per game are sliced to each block; those wrapped in
        :class:`_Whole` are passed whole."""
        if self._pool is None:
            kernel(*[a.array if type(a) is _Whole else a for a in arrays])
            return
        parts = [[a.array if type(a) is _Whole else a[lo:hi] for a in arrays]
                 for lo, hi in self._blocks]
        jobs = [self._pool.submit(kernel, *args) for args in parts[1:]]
        kernel(*parts[0])
        for job in jobs:
            job.result()

    def __enter__(self) -> "VectorGame":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"VectorGame({self.rules.preset!r}, players={self.n}, "
                f"games={self.num_games}, threads={self.threads})")

    # -- checks and messages ------------------------------------------------------------------

    def _check_actions(self, actions, active: np.ndarray) -> np.ndarray:
        """The actions as contiguous int64; the action of a game not in ``active`` (a
        waiting game) is ignored, even one that int64 cannot hold."""
        B = self.num_games
        a = action_array(actions, B)
        if a.shape != (B,):
            raise VectorActionError(f"actions: expected shape ({B},), one action id per game, "
                                    f"got shape {a.shape}")
        if a.dtype.kind not in "iu":
            raise VectorActionError(f"actions: expected an integer array, got dtype {a.dtype}")
        if a.dtype != np.int64 or not a.flags.c_contiguous:
            big = (np.flatnonzero((a > np.iinfo(np.int64).max) & (active != 0))
                   if a.dtype.kind == "u" else ())
            if len(big):
                j = int(big[0])
                raise VectorActionError(f"game {j}: action {a[j]} is out of range (allowed: "
                                        f"0..{self.num_actions - 1})", game=j)
            a = np.ascontiguousarray(a, dtype=np.int64)
        return a

    def _illegal_message(self, b: int, a: int) -> str:
        A = self.num_actions
        if not 0 <= a < A:
            return f"game {b}: action {a} is out of range (allowed: 0..{A - 1})"
        seat = int(self._st[b, vs.CUR])
        phase = PHASE_NAMES[int(self._st[b, vs.PH])]
        legal = self.codec.listing(np.flatnonzero(self._mask[b]), phase)
        return (f"game {b}: {player_name(seat)} cannot {self.codec.describe(a, phase)!r} "
                f"(action {a}) now ({phase} phase; legal: {legal}); no game was changed")

    # -- records ------------------------------------------------------------------------------

    def _collect_events(self) -> None:
        if self._writer is None:
            return
        EV, st = self._EV, self._st
        counts = st[self._rec_rows, vs.EVN]
        for slot in np.flatnonzero(counts):
            k = int(counts[slot])
            if k > EV.shape[1]:
                raise RuntimeError(f"game {self.record_games[slot]}: {k} record events in one "
                                   f"step overflow the buffer ({EV.shape[1]})")
            rows = EV[slot, :k].tolist()
            i = 0
            while i < k:
                i = self._decode(rows, i, slot)
            st[self.record_games[slot], vs.EVN] = 0

    def _cards(self, masks) -> list[str]:
        order = self.rules.rank_order
        return [order[q] + SUITS[s] for q, m in enumerate(masks) for s in range(4) if m >> s & 1]

    def _decode(self, rows: list[list[int]], i: int, slot: int) -> int:
        """Appends the event of ``rows[i]`` (and its data rows) to the game's running match,
        writing the match when it ends; returns the next row."""
        n, R, names = self.n, self.R, self._players
        events = self._events[slot]
        row = rows[i]
        kind, a1, a2, a3 = row[0], row[1], row[2], row[3]
        data = row[vs.EV_DATA:]
        order = self.rules.rank_order
        if kind == vs.EV_MATCH:
            events.append({"event": "match", "index": a1, "rules": self._rules_dict,
                           "players": list(names), "agents": {}, "seed": a2})
        elif kind == vs.EV_ROUND:
            hands = {names[rows[i + 1 + s][1]]: self._cards(rows[i + 1 + s][vs.EV_DATA:
                                                                           vs.EV_DATA + R])
                     for s in range(n)}
            left = self._cards(rows[i + 1 + n][vs.EV_DATA:vs.EV_DATA + R])
            events.append({"event": "round", "round": a1, "hands": hands, "leftover": left,
                           "leader": names[a2]})
            return i + 2 + n
        elif kind == vs.EV_SWAP:
            events.append({"event": "leftover_swap", "player": names[a1],
                           "take": self._cards([0] * a2 + [a3])[0],
                           "lay": self._cards([0] * data[0] + [data[1]])[0]})
        elif kind == vs.EV_EXCHANGE:
            events.append({"event": "exchange", "from": names[a1], "to": names[a2],
                           "cards": self._cards(data[:R])})
        elif kind == vs.EV_PLAY:
            events.append({"event": "play", "player": names[a1],
                           "cards": [order[a2] + SUITS[s] for s in range(4) if a3 >> s & 1]})
        elif kind == vs.EV_PASS:
            events.append({"event": "pass", "player": names[a1]})
        elif kind == vs.EV_TRICK:
            events.append({"event": "trick_end", "winner": names[a1]})
        elif kind == vs.EV_OUT:
            events.append({"event": "out", "player": names[a1], "place": a2,
                           "reason": vs.OUT_REASONS[a3]})
        elif kind == vs.EV_ROUND_END:
            titles = self.rules.titles_for()
            places = data[:n]
            events.append({"event": "round_end", "round": a1,
                           "places": {names[s]: places[s] for s in range(n)},
                           "titles": {names[s]: titles[places[s] - 1] for s in range(n)},
                           "points": {names[s]: n - places[s] for s in range(n)},
                           "totals": {names[s]: data[6 + s] for s in range(n)}})
        elif kind == vs.EV_MATCH_END:
            events.append({"event": "match_end",
                           "totals": {names[s]: data[s] for s in range(n)},
                           "winners": [names[s] for s in range(n) if data[6 + s]]})
            if self.agent_labels is not None:
                events[0]["agents"] = self.agent_labels(self.record_games[slot])
            self._writer.write_match(events)
            self._events[slot] = []
        else:  # pragma: no cover - a kernel bug
            raise RuntimeError(f"unknown record event row {row}")
        return i + 1


class _Whole:
    """An argument of :meth:`VectorGame._run` shared by every block of games."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray):
        self.array = array


__all__ = ["VectorGame", "VectorActionError", "REWARD_MODES", "PHASE_NAMES", "check_seed"]
