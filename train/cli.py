"""``arschloch train`` and ``arschloch export``."""

from __future__ import annotations

import argparse
from pathlib import Path

from arschloch_env.cli import (CliError, Interrupted, add_progress_args, add_rules_args,
                               check_out_dir, check_out_file, overrides_from_args)
from arschloch_env.rules import TABLE_SIZES, is_integer


def add_train_parser(sub) -> None:
    p = sub.add_parser("train", help="train a neural bot from a YAML config")
    p.add_argument("--config", metavar="FILE",
                   help="e.g. configs/ppo_culo_4p.yaml (a resumed run has its own)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                   help="override a config field, dotted for sections (ppo.learning_rate=1e-4); "
                        "repeatable; of a field given twice, the later stands")
    p.add_argument("--run-dir", metavar="DIR",
                   help="where the run lives (default: runs/<config name>-seed<seed>)")
    p.add_argument("--resume", action="store_true",
                   help="continue the run in --run-dir from its last checkpoint, with its "
                        "config; --set may change total_steps, the learning rate, the "
                        "checkpoint and snapshot intervals, eval.every, eval.deals, "
                        "eval.jobs, threads, subproc, device, vec.bfloat16, vec.debug, and rules "
                        "to another source of the same rules (DIR/rules.json)")
    add_progress_args(p)
    p.set_defaults(func=_cmd_train)


def default_run_dir(config: str, seed: int) -> str:
    """Where a run of ``config`` goes without --run-dir."""
    return f"runs/{Path(config).stem}-seed{seed}"


def _check_same_config(args: argparse.Namespace, cfg) -> None:
    """A --config given with --resume must be the run's own: a different one is a mistake
    (it would be silently ignored)."""
    from train.config import changed_fields, load_config

    differ = changed_fields(load_config(args.config, args.overrides).to_dict(), cfg.to_dict())
    if differ:
        raise CliError(f"--resume continues {args.run_dir} with its own config "
                       f"({Path(args.run_dir) / 'config.yaml'}); {args.config} differs in "
                       f"{', '.join(differ)}; drop --config (and change resumable fields "
                       f"with --set)")


def add_export_parser(sub) -> None:
    p = sub.add_parser("export", help="export a trained bot as an ONNX bundle")
    p.add_argument("source", metavar="RUN_DIR_OR_CHECKPOINT",
                   help="a run directory (its best checkpoint, else the last) or a "
                        "checkpoint (.zip of algo ppo, .pt of algo ppo-vec)")
    p.add_argument("--out", required=True, metavar="DIR", help="bundle directory, e.g. bots/NAME")
    p.add_argument("--name", help="the bot's name (default: the --out directory's name)")
    p.add_argument("--torch", action="store_true",
                   help="also write the policy as a torch.export program (policy.pt2, "
                        "its checksum in the manifest; load it with "
                        "agents.bundle.load_torch_program(DIR).module())")
    p.set_defaults(func=_cmd_export)


def add_curves_parser(sub) -> None:
    p = sub.add_parser("curves", help="draw a run's learning curves (PNG) from its TensorBoard "
                                      "logs", description="Draws the learning curves of a "
                                      "training run (its tb/ TensorBoard logs) into one PNG.")
    p.add_argument("run_dir", metavar="RUN_DIR",
                   help="the run's directory (arschloch train --run-dir; e.g. "
                        "runs/ppo_culo_4p-seed0)")
    p.add_argument("--out", required=True, metavar="FILE.png", help="the PNG file to write")
    p.set_defaults(func=_cmd_curves)


