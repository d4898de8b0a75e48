"""Determinized Monte-Carlo search with the expert as playout policy.

At every decision with more than one legal action the bot deals the cards it has not seen
consistently with everything it knows (:meth:`agents.knowledge.Knowledge.sample`: counts,
seen cards, the exchange), builds an engine state of the current decision from it
(:func:`build_world`), and plays every candidate move out to the end of the round with
:func:`agents.expert.game_policy` for every seat. Each sampled world is played once per
candidate (common random numbers), and the candidate with the best mean round points
(``n - place``) is chosen; the expert's own move wins near-ties, so that noise alone does not
change a good rule-based choice.

With ``policy`` (a trained bot's :class:`agents.bundle.BundleAgent`) the search improves that
policy instead: the candidates are its ``top_k`` most likely legal moves, its own choice wins
near-ties, and in the playouts the searching seat plays the policy (the others the expert).

The search is deterministic given the ``reset`` seed.
"""

from __future__ import annotations

import numbers

import numpy as np

from arschloch_env.engine import GIVE, LAY, PLAY, TAKE, Game
from arschloch_env.observation import Encoder, Layout
from arschloch_env.rules import is_integer, make_rules

from agents.expert import DEFAULT, ctx_from_knowledge, decide, game_policy
from agents.knowledge import Knowledge, SampleError, role_seats


def _world_template(rules) -> Game:
    """An engine state of the rules whose match ends with the current round."""
    one = rules.replace(rounds=1)
    return Game(one, seed=0, auto_pass=True)


def _places_marks(places: list[int | None], n: int) -> tuple[int, int]:
    """(next free place from the top, next free place from the bottom)."""
    taken = {p for p in places if p is not None}
    top = 1
    while top in taken:
        top += 1
    bottom = n
    while bottom in taken:
        bottom -= 1
    return top, bottom


def build_world(template: Game, k: Knowledge, hands: dict[int, list[int]],
                face_down: list[int]) -> Game:
    """The engine state of ``k``'s current decision with the hidden cards dealt as given.

    Args:
        template: from :func:`_world_template` for the same rules.
        k: the deciding seat's knowledge, updated with its view.
        hands: card ids of every other seat holding cards.
        face_down: the unknown face-down cards (the seat's own laid cards are added).
    """
    g = template.clone(keep_rng=False)
    n, R, deck = k.n, k.R, k.deck
    g.hands = [deck.masks(hands.get(s, ())) for s in range(n)]
    g.hands[k.seat] = deck.masks(k.hand)
    g.sizes = list(k.sizes)
    g.places = list(k.places)
    g.active = sum(1 for x in g.sizes if x)
    g.next_top, g.next_bottom = _places_marks(g.places, n)
    if k.table:
        g.table_rank, g.table_count, g.table_seat = k.table
    else:
        g.table_rank, g.table_count, g.table_seat = -1, 0, -1
    g.passed = list(k.view["passed"])
    g.passes = sum(g.passed)
    g.plays = []
    g.revealed = [deck.masks(cards)[R - 1] for cards in k.revealed]
    g.given = [[0] * R for _ in range(n)]
    g.received = [[0] * R for _ in range(n)]
    g.given[k.seat] = deck.masks(deck.ids(k.view["given"]))
    g.received[k.seat] = deck.masks(deck.ids(k.view["received"]))
    g.titles = list(k.titles)
    g.face_down = deck.masks(list(face_down) + sorted(k.laid_known))
    g.face_up = deck.masks(k.face_up)
    played = deck.counts(k.played)
    g.played = played
    fu = deck.counts(k.face_up)
    gone = [played[r] + fu[r] for r in range(R)]
    gone[R - 1] += sum(map(len, k.revealed))
    g.gone = gone
    g._recompute_top_alive()
    g.round, g.rounds_done, g.round_places = 1, 0, []
    g.totals = list(k.view["totals"])
    g.last_places = g.last_points = g.winners = None
    g.current = k.seat
    g.phase = k.phase
    g._give_buffer = []
    g._swap_take = None
    g.to_give, g.give_to = 0, -1
    g.tasks = []
    if k.phase != PLAY:
        _setup_tasks(g, k)
    return g


