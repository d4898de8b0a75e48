"""The training loop's bookkeeping as one SB3 callback: league, evaluation, checkpoints,
TensorBoard scalars and the progress bar.

TensorBoard tags (stable): SB3's own ``rollout/``, ``train/``, ``time/``; ours
``charts/samples_per_s``, ``charts/illegal_actions`` (attempted illegal actions: must stay 0,
masking makes them impossible), ``league/share/<kind>`` (``league.mix`` normalized: the
share of opponent seats each kind is drawn with; the env processes draw them, so unlike
ppo-vec's these are not counts of the draws),
``league/pool_size`` (frozen snapshots in the pool) and
``eval/vs_<field>/{rank_points,ci_low,ci_high,president_rate,arschloch_rate}``; the config
and rules as text.
"""

from __future__ import annotations

import time
from typing import Any

from stable_baselines3.common.callbacks import BaseCallback

from arschloch_env.cli import progress_bar
from train.config import TrainConfig
from train.evaluate import evaluate_fields
from train.export import policy_mlp


def prune_if_written(league, run_root, steps: int) -> None:
    """After Ctrl-C in a checkpoint's write (it takes effect once the write is over): if the
    checkpoint was written (``latest.json`` names its step), the league prunes the snapshots
    it no longer lists, as after any checkpoint."""
    from train.config import ConfigError
    from train.files import read_latest
    try:
        written = read_latest(run_root)["steps"] == steps
    except ConfigError:
        written = False
    if written:
        league.checkpointed()


