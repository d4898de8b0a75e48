"""Behaviour cloning: a policy network that imitates an agent (``arschloch clone``).

Expert plays at Python speed, a few thousand decisions per second, so ``ppo-vec`` can give it
only a few games. A clone of it, a policy file in the learner's own format
(:class:`~agents.mlp.MLP` ``.npz``), plays batched with the league's snapshots at network
speed when ``vec.mix`` names it (``{current: 0.2, bots/expert_clone_culo.npz: 0.8}``): the
learner then trains against play like expert's on every sample.

The data are the teacher's decisions in whole matches at every requested table size (the
observation is padded to six seats, so one clone plays them all). With ``partner`` some
seats of each match (at most half of them) are played by another agent, whose
decisions are not recorded, so the clone also sees tables where not everyone plays like the
teacher. The network is fitted by cross-entropy on the legal actions (illegal ones are
masked, as in the learner) and held-out agreement is reported: the share of held-out
decisions with more than one legal action where the clone's most likely action is the
teacher's.
"""

from __future__ import annotations

import copy
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agents.base import make_agent
from agents.mlp import MLP
from agents.runner import WorkerDied, ask, illegal_choice, reset_agents
from arschloch_env.engine import Game, IllegalActionError
from arschloch_env.observation import Encoder
from arschloch_env.rules import Rules, make_rules
from train.ppo_vec_io import actor_mlp
from train.ppo_vec_seats import NEG
from train.tournament import default_jobs


class TooFewDecisions(ValueError):
    """Too few decisions to fit a clone and measure its held-out agreement."""


@dataclass(frozen=True)
class Decisions:
    """The teacher's decisions: observation, legal mask and the action it chose. The
    observations are float16, half the memory; only the few fractional features (cards held
    / 10, points / 15, match progress) round, by less than 0.1%."""

    obs: np.ndarray
    mask: np.ndarray
    action: np.ndarray

    def __len__(self) -> int:
        return len(self.action)


