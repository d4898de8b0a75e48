"""PPO on the batched engine (``algo: ppo-vec``), CleanRL-style: read it top to bottom.

One shared policy plays its seats in ``vec.num_games`` games of
:class:`~arschloch_env.vector.VectorGame` at once (one VectorGame per entry of ``players``,
stepped in turn into the same buffer: the observation is padded to six seats, so one network
plays every table size of a deck). At every match start each seat of a game gets a
controller (:mod:`train.ppo_vec_seats`): one random seat is the learner, the others follow
``vec.mix``: ``current`` (the learner again, also trained on), ``snapshots`` (frozen league
snapshots, all run in one batched forward), ``random``, a policy file (``.npz``, e.g. a clone
of expert from :mod:`train.clone`, batched with the snapshots), or any agent spec (greedy,
expert, a bundle) at Python speed, in a small share of the games. ``init_from`` starts a new
run from another run's checkpoint (a second stage against other opponents).

The loop, per iteration:

1. :func:`collect_rollout`: ``vec.rollout_steps`` vector steps; per step the buffer keeps
   observation (and for ``vec.critic_state`` the rest of the full state), mask, action,
   log-probability, the acting seat, whether that seat is trained, the rewards of every seat
   [B, 6] after the step and ``done`` [B] (the match ended; the game already started the
   next); then :func:`critic_values` adds the critic's values of the trained rows in one
   forward.
2. :func:`compute_advantages`: GAE backwards over the steps with carries per (game, seat).
   Episodes are matches: rewards arrive at round ends on whichever seat's move ended the
   round, ``gamma`` discounts per decision of a seat across rounds, a match end is terminal.
3. :func:`ppo_update`: clipped PPO on the trained rows whose return is known (masked logits,
   so illegal actions are impossible; ``charts/illegal_actions`` counts attempts and stays 0).
4. :func:`carry_open_transitions`: the rest go on to the next rollout (below).
5. League snapshot, TensorBoard, evaluation against fixed fields (``train.evaluate``, the actor
   exported to :class:`~agents.mlp.MLP`), best-so-far and periodic checkpoints.

**Transitions open at the rollout end.** The critic values a seat's information state when
that seat is to act, the only states it is trained on. A trained seat's last transition of a
rollout has a known return only if the seat acted again, or its match ended, before the
rollout did. The others stay open: about one per trained seat and game, more often after a
move that leaves the seat waiting long (going out waits for the next round), so dropping them
would weigh some actions less than others in the same state. Each is carried instead, with the
rewards it has had, into one of six rows per game before the next rollout's steps (one per
seat), where the same backward pass finishes it with its seat's next transition or its match
end, and it is trained on in that update (its stored log-probability is its behaviour
policy's, so the PPO ratio stays right). Nothing is carried across a resume: the games
restart there.

**Speed** (``bench/train_throughput.py``): every step is one batched forward of the learner's
actor over its rows and one of all snapshots together
(:class:`~train.ppo_vec_seats.SnapshotPool`), in ``torch.inference_mode`` on
``vec.collect_threads`` threads; the critic runs once per rollout, on its trained rows; the
buffers are preallocated numpy arrays, which the engine writes the hidden part of the full
states into (the observations are there already); the per-step Python is a few array
operations per table. On the CPU the update dominates, so the shipped network is small (see
the configs). With ``device: cuda`` both forwards and the update run on the GPU, the games
and the random numbers of sampling stay on the CPU; the rollout goes to the GPU once per
update.

Run directory: as the SB3 trainer's (:mod:`train.sb3_trainer`), with ``.pt`` checkpoints
(:mod:`train.ppo_vec_io`); TensorBoard under ``tb/ppo_vec_1``: ``charts/samples_per_s``
(collect + update), ``charts/illegal_actions``, ``league/share/<kind>`` (share of the seats
drawn since the last rollout, for the kinds the mix names and any that played unnamed),
``league/pool_size``, ``eval/vs_<field>/...``, ``rollout/ep_rew_mean`` and
``rollout/ep_len_mean`` (the learner seat's match return and decisions), and the update's
``train/*`` and ``time/fps`` under SB3's names and signs (``train/entropy_loss`` is minus the
entropy, ``train/value_loss`` the critic's mean squared error), so that both trainers' runs
read alike in TensorBoard.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from arschloch_env.observation import SEATS
from train.config import ConfigError, TrainConfig, check_config_fits_checkpoint
from train.files import read_latest, read_run_json
from train.league import League
from train.memory import refuse_unless_it_fits
from train.ppo_vec_io import init_checkpoint, load_checkpoint, load_state
from train.ppo_vec_seats import (
    CURRENT, LOGP_FLOOR, SNAPSHOT, SnapshotPool, Table, bool_tensor, is_policy_file,
    masked_log_softmax, sample_masked,
)


# -- networks ---------------------------------------------------------------------------------

def layer_init(layer, std: float = math.sqrt(2), bias: float = 0.0):
    import torch
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias)
    return layer


def mlp(sizes: list[int], activation: str, out_std: float):
    """Linear layers with ``activation`` between them (CleanRL's orthogonal init)."""
    import torch
    act = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[activation]
    mods: list[Any] = []
    for i in range(len(sizes) - 1):
        last = i == len(sizes) - 2
        mods.append(layer_init(torch.nn.Linear(sizes[i], sizes[i + 1]),
                               out_std if last else math.sqrt(2)))
        if not last:
            mods.append(act())
    return torch.nn.Sequential(*mods)


@dataclass
class Nets:
    actor: Any
    """observation -> logits (never sees the full state)."""
    critic: Any
    """observation, or the full state with ``critic_state`` -> value."""
    critic_state: bool
    activation: str
    bfloat16: bool = False
    """Forward passes in bfloat16 (``vec.bfloat16``); the weights stay float32."""

    def autocast(self, device):
        """The context of every forward of the learner's nets, in collecting and in the
        update alike, so the update's first ratios start at 1 (not at rounding noise)."""
        import torch
        return torch.autocast(torch.device(device).type, dtype=torch.bfloat16,
                              enabled=self.bfloat16)


def make_nets(cfg: TrainConfig, obs_size: int, state_size: int, num_actions: int,
              device) -> Nets:
    actor = mlp([obs_size, *cfg.ppo.net_arch, num_actions], cfg.ppo.activation, 0.01).to(device)
    critic_in = state_size if cfg.vec.critic_state else obs_size
    critic = mlp([critic_in, *cfg.ppo.critic_hidden, 1], cfg.ppo.activation, 1.0).to(device)
    return Nets(actor, critic, cfg.vec.critic_state, cfg.ppo.activation,
                uses_bfloat16(cfg.vec.bfloat16, device))


# -- the games and the buffer -----------------------------------------------------------------

def make_tables(cfg: TrainConfig, steps: int, pool: SnapshotPool, rng, generator) -> list[Table]:
    """One Table per player count, ``vec.num_games`` split between them."""
    from train.sb3_trainer import rules_for

    k = len(cfg.players)
    sizes = [cfg.vec.num_games // k + (i < cfg.vec.num_games % k) for i in range(k)]
    tables = []
    for i, (n, size) in enumerate(zip(cfg.players, sizes)):
        seed = int(np.random.SeedSequence([cfg.seed, steps, i]).generate_state(1, np.uint64)[0]
                   >> np.uint64(1))
        tables.append(Table(rules_for(cfg, n), size, seed, cfg.vec.mix, pool, rng, generator,
                            threads=cfg.vec.engine_threads, debug=cfg.vec.debug))
    return tables


CARRIED = SEATS
"""Rows before a rollout's steps: row s of game j holds seat s's open transition carried over
from the rollouts before (``trained`` there marks one), ``rewards`` the rewards it has had."""


class Rollout:
    """Preallocated numpy buffers, [CARRIED + T, B, ...] (B: all tables' games): the carried
    rows, then the T steps of one rollout."""

    def __init__(self, T: int, B: int, obs_size: int, hidden_size: int | None,
                 num_actions: int):
        self.hidden = None
        """For a critic on the full state: the state's columns after the observation's
        (:meth:`~arschloch_env.vector.VectorGame.hidden_state`). Writing whole states took the
        engine four times as long (the observation over again) and 2.6 times the memory."""
        for name, (shape, dtype) in self.arrays(T, B, obs_size, hidden_size,
                                                num_actions).items():
            setattr(self, name, np.zeros(shape, dtype))
        self.seat[:CARRIED] = np.arange(CARRIED)[:, None]
        self.scratch: dict[str, Any] = {}
        """The update's tensors of a rollout's size (bfloat16 inputs, each epoch's rows),
        kept from one update to the next: made anew, each paid a page fault per 4 KiB
        written, and the state's epoch gather took four times as long."""

    @staticmethod
    def arrays(T: int, B: int, obs_size: int, hidden_size: int | None,
               num_actions: int) -> dict[str, tuple[tuple[int, ...], Any]]:
        """Each buffer's shape and dtype."""
        rows = CARRIED + T
        hidden = {"hidden": ((rows, B, hidden_size), np.float32)} if hidden_size else {}
        return {"obs": ((rows, B, obs_size), np.float32), **hidden,
                "mask": ((rows, B, num_actions), np.int8),
                "action": ((rows, B), np.int64),
                "logp": ((rows, B), np.float32),
                "value": ((rows, B), np.float32),
                "seat": ((rows, B), np.int64),
                "trained": ((rows, B), np.bool_),
                "rewards": ((rows, B, SEATS), np.float32),
                "done": ((rows, B), np.bool_)}

    @classmethod
    def nbytes(cls, *sizes: int | None) -> int:
        """The buffers' bytes for :meth:`arrays` of ``sizes``, before any is made."""
        return sum(math.prod(shape) * np.dtype(dtype).itemsize
                   for shape, dtype in cls.arrays(*sizes).values())

    def scratch_tensor(self, name: str, shape: tuple[int, ...], dtype, device):
        """The kept tensor ``name`` of this shape, dtype and device, made on first use (and
        anew if any of them changed); it holds whatever was written to it last."""
        import torch

        t = self.scratch.get(name)
        if t is None or t.shape != shape or t.dtype != dtype or t.device != torch.device(device):
            t = self.scratch[name] = torch.empty(shape, dtype=dtype, device=device)
        return t

    @property
    def steps(self) -> int:
        return self.obs.shape[0] - CARRIED


def policy_actions(nets: Nets, pool: SnapshotPool, obs: np.ndarray, legal: np.ndarray,
                   rows: np.ndarray, snap: np.ndarray, which: np.ndarray, generator,
                   device) -> tuple[np.ndarray, np.ndarray]:
    """Samples the actions of the learner's rows ``rows`` (its actor) and of the snapshots'
    rows ``snap`` (snapshot ``which[i]`` of the pool for row ``i``) in one batch, no autograd;
    ``legal`` holds the masks of ``rows`` then ``snap``. Returns the actions in that order,
    and the learner's log-probabilities. (Sampling both kinds together halves the small
    tensor operations per step.)"""
    import torch

    with torch.inference_mode():
        logits = []
        if len(rows):
            with nets.autocast(device):
                logits.append(nets.actor(torch.from_numpy(obs[rows]).to(device)).float())
        if len(snap):
            logits.append(pool.logits(which[snap], obs[snap]))
        if not logits:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        actions, logp = sample_masked(torch.cat(logits), bool_tensor(legal).to(device),
                                      generator)
    return actions.cpu().numpy(), logp[:len(rows)].cpu().numpy()


def collect_rollout(tables: list[Table], nets: Nets, buf: Rollout, generator,
                    device) -> dict[str, Any]:
    """Fills the steps of ``buf`` (after its carried rows) with every table's moves; returns
    counts for the logs.

    Each step writes every table's rows into the buffer first and reads them from there, so
    the learner's rows of all tables go through one forward, and so do the snapshots'."""
    ends = np.cumsum([table.B for table in tables])
    cols = [slice(end - table.B, end) for table, end in zip(tables, ends)]
    illegal = 0
    for t in range(CARRIED, CARRIED + buf.steps):
        obs, mask, seat = buf.obs[t], buf.mask[t], buf.seat[t]
        kind = np.empty(len(seat), np.int8)
        which = np.empty(len(seat), np.int64)
        for table, c in zip(tables, cols):
            obs[c], mask[c], seat[c] = table.obs, table.mask, table.seat
            kind[c], which[c] = table.acting_kind(seat[c]), table.snapshot_which(seat[c])
            if nets.critic_state:
                table.vg.hidden_state(out=buf.hidden[t, c])
        trained = kind <= CURRENT
        actions = np.zeros(len(seat), np.int64)
        logp = np.zeros(len(seat), np.float32)
        rows, snap = np.flatnonzero(trained), np.flatnonzero(kind == SNAPSHOT)
        sampled = np.concatenate([rows, snap])
        legal = mask[sampled]
        actions[sampled], logp[rows] = policy_actions(nets, tables[0].pool, obs, legal, rows,
                                                      snap, which, generator, device)
        illegal += int((np.take_along_axis(legal, actions[sampled, None], 1) == 0).sum())
        for table, c in zip(tables, cols):
            table.agent_actions(actions[c], seat[c], kind[c])
        buf.action[t], buf.logp[t], buf.trained[t] = actions, logp, trained
        for table, c in zip(tables, cols):
            rewards, done = table.step(actions[c])
            buf.rewards[t, c, :table.n] = rewards
            buf.done[t, c] = done
    returns, lengths = map(np.concatenate, zip(*[table.take_finished() for table in tables]))
    seats: dict[str, int] = {}
    for table in tables:
        for kind, count in table.take_seat_counts().items():
            seats[kind] = seats.get(kind, 0) + count
    return {"illegal": illegal, "match_returns": returns, "match_lengths": lengths,
            "seats": seats}


# -- advantages -------------------------------------------------------------------------------

def compute_advantages(seat, trained, rewards, done, values, gamma: float,
                       lam: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """GAE over a multi-seat rollout, backwards over t with carries per (game, seat).

    Args:
        seat: int [T, B], the seat that acted in step t.
        trained: bool [T, B], that seat is trained (its transitions enter the update).
        rewards: float [T, B, S], every seat's rewards after step t.
        done: bool [T, B], the match of game j ended in step t (rewards[t] still belong to it).
        values: float [T, B], the critic's value of the acting seat before step t.
        gamma, lam: per decision of a seat (its own turns, not the game's steps): a
            decision's reward is all its seat got until its next decision or match end.

    Returns:
        ``(advantages [T, B], valid [T, B], open_return [T, B])``: ``valid`` marks the
        trained transitions whose return is known (the seat acted again, or the match ended,
        before the end); the others are open, and ``open_return`` holds the rewards each has
        had. The value targets are ``advantages + values``.

    Carries per (game, seat), running backwards: ``acc`` the rewards since the seat's
    transition, ``next_value`` / ``next_adv`` of its next transition, ``known`` whether that
    next transition (or the match end) is known. A match end resets the game's carries to a
    terminal (zero value and advantage, known) before its rewards are added. An open
    transition adds 0 to the advantage of its seat's decision before it, which bootstraps
    from its value: GAE truncated at the rollout's end, as CleanRL's.
    """
    T, B = seat.shape
    S = rewards.shape[2]
    acc = np.zeros((B, S), np.float64)
    next_value = np.zeros((B, S), np.float64)
    next_adv = np.zeros((B, S), np.float64)
    known = np.zeros((B, S), bool)
    adv = np.zeros((T, B), np.float32)
    valid = np.zeros((T, B), bool)
    open_return = np.zeros((T, B), np.float32)
    for t in reversed(range(T)):
        d = done[t]
        if d.any():
            acc[d], next_value[d], next_adv[d], known[d] = 0.0, 0.0, 0.0, True
        acc += rewards[t]
        j = np.flatnonzero(trained[t])
        s = seat[t, j]
        v = values[t, j].astype(np.float64)
        delta = acc[j, s] + gamma * next_value[j, s] - v
        a = np.where(known[j, s], delta + gamma * lam * next_adv[j, s], 0.0)
        adv[t, j], valid[t, j] = a, known[j, s]
        open_return[t, j] = np.where(known[j, s], 0.0, acc[j, s])
        next_value[j, s], next_adv[j, s], acc[j, s], known[j, s] = v, a, 0.0, True
    return adv, valid, open_return


def carry_open_transitions(buf: Rollout, valid: np.ndarray, open_return: np.ndarray) -> None:
    """Moves every open transition of ``buf`` (trained, return not known) into its seat's
    carried row, with the rewards it has had, for the next rollout to finish; one per (game,
    seat) at most (a seat's later transition closes its earlier one)."""
    t, j = np.nonzero(buf.trained & ~valid)
    s = buf.seat[t, j]
    for a in (buf.obs, buf.hidden, buf.mask, buf.action, buf.logp, buf.value):
        if a is not None:
            a[s, j] = a[t, j]  # a carried row still open stays where it is (t == s)
    buf.trained[:CARRIED] = False
    buf.trained[s, j] = True
    buf.rewards[:CARRIED] = 0.0
    buf.rewards[s, j, s] = open_return[t, j]


# -- the update -------------------------------------------------------------------------------

def update_inputs(nets: Nets, buf: Rollout, device) -> dict[str, Any]:
    """The rollout's network inputs as torch tensors of one row per (step, game): ``obs``,
    and ``state`` (the observation, then the hidden part) for a critic on the full state."""
    import torch

    # autocast rounds the first layers' inputs to bfloat16 anyway: rounding them once per
    # rollout halves the bytes gathered in the update and spares a cast per minibatch
    dtype = torch.bfloat16 if nets.bfloat16 else torch.float32
    obs = every_row(buf.obs, device)
    if obs.dtype != dtype:
        obs = buf.scratch_tensor("obs_input", obs.shape, dtype, obs.device).copy_(obs)
    inputs = {"obs": obs}
    if nets.critic_state:
        hidden = every_row(buf.hidden, device)
        D = obs.shape[1]
        state = buf.scratch_tensor("state_input", (len(obs), D + hidden.shape[1]), dtype,
                                   obs.device)
        state[:, :D].copy_(obs)
        state[:, D:].copy_(hidden)
        inputs["state"] = state
    return inputs


def every_row(a: np.ndarray, device):
    """``a`` [rows, B, ...] as a torch tensor [rows * B, ...]: a view on the CPU, not a copy
    of the valid rows (copying them cost a fifth of the update)."""
    import torch
    return torch.from_numpy(a.reshape(-1, *a.shape[2:])).to(device)


def critic_values(nets: Nets, buf: Rollout, inputs: dict[str, Any], device) -> None:
    """Writes the critic's value of every trained row of the rollout's steps into
    ``buf.value``; the carried rows keep the values they were collected with.

    One forward after collecting, not one per step while collecting: the weights are the
    same, and on the CPU one large batch took less than half the time of 64 small ones."""
    import torch

    B = buf.trained.shape[1]
    rows = np.flatnonzero(buf.trained[CARRIED:].reshape(-1)) + CARRIED * B
    name = "state" if nets.critic_state else "obs"
    x = inputs[name]
    # into the tensor that the update gathers each epoch's rows of this column into, later
    picked = buf.scratch_tensor(f"{name}_rows", x.shape, x.dtype, x.device)[:len(rows)]
    torch.index_select(x, 0, torch.from_numpy(rows).to(device), out=picked)
    with torch.inference_mode(), nets.autocast(device):
        value = nets.critic(picked)
    buf.value[CARRIED:] = 0.0
    buf.value.reshape(-1)[rows] = value[:, 0].float().cpu().numpy()


def ppo_update(nets: Nets, optimizer, buf: Rollout, inputs: dict[str, Any], adv: np.ndarray,
               valid: np.ndarray, cfg: TrainConfig, generator, device) -> dict[str, float]:
    """Clipped PPO on the valid rows, ``ppo.n_epochs`` passes of ``vec.minibatches``; returns
    the losses and the critic's explained variance, or nothing without a valid row.
    ``inputs``: :func:`update_inputs` of ``buf``."""
    import torch

    p = cfg.ppo
    idx = torch.from_numpy(np.flatnonzero(valid.reshape(-1))).to(device)
    value_target = adv + buf.value
    columns = dict(inputs, legal=every_row(buf.mask.view(np.bool_), device),
                   action=every_row(buf.action, device), old_logp=every_row(buf.logp, device),
                   advantage=every_row(adv, device),
                   value_target=every_row(value_target, device))
    params = [*nets.actor.parameters(), *nets.critic.parameters()]
    N = len(idx)
    size = max(1, math.ceil(N / cfg.vec.minibatches))
    names = ("policy_gradient_loss", "value_loss", "entropy_loss", "loss", "approx_kl",
             "clip_fraction")  # named and signed as SB3's PPO logs them
    stats = []  # one tensor per minibatch, read once at the end: no device sync per step
    for _ in range(p.n_epochs):
        order = idx[torch.randperm(N, generator=generator).to(device)]
        # the epoch's rows in its order, one gather per column (index_select: about twice as
        # fast as obs[order] on CPU); the minibatches are slices of them, which made the
        # bfloat16 update about 7% faster than one gather per minibatch
        epoch = {name: torch.index_select(col, 0, order, out=buf.scratch_tensor(
                     f"{name}_rows", col.shape, col.dtype, col.device)[:N])
                 for name, col in columns.items()}
        for start in range(0, N, size):
            mb = {name: col[start:start + size] for name, col in epoch.items()}
            x, mb_legal = mb["obs"], mb["legal"]
            c = mb["state"] if nets.critic_state else x
            with nets.autocast(device):
                logits, value = nets.actor(x).float(), nets.critic(c)[:, 0].float()
            logp_all = masked_log_softmax(logits, mb_legal)
            new_logp = logp_all.gather(1, mb["action"][:, None])[:, 0]
            floored = logp_all.clamp(min=LOGP_FLOOR)
            entropy = -(floored.exp() * floored * mb_legal).sum(-1).mean()
            log_ratio = new_logp - mb["old_logp"]
            ratio = log_ratio.exp()
            a = mb["advantage"]
            a = (a - a.mean()) / (a.std() + 1e-8) if len(a) > 1 else a
            pg_loss = torch.max(-a * ratio,
                                -a * ratio.clamp(1 - p.clip_range, 1 + p.clip_range)).mean()
            v_loss = ((value - mb["value_target"]) ** 2).mean()  # SB3's, unhalved
            loss = pg_loss - p.ent_coef * entropy + p.vf_coef * v_loss
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, p.max_grad_norm)
            optimizer.step()
            with torch.no_grad():
                stats.append(torch.stack([
                    pg_loss, v_loss, -entropy, loss, ((ratio - 1) - log_ratio).mean(),
                    ((ratio - 1).abs() > p.clip_range).float().mean()]))
    if not stats:  # no sample to train on: no losses to log (zeros would read as figures)
        return {}
    out = dict(zip(names, torch.stack(stats).double().mean(0).tolist()))
    y, v = value_target[valid], buf.value[valid]
    var = float(np.var(y))
    out["explained_variance"] = float("nan") if var == 0 else 1.0 - float(np.var(y - v)) / var
    return out


def make_optimizer(nets: Nets, cfg: TrainConfig):
    import torch
    # fused: one kernel for every parameter instead of a loop of small ops per tensor, about
    # a tenth off the update on 2 CPU cores (bench/train_throughput.py)
    return torch.optim.Adam([*nets.actor.parameters(), *nets.critic.parameters()],
                            lr=cfg.ppo.learning_rate, eps=1e-5, fused=True)


def iteration(tables, nets, optimizer, buf, cfg, generator, device):
    """One rollout and its update: ``(samples trained on, rollout stats, losses)``; the stats
    hold the seconds of each phase (``collect_s``, ``update_s``: bench/train_throughput.py)."""
    import torch
    start = time.perf_counter()
    torch.set_num_threads(cfg.vec.collect_threads)
    stats = collect_rollout(tables, nets, buf, generator, device)
    torch.set_num_threads(cfg.torch_threads)
    collected = time.perf_counter()
    samples, losses = learn(nets, optimizer, buf, cfg, generator, device)
    stats.update(collect_s=collected - start, update_s=time.perf_counter() - collected)
    return samples, stats, losses


def learn(nets, optimizer, buf, cfg, generator, device) -> tuple[int, dict[str, float]]:
    """The critic's values of a collected rollout, its update, then its open transitions
    carried on: ``(samples trained on, losses)``."""
    inputs = update_inputs(nets, buf, device)
    critic_values(nets, buf, inputs, device)
    adv, valid, open_return = compute_advantages(buf.seat, buf.trained, buf.rewards, buf.done,
                                                 buf.value, cfg.ppo.gamma, cfg.ppo.gae_lambda)
    losses = ppo_update(nets, optimizer, buf, inputs, adv, valid, cfg, generator, device)
    carry_open_transitions(buf, valid, open_return)
    return int(valid.sum()), losses


# -- the run ----------------------------------------------------------------------------------

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters


def keep_freed_memory() -> None:
    """Large blocks freed stay in the process for the next allocation instead of going back to
    the system (glibc's ``mallopt``): each minibatch allocates tensors of megabytes, and taking
    them from the system anew paid a page fault per 4 KiB touched, about a seventh of the
    update (``bench/train_throughput.py``). The process keeps its peak heap. A C library without
    ``mallopt`` (macOS, Windows) is left as it is."""
    import ctypes
    if not sys.platform.startswith("linux"):
        return
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is not None:
        for param in (M_MMAP_THRESHOLD, M_TRIM_THRESHOLD):
            mallopt(param, 1 << 30)


BFLOAT16_FLAGS = ("avx512_bf16", "amx_bf16")
"""x86 CPU flags of bfloat16 products in hardware; elsewhere torch converts to float32 and
back around every product, and ``vec.bfloat16`` makes a run slower."""


SLOW_BFLOAT16 = ("note: vec.bfloat16 on a device without bfloat16 products (an x86 CPU with "
                 f"none of {', '.join(BFLOAT16_FLAGS)}, a GPU older than NVIDIA's Ampere): "
                 "several times slower than float32 here")


def bfloat16_products(device, cpuinfo: str = "/proc/cpuinfo") -> bool | None:
    """Whether ``device`` has bfloat16 products in hardware: a CUDA device that does not
    emulate them, an x86 CPU with one of :data:`BFLOAT16_FLAGS`; ``None`` where it cannot be
    told (a CPU whose flags cannot be read where Linux keeps them, or that is not x86)."""
    import torch
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported(including_emulation=False)
    if device.type != "cpu":
        return None
    try:
        words = set(Path(cpuinfo).read_text().split())
    except OSError:
        return None
    if words & set(BFLOAT16_FLAGS):
        return True
    return False if "avx2" in words else None


def uses_bfloat16(setting: bool | str, device, cpuinfo: str = "/proc/cpuinfo") -> bool:
    """``vec.bfloat16`` on ``device``: ``auto`` is bfloat16 only where the device has its
    products in hardware (float32 where that cannot be told)."""
    return bool(bfloat16_products(device, cpuinfo)) if setting == "auto" else setting


def bfloat16_is_slow(nets: Nets, device, cpuinfo: str = "/proc/cpuinfo") -> bool:
    """The nets in bfloat16 on a device known to lack its products (:func:`bfloat16_products`)."""
    return nets.bfloat16 and bfloat16_products(device, cpuinfo) is False


def setup(cfg: TrainConfig, league: League, steps: int):
    """Tables, networks, optimizer and buffer of a run starting (or resuming) at ``steps``."""
    import torch
    from stable_baselines3.common.utils import get_device  # the SB3 trainer's "auto"

    keep_freed_memory()
    device = get_device(cfg.device)
    torch.set_num_threads(cfg.torch_threads)
    torch.manual_seed(cfg.seed)
    # on the CPU whatever the device: a run samples the same random numbers on either
    generator = torch.Generator(device="cpu")
    generator.manual_seed(int(np.random.SeedSequence([cfg.seed, steps, 99])
                              .generate_state(1)[0]))
    rng = np.random.default_rng([cfg.seed, steps])
    pool = SnapshotPool(league, device, fixed=policy_files(cfg))
    pool.refresh()
    check_rollout_fits(cfg)
    tables = make_tables(cfg, steps, pool, rng, generator)
    vg = tables[0].vg
    nets = make_nets(cfg, vg.obs_size, vg.state_size, vg.num_actions, device)
    optimizer = make_optimizer(nets, cfg)
    buf = Rollout(cfg.vec.rollout_steps, sum(t.B for t in tables), vg.obs_size,
                  vg.hidden_size if cfg.vec.critic_state else None, vg.num_actions)
    return tables, nets, optimizer, buf, pool, generator, device


def check_rollout_fits(cfg: TrainConfig, meminfo: str = "/proc/meminfo",
                       cgroup: str = "/sys/fs/cgroup") -> None:
    """Refuses a run whose rollout buffers alone need more memory than is available, before
    anything is made: a huge ``vec.num_games`` spent minutes seating its games, then failed
    or was killed."""
    from arschloch_env.vector import VectorGame
    from train.sb3_trainer import rules_for

    vg = VectorGame(rules_for(cfg, cfg.players[0]), num_games=1)  # the sizes of every table
    need = Rollout.nbytes(cfg.vec.rollout_steps, cfg.vec.num_games, vg.obs_size,
                          vg.hidden_size if cfg.vec.critic_state else None, vg.num_actions)
    refuse_unless_it_fits(need, f"vec.num_games {cfg.vec.num_games} x vec.rollout_steps "
                          f"{cfg.vec.rollout_steps}: the rollout's buffers alone need",
                          "lower either", meminfo, cgroup)


def policy_files(cfg: TrainConfig) -> tuple[str, ...]:
    """The policy files of ``vec.mix``, checked: they play in one batch with the learner's
    snapshots, so every tensor needs the shape of the learner's and the activation its, and
    where a file names the rules it was made for (``arschloch clone`` writes them), rules
    that play as the run's.

    Raises:
        ConfigError: a file that is missing, unreadable, of other rules, or with a tensor of
            another shape (named, with its shape and the expected one).
    """
    from agents.bundle import play_difference
    from agents.mlp import MLP
    from arschloch_env.actions import ActionCodec
    from arschloch_env.observation import Layout
    from train.sb3_trainer import rules_for

    run_rules = rules_for(cfg).to_dict()
    order = run_rules["rank_order"]
    expected = learner_tensor_shapes(
        [Layout(len(order)).size, *cfg.ppo.net_arch, ActionCodec(order).size])
    files = tuple(k for k, share in cfg.vec.mix.items() if is_policy_file(k) and share > 0)
    for path in files:
        try:
            mlp = MLP.load(path)
        except Exception as exc:  # noqa: BLE001 - a damaged .npz raises many kinds of errors
            raise ConfigError(f"vec.mix: policy file {path} cannot be read ({exc})") from None
        if mlp.rules is not None and not isinstance(mlp.rules, dict):
            raise ConfigError(f"vec.mix: policy file {path} names its rules as "
                              f"{type(mlp.rules).__name__}, not as a rules object")
        difference = mlp.rules and play_difference(mlp.rules, run_rules)
        if difference:
            raise ConfigError(f"vec.mix: policy file {path} was made for other rules: "
                              f"{difference}")
        found = {name: t.shape for name, t in mlp.tensors().items()}
        wrong = tensor_differences(found, expected)
        if mlp.activation != cfg.ppo.activation:
            wrong.append(f"activation {mlp.activation}, expected {cfg.ppo.activation}")
        if wrong:
            theirs = [w.shape for w, _ in mlp.layers]
            ours = [shape for name, shape in expected.items() if name.startswith("W")]
            raise ConfigError(f"vec.mix: policy file {path} has layers {theirs} "
                              f"({mlp.activation}); this run's policy has {ours} "
                              f"({cfg.ppo.activation}): {'; '.join(wrong)}; make it with the "
                              f"run's ppo.net_arch and ppo.activation (arschloch clone "
                              f"--net-arch ...)")
    return files


def check_same_policy_files(saved: dict[str, str], now: dict[str, str]) -> None:
    """A resumed run plays against the policy files it was trained against: one rewritten
    since (a new clone under the same name) would change its opponents without a word."""
    changed = [path for path, digest in saved.items() if now.get(path, digest) != digest]
    if changed:
        raise ConfigError(f"--resume: vec.mix policy file(s) {', '.join(changed)} changed since "
                          f"the run's last checkpoint (their sha256 differs); the opponents "
                          f"cannot change in a resumed run: restore the file(s), or start a "
                          f"new run")


def learner_tensor_shapes(sizes: list[int]) -> dict[str, tuple[int, ...]]:
    """The shapes of the learner's actor (layer ``sizes``) by their names in a policy file
    (:meth:`~agents.mlp.MLP.tensors`): what a file in ``vec.mix`` must hold."""
    from agents.mlp import MLP

    layers = [(np.zeros((n_out, n_in), np.float32), np.zeros(n_out, np.float32))
              for n_in, n_out in zip(sizes, sizes[1:])]
    return {name: t.shape for name, t in MLP(layers).tensors().items()}


def tensor_differences(found: dict[str, tuple[int, ...]],
                       expected: dict[str, tuple[int, ...]]) -> list[str]:
    """Each tensor whose shape differs from the expected one, is missing or is extra, in
    words. Every tensor counts: a bias of another shape passes a check of the weights, then
    fails once the snapshot pool stacks it with the learner's."""
    wrong = [f"tensor {name} has shape {found[name]}, expected {want}" if name in found
             else f"tensor {name} is missing, expected {want}"
             for name, want in expected.items() if found.get(name) != want]
    return wrong + [f"tensor {name} of shape {shape} is not in this run's policy"
                    for name, shape in found.items() if name not in expected]


def train(cfg: TrainConfig, run_dir: str | Path, resume: bool = False,
          progress: bool | None = None) -> Path:
    """Trains per ``cfg`` into ``run_dir`` and returns the final checkpoint's path (called by
    :func:`train.sb3_trainer.train`, which has settled whether the run is new or resumed)."""
    from agents.bundle import file_sha256
    from train.ppo_vec_run import Bookkeeper
    from train.sb3_trainer import RunDir

    run = RunDir(run_dir)
    # a bad policy file fails before the run directory is made
    digests = {path: file_sha256(Path(path)) for path in policy_files(cfg)}
    meta: dict[str, Any] | None = None
    state: dict[str, Any] | None = None
    if resume:
        latest = read_latest(run.root)
        meta = read_run_json(run.root / latest["meta"])
        check_config_fits_checkpoint(cfg, meta.get("config"), latest["checkpoint"])
        check_same_policy_files(meta.get("policy_files", {}), digests)
        try:
            state = load_checkpoint(run.root / latest["checkpoint"])
        except ValueError as exc:
            raise ConfigError(f"--resume: {exc}") from None
    else:
        if cfg.init_from is not None:
            state = init_checkpoint(cfg)
        run.create(cfg)
    league = League(run.league, cfg.league.max_snapshots)
    if meta is not None:
        league.restore(meta.get("league"))
    steps = int(meta["steps"]) if meta else 0
    tables, nets, optimizer, buf, pool, generator, device = setup(cfg, league, steps)
    if state is not None:
        try:
            load_state(nets, optimizer, state)
        except ValueError as exc:
            raise ConfigError(f"{'--resume' if resume else 'init_from'}: {exc}") from None
    if resume:
        run.resumed(cfg, steps)
    book = Bookkeeper(cfg, run, league, meta, progress, policy_digests=digests)
    book.start(nets, steps)
    if cfg.vec.bfloat16 == "auto":
        book.log_line(f"vec.bfloat16 auto: forwards in "
                      f"{'bfloat16' if nets.bfloat16 else 'float32'} on {device}")
    if bfloat16_is_slow(nets, device):
        book.log_line(SLOW_BFLOAT16)
    started = time.time()
    try:
        while steps < cfg.total_steps:
            t0 = time.perf_counter()
            for group in optimizer.param_groups:
                group["lr"] = cfg.learning_rate_at(steps)
            samples, stats, losses = iteration(tables, nets, optimizer, buf, cfg, generator,
                                               device)
            steps += samples
            book.after_rollout(nets, optimizer, steps, samples, time.perf_counter() - t0,
                               stats, losses)
            pool.refresh(tables)
        final = book.finish(nets, optimizer, steps)
    finally:
        book.close()
        for table in tables:
            table.vg.close()
    book.log_line(f"done in {time.time() - started:.0f} s; checkpoint {final}")
    return final


__all__ = ["Nets", "Rollout", "carry_open_transitions", "collect_rollout",
           "compute_advantages", "critic_values", "iteration", "keep_freed_memory", "learn",
           "make_nets", "make_optimizer", "make_tables", "policy_actions",
           "ppo_update", "setup", "train", "update_inputs"]
