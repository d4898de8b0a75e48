"""The standard evaluation of a bot bundle: the figures of its EVALUATION.md.

    python scripts/evaluate_bot.py bots/ppo_vec_culo_multi --out runs/eval/ppo_vec_culo_multi

Every figure comes from a duplicate tournament (one round per deal, every deal replayed with
the candidate in each seat against n-1 copies of the field bot, seed 7 unless told):

- at 4 players: the bot against expert (``--deals``), greedy (``--greedy-deals``) and mc
  (``--mc-deals``), and expert against greedy (``--ladder-deals``, by default the same deals
  as against expert), the step of the ladder the bot is held to;
- at every other table size of ``--players`` the bundle was trained for: the bot against each
  of ``--other-fields`` (``--other-deals``).

Each tournament's reports go to ``--out/<n>p_<candidate>_vs_<field>/``; the tables and the
check of the strength goals go to ``--out/evaluation.md`` and to stdout. A tournament whose
``results.json`` is already complete with the same deals and seed is read, not replayed, so
an interrupted evaluation picks up where it stopped.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GOAL_OVER_PAR, GOAL_CI_LOW = 0.25, 0.20


def tournament(rules: str, players: int, candidate: str, field: str, deals: int, seed: int,
               jobs: int | None, out: Path) -> dict:
    """The ``results.json`` of one tournament, played unless ``out`` already holds it."""
    from train.report import write_outputs
    from train.tournament import run_tournament

    path = out / "results.json"
    if path.is_file():
        done = json.loads(path.read_text())
        if done["complete"] and done["deals_done"] == deals and done["seed"] == seed:
            return done
    print(f"  {players}p {candidate} vs {players - 1}x {field}: {deals} deals ...", flush=True)
    res = run_tournament(rules, [candidate, field], deals=deals, seed=seed, jobs=jobs,
                         players=players, progress=None)
    if not res.complete:
        raise SystemExit("interrupted; run again to continue")
    write_outputs(res, out)
    return res.to_dict()


def row(res: dict) -> dict:
    """Bot and field rank points per round, the bot's margin over par and the paired gap."""
    candidate_label, field = (b["label"] for b in res["bots"])
    n = res["rules"]["num_players"]
    par = (n - 1) / 2
    bot = res["metrics"][candidate_label]["rank_points"]
    fld = res["metrics"][field]["rank_points"]
    (pair,) = [p for p in res["paired"] if p["a"] == candidate_label and p["b"] == field]
    gap = pair["metrics"]["rank_points"]
    return {"players": n, "field": field, "deals": res["deals_done"], "par": par,
            "bot": bot, "field_rp": fld["mean"], "paired": gap,
            "president": res["metrics"][candidate_label]["president"]["mean"],
            "arschloch": res["metrics"][candidate_label]["arschloch"]["mean"]}


def fmt(e: dict, shift: float = 0.0, sign: bool = False) -> str:
    f = "{:+.3f}" if sign else "{:.3f}"
    return (f"{f.format(e['mean'] - shift)} [{f.format(e['low'] - shift)}, "
            f"{f.format(e['high'] - shift)}]")


def table(rows: list[dict]) -> str:
    lines = ["| players | field | deals | bot rank pts/round | over par | field rank pts/round "
             "| paired (bot - field) | President | Arschloch |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['players']} | {r['field']} | {r['deals']:,} | {fmt(r['bot'])} | "
                     f"{fmt(r['bot'], r['par'], sign=True)} | {r['field_rp']:.3f} | "
                     f"{fmt(r['paired'], sign=True)} | {r['president']:.1%} | "
                     f"{r['arschloch']:.1%} |")
    return "\n".join(lines)


def ladder_line(ladder: dict, deals: int) -> str:
    """Expert's paired margin over greedy, and which of the bot's deals it was measured on
    (one seed's deals are a prefix of each other)."""
    n = ladder["deals"]
    where = (f"the same {n:,} 4-player deals" if n == deals
             else f"the first {n:,} of the same 4-player deals" if n < deals
             else f"{n:,} 4-player deals, the bot's {deals:,} first")
    return (f"Ladder step, {where}: expert against 3x greedy, paired "
            f"{fmt(ladder['paired'], sign=True)}.")


