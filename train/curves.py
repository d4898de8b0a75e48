"""Learning curves of a run, read from its TensorBoard logs and drawn as one PNG."""

from __future__ import annotations

import contextlib
import io
import logging
from pathlib import Path

from train.files import write_atomic

PANELS = (
    ("rollout/ep_rew_mean", "match return of the learner (rollout/ep_rew_mean)"),
    ("eval/vs_", "rank points per round vs fixed fields (eval/vs_*), 95% CI"),
)


def read_scalars(run_dir: str | Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar of the run's TensorBoard logs, as (step, value) lists, steps ascending, one
    value per step (the one written last)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out: dict[str, dict[int, tuple[float, float]]] = {}
    if not Path(run_dir).is_dir():
        raise FileNotFoundError(f"{run_dir}: " + ("a file, not a run directory"
                                                  if Path(run_dir).exists()
                                                  else "no such run directory"))
    logs = sorted(p for p in (Path(run_dir) / "tb").glob("*") if p.is_dir())
    if not logs:
        raise FileNotFoundError(f"{run_dir}: no TensorBoard logs under tb/")
    for log in logs:
        acc = EventAccumulator(str(log), size_guidance={"scalars": 0})
        with _quiet_purges():
            acc.Reload()
        for tag in acc.Tags()["scalars"]:
            points = out.setdefault(tag, {})
            for e in acc.Scalars(tag):
                # one point per step: where several logs hold a step (a run resumed into a new
                # log directory), the one written last stands, as it does within one log
                if e.step not in points or e.wall_time >= points[e.step][0]:
                    points[e.step] = (e.wall_time, e.value)
    return {tag: [(step, value) for step, (_, value) in sorted(v.items())]
            for tag, v in out.items()}


@contextlib.contextmanager
def _quiet_purges():
    """Drops TensorBoard's warning that it purged "out of order" events: in a resumed run those
    are the points an interrupted attempt logged past the checkpoint it resumed from, which
    the run played again, so dropping them is right, and the warning (of a "TensorFlow
    restart") only alarms. Its other warnings still show."""
    def keep(record: logging.LogRecord) -> bool:
        return "out of order event.step" not in record.getMessage()

    logger = logging.getLogger("tensorboard")
    logger.addFilter(keep)
    try:
        yield
    finally:
        logger.removeFilter(keep)


NO_MATCH_YET = "no match of the learner had finished yet"


def plot_learning_curves(run_dir: str | Path, out: str | Path, title: str | None = None) -> Path:
    """Two panels: the learner's match return, and the evaluation against each field with its
    confidence band. Written atomically."""
    # a bare Figure, not pyplot: the caller's backend and open figures (a notebook's) stay
    from matplotlib.figure import Figure

    scalars = read_scalars(run_dir)
    if not any(tag.startswith(PANELS[0][0]) or tag.startswith(PANELS[1][0]) for tag in scalars):
        raise FileNotFoundError(f"{run_dir}: its TensorBoard logs (tb/) hold none of the scalars "
                                f"drawn ({PANELS[0][0]}, {PANELS[1][0]}*); a run writes them "
                                f"from its first rollout on")
    fig = Figure(figsize=(8, 7))
    top, bottom = fig.subplots(2, 1, sharex=True)
    if "rollout/ep_rew_mean" in scalars:
        steps, values = zip(*scalars["rollout/ep_rew_mean"])
        # a single point (a run of one rollout) is no line: a marker shows it
        top.plot(steps, values, lw=1, marker="o" if len(steps) == 1 else "")
    else:  # an empty axis would read as a plot gone wrong
        top.text(0.5, 0.5, NO_MATCH_YET, ha="center", va="center", transform=top.transAxes)
    top.set_title(PANELS[0][1], fontsize=10)
    n = eval_table_size(run_dir)
    for name in eval_fields(scalars):
        base = f"eval/vs_{name}/"
        if base + "rank_points" not in scalars:
            continue
        steps, mean = zip(*scalars[base + "rank_points"])
        line, = bottom.plot(steps, mean, marker="o", label=f"vs {n - 1}x {name}")
        low, high = (dict(scalars.get(base + key, ())) for key in ("ci_low", "ci_high"))
        band = [s for s in steps if s in low and s in high]  # the steps with both bounds
        if band:
            bottom.fill_between(band, [low[s] for s in band], [high[s] for s in band],
                                alpha=0.2, color=line.get_color())
    bottom.axhline((n - 1) / 2, color="grey", lw=0.8, ls="--", label=f"par ({n} players)")
    bottom.set_title(PANELS[1][1], fontsize=10)
    bottom.set_xlabel("learner steps")
    bottom.legend()
    fig.suptitle(title or Path(run_dir).resolve().name)  # "." has no name of its own
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110)
    write_atomic(out, png.getvalue())
    return out


def eval_table_size(run_dir: str | Path) -> int:
    """The table size the run evaluated at (from its config's players, as the trainers
    choose it)."""
    import yaml

    from train.sb3_trainer import eval_players
    try:
        players = yaml.safe_load((Path(run_dir) / "config.yaml").read_text())["players"]
        return eval_players(list(players))
    except (OSError, KeyError, TypeError, IndexError, ValueError, yaml.YAMLError):
        return 4  # logs without their run directory: the usual table


def eval_fields(scalars) -> list[str]:
    """The evaluation fields of ``eval/vs_<field>/<metric>`` tags; a field is an agent spec,
    and a bundle's path has slashes of its own."""
    return sorted({t[len("eval/vs_"):].rpartition("/")[0] for t in scalars
                   if t.startswith("eval/vs_")})
