"""Self-play training with sb3-contrib's MaskablePPO on the single-seat env (``algo: ppo``).

The run, top to bottom:

1. the run directory gets the config, the rules and the code version;
2. ``n_envs`` single-seat envs (one process each) seat the learner against opponents drawn
   per episode by a :class:`~train.league.LeagueSampler`;
3. MaskablePPO learns; after every rollout the callback refreshes the league's ``current``
   weights, adds a frozen snapshot every ``league.snapshot_every`` steps, evaluates against
   fixed fields (duplicate deals) every ``eval.every`` steps and writes checkpoints;
4. ``--resume`` loads the last checkpoint and its league and carries on to ``total_steps``.
   A run stopped before its first checkpoint has none: it starts over (a new start in its
   directory too), its files set aside in ``earlier_attempts/``.

Run directory::

    config.yaml, rules.json       what was trained
    checkpoints/step_<N>.zip/json model and its metadata (steps, league, evaluations)
    checkpoints/best.zip/json     best so far by the evaluation against ``eval.best_by``
    latest.json                   the last checkpoint (what --resume reads)
    league/                       snapshots (see train.league)
    tb/                           TensorBoard logs
    train.lock                    locked while a trainer writes the run
    earlier_attempts/<time>/      what attempts stopped before their first checkpoint wrote
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from agents.runner import WorkerDied
from arschloch_env.cli import interrupt_deferred
from arschloch_env.unique_keys import load_yaml, yaml_error_line
from train.config import (ConfigError, TrainConfig, check_config_fits_checkpoint,
                          resume_config)
from train.files import (fresh_directory, read_latest, read_run_json, write_atomic,
                         write_json_atomic)
from train.league import League, LeagueSampler
from train.memory import refuse_unless_it_fits


def code_version() -> str:
    import arschloch_env
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, cwd=Path(__file__).parent, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"{arschloch_env.__version__}" + (f"+{commit}" if commit else "")


def rules_for(cfg: TrainConfig, players: int | None = None):
    from arschloch_env.rules import make_rules
    return make_rules(cfg.rules, players or cfg.players[0], **cfg.rules_overrides)


def eval_players(players: list[int]) -> int:
    """Evaluation table size of a run trained at ``players``: 4 when among them, else the
    first."""
    return 4 if 4 in players else players[0]


def make_env(cfg: TrainConfig, index: int, league_dir: Path, worker: bool = False):
    """A thunk building env ``index`` (for SubprocVecEnv: ``worker``, it runs in a worker
    process of its own)."""
    def thunk():
        from stable_baselines3.common.monitor import Monitor

        if worker:
            # Ctrl-C reaches the whole process group: the trainer stops and closes the envs
            # itself; a worker that quit on its own would fail the trainer's next step.
            signal.signal(signal.SIGINT, signal.SIG_IGN)

        from arschloch_env.single import SingleSeatEnv
        env = SingleSeatEnv(rules_for(cfg, cfg.players[index % len(cfg.players)]),
                            opponent_sampler=LeagueSampler(league_dir, cfg.league.mix),
                            on_illegal="penalty", mask_in_observation=False)
        return Monitor(env, info_keywords=("illegal_count",))
    return thunk


def make_envs(cfg: TrainConfig, league_dir: Path):
    """The run's ``n_envs`` envs as one SB3 VecEnv, stepped in worker processes of their own
    where :func:`uses_env_processes` (:func:`check_env_workers_fit` first: they must fit),
    their action masks read from the step infos (:class:`~train.sb3_masks.MasksFromInfos`)."""
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    from train.sb3_masks import MasksFromInfos

    subproc = uses_env_processes(cfg)
    thunks = [make_env(cfg, i, league_dir, worker=subproc) for i in range(cfg.n_envs)]
    return MasksFromInfos(SubprocVecEnv(thunks) if subproc else DummyVecEnv(thunks))


def lr_schedule(cfg: TrainConfig):
    """SB3 schedule of ``cfg.learning_rate_at``. SB3's progress is 1 - steps / total_steps,
    on resume too (it adds the steps done to the remaining ones)."""
    return lambda progress: cfg.learning_rate_at(round((1.0 - progress) * cfg.total_steps))


def make_model(cfg: TrainConfig, envs, tb_dir: Path):
    from sb3_contrib import MaskablePPO

    p = cfg.ppo
    return MaskablePPO(
        "MlpPolicy", envs, learning_rate=lr_schedule(cfg), n_steps=p.n_steps,
        batch_size=p.batch_size, n_epochs=p.n_epochs, gamma=p.gamma, gae_lambda=p.gae_lambda,
        clip_range=p.clip_range, ent_coef=p.ent_coef, vf_coef=p.vf_coef,
        max_grad_norm=p.max_grad_norm, seed=cfg.seed, device=cfg.device,
        tensorboard_log=str(tb_dir), verbose=0,
        policy_kwargs=policy_kwargs(cfg))


def policy_kwargs(cfg: TrainConfig) -> dict[str, Any]:
    """SB3's ``policy_kwargs`` of the config's network (saved in every checkpoint)."""
    import torch
    return {"net_arch": {"pi": list(cfg.ppo.net_arch), "vf": cfg.ppo.critic_hidden},
            "activation_fn": {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[cfg.ppo.activation]}


def network_difference(model, cfg: TrainConfig) -> str:
    """How a loaded model's network differs from the one :func:`make_model` builds for
    ``cfg`` (``""`` if it does not): SB3 loads a checkpoint of another shape as it is."""
    found = {k: model.policy_kwargs.get(k) for k in ("net_arch", "activation_fn")}
    if found == policy_kwargs(cfg):
        return ""
    arch = found["net_arch"]
    pi, vf = (arch.get("pi"), arch.get("vf")) if isinstance(arch, dict) else (arch, arch)
    activation = getattr(found["activation_fn"], "__name__", "?").lower()
    return (f"a network of hidden layers {pi}, critic {vf} ({activation}), not this run's "
            f"ppo.net_arch {list(cfg.ppo.net_arch)}, critic {cfg.ppo.critic_hidden} "
            f"({cfg.ppo.activation})")


def load_error_text(exc: Exception) -> str:
    """The first line of SB3's error, cut short: a space mismatch prints whole arrays."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if "spaces do not match" in text:
        return (f"{text.split(':')[0]}: a checkpoint of another deck or observation layout "
                f"than this run's")
    return text if len(text) <= 200 else text[:200] + " ..."