class TrainingLoop(BaseCallback):
    def __init__(self, cfg: TrainConfig, run, league, meta: dict[str, Any] | None,
                 progress: bool | None = None):
        super().__init__()
        self.cfg, self.run, self.league = cfg, run, league
        self.progress = progress
        self.evaluations: list[dict[str, Any]] = list((meta or {}).get("evaluations", []))
        self.best: float | None = run.best_score()
        self.illegal = int((meta or {}).get("illegal_actions", 0))
        steps = int((meta or {}).get("steps", 0))
        self.schedule = Schedule(cfg, steps)
        self.last_checkpoint: tuple[int, Any] | None = None
        self._bar = None
        self._clock = (time.time(), steps)

    # -- SB3 hooks ----------------------------------------------------------------------------

    def _on_training_start(self) -> None:
        self._bar = progress_bar(self.progress, total=self.cfg.total_steps,
                                 initial=self.num_timesteps, unit="step", desc="training")
        writer = self._tb_writer()
        if writer is not None and self.num_timesteps == 0:
            import json

            import yaml
            from train.sb3_trainer import rules_for
            writer.add_text("config", "```\n" + yaml.safe_dump(self.cfg.to_dict()) + "\n```", 0)
            writer.add_text("rules", "```\n" + json.dumps(rules_for(self.cfg).to_dict(),
                                                          indent=2) + "\n```", 0)
        if self.num_timesteps == 0:
            self.league.update_current(policy_mlp(self.model))

    def _on_step(self) -> bool:
        for info in self.locals.get("infos", []):
            if info.get("illegal"):
                self.illegal += 1
        if self._bar is not None:
            # SB3 finishes the last whole rollout, past total_steps; the bar stops at its total.
            self._bar.update(max(0, min(self.model.n_envs, self._bar.total - self._bar.n)))
        return True

    def _on_rollout_end(self) -> None:
        steps = self.num_timesteps
        now = time.time()
        t0, s0 = self._clock
        if now > t0:
            self.logger.record("charts/samples_per_s", (steps - s0) / (now - t0))
        self._clock = (now, steps)
        self.logger.record("charts/illegal_actions", self.illegal)
        self.logger.record("league/pool_size", len(self.league.snapshots))
        for kind, share in _mix(self.cfg).items():
            self.logger.record(f"league/share/{kind}", share)

    def _on_rollout_start(self) -> None:
        # SB3 trains on a rollout after its end: the league, the evaluation and the
        # checkpoint of a step take the weights once that update is in them (a checkpoint
        # without it would resume without the rollout's update, an evaluation would score
        # weights no checkpoint holds)
        steps = self.num_timesteps
        if steps == 0:
            return
        mlp = policy_mlp(self.model)
        self.league.update_current(mlp)
        if self.schedule.due("snapshot", steps):
            self.league.add_snapshot(mlp, steps)
        if self.schedule.due("eval", steps):
            self.evaluate(steps)
        # the update's train/* at the step of the rollout it trained on, as ppo-vec has them
        # (SB3 dumps them with the next rollout's, and never those of a run's last update)
        dump_only(self.logger, ("train/", "eval/"), steps)
        if self.schedule.due("checkpoint", steps):
            self.checkpoint(self.model, latest=True)

    def _on_training_end(self) -> None:
        self.close_progress()

    def close_progress(self) -> None:
        """Closes the progress bar (also when Ctrl-C cut the training short)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    # -- the work -----------------------------------------------------------------------------

    def evaluate(self, steps: int) -> dict[str, Any]:
        cfg = self.cfg
        results = evaluate_run(cfg, policy_mlp(self.model))
        for tag, value in eval_scalars(results).items():
            self.logger.record(tag, value)
        entry = {"steps": steps, "results": results}
        self.evaluations.append(entry)
        score = results[cfg.eval.best_by]["rank_points"]
        if self.best is None or score > self.best:
            self.best = score
            self.checkpoint(self.model, latest=False, name="best")
        self.log_line(evaluation_line(steps, results))
        return entry

    def checkpoint(self, model, latest: bool, name: str | None = None):
        from train.sb3_trainer import code_version, rules_for
        steps = model.num_timesteps
        meta = {"steps": steps, "config": self.cfg.to_dict(),
                "rules": rules_for(self.cfg).to_dict(), "seed": self.cfg.seed,
                "code_version": code_version(), "league": list(self.league.snapshots),
                "evaluations": self.evaluations, "best": self.best,
                "illegal_actions": self.illegal}
        try:
            path = self.run.save_checkpoint(model, name or f"step_{steps:012d}", meta, latest)
        except KeyboardInterrupt:
            if latest:
                prune_if_written(self.league, self.run.root, steps)
            raise
        if latest:
            self.league.checkpointed()
            self.last_checkpoint = (steps, path)
        return path

    def finish(self, model):
        """The closing evaluation (if the last one is stale) and checkpoint (unless the last
        one is of this step and no evaluation came since)."""
        self.model = model
        steps = model.num_timesteps
        if self.schedule.due("snapshot", steps):
            # due after the last rollout, whose start would have taken it (as ppo-vec does):
            # a run extended with --resume would otherwise never hold it
            self.league.add_snapshot(policy_mlp(model), steps)
        stale = not self.evaluations or self.evaluations[-1]["steps"] != steps
        if stale:
            self.evaluate(steps)
        dump_only(self.logger, ("train/", "eval/"), steps)  # the last update's train/* too
        if not stale and self.last_checkpoint is not None and self.last_checkpoint[0] == steps:
            return self.last_checkpoint[1]
        return self.checkpoint(model, latest=True)

    def log_line(self, text: str) -> None:
        if self._bar is not None:
            self._bar.write(text)
        else:
            print(text, flush=True)

    def _tb_writer(self):
        from stable_baselines3.common.logger import TensorBoardOutputFormat
        for fmt in self.logger.output_formats:
            if isinstance(fmt, TensorBoardOutputFormat):
                return fmt.writer
        return None


def dump_only(logger, prefix: str | tuple[str, ...], step: int) -> None:
    """Writes the values recorded under ``prefix`` at ``step`` and keeps the others for SB3's
    next dump. At a rollout's start SB3 has already dumped that step's ``rollout/*`` and
    ``time/*``; what the callbacks record since is due at the next rollout's end, whose step
    it is not."""
    held = {k: (logger.name_to_value.pop(k), logger.name_to_count.pop(k, None),
                logger.name_to_excluded.pop(k, None))
            for k in list(logger.name_to_value) if not k.startswith(prefix)}
    logger.dump(step)
    for k, (value, count, excluded) in held.items():
        logger.name_to_value[k] = value
        if count is not None:
            logger.name_to_count[k] = count
        if excluded is not None:
            logger.name_to_excluded[k] = excluded


def evaluate_run(cfg: TrainConfig, mlp) -> dict[str, dict[str, Any]]:
    """The run's evaluation of a policy: ``eval.deals`` duplicate deals against each of
    ``eval.opponents``, at the table size the evaluation plays."""
    from train.sb3_trainer import eval_players, rules_for
    return evaluate_fields(mlp, rules_for(cfg, eval_players(cfg.players)), cfg.eval.opponents,
                           cfg.eval.deals, seed=cfg.seed + 1, jobs=cfg.eval.jobs)


def eval_scalars(results: dict[str, dict[str, Any]]) -> dict[str, float]:
    """TensorBoard's ``eval/vs_<field>/*`` scalars of an evaluation."""
    return {f"eval/vs_{field_name}/{key}": r[key] for field_name, r in results.items()
            for key in ("rank_points", "ci_low", "ci_high", "president_rate", "arschloch_rate")}


def evaluation_line(steps: int, results: dict[str, dict[str, Any]]) -> str:
    return f"step {steps}: rank points over par " + ", ".join(
        f"vs {f} {r['advantage']:+.3f} [{r['advantage_ci_low']:+.3f}, "
        f"{r['advantage_ci_high']:+.3f}]" for f, r in results.items())


class Schedule:
    """When the league's next snapshot, evaluation and checkpoint fall due: at the first
    rollout's end at or past each multiple of their interval (one seldom ends on it exactly).
    ``eval.every`` 0 never falls due (the run evaluates only at its end)."""

    def __init__(self, cfg: TrainConfig, steps: int):
        self._every = {"snapshot": cfg.league.snapshot_every, "eval": cfg.eval.every,
                       "checkpoint": cfg.checkpoint_every}
        self._next = {what: _next_multiple(steps, every)
                      for what, every in self._every.items() if every}

    def due(self, what: str, steps: int) -> bool:
        """Whether ``what`` is due at ``steps``; if it is, the next one moves past ``steps``."""
        if what not in self._next or steps < self._next[what]:
            return False
        self._next[what] = _next_multiple(steps, self._every[what])
        return True


def _next_multiple(steps: int, every: int) -> int:
    return (steps // every + 1) * every


def _mix(cfg: TrainConfig) -> dict[str, float]:
    total = sum(cfg.league.mix.values())
    return {k: v / total for k, v in cfg.league.mix.items()}
