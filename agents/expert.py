"""The expert: a rule-based player built from the seeds' advice and President-family play.

Every decision is made on a :class:`Ctx`: the acting seat's cards per rank, the unseen cards
per rank, what each opponent can at most hold of each rank (card counting with the exchange
knowledge of :mod:`agents.knowledge`), the table and the rules. :func:`ctx_from_game` builds
the same from an engine state with public information only, which is how the Monte-Carlo bot
uses the expert in its playouts.

The hand is seen as groups (all cards of one rank). A group is *dominant* when no opponent
can hold as many cards of a higher rank: led, it wins the trick. The rules, in order:

* **Play**, leading: go out when the hand is one group; the exact two-player endgame search
  (:mod:`agents.endgame`); the *mate* rule (all but one group dominant: play the dominant ones,
  top rank first, then the last group); otherwise the lowest non-dominant group, whole (pairs
  slightly preferred: they are harder to beat and shed more cards).
* **Play**, following: go out when possible; the endgame search; win the trick when that
  leaves a mate; otherwise the lowest play that breaks no group, unless it spends a control
  card (dominant or top rank) on a low trick early in the round while no opponent is close to
  going out; break a group only to play a top-rank card or win the trick. Never leave a hand
  of top-rank cards only under ``no_finish_on_top`` (it is ranked last at once).
* Direct reactions to an opponent close to going out (leads it cannot follow to a finish,
  beating its plays with control cards) are in :class:`Params` but off: against the expert
  field they cost 0.05 to 0.1 rank points per round (measured with ``arschloch tournament``).
* **Give** (exchange return) and **lay** (left-over swap): the card whose loss hurts the hand
  least by :func:`hand_score` (low singletons first). **Take**: the face-up card that makes
  the best hand after the lay that follows.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, fields, replace
from itertools import accumulate

from arschloch_env.cards import POPCOUNT
from arschloch_env.rules import is_integer

from agents.endgame import SearchLimit, Solver
from agents.knowledge import Knowledge

PASS = 0



@dataclass(frozen=True)
class Params:
    """Tunables of the heuristics (variants are compared in tournaments against each other)."""

    pair_bonus: float = 1.0
    """A lead of k cards counts as (k - 1) * pair_bonus ranks lower."""
    threat_size: int = 2
    """Opponents with at most this many cards are about to go out."""
    conserve: bool = True
    """Keep a control card instead of spending it on a low trick early."""
    conserve_min_cards: int = 6
    """"Early": the seat holds more cards than this."""
    conserve_below: float = 0.5
    """"Low trick": the table rank is below this fraction of the ranks."""
    spend_on_threat: bool = True
    """Do not conserve while an opponent is close to going out (``threat_size``)."""
    endgame_cards: int = 16
    """Exact two-player search when both hands together hold at most this many cards."""
    mate: bool = True
    """Use the mate rule."""
    threat_lead: bool = False
    """Leading, avoid plays an opponent close to going out can follow to a finish."""
    threat_follow: str = "off"
    """Following a play when an opponent is close to going out: ``"win"`` beats it with a
    card nobody can beat when there is one, ``"any"`` also with the highest other play,
    ``"off"`` ignores the threat."""
    threat_near: int = 99
    """React to a threat in a follow only when the hand after winning the trick has at most
    this many non-dominant groups (the race is close)."""

    def __post_init__(self) -> None:
        # checked here, not mid-game: endgame_cards="16" failed at its first comparison
        for f in fields(self):
            value = getattr(self, f.name)
            allowed = ALLOWED[f.type] if f.name not in CHOICES else \
                (f"one of {', '.join(CHOICES[f.name])}", lambda v, c=CHOICES[f.name]: v in c)
            if not allowed[1](value):
                raise ValueError(f"expert parameter {f.name}={value!r} is not allowed; it "
                                 f"must be {allowed[0]}")


def _number(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)


ALLOWED = {
    "bool": ("True or False", lambda v: isinstance(v, bool)),
    "int": ("a whole number >= 0", lambda v: is_integer(v) and v >= 0),
    "float": ("a finite number", _number),
}
"""What a :class:`Params` field of each type may hold: (in words, the test)."""
CHOICES = {"threat_follow": ("off", "win", "any")}


DEFAULT = Params()
PLAYOUT = replace(DEFAULT, endgame_cards=10)

_SOLVERS: dict[tuple[int, bool], Solver] = {}


def solver_for(R: int, nf: bool) -> Solver:
    s = _SOLVERS.get((R, nf))
    if s is None:
        s = _SOLVERS[(R, nf)] = Solver(R, nf)
    return s


class Ctx:
    """What the acting seat knows, in counts per rank (see the module docstring)."""

    __slots__ = ("R", "top", "n", "seat", "phase", "h", "total", "u", "sizes", "opps", "poss",
                 "sm", "tr", "tk", "ts", "passed", "nf", "tcet", "top_alive", "to_give",
                 "face_up", "fd_unknown", "p", "_poss_fn")

    def possible(self, o: int) -> list[int]:
        """Per rank, the most cards of it opponent ``o`` can hold."""
        p = self.poss.get(o)
        if p is None:
            p = self.poss[o] = self._poss_fn(o)
        return p

    def can_beat(self, o: int, r: int, k: int) -> bool:
        """Opponent ``o`` may hold ``k`` cards of a rank above ``r`` that it may play."""
        p = self.possible(o)
        s = self.sizes[o]
        hi = self.R - 1 if not (self.nf and s == k) else self.R - 2
        for q in range(r + 1, hi + 1):
            if p[q] >= k:
                return True
        return False


def _suffix_max(m: list[int]) -> list[int]:
    """``sm[r]`` = the largest ``m[q]`` for ``q > r`` (0 for the top rank)."""
    acc = list(accumulate(reversed(m), max))
    return acc[-2::-1] + [0]


def _finish_ctx(c: Ctx, m: list[int]) -> Ctx:
    c.sm = _suffix_max(m)
    return c


def ctx_from_game(g, seat: int | None = None, params: Params = PLAYOUT) -> Ctx:
    """The acting seat's context from an engine state, public information only."""
    s = g.current if seat is None else seat
    R = g.R
    c = Ctx()
    c.R, c.top, c.n, c.seat, c.phase = R, R - 1, g.n, s, g.phase
    h = list(map(POPCOUNT.__getitem__, g.hands[s]))
    u = [4 - a - b for a, b in zip(h, g.gone)]
    sizes = g.sizes
    c.h, c.total, c.u, c.sizes = h, sizes[s], u, sizes
    c.opps = opps = [o for o in range(g.n) if o != s and sizes[o]]
    rules = g.rules
    c.nf, c.tcet = rules.no_finish_on_top, rules.top_card_ends_trick
    c.tr, c.tk, c.ts = g.table_rank, g.table_count, g.table_seat
    c.passed = g.passed
    c.top_alive = g.top_alive
    c.to_give = g.to_give
    c.face_up = g.face_up  # masks: only tested for being non-zero
    c.fd_unknown = sum(u) - sum(sizes[o] for o in opps)
    c.p = params
    c.poss = {}
    c._poss_fn = lambda o: [min(x, sizes[o]) for x in u]
    maxs = max((sizes[o] for o in opps), default=0)
    m = [x if x < maxs else maxs for x in u]
    if c.nf:
        m[R - 1] = min(u[R - 1], max(maxs - 1, 0))
    return _finish_ctx(c, m)


