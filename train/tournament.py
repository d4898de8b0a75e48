"""Tournaments between bots: duplicate deals with seat rotation, on every core.

Card luck dominates a shedding game, so comparing bots on random seatings needs enormous
samples. A tournament here is a series of **blocks**; every block is one deal (one seed) that
is replayed once for every seating of the bots, so every bot meets the same cards in every
seat and the luck cancels within the block.

Bots: give either ``[candidate, field]`` (the candidate plays in every seat against ``n - 1``
copies of the field bot: ``n`` seatings) or one spec per seat (a mixed table; every distinct
seating of that multiset of bots: ``n! / prod(copies!)`` seatings, or with ``seatings=
"rotate"`` only the ``n`` cyclic rotations of the given order). Specs that appear more than
once are one bot.

Modes:

* ``duplicate`` (default): a block is **one round** dealt from the block's seed (the rules are
  played with ``rounds=1``). Round 1 has no card exchange and no left-over swap, so what is
  compared is pure card play, and the hands are exactly the same per seat in every seating.
* ``session``: a block is a **whole match** (exchange and swaps between rounds, the rules' own
  match end) replayed from the same match seed for every seating: common random numbers. Round
  1 is dealt identically; later rounds use the same shuffles, but who receives which cards
  then depends on the earlier results (the deal starts with the Arschloch, and the exchange
  moves cards), so the pairing is weaker than in ``duplicate`` mode. Use it to measure play
  including the exchange and the match-level win rate.

Block ``d`` uses the match seed ``match_seed(seed, d)`` and match index ``d`` (which fixes the
``rotate`` round-1 leader), so results depend only on ``seed``, never on the number of jobs.
Agents are ``reset(rules, seat, seed)`` before every game; results are reproducible as long as
a bot's play depends only on that.

Metrics per bot, per round it played: ``score`` (rank points over ``n - 1``: 1 for President,
0 for Arschloch), ``rank_points`` (``n - place``), ``president`` and ``arschloch`` rates,
``place``; in session mode also ``win`` (match win share, ties split). A bot's block mean
is the mean over the block's games (seatings, each counting once) of its mean in the game;
each figure is the mean over blocks of the block means, with a 95% Student-t interval over
blocks (see :mod:`train.stats`); paired differences between bots use the same blocks. OpenSkill
(Plackett-Luce) ratings are fitted to every finishing order in block order.

A tournament stopped by Ctrl-C keeps the finished blocks ``0..k-1`` before the first one
missing, so its figures are those of a complete tournament of ``k`` deals, whatever the jobs.
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing as mp
import multiprocessing.connection
import os
import secrets
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Sequence

from agents.base import (
    BUILTIN, AgentSpecError, agent_label, copy_agent, is_bundle_dir, make_agent,
)
from agents.runner import WorkerDied, play_match
from arschloch_env.cli import (
    STOP_SIGNALS, interrupt_deferred, match_seed, progress_bar, support_detail,
)
from arschloch_env.rules import (
    Rules, RulesError, is_integer, make_rules, make_rules_for_seats,
)
from train.stats import Estimate, holm_significant, mean_ci, openskill_ratings, paired_diff

MODES = ("duplicate", "session")
SEATINGS = ("all", "rotate")
ROUND_METRICS = ("score", "rank_points", "president", "arschloch", "place")
FORMAT = "arschloch-tournament/1"


class TournamentError(ValueError):
    """Arguments of a tournament that make no sense; raised before any game is played."""


# -- the table and its seatings ---------------------------------------------------------------

def plan_table(specs: Sequence[Any], num_players: int) -> tuple[list[Any], list[str], list[int]]:
    """The distinct bots, their labels, and the table as one bot index per seat.

    Raises:
        TournamentError: not 2 or ``num_players`` specs, or fewer than two distinct bots.
    """
    specs = list(specs)
    n = num_players
    if len(specs) == 2 and n != 2:
        specs = [specs[0]] + [specs[1]] * (n - 1)
    elif len(specs) != n:
        raise TournamentError(
            f"bots: {len(specs)} spec(s) for {n} players; give 2 (a candidate and the field "
            f"bot it meets in every other seat) or {n} (one per seat of a mixed table)")
    bots: list[Any] = []
    labels: list[str] = []
    keys: list[Any] = []
    table = []
    for spec in specs:
        key = spec_key(spec)
        if key not in keys:
            keys.append(key)
            bots.append(spec)
            label = agent_label(spec)
            while label in labels:
                label += "'"
            labels.append(label)
        table.append(keys.index(key))
    if len(bots) < 2:
        raise TournamentError(f"bots: only one distinct bot ({labels[0]}); a tournament "
                              f"compares at least two")
    return bots, labels, table


def spec_key(spec: Any) -> Any:
    """What makes two seats' specs the same bot: a bundle directory by its resolved path
    (``bots/b``, ``bots/b/`` and ``./bots/b`` are one bot), any other spec by its text, an
    object by its identity. A built-in name is the built-in bot, as for ``make_agent``, even
    where a bundle directory of that name lies in the working directory."""
    if not isinstance(spec, (str, Path)):
        return id(spec)
    if str(spec) not in BUILTIN and is_bundle_dir(spec):
        return str(Path(spec).resolve())
    return str(spec)


def seatings_of(table: Sequence[int], how: str = "all") -> list[tuple[int, ...]]:
    """Every distinct seating of the table's bots (``all``) or its cyclic rotations
    (``rotate``), in a fixed order; each is one bot index per seat."""
    if how == "all":
        return sorted(set(itertools.permutations(table)))
    if how == "rotate":
        out: list[tuple[int, ...]] = []
        for i in range(len(table)):
            s = tuple(table[i:]) + tuple(table[:i])
            if s not in out:
                out.append(s)
        return out
    raise TournamentError(f"seatings: {how!r} is not allowed; allowed: {', '.join(SEATINGS)}")


# -- playing one block ------------------------------------------------------------------------

class BlockPlayer:
    """Plays the blocks of one tournament; one per process, agents made once and reused."""

    def __init__(self, rules: Rules, bots: list[Any], labels: list[str],
                 seatings: list[tuple[int, ...]], seed: int, record: bool,
                 made: dict[int, Any] | None = None):
        self.rules = rules
        self.bots = bots
        self.labels = labels
        self.seatings = seatings
        self.seed = seed
        self.record = record
        self._agents: dict[tuple[int, int], Any] = {}
        self._made = dict(made or {})

    def _agent(self, bot: int, seat: int) -> Any:
        key = (bot, seat)
        if key not in self._agents:
            if bot in self._made:  # the instance that was checked first serves one seat
                agent = self._made.pop(bot)
            elif isinstance(self.bots[bot], (str, Path)):
                agent = make_agent(self.bots[bot])
            else:  # an agent object: independent copies for the other seats
                agent = copy_agent(make_agent(self.bots[bot]))
            self._agents[key] = agent
        return self._agents[key]

    def play(self, d: int, stop: Callable[[], bool] | None = None) -> dict | None:
        """Plays every seating of block ``d``; ``None`` if ``stop()`` turned true meanwhile."""
        seed = match_seed(self.seed, d)
        games, events = [], []
        for seating in self.seatings:
            if stop is not None and stop():
                return None
            agents = [self._agent(b, s) for s, b in enumerate(seating)]
            game = play_match(self.rules, agents, seed=seed, match_index=d, record=self.record,
                              labels=[self.labels[b] for b in seating])
            games.append({"seating": list(seating),
                          "rounds": [list(p) for p in game.round_places],
                          "winners": list(game.winners)})
            if self.record:
                events.append(game.events)
        return {"deal": d, "seed": seed, "games": games, "events": events if self.record else None}


def _quiet_stop_signals() -> None:
    """A worker's signals: the parent decides when to stop (Ctrl-C), and SIGTERM or SIGHUP
    end it wherever it waits."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A handler inherited from the parent (SIGTERM and SIGHUP raise there) runs only between
    # bytecodes: a worker waiting inside a call would outlive the parent's terminate(). The
    # default action ends it at once.
    for s in STOP_SIGNALS:
        signal.signal(s, signal.SIG_DFL)


