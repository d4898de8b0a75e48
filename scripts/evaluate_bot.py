"""The standard evaluation of a bot bundle: the figures of its EVALUATION.md.

    python scripts/evaluate_bot.py bots/ppo_vec_culo_multi --out runs/eval/ppo_vec_culo_multi

Every figure comes from a duplicate tournament (one round per deal, every deal replayed with
the candidate in each seat against n-1 copies of the field bot, seed 7 unless told):

- at 4 players: the bot against expert (``--deals``), greedy (``--greedy-deals``) and mc
  (``--mc-deals``), and expert against greedy (``--ladder-deals``, by default the same deals
  as against expert), the step of the ladder the bot is held to;
- at every other table size of ``--players`` the bundle was trained for: the bot against each
  of ``--other-fields`` (``--other-deals``), and, where expert is one of them, expert against
  greedy on the same deals, so that the goals against expert are checked there too.

The rules are the bundle's own (its preset with any fields its training overrode). A bot not
trained for 4 players is measured at its first table size instead, and the goals, which are
for 4 players and checked again at the other sizes, are then not checked.

Each tournament's reports go to ``--out/<n>p_<candidate>_vs_<field>/``; the tables and the
check of the strength goals go to ``--out/evaluation.md`` and to stdout. A tournament whose
``results.json`` is already complete for the same bots (a bundle by its policy's checksum, a
class by its module's source), rules, deals, seed and code of the engine, the bots and the
tournament is read, not replayed, so an interrupted evaluation picks up where it stopped.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GOAL_OVER_PAR, GOAL_CI_LOW = 0.25, 0.20


def tournament(rules: dict, players: int, candidate: str, field: str, deals: int, seed: int,
               jobs: int | None, out: Path) -> dict:
    """The ``results.json`` of one tournament, played unless ``out`` already holds it for
    the same policies, rules, deals, seed and code (``key.json``)."""
    from train.files import write_atomic
    from train.report import write_outputs
    from train.tournament import run_tournament

    key = {"candidate": fingerprint(candidate), "field": fingerprint(field), "rules": rules,
           "players": players, "deals": deals, "seed": seed, "code": code_checksum()}
    path, key_path = out / "results.json", out / "key.json"
    done = _read_json(path) if _read_json(key_path) == key else None
    if isinstance(done, dict) and done.get("complete"):
        return done
    print(f"  {players}p {candidate} vs {players - 1}x {field}: {deals} deals ...", flush=True)
    res = run_tournament(rules, [candidate, field], deals=deals, seed=seed, jobs=jobs,
                         players=players, progress=None)
    key_path.unlink(missing_ok=True)  # results and key are written as a pair, key last
    if res.deals_done:
        write_outputs(res, out)
    if not res.complete:  # kept to be read, played again whole by the next run
        raise KeyboardInterrupt
    write_atomic(key_path, json.dumps(key, indent=1))
    return res.to_dict()


def _read_json(path: Path):
    """The JSON in ``path``, or None where it is missing or damaged (the tournament it
    belongs to is then played again)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def fingerprint(spec: str) -> str:
    """A bundle by its policy's checksum (a re-export to the same path is another bot), a
    ``package.module:ClassName`` by its source (an edited class is another bot),
    a built-in bot by its name (its code is in :func:`code_checksum`)."""
    manifest = Path(spec) / "manifest.json"
    if manifest.is_file():
        return json.loads(manifest.read_text())["policy"]["sha256"]
    if ":" in spec and not Path(spec).exists():
        from agents.base import make_agent

        cls = type(make_agent(spec))
        digest = hashlib.sha256()
        # the spec's module and the class's own, where it is imported from another
        for source in sorted({inspect.getfile(sys.modules[spec.partition(":")[0]]),
                              inspect.getfile(cls)}):
            digest.update(Path(source).read_bytes())
        return f"{spec} {digest.hexdigest()}"
    return spec


def code_checksum(root: Path = ROOT) -> str:
    """The source of the engine, the bots and the tournament's figures: a change to how
    expert plays, or to how an interval is computed, must not let its old results stand."""
    digest = hashlib.sha256()
    sources = [*(root / "agents").glob("*.py"), *(root / "arschloch_env").glob("*.py"),
               *(root / "train" / name for name in ("tournament.py", "stats.py", "report.py"))]
    for path in sorted(sources):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


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
    """``mean [low, high]``; a figure the same in every deal has no interval (a t-interval of
    width 0, which no few deals make certain), as the tournament's own reports say."""
    f = "{:+.3f}" if sign else "{:.3f}"
    if e["sd"] == 0.0:
        return f"{f.format(e['mean'] - shift)} (the same in all {e['n']} deals: no interval)"
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
    n, p = ladder["deals"], ladder["players"]
    where = (f"the same {n:,} {p}-player deals" if n == deals
             else f"the first {n:,} of the same {p}-player deals" if n < deals
             else f"{n:,} {p}-player deals, the bot's {deals:,} first" if deals
             else f"{n:,} {p}-player deals (the bot did not play expert: --deals 0)")
    return (f"Ladder step, {where}: expert against {p - 1}x greedy, paired "
            f"{fmt(ladder['paired'], sign=True)}.")


