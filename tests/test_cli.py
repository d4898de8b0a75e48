"""The command line, run as a user runs it: in a subprocess, checking exit codes and messages."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Path(sys.executable).with_name("arschloch")
BASE = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "arschloch_env.cli"]


def cli(*args: str, cwd: Path | None = None, base: list[str] = BASE
        ) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    return subprocess.run(base + list(args), capture_output=True, text=True, timeout=120,
                          cwd=cwd or ROOT, env=env, stdin=subprocess.DEVNULL)


def ok(res: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    return res


def failed(res: subprocess.CompletedProcess, code: int, *words: str) -> str:
    assert res.returncode == code, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr and "Traceback" not in res.stdout
    for w in words:
        assert w in res.stderr, (w, res.stderr)
    return res.stderr


@pytest.fixture(scope="module")
def record(tmp_path_factory) -> Path:
    """One simulated record: 3 matches of culo, 4 players, 2 rounds, mixed agent specs."""
    path = tmp_path_factory.mktemp("rec") / "games.jsonl"
    res = ok(cli("simulate", "--rules", "culo", "--players", "4", "--matches", "3", "--seed",
                 "7", "--record", str(path), "--set", "rounds=2", "--set",
                 "no_finish_on_top=false", "--agents", "random", "random",
                 "agents.random_agent:RandomAgent", "random"))
    assert "3 match(es)" in res.stdout and f"record: {path} (3 match(es))" in res.stdout
    return path


def events_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


class BoomAgent:
    """Raises on its first move: no match ever finishes (``tests.test_cli:BoomAgent``)."""

    def act(self, observation, view):
        raise RuntimeError("boom")


class ProcessKillerAgent:
    """Ends its own process on its first move (``tests.test_cli:ProcessKillerAgent``), as a
    crash in a C extension or the out-of-memory killer would."""

    def act(self, observation, view):
        os.kill(os.getpid(), signal.SIGKILL)


class ExitingAgent:
    """Calls sys.exit(0) on its first move (``tests.test_cli:ExitingAgent``)."""

    def act(self, observation, view):
        sys.exit(0)


class ResetBoomAgent:
    """Raises when a match starts (``tests.test_cli:ResetBoomAgent``)."""

    def reset(self, rules, seat, seed):
        raise KeyError("boom")

    def act(self, observation, view):
        return view["legal"][0]["id"]


class TwoArgumentResetAgent(ResetBoomAgent):
    """A ``reset`` without the seed that every agent's reset is given."""

    def reset(self, rules, seat):
        self.seat = seat


class LateBoomAgent:
    """Plays the first legal action, and raises in its second match."""

    def reset(self, rules, seat, seed):
        self.matches = getattr(self, "matches", 0) + 1

    def act(self, observation, view):
        if self.matches > 1:
            raise RuntimeError("boom")
        return int(observation["action_mask"].argmax())


class LateIllegalAgent(LateBoomAgent):
    """Plays the first legal action, and answers 999 in its second match."""

    def act(self, observation, view):
        return 999 if self.matches > 1 else int(observation["action_mask"].argmax())


# -- simulate -------------------------------------------------------------------------------------

def test_simulate_writes_the_record_atomically(record):
    assert record.exists()
    assert not list(record.parent.glob("*.part"))
    events = events_of(record)
    matches = [e for e in events if e["event"] == "match"]
    assert [m["index"] for m in matches] == [0, 1, 2]
    assert sum(e["event"] == "match_end" for e in events) == 3
    head = matches[0]
    assert head["rules"]["rounds"] == 2 and head["rules"]["no_finish_on_top"] is False
    assert head["rules"]["preset"] == "culo" and head["rules"]["num_players"] == 4
    assert head["agents"] == {"player_0": "random", "player_1": "random",
                              "player_2": "agents.random_agent:RandomAgent",
                              "player_3": "random"}
    assert sum(e["event"] == "round_end" for e in events) == 6
    assert all(line.strip() for line in record.read_text().split("\n")[:-1])


def test_simulate_is_deterministic_by_seed(tmp_path, record):
    again = tmp_path / "again.jsonl"
    ok(cli("simulate", "--rules", "culo", "--players", "4", "--matches", "3", "--seed", "7",
           "--record", str(again), "--set", "rounds=2", "--set", "no_finish_on_top=false",
           "--agents", "random", "random", "agents.random_agent:RandomAgent", "random"))
    assert again.read_text() == record.read_text()


def test_simulate_sums_up_every_seat_as_its_record_says(tmp_path):
    """The table after the matches: per seat its mean place and rank points per round, its
    President and Arschloch shares of the rounds, and its match wins (a tie shared)."""
    path = tmp_path / "s.jsonl"
    res = ok(cli("simulate", "--rules", "tavern", "--matches", "6", "--seed", "1", "--set",
                 "rounds=2", "--agents", "greedy", "random", "expert", "random", "--record",
                 str(path)))
    events = events_of(path)
    rounds = [e["places"] for e in events if e["event"] == "round_end"]
    winners = [e["winners"] for e in events if e["event"] == "match_end"]
    assert len(rounds) == 12 and max(map(len, winners)) > 1
    rows = {line.split()[0]: line.split()[2:] for line in res.stdout.splitlines()
            if line.startswith("player_")}
    for p in ("player_0", "player_1", "player_2", "player_3"):
        places = [r[p] for r in rounds]
        wins = sum(1 / len(w) for w in winners if p in w)
        assert rows[p] == [f"{sum(places) / 12:.2f}", f"{sum(4 - x for x in places) / 12:.2f}",
                           f"{places.count(1) / 12:.1%}", f"{places.count(4) / 12:.1%}",
                           f"{wins:.1f}"], p