def drop_metadata(checkpoint: Path) -> None:
    """Removes the metadata of a checkpoint about to be replaced in place (the best): a kill
    between writing the new weights and their metadata then leaves weights without
    metadata, which count as no best, never new weights beside the old one's figures."""
    checkpoint.with_suffix(".json").unlink(missing_ok=True)


class RunDir:
    """Paths and atomic writes of one run directory."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.checkpoints = self.root / "checkpoints"
        self.league = self.root / "league"
        self.tb = self.root / "tb"
        self.latest = self.root / "latest.json"

    def create(self, cfg: TrainConfig) -> None:
        for d in (self.checkpoints, self.league, self.tb):
            d.mkdir(parents=True, exist_ok=True)
        self.write_config(cfg)
        write_json_atomic(self.root / "rules.json", rules_for(cfg).to_dict())

    def write_config(self, cfg: TrainConfig) -> None:
        """config.yaml, atomically (a resume rewrites it with what ``--set`` changed)."""
        write_atomic(self.root / "config.yaml", yaml.safe_dump(cfg.to_dict(), sort_keys=False))

    def save_checkpoint(self, model, name: str, meta: dict[str, Any], latest: bool) -> Path:
        """model.zip and its metadata, each written to a temporary name and renamed; Ctrl-C
        waits until all of them are written, so that they always agree."""
        final = self.checkpoints / f"{name}.zip"
        tmp = self.checkpoints / f"{name}.part.zip"
        with interrupt_deferred():
            model.save(str(tmp))
            drop_metadata(final)
            os.replace(tmp, final)
            write_json_atomic(self.checkpoints / f"{name}.json", meta)
            if latest:
                write_json_atomic(self.latest, {"checkpoint": f"checkpoints/{name}.zip",
                                                "meta": f"checkpoints/{name}.json",
                                                "steps": meta["steps"]})
        return final

    OWN = ("config.yaml", "rules.json", "checkpoints", "league", "tb")
    """What a run writes at its top level (other files in the directory are not its own)."""
    SET_ASIDE = "earlier_attempts"
    LOCK = "train.lock"
    UNFINISHED = (".part", ".part.zip", ".part.pt", ".part.npz")
    """How the names of files being written end (they are renamed once whole)."""

    @contextlib.contextmanager
    def lock(self):
        """Held by the trainer writing the run: a second one would interleave its checkpoints
        with the first's, or set the first's files aside under it. A directory this call
        made goes again if an error (a config error found late: a checkpoint to start from
        that does not fit) stops the run before it wrote anything but its config."""
        refuse_while_importing_main()
        try:
            import fcntl
        except ImportError:  # not POSIX: no locking
            yield
            return
        made = not self.root.exists()
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root / self.LOCK
        # lockf, not flock: a process-wide POSIX lock, which forked evaluation workers do
        # not inherit (one left over would hold the run after the trainer is gone).
        with open(path, "a") as f:
            try:
                fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise ConfigError(f"{self.root} is in use by another arschloch train; let it "
                                  f"finish or stop it (Ctrl-C), then run this again") from None
            self._remove_unfinished_writes()
            try:
                yield
            except Exception:
                if made and self._only_set_up():
                    shutil.rmtree(self.root)
                    made = False
                raise
            finally:
                if made and [p.name for p in self.root.iterdir()] == [self.LOCK]:
                    path.unlink()
                    self.root.rmdir()

    def _remove_unfinished_writes(self) -> None:
        """The ``.part`` files of writes that a killed trainer left (each is written there,
        then renamed): with the lock held, nothing else is writing them."""
        for folder in (self.root, self.checkpoints, self.league):
            if folder.is_dir():
                for tmp in folder.iterdir():
                    if tmp.name.endswith(self.UNFINISHED) and tmp.is_file():
                        tmp.unlink()

    def _only_set_up(self) -> bool:
        """The directory holds what :meth:`create` writes and no more: config, rules, the
        lock, and its folders without a file in them."""
        for p in self.root.iterdir():
            if p.name in ("config.yaml", "rules.json", self.LOCK):
                continue
            if not (p.is_dir() and p.name in self.OWN and
                    not any(f.is_file() for f in p.rglob("*"))):
                return False
        return True

    def refuse_unless_a_run(self) -> None:
        """Before a run without ``latest.json`` starts in this directory (over, or anew):
        refuses one whose checkpoints lost their ``latest.json`` (starting over would drop
        them), and a folder that is no run's (a run makes ``checkpoints/`` before anything
        else) but holds files, which the run would mix with its own or write over.

        Raises:
            ConfigError: naming what is there.
        """
        if not self.root.is_dir() or self.latest.is_file():
            return
        if self.checkpoints.is_dir():
            steps = sorted(self.checkpoints.glob("step_*"))
            if steps:
                raise ConfigError(
                    f"run directory {self.root} has checkpoints (the newest: {steps[-1].name}) "
                    f"but no latest.json, which names the one to continue from; put it back, or "
                    f"give a new run a --run-dir of its own")
            return  # a run stopped before its first checkpoint (with what else was put there)
        foreign = sorted(p.name for p in self.root.iterdir()
                         if p.name not in (self.LOCK, self.SET_ASIDE)
                         and not p.name.startswith(".")  # .gitkeep and the like
                         and not p.name.endswith(self.UNFINISHED))
        if foreign:
            raise ConfigError(
                f"run directory {self.root} holds files that are not a run's "
                f"({', '.join(foreign[:5])}{', ...' if len(foreign) > 5 else ''}), which the "
                f"run would mix with its own or write over; give it a --run-dir of its own "
                f"(new or empty)")

    def _attempt_folder(self) -> Path:
        """A new ``earlier_attempts/<time>/`` for what an attempt left."""
        return fresh_directory(self.root / self.SET_ASIDE / time.strftime("%Y%m%d-%H%M%S"))

    def resumed(self, cfg: TrainConfig, steps: int) -> None:
        """Once a resumed run has loaded what it goes on from: its config.yaml rewritten with
        what ``--set`` changed, and a line saying where it goes on (a run without a progress
        bar said nothing until its first evaluation)."""
        self.write_config(cfg)
        print(f"resuming {self.root} from its checkpoint at step {steps} (total_steps="
              f"{cfg.total_steps})", file=sys.stderr, flush=True)

    def set_aside_stale_best(self, steps: int) -> Path | None:
        """Moves a best checkpoint written after the checkpoint at ``steps`` (by an attempt
        that went on and stopped later: moves the resumed run will not make) to
        ``earlier_attempts/<time>/checkpoints/`` and returns that attempt folder; None when
        the best is not newer than ``steps``."""
        meta = self.checkpoints / "best.json"
        if not any(self.checkpoints.glob("best.*")):
            return None
        # a best without its metadata (a kill between the two writes) is set aside too
        if meta.is_file() and read_run_json(meta)["steps"] <= steps:
            return None
        dest = self._attempt_folder()
        (dest / "checkpoints").mkdir()
        for path in self.checkpoints.glob("best.*"):
            os.replace(path, dest / "checkpoints" / path.name)
        return dest

    def best_score(self) -> float | None:
        """The evaluation score of the best checkpoint there is; None before the first."""
        meta = self.checkpoints / "best.json"
        return read_run_json(meta)["best"] if meta.is_file() else None

    def set_aside(self) -> Path | None:
        """Moves what an attempt that stopped before its first checkpoint wrote (the best
        checkpoint of its first evaluations, league snapshots, TensorBoard logs, its config)
        to ``earlier_attempts/<time>/`` and returns that folder; None when it wrote nothing
        but its config. Nothing is deleted: the attempt's best may be worth keeping."""
        if not any(d.is_dir() and any(d.iterdir())
                   for d in (self.checkpoints, self.league, self.tb)):
            return None
        dest = self._attempt_folder()
        for name in self.OWN:
            if (self.root / name).exists():
                os.replace(self.root / name, dest / name)
        return dest