class _BotStopped(Exception):
    """A bot raised KeyboardInterrupt or SystemExit in a worker. Let through, it would end the
    worker with its deal unanswered; sent back as an ordinary exception, the parent raises the
    original kind as play in one process does."""


def _serve(player: BlockPlayer, conn) -> None:
    """A worker process: plays each deal the parent sends over ``conn`` and sends back
    ``(True, block)`` or ``(False, exception)``, until the connection closes."""
    _quiet_stop_signals()
    while True:
        try:
            d = conn.recv()
        except EOFError:
            return
        try:
            answer = (True, player.play(d))
        except (KeyboardInterrupt, SystemExit) as e:
            answer = (False, _BotStopped(type(e).__name__, getattr(e, "code", None)))
        except Exception as e:  # noqa: BLE001 - the parent raises it as play in one process does
            answer = (False, e)
        try:
            conn.send(answer)
        except Exception as e:  # noqa: BLE001 - pickling fails before a byte is sent
            conn.send((False, RuntimeError(f"a worker could not send back its "
                                           f"{'deal' if answer[0] else 'error'} ({e})")))


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def worker_died(process) -> WorkerDied:
    """The error for a worker that ended with its deal unanswered, naming how it ended."""
    how = (f"killed by {signal_name(-process.exitcode)}" if process.exitcode < 0
           else f"exit status {process.exitcode}")
    return WorkerDied(f"a worker process playing the tournament's games ended ({how}): a bot "
                      f"ended its process, or the system did (out of memory?)")