def goals(n: int, rows: dict, ladder: dict | None) -> str:
    """The strength goals at ``n`` players (``rows``: the bot's row against each field
    there), each with its figure and whether it is met."""
    ex, mc = rows.get("expert"), rows.get("mc")
    field = f"{n - 1}x"
    checks = []
    # Four decimals: at three, a figure just under its threshold would print as equal to it.
    if ex is not None:
        over = ex["bot"]["mean"] - ex["par"]
        low = ex["bot"]["low"] - ex["par"]
        checks.append((f"over par against {field} expert >= +{GOAL_OVER_PAR:.2f}", f"{over:+.4f}",
                       over >= GOAL_OVER_PAR))
        checks.append((f"its 95% CI lower bound >= +{GOAL_CI_LOW:.2f}",
                       f"{low:+.4f}" if ex["bot"]["sd"] else "no interval (all deals alike)",
                       bool(ex["bot"]["sd"]) and low >= GOAL_CI_LOW))
        if ladder is not None:
            step = ladder["paired"]["mean"]
            gap = ex["paired"]["mean"]
            checks.append((f"paired margin over expert >= expert's over greedy ({step:+.4f})",
                           f"{gap:+.4f}", gap >= step))
    if mc is not None:
        checks.append(("paired margin over mc > 0, CI excluding 0",
                       fmt(mc["paired"], sign=True),
                       bool(mc["paired"]["sd"]) and mc["paired"]["low"] > 0))
    lines = [f"| goal ({n} players) | figure | met |", "|---|---|---|"]
    lines += [f"| {g} | {v} | {'yes' if ok else 'no'} |" for g, v, ok in checks]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("bot", help="bundle directory (bots/NAME)")
    p.add_argument("--out", required=True, help="directory for the tournament reports")
    p.add_argument("--deals", type=int, default=10_000,
                   help="4-player deals against expert (default 10000; 0 skips them)")
    p.add_argument("--greedy-deals", type=int, default=2_000,
                   help="4-player deals against greedy (default 2000; 0 skips them)")
    p.add_argument("--ladder-deals", type=int, default=None,
                   help="4-player deals of expert against greedy (default: --deals, so that "
                        "the step and the bot's margin over expert come from the same deals; "
                        "0 skips them)")
    p.add_argument("--mc-deals", type=int, default=150,
                   help="deals against mc (default 150; 0 skips them)")
    p.add_argument("--other-deals", type=int, default=2_000,
                   help="deals at the other table sizes (default 2000; 0 skips them)")
    p.add_argument("--players", type=int, nargs="*", default=[3, 5],
                   help="other table sizes to check (default 3 5; skipped unless trained for)")
    p.add_argument("--other-fields", nargs="*", default=["expert"],
                   help="field bots at the other table sizes (default expert)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: all)")
    args = p.parse_args(argv)
    check_args(p, args)
    from arschloch_env.cli import (EXIT_INTERRUPTED, exit_status, interruption,
                                   stopping_as_on_ctrl_c)
    from train.tournament import TournamentError

    with stopping_as_on_ctrl_c():
        try:
            return evaluate(args, argv)
        except TournamentError as exc:  # a field spec or table size the tournament refuses
            p.error(str(exc))
        except KeyboardInterrupt:
            print(f"interrupted ({interruption()}): the tournaments that finished are kept in "
                  f"{args.out} and are not played again; run the same command to play the "
                  f"rest (the one cut short from its start; its partial results are in its "
                  f"folder)", file=sys.stderr)
            return exit_status(EXIT_INTERRUPTED)