def resumed_logger(log_dir: Path, steps: int):
    """SB3's logger for a run resumed at ``steps``: TensorBoard in the run's folder, whose
    writer drops the points an interrupted attempt logged past that step (``purge_step``, as
    TensorBoard and ``arschloch curves`` honour it), so that they show one history."""
    from stable_baselines3.common.logger import Logger, TensorBoardOutputFormat
    from torch.utils.tensorboard import SummaryWriter

    output = TensorBoardOutputFormat.__new__(TensorBoardOutputFormat)
    output.writer = SummaryWriter(log_dir=str(log_dir), purge_step=steps + 1)
    output._is_closed = False  # what TensorBoardOutputFormat.__init__ sets besides the writer
    return Logger(str(log_dir), [output])


def finished_checkpoint(run_dir: str | Path, total_steps: int) -> Path | None:
    """The last checkpoint of a run that already reached ``total_steps``, else None."""
    run = RunDir(run_dir)
    if not run.latest.is_file():
        return None
    latest = read_latest(run.root)
    return run.root / latest["checkpoint"] if latest["steps"] >= total_steps else None


def resumed_seed(seed: int, steps: int) -> int:
    """The seed of a run resumed at ``steps``: its own per step, as ppo-vec's deals and draws
    (:func:`train.ppo_vec.setup`), so that a resumed run plays on instead of replaying."""
    import numpy as np
    return int(np.random.SeedSequence([seed, steps]).generate_state(1)[0])


