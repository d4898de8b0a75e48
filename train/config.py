"""Training configs: typed dataclasses loaded from YAML, unknown keys rejected.

``--set key=value`` overrides any field, nested ones with dots (``--set league.snapshot_every=
50000``, ``--set ppo.learning_rate=1e-4``). Values are parsed as YAML scalars or lists.
"""

from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from types import NoneType, UnionType
from typing import Any, get_args, get_origin, get_type_hints

import yaml

from arschloch_env.unique_keys import load_yaml, yaml_error_line


class ConfigError(ValueError):
    """A config file or override with an unknown key or a value of the wrong type."""


@dataclass
class PPOConfig:
    learning_rate: float = 3e-4
    """Adam step size at the start."""
    lr_final: float | None = None
    """Step size at ``total_steps``, reached linearly from ``learning_rate`` (None: constant).
    The rate at step s is ``learning_rate + (lr_final - learning_rate) * s / total_steps``: a
    resumed run with the same ``total_steps`` follows the same line from where it stopped; one
    resumed with another ``total_steps`` follows the new line, so its rate moves at once to
    where that line is (up when the run is extended, down when it is cut short)."""
    n_steps: int = 1024
    """Environment steps per env between updates (rollout length)."""
    batch_size: int = 512
    """Minibatch size of the PPO update."""
    n_epochs: int = 4
    """Passes over each rollout."""
    gamma: float = 0.995
    """Discount per decision of the learner."""
    gae_lambda: float = 0.95
    clip_range: float = 0.2
    ent_coef: float = 0.01
    """Entropy bonus: keeps exploring while the league changes."""
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    net_arch: list[int] = field(default_factory=lambda: [256, 256])
    """Hidden layer sizes of the actor, and of the critic unless ``critic_arch`` is given
    (separate networks)."""
    critic_arch: list[int] | None = None
    """Hidden layer sizes of the critic (None: ``net_arch``'s). A bundle holds the actor
    alone, so the critic's size changes the training's cost, not the bot's."""
    activation: str = "tanh"
    """Hidden activation: tanh or relu."""

    @property
    def critic_hidden(self) -> list[int]:
        """The critic's hidden layer sizes."""
        return list(self.net_arch if self.critic_arch is None else self.critic_arch)


@dataclass
class LeagueConfig:
    snapshot_every: int = 25_000
    """A frozen copy of the learner joins the pool every this many learner steps."""
    max_snapshots: int = 20
    """Pool size; the oldest snapshots leave first. 0: no snapshots (seats drawn as
    ``snapshots`` play ``current``, as before the first snapshot)."""
    mix: dict[str, float] = field(default_factory=lambda: {
        "snapshots": 0.3, "current": 0.2, "greedy": 0.25, "expert": 0.25})
    """Share of each opponent kind per seat and episode: ``snapshots`` (uniform over the
    pool), ``current`` (the latest weights of the learner) and any agent spec (e.g. greedy)."""


@dataclass
class EvalConfig:
    every: int = 50_000
    """Learner steps between evaluations (0: only at the end)."""
    deals: int = 100
    """Duplicate deals per opponent field (each played with the bot in every seat)."""
    opponents: list[str] = field(default_factory=lambda: ["greedy", "expert"])
    """Fixed fields: the bot against n-1 copies of each."""
    best_by: str = "expert"
    """The field whose rank points pick the best-so-far checkpoint."""
    jobs: int = 1
    """Processes for the evaluation tournaments."""