def _setup_tasks(g: Game, k: Knowledge) -> None:
    """The remaining left-over swap and exchange steps of a decision before the play."""
    rules, n, me = k.rules, k.n, k.seat
    roles = role_seats(k.titles)
    g.leader = roles.get("Arschloch", me)
    exchange = []
    c, v = rules.president_exchange, rules.vice_exchange
    if c and "President" in roles and "Arschloch" in roles:
        exchange += [("auto", roles["Arschloch"], roles["President"], c),
                     (GIVE, roles["President"], roles["Arschloch"], c)]
    if v and "Vice-President" in roles and "Vice-Arschloch" in roles:
        exchange += [("auto", roles["Vice-Arschloch"], roles["Vice-President"], v),
                     (GIVE, roles["Vice-President"], roles["Vice-Arschloch"], v)]
    if k.phase == GIVE:
        g.give_to = roles["Arschloch"] if k.titles[me] == "President" else roles["Vice-Arschloch"]
        g.to_give = int(k.view["to_give"])
        i = next(i for i, t in enumerate(exchange) if t[0] == GIVE and t[1] == me)
        g.tasks = exchange[i:]
        return
    left = rules.num_leftover
    up = len(k.face_up)
    third = up == left if k.phase == TAKE else up == left - 1
    fourth_swap = []
    if third and n >= 4:
        if n == 6:
            fourth = next(s for s in range(n) if s != me and k.titles[s] == "Citizen")
        else:
            fourth = roles.get("Vice-Arschloch" if n == 5 else "Arschloch")
        if fourth is not None:
            fourth_swap = [(TAKE, fourth), (LAY, fourth)]
    if k.phase == TAKE:
        g.tasks = [(TAKE, me), (LAY, me)] + fourth_swap + exchange
    else:
        t = k.taken if k.taken is not None else k.hand[0]
        g._swap_take = (t >> 2, 1 << (t & 3))
        g.tasks = [(LAY, me)] + fourth_swap + exchange


def playout(g: Game, seat: int, own=None) -> int:
    """Plays the round out, the seat's round points: ``own(g)`` chooses for ``seat`` (the
    expert when None), the expert for every other seat."""
    policy = game_policy
    while g.phase != "over":
        g.step(own(g) if own is not None and g.current == seat else policy(g))
    return g.n - g.last_places[seat]