class _StopFlag:
    """Ctrl-C sets a flag instead of raising; a second Ctrl-C raises KeyboardInterrupt.
    ``notice``, where the flag is read only between games, is printed at the first: a slow
    bot's game can take minutes to end."""

    def __init__(self, notice: str | None = None) -> None:
        self.flag = False
        self.notice = notice
        self._prev = None
        self._installed = False

    def _handler(self, signum, frame) -> None:
        self.flag = True
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if self.notice:
            print(self.notice, file=sys.stderr, flush=True)

    def __enter__(self) -> "_StopFlag":
        if threading.current_thread() is threading.main_thread():
            self._prev = signal.signal(signal.SIGINT, self._handler)
            self._installed = True
        return self

    def __exit__(self, *exc) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._prev)

    def __call__(self) -> bool:
        return self.flag


def _blocks_in_process(player: BlockPlayer, deals: int, stop: _StopFlag):
    for d in range(deals):
        block = player.play(d, stop)
        if block is None:
            return
        yield block


def _blocks_in_pool(player: BlockPlayer, deals: int, jobs: int, stop: _StopFlag):
    """The blocks of ``deals`` from ``jobs`` worker processes, in the order they finish.

    Each worker has a pipe of its own and plays one deal at a time. (multiprocessing.Pool
    shares one result queue and its lock among the workers: its terminate() could kill a
    worker that held the lock while sending, and then waited for it forever, CPython issue
    96995; a pipe per worker has no lock to leave held.)"""
    methods = mp.get_all_start_methods()
    ctx = mp.get_context("fork" if "fork" in methods else "spawn")
    workers = {}  # the parent's end of each worker's pipe -> its process
    try:
        for _ in range(jobs):
            here, there = ctx.Pipe()
            process = ctx.Process(target=_serve, args=(player, there), daemon=True)
            process.start()
            there.close()
            workers[here] = process
        handed, busy = 0, []  # deals handed out; the pipes of the workers playing one
        for conn in list(workers)[:deals]:
            conn.send(handed)
            handed += 1
            busy.append(conn)
        while busy:
            if stop():
                return
            mp.connection.wait([*busy, *(workers[c].sentinel for c in busy)], timeout=0.1)
            for conn in [c for c in busy if c.poll()]:
                try:
                    ok, value = conn.recv()
                except EOFError:  # it ended before it answered
                    workers[conn].join()
                    raise worker_died(workers[conn]) from None
                busy.remove(conn)
                if not ok and isinstance(value, _BotStopped):
                    kind, code = value.args
                    raise KeyboardInterrupt if kind == "KeyboardInterrupt" else SystemExit(code)
                if not ok:
                    raise value
                if handed < deals:
                    conn.send(handed)
                    handed += 1
                    busy.append(conn)
                yield value
            for conn in busy:
                if workers[conn].exitcode is not None and not conn.poll():
                    raise worker_died(workers[conn])
    finally:
        for conn, process in workers.items():
            process.terminate()
            process.join()
            conn.close()


# -- the result -------------------------------------------------------------------------------