def ctx_from_knowledge(k: Knowledge, params: Params = DEFAULT) -> Ctx:
    """The context of the seat whose :class:`Knowledge` was just updated with its view."""
    R = k.R
    c = Ctx()
    c.R, c.top, c.n, c.seat, c.phase = R, R - 1, k.n, k.seat, k.phase
    c.h = h = list(k.h)
    c.total = sum(h)
    c.u = u = k.unseen_counts()
    c.sizes = sizes = k.sizes
    c.opps = opps = [o for o in range(k.n) if o != k.seat and sizes[o]]
    rules = k.rules
    c.nf, c.tcet = rules.no_finish_on_top, rules.top_card_ends_trick
    if k.table:
        c.tr, c.tk, c.ts = k.table
    else:
        c.tr, c.tk, c.ts = -1, 0, -1
    c.passed = k.view["passed"]
    laid = k.deck.counts(k.laid_known)
    alive = -1
    for r in range(R - 1, -1, -1):
        if h[r] + u[r] + laid[r]:
            alive = r
            break
    c.top_alive = alive
    c.to_give = k.view.get("to_give", 0)
    c.face_up = k.deck.counts(k.face_up)
    c.fd_unknown = k.fd_unknown
    c.p = params
    c.poss = {o: k.possible_counts(o) for o in opps}
    c._poss_fn = k.possible_counts
    m = [0] * R
    for o in opps:
        p = c.poss[o]
        for r in range(R):
            v = p[r]
            if c.nf and r == R - 1:
                v = min(v, sizes[o] - 1)
            if v > m[r]:
                m[r] = v
    return _finish_ctx(c, m)