@dataclass
class VecConfig:
    """``algo: ppo-vec`` (train/ppo_vec.py): PPO on the batched engine. The network, the
    optimiser and the PPO coefficients come from ``ppo`` (``ppo.n_steps`` and
    ``ppo.batch_size`` are replaced by ``rollout_steps`` and ``minibatches``), the snapshot
    schedule from ``league`` (``league.mix`` by ``mix``), torch's threads and device from
    the top-level ``torch_threads`` and ``device``."""

    num_games: int = 1024
    """B: games stepped together, split evenly over ``players`` (one VectorGame each)."""
    rollout_steps: int = 64
    """T: vector steps per rollout, at least twice the table size. A rollout trains on about
    ``num_games * rollout_steps *`` (share of trained seats) samples: the moves of each trained
    seat and game whose outcome is not known yet at its end wait for the next rollout (see
    train/ppo_vec.py)."""
    minibatches: int = 4
    """Minibatches per epoch of the update (their size follows from the rollout)."""
    critic_state: bool = False
    """The critic sees the full-information state (every hand); the actor never does."""
    mix: dict[str, float] = field(default_factory=lambda: {
        "current": 0.5, "snapshots": 0.44, "greedy": 0.03, "expert": 0.03})
    """Share of each controller kind per opponent seat: ``current`` (the learner itself,
    also trained on), ``snapshots`` (frozen league snapshots; ``current`` while there are
    none), ``random`` (batched), a policy file (``.npz`` with the learner's layer sizes, e.g.
    a clone of expert from ``arschloch clone``; batched with the snapshots) and any agent
    spec (greedy, expert, a bundle ...). Agent seats are grouped into whole games, so their
    summed share is also the share of games that run at Python speed: keep it small."""
    engine_threads: int = 1
    """Numba threads of the VectorGames (1: the calling thread)."""
    collect_threads: int = 1
    """Torch threads while collecting (the update uses ``torch_threads``). Idle OpenMP threads
    spin, as torch's are left to: fastest on cores of their own, but runs side by side on the
    same cores slow each other down several times. Give each run one thread, or set
    ``OMP_WAIT_POLICY=PASSIVE`` in its environment (README, "Speed")."""
    bfloat16: bool | str = False
    """The learner's forward passes (collecting and the update) in bfloat16 under
    ``torch.autocast``, its weights and Adam in float32: on CPUs with bfloat16 products
    (``avx512_bf16``, ``amx_bf16``) the update takes about 0.6 of the time; on others it is
    slower (the trainer says so). Snapshots and bots play in float32. ``auto``: bfloat16
    where the device has its products in hardware (those CPUs, NVIDIA GPUs from Ampere on),
    else float32; the trainer says which."""
    debug: bool = False
    """Check the mirror reference game of every game with an agent seat against the vector
    engine after every step (observation, mask, seat to act, match end)."""