def _collect_part(teacher: str, rules: Rules | str, players: int, decisions: int, seed: int,
                  partner: str | None) -> Decisions:
    """One worker's share: whole matches from seed ``seed * 1_000_003`` on, at ``players``
    seats whatever table size ``rules`` names."""
    rng = np.random.default_rng([seed, players])
    obs, masks, actions = [], [], []
    match_seed = seed * 1_000_003
    other = make_agent(partner) if partner else None
    while len(actions) < decisions:
        game = Game(make_rules(rules, players), seed=match_seed, auto_pass=True)
        encoder = Encoder(game.R)
        agents = [make_agent(teacher) for _ in range(players)]
        recorded = [True] * players
        if other is not None:
            for s in rng.choice(players, size=rng.integers(0, players // 2 + 1), replace=False):
                # a copy per seat: each is reset with its own seat (the agent protocol)
                agents[s], recorded[s] = copy.deepcopy(other), False
        reset_agents(agents, game.rules.to_dict(), match_seed)
        while not game.is_over:
            seat = game.current
            o = encoder.observation(game, seat)
            action = ask(agents[seat], game, encoder, o)
            try:
                game.step(action)
            except (IllegalActionError, ValueError) as exc:
                raise illegal_choice(agents[seat], seat, exc) from None
            if recorded[seat]:
                obs.append(o["observation"].astype(np.float16))
                masks.append(o["action_mask"])
                actions.append(action)
        match_seed += 1
    return Decisions(np.array(obs), np.array(masks), np.array(actions, np.int64))


def collect(teacher: str, rules: Rules | str, players: list[int], decisions: int, seed: int = 0,
            jobs: int = 1, partner: str | None = None) -> Decisions:
    """About ``decisions`` decisions of ``teacher``, split evenly over ``players`` and
    ``jobs`` worker processes (each plays whole matches, so a few more). ``rules``: a preset
    name or rules file, or :class:`Rules` with overridden fields (its table size is
    replaced by each of ``players``); a size listed twice plays other matches the second
    time, so it has twice the share and no decision is collected twice."""
    # a repeated size continues the seeds of its first: the same seeds would repeat its
    # matches, and the held-out copies of training decisions would inflate the agreement
    parts = [(p, players[:i].count(p) * jobs + j) for i, p in enumerate(players)
             for j in range(jobs)]
    share = -(-decisions // len(parts))
    args = [(teacher, rules, p, share, seed * 1000 + j, partner) for p, j in parts]
    if jobs == 1:
        done = [_collect_part(*a) for a in args]
    else:
        # jobs sets the parts, and so the decisions; the processes are capped at the cores
        # too, so a smaller machine collects the same ones (more slowly), not more processes
        # than the system grants
        try:
            with ProcessPoolExecutor(min(jobs, default_jobs())) as pool:
                done = list(pool.map(_collect_part, *zip(*args)))
        except BrokenProcessPool:
            raise WorkerDied("a worker process collecting the decisions ended: the teacher or "
                             "its partner ended its process, or the system did (out of "
                             "memory?)") from None
    return Decisions(*(np.concatenate([getattr(d, f) for d in done])
                       for f in ("obs", "mask", "action")))


def fit(data: Decisions, net_arch: list[int], activation: str = "relu", epochs: int = 8,
        batch_size: int = 2048, learning_rate: float = 1e-3, seed: int = 0,
        held_out: float = 0.05, log=print) -> tuple[MLP, float]:
    """Fits a policy network to the decisions; returns it and its held-out agreement.

    Raises:
        TooFewDecisions: none left to fit beside those held out, or no held-out decision
            with a choice (the agreement is measured on those).
    """
    import torch

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(data))
    n_val = max(1, int(len(data) * held_out))
    val, train = order[:n_val], order[n_val:]
    if not len(train):
        raise TooFewDecisions(f"{len(data)} decision(s) leave none to fit beside the {n_val} "
                              f"held out; collect more")
    if not (data.mask[val].sum(axis=1) > 1).any():
        # agreement is over decisions with a choice: with none it is no figure at all
        raise TooFewDecisions(f"none of the {n_val} held-out decision(s) of {len(data)} offers "
                              f"a choice (more than one legal action), so the clone's "
                              f"agreement cannot be measured; collect more")
    # fewer decisions than a minibatch: one minibatch of them all, not no step at all
    batch_size = min(batch_size, len(train))
    obs = torch.from_numpy(data.obs)
    mask = torch.from_numpy(data.mask.astype(bool))
    action = torch.from_numpy(data.action)
    sizes = [data.obs.shape[1], *net_arch, data.mask.shape[1]]
    layers: list[torch.nn.Module] = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU() if activation == "relu" else
                   torch.nn.Tanh()]
    net = torch.nn.Sequential(*layers[:-1])
    optimizer = torch.optim.Adam(net.parameters(), lr=learning_rate)
    steps = max(1, epochs * (len(train) // batch_size))
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: 1 - k / steps)
    neg = torch.tensor(NEG)

    def logits(rows):
        return torch.where(mask[rows], net(obs[rows].float()), neg)

    def agreement() -> float:
        rows = torch.from_numpy(val)
        with torch.no_grad():
            hit = logits(rows).argmax(dim=1) == action[rows]
        choice = mask[rows].sum(dim=1) > 1
        return float(hit[choice].float().mean())

    started = time.time()
    for epoch in range(epochs):
        perm = torch.from_numpy(rng.permutation(train))
        for i in range(0, len(perm) - batch_size + 1, batch_size):
            rows = perm[i:i + batch_size]
            loss = torch.nn.functional.cross_entropy(logits(rows), action[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
        log(f"epoch {epoch + 1}/{epochs}: held-out agreement {agreement():.3f} "
            f"({time.time() - started:.0f} s)")
    return actor_mlp(net, activation), agreement()


def clone(teacher: str, rules: Rules | str, players: list[int], decisions: int, out: str | Path,
          net_arch: list[int], activation: str = "relu", epochs: int = 8, seed: int = 0,
          jobs: int = 1, partner: str | None = None, log=print) -> float:
    """Collects, fits and writes the clone (atomically); returns its held-out agreement."""
    import torch

    torch.set_num_threads(max(1, min(jobs, default_jobs())))
    started = time.time()
    data = collect(teacher, rules, players, decisions, seed, jobs, partner)
    log(f"{len(data)} decisions of {teacher} in {time.time() - started:.0f} s")
    mlp, agreement = fit(data, net_arch, activation, epochs, seed=seed, log=log)
    mlp.rules = make_rules(rules, players[0]).to_dict()  # a run of other rules refuses it
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    mlp.save(out)
    return agreement


__all__ = ["Decisions", "TooFewDecisions", "clone", "collect", "fit"]