def test_simulate_tavern_one_agent_for_all(tmp_path):
    path = tmp_path / "t.jsonl"
    res = ok(cli("simulate", "--rules", "tavern", "--players", "5", "--matches", "2",
                 "--seed", "1", "--set", "rounds=1", "--agents", "random", "--record",
                 str(path)))
    assert "tavern (rounds=1), 5 players" in res.stdout  # the rules as played
    events = events_of(path)
    assert events[0]["rules"]["num_players"] == 5 and events[0]["rules"]["rounds"] == 1
    # rotate: match k is led by seat k in round 1
    leaders = [e["leader"] for e in events if e["event"] == "round"]
    assert leaders == ["player_0", "player_1"]


def test_set_num_players_is_the_table_size(tmp_path):
    path = tmp_path / "five.jsonl"
    ok(cli("simulate", "--set", "num_players=5", "--matches", "1", "--set", "rounds=1",
           "--record", str(path)))
    assert events_of(path)[0]["rules"]["num_players"] == 5
    assert json.loads(ok(cli("rules", "culo", "--set", "num_players=3")).stdout)[
        "num_players"] == 3
    res = ok(cli("play", "--bots", "greedy", "--set", "num_players=3"))  # no input: leaves
    assert "culo, 3 players" in res.stdout
    failed(cli("simulate", "--players", "4", "--set", "num_players=5", "--matches", "1"), 2,
           "num_players: given as 4 and as 5")


@pytest.mark.parametrize("args", [
    ["simulate", "--matches", "1", "--record", "r.jsonl"],
    ["play", "--bots", "greedy", "--record", "r.jsonl"],
    ["tournament", "--bots", "random", "greedy", "--deals", "1", "--record", "r.jsonl"],
    ["clone", "greedy", "--decisions", "10", "--out", "c.npz"],
])
def test_negative_seed_is_refused_by_every_command(tmp_path, args):
    err = failed(cli(*args, "--seed", "-1", cwd=tmp_path), 2,
                 "seed: -1 is not allowed; it must be at least 0")
    assert err.startswith(f"arschloch {args[0]}: error:")
    assert list(tmp_path.iterdir()) == []  # no record, no results, no clone


def test_simulate_counts_the_table_from_the_agents_given_one_per_seat():
    res = ok(cli("simulate", "--agents", "random", "greedy", "random", "--matches", "1"))
    assert "of culo, 3 players" in res.stdout
    failed(cli("simulate", "--agents", "random", "greedy", "random", "--players", "4"), 2,
           "--agents: 3 specs for 4 seats")
    failed(cli("simulate", "--agents", *["random"] * 7), 2,
           "--agents: 7 specs, one per seat, make a table of 7 players; num_players: 7")


def test_no_record_file_when_no_match_finished(tmp_path):
    rec = tmp_path / "s.jsonl"
    res = cli("simulate", "--agents", "tests.test_cli:BoomAgent", "random", "random", "random",
              "--matches", "2", "--record", str(rec))
    assert res.returncode != 0 and "boom" in res.stderr
    res = ok(cli("play", "--bots", "random", "--record", str(tmp_path / "p.jsonl")))
    assert "you left the game" in res.stdout and "record: none written" in res.stdout
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", [["simulate", "--matches", "1"], ["play", "--bots", "random"],
                                     ["tournament", "--bots", "greedy", "random", "--deals",
                                      "1"]])
def test_a_record_never_replaces_a_file_that_is_no_record(tmp_path, command):
    config = tmp_path / "c.yaml"
    config.write_text("algo: ppo-vec\n")
    failed(cli(*command, "--record", str(config), cwd=tmp_path), 2,
           "is a file that holds no game record, which the record would replace")
    assert config.read_text() == "algo: ppo-vec\n" and list(tmp_path.iterdir()) == [config]


def test_record_keeps_the_matches_that_finished_before_an_error(tmp_path):
    rec = tmp_path / "s.jsonl"
    res = cli("simulate", "--agents", "tests.test_cli:LateBoomAgent", "random", "random",
              "random", "--matches", "3", "--set", "rounds=1", "--record", str(rec))
    assert res.returncode != 0 and "boom" in res.stderr
    assert f"record: {str(rec)!r} holds the 1 match(es) finished before it stopped" in res.stderr
    assert [e["index"] for e in events_of(rec) if e["event"] == "match"] == [0]
    assert not list(tmp_path.glob("*.part"))
    ok(cli("replay", "--quiet", str(rec)))