@dataclass
class TrainConfig:
    """One training run; see configs/*.yaml."""

    algo: str = "ppo"
    """``ppo``: sb3-contrib MaskablePPO on the single-seat Gymnasium env; ``ppo-vec``: PPO on
    the batched engine (train/ppo_vec.py, configured by ``vec``)."""
    rules: str = "culo"
    """Preset name or rules file."""
    rules_overrides: dict[str, Any] = field(default_factory=dict)
    """Rules fields to override (as ``--set`` of the other commands)."""
    players: list[int] = field(default_factory=lambda: [4])
    """Table sizes; env i plays at players[i % len(players)] (one policy for all; a size
    listed twice has twice the share). Where a config does not give it: the table size its
    rules file or ``rules_overrides`` names, else 4."""
    total_steps: int = 200_000
    """Learner decisions to train for."""
    n_envs: int = 2
    """Environments, each in its own process when ``subproc`` is true."""
    subproc: bool = True
    seed: int = 0
    init_from: str | None = None
    """``algo: ppo-vec`` only: a ppo-vec checkpoint (``.pt``) or run directory (its last
    checkpoint, per ``latest.json``) whose actor, critic and optimizer state a new run starts
    from, e.g. to go on training a bot against other opponents. The network must be this
    config's; steps, league and evaluations start afresh. A resumed run reads its own
    checkpoint instead."""
    checkpoint_every: int = 50_000
    """Learner steps between checkpoints (also written at the end)."""
    device: str = "cpu"
    """Where the networks run: ``cpu``, ``cuda``, ``cuda:N`` or ``auto`` (CUDA where there
    is one)."""
    torch_threads: int = 1
    ppo: PPOConfig = field(default_factory=PPOConfig)
    league: LeagueConfig = field(default_factory=LeagueConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    vec: VecConfig = field(default_factory=VecConfig)

    def learning_rate_at(self, steps: int) -> float:
        """The step size after ``steps`` samples: constant, or linear to ``ppo.lr_final``."""
        p = self.ppo
        if p.lr_final is None:
            return p.learning_rate
        done = min(1.0, steps / max(1, self.total_steps))
        return p.learning_rate + (p.lr_final - p.learning_rate) * done

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _colon_hint(text: str) -> str:
    """YAML reads ``key:value`` without the space as one string, not a key and its value."""
    return f"YAML needs a space after the colon ({text.replace(':', ': ', 1)})"


def _not_a_mapping(where: str, value: Any) -> ConfigError:
    hint = f"; {_colon_hint(value)}" if isinstance(value, str) and ":" in value else ""
    return ConfigError(f"{where}: expected a mapping, got {value!r}{hint}")


def _coerce(value: Any, typ: Any, where: str) -> Any:
    """Checks (and lightly converts) a YAML value against a dataclass field type."""
    if is_dataclass(typ):
        if not isinstance(value, dict):
            raise _not_a_mapping(where, value)
        return _build(typ, value, where + ".")
    origin = get_origin(typ)
    if origin is UnionType:
        if value is None and NoneType in get_args(typ):
            return None
        kinds = [t for t in get_args(typ) if t is not NoneType]
        if len(kinds) == 1:
            return _coerce(value, kinds[0], where)
        for kind in kinds:
            try:
                return _coerce(value, kind, where)
            except ConfigError:
                pass
        raise ConfigError(f"{where}: expected {' or '.join(k.__name__ for k in kinds)}, "
                          f"got {value!r}")
    if origin is list:
        (item,) = get_args(typ)
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        return [_coerce(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        _, vt = get_args(typ)
        if not isinstance(value, dict):
            raise _not_a_mapping(where, value)
        glued = [k for k, v in value.items() if v is None and ":" in str(k)]
        if glued:
            raise ConfigError(f"{where}: {glued[0]!r} reads as one key with no value; "
                              f"{_colon_hint(str(glued[0]))}")
        return {str(k): _coerce(v, vt, f"{where}.{k}") for k, v in value.items()}
    if typ is Any:
        return value
    if typ is float:
        # YAML 1.1 reads "1e-4" as a string; a number is what anyone means by it.
        try:
            if not isinstance(value, bool):
                return float(value)
        except (TypeError, ValueError):
            pass
        raise ConfigError(f"{where}: expected a number, got {value!r}")
    if typ is int and isinstance(value, str):
        value = _number_or_text(value)  # YAML 1.1 reads "2e7" as a string, as "1e-4"
    if typ is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if typ in (int, str, bool) and not (isinstance(value, typ) and
                                        not (typ is int and isinstance(value, bool))):
        raise ConfigError(f"{where}: expected {typ.__name__}, got {value!r}")
    return value


def _number_or_text(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text


def _build(cls, data: dict[str, Any], prefix: str = ""):
    hints = get_type_hints(cls)
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known, key=str)  # YAML may read a key as a number
    if unknown:
        names = ", ".join(prefix + str(k) for k in unknown)
        raise ConfigError(f"unknown config key(s) {names}; "
                          f"allowed in {prefix or 'the top level'}: {', '.join(sorted(known))}")
    kwargs = {k: _coerce(v, hints[k], prefix + k) for k, v in data.items()}
    return cls(**kwargs)


def config_from_dict(data: dict[str, Any]) -> TrainConfig:
    cfg = _build(TrainConfig, data)
    if "players" not in data:
        cfg.players = [rules_table_size(cfg)]
    validate(cfg)
    return cfg


def rules_table_size(cfg: TrainConfig) -> int:
    """The table size the rules file or ``rules_overrides`` names, else 4: what ``players``
    is when the config does not give it (as ``clone`` and ``tournament`` take it)."""
    from arschloch_env.rules import RulesError, make_rules, names_num_players

    if names_num_players(cfg.rules, cfg.rules_overrides):
        try:
            return make_rules(cfg.rules, **cfg.rules_overrides).num_players
        except RulesError:
            check_rules(cfg, None)  # names what is wrong, and where (not a size of 4)
    return 4


def _shipped_hint(path: Path) -> str:
    """Where a config named without its folder is, or which configs the kit ships (relative
    to the working directory where it holds them, else absolute)."""
    shipped = Path(__file__).resolve().parents[1] / "configs"
    try:
        shown = shipped.relative_to(Path.cwd().resolve())
    except ValueError:
        shown = shipped
    if (shipped / path.name).is_file() and shown / path.name != path:
        return f"; the kit's config of that name is {shown / path.name}"
    names = sorted(p.name for p in shipped.glob("*.yaml"))
    return f"; the kit's configs are in {shown}/: {', '.join(names)}" if names else ""


def load_config(path: str | Path | None, overrides: list[str] = ()) -> TrainConfig:
    """A config from a YAML file (or the defaults) with ``key=value`` overrides applied."""
    data: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        if p.is_dir():
            raise ConfigError(f"config file {str(p)!r} is a directory; give a YAML "
                              f"file{_shipped_hint(p)}")
        if not p.is_file():
            raise ConfigError(f"config file {str(p)!r} does not exist{_shipped_hint(p)}")
        try:
            data = load_yaml(p.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise ConfigError(f"config file {str(p)!r} is not valid YAML: "
                              f"{yaml_error_line(exc)}") from None
        if data is None:  # a run of every default is not what an empty file meant
            raise ConfigError(f"config file {str(p)!r} is empty (or only comments); give the "
                              f"settings of the run{_shipped_hint(p)}")
        if not isinstance(data, dict):
            raise ConfigError(f"config file {str(p)!r} must hold a mapping")
    for text in overrides:
        apply_override(data, text)
    cfg = config_from_dict(data)
    check_settings_are_read(cfg)
    return cfg


SB3_ONLY = ("n_envs", "subproc", "ppo.n_steps", "ppo.batch_size", "league.mix")
"""Settings of ``algo: ppo`` that ``ppo-vec`` does not read (it has ``vec`` for them)."""


def check_settings_are_read(cfg: TrainConfig, changed: list[str] | None = None,
                            given_in: str = "the config or --set") -> None:
    """Refuses a setting that this run's trainer does not read (the other trainer's:
    ``vec.*`` for ``ppo``, those of :data:`SB3_ONLY` for ``ppo-vec``) among ``changed``
    (dotted keys; by default those that differ from the defaults)."""
    if changed is None:
        changed = changed_fields(TrainConfig().to_dict(), cfg.to_dict())
    if cfg.algo == "ppo-vec":
        unread = sorted({k for k in SB3_ONLY for c in changed if c == k or
                         c.startswith(k + ".")})
        instead = ("algo ppo-vec seats opponents by vec.mix and sizes its rollouts by "
                   "vec.num_games, vec.rollout_steps and vec.minibatches")
    else:
        unread = sorted({".".join(c.split(".")[:2]) for c in changed if c.startswith("vec.")})
        instead = "only algo ppo-vec reads {it} (set algo: ppo-vec to use {it})"
    if unread:
        it = "it" if len(unread) == 1 else "them"
        raise ConfigError(f"{', '.join(unread)}: not read by algo {cfg.algo}; "
                          f"{instead.format(it=it)}; remove {it} from {given_in}")


RESUMABLE = ("total_steps", "checkpoint_every", "device", "torch_threads", "subproc",
             "ppo.learning_rate", "ppo.lr_final", "league.snapshot_every", "eval.every",
             "eval.deals", "eval.jobs", "vec.collect_threads", "vec.engine_threads",
             "vec.bfloat16", "vec.debug", "rules")
"""The fields ``--set`` may change when a run is resumed. The others define the run (network,
game, algorithm settings, the league's mix): changing one makes another run, a new one.
``rules`` may name another source of the same rules (the run's own ``rules.json`` where the
rules file it named is gone); the resumed run refuses one that plays otherwise."""


def resume_config(data: dict[str, Any], overrides: list[str] = ()) -> TrainConfig:
    """A run's config (its ``config.yaml`` mapping) with resumable overrides applied."""
    # not validated: a rules file that is gone may be replaced by --set rules=
    before = _build(TrainConfig, data).to_dict()
    data = copy.deepcopy(data)
    for text in overrides:
        apply_override(data, text)
    try:
        cfg = config_from_dict(data)
    except ConfigError:
        # a known field that may not change is the first thing wrong, not what it breaks
        known = set(flat_fields(before))
        fixed = [k for k in changed_fields(before, data) if k in known and k not in RESUMABLE]
        if fixed:
            raise ConfigError(refused_on_resume(fixed)) from None
        raise
    changed = changed_fields(before, cfg.to_dict())
    fixed = [k for k in changed if k not in RESUMABLE]
    if fixed:
        raise ConfigError(refused_on_resume(fixed))
    check_settings_are_read(cfg, changed, given_in="--set")
    return cfg


def check_config_fits_checkpoint(cfg: TrainConfig, saved: Any, path: str | Path) -> None:
    """Refuses a resumed run whose ``config.yaml`` differs, in a field that defines the run,
    from the config its checkpoint ``path`` trained with (``saved``, from its metadata): an
    edit by hand, which ``--set`` would have refused. A checkpoint whose config this version
    cannot read (made by another version of the kit) is not compared."""
    try:
        before = _build(TrainConfig, saved).to_dict()
    except (ConfigError, TypeError, AttributeError):
        return
    fixed = [k for k in changed_fields(before, cfg.to_dict()) if k not in RESUMABLE]
    if fixed:
        raise ConfigError(f"--resume: the run's config.yaml differs from the config its "
                          f"checkpoint {path} trained with in {', '.join(fixed)}, which cannot "
                          f"change in a resumed run; put them back as they were, or start a "
                          f"new run")


def refused_on_resume(fields: list[str]) -> str:
    return (f"--resume: {', '.join(fields)} cannot change in a resumed run (it defines the "
            f"run; start a new one instead); --set may change {', '.join(RESUMABLE)}")


def flat_fields(d: dict[str, Any], prefix: str = "") -> list[str]:
    """The dotted keys of a config mapping's fields (``ppo.learning_rate``)."""
    return [k for key, v in d.items()
            for k in (flat_fields(v, f"{prefix}{key}.") if isinstance(v, dict)
                      else [prefix + key])]


def changed_fields(a: dict[str, Any], b: dict[str, Any], prefix: str = "") -> list[str]:
    """The dotted keys whose values differ between two config mappings."""
    out = []
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key), b.get(key)
        if isinstance(x, dict) and isinstance(y, dict):
            out += changed_fields(x, y, f"{prefix}{key}.")
        elif x != y:
            out.append(prefix + key)
    return out


def apply_override(data: dict[str, Any], text: str) -> None:
    """Sets one dotted ``key=value`` in a config mapping. A section or mapping the mapping
    does not hold yet starts as its default: ``league.mix.greedy=0.5`` changes one share of
    the default mix, as it does of a mix the config gives, and keeps the others."""
    if "=" not in text:
        raise ConfigError(f"--set {text!r}: expected key=value, e.g. total_steps=10000")
    key, raw = text.split("=", 1)
    if not key.strip():
        raise ConfigError(f"--set {text!r}: no key before '='; expected key=value, e.g. "
                          f"total_steps=10000")
    parts = mapping_key_joined(key.strip().split("."))
    if not all(part.strip() for part in parts):
        raise ConfigError(f"--set {text!r}: the key {key.strip()!r} has an empty part; "
                          f"expected dotted field names, e.g. ppo.learning_rate=0.0003")
    node: Any = data
    default: Any = TrainConfig().to_dict()
    for part in parts[:-1]:
        default = default.get(part) if isinstance(default, dict) else None
        if node.get(part) is None:  # absent, or an empty section (``ppo:`` alone)
            node[part] = copy.deepcopy(default) if isinstance(default, dict) else {}
        node = node[part]
        if not isinstance(node, dict):
            raise ConfigError(f"--set {text!r}: {part!r} is not a section")
    try:
        node[parts[-1]] = load_yaml(raw) if raw.strip() else None
    except yaml.YAMLError as exc:
        raise ConfigError(f"--set {text!r}: cannot parse the value: "
                          f"{yaml_error_line(exc)}") from None


def mapping_key_joined(parts: list[str]) -> list[str]:
    """The dotted parts of a ``--set`` key, with whatever follows a mapping field (a mix)
    joined again: its keys may hold dots themselves (``vec.mix.clone.npz=0.8`` sets the share
    of the policy file ``clone.npz``)."""
    cls: Any = TrainConfig
    for i, part in enumerate(parts[:-1]):
        typ = get_type_hints(cls).get(part) if is_dataclass(cls) else None
        if get_origin(typ) is dict:
            return [*parts[:i + 1], ".".join(parts[i + 1:])]
        cls = typ
    return parts


def check_mix(key: str, mix: dict[str, float]) -> None:
    """Shares of opponent kinds: finite, non-negative, with a positive sum."""
    shares = list(mix.values())
    if (not shares or not all(math.isfinite(w) and w >= 0 for w in shares)
            or not 0 < sum(shares) < math.inf):
        raise ConfigError(f"{key}: {mix} needs finite non-negative shares with a positive, "
                          f"finite sum")


def check_rules(cfg: TrainConfig, players: int | None) -> None:
    """The rules of a table of ``players`` (None: the size the rules name), with the key at
    fault named: ``rules`` (the preset or rules file) or ``rules_overrides``."""
    from arschloch_env.rules import RulesError, make_rules

    try:
        make_rules(cfg.rules, players)
    except RulesError as exc:
        raise ConfigError(f"rules: {exc}") from None
    try:
        make_rules(cfg.rules, players, **cfg.rules_overrides)
    except RulesError as exc:
        raise ConfigError(f"rules_overrides: {exc}") from None


def validate(cfg: TrainConfig) -> None:
    from arschloch_env.rules import TABLE_SIZES, make_rules

    if cfg.algo not in ALGOS:
        raise ConfigError(f"algo: {cfg.algo!r} is not known; allowed: {', '.join(ALGOS)}")
    if not cfg.players or any(n not in TABLE_SIZES for n in cfg.players):
        raise ConfigError(f"players: {cfg.players} must be a non-empty list of 3..6")
    for n in cfg.players:
        check_rules(cfg, n)
    if not 0 <= cfg.seed < 2**32:
        raise ConfigError(f"seed: {cfg.seed} is not allowed; it must be 0 .. 2**32 - 1")
    check_ranges(cfg)
    if cfg.ppo.activation not in ("tanh", "relu"):
        raise ConfigError(f"ppo.activation: {cfg.ppo.activation!r}; allowed: tanh, relu")
    for key in ("net_arch", "critic_arch"):
        sizes = getattr(cfg.ppo, key)
        if (sizes is not None or key == "net_arch") and (not sizes or any(h < 1 for h in sizes)):
            raise ConfigError(f"ppo.{key}: {sizes} must be positive layer sizes")
    check_mix("league.mix", cfg.league.mix)
    v = cfg.vec
    if v.rollout_steps < 2 * max(cfg.players):
        raise ConfigError(f"vec.rollout_steps: {v.rollout_steps} is too short for tables of "
                          f"{max(cfg.players)}; at least {2 * max(cfg.players)} (a seat's move is "
                          f"trained on once it acts again: in shorter rollouts most moves wait "
                          f"for the next; 64 is a good value)")
    if v.num_games < len(cfg.players):
        raise ConfigError(f"vec.num_games: {v.num_games} is fewer than one game per table "
                          f"size of players {cfg.players}")
    if 2 * v.minibatches > v.num_games * v.rollout_steps:
        # more would make minibatches of one sample, each its own step, unnormalised
        raise ConfigError(f"vec.minibatches: {v.minibatches} is more than half the decisions of "
                          f"a rollout (vec.num_games * vec.rollout_steps = "
                          f"{v.num_games * v.rollout_steps}), of which the learner's are its "
                          f"samples; at most {v.num_games * v.rollout_steps // 2}")
    check_mix("vec.mix", v.mix)
    if isinstance(v.bfloat16, str) and v.bfloat16 != "auto":
        raise ConfigError(f"vec.bfloat16: {v.bfloat16!r}; allowed: true, false, auto")
    if cfg.algo == "ppo-vec":
        decks = {tuple(make_rules(cfg.rules, n, **cfg.rules_overrides).rank_order)
                 for n in cfg.players}
        if len(decks) > 1:
            raise ConfigError(f"players: {cfg.players} play different decks; one policy "
                              f"needs one deck (one observation size)")
    if cfg.algo == "ppo":
        check_sb3_rollout(cfg)
    if cfg.init_from is not None and cfg.algo != "ppo-vec":
        raise ConfigError(f"init_from: only algo ppo-vec starts from a checkpoint, not "
                          f"{cfg.algo!r}")
    if not cfg.eval.opponents:  # every run evaluates at its end, and picks its best by one
        raise ConfigError("eval.opponents: empty; name at least one agent spec to evaluate "
                          "against, e.g. [greedy, expert] (eval.best_by is one of them)")
    check_agent_specs(cfg)  # before best_by: a misspelled opponent is named as such
    repeated = sorted({o for o in cfg.eval.opponents if cfg.eval.opponents.count(o) > 1})
    if repeated:  # results are kept by name: a second entry would only replace the first
        raise ConfigError(f"eval.opponents: {', '.join(repeated)} named more than once; "
                          f"name each opponent once")
    if cfg.eval.best_by not in cfg.eval.opponents:
        raise ConfigError(f"eval.best_by: {cfg.eval.best_by!r} is not one of eval.opponents "
                          f"{cfg.eval.opponents}")
    check_device(cfg)


def check_device(cfg: TrainConfig) -> None:
    """``device`` names a torch device this machine has, or ``auto``: CUDA where there is one.
    Either trainer learns there; ppo-vec's games, seat draws and sampling's random numbers
    stay on the CPU (:func:`train.ppo_vec.setup`)."""
    if cfg.device == "auto":
        return
    import torch
    allowed = "cpu, cuda, cuda:N, auto"
    try:
        device = torch.device(cfg.device)
    except RuntimeError:
        raise ConfigError(f"device: {cfg.device!r} is not a torch device; allowed: "
                          f"{allowed}") from None
    if device.type not in ("cpu", "cuda"):
        raise ConfigError(f"device: {cfg.device!r}; allowed: {allowed}")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"device: {cfg.device!r}, but torch finds no CUDA device here; use "
                          f"device: cpu (or auto, which takes CUDA where there is one)")
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        raise ConfigError(f"device: {cfg.device!r}, but torch finds "
                          f"{torch.cuda.device_count()} CUDA device(s) here (cuda:0 ..)")


RANGES: tuple[tuple[str, float, float | None, bool, str], ...] = (
    ("total_steps", 1, None, False, ""),
    ("n_envs", 1, None, False, ""),
    ("checkpoint_every", 1, None, False, ""),
    ("torch_threads", 1, None, False, ""),
    ("ppo.learning_rate", 0, None, True, ""),
    ("ppo.lr_final", 0, None, True, "or null: a constant learning_rate"),
    ("ppo.n_steps", 1, None, False, ""),
    ("ppo.batch_size", 2, None, False, "advantages are normalised per minibatch"),
    ("ppo.n_epochs", 1, None, False, ""),
    ("ppo.gamma", 0, 1, False, ""),
    ("ppo.gae_lambda", 0, 1, False, ""),
    ("ppo.clip_range", 0, None, True, ""),
    ("ppo.ent_coef", 0, None, False, ""),
    ("ppo.vf_coef", 0, None, True, ""),
    ("ppo.max_grad_norm", 0, None, True, ""),
    ("league.snapshot_every", 1, None, False, ""),
    ("league.max_snapshots", 0, None, False, "0: none; the snapshots share plays current"),
    ("eval.every", 0, None, False, "0: only at the end"),
    ("eval.deals", 2, None, False, "an interval needs two deals' results"),
    ("eval.jobs", 1, None, False, ""),
    ("vec.num_games", 1, None, False, ""),
    ("vec.rollout_steps", 1, None, False, ""),
    ("vec.minibatches", 1, None, False, ""),
    ("vec.engine_threads", 1, None, False, ""),
    ("vec.collect_threads", 1, None, False, ""),
)
"""The numeric fields' allowed ranges: (dotted field, lowest, highest or None, whether the
lowest itself is excluded, a note for the message). A field may be None only where its type
allows it (``ppo.lr_final``)."""


def check_ranges(cfg: TrainConfig) -> None:
    """Every numeric field of :data:`RANGES` within its range (NaN and infinity never are)."""
    for name, low, high, open_low, note in RANGES:
        value: Any = cfg
        for part in name.split("."):
            value = getattr(value, part)
        if value is None:
            continue
        ok = math.isfinite(value) and (value > low if open_low else value >= low) and (
            high is None or value <= high)
        if not ok:
            allowed = (f"{low} .. {high}" if high is not None else
                       f"greater than {low}" if open_low else f"at least {low}")
            raise ConfigError(f"{name}: {value} is not allowed; it must be {allowed}"
                              + (f" ({note})" if note else ""))


def check_sb3_rollout(cfg: TrainConfig) -> None:
    """``algo: ppo``: what the env count and the rollout must fit."""
    if cfg.n_envs < len(cfg.players):
        # Env i plays players[i % len(players)]: the others would never be trained, yet
        # the exported bundle would claim them all.
        raise ConfigError(f"n_envs: {cfg.n_envs} envs cannot play all {len(cfg.players)} table "
                          f"sizes of players {cfg.players} (env i plays players[i % "
                          f"{len(cfg.players)}]); give n_envs at least {len(cfg.players)} (a "
                          f"multiple of it trains them evenly) or fewer players")
    samples = cfg.ppo.n_steps * cfg.n_envs
    if cfg.ppo.batch_size > samples:
        # SB3 would take the whole rollout as one minibatch: not the batch the config names
        raise ConfigError(f"ppo.batch_size: {cfg.ppo.batch_size} is larger than a rollout of "
                          f"ppo.n_steps * n_envs = {samples} samples; choose at most "
                          f"{samples}, or a longer ppo.n_steps or more n_envs")
    if samples % cfg.ppo.batch_size == 1:
        # SB3 normalises the advantages per minibatch: one of a single sample is NaN, and
        # so would every weight be after its update.
        raise ConfigError(f"ppo.batch_size: {cfg.ppo.batch_size} leaves a last minibatch of 1 "
                          f"sample of each rollout of ppo.n_steps * n_envs = {samples} samples "
                          f"(its normalised advantage is NaN); choose a batch_size that "
                          f"divides {samples}, or another ppo.n_steps")


def check_agent_specs(cfg: TrainConfig) -> None:
    """Every agent spec the run will seat is made once now: a typo found at the first
    evaluation, or in an environment worker, would cost the training done by then."""
    from agents.base import AgentSpecError, make_agent
    from arschloch_env.cli import support_detail
    from arschloch_env.rules import make_rules
    from train.ppo_vec_seats import POLICY_KINDS, is_policy_file

    if cfg.algo == "ppo-vec":
        mix_field, mix = "vec.mix", {k: w for k, w in cfg.vec.mix.items()
                                     if k not in POLICY_KINDS and not is_policy_file(k)}
        kinds = f"{', '.join(POLICY_KINDS)}, a policy file (.npz)"
    else:
        mix_field, mix = "league.mix", {k: w for k, w in cfg.league.mix.items()
                                        if k not in ("current", "snapshots")}
        kinds = "current, snapshots"
    fields = [(mix_field, k) for k in mix]  # a share of 0 too: it may be a typo of a kind
    fields += [("eval.opponents", k) for k in cfg.eval.opponents]
    tables = [make_rules(cfg.rules, n, **cfg.rules_overrides) for n in cfg.players]
    for name, spec in fields:
        try:
            agent = make_agent(spec)
        except AgentSpecError as exc:
            also = f" (a share of the mix may also name {kinds})" if name == mix_field else ""
            raise ConfigError(f"{name}: {exc}{also}") from None
        supports = getattr(agent, "supports", None)
        for rules in tables if callable(supports) else ():
            if not supports(rules.to_dict()):
                raise ConfigError(f"{name}: {spec} does not play these rules ({rules.preset}, "
                                  f"{rules.num_players} players)" + support_detail(agent, rules))


ALGOS = ("ppo", "ppo-vec")
__all__ = ["ALGOS", "ConfigError", "EvalConfig", "LeagueConfig", "PPOConfig", "TrainConfig",
           "VecConfig", "apply_override", "config_from_dict", "load_config"]
