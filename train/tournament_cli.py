"""``arschloch tournament``: duplicate tournaments between bots (see :mod:`train.tournament`)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from arschloch_env.cli import (EXIT_INTERRUPTED, CliError, add_progress_args, add_rules_args,
                               check_out_dir, check_record_inputs, input_paths,
                               overrides_from_args)
from arschloch_env.unique_keys import load_json
from train.files import fresh_directory


def add_parser(sub) -> None:
    """Adds the ``tournament`` subcommand to the ``arschloch`` parser."""
    p = sub.add_parser(
        "tournament", help="duplicate tournament between bots, with confidence intervals",
        description="Every deal is replayed with the bots rotated through the seats, so card "
                    "luck cancels. Give two bots (a candidate and the field bot it meets in "
                    "every other seat) or one bot per seat (every distinct seating is played). "
                    "Writes results.json, results.md, results.csv, score.png and places.png "
                    "to --out.")
    add_rules_args(p, players_default="one per --bots spec when more than two are given, "
                                      "unless the rules file sets it; else 4")
    p.add_argument("--bots", nargs="+", required=True, metavar="SPEC",
                   help="agent specs: CANDIDATE FIELD, or one per seat")
    p.add_argument("--deals", type=int, default=100, metavar="D",
                   help="deals (blocks) to play (default 100)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="seed (default 0)")
    p.add_argument("--mode", choices=("duplicate", "session"), default="duplicate",
                   help="duplicate: one round per deal (default); session: whole matches, "
                        "the same match seed in every seating")
    p.add_argument("--seatings", choices=("all", "rotate"), default="all",
                   help="all distinct seatings (default) or only cyclic rotations of the "
                        "given order; with three or more kinds of bot, rotations keep their "
                        "neighbours, so the figures depend on the order the bots are given in "
                        "(expert and greedy beside 2x random: expert +0.22 over greedy one "
                        "way, +0.56 the other)")
    p.add_argument("--jobs", type=int, default=None, metavar="J",
                   help="worker processes (default, and at most: every core this process may "
                        "use); results do not depend on it")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="output directory (default runs/tournament/<time>)")
    p.add_argument("--record", metavar="FILE", help="write every game's record (JSON Lines)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    add_progress_args(p)
    p.set_defaults(func=_cmd_tournament)


def _check_record(record: str, out: str, inputs: dict[str, list[str]]) -> None:
    """A record that is a directory, that takes the place of --out or of one of the files
    written into it, or that would overwrite an input (the rules file, a file of a bot's
    bundle: ``inputs`` per option), fails now, not after the games."""
    from arschloch_env.records import check_record_path
    from train.report import FILES

    check_record_inputs(record, inputs)  # first: it names the input that would be lost
    try:
        check_record_path(record)
    except ValueError as exc:
        raise CliError(f"--record {record!r}: {exc}") from None
    # resolve(), not absolute(): "o/../o/results.json" and links name the same file
    rec, out_dir = Path(record).resolve(), Path(out).resolve()
    if rec == out_dir or rec in out_dir.parents:
        raise CliError(f"--record {record!r} is where --out {out!r} needs a directory; give "
                       f"the record another name")
    if rec.parent == out_dir and rec.name in FILES:
        raise CliError(f"--record {record!r} would be overwritten by the results; allowed: "
                       f"any name in --out but {', '.join(FILES)}")


def _check_results_paths(out: str, with_plots: bool) -> None:
    """A directory (or anything but a file) where a results file goes fails now, not after
    the games."""
    from train.report import FILES

    names = FILES if with_plots else [n for n in FILES if not n.endswith(".png")]
    for name in names:
        path = Path(out) / name
        if path.exists() and not path.is_file():
            raise CliError(f"--out {out!r}: {str(path)!r} is not a file, so the results "
                           f"cannot be written there; move it away or give another --out")
    # every report file is written or, a plot under --no-plots, removed: only an earlier
    # tournament's (its results.json says so) may be
    present = [name for name in FILES if (Path(out) / name).is_file()]
    if present and _tournament_results(Path(out) / "results.json") is None:
        raise CliError(f"--out {out!r} holds {', '.join(present)}, which the report would "
                       f"replace, and no tournament's results.json says they are an earlier "
                       f"report; give another --out")


def _tournament_results(path: Path) -> dict | None:
    """The report in ``path`` if it is a tournament's ``results.json``, else None."""
    from train.tournament import FORMAT
    try:
        data = load_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(data, dict) and str(data.get("format")).startswith(FORMAT.split("/")[0]):
        return data
    return None


def _holds_complete_report(out: str) -> bool:
    data = _tournament_results(Path(out) / "results.json")
    return data is not None and data.get("complete") is True


def _unplayed_match_length(res) -> str | None:
    """A note on a match length that a rules file asked for (in place of its preset's) and
    that duplicate mode, one round per deal, did not play (``--set`` ones are refused)."""
    from arschloch_env.rules import MATCH_END, Rules

    asked = [f"{k}={v}" for k, v in Rules.from_dict(res.rules_given).overrides().items()
             if k in MATCH_END and v not in (None, 1)]
    if res.mode != "duplicate" or not asked:
        return None
    return (f"note: the rules' {asked[0]} was not played: duplicate mode plays every deal as "
            f"a single round (no exchange, no titles); whole matches: --mode session")


def _cmd_tournament(args: argparse.Namespace) -> int:
    from train.report import block_unit, text_report, write_outputs
    from train.tournament import TournamentError, run_tournament

    overrides = overrides_from_args(args)
    out = args.out or f"runs/tournament/{time.strftime('%Y%m%d-%H%M%S')}"
    check_out_dir(out)
    _check_results_paths(out, with_plots=not args.no_plots)
    if args.record is not None:
        _check_record(args.record, out, input_paths(args.rules, "--bots", args.bots))
    try:
        res = run_tournament(args.rules, args.bots, args.deals, args.seed, args.mode,
                             args.jobs, players=args.players, seatings=args.seatings,
                             record=args.record, progress=args.progress, **overrides)
    except TournamentError as exc:
        raise CliError(str(exc)) from None
    except KeyboardInterrupt:  # Ctrl-C while the bots were still being loaded
        print("arschloch tournament: interrupted before any game; nothing written",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    print(text_report(res))
    note = _unplayed_match_length(res)
    if note:
        print(note, file=sys.stderr)
    if res.deals_done:
        if args.out is None:
            # named after the second it started: a run started in the same second gets -2
            out = str(fresh_directory(out))
        elif not res.complete and _holds_complete_report(out):
            # a stopped rerun keeps the finished report it would have replaced
            where = Path(out).resolve()
            out = str(fresh_directory(where.with_name(f"{where.name}-partial")))
        try:
            written = write_outputs(res, out, with_plots=not args.no_plots)
        except KeyboardInterrupt:
            print(f"arschloch tournament: interrupted while drawing the plots; the results of "
                  f"{res.deals_done} {block_unit(res)}(s) are written to {out} (results.json, "
                  f"results.md, results.csv), no plot", file=sys.stderr)
            return EXIT_INTERRUPTED
        print(f"\nwrote {', '.join(p.name for p in written)} to {out}")
    if args.record:
        games = res.run["record_matches"]
        print(f"record: {args.record} ({games} game(s))" if games else
              f"record: none written to {args.record} (no game finished)")
    if not res.complete:
        kept = f"; partial results written to {out}" if res.deals_done else "; nothing to write"
        print(f"arschloch tournament: interrupted; {res.deals_done} of {res.deals_requested} "
              f"{block_unit(res)}(s) finished{kept}", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0