@dataclass
class TournamentResult:
    """Everything a tournament found; :meth:`to_dict` is the ``results.json`` content."""

    rules: dict
    rules_given: dict
    mode: str
    seatings: str
    seed: int
    deals_requested: int
    bots: list[dict]
    table: list[str]
    seat_orders: list[list[str]]
    deal_seeds: list[int]
    games: int
    rounds: int
    metrics: dict[str, dict[str, Estimate]]
    paired: list[dict]
    openskill: dict[str, dict]
    places: dict[str, dict]
    """Per bot, ``counts`` of rounds finished in each place and their ``share``, weighted as
    the metrics are (each game once, its rounds sharing that weight)."""
    by_seat: dict[str, list[float | None]]
    """Per bot and seat, the mean score, weighted as ``places``."""
    complete: bool
    level: float = 0.95
    run: dict = field(default_factory=dict)

    @property
    def labels(self) -> list[str]:
        return [b["label"] for b in self.bots]

    @property
    def deals_done(self) -> int:
        return len(self.deal_seeds)

    @property
    def num_players(self) -> int:
        return self.rules["num_players"]

    def metric_names(self) -> list[str]:
        return list(ROUND_METRICS) + (["win"] if self.mode == "session" else [])

    def to_dict(self) -> dict:
        """JSON form: rules, seeds, bot specs and every figure (``run`` holds timing only)."""
        return {
            "format": FORMAT,
            "complete": self.complete,
            "mode": self.mode,
            "seatings": self.seatings,
            "rules": self.rules,
            "rules_given": self.rules_given,
            "seed": self.seed,
            "seeding": "block d is dealt from match seed SeedSequence([seed, d]) "
                       "(arschloch_env.cli.match_seed) with match index d",
            "deals_requested": self.deals_requested,
            "deals_done": self.deals_done,
            "deal_seeds": self.deal_seeds,
            "bots": self.bots,
            "table": self.table,
            "seat_orders": self.seat_orders,
            "games": self.games,
            "rounds": self.rounds,
            "level": self.level,
            "metrics": {b: {m: e.to_dict() for m, e in ms.items()}
                        for b, ms in self.metrics.items()},
            "intervals": f"Student t over {'deals' if self.mode == 'duplicate' else 'sessions'}"
                         f" (one mean per block: a deal or session with all its seatings), "
                         f"level {self.level}; a paired difference is 'significant' with "
                         f"Holm's correction over all the pairs",
            "paired": [{"a": p["a"], "b": p["b"], "significant": p["significant"],
                        "metrics": {m: e.to_dict() for m, e in p["metrics"].items()}}
                       for p in self.paired],
            "openskill": self.openskill,
            "places": self.places,
            "by_seat": self.by_seat,
            "run": self.run,
        }


def _round_figures(place: int, n: int) -> dict[str, int]:
    """One seat's figures in one round, from its place: integers, so that sums are exact
    (the score is the rank points over ``n - 1``, divided last)."""
    return {"score": n - place, "rank_points": n - place, "president": int(place == 1),
            "arschloch": int(place == n), "place": place}


def _metric_range(metric: str, n: int) -> tuple[int, int]:
    """The values a block's mean of ``metric`` can take at ``n`` players (its interval is cut
    to them)."""
    return {"rank_points": (0, n - 1), "place": (1, n)}.get(metric, (0, 1))


def _game_means(game: dict, n: int, k: int) -> list[dict[str, Fraction]]:
    """Per bot, its exact mean figures over every round and seat it had in one game, and its
    share of the match win (ties split) per seat."""
    seating, winners = game["seating"], game["winners"]
    sums = [dict.fromkeys(ROUND_METRICS, 0) for _ in range(k)]
    rounds_seats = [0] * k
    for places in game["rounds"]:
        for seat, b in enumerate(seating):
            for m, v in _round_figures(places[seat], n).items():
                sums[b][m] += v
            rounds_seats[b] += 1
    seats, wins = [0] * k, [Fraction(0)] * k
    for seat, b in enumerate(seating):
        seats[b] += 1
        wins[b] += Fraction(1, len(winners)) if seat in winners else 0
    return [{**{m: Fraction(sums[b][m], rounds_seats[b] * (n - 1 if m == "score" else 1))
                for m in ROUND_METRICS},
             "win": wins[b] / seats[b]} for b in range(k)]


def _block_means(block: dict, n: int, k: int, names: list[str]) -> list[dict[str, Fraction]]:
    """Per bot, the mean over the block's games of its game means.

    Every game (seating) counts once, however many rounds it lasted: the seatings put every
    bot in every seat equally often, and only equal weights keep that balance, which is what
    cancels the card luck. Pooling rounds would let one long match (a points target) outweigh
    the other seatings of its block. The means are exact (the statistics round them), so two
    bots that play alike differ by exactly 0, and a difference that is the same in every block
    is exactly the same, not spread by rounding errors that an interval of width 0 would call
    significant."""
    per_game = [_game_means(g, n, k) for g in block["games"]]
    return [{m: sum(g[b][m] for g in per_game) / len(per_game) for m in names}
            for b in range(k)]