def _cmd_curves(args: argparse.Namespace) -> int:
    from train.curves import plot_learning_curves
    check_out_file(args.out, "give the PNG file to write", "curves.png")
    # the name says what the file is: any other file of that name (a bundle's policy, a
    # run's config) is not one that this command may replace
    if Path(args.out).suffix.lower() != ".png":
        raise CliError(f"--out {args.out!r}: the learning curves are a PNG file, whose name "
                       f"ends in .png, e.g. {str(Path(args.run_dir) / 'curves.png')!r}")
    check_replaces_a_png(args.out)
    try:
        out = plot_learning_curves(args.run_dir, args.out)
    except FileNotFoundError as exc:
        raise CliError(str(exc)) from None
    print(f"learning curves written to {out}")
    return 0


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def check_replaces_a_png(out: str) -> None:
    """``--out`` may replace a PNG image or an empty file, never a file of another kind that
    merely ends in .png."""
    path = Path(out)
    if path.is_file() and path.stat().st_size:
        with open(path, "rb") as fh:
            if fh.read(len(PNG_SIGNATURE)) != PNG_SIGNATURE:
                raise CliError(f"--out {out!r} is a file that is not a PNG image, which the "
                               f"curves would replace; give another name")


def _cmd_train(args: argparse.Namespace) -> int:
    from train.config import ConfigError, load_config
    from train.sb3_trainer import load_run_config, train

    try:
        if args.resume:
            if not args.run_dir and args.config:
                args.run_dir = default_run_dir(args.config,
                                               load_config(args.config, args.overrides).seed)
            if not args.run_dir:
                raise CliError("--resume needs --run-dir (the run to continue)")
            cfg = load_run_config(Path(args.run_dir), args.overrides)
            if args.config:
                _check_same_config(args, cfg)
        elif not args.config:
            raise CliError("train needs --config FILE (or --resume --run-dir DIR)")
        else:
            cfg = load_config(args.config, args.overrides)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    run_dir = args.run_dir or default_run_dir(args.config, cfg.seed)
    check_out_dir(run_dir, f"--run-dir {run_dir!r}")
    for folder in ("checkpoints", "league", "tb"):  # a resumed run's, written into later
        if (Path(run_dir) / folder).is_dir():
            check_out_dir(str(Path(run_dir) / folder), f"--run-dir {run_dir!r}: {folder}/")
    try:
        final = train(cfg, run_dir, resume=args.resume, progress=args.progress)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    except KeyboardInterrupt:
        raise Interrupted(interrupted_message(Path(run_dir))) from None
    print(f"run directory: {run_dir}\n  checkpoint: {final}\n  TensorBoard: tensorboard "
          f"--logdir {Path(run_dir) / 'tb'}\n  export: arschloch export {run_dir} --out "
          f"bots/my_bot")
    return 0


def interrupted_message(run_dir: Path) -> str:
    """What Ctrl-C left in ``run_dir`` and the command that goes on from there."""
    import shlex

    from train.config import ConfigError
    from train.files import read_latest
    if not (run_dir / "config.yaml").is_file():
        return "interrupted before the run started; nothing to continue: run the command again"
    again = f"arschloch train --resume --run-dir {shlex.quote(str(run_dir))}"
    try:
        steps = read_latest(run_dir)["steps"]
    except ConfigError:
        return (f"interrupted before the first checkpoint; {again} starts the run over "
                f"(keeping what this attempt wrote){_best_so_far(run_dir)}")
    return f"interrupted; the last checkpoint (step {steps}) is kept: continue with {again}"


def _best_so_far(run_dir: Path) -> str:
    """What to say of a best checkpoint that an evaluation wrote before the first checkpoint:
    it exports, until a resume starts the run over and moves it to earlier_attempts/."""
    import shlex

    from train.config import ConfigError
    from train.files import read_run_json
    best = whole_best(run_dir)
    try:
        steps = read_run_json(best.with_suffix(".json"))["steps"] if best else None
    except (ConfigError, KeyError):
        steps = None
    if not isinstance(steps, int):
        return ""
    return (f"; its best checkpoint so far (step {steps}) exports now: arschloch export "
            f"{shlex.quote(str(run_dir))} --out DIR")


