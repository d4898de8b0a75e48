"""``arschloch tournament``: duplicate tournaments between bots (see :mod:`train.tournament`)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from arschloch_env.cli import CliError, add_progress_args, add_rules_args

EXIT_INTERRUPTED = 130


def add_parser(sub) -> None:
    """Adds the ``tournament`` subcommand to the ``arschloch`` parser."""
    p = sub.add_parser(
        "tournament", help="duplicate tournament between bots, with confidence intervals",
        description="Every deal is replayed with the bots rotated through the seats, so card "
                    "luck cancels. Give two bots (a candidate and the field bot it meets in "
                    "every other seat) or one bot per seat (every distinct seating is played). "
                    "Writes results.json, results.md, results.csv, score.png and places.png "
                    "to --out.")
    add_rules_args(p)
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
                        "given order")
    p.add_argument("--jobs", type=int, default=None, metavar="J",
                   help="worker processes (default: every core); results do not depend on it")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="output directory (default runs/tournament/<time>)")
    p.add_argument("--record", metavar="FILE", help="write every game's record (JSON Lines)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    add_progress_args(p)
    p.set_defaults(func=_cmd_tournament)


def _cmd_tournament(args: argparse.Namespace) -> int:
    from arschloch_env.rules import parse_override
    from train.report import text_report, write_outputs
    from train.tournament import TournamentError, run_tournament

    overrides = dict(parse_override(s) for s in args.overrides)
    out = args.out or f"runs/tournament/{time.strftime('%Y%m%d-%H%M%S')}"
    if Path(out).exists() and not Path(out).is_dir():
        raise CliError(f"--out {out!r} is a file; give a directory")
    base = Path(out).absolute()
    while not base.exists():  # an unwritable output directory fails now, not after the games
        base = base.parent
    if not base.is_dir() or not os.access(base, os.W_OK | os.X_OK):
        raise CliError(f"--out {out!r}: {str(base)!r} is not a writable directory")
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
    if res.deals_done:
        written = write_outputs(res, out, with_plots=not args.no_plots)
        print(f"\nwrote {', '.join(p.name for p in written)} to {out}")
    if args.record:
        print(f"record: {args.record} ({res.run['record_matches']} game(s))")
    if not res.complete:
        print(f"arschloch tournament: interrupted; {res.deals_done} of {res.deals_requested} "
              f"deal(s) finished" + (f"; partial results written to {out}" if res.deals_done
                                     else "; nothing to write"), file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0