def test_an_illegal_move_says_what_the_record_holds(tmp_path):
    rec = tmp_path / "s.jsonl"
    res = cli("simulate", "--agents", "tests.test_cli:LateIllegalAgent", "random", "random",
              "random", "--matches", "3", "--set", "rounds=1", "--record", str(rec))
    assert res.returncode == 1, res.stderr
    assert res.stderr.splitlines() == [
        res.stderr.splitlines()[0],
        f"record: {str(rec)!r} holds the 1 match(es) finished before it stopped"]
    assert "chose an illegal action" in res.stderr and "999" in res.stderr


def test_play_says_what_the_record_holds_after_a_bot_failed(tmp_path):
    rec = tmp_path / "p.jsonl"
    res = subprocess.run(
        BASE + ["play", "--bots", "tests.test_cli:BoomAgent", "--record", str(rec)],
        input="1\n" * 50, capture_output=True, text=True, timeout=120, cwd=ROOT,
        env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert res.returncode == 1 and "RuntimeError: boom" in res.stderr
    assert f"record: none written to {str(rec)!r} (no match finished)" in res.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", [
    ["tournament", "--bots", "tests.test_cli:BoomAgent", "greedy", "--deals", "2", "--jobs", "1"],
    ["tournament", "--bots", "tests.test_cli:BoomAgent", "greedy", "--deals", "2", "--jobs", "2"],
    ["simulate", "--players", "3", "--agents", "greedy", "tests.test_cli:BoomAgent", "random",
     "--matches", "1"],
])
def test_an_agent_that_raises_is_named_with_its_seat_and_its_own_traceback(command):
    """One line names the agent and seat, then the agent's traceback once: a worker's error
    used to arrive as two tracebacks (the worker's and the parent's), naming neither."""
    res = cli(*command, "--no-plots" if command[0] == "tournament" else "--seed=0")
    assert res.returncode == 1, res.stderr
    lines = res.stderr.splitlines()
    seat = "player_0" if command[0] == "tournament" else "player_1"
    assert lines[0] == f"arschloch {command[0]}: agent 'BoomAgent' in {seat} raised " \
                       f"RuntimeError: boom"
    assert res.stderr.count("Traceback (most recent call last)") == 1
    assert 'raise RuntimeError("boom")' in res.stderr and "RemoteTraceback" not in res.stderr


@pytest.mark.parametrize("agent, says", [
    ("ResetBoomAgent", "agent 'ResetBoomAgent' in player_0 raised KeyError in reset: 'boom'"),
    ("TwoArgumentResetAgent", "agent 'TwoArgumentResetAgent' in player_0: its reset(rules, "
                              "seat) cannot be called as reset(rules, seat, seed)"),
])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_an_agent_whose_reset_fails_is_named_with_its_seat(agent, says, jobs):
    res = cli("tournament", "--bots", f"tests.test_cli:{agent}", "greedy", "--deals", "2",
              "--jobs", jobs, "--no-plots")
    assert res.returncode == 1, res.stderr
    assert res.stderr.splitlines()[0].startswith(f"arschloch tournament: {says}"), res.stderr
    assert res.stderr.count("Traceback (most recent call last)") <= 1
    assert "RemoteTraceback" not in res.stderr


@pytest.mark.parametrize("command", [
    ["simulate", "--agents", "tests.test_cli:ExitingAgent", "random", "random", "random"],
    ["tournament", "--bots", "tests.test_cli:ExitingAgent", "greedy", "--deals", "2",
     "--jobs", "2", "--no-plots"]])
def test_an_agent_that_calls_sys_exit_is_an_agent_failure_not_a_quiet_success(command,
                                                                             tmp_path):
    out = ["--out", str(tmp_path / "t")] if command[0] == "tournament" else []
    res = cli(*command, *out, "--record", str(tmp_path / "r.jsonl"))
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert res.stderr.splitlines()[0] == (f"arschloch {command[0]}: agent 'ExitingAgent' in "
                                          f"player_0 raised SystemExit: 0"), res.stderr
    assert not (tmp_path / "r.jsonl").exists()


TWO_CORES = [sys.executable, "-c", "import sys, train.tournament as t; t.default_jobs = lambda: "
             "2; from arschloch_env.cli import main; sys.exit(main(sys.argv[1:]))"]
"""The command line with two usable cores on any machine: two workers, not one process."""


def test_a_tournament_worker_that_dies_is_an_error_not_a_hang(tmp_path):
    res = cli("tournament", "--bots", "tests.test_cli:ProcessKillerAgent", "greedy", "--deals",
              "4", "--jobs", "2", "--no-plots", "--out", str(tmp_path / "t"), base=TWO_CORES)
    assert res.returncode == 1, res.stderr
    assert res.stderr.startswith("arschloch tournament: a worker process playing the "
                                 "tournament's games ended (killed by SIGKILL)"), res.stderr
    assert "Traceback" not in res.stderr


def test_simulate_without_record():
    res = ok(cli("simulate", "--rules", "culo-ten", "--players", "3", "--matches", "1",
                 "--set", "rounds=1"))
    assert "1 match(es), 1 round(s) of culo-ten (rounds=1), 3 players" in res.stdout


# -- rules ----------------------------------------------------------------------------------------