def whole_best(run_dir: Path) -> Path | None:
    """The run's best checkpoint, where both its weights and its metadata were written (a kill
    between the two leaves the weights alone)."""
    for suffix in CHECKPOINT_SUFFIXES:
        best = run_dir / "checkpoints" / f"best{suffix}"
        if best.is_file() and best.with_suffix(".json").is_file():
            return best
    return None


CHECKPOINT_SUFFIXES = (".zip", ".pt")
"""``.zip``: an SB3 model (``algo: ppo``); ``.pt``: a ppo-vec state dict (``algo: ppo-vec``)."""


def resolve_checkpoint(source: Path) -> tuple[Path, dict]:
    """The checkpoint to export from a run directory or a checkpoint path, with its meta."""
    from agents.base import is_bundle_dir
    from train.config import ConfigError
    from train.files import read_latest, read_run_json
    if source.is_dir():
        if best := whole_best(source):
            source = best
        elif (source / "latest.json").is_file():
            try:
                source = source / read_latest(source)["checkpoint"]
            except ConfigError as exc:
                raise CliError(f"{exc}; give one of the run's checkpoints instead "
                               f"({source / 'checkpoints'})") from None
        elif is_bundle_dir(source):
            raise CliError(f"{source} is a bot bundle already; export takes the run directory "
                           f"or checkpoint it came from")
        elif source.name == "checkpoints" and (source.parent / "latest.json").is_file():
            raise CliError(f"{source} is the checkpoints folder of the run "
                           f"{str(source.parent)!r}; give the run directory (its best "
                           f"checkpoint, else its latest) or one checkpoint file in it")
        else:
            raise CliError(f"{source} holds no checkpoint (neither checkpoints/best.zip, "
                           f"checkpoints/best.pt nor latest.json)")
    if not source.exists():
        raise CliError(f"{source} does not exist; give a run directory or a checkpoint (.zip "
                       f"or .pt)")
    if source.suffix not in CHECKPOINT_SUFFIXES or not source.is_file():
        raise CliError(f"{source}: not a checkpoint (.zip or .pt) or run directory")
    meta_path = source.with_suffix(".json")
    try:
        meta = read_run_json(meta_path) if meta_path.is_file() else {}
    except ConfigError as exc:
        raise CliError(f"the checkpoint's metadata is damaged: {exc}; export another "
                       f"checkpoint of the run, e.g. its latest") from None
    return source, meta


def rules_options(rules: dict) -> str:
    """The ``--set`` options that make ``rules`` from its preset (a run's rules_overrides)."""
    import json
    import shlex

    from arschloch_env.rules import Rules
    return "".join(f" --set {shlex.quote(f'{k}={json.dumps(v)}')}"
                   for k, v in Rules.from_dict(rules).overrides().items())


def checkpoint_policy(checkpoint: Path):
    """The actor of a checkpoint as a numpy MLP: SB3 zips and ppo-vec state dicts."""
    if checkpoint.suffix == ".pt":
        from train.ppo_vec_io import checkpoint_mlp
        try:
            return checkpoint_mlp(checkpoint)
        except ValueError as exc:
            raise CliError(str(exc)) from None
    from sb3_contrib import MaskablePPO

    from train.export import policy_mlp
    try:
        model = MaskablePPO.load(str(checkpoint), device="cpu")
    except Exception as exc:  # noqa: BLE001 - a damaged zip raises many kinds of errors
        raise CliError(f"{checkpoint}: cannot be loaded ({exc})") from None
    return policy_mlp(model)


def _cmd_export(args: argparse.Namespace) -> int:
    check_out_dir(str(Path(args.out).absolute().parent), f"the folder of --out {args.out!r}")
    if Path(args.out).is_symlink():  # the bundle would replace the link, and leave it behind
        raise CliError(f"--out {args.out!r} is a symbolic link; give the folder it points to "
                       f"({str(Path(args.out).resolve())!r}) or another name")
    out, checkpoint, meta, rules = export_run(Path(args.source), args.out, args.name,
                                              args.torch)
    print(f"exported {checkpoint} (step {meta.get('steps', '?')})")
    print(f"bundle written to {out}; use it as an agent spec, e.g.\n"
          f"  arschloch play --rules {rules['preset']} --players {rules['num_players']}"
          f"{rules_options(rules)} --bots {out}")
    return 0