def summarise(blocks: list[dict], *, rules: Rules, rules_given: Rules, mode: str,
              seatings: str, seed: int, deals: int, bots: list[Any], labels: list[str],
              table: list[int], seat_orders: list[tuple[int, ...]], complete: bool,
              level: float = 0.95) -> TournamentResult:
    """The figures of finished blocks (in any order; they are sorted by deal)."""
    blocks = sorted(blocks, key=lambda b: b["deal"])
    n = rules.num_players
    k = len(labels)
    metrics_names = list(ROUND_METRICS) + (["win"] if mode == "session" else [])
    # exact block means: a paired difference is taken before any rounding
    per_block: dict[str, list[list[Fraction]]] = {m: [[] for _ in range(k)]
                                                  for m in metrics_names}
    place_counts = [[0] * n for _ in range(k)]
    # weighted as the metrics are: every game once, its rounds sharing its weight
    place_weight = [[Fraction(0)] * n for _ in range(k)]
    seat_sum = [[Fraction(0)] * n for _ in range(k)]
    seat_weight = [[Fraction(0)] * n for _ in range(k)]
    finishing: list[tuple[tuple[int, ...], list[int]]] = []
    games = rounds = 0
    for block in blocks:
        for g in block["games"]:
            games += 1
            seating = g["seating"]
            w = Fraction(1, len(g["rounds"]))
            for places in g["rounds"]:
                rounds += 1
                finishing.append((tuple(seating), places))
                for seat, b in enumerate(seating):
                    p = places[seat]
                    place_counts[b][p - 1] += 1
                    place_weight[b][p - 1] += w
                    seat_sum[b][seat] += w * Fraction(n - p, n - 1)
                    seat_weight[b][seat] += w
        for b, means in enumerate(_block_means(block, n, k, metrics_names)):
            for m in metrics_names:
                per_block[m][b].append(means[m])
    metrics: dict[str, dict[str, Estimate]] = {}
    paired: list[dict] = []
    if blocks:
        metrics = {labels[b]: {m: mean_ci(per_block[m][b], level, _metric_range(m, n))
                               for m in metrics_names}
                   for b in range(k)}
        paired = [{"a": labels[i], "b": labels[j],
                   "metrics": {m: paired_diff(per_block[m][i], per_block[m][j], level,
                                              _metric_range(m, n))
                               for m in metrics_names}}
                  for i, j in itertools.combinations(range(k), 2)]
        # rank points are the score times n - 1: both give the same verdict
        for p, significant in zip(paired, holm_significant(
                [p["metrics"]["score"] for p in paired], level)):
            p["significant"] = significant
    ratings = openskill_ratings(finishing, k) if finishing else []
    total = [sum(c) for c in place_weight]
    return TournamentResult(
        rules=rules.to_dict(), rules_given=rules_given.to_dict(), mode=mode, seatings=seatings,
        seed=seed, deals_requested=deals,
        bots=[{"label": labels[b], "spec": str(bots[b]) if isinstance(bots[b], (str, Path))
               else f"<object {type(bots[b]).__module__}.{type(bots[b]).__qualname__}>",
               "seats": table.count(b)} for b in range(k)],
        table=[labels[b] for b in table],
        seat_orders=[[labels[b] for b in s] for s in seat_orders],
        deal_seeds=[b["seed"] for b in blocks], games=games, rounds=rounds,
        metrics=metrics, paired=paired,
        openskill={labels[b]: ratings[b] for b in range(k)} if ratings else {},
        places={labels[b]: {"counts": place_counts[b],
                            "share": [float(c / total[b]) if total[b] else 0.0
                                      for c in place_weight[b]]} for b in range(k)},
        by_seat={labels[b]: [float(seat_sum[b][s] / seat_weight[b][s]) if seat_weight[b][s]
                             else None for s in range(n)] for b in range(k)},
        complete=complete, level=level)


# -- the API ----------------------------------------------------------------------------------

def _as_int(name: str, value: Any) -> int:
    """``value`` as a plain int; numpy's integers are integers too, a bool is not."""
    if not is_integer(value):
        raise TournamentError(f"{name}: {value!r} is not an integer")
    return int(value)