def test_rules_table_and_json():
    res = ok(cli("rules"))
    for p in ("culo", "culo-points", "culo-ten", "culo-52", "tavern"):
        assert p in res.stdout
    assert "no_finish_on_top" in res.stdout
    res = ok(cli("rules", "tavern", "--players", "3", "--set", "no_finish_on_top=true"))
    data = json.loads(res.stdout)
    assert data["preset"] == "tavern" and data["num_players"] == 3
    assert data["no_finish_on_top"] is True and data["rank_order"][-1] == "2"


# -- replay ---------------------------------------------------------------------------------------

def test_replay_ok(record):
    res = ok(cli("replay", str(record)))
    assert "3 match(es) replayed; every event follows the rules" in res.stdout
    assert "== match 0 (culo" in res.stdout and "plays" in res.stdout
    res = ok(cli("replay", "--quiet", str(record)))
    assert res.stdout.strip().splitlines() == [
        f"{record}: 3 match(es) replayed; every event follows the rules"]
    res = ok(cli("replay", "--quiet", "--deals-from-seed", str(record)))
    assert res.stdout.strip().splitlines() == [
        f"{record}: 3 match(es) replayed; every event follows the rules; every deal is its "
        f"match seed's"]


def test_replay_corrupted_play_exits_1_naming_the_line(tmp_path, record):
    lines = record.read_text().splitlines()
    events = [json.loads(x) for x in lines]
    # The second play of the first match, made a card its player was never dealt.
    i = [k for k, e in enumerate(events) if e["event"] == "play"][1]
    player = events[i]["player"]
    dealt = events[1]["hands"][player]
    card = next(r + s for r in "789TJQKA" for s in "CSHD" if r + s not in dealt)
    lines[i] = json.dumps({"event": "play", "player": player, "cards": [card]})
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    err = failed(cli("replay", "--quiet", str(bad)), 1, f"{bad}:{i + 1}:", "match 0",
                 f"{player} cannot")
    assert len(err.strip().splitlines()) == 1


def test_replay_illegal_equal_rank_play(tmp_path, record):
    """A follower's play replaced by a card it holds of the rank on the table: refused because
    equal is never enough (not for a card it never held, which the card's choice must rule
    out)."""
    events = events_of(record)
    held = {p: set(cards) for p, cards in events[1]["hands"].items()}  # round 1: no exchange
    same: list[str] = []
    for i in range(2, len(events)):
        e, before = events[i], events[i - 1]
        if e["event"] == "round_end":
            break
        if e["event"] == "play":
            if before["event"] == "play" and len(before["cards"]) == 1:
                rank = before["cards"][0][0]
                same = sorted(c for c in held[e["player"]] if c[0] == rank)
                if same:
                    break
            held[e["player"]] -= set(e["cards"])
    else:
        pytest.fail("no follower held a card of the rank on the table")
    assert e["event"] == "play" and same, "the record's first round never offers the case"
    events[i] = {"event": "play", "player": e["player"], "cards": same[:1]}
    bad = tmp_path / "equal.jsonl"
    bad.write_text("".join(json.dumps(e) + "\n" for e in events))
    failed(cli("replay", str(bad)), 1, f"{bad}:{i + 1}:", "equal is never enough")