def export_run(source: Path, out: str | Path, name: str | None = None,
               with_torch: bool = False) -> tuple[Path, Path, dict, dict]:
    """Writes the bundle of a run's last checkpoint (or of the checkpoint ``source``) with
    its training summary; returns (bundle, checkpoint, its metadata, its rules).

    Raises:
        CliError: the checkpoint or its metadata is missing or damaged, named.
    """
    from train.export import torch_policy, write_bundle

    checkpoint, meta = resolve_checkpoint(source)
    mlp = checkpoint_policy(checkpoint)
    cfg = meta.get("config", {})
    if not isinstance(cfg, dict):
        raise CliError(f"the metadata of {checkpoint} is damaged: its config is "
                       f"{type(cfg).__name__}, not a mapping")
    rules = checkpoint_rules(checkpoint, meta)
    players = cfg.get("players", [rules["num_players"]])
    if not (isinstance(players, list) and players
            and all(is_integer(n) and n in TABLE_SIZES for n in players)):
        raise CliError(f"the metadata of {checkpoint} is damaged: its config's players are "
                       f"{players!r}, not a list of table sizes 3..6")
    evaluations = meta.get("evaluations", [])
    training = {"algo": meta.get("algo", cfg.get("algo", "ppo")), "steps": meta.get("steps"),
                "seed": meta.get("seed"), "code_version": meta.get("code_version"),
                "config": cfg, "checkpoint": str(checkpoint),
                "evaluation": evaluations[-1] if evaluations else None}
    if "forwards" in meta:  # ppo-vec: the precision its forwards ran in
        training["forwards"] = meta["forwards"]
    # a size listed twice trained twice as much at it, and is one table size of the bundle
    players = sorted(set(players))
    bundle = write_bundle(out, mlp, rules, presets=[rules["preset"]], players=players,
                          name=name or Path(out).name, training=training,
                          torch_program=torch_policy(mlp) if with_torch else None)
    return bundle, checkpoint, meta, rules


def checkpoint_rules(checkpoint: Path, meta: dict) -> dict:
    """The rules a checkpoint was trained with, from its metadata, checked before anything
    is written."""
    from arschloch_env.rules import RulesError, make_rules

    where = f"{checkpoint}: its metadata ({checkpoint.with_suffix('.json').name})"
    rules = meta.get("rules")
    if not isinstance(rules, dict):
        what = ("is missing" if not meta else "names no rules" if rules is None
                else f"holds rules as {type(rules).__name__}, not as a rules object")
        raise CliError(f"{where} {what}; export needs the rules it was trained with")
    try:
        return make_rules(rules).to_dict()
    except RulesError as exc:
        raise CliError(f"{where} holds rules that are not valid ({exc}); export needs the "
                       f"rules it was trained with") from None