def load_run_config(run_dir: Path, overrides: list[str] = ()) -> TrainConfig:
    """The config of the run in ``run_dir`` with resumable ``--set`` overrides applied."""
    path = run_dir / "config.yaml"
    if not path.is_file():
        data = recorded(run_dir, "config")
        if data is None:
            empty = not run_dir.is_dir() or not any(run_dir.iterdir())
            raise ConfigError(f"{run_dir} is not a run directory (no config.yaml); "
                              + (f"start a run there with arschloch train --config FILE "
                                 f"--run-dir {run_dir}" if empty else
                                 "give the --run-dir of a run (it holds config.yaml and "
                                 "checkpoints/), or start a new run in a folder of its own"))
        print(f"{path} is missing: resuming with the config the run's last checkpoint "
              f"recorded (a resumed run writes config.yaml again)", file=sys.stderr)
    else:
        try:
            data = load_yaml(path.read_text(encoding="utf-8"))
        except (yaml.YAMLError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
            raise ConfigError(f"{path} is damaged: {yaml_error_line(exc)}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} is damaged: it holds {type(data).__name__}, not the run's "
                          f"config mapping")
    check_input_paths(data, path, overrides)
    cfg = resume_config(data, overrides)
    check_same_rules(cfg, run_dir, data.get("rules"))
    return cfg


def recorded(run_dir: Path, key: str) -> dict[str, Any] | None:
    """The mapping ``key`` (``config``, ``rules``) that the run's last checkpoint recorded, or
    None without a readable checkpoint or such a mapping (the trainer names what is wrong)."""
    try:
        value = read_run_json(run_dir / read_latest(run_dir)["meta"]).get(key)
    except ConfigError:
        return None
    return value if isinstance(value, dict) else None


def check_input_paths(data: dict[str, Any], path: Path, overrides: list[str] = ()) -> None:
    """The files a run's config names (a rules file, policy files in ``vec.mix``) are found
    from here: relative paths are relative to where the run was started. A field that
    ``overrides`` set anew is not looked for."""
    from arschloch_env.rules import PRESETS
    from train.ppo_vec_seats import is_policy_file

    replaced = {text.partition("=")[0].strip() for text in overrides}
    rules = data.get("rules")
    named = [("rules", rules)] if isinstance(rules, str) and rules not in PRESETS else []
    vec = data.get("vec")
    mix = vec.get("mix") if isinstance(vec, dict) else None
    if isinstance(mix, dict):
        named += [("vec.mix", k) for k in mix if isinstance(k, str) and is_policy_file(k)]
    missing = [(field, f) for field, f in named if field not in replaced and not Path(f).exists()]
    if missing:
        field, f = missing[0]
        saved_rules = path.parent / "rules.json"
        instead = (f"; or resume with the rules the run was trained with, --set "
                   f"rules={saved_rules.resolve()}"
                   if field == "rules" and saved_rules.is_file() else "")
        if Path(f).is_absolute():
            raise ConfigError(f"{path} names {f!r} ({field}), which does not exist: restore "
                              f"it{instead}")
        raise ConfigError(f"{path} names {f!r} ({field}), which is not there from "
                          f"{Path.cwd()}; a relative path is relative to the directory the "
                          f"run was started in: resume from there{instead}")


def check_same_rules(cfg: TrainConfig, run_dir: Path, trained: Any = None) -> None:
    """A resumed run plays the rules it was trained with (its ``rules.json``), which a
    rules file edited since, or another one named by ``--set rules=``, would change without a
    word. ``trained``: the ``rules`` its config named, all a run without ``rules.json`` has
    to compare."""
    from arschloch_env.rules import PRESETS

    saved_path = run_dir / "rules.json"
    if not saved_path.is_file():
        if trained is not None and cfg.rules != trained:
            raise ConfigError(f"--resume: rules cannot change in a run that kept no "
                              f"rules.json (it was trained with {trained!r})")
        return
    saved = read_run_json(saved_path)
    check_rules_file_fits_checkpoint(saved, saved_path, run_dir)
    now = rules_for(cfg).to_dict()
    # a field the kit added since has its old behaviour by default: only the saved ones count
    changed = [k for k in saved if saved[k] != now.get(k)]
    if changed:
        trained = ", ".join(f"{k}={saved[k]!r}" for k in changed)
        given = ", ".join(f"{k}={now.get(k)!r}" for k in changed)
        preset = isinstance(cfg.rules, str) and cfg.rules in PRESETS
        what = (f"the preset {cfg.rules!r} gives" if preset
                else f"its rules {cfg.rules!r} now give")
        raise ConfigError(f"--resume: the run was trained with {trained} ({saved_path}), but "
                          f"{what} {given}; the rules cannot change in a resumed run: "
                          f"{'' if preset else 'restore the file, or '}resume with --set "
                          f"rules={saved_path.resolve()}, or start a new run")


def check_rules_file_fits_checkpoint(saved: dict[str, Any], saved_path: Path,
                                     run_dir: Path) -> None:
    """Refuses a ``rules.json`` that differs from the rules the run's last checkpoint records
    it trained with: an edit by hand, which would change the rules of the resumed run. A run
    without a readable checkpoint has nothing to compare."""
    trained = recorded(run_dir, "rules") or {}
    edited = [k for k in trained if saved.get(k) != trained[k]]
    if edited:
        says = ", ".join(f"{k}={saved.get(k)!r}" for k in edited)
        was = ", ".join(f"{k}={trained[k]!r}" for k in edited)
        raise ConfigError(f"--resume: {saved_path} says {says}, but the run's checkpoint "
                          f"{read_latest(run_dir)['checkpoint']} was trained with {was}; one "
                          f"of them was changed since (or copied from another run), and the "
                          f"rules cannot change in a resumed run: put it back as it was, or "
                          f"start a new run")


WORKER_GONE = (EOFError, BrokenPipeError, ConnectionResetError)
"""How SubprocVecEnv's pipes report a worker that died."""


def refuse_while_importing_main() -> None:
    """Raises RuntimeError in a worker process that is importing the caller's script again
    (the env workers and evaluation pools start by importing ``__main__``, as
    multiprocessing's spawn and forkserver do): a script that trains at import time would start
    a second run there, which fails on the first run's lock with a message about another
    trainer. multiprocessing marks that import with the same flag it checks itself."""
    import multiprocessing

    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise RuntimeError("a worker process of this training run is importing your script, "
                           "which starts training again: put the code that trains under "
                           "'if __name__ == \"__main__\":' (a notebook needs no such guard)")


def train(cfg: TrainConfig, run_dir: str | Path, resume: bool = False,
          progress: bool | None = None) -> Path:
    """Trains per ``cfg`` into ``run_dir`` and returns the final checkpoint's path
    (``algo: ppo-vec`` runs :func:`train.ppo_vec.train`). Resuming a run that already
    reached ``total_steps`` writes nothing and returns its last checkpoint. ``progress``:
    show a tqdm bar (``None``: only on a terminal)."""
    if resume and (done := finished_checkpoint(run_dir, cfg.total_steps)):
        print(f"{run_dir} already reached total_steps={cfg.total_steps}; nothing to train "
              f"(extend it with --set total_steps=N)", file=sys.stderr)
        return done
    run = RunDir(run_dir)
    if (run.root / "manifest.json").is_file():  # its files would be mixed with the run's
        raise ConfigError(f"run directory {run.root} holds a bot bundle (manifest.json); give "
                          f"the run a folder of its own (--run-dir)")
    run.refuse_unless_a_run()
    with run.lock():
        if not run.latest.is_file():
            # An attempt stopped before its first checkpoint left nothing to resume from, but
            # files that made a new start refuse the directory: start over, keeping them.
            if resume:
                print(f"{run.root} has no checkpoint to continue from (the run stopped "
                      f"before its first, due every checkpoint_every={cfg.checkpoint_every} "
                      f"steps); starting it over from step 0 with its config", file=sys.stderr)
            resume = False
            if (moved := run.set_aside()) is not None:
                print(f"the files of the attempt that stopped before its first checkpoint are "
                      f"kept in {moved}", file=sys.stderr)
        elif not resume:
            raise ConfigError(f"run directory {run.root} already holds a run; use --resume to "
                              f"continue it or --run-dir for a new one")
        elif (moved := run.set_aside_stale_best(
                steps := read_latest(run.root)["steps"])) is not None:
            print(f"the best checkpoint of the attempt that went on past step {steps} is kept "
                  f"in {moved}; the resumed run has its best anew from its next evaluation",
                  file=sys.stderr)
        if cfg.algo == "ppo-vec":
            from train import ppo_vec
            return ppo_vec.train(cfg, run_dir, resume=resume, progress=progress)
        return _train_sb3(cfg, run, resume, progress)


WORKER_BYTES = 200 * 2**20
"""About the memory of one env worker process: 164 MiB of its own (torch, the engine and the
bots loaded; culo at 4 players, measured on 2026-12-06), with room for larger rules."""


def uses_env_processes(cfg: TrainConfig) -> bool:
    """The envs step in processes of their own (``subproc``, and more than one env)."""
    return cfg.subproc and cfg.n_envs > 1


def check_env_workers_fit(cfg: TrainConfig, meminfo: str = "/proc/meminfo",
                          cgroup: str = "/sys/fs/cgroup") -> None:
    """Refuses a run whose env worker processes (one per env with ``subproc``) would need more
    memory than is available, before any starts: a mistyped ``n_envs`` would otherwise start
    processes until the machine ran out of memory."""
    if not uses_env_processes(cfg):
        return
    refuse_unless_it_fits(cfg.n_envs * WORKER_BYTES,
                          f"n_envs: {cfg.n_envs} env processes of about "
                          f"{WORKER_BYTES // 2**20} MiB each need",
                          "lower n_envs, or set subproc: false to step the envs in the "
                          "trainer's own process", meminfo, cgroup)


def _train_sb3(cfg: TrainConfig, run: RunDir, resume: bool, progress: bool | None) -> Path:
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.utils import get_latest_run_id

    from train.callbacks import TrainingLoop
    from train.export import policy_mlp

    check_env_workers_fit(cfg)
    meta: dict[str, Any] | None = None
    if resume:
        latest = read_latest(run.root)
        meta = read_run_json(run.root / latest["meta"])
        check_config_fits_checkpoint(cfg, meta.get("config"), latest["checkpoint"])
    else:
        run.create(cfg)

    torch.set_num_threads(cfg.torch_threads)
    league = League(run.league, cfg.league.max_snapshots)
    if meta is not None:
        league.restore(meta.get("league"))
    envs = make_envs(cfg, run.league)
    envs.seed(cfg.seed)
    if meta is None:
        model = make_model(cfg, envs, run.tb)
    else:
        checkpoint = run.root / latest["checkpoint"]
        try:
            model = MaskablePPO.load(str(checkpoint), env=envs, device=cfg.device,
                                     custom_objects={"tensorboard_log": str(run.tb)})
        except Exception as exc:  # noqa: BLE001 - a damaged zip raises many kinds of errors
            envs.close()
            raise ConfigError(f"--resume: {checkpoint} cannot be loaded "
                              f"({load_error_text(exc)})") from None
        wrong = network_difference(model, cfg)
        if wrong:
            envs.close()
            raise ConfigError(f"--resume: {checkpoint} holds {wrong}: another run's "
                              f"checkpoint; put this run's back, or start a new run")
        # load reseeds torch, numpy and the envs with the run's seed, as at step 0: the
        # resumed run would deal the same deals and draw the same opponents again
        model.set_random_seed(resumed_seed(cfg.seed, model.num_timesteps))
        # the league's current weights may be those of an attempt that went on past the
        # checkpoint; the first episodes, drawn before training starts, must not play them
        league.update_current(policy_mlp(model))
        run.resumed(cfg, model.num_timesteps)
    model.lr_schedule = lr_schedule(cfg)  # the config's, also when it changed for the resume
    if meta is not None:  # SB3 keeps a logger set here: learn() makes none of its own
        model.set_logger(resumed_logger(
            run.tb / f"ppo_{get_latest_run_id(str(run.tb), 'ppo')}", model.num_timesteps))
    loop = TrainingLoop(cfg, run, league, meta, progress=progress)
    remaining = cfg.total_steps - model.num_timesteps
    started = time.time()
    interrupted = False
    try:
        if remaining > 0:
            model.learn(total_timesteps=remaining, callback=loop,
                        reset_num_timesteps=meta is None, tb_log_name="ppo")
        final = loop.finish(model)
    except WORKER_GONE as exc:
        kept = ("Checkpoints written so far are kept: fix the cause and continue from the last "
                "with --resume" if run.latest.is_file() else
                "No checkpoint was written yet: fix the cause and start the run again")
        raise WorkerDied(f"an environment worker process died ({type(exc).__name__}); its "
                         f"error is printed above. {kept}") from None
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        loop.close_progress()
        if interrupted:
            # Ctrl-C may have come between the replies of two workers (or inside one): a
            # close, which first reads the replies it thinks are due, could wait forever.
            for process in getattr(envs, "processes", ()):
                process.terminate()
                process.join()
        else:
            try:
                envs.close()
            except WORKER_GONE:
                pass  # a dead worker's pipe; the error that matters is already raised
    loop.log_line(f"done in {time.time() - started:.0f} s; checkpoint {final}")
    return final


__all__ = ["RunDir", "check_env_workers_fit", "code_version", "eval_players", "load_run_config",
           "make_env", "make_envs", "make_model", "rules_for", "train", "uses_env_processes"]
