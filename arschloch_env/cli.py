"""The ``arschloch`` command line.

Subcommands: ``simulate`` (matches between agents, game records, summary), ``rules`` (the
presets and their fields), ``replay`` (re-play a record through the engine and check it),
and the ones other packages add (``tournament``, ``play``, ``train``, ``export``, ``curves``,
``clone``).
Every command that takes ``--rules`` also takes ``--set FIELD=VALUE`` (repeatable).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import tempfile
import threading
from pathlib import Path
from typing import Callable

import numpy as np

from arschloch_env.atomic import output_file
from arschloch_env.launch import EXIT_INTERRUPTED, loading_interrupted
from arschloch_env.rules import (
    FIELD_NAMES, PRESETS, Rules, RulesError, make_rules, make_rules_for_seats, parse_override,
)


class CliError(Exception):
    """A user error: printed as one line, exit status 2."""


def check_out_dir(out: str, label: str | None = None) -> None:
    """An output directory that cannot be written fails now, not after the work (``label``
    names it in the message; default ``--out OUT``)."""
    label = label or f"--out {out!r}"
    if Path(out).exists() and not Path(out).is_dir():
        raise CliError(f"{label} is a file; give a directory")
    base = Path(out).absolute()
    while not base.exists():
        base = base.parent
    if not base.is_dir():
        raise CliError(f"{label}: {str(base)!r} is a file, so no directory can be made "
                       f"under it")
    if not os.access(base, os.W_OK | os.X_OK):
        raise CliError(f"{label}: {str(base)!r} is not a writable directory")
    # os.access does not know every file system (/proc, a read-only mount): try it
    try:
        fd, probe = tempfile.mkstemp(prefix=".probe-", dir=base)
    except OSError as exc:
        raise CliError(f"{label}: cannot create a file in {str(base)!r} "
                       f"({exc.strerror})") from None
    os.close(fd)
    os.unlink(probe)


def check_out_file(out: str, ask: str, example: str) -> None:
    """An output file that cannot be written (a directory in its place, a folder that cannot
    be written) fails now, not after the work; ``ask`` says what to give instead, e.g. a
    file named ``example`` in that directory."""
    if Path(out).is_dir():
        raise CliError(f"--out {out!r} is a directory; {ask}, e.g. "
                       f"{str(Path(out) / example)!r}")
    try:
        target = output_file(out)
    except ValueError as exc:
        raise CliError(f"--out {exc}") from None
    check_out_dir(str(target.parent), f"the folder of --out {out!r}")


def input_paths(rules: str, option: str, specs: list[str]) -> dict[str, list[str]]:
    """The files and directories a command reads, per option: a rules file, bundles (a
    preset or a built-in bot's name is no path, even where a file has that name)."""
    from agents.base import BUILTIN

    return {"--rules": [] if rules is None or rules in PRESETS else [str(rules)],
            option: [s for s in specs if s not in BUILTIN]}


def check_record_inputs(record: str, inputs: dict[str, list[str]]) -> None:
    """Refuses a ``--record`` that would overwrite an input (``inputs`` per option: the rules
    file, a file of a bot's bundle)."""
    rec = Path(record).resolve()  # resolve(), not absolute(): "a/../a/x" and links alike
    for option, paths in inputs.items():
        for given in paths:
            path = Path(given).resolve()
            if rec == path or (rec.exists() and path in rec.parents):
                what = "" if rec == path else f"{rec.name} of "
                raise CliError(f"--record {record!r} would overwrite {what}{option} {given!r}; "
                               f"give the record another name")


def open_record(record: str | None, inputs: dict[str, list[str]]):
    """The :class:`~arschloch_env.records.RecordWriter` of ``--record`` (None without one),
    refused where it cannot be written or would overwrite an input."""
    from arschloch_env.records import RecordWriter

    if record is None:
        return None
    check_record_inputs(record, inputs)
    check_out_dir(str(Path(record).absolute().parent), f"the folder of --record {record!r}")
    try:
        return RecordWriter(record)
    except (ValueError, OSError) as exc:
        raise CliError(f"--record {record!r}: {exc}") from None


class Interrupted(Exception):
    """Ctrl-C, with what it left and how to go on: printed as one line, exit status 130."""


STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
"""Signals that stop a command as Ctrl-C does: ``kill`` and ``timeout`` send SIGTERM, a
terminal that closes sends SIGHUP."""
_stopped_by: list[int] = []  # the stop signal that interrupted this command, if one did


@contextlib.contextmanager
def interrupt_deferred():
    """Ctrl-C, SIGTERM or SIGHUP inside the block takes effect when it ends (the main thread's
    handler of that signal runs then, whatever it is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {s: signal.signal(s, lambda signum, frame: caught.append(signum))
                for s in (signal.SIGINT, *STOP_SIGNALS)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if caught:
            signal.raise_signal(caught[0])


@contextlib.contextmanager
def stopping_as_on_ctrl_c():
    """Within the block, SIGTERM and SIGHUP raise KeyboardInterrupt in this process, so that
    what a command keeps on Ctrl-C (the finished matches of a record, the finished deals of a
    tournament, a run's checkpoints) is kept then too; a forked worker still ends at once, as
    it would without the block. Afterwards the handlers are as before."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    owner = os.getpid()

    def stop(signum, frame):
        if os.getpid() != owner:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        _stopped_by.append(signum)
        raise KeyboardInterrupt

    _stopped_by.clear()
    previous = {s: signal.signal(s, stop) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def interruption() -> str:
    """What interrupted the command: ``Ctrl-C``, or the stop signal's name."""
    return signal.Signals(_stopped_by[0]).name if _stopped_by else "Ctrl-C"


def exit_status(code: int) -> int:
    """``code``, or after a stop signal 128 + its number, as a shell reports a process the
    signal ended."""
    return 128 + _stopped_by[0] if _stopped_by else code


def add_rules_args(p: argparse.ArgumentParser, players: bool = True,
                   players_default: str = "the rules file's, else with more than one --bots "
                                          "one seat for each and one for you, else 4"
                   ) -> None:
    """``--rules``, ``--set`` and (with ``players``) ``--players``, whose default each command
    words itself: several of them count the agent specs given one per seat."""
    p.add_argument("--rules", default="culo", metavar="PRESET",
                   help=f"preset ({', '.join(PRESETS)}) or a YAML/JSON rules file "
                        f"(default: culo)")
    if players:
        p.add_argument("--players", type=int, default=None, metavar="N",
                       help=f"players at the table, 3..6 (default: {players_default})")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   dest="overrides", help="override one rules field, e.g. --set rounds=1 "
                                          "(repeatable; of a field given twice, the later "
                                          "stands)")


def add_progress_args(p: argparse.ArgumentParser) -> None:
    """``args.progress``: True, False, or None for a bar only on a terminal (tqdm's
    ``disable=None``)."""
    p.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="always show the progress bar (default: on a terminal)")
    p.add_argument("--no-progress", dest="progress", action="store_false",
                   help="never show it")


def progress_bar(progress: bool | None, **kwargs):
    """A tqdm bar for ``progress`` as :func:`add_progress_args` sets it: shown always (True),
    never (False) or only on a terminal (None)."""
    from tqdm import tqdm
    # No monitor thread: tournaments fork their workers while a bar is open, and a fork
    # beside another running thread may leave a lock it held locked forever in the child.
    tqdm.monitor_interval = 0
    return tqdm(disable=None if progress is None else not progress, dynamic_ncols=True,
                **kwargs)


def overrides_from_args(args: argparse.Namespace) -> dict:
    """Every ``--set FIELD=VALUE`` as a field -> typed value mapping (of a field given
    twice, the later, as train's ``--set`` takes it)."""
    return dict(parse_override(s) for s in args.overrides)


def rules_from_args(args: argparse.Namespace) -> Rules:
    """The rules of ``--rules``, ``--players`` and every ``--set`` (``num_players`` among
    them, as long as it agrees with ``--players``)."""
    overrides = overrides_from_args(args)
    players = getattr(args, "players", None)
    if players is None and "num_players" not in overrides and args.rules in PRESETS:
        players = 4
    return make_rules(args.rules, players, **overrides)


def check_seed(seed: int | None) -> None:
    """A series seed: None or an integer from 0 (numpy's SeedSequence takes no negative one).

    Raises:
        CliError: a negative seed, in the words ``run_tournament`` uses.
    """
    if seed is not None and seed < 0:
        raise CliError(f"seed: {seed} is not allowed; it must be at least 0")


def match_seed(seed: int | None, index: int) -> int | None:
    """The seed of match ``index`` of a series started with ``seed`` (independent streams)."""
    if seed is None:
        return None
    return int(np.random.SeedSequence([seed, index]).generate_state(1)[0] >> 1)


# -- simulate ---------------------------------------------------------------------------------

def check_support(agents: list, specs: list, rules: Rules) -> None:
    """Refuses, before any game, agents that declare they cannot play these rules."""
    for agent, spec in zip(agents, specs):
        supports = getattr(agent, "supports", None)
        if supports is not None and not supports(rules.to_dict()):
            raise CliError(f"agent {spec} does not support these rules ({rules.preset}, "
                           f"{rules.num_players} players)" + support_detail(agent, rules))


def support_detail(agent, rules: Rules) -> str:
    """``": <why>"`` when the agent can tell why it does not support ``rules`` (a bundle
    names the field its manifest does not cover, and so does mc for the bundle it searches
    with), else ``""``."""
    from agents.bundle import BundleAgent, BundleError, check_rules
    from agents.mc import MCAgent
    if isinstance(agent, MCAgent) and agent.policy is not None:
        return support_detail(agent.policy, rules)
    if isinstance(agent, BundleAgent):
        try:
            check_rules(agent.manifest, rules.to_dict())
        except BundleError as exc:
            return f": {exc}"
    return ""


def _cmd_simulate(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from agents.base import QuitGame, agent_label, resolve_agents
    from agents.runner import play_match

    if args.players is None and args.agents and len(args.agents) > 1:
        rules = make_rules_for_seats(args.rules, None, len(args.agents),
                                     f"--agents: {len(args.agents)} specs, one per seat,",
                                     **overrides_from_args(args))
    else:
        rules = rules_from_args(args)
    n = rules.num_players
    specs = args.agents or ["random"] * n
    if len(specs) == 1:
        specs = specs * n
    if len(specs) != n:
        raise CliError(f"--agents: {len(specs)} specs for {n} seats; give one per seat (in "
                       f"seat order) or one for all")
    if args.matches < 1:
        raise CliError(f"--matches {args.matches}: must be at least 1")
    agents = resolve_agents(specs)
    check_support(agents, specs, rules)
    labels = [agent_label(s) for s in specs]
    writer = open_record(args.record, input_paths(args.rules, "--agents", specs))
    stats = _Summary(n)
    interrupted = False
    with writer or contextlib.nullcontext():  # an agent's error: the note says what it holds
        try:
            for i in tqdm(range(args.matches), desc="matches", unit="match", disable=None,
                          leave=False):
                game = play_match(rules, agents, seed=match_seed(args.seed, i), match_index=i,
                                  record=writer is not None, labels=labels)
                # a Ctrl-C waits until the match is written and counted, so the record and
                # the summary agree
                with interrupt_deferred():
                    if writer is not None:
                        writer.write_match(game.events)
                    stats.add(game)
        except KeyboardInterrupt:
            interrupted = True
            print(f"interrupted after {stats.matches} match(es)", file=sys.stderr)
        except QuitGame:  # a person at a seat (agents.human:HumanAgent) left: as play ends
            print(f"\nyou left the game after {stats.matches} finished match(es); the "
                  f"unfinished one is not kept", file=sys.stderr)
    print(stats.table(rules, labels))
    if writer is not None:
        print(f"record: {args.record} ({writer.matches} match(es))" if writer.matches else
              f"record: none written to {args.record} (no match finished)")
    return EXIT_INTERRUPTED if interrupted else 0


class _Summary:
    """Places and points per seat over many matches."""

    def __init__(self, n: int):
        self.n = n
        self.matches = 0
        self.rounds = 0
        self.place_sum = [0] * n
        self.points = [0] * n
        self.president = [0] * n
        self.arschloch = [0] * n
        self.wins = [0.0] * n

    def add(self, game) -> None:
        self.matches += 1
        for e in game.round_places:
            self.rounds += 1
            for s, place in enumerate(e):
                self.place_sum[s] += place
                self.points[s] += self.n - place
                self.president[s] += place == 1
                self.arschloch[s] += place == self.n
        for w in game.winners:
            self.wins[w] += 1.0 / len(game.winners)

    def table(self, rules: Rules, labels: list[str]) -> str:
        r = max(self.rounds, 1)
        head = (f"{self.matches} match(es), {self.rounds} round(s) of {rules.label()}, "
                f"{self.n} players")
        width = max(22, *map(len, labels))
        rows = [head, f"{'seat':9} {'agent':{width}} {'mean place':>10} {'points/rnd':>10} "
                      f"{'President':>9} {'Arschloch':>9} {'wins':>6}"]
        for s in range(self.n):
            rows.append(f"player_{s:<2} {labels[s]:{width}} {self.place_sum[s] / r:10.2f} "
                        f"{self.points[s] / r:10.2f} {self.president[s] / r:9.1%} "
                        f"{self.arschloch[s] / r:9.1%} {self.wins[s]:6.1f}")
        return "\n".join(rows)


# -- rules ------------------------------------------------------------------------------------

def _cmd_rules(args: argparse.Namespace) -> int:
    if args.preset is None and not args.overrides and args.players is None:
        fields = [f for f in FIELD_NAMES if f not in ("preset", "num_players")]
        rules = {name: Rules.from_preset(name).to_dict() for name in PRESETS}
        width = max(len(f) for f in fields)
        print(f"{'field':{width}}  " + "  ".join(f"{p:>22}" for p in PRESETS))
        for f in fields:
            cells = []
            for p in PRESETS:
                v = rules[p][f]
                v = "".join(v) if isinstance(v, list) else json.dumps(v)
                cells.append(f"{v:>22}")
            print(f"{f:{width}}  " + "  ".join(cells))
        print("\n`arschloch rules PRESET [--players N] [--set FIELD=VALUE]` prints one as JSON.")
        return 0
    args.rules = args.preset or "culo"
    print(json.dumps(rules_from_args(args).to_dict(), indent=2))
    return 0


# -- replay -----------------------------------------------------------------------------------

def _cmd_replay(args: argparse.Namespace) -> int:
    from arschloch_env.records import RecordError
    from arschloch_env.replay import replay_matches

    replayed = 0
    try:
        for res in replay_matches(args.file, args.deals_from_seed):
            replayed += 1
            if not args.quiet:
                print("\n".join(res.lines))
            if not res.ok:
                print(f"{args.file}:{res.error_line}: match {res.index}: {res.error}",
                      file=sys.stderr)
                return 1
    except RecordError as exc:
        print(f"arschloch replay: error: {exc}", file=sys.stderr)
        return 2
    dealt = "; every deal is its match seed's" if args.deals_from_seed else ""
    print(f"{args.file}: {replayed} match(es) replayed; every event follows the rules{dealt}")
    return 0


# -- wiring -----------------------------------------------------------------------------------

Command = Callable[[argparse.Namespace], int]
# Subcommands from other packages: name -> "module:function" that adds its parser.
EXTERNAL = {
    "tournament": "train.tournament_cli:add_parser",
    "play": "agents.human:add_parser",
    "train": "train.cli:add_train_parser",
    "export": "train.cli:add_export_parser",
    "curves": "train.cli:add_curves_parser",
    "clone": "train.cli:add_clone_parser",
}


TRAIN_EXTRA = frozenset({"torch", "stable_baselines3", "sb3_contrib", "tensorboard", "onnx"})
"""The modules of pyproject's ``train`` extra, which the base install does without."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="arschloch", description="Arschloch (President) "
                                     "reinforcement-learning kit.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("simulate", help="play matches between agents and write game records")
    add_rules_args(p, players_default="the rules file's, else one per --agents spec when "
                                      "several are given, else 4")
    p.add_argument("--matches", type=int, default=10, metavar="M", help="matches (default 10)")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="seed of the series: match i is dealt from it and i (default 0)")
    p.add_argument("--record", metavar="FILE", help="write the game records (JSON Lines)")
    p.add_argument("--agents", "--bots", nargs="+", metavar="SPEC", dest="agents",
                   help="one agent spec per seat in seat order, or one for all (default: "
                        "random); --bots as in tournament and play")
    p.set_defaults(func=_cmd_simulate)

    p = sub.add_parser("rules", help="print the presets and their fields")
    p.add_argument("preset", nargs="?", help="print this preset (with overrides) as JSON")
    p.add_argument("--players", type=int, default=None, metavar="N",
                   help="players at the table, 3..6 (default: the preset's, 4)")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   dest="overrides", help="override one rules field, e.g. --set rounds=1 "
                                          "(repeatable; of a field given twice, the later "
                                          "stands)")
    p.set_defaults(func=_cmd_rules)

    p = sub.add_parser("replay", help="re-play a game record through the engine and check it",
                       epilog="exit status: 0 when every match plays by its rules; 1 at the "
                              "first match that does not (named, with its line); 2 for a file "
                              "that cannot be read as a record, or a usage error")
    p.add_argument("file", help="a game record (JSON Lines)")
    p.add_argument("--quiet", action="store_true", help="only check; print no game")
    p.add_argument("--deals-from-seed", action="store_true",
                   help="deal every round from the match's seed, as the kit did when it wrote "
                        "the record, instead of taking the deals written in it: a deal changed "
                        "since fails (records of other tools may deal otherwise)")
    p.set_defaults(func=_cmd_replay)

    import importlib
    for name, target in EXTERNAL.items():
        module_name, _, fn = target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        getattr(module, fn)(sub)
    for command in sub.choices.values():
        command.set_defaults(command_parser=command)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        parser = build_parser()  # loads every command's module
        args, unknown = parser.parse_known_args(argv)
    except KeyboardInterrupt:
        return loading_interrupted()
    if unknown:
        # the command's own usage and name, not the top-level parser's
        args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    with stopping_as_on_ctrl_c():
        return exit_status(_run_command(args))


def _run_command(args: argparse.Namespace) -> int:
    from agents.base import AgentSpecError, QuitGame
    from agents.bundle import BundleError
    from agents.runner import AgentError, AgentFailed, WorkerDied
    from arschloch_env.engine import DealError, IllegalActionError

    try:
        # Every command's --seed seeds a series; checked here, before any file is opened.
        check_seed(getattr(args, "seed", None))
        return args.func(args) or 0
    except (CliError, RulesError, AgentSpecError, DealError, BundleError) as exc:
        print(f"arschloch {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (AgentError, AgentFailed, IllegalActionError, WorkerDied) as exc:
        print(f"arschloch {args.command}: {exc}", *getattr(exc, "__notes__", ()), sep="\n",
              file=sys.stderr)
        return 1
    except Interrupted as exc:
        print(f"arschloch {args.command}: {exc}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        # A command that has more to say (what was kept, how to go on) raises Interrupted.
        print(f"arschloch {args.command}: interrupted ({interruption()})", file=sys.stderr)
        return EXIT_INTERRUPTED
    except QuitGame as exc:
        # A person playing a seat left; play and simulate say what they kept, others stop here.
        print(f"arschloch {args.command}: you left the game; stopped before the end",
              *getattr(exc, "__notes__", ()), sep="\n", file=sys.stderr)
        return 0
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a full disk, a file system gone: what failed, not a traceback
        print(f"arschloch {args.command}: error: {exc}", *getattr(exc, "__notes__", ()),
              sep="\n", file=sys.stderr)
        return 1
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").partition(".")[0]
        if missing not in TRAIN_EXTRA:
            raise
        # the base install plays, simulates and runs bundles; training needs the extra
        print(f"arschloch {args.command}: error: {missing} is not installed; this command "
              f"needs the training extra: pip install -e '.[train]' (or scripts/env.sh, "
              f"which installs it)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    # Run the imported module's main, so that its exception classes are the ones that the
    # subcommand modules import (not copies defined in __main__).
    from arschloch_env.cli import main as _main
    sys.exit(_main())
