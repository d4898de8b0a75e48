"""Reports of a tournament: the printed table, Markdown, CSV, JSON and PNG plots.

Every file is written atomically (a temporary file beside the target, then renamed), so an
interrupted run never leaves a half-written report under the final name.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

from arschloch_env.rules import Rules
from train.files import write_atomic
from train.stats import Estimate
from train.tournament import TournamentResult

METRIC_TITLES = {
    "score": "score",
    "rank_points": "rank pts/round",
    "president": "President",
    "arschloch": "Arschloch",
    "place": "mean place",
    "win": "match wins",
}
FILES = ("results.json", "results.md", "results.csv", "score.png", "places.png")


def _est(e: Estimate | None, digits: int = 3, pct: bool = False) -> str:
    if e is None:
        return "-"
    if pct:
        return e.format(lambda v: f"{v:.1%}")
    return e.text(digits)


def level_text(level: float) -> str:
    """``95%``, ``97.5%``, ``99.5%``: the confidence level as given (``.0%`` called 0.995
    ``100%``)."""
    return f"{round(level * 100, 6):g}%"


def block_unit(res: TournamentResult) -> str:
    """What one block is: a deal (duplicate mode) or a whole match from one seed (session)."""
    return "deal" if res.mode == "duplicate" else "session"


def rules_label(res: TournamentResult) -> str:
    """The rules as given; in duplicate mode without their match length, which it does not
    play (every deal is one round)."""
    return Rules.from_dict(res.rules_given).label(match_end=res.mode != "duplicate")


def headline(res: TournamentResult) -> str:
    r = res.rules
    what = ("duplicate, 1 round per deal" if res.mode == "duplicate"
            else "session, whole matches per seed")
    unit = block_unit(res)
    status = "" if res.complete else (f" -- INTERRUPTED: {res.deals_done} of "
                                      f"{res.deals_requested} {unit}s finished")
    return (f"{rules_label(res)}, {r['num_players']} players, {what}: "
            f"{res.deals_done} {unit}(s) x {len(res.seat_orders)} seating(s) = {res.games} "
            f"game(s), {res.rounds} round(s); seed {res.seed}; {level_text(res.level)} CI over "
            f"{unit}s{status}")


def cell(label: str) -> str:
    """A bot label as a Markdown table cell: a ``|`` in it would start another column."""
    return label.replace("|", "\\|")


def markdown_table(res: TournamentResult) -> str:
    """One row per bot: every metric with its interval, and the OpenSkill rating."""
    cols = res.metric_names()
    head = ["bot", "seats"] + [METRIC_TITLES[m] for m in cols] + ["OpenSkill rating"]
    rows = [head, ["---"] * len(head)]
    order = sorted(res.labels, key=lambda b: -(res.metrics[b]["score"].mean
                                               if b in res.metrics else 0.0))
    seats = {b["label"]: b["seats"] for b in res.bots}
    for b in order:
        ms = res.metrics.get(b, {})
        cells = [cell(b), str(seats[b])]
        for m in cols:
            cells.append(_est(ms.get(m), pct=m in ("president", "arschloch", "win"),
                              digits=2 if m == "place" else 3))
        o = res.openskill.get(b)
        cells.append(f"{o['mu']:.1f} (sigma {o['sigma']:.1f})" if o else "-")
        rows.append(cells)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = []
    for i, r in enumerate(rows):
        if i == 1:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
        else:
            lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |")
    return "\n".join(lines)


def significance_legend(res: TournamentResult) -> str:
    """What the ``*`` of the paired lines means for this tournament."""
    alpha = level_text(round(1.0 - res.level, 10))
    if len(res.paired) <= 1:
        return f"* = the difference's interval excludes 0, significant at {alpha}"
    return (f"* = significant at {alpha} with Holm's correction for the {len(res.paired)} "
            f"pairs; an interval that excludes 0 alone is not")


def paired_lines(res: TournamentResult) -> list[str]:
    out = []
    for p in res.paired:
        e = p["metrics"]["score"]
        rp = p["metrics"]["rank_points"]
        star = " *" if p["significant"] else ""
        if e.half_width is None:
            ci = f"(one {block_unit(res)}: no interval)"
        elif e.sd == 0.0:  # its t-interval has width 0, which no few deals make certain
            ci = f"(the same in all {e.n} {block_unit(res)}s: no interval)"
        else:
            ci = f"[{e.low:+.3f}, {e.high:+.3f}]"
        rp_ci = ("" if rp.half_width is None or rp.sd == 0.0
                 else f" [{rp.low:+.3f}, {rp.high:+.3f}]")
        out.append(f"{p['a']} - {p['b']}: score {e.mean:+.3f} {ci}, rank pts/round "
                   f"{rp.mean:+.3f}{rp_ci}{star}")
    return out


def text_report(res: TournamentResult) -> str:
    """The printed summary: headline, table, paired differences."""
    parts = [headline(res)]
    if not res.metrics:
        parts.append(f"no {block_unit(res)} finished: nothing to report")
        return "\n".join(parts)
    parts += ["", markdown_table(res), "",
              f"paired differences on identical {block_unit(res)}s ({level_text(res.level)} CI; "
              f"{significance_legend(res)}):"]
    parts += ["  " + line for line in paired_lines(res)]
    note = few_blocks_note(res)
    if note:
        parts.append(note)
    return "\n".join(parts)


FEW_BLOCKS = 30
"""Below this many blocks the Student-t intervals cover a little less than they say (a
block's mean is skewed: about 93.5% for 95% at 10 to 20 deals)."""


def few_blocks_note(res: TournamentResult) -> str | None:
    if res.deals_done >= FEW_BLOCKS:
        return None
    unit = block_unit(res)
    return (f"note: {res.deals_done} {unit}(s); with fewer than {FEW_BLOCKS} the intervals "
            f"cover somewhat less than {level_text(res.level)}")


def markdown_report(res: TournamentResult) -> str:
    r = res.rules
    unit = block_unit(res)
    lines = [f"# Tournament: {rules_label(res)}, {r['num_players']} "
             f"players, {res.mode} mode", "",
             headline(res), "", markdown_table(res), "",
             "Score: rank points per round over n - 1 (1 = President, 0 = Arschloch). "
             f"Intervals are Student-t over {unit}s (a {unit} with all its seatings is one "
             f"block). OpenSkill is an online rating of the games in {unit} order, to rank "
             f"bots by: it depends on that order and its sigma does not shrink with more "
             f"{unit}s; the intervals are the precision.", ""]
    note = few_blocks_note(res)
    if note:
        lines += [f"{note}.", ""]
    lines += [f"## Paired differences on identical {unit}s ({level_text(res.level)} CI; "
              f"{significance_legend(res)})", ""]
    lines += [f"- {line}" for line in paired_lines(res)] or ["- none"]
    lines += ["", "## Places", "", "| bot | " + " | ".join(
        str(p) for p in range(1, r["num_players"] + 1)) + " |",
        "|---|" + "---|" * r["num_players"]]
    for b in res.labels:
        share = res.places[b]["share"]
        lines.append(f"| {cell(b)} | " + " | ".join(f"{s:.1%}" for s in share) + " |")
    lines += ["", "## Score by seat", "", "| bot | " + " | ".join(
        f"seat {s}" for s in range(r["num_players"])) + " |",
        "|---|" + "---|" * r["num_players"]]
    for b in res.labels:
        lines.append(f"| {cell(b)} | " + " | ".join("-" if v is None else f"{v:.3f}"
                                              for v in res.by_seat[b]) + " |")
    lines += ["", "## Bots", ""] + [f"- `{b['label']}`: `{b['spec']}`" for b in res.bots]
    lines += ["", f"Rules: `{json.dumps(r)}`", ""]
    return "\n".join(lines)


def csv_text(res: TournamentResult) -> str:
    """Long format: one row per (bot or pair, metric)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["kind", "name", "metric", "mean", "low", "high", "half_width", "sd", "blocks"])

    def row(kind: str, name: str, metric: str, e: Estimate) -> None:
        w.writerow([kind, name, metric] + ["" if v is None else repr(v) if isinstance(v, float)
                                           else v for v in (e.mean, e.low, e.high,
                                                            e.half_width, e.sd, e.n)])

    for b in res.labels:
        for m, e in res.metrics.get(b, {}).items():
            row("bot", b, m, e)
        o = res.openskill.get(b)
        if o:
            for key in ("mu", "sigma", "ordinal"):
                w.writerow(["bot", b, f"openskill_{key}", repr(o[key]), "", "", "", "", ""])
    for p in res.paired:
        for m, e in p["metrics"].items():
            row("paired", f"{p['a']} - {p['b']}", m, e)
    return buf.getvalue()


# -- files ------------------------------------------------------------------------------------

def _plot_bytes(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return buf.getvalue()


def plots(res: TournamentResult) -> dict[str, bytes]:
    """``score.png`` (score with CI bars per bot) and ``places.png`` (share of each place)."""
    # a bare Figure, not pyplot: the caller's backend and open figures (a notebook's) stay
    from matplotlib.figure import Figure

    out: dict[str, bytes] = {}
    labels = res.labels
    if not res.metrics:
        return out
    fig = Figure(figsize=(1.6 + 1.2 * len(labels), 3.6))
    ax = fig.subplots()
    scores = [res.metrics[b]["score"] for b in labels]
    means = [e.mean for e in scores]
    # below and above the mean: an interval cut at 0 or 1 is not symmetric
    errs = [[0.0 if e.low is None else e.mean - e.low for e in scores],
            [0.0 if e.high is None else e.high - e.mean for e in scores]]
    ax.bar(range(len(labels)), means, yerr=errs, capsize=6, color="#4c72b0")
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.set_xticks(range(len(labels)), labels, rotation=15)
    ax.set_ylim(0, 1)
    ax.set_ylabel("score (rank points / (n-1))")
    ax.set_title(f"{res.rules['preset']}, {res.num_players} players: score, "
                 f"{level_text(res.level)} CI over {res.deals_done} {block_unit(res)}s",
                 fontsize=9)
    out["score.png"] = _plot_bytes(fig)

    n = res.num_players
    fig = Figure(figsize=(2.0 + 0.9 * n, 3.6))
    ax = fig.subplots()
    width = 0.8 / len(labels)
    for i, b in enumerate(labels):
        share = res.places[b]["share"]
        ax.bar([p + (i - (len(labels) - 1) / 2) * width for p in range(1, n + 1)], share,
               width=width, label=b)
    ax.set_xticks(range(1, n + 1))
    ax.set_xlabel("place")
    ax.set_ylabel("share of games")  # each game weighs one, whatever its rounds
    ax.set_title("distribution of places", fontsize=9)
    ax.legend(fontsize=8)
    out["places.png"] = _plot_bytes(fig)
    return out


def write_outputs(res: TournamentResult, out_dir: str | os.PathLike,
                  with_plots: bool = True) -> list[Path]:
    """Writes results.json, results.md and results.csv, then the plots; returns the paths.
    Report files of an earlier run are replaced or removed: an earlier run's plots never stay
    beside these results.

    The results go first, and together (a Ctrl-C while they are written takes effect after
    them): a Ctrl-C while the plots are drawn (a second or so) leaves the results and no plot,
    and raises KeyboardInterrupt."""
    from arschloch_env.cli import interrupt_deferred

    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"--out {str(out)!r} is a file; give a directory")
    out.mkdir(parents=True, exist_ok=True)
    results = {
        "results.json": (json.dumps(res.to_dict(), indent=1) + "\n").encode(),
        "results.md": markdown_report(res).encode(),
        "results.csv": csv_text(res).encode(),
    }
    with interrupt_deferred():
        _remove_stale(out, [name for name in FILES if name not in results])
        for name, data in results.items():
            write_atomic(out / name, data)
    written = [out / name for name in results]
    if with_plots:
        for name, data in plots(res).items():
            write_atomic(out / name, data)
            written.append(out / name)
    return written


def _remove_stale(out: Path, names: list[str]) -> None:
    """Removes report files an earlier run left in ``out`` that are not results (its plots):
    beside the new results they would show other numbers."""
    for name in names:
        if (out / name).is_file():
            (out / name).unlink()


__all__ = ["FILES", "block_unit", "csv_text", "headline", "level_text", "markdown_report",
           "markdown_table", "plots", "text_report", "write_outputs"]