# -- hand evaluation --------------------------------------------------------------------------

def hand_score(c: Ctx, h: list[int]) -> float:
    """How good a hand is (higher is better): every non-dominant group costs up to one lead,
    less for high ranks and bigger groups; every top-rank card is a control."""
    R, top = c.R, c.top
    score = 0.0
    for r in range(R):
        k = h[r]
        if not k:
            continue
        if r == top:
            score += 1.0 * k
        elif c.sm[r] < k:
            score += 0.25
        else:
            w = r / (R - 1) + 0.15 * (k - 1)
            score += min(w, 1.0) - 1.0
    return score


def choose_give(c: Ctx, h: list[int] | None = None) -> int:
    """The rank of the card to give away (exchange return or lay)."""
    h = list(c.h if h is None else h)
    best, best_s = -1, None
    for r in range(c.R):
        if h[r]:
            h[r] -= 1
            s = hand_score(c, h)
            h[r] += 1
            if best_s is None or s > best_s + 1e-9:
                best, best_s = r, s
    return best


def choose_take(c: Ctx) -> int:
    """The rank of the face-up card to take: the best hand after the lay that follows."""
    best, best_s = -1, None
    h = list(c.h)
    for t in range(c.R - 1, -1, -1):
        if not c.face_up[t]:
            continue
        h[t] += 1
        lay = choose_give(c, h)
        h[lay] -= 1
        s = hand_score(c, h)
        h[lay] += 1
        h[t] -= 1
        if best_s is None or s > best_s + 1e-9:
            best, best_s = t, s
    return best


# -- play ---------------------------------------------------------------------------------------

def _only_top_after(c: Ctx, r: int, k: int) -> bool:
    left = c.total - k
    if not c.nf or left == 0:
        return False
    tops = c.h[c.top] - (k if r == c.top else 0)
    return tops == left


def _nd_groups(c: Ctx, h: list[int]) -> list[int]:
    sm = c.sm
    return [r for r in range(c.R) if h[r] and sm[r] >= h[r]]


def is_mate(c: Ctx, h: list[int]) -> bool:
    """Leading with hand ``h``, every group but at most one is dominant."""
    return len(_nd_groups(c, h)) <= 1


def _endgame(c: Ctx):
    """The exact two-player move as ``(rank, count)``/``None`` (pass), or ``False``."""
    if len(c.opps) != 1:
        return False
    o = c.opps[0]
    size_o = c.sizes[o]
    if c.total + size_o > c.p.endgame_cards:
        return False
    solver = solver_for(c.R, c.nf)
    # A play left by a seat that went out, which the opponent has not passed on yet: after a
    # pass the opponent must still answer it, and its own pass gives the lead back.
    answer = c.tk > 0 and not c.sizes[c.ts] and not c.passed[o]
    try:
        if c.fd_unknown == 0:
            return solver.best_move(tuple(c.h), tuple(c.u), c.tr, c.tk, answer=answer)
        if sum(c.u) - size_o > 4:
            return False
        return solver.best_move_uncertain(tuple(c.h), tuple(c.u), size_o, c.tr, c.tk,
                                          answer=answer)
    except SearchLimit:
        return False


def _threats(c: Ctx) -> list[int]:
    return [o for o in c.opps if c.sizes[o] <= c.p.threat_size]