def check_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuses, before any game, what would otherwise fail with a traceback mid-way."""
    for name in ("deals", "greedy_deals", "ladder_deals", "mc_deals", "other_deals"):
        value = getattr(args, name)
        if value is not None and (value < 0 or value == 1):
            p.error(f"--{name.replace('_', '-')} {value}: 0 (skip) or at least 2 (an interval "
                    f"needs two deals)")
    from arschloch_env.rules import TABLE_SIZES
    if any(n not in TABLE_SIZES for n in args.players):
        p.error(f"--players {' '.join(map(str, args.players))}: table sizes of "
                f"{TABLE_SIZES.start} to {TABLE_SIZES.stop - 1} players only")
    if args.jobs is not None and args.jobs < 1:
        p.error(f"--jobs {args.jobs}: at least 1 (or leave it out: every core)")
    if args.seed < 0:
        p.error(f"--seed {args.seed}: at least 0")
    if not args.out.strip():  # Path("") is the working directory
        p.error("--out is empty; give a directory for the tournament reports")
    from arschloch_env.cli import CliError, check_out_dir
    try:  # under a file, in a read-only folder: refused before hours of games
        check_out_dir(args.out)
    except CliError as exc:
        p.error(str(exc))
    if not Path(args.bot).exists():
        p.error(f"{args.bot!r} does not exist; give a bundle directory such as bots/NAME")
    if not (Path(args.bot) / "manifest.json").is_file():
        p.error(f"{args.bot!r} holds no bot bundle (no manifest.json); give a bundle directory "
                f"such as bots/NAME")
    from agents.bundle import BundleError, read_manifest
    try:
        read_manifest(args.bot)
    except BundleError as exc:
        p.error(str(exc))


def tournaments(args: argparse.Namespace, trained_for: list[int],
                main_n: int) -> list[tuple[str, int, str, str, int]]:
    """``(what, players, candidate, field, deals)`` of every tournament to play, in order:
    ``main`` (the bot at ``main_n`` players), ``ladder`` (expert against greedy, at
    ``main_n`` and wherever the bot plays expert), ``other`` (the other table sizes); mc, the
    slowest field, last."""
    ladder_deals = args.deals if args.ladder_deals is None else args.ladder_deals
    plan = [("main", main_n, args.bot, "expert", args.deals),
            ("main", main_n, args.bot, "greedy", args.greedy_deals),
            ("ladder", main_n, "expert", "greedy", ladder_deals)]
    for n in dict.fromkeys(args.players):  # each once, however often given
        if n in trained_for and n != main_n:
            plan += [("other", n, args.bot, field, args.other_deals)
                     for field in dict.fromkeys(args.other_fields)]
            if "expert" in args.other_fields:
                plan.append(("ladder", n, "expert", "greedy", args.other_deals))
    plan.append(("main", main_n, args.bot, "mc", args.mc_deals))
    return [t for t in plan if t[-1] > 0]


def check_fields(plan: list[tuple[str, int, str, str, int]], rules: dict) -> None:
    """Makes every field bot for its table before any game, so that a misspelt
    ``--other-fields`` bot is refused at once, not after hours of the other tournaments.

    Raises:
        TournamentError: a field that is no agent, or that cannot play its table's rules.
    """
    from arschloch_env.rules import make_rules
    from train.tournament import make_bots

    for n, field in sorted({(n, field) for _, n, _, field, _ in plan}):
        make_bots([field], [field], make_rules(rules, n).replace(rounds=1))


def evaluate(args: argparse.Namespace, argv: list[str] | None) -> int:
    """Plays (or reads back) every tournament and writes evaluation.md."""
    from agents.bundle import read_manifest
    from train.files import write_atomic

    manifest = read_manifest(args.bot)
    rules = manifest["rules"]
    main_n = 4 if 4 in manifest["players"] else manifest["players"][0]
    out = Path(args.out)
    label = args.bot
    plan = tournaments(args, manifest["players"], main_n)
    check_fields(plan, rules)
    untrained = [n for n in dict.fromkeys(args.players) if n not in manifest["players"]]
    skipped = ([f"Not played at {', '.join(map(str, untrained))} players: the bot was trained "
                f"for {manifest['players']}."] if untrained else [])
    for line in skipped:
        print(f"  {line}", flush=True)
    rows: dict[int, dict[str, dict]] = {}  # the bot's rows by table size and field
    ladders: dict[int, dict] = {}
    for what, n, candidate, field, deals in plan:
        res = row(tournament(rules, n, candidate, field, deals, args.seed, args.jobs,
                             out / f"{n}p_{Path(candidate).name}_vs_{Path(field).name}"))
        if what == "ladder":
            ladders[n] = res
        else:
            rows.setdefault(n, {})[field] = res

    command = " ".join(["python scripts/evaluate_bot.py", *(sys.argv[1:] if argv is None
                                                             else argv)])
    text = "\n\n".join([
        f"Duplicate tournaments of `{label}` ({rules['preset']}), one round per deal, seed "
        f"{args.seed}; rank points per round (n - place; par (n-1)/2) with 95% CIs over deals.",
        table([r for by_field in rows.values() for r in by_field.values()]),
        *[ladder_line(ladder, args.deals if n == main_n else args.other_deals)
          for n, ladder in ladders.items()],
        *([goals(n, by_field, ladders.get(n)) for n, by_field in rows.items()] if main_n == 4
          else [f"The strength goals are for 4 players; this bot was trained for "
                f"{manifest['players']}."]),
        *skipped,
        f"Command: `{command}`",
    ]) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "evaluation.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