def add_clone_parser(sub) -> None:
    p = sub.add_parser("clone", help="fit a policy network that imitates an agent (a fast "
                                     "league opponent for ppo-vec)")
    p.add_argument("teacher", metavar="AGENT", help="the agent to imitate, e.g. expert")
    add_rules_args(p, players=False)
    p.add_argument("--players", type=int, nargs="+", default=None, metavar="N",
                   help="table sizes to play, 3..6 (default: --set num_players=N, else the "
                        "rules file's, else 4)")
    p.add_argument("--decisions", type=int, default=1_000_000, metavar="D",
                   help="teacher decisions to learn from (default 1,000,000)")
    p.add_argument("--partner", metavar="AGENT",
                   help="another agent in up to half the seats of each match (its "
                        "decisions are not learned from)")
    p.add_argument("--net-arch", type=int, nargs="+", default=[128, 128], metavar="H",
                   help="hidden layer sizes: the ppo-vec run's ppo.net_arch (default 128 128)")
    p.add_argument("--activation", choices=("relu", "tanh"), default="relu",
                   help="the run's ppo.activation (default relu)")
    p.add_argument("--epochs", type=int, default=8,
                   help="passes over the decisions when fitting (default 8)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the matches played and of the fit (default 0)")
    p.add_argument("--jobs", type=int, default=1,
                   help="parts the matches are split into, each its own process (at most one "
                        "per usable core at a time); the decisions collected depend on it, not "
                        "on the machine")
    p.add_argument("--out", required=True, metavar="FILE.npz",
                   help="the policy file, for vec.mix of a ppo-vec config")
    p.set_defaults(func=_cmd_clone)


def check_replaces_a_policy_file(out: str) -> None:
    """``--out`` may replace an earlier policy file or an empty file, never another kind of
    ``.npz`` (numpy's, say), and never go into a training run's folder (its league's
    snapshots are policy files too, which a resumed run would play without a word)."""
    from agents.mlp import MLP

    for folder in Path(out).resolve().parents:
        if (folder / "latest.json").is_file() or (
                (folder / "config.yaml").is_file() and (folder / "checkpoints").is_dir()):
            raise CliError(f"--out {out!r} is inside the training run {str(folder)!r}, whose "
                           f"files the run keeps; give a path outside it, e.g. "
                           f"{str(folder.parent / 'clone.npz')!r}")
    if Path(out).is_file() and Path(out).stat().st_size:
        try:
            MLP.load(out)
        except ValueError as exc:
            raise CliError(f"--out: {exc}; the clone would replace it: give another name") \
                from None


def _cmd_clone(args: argparse.Namespace) -> int:
    from agents.base import AgentSpecError, make_agent
    from arschloch_env.rules import RulesError, make_rules
    from train.clone import TooFewDecisions, clone

    if not args.out.endswith(".npz"):
        raise CliError(f"--out {args.out!r}: a policy file ends in .npz")
    check_out_file(args.out, "name the policy file", "clone.npz")  # before the work
    check_replaces_a_policy_file(args.out)
    for name in ("decisions", "epochs", "jobs"):
        if getattr(args, name) < 1:
            raise CliError(f"--{name} {getattr(args, name)}: must be at least 1")
    if any(n not in TABLE_SIZES for n in args.players or []):
        raise CliError(f"--players {args.players}: table sizes are 3..6")
    if any(h < 1 for h in args.net_arch):
        raise CliError(f"--net-arch {' '.join(map(str, args.net_arch))}: every hidden layer "
                       f"needs at least 1 unit, e.g. --net-arch 128 128")
    try:
        overrides = overrides_from_args(args)
        # without --players: the table of --set num_players, else the rules file's, else 4
        players = args.players or [make_rules(args.rules, None, **overrides).num_players]
        tables = [make_rules(args.rules, n, **overrides) for n in players]
        for spec in filter(None, (args.teacher, args.partner)):
            make_agent(spec)
    except (RulesError, AgentSpecError) as exc:
        raise CliError(str(exc)) from None
    if len({t.rank_order for t in tables}) > 1:
        raise CliError(f"--players {' '.join(map(str, players))} play different decks; one "
                       f"policy file needs one deck")
    try:
        agreement = clone(args.teacher, tables[0], players, args.decisions, args.out,
                          args.net_arch, args.activation, args.epochs, args.seed, args.jobs,
                          args.partner)
    except TooFewDecisions as exc:
        raise CliError(f"--decisions {args.decisions}: {exc}") from None
    print(f"clone of {args.teacher} written to {args.out}: held-out agreement {agreement:.3f}"
          f"\n  use it in a ppo-vec config: vec.mix: {{current: 0.2, {args.out}: 0.8}}")
    return 0