def lead(c: Ctx) -> int:
    h, R, top = c.h, c.R, c.top
    groups = [r for r in range(R) if h[r]]
    if len(groups) == 1:
        r = groups[0]
        return 4 * r + h[r]
    mv = _endgame(c)
    if mv:
        return 4 * mv[0] + mv[1]
    nd = _nd_groups(c, h)
    if len(nd) <= 1 and c.p.mate:
        if nd:
            finisher = nd[0]
        else:
            finisher = next(r for r in groups if r != top)
        pick = max(r for r in groups if r != finisher)
        return 4 * pick + h[pick]
    threats = _threats(c) if c.p.threat_lead else []

    def key(r: int) -> float:
        return r - c.p.pair_bonus * (h[r] - 1)

    if not nd:
        nd = [r for r in groups if r != top] or groups
    order = sorted(nd, key=key)
    if threats:
        def safe(r: int, k: int) -> bool:
            return not any(c.sizes[o] == k and c.can_beat(o, r, k) for o in threats)
        for r in order:
            if safe(r, h[r]):
                return 4 * r + h[r]
        # every group can be followed to a finish: lead the hardest to beat
        r = max(nd)
        return 4 * r + h[r]
    r = order[0]
    return 4 * r + h[r]


def follow(c: Ctx) -> int:
    h, tr, tk, top = c.h, c.tr, c.tk, c.top
    nf = c.nf
    opts = []
    for r in range(tr + 1, c.R):
        if h[r] >= tk and not (nf and r == top and tk == c.total) and not _only_top_after(c, r, tk):
            opts.append(r)
    if not opts:
        return PASS
    for r in opts:
        if h[r] == c.total == tk:
            return 4 * r + tk
    mv = _endgame(c)
    if mv is None:
        return PASS
    if mv:
        return 4 * mv[0] + mv[1]

    def wins(r: int) -> bool:
        return c.sm[r] < tk or (c.tcet and r >= c.top_alive)

    for r in opts:
        if c.p.mate and wins(r):
            h[r] -= tk
            mate = is_mate(c, h)
            h[r] += tk
            if mate:
                return 4 * r + tk
    threats = _threats(c) if c.p.threat_follow != "off" else []
    if threats:
        table_threat = 0 < c.sizes[c.ts] <= c.p.threat_size
        finish_threat = any(c.sizes[o] == tk and c.can_beat(o, tr, tk) for o in threats
                            if o != c.ts)
        if table_threat or finish_threat:
            winners = [r for r in opts if wins(r)]
            if c.p.threat_near < 99:
                def near(r: int) -> bool:
                    h[r] -= tk
                    k = len(_nd_groups(c, h))
                    h[r] += tk
                    return k <= c.p.threat_near
                winners = [r for r in winners if near(r)]
            if winners:
                return 4 * winners[0] + tk
            if c.p.threat_follow == "any":
                return 4 * opts[-1] + tk
    clean = [r for r in opts if h[r] == tk]
    if clean:
        r = clean[0]
        p = c.p
        if (p.conserve and (r == top or wins(r)) and c.total > p.conserve_min_cards
                and tr < p.conserve_below * (c.R - 1) and len(_nd_groups(c, h)) > 2
                and not (p.spend_on_threat and _threats(c))):
            return PASS
        return 4 * r + tk
    for r in opts:
        if r == top or wins(r):
            return 4 * r + tk
    return PASS


def decide(c: Ctx) -> int:
    """The expert's action id in context ``c``."""
    phase = c.phase
    if phase == "play":
        return lead(c) if c.tk == 0 else follow(c)
    if phase == "give" or phase == "lay":
        return 1 + 4 * c.R + choose_give(c)
    return 1 + 5 * c.R + choose_take(c)


def game_policy(g) -> int:
    """The expert's action for the seat to act in an engine state (public information)."""
    return decide(ctx_from_game(g))


class ExpertAgent:
    """The rule-based expert (see the module docstring)."""

    name = "expert"
    uses_view = True

    def __init__(self, params: Params | None = None, **overrides) -> None:
        self.params = replace(params or DEFAULT, **overrides)
        self.knowledge = Knowledge()

    def reset(self, rules: dict, seat: int, seed: int | None = None) -> None:
        self.knowledge.reset(rules, seat)

    def act(self, observation: dict, view: dict | None) -> int:
        k = self.knowledge.update(view)
        a = decide(ctx_from_knowledge(k, self.params))
        mask = observation["action_mask"]
        if not (0 <= a < len(mask) and mask[a]):  # pragma: no cover - a bug guard
            raise RuntimeError(f"expert chose illegal action {a} in {view['phase']!r}")
        k.note_action(a)
        return int(a)