def _check_int(name: str, value: Any, low: int) -> int:
    value = _as_int(name, value)
    if value < low:
        raise TournamentError(f"{name}: {value} is not allowed; it must be at least {low}")
    return value


def _make_rules(rules: Any, players: int | None, overrides: dict, specs: int) -> Rules:
    """The rules of the tournament; the table size is the number of specs when one is given
    per seat and nothing else names it.

    Raises:
        TournamentError: invalid rules; a table size counted from the specs says so, as the
            user never typed that number.
    """
    if players is not None:
        players = _as_int("players", players)  # the rules name the allowed range
    try:
        if specs > 2:
            return make_rules_for_seats(rules, players, specs,
                                        f"bots: {specs} specs, one per seat,", **overrides)
        return make_rules(rules, players, **overrides)
    except RulesError as exc:
        raise TournamentError(str(exc)) from None


def _check_match_length_is_kept(mode: str, overrides: dict) -> None:
    """A match length asked for by name would be dropped without a word in duplicate mode,
    which plays every deal as one round.

    Raises:
        TournamentError: ``rounds`` other than 1, or ``target_points``, set in duplicate mode.
    """
    asked = {k: v for k, v in overrides.items()
             if v is not None and (k == "target_points" or (k == "rounds" and v != 1))}
    if mode == "duplicate" and asked:
        field, value = next(iter(asked.items()))
        raise TournamentError(f"{field}={value}: duplicate mode plays every deal as a single "
                              f"round (no exchange, no titles); play whole matches with mode "
                              f"'session' (--mode session)")


def make_bots(specs: Sequence[Any], labels: Sequence[str], rules: Rules) -> list[Any]:
    """The agents of ``specs``, each checked to play ``rules``.

    Raises:
        TournamentError: a spec that makes no agent, or an agent whose ``supports(rules)``
            refuses them (with its reason where it gives one).
    """
    rules_dict = rules.to_dict()
    agents = []
    for spec, label in zip(specs, labels):
        try:
            agent = make_agent(spec)
            if not isinstance(spec, (str, Path)):
                copy_agent(agent)  # every other seat plays a copy: fail before any game
        except AgentSpecError as exc:
            raise TournamentError(str(exc)) from None
        supports = getattr(agent, "supports", None)
        if callable(supports) and not supports(dict(rules_dict)):
            raise TournamentError(f"bot {label!r} does not support these rules "
                                  f"({rules.preset}, {rules.num_players} players)"
                                  + (support_detail(agent, rules)
                                     or "; its supports(rules) returned false"))
        agents.append(agent)
    return agents


def _unbroken_prefix(done: dict[int, dict]) -> list[dict]:
    """The finished blocks ``0..k-1`` before the first one missing.

    Workers finish blocks out of order, and those still running at Ctrl-C tend to be the slow
    ones: keeping the later blocks would bias the sample towards quick deals and make a
    partial result depend on the number of jobs."""
    k = 0
    while k in done:
        k += 1
    return [done[d] for d in range(k)]