class MCAgent:
    """Determinized Monte-Carlo search (see the module docstring).

    Args:
        budget: playouts per decision, spread evenly over the candidate moves (at least
            ``min_worlds`` sampled deals each).
        min_worlds: the fewest sampled deals per decision.
        margin: how much better (in mean round points) another move must score than the
            default move (the expert's, or the policy's) to be chosen instead.
        policy: a trained bot with ``policy(observations, masks) -> (actions, logits)`` and
            ``fit_totals(observation)`` (a :class:`agents.bundle.BundleAgent`) to improve
            instead of the expert.
        top_k: with ``policy``, how many of its most likely legal moves are searched.
    """

    uses_view = True

    def __init__(self, budget: int = 100, min_worlds: int = 8, margin: float = 0.05,
                 policy=None, top_k: int = 3):
        for name, value, what in (("budget", budget, "sampled deals per decision"),
                                   ("min_worlds", min_worlds, "sampled deals per move"),
                                   ("top_k", top_k, "moves of the policy searched")):
            if not (is_integer(value) and value >= 1):
                raise ValueError(f"{name} must be a whole number of at least 1 ({what}), "
                                 f"got {value!r}")
        if not (isinstance(margin, numbers.Real) and not isinstance(margin, bool)
                and margin >= 0):  # also refuses NaN
            raise ValueError(f"margin must be a number of round points >= 0, got {margin!r}")
        if policy is not None and not (callable(getattr(policy, "policy", None))
                                       and callable(getattr(policy, "fit_totals", None))
                                       and hasattr(policy, "name")):
            raise ValueError(f"policy must be a loaded bundle "
                             f"(agents.bundle.load_bundle(path)), got {policy!r}")
        self.budget = int(budget)
        self.min_worlds = int(min_worlds)
        self.margin = float(margin)
        self.policy = policy
        self.top_k = int(top_k)
        self.name = "mc" if policy is None else f"mc+{policy.name}"
        self.knowledge = Knowledge()
        self.rng = np.random.default_rng(0)
        self._template: Game | None = None
        self._rules_key = None
        self._encoder: Encoder | None = None
        self._progress: tuple[slice, np.ndarray] | None = None

    def supports(self, rules: dict) -> bool:
        """Every rule set, or with a policy the rules it plays (a bundle's manifest): a
        tournament then refuses other rules before any game, not inside a worker."""
        supports = getattr(self.policy, "supports", None)
        return supports is None or bool(supports(rules))

    def reset(self, rules: dict, seat: int, seed: int | None = None) -> None:
        self.knowledge.reset(rules, seat)
        self.rng = np.random.default_rng(seed)
        self._template = None
        if self.policy is not None:
            self.policy.reset(rules, seat, seed)

    def _template_for(self, k: Knowledge) -> Game:
        key = k.rules
        if self._template is None or self._rules_key != key:
            self._template = _world_template(make_rules(k.rules))
            self._rules_key = key
        return self._template

    def candidates(self, k: Knowledge, legal: list[int]) -> list[int]:
        """The moves worth searching: in a lead, whole groups and single cards only."""
        if k.phase != PLAY or k.table is not None:
            return legal
        h = k.h
        out = []
        for a in legal:
            r, cnt = (a - 1) // 4, (a - 1) % 4 + 1
            if cnt == h[r] or cnt == 1:
                out.append(a)
        return out

    def policy_order(self, vector: np.ndarray, mask: np.ndarray) -> list[int]:
        """The legal moves from the policy's most to its least likely, on the observation the
        bundle's own ``act`` would read (the totals of long matches scaled)."""
        _, logits = self.policy.policy(self.policy.fit_totals(vector)[None],
                                       np.asarray(mask, np.int8)[None])
        legal = np.flatnonzero(mask)
        return [int(a) for a in legal[np.argsort(-logits[0][legal], kind="stable")]]

    def policy_move(self, g: Game) -> int:
        """The policy's move in a playout (the seat to act in ``g``), on the observation it
        would have in the real game: a world's match ends with its round, so its match
        progress is the real one's, which is the same all round."""
        observation = self._encoder.observe(g, g.current)
        where, progress = self._progress
        observation[where] = progress
        return self.policy_order(observation, g.legal_mask())[0]

    def act(self, observation: dict, view: dict | None) -> int:
        k = self.knowledge.update(view)
        mask = observation["action_mask"]
        legal = [int(a) for a in np.flatnonzero(mask)]
        if len(legal) == 1:
            choice = legal[0]
        elif self.policy is not None:
            if self._encoder is None or self._encoder.R != k.R:  # also without reset()
                self._encoder = Encoder(k.R)
            where = Layout(k.R).slices["match_progress"]
            self._progress = where, observation["observation"][where].copy()
            cands = self.policy_order(observation["observation"], mask)[:self.top_k]
            choice = self.search(k, cands, cands[0]) if len(cands) > 1 else cands[0]
        else:
            expert = decide(ctx_from_knowledge(k, DEFAULT))
            cands = self.candidates(k, legal)
            if expert not in cands:
                cands.append(expert)
            choice = self.search(k, cands, expert) if len(cands) > 1 else cands[0]
        k.note_action(choice)
        return int(choice)

    def search(self, k: Knowledge, cands: list[int], default: int) -> int:
        """The candidate with the best mean round points over sampled worlds; ``default``
        unless another beats it by ``margin``."""
        template = self._template_for(k)
        worlds = max(self.min_worlds, self.budget // len(cands))
        totals = dict.fromkeys(cands, 0.0)
        seat = k.seat
        own = self.policy_move if self.policy is not None else None
        for _ in range(worlds):
            try:
                hands, fd = k.sample(self.rng)
            except SampleError:  # pragma: no cover - the true deal is always consistent
                return default
            world = build_world(template, k, hands, fd)
            for a in cands:
                g = world.clone(keep_rng=False)
                g.step(a)
                totals[a] += playout(g, seat, own)
        best = max(cands, key=lambda a: totals[a])
        if best != default and (totals[best] - totals[default]) / worlds < self.margin:
            return default
        return best