def goals(rows: dict, ladder: dict | None) -> str:
    """The strength goals at 4 players, each with its figure and whether it is met."""
    ex, mc = rows.get("expert"), rows.get("mc")
    checks = []
    # Four decimals: at three, a figure just under its threshold would print as equal to it.
    if ex is not None:
        over = ex["bot"]["mean"] - ex["par"]
        low = ex["bot"]["low"] - ex["par"]
        checks.append((f"over par against 3x expert >= +{GOAL_OVER_PAR:.2f}", f"{over:+.4f}",
                       over >= GOAL_OVER_PAR))
        checks.append((f"its 95% CI lower bound >= +{GOAL_CI_LOW:.2f}", f"{low:+.4f}",
                       low >= GOAL_CI_LOW))
        if ladder is not None:
            step = ladder["paired"]["mean"]
            gap = ex["paired"]["mean"]
            checks.append((f"paired margin over expert >= expert's over greedy ({step:+.4f})",
                           f"{gap:+.4f}", gap >= step))
    if mc is not None:
        checks.append(("paired margin over mc > 0, CI excluding 0",
                       fmt(mc["paired"], sign=True), mc["paired"]["low"] > 0))
    lines = ["| goal (4 players) | figure | met |", "|---|---|---|"]
    lines += [f"| {g} | {v} | {'yes' if ok else 'no'} |" for g, v, ok in checks]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("bot", help="bundle directory (bots/NAME)")
    p.add_argument("--out", required=True, help="directory for the tournament reports")
    p.add_argument("--deals", type=int, default=10_000,
                   help="4-player deals against expert (default 10000)")
    p.add_argument("--greedy-deals", type=int, default=2_000,
                   help="4-player deals against greedy (default 2000)")
    p.add_argument("--ladder-deals", type=int, default=None,
                   help="4-player deals of expert against greedy (default: --deals, so that "
                        "the step and the bot's margin over expert come from the same deals)")
    p.add_argument("--mc-deals", type=int, default=150, help="deals against mc (default 150)")
    p.add_argument("--other-deals", type=int, default=2_000,
                   help="deals at the other table sizes (default 2000)")
    p.add_argument("--players", type=int, nargs="*", default=[3, 5],
                   help="other table sizes to check (default 3 5; skipped unless trained for)")
    p.add_argument("--other-fields", nargs="*", default=["expert"],
                   help="field bots at the other table sizes (default expert)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: all)")
    args = p.parse_args(argv)

    manifest = json.loads((Path(args.bot) / "manifest.json").read_text())
    rules = manifest["rules"]["preset"]
    out = Path(args.out)
    label = args.bot

    def play(n, cand, field, deals):
        return tournament(rules, n, cand, field, deals, args.seed, args.jobs,
                          out / f"{n}p_{Path(cand).name}_vs_{field}")

    rows4 = {}
    for field, deals in (("expert", args.deals), ("greedy", args.greedy_deals)):
        if deals > 0:
            rows4[field] = row(play(4, label, field, deals))
    ladder_deals = args.deals if args.ladder_deals is None else args.ladder_deals
    ladder = row(play(4, "expert", "greedy", ladder_deals)) if ladder_deals > 0 else None
    others = []
    for n in args.players:
        if n in manifest["players"] and n != 4 and args.other_deals > 0:
            for field in args.other_fields:
                others.append(row(play(n, label, field, args.other_deals)))
    if args.mc_deals > 0:  # the slowest field, last
        rows4["mc"] = row(play(4, label, "mc", args.mc_deals))

    command = " ".join(["python scripts/evaluate_bot.py", *(sys.argv[1:] if argv is None
                                                             else argv)])
    text = "\n\n".join([
        f"Duplicate tournaments of `{label}` ({rules}), one round per deal, seed {args.seed}; "
        "rank points per round (n - place; par (n-1)/2) with 95% CIs over deals.",
        table(list(rows4.values()) + others),
        *([ladder_line(ladder, args.deals)] if ladder else []),
        goals(rows4, ladder),
        f"Command: `{command}`",
    ]) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "evaluation.md.part"
    tmp.write_text(text)
    tmp.replace(out / "evaluation.md")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