def default_jobs() -> int:
    """Every core this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def _check_bots_is_a_list(bots: Any) -> None:
    # one spec given alone would be read a character at a time ("unknown agent spec 'e'")
    if isinstance(bots, (str, bytes, os.PathLike)) or not isinstance(bots, Sequence):
        raise TournamentError(f"bots: {bots!r} is not a list of agent specs; give a list: "
                              f"[candidate, field] or one spec per seat")


def run_tournament(rules: Rules | str | dict, bots: Sequence[Any], deals: int,
                   seed: int | None = 0, mode: str = "duplicate", jobs: int | None = None, *,
                   players: int | None = None, seatings: str = "all",
                   record: str | os.PathLike | None = None, progress: bool | None = False,
                   level: float = 0.95, **overrides: Any) -> TournamentResult:
    """Plays a duplicate tournament and returns its figures.

    Args:
        rules: a preset name, rules dict or file, or a :class:`Rules`.
        bots: agent specs (built-in names, bundle dirs, ``package.module:ClassName``, or agent
            objects): ``[candidate, field]`` or one per seat.
        deals: blocks to play (each: one deal in every seating).
        seed: seed of the whole tournament; ``None`` draws one (it is in the result).
        mode: ``"duplicate"`` (one round per deal) or ``"session"`` (whole matches).
        jobs: worker processes (default, and at most: every core this process may use);
            the figures do not depend on it.
        players: table size (default: the rules', or the number of specs if one per seat).
        seatings: ``"all"`` distinct seatings or ``"rotate"`` (cyclic shifts only).
        record: write every game's record (JSON Lines) to this file, in block order.
        progress: show a tqdm bar with ETA (``None``: only on a terminal).
        level: confidence level of the intervals.
        **overrides: rules fields to override (``rounds=3`` ...).

    Returns:
        The :class:`TournamentResult`; ``complete`` is false when Ctrl-C stopped it (the
        figures, and the record, are then those of the deals ``0..k-1`` that finished before
        the first one that did not).

    Raises:
        TournamentError: bad arguments, unknown bot specs, or a bot that does not support the
            rules; always before any game.
    """
    if mode not in MODES:
        raise TournamentError(f"mode: {mode!r} is not allowed; allowed: {', '.join(MODES)}")
    if seatings not in SEATINGS:
        raise TournamentError(f"seatings: {seatings!r} is not allowed; allowed: "
                              f"{', '.join(SEATINGS)}")
    deals = _check_int("deals", deals, 1)
    jobs = default_jobs() if jobs is None else _check_int("jobs", jobs, 1)
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0.0 < level < 1.0:
        raise TournamentError(f"level: {level!r} must lie strictly between 0 and 1")
    if seed is None:
        seed = secrets.randbits(31)
    seed = _check_int("seed", seed, 0)
    _check_bots_is_a_list(bots)
    given = _make_rules(rules, players, overrides, len(bots))
    _check_match_length_is_kept(mode, overrides)
    try:
        played = given.replace(rounds=1) if mode == "duplicate" else given
    except RulesError as exc:
        raise TournamentError(str(exc)) from None
    specs, labels, table = plan_table(bots, given.num_players)
    orders = seatings_of(table, seatings)
    made = dict(enumerate(make_bots(specs, labels, played)))
    writer = None
    if record is not None:
        from arschloch_env.records import RecordWriter
        try:
            writer = RecordWriter(record)
        except (OSError, ValueError) as exc:
            raise TournamentError(f"record: {exc}") from None

    # a person reads and types at this terminal: worker processes have no stdin; and more
    # processes than cores only take turns, each with its own copy of the bots
    jobs = (1 if any(getattr(a, "interactive", False) for a in made.values())
            else min(jobs, deals, default_jobs()))
    player = BlockPlayer(played, specs, labels, orders, seed, record is not None,
                         made if jobs == 1 else None)
    started = time.time()
    done: dict[int, dict] = {}
    next_to_write = 0
    interrupted = False
    notice = ("stopping once the game in progress ends (its deal is not kept); Ctrl-C again "
              "stops at once" if jobs == 1 else None)
    with _StopFlag(notice) as stop:
        source = (_blocks_in_process(player, deals, stop) if jobs == 1
                  else _blocks_in_pool(player, deals, jobs, stop))
        bar = progress_bar(progress, total=deals * len(orders), unit="game", desc="tournament",
                           leave=False)
        # a bot's or a worker's error: the record's note says what it holds (the unbroken
        # prefix of deals)
        with writer or contextlib.nullcontext():
            try:
                for block in source:
                    # a deal the results keep is in the record too: a stop between keeping
                    # and writing it would leave the two apart
                    with interrupt_deferred():
                        done[block["deal"]] = block
                        bar.update(len(block["games"]))
                        while writer is not None and next_to_write in done:
                            for events in done[next_to_write]["events"]:
                                writer.write_match(events)
                            done[next_to_write]["events"] = None
                            next_to_write += 1
            except KeyboardInterrupt:
                interrupted = True
            finally:
                bar.close()
        interrupted = interrupted or stop.flag
    kept = _unbroken_prefix(done)
    result = summarise(kept, rules=played, rules_given=given, mode=mode,
                       seatings=seatings, seed=seed, deals=deals, bots=specs, labels=labels,
                       table=table, seat_orders=orders,
                       complete=len(kept) == deals, level=level)
    result.run = {"jobs": jobs, "elapsed_s": round(time.time() - started, 3),
                  "interrupted": interrupted,
                  "record": str(record) if record is not None else None,
                  "record_matches": writer.matches if writer is not None else 0}
    return result


__all__ = ["BlockPlayer", "MODES", "SEATINGS", "TournamentError", "TournamentResult",
           "default_jobs", "make_bots", "plan_table", "run_tournament", "seatings_of",
           "summarise"]