@pytest.mark.parametrize("content,words", [
    (None, ["truncated"]),
    ("garbage\n", ["not valid JSON", "not a game record"]),
    ('{"event": "match"}\ngarbage\n', [":2: not valid JSON", "truncated or corrupt"]),
    (b"\x00\xff\xfe binary\n", ["not UTF-8"]),
    ('{"event": "play", "player": "player_0", "cards": ["7C"]}\n', ["outside a match"]),
])
def test_replay_truncated_or_garbage(tmp_path, record, content, words):
    path = tmp_path / "x.jsonl"
    if content is None:
        lines = record.read_text().splitlines()
        path.write_text("\n".join(lines[: len(lines) // 3]) + "\n")
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    failed(cli("replay", str(path)), 2, "arschloch replay:", f"{path}:", *words)


def test_replay_line_cut_in_half(tmp_path, record):
    text = record.read_text()
    path = tmp_path / "half.jsonl"
    path.write_text(text[: len(text) // 2])
    err = failed(cli("replay", str(path)), 2, "arschloch replay:")
    assert "not valid JSON" in err or "truncated" in err


def test_replay_missing_file(tmp_path):
    failed(cli("replay", str(tmp_path / "nope.jsonl")), 2, "arschloch replay: error: record file",
           "does not exist")


# -- bad input: exit 2, one clear line, no traceback ------------------------------------------------

@pytest.mark.parametrize("args,words", [
    (["simulate", "--rules", "poker"], ["unknown preset 'poker'", "culo", "tavern"]),
    (["simulate", "--set", "jokers=1"], ["unknown rules field 'jokers'", "rounds"]),
    (["rules", "culo", "--set", "preset=tavern"], ["preset", "not a field to override",
                                                   "culo-points"]),
    (["simulate", "--set", "rounds"], ["FIELD=VALUE"]),
    (["simulate", "--set", "rounds=0"], ["rounds", "1..1000"]),
    (["simulate", "--set", "deal=some"], ["deal", "equal", "all"]),
    (["simulate", "--players", "2"], ["num_players", "2", "3 to 6"]),
    (["simulate", "--players", "7"], ["num_players", "7", "3 to 6"]),
    (["simulate", "--matches", "0"], ["--matches 0"]),
    (["simulate", "--players", "3", "--agents", "random", "random"], ["--agents", "3 seats"]),
    (["simulate", "--agents", "nobody"], ["unknown agent spec 'nobody'"]),
    (["simulate", "--agents", "nowhere/bot"], ["'nowhere/bot': no such bundle directory",
                                               "read from the working directory"]),
    (["simulate", "--agents", "no_such_module:Bot"], ["cannot import module"]),
    (["simulate", "--agents", "bots/expert_clone_culo.npz"], ["a policy file (.npz",
                                                              "only in a ppo-vec run's vec.mix"]),
    (["simulate", "--agents", "README.md"], ["README.md is a file, not a bot bundle directory"]),
    (["train", "--config", "configs"], ["config file 'configs' is a directory; give a YAML "
                                        "file"]),
    (["rules", "poker"], ["unknown preset 'poker'"]),
    (["rules", "culo", "--players", "7"], ["3 to 6"]),
    (["rules", "culo", "--set", "rank_order=7,8,9"], ["rank_order", "e.g. [7,8,9,J,Q,K,A,T]"]),
])
def test_bad_input_exits_2_with_a_clear_message(args, words):
    err = failed(cli(*args, "--matches", "1") if args[0] == "simulate" and "--matches" not in
                 args else cli(*args), 2, *words)
    assert err.startswith(f"arschloch {args[0]}: error:")


def test_rank_order_as_a_bracketed_list():
    for text in ("[7,8,9,J,Q,K,A,T]", "[7, 8, 9, J, Q, K, A, T]", "['7','8','9','J','Q','K',"
                                                                  "'A','T']"):
        res = ok(cli("rules", "culo", "--set", f"rank_order={text}"))
        assert json.loads(res.stdout)["rank_order"] == list("789JQKAT")


@pytest.mark.parametrize("command,words", [
    ("play", ["one seat for each", "one for you"]),
    ("tournament", ["one per --bots spec when more than two"]),
    ("simulate", ["one per --agents spec when several are given"]),
])
def test_players_help_says_what_decides_the_table_size(command, words):
    text = " ".join(ok(cli(command, "--help")).stdout.split())
    assert "(default: 4)" not in text
    for w in words:
        assert w in text, text


def test_replay_play_of_a_number_not_a_card(tmp_path, record):
    events = events_of(record)
    i = [k for k, e in enumerate(events) if e["event"] == "play"][0]
    events[i]["cards"] = [7]
    bad = tmp_path / "number.jsonl"
    bad.write_text("".join(json.dumps(e) + "\n" for e in events))
    failed(cli("replay", "--quiet", str(bad)), 1, f"{bad}:{i + 1}:", "card 7")


@pytest.mark.parametrize("command", [["simulate"], ["play"],
                                     ["tournament", "--bots", "greedy", "random"]])
def test_an_empty_record_path_is_named_as_empty(tmp_path, command):
    failed(cli(*command, "--record", "", cwd=tmp_path), 2,
           "--record '': record path is empty; give a file name")


def test_record_path_that_is_a_directory(tmp_path):
    failed(cli("simulate", "--matches", "1", "--record", str(tmp_path)), 2, "is a directory")
    (tmp_path / "games.jsonl").write_text("")
    failed(cli("simulate", "--matches", "1", "--record", str(tmp_path / "games.jsonl" / "x")),
           2, f"the folder of --record '{tmp_path / 'games.jsonl' / 'x'}'", "is a file")


def test_usage_errors():
    res = cli()
    assert res.returncode == 2 and "usage" in res.stderr and "Traceback" not in res.stderr
    res = cli("simulate", "--players", "four")
    assert res.returncode == 2 and "invalid int value" in res.stderr


@pytest.mark.parametrize("args, command, unknown", [
    (["tournament", "--bots", "expert", "greedy", "--deels", "10"], "tournament", "--deels 10"),
    (["rules", "culo", "tavern"], "rules", "tavern"),
    (["replay", "games.jsonl", "--quite"], "replay", "--quite"),
])
def test_an_unknown_option_is_named_by_its_command(capsys, args, command, unknown):
    """A misspelled option gets the command's usage, which lists its options; the top-level
    usage shows only COMMAND."""
    from arschloch_env.cli import main
    with pytest.raises(SystemExit) as exit_:
        main(args)
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert f"usage: arschloch {command} " in err
    assert f"arschloch {command}: error: unrecognized arguments: {unknown}" in err


def test_simulate_takes_bots_as_tournament_and_play_do(tmp_path):
    record = tmp_path / "games.jsonl"
    res = cli("simulate", "--matches", "1", "--bots", "greedy", "--record", str(record))
    assert res.returncode == 0, res.stderr
    first = json.loads(record.read_text().splitlines()[0])
    assert set(first["agents"].values()) == {"greedy"}


@pytest.mark.parametrize("module", ["arschloch_env", "arschloch_env.launch", "arschloch_env.cli"])
def test_module_entry_point_matches_script(module):
    """``python -m arschloch_env`` is the command where the environment's scripts are not on
    the PATH (the launcher's and the command line's modules run it too)."""
    res = subprocess.run([sys.executable, "-m", module, "rules", "culo"],
                         capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert res.returncode == 0 and json.loads(res.stdout)["preset"] == "culo"


@pytest.mark.parametrize("command", [["curves", "no-run", "--out"],
                                     ["clone", "greedy", "--decisions", "10", "--out"],
                                     ["simulate", "--matches", "1", "--record"]])
def test_an_output_that_is_a_named_pipe_is_refused_and_left_alone(tmp_path, command):
    name = {"curves": "c.png", "clone": "c.npz", "simulate": "c.jsonl"}[command[0]]
    pipe = tmp_path / name
    os.mkfifo(pipe)
    failed(cli(*command, str(pipe)), 2, "is a named pipe (FIFO), not a regular file")
    assert pipe.is_fifo()


def test_write_atomic_replaces_a_links_file_and_keeps_its_permissions(tmp_path):
    from train.files import write_atomic
    target, link = tmp_path / "t.txt", tmp_path / "l.txt"
    target.write_text("old")
    target.chmod(0o600)
    link.symlink_to(target)
    write_atomic(link, "new")
    assert link.is_symlink() and target.read_text() == "new"
    assert target.stat().st_mode & 0o777 == 0o600


def test_simulates_table_shows_long_agent_names_whole():
    res = cli("simulate", "--matches", "1", "--players", "3", "--agents", "random",
              "agents.greedy:GreedyAgent", "bots/ppo_vec_culo_expert")
    assert res.returncode == 0, res.stderr
    rows = res.stdout.splitlines()
    assert any(r.startswith("player_2  bots/ppo_vec_culo_expert ") for r in rows), rows
    table = [r for r in rows if r.startswith(("seat ", "player_"))]
    assert len(table) == 4 and len({len(r) for r in table}) == 1, table  # columns align


@pytest.mark.parametrize("raised, line", [
    (KeyboardInterrupt, "arschloch rules: interrupted (Ctrl-C)"),
    ("Interrupted", "arschloch rules: interrupted; go on with arschloch rules --again"),
])
def test_ctrl_c_exits_130_with_one_line(monkeypatch, capsys, raised, line):
    """Ctrl-C in a command that does not handle it itself: exit status 130 and one line (a
    command that can say how to go on raises Interrupted with it), no traceback."""
    import arschloch_env.cli as cli_module

    def command(args):
        if raised == "Interrupted":
            raise cli_module.Interrupted("interrupted; go on with arschloch rules --again")
        raise raised

    monkeypatch.setattr(cli_module, "_cmd_rules", command)
    try:
        code = cli_module.main(["rules"])
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C escaped main (a traceback for the user)")
    assert code == 130
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [line] and captured.out == ""


LOADING_INTERRUPTED = "arschloch: interrupted (Ctrl-C) while starting; nothing was done"


def test_ctrl_c_while_the_command_loads_exits_130_with_one_line():
    """The console script's guard: a Ctrl-C while the command line's modules import (here
    raised by an import hook at the first of them) is one line, not a traceback. It covers
    the package's own import because that loads nothing."""
    script = (
        "import sys\n"
        "class Hook:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'arschloch_env.cli':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Hook())\n"
        "from arschloch_env.launch import main\n"
        "loaded = [m for m in ('numpy', 'arschloch_env.engine') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
        "sys.exit(main())\n")
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, cwd=ROOT)
    assert res.returncode == 130 and res.stderr.splitlines() == [LOADING_INTERRUPTED], res.stderr
    with open(ROOT / "pyproject.toml", encoding="utf-8") as f:
        assert 'arschloch = "arschloch_env.launch:main"' in f.read()


def test_ctrl_c_once_the_command_is_done_leaves_its_exit_status_alone(monkeypatch):
    """After the command returns, the interpreter shuts down (atexit hooks: torch's, after an
    export): a Ctrl-C then printed a traceback and could turn a failure into status 0."""
    import arschloch_env.cli as cli_module
    from arschloch_env.launch import main

    monkeypatch.setattr(cli_module, "main", lambda: 3)
    before = signal.getsignal(signal.SIGINT)
    try:
        assert main() == 3
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


def test_ctrl_c_while_the_commands_parser_is_built_exits_130_with_one_line(monkeypatch, capsys):
    import arschloch_env.cli as cli_module

    def build_parser():
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_module, "build_parser", build_parser)
    assert cli_module.main(["rules"]) == 130
    assert capsys.readouterr().err.splitlines() == [LOADING_INTERRUPTED]


@pytest.mark.parametrize("command", ["simulate", "play"])
def test_record_never_overwrites_an_input(tmp_path, command):
    """simulate and play refuse a --record that is the rules file or a file of a bundle
    they play, as tournament does."""
    rules = tmp_path / "rules.yaml"
    rules.write_text("preset: culo\nrounds: 1\n")
    bundle = tmp_path / "bot"
    bundle.mkdir()
    for name in ("manifest.json", "policy.onnx"):
        (bundle / name).write_bytes((ROOT / "bots" / "ppo_vec_culo_expert" / name).read_bytes())
    bots = "--agents" if command == "simulate" else "--bots"
    for record, rules_arg, says in ((rules, str(rules), "would overwrite --rules"),
                                    (bundle / "manifest.json", "culo",
                                     f"would overwrite manifest.json of {bots}")):
        before = record.read_bytes()
        failed(cli(command, "--rules", rules_arg, "--players", "4", bots, str(bundle),
                   "--record", str(record)), 2, says)
        assert record.read_bytes() == before


def test_a_record_may_take_the_name_of_a_preset_or_a_built_in_bot(tmp_path):
    """A preset's or a built-in bot's name is no input file: a record named so is written,
    not refused as the overwrite of an input."""
    for name in ("culo", "random"):
        ok(cli("simulate", "--rules", "culo", "--matches", "1", "--agents", "random",
               "--record", name, cwd=tmp_path))
        assert '"match_end"' in (tmp_path / name).read_text()


def test_simulate_ctrl_c_exits_130_with_the_record_and_summary_agreeing(tmp_path):
    from conftest import interrupt_while_recording

    rec = tmp_path / "games.jsonl"
    code, stdout, stderr = interrupt_while_recording(
        BASE + ["simulate", "--matches", "1000000", "--set", "rounds=1", "--record", str(rec)],
        rec, cwd=ROOT)
    assert code == 130 and "Traceback" not in stderr, stderr
    interrupted = int(stderr.split("interrupted after ")[1].split()[0])
    recorded = int(stdout.split(f"record: {rec} (")[1].split()[0])
    assert interrupted == recorded == len([line for line in rec.read_text().splitlines()
                                           if '"match_end"' in line])


def test_simulate_stopped_by_sigterm_keeps_its_finished_matches(tmp_path):
    """kill and timeout send SIGTERM: the command stops as on Ctrl-C, the record keeps the
    finished matches, and the exit status is 128 + 15, as a shell reports the signal."""
    import signal

    from conftest import interrupt_while_recording

    rec = tmp_path / "games.jsonl"
    code, stdout, stderr = interrupt_while_recording(
        BASE + ["simulate", "--matches", "1000000", "--set", "rounds=1", "--record", str(rec)],
        rec, sig=signal.SIGTERM, cwd=ROOT)
    assert code == 143 and "Traceback" not in stderr, stderr
    recorded = int(stdout.split(f"record: {rec} (")[1].split()[0])
    assert recorded > 0 and not list(tmp_path.glob("*.part"))
    from arschloch_env.cli import main
    assert main(["replay", "--quiet", str(rec)]) == 0


def test_a_stop_signal_handler_lasts_only_as_long_as_the_command(capsys):
    import signal

    from arschloch_env.cli import main
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    assert main(["rules", "culo"]) == 0
    assert {s: signal.getsignal(s) for s in before} == before


def test_a_person_leaving_simulate_or_tournament_stops_cleanly(tmp_path):
    """agents.human:HumanAgent can play a seat of any command: 'quit' (or Ctrl-D, the closed
    stdin of cli()) ends the command as it ends play, exit 0, no traceback."""
    rec = tmp_path / "games.jsonl"
    res = ok(subprocess.run(
        BASE + ["simulate", "--agents", "agents.human:HumanAgent", "random", "random", "random",
                "--matches", "2", "--record", str(rec)], input="quit\n", capture_output=True,
        text=True, timeout=120, cwd=ROOT, env={**os.environ, "PYTHONWARNINGS": "ignore"}))
    assert "you left the game after 0 finished match(es)" in res.stderr
    assert "0 match(es)" in res.stdout and "record: none written" in res.stdout
    assert not rec.exists()
    res = ok(cli("tournament", "--bots", "agents.human:HumanAgent", "random", "--deals", "1",
                 "--jobs", "1", "--out", str(tmp_path / "t"), "--no-plots", "--no-progress",
                 "--record", str(tmp_path / "t.jsonl")))
    assert res.stderr.splitlines()[-2:] == [
        "arschloch tournament: you left the game; stopped before the end",
        f"record: none written to {str(tmp_path / 't.jsonl')!r} (no match finished)"]


def test_tournament_refuses_a_directory_where_a_results_file_goes(tmp_path):
    """A directory named like a results file in --out fails before the games, not with a
    traceback after them."""
    out = tmp_path / "t"
    (out / "results.json").mkdir(parents=True)
    failed(cli("tournament", "--bots", "greedy", "random", "--deals", "1", "--jobs", "1",
               "--out", str(out), "--no-progress"), 2,
           "arschloch tournament: error:", f"{str(out / 'results.json')!r} is not a file")
    assert [p.name for p in out.iterdir()] == ["results.json"]


def test_train_help_names_every_field_a_resume_may_change():
    """--resume's help and the README name the fields of train.config.RESUMABLE (in words for
    the learning rate, intervals and threads)."""
    from train.config import RESUMABLE

    words = {"ppo.learning_rate": "the learning rate", "ppo.lr_final": "the learning rate",
             "checkpoint_every": "checkpoint and snapshot intervals",
             "league.snapshot_every": "checkpoint and snapshot intervals",
             "torch_threads": "threads", "vec.collect_threads": "threads",
             "vec.engine_threads": "threads"}
    text = " ".join(ok(cli("train", "--help")).stdout.split())
    readme = " ".join((ROOT / "README.md").read_text().split())
    for field in RESUMABLE:
        assert words.get(field, field) in text, field
        assert words.get(field, f"`{field}`") in readme, field


@pytest.mark.parametrize("missing, argv", [
    ("torch", ["train", "--config", str(ROOT / "configs" / "ppo_smoke.yaml")]),
    ("tensorboard", ["curves", ".", "--out", "curves.png"]),
])
def test_a_training_command_without_the_training_extra_says_what_to_install(
        tmp_path, monkeypatch, capsys, missing, argv):
    """The base install plays bundles without torch; a command that trains names the module
    that is missing and the extra to install, without a traceback."""
    from arschloch_env.cli import main
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, missing, None)  # import raises ModuleNotFoundError
    for name in [m for m in sys.modules if m.startswith(f"{missing}.")]:
        monkeypatch.delitem(sys.modules, name)  # loaded by a test before: found without it
    assert main([*argv, "--run-dir", "run"] if argv[0] == "train" else argv) == 2
    err = capsys.readouterr().err
    assert f"{missing} is not installed" in err and "pip install -e '.[train]'" in err, err
    assert not (tmp_path / "run").exists()


def test_the_sb3_vec_env_without_the_training_extra_says_what_to_install(monkeypatch):
    import importlib
    monkeypatch.setitem(sys.modules, "stable_baselines3", None)
    for name in [m for m in sys.modules if m.startswith("stable_baselines3.")]:
        monkeypatch.delitem(sys.modules, name)  # loaded by a module imported earlier
    monkeypatch.delitem(sys.modules, "arschloch_env.vector_env", raising=False)
    with pytest.raises(ModuleNotFoundError, match=r"ArschlochVecEnv is a stable-baselines3 "
                                                  r"VecEnv: stable_baselines3 is not installed; "
                                                  r"install the training extra") as info:
        importlib.import_module("arschloch_env.vector_env")
    assert info.value.name == "stable_baselines3"  # the CLI's handler reads it


def test_a_ctrl_c_while_a_match_is_written_waits_until_it_is_counted(tmp_path, monkeypatch,
                                                                      capsys):
    """The record held one match more than simulate's summary and its record line said,
    when the Ctrl-C came after the match was written and before it was counted."""
    from arschloch_env.cli import main
    from arschloch_env.records import RecordWriter

    write = RecordWriter.write_match

    def write_then_ctrl_c(self, events):
        write(self, events)
        if self.matches == 2:
            signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(RecordWriter, "write_match", write_then_ctrl_c)
    rec = tmp_path / "games.jsonl"
    code = main(["simulate", "--matches", "10", "--set", "rounds=1", "--record", str(rec)])
    out, err = capsys.readouterr()
    assert code == 130
    assert "interrupted after 2 match(es)" in err and f"record: {rec} (2 match(es))" in out
    assert rec.read_text().count('"match_end"') == 2


def test_a_full_disk_is_one_line_and_the_record_keeps_its_whole_matches(tmp_path, capsys,
                                                                          monkeypatch):
    from arschloch_env.cli import main
    from arschloch_env.records import RecordWriter

    write = RecordWriter.write_match

    def full_at_the_third(self, events):
        if self.matches == 2:
            raise OSError(28, "No space left on device")
        write(self, events)

    monkeypatch.setattr(RecordWriter, "write_match", full_at_the_third)
    rec = tmp_path / "games.jsonl"
    code = main(["simulate", "--matches", "10", "--set", "rounds=1", "--record", str(rec)])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert err.splitlines() == [
        "arschloch simulate: error: [Errno 28] No space left on device",
        f"record: {str(rec)!r} holds the 2 match(es) finished before it stopped"]
    assert rec.read_text().count('"match_end"') == 2


def test_tournament_replaces_only_an_earlier_tournaments_report(tmp_path):
    """score.png and places.png of a folder of one's own were removed under --no-plots, a
    results.json of another kind replaced."""
    args = ["tournament", "--rules", "culo", "--bots", "greedy", "random", "--deals", "2",
            "--jobs", "1", "--no-progress", "--no-plots"]
    photos, data = tmp_path / "photos", tmp_path / "data"
    photos.mkdir()
    data.mkdir()
    (photos / "score.png").write_bytes(b"my picture")
    (data / "results.json").write_text('{"my": "data"}')
    for out, names in ((photos, "score.png"), (data, "results.json")):
        before = {p.name: p.read_bytes() for p in out.iterdir()}
        res = cli(*args, "--out", str(out))
        assert res.returncode == 2, res.stderr[-2000:]
        assert (f"holds {names}, which the report would replace, and no tournament's "
                f"results.json says they are an earlier report; give another --out"
                in res.stderr)
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    earlier = tmp_path / "earlier"
    for plots in ([], ["--no-plots"]):  # an earlier report is replaced, its plots removed
        res = cli(*[a for a in args if a != "--no-plots"], *plots, "--out", str(earlier))
        assert res.returncode == 0, res.stderr[-2000:]
    assert sorted(p.name for p in earlier.iterdir()) == ["results.csv", "results.json",
                                                         "results.md"]
