"""The ``ppo-vec`` run's bookkeeping: league snapshots, TensorBoard, evaluation, checkpoints
and the progress bar (what :class:`train.callbacks.TrainingLoop` does for the SB3 trainer,
with the same schedule, meta and tags)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from arschloch_env.cli import progress_bar
from train.callbacks import (
    Schedule, eval_scalars, evaluate_run, evaluation_line, prune_if_written,
)
from train.config import TrainConfig
from train.ppo_vec_io import actor_mlp, save_checkpoint


class Bookkeeper:
    def __init__(self, cfg: TrainConfig, run, league, meta: dict[str, Any] | None,
                 progress: bool | None = None, policy_digests: dict[str, str] | None = None):
        self.cfg, self.run, self.league, self.progress = cfg, run, league, progress
        self.policy_digests = policy_digests or {}
        meta = meta or {}
        self.evaluations: list[dict[str, Any]] = list(meta.get("evaluations", []))
        self.best: float | None = run.best_score()
        self.illegal = int(meta.get("illegal_actions", 0))
        self.schedule = Schedule(cfg, int(meta.get("steps", 0)))
        self.writer = None
        self._bar = None
        self._started = (0, time.time())

    def start(self, nets, steps: int) -> None:
        import json

        import yaml
        from torch.utils.tensorboard import SummaryWriter

        from train.sb3_trainer import rules_for
        # a resumed run's points replace those an interrupted attempt logged past its step
        self.writer = SummaryWriter(str(self.run.tb / "ppo_vec_1"),
                                    purge_step=steps + 1 if steps else None)
        self._started = (steps, time.time())  # SB3's time/fps counts from here too
        if steps == 0:
            self.writer.add_text("config", "```\n" + yaml.safe_dump(self.cfg.to_dict()) +
                                 "\n```", 0)
            self.writer.add_text("rules", "```\n" + json.dumps(rules_for(self.cfg).to_dict(),
                                                               indent=2) + "\n```", 0)
            self.league.update_current(actor_mlp(nets.actor, nets.activation))
        self._bar = progress_bar(self.progress, total=self.cfg.total_steps,
                                 initial=min(steps, self.cfg.total_steps), unit="step",
                                 desc="training")

    def after_rollout(self, nets, optimizer, steps: int, samples: int, seconds: float,
                      stats: dict[str, Any], losses: dict[str, float]) -> None:
        w = self.writer
        self.illegal += stats["illegal"]
        if seconds > 0:
            w.add_scalar("charts/samples_per_s", samples / seconds, steps)
        w.add_scalar("charts/illegal_actions", self.illegal, steps)
        w.add_scalar("train/learning_rate", optimizer.param_groups[0]["lr"], steps)
        w.add_scalar("train/clip_range", self.cfg.ppo.clip_range, steps)
        w.add_scalar("time/fps", (steps - self._started[0]) / (time.time() - self._started[1]),
                     steps)
        if len(stats["match_returns"]):
            w.add_scalar("rollout/ep_rew_mean", float(np.mean(stats["match_returns"])), steps)
            w.add_scalar("rollout/ep_len_mean", float(np.mean(stats["match_lengths"])), steps)
        total = sum(stats["seats"].values())
        for kind, count in stats["seats"].items():
            if total:
                w.add_scalar(f"league/share/{kind}", count / total, steps)
        w.add_scalar("league/pool_size", len(self.league.snapshots), steps)
        for key, value in losses.items():
            w.add_scalar(f"train/{key}", value, steps)
        if self._bar is not None:
            self._bar.update(max(0, min(samples, self._bar.total - self._bar.n)))
        if self.schedule.due("snapshot", steps):
            self.league.add_snapshot(actor_mlp(nets.actor, nets.activation), steps)
        if self.schedule.due("eval", steps):
            self.evaluate(nets, optimizer, steps)
        # The last update's checkpoint is finish()'s, after the closing evaluation: one
        # written here would be rewritten in place, and a kill in that evaluation would leave
        # a run at total_steps that --resume calls finished, never evaluated at its end.
        if steps < self.cfg.total_steps and self.schedule.due("checkpoint", steps):
            self.checkpoint(nets, optimizer, steps, latest=True)

    def evaluate(self, nets, optimizer, steps: int) -> dict[str, Any]:
        cfg = self.cfg
        results = evaluate_run(cfg, actor_mlp(nets.actor, nets.activation))
        for tag, value in eval_scalars(results).items():
            self.writer.add_scalar(tag, value, steps)
        entry = {"steps": steps, "results": results}
        self.evaluations.append(entry)
        score = results[cfg.eval.best_by]["rank_points"]
        if self.best is None or score > self.best:
            self.best = score
            self.checkpoint(nets, optimizer, steps, latest=False, name="best")
        self.log_line(evaluation_line(steps, results))
        return entry

    def checkpoint(self, nets, optimizer, steps: int, latest: bool,
                   name: str | None = None) -> Path:
        from train.sb3_trainer import code_version, rules_for
        cfg = self.cfg
        actor_in = nets.actor[0].in_features
        payload = {"steps": steps, "actor": nets.actor.state_dict(),
                   "critic": nets.critic.state_dict(), "optimizer": optimizer.state_dict(),
                   "obs_size": actor_in, "num_actions": nets.actor[-1].out_features,
                   "critic_input": nets.critic[0].in_features,
                   "net_arch": list(cfg.ppo.net_arch), "critic_arch": cfg.ppo.critic_hidden,
                   "activation": nets.activation,
                   "critic_state": nets.critic_state}
        meta = {"steps": steps, "config": cfg.to_dict(), "rules": rules_for(cfg).to_dict(),
                "seed": cfg.seed, "code_version": code_version(),
                "league": list(self.league.snapshots), "evaluations": self.evaluations,
                "best": self.best, "illegal_actions": self.illegal,
                "policy_files": self.policy_digests,
                # what vec.bfloat16 (auto: by the device) made of this run's forwards
                "forwards": "bfloat16" if nets.bfloat16 else "float32"}
        if latest:
            self.league.update_current(actor_mlp(nets.actor, nets.activation))
        try:
            path = save_checkpoint(self.run, name or f"step_{steps:012d}", payload, meta, latest)
        except KeyboardInterrupt:
            if latest:
                prune_if_written(self.league, self.run.root, steps)
            raise
        if latest:
            self.league.checkpointed()
        return path

    def finish(self, nets, optimizer, steps: int) -> Path:
        """The closing evaluation (unless the last update had one) and the last checkpoint."""
        if not self.evaluations or self.evaluations[-1]["steps"] != steps:
            self.evaluate(nets, optimizer, steps)
        return self.checkpoint(nets, optimizer, steps, latest=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        if self.writer is not None:
            self.writer.close()

    def log_line(self, text: str) -> None:
        if self._bar is not None:
            self._bar.write(text)
        else:
            print(text, flush=True)


__all__ = ["Bookkeeper"]
