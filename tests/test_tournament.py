"""Tournaments: seatings, figures with hand-computed intervals, jobs-independence, the CLI,
Ctrl-C, and records that replay."""

import json
import math
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from arschloch_env.cli import main as cli_main
from arschloch_env.records import read_matches
from arschloch_env.rules import make_rules
from train.report import FILES, csv_text, headline, markdown_report, text_report
from train.stats import openskill_ratings
from train.tournament import (
    TournamentError, plan_table, run_tournament, seatings_of, summarise,
)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
EXE = str(Path(sys.executable).with_name("arschloch"))
LOWEST = "test_tournament:LowestAgent"  # importable in subprocesses with PYTHONPATH=tests


class LowestAgent:
    """Plays the lowest legal play, passes only when it must: clearly better than random."""

    name = "lowest"
    uses_view = False

    def act(self, observation, view):
        legal = np.flatnonzero(observation["action_mask"])
        plays = legal[legal != 0]
        return int(plays[0] if len(plays) else legal[0])


class CuloOnlyAgent(LowestAgent):
    name = "culo-only"

    def supports(self, rules):
        return rules["preset"].startswith("culo")


class BoomAgent(LowestAgent):
    """Raises on its first move: no game ever finishes."""

    def act(self, observation, view):
        raise RuntimeError("boom")


class CtrlCAgent(LowestAgent):
    """Acts like Ctrl-C in its 200th move of the process: some games finished, one broken."""

    moves = 0

    def act(self, observation, view):
        CtrlCAgent.moves += 1
        if CtrlCAgent.moves == 200:
            raise KeyboardInterrupt
        return super().act(observation, view)


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(ROOT), env.get("PYTHONPATH", "")])
    return env


# -- seatings ---------------------------------------------------------------------------------

def test_candidate_against_field_sits_in_every_seat():
    bots, labels, table = plan_table(["lowest-spec", "random"], 4)
    assert labels == ["lowest-spec", "random"] and table == [0, 1, 1, 1]
    orders = seatings_of(table)
    assert len(orders) == 4
    assert sorted(o.index(0) for o in orders) == [0, 1, 2, 3]


@pytest.mark.parametrize("table,count", [((0, 0, 1, 2), 12), ((0, 1, 2), 6),
                                         ((0, 0, 1, 1, 2), 30)])
def test_mixed_tables_play_every_distinct_seating(table, count):
    orders = seatings_of(table)
    assert len(orders) == len(set(orders)) == count
    n = len(table)
    copies = Counter(table)
    for seat in range(n):  # every bot sits in every seat in proportion to its copies
        at_seat = Counter(o[seat] for o in orders)
        assert {b: at_seat[b] * n for b in copies} == {b: count * c for b, c in copies.items()}
    rot = seatings_of(table, "rotate")
    assert len(rot) == n and all(sorted(o) == sorted(table) for o in rot)


def test_rotations_of_a_table_that_repeats_are_played_once():
    assert seatings_of([0, 1, 0, 1], "rotate") == [(0, 1, 0, 1), (1, 0, 1, 0)]


def test_two_bots_of_one_name_keep_a_row_each():
    class Named(LowestAgent):
        name = "bot"

    bots, labels, table = plan_table([Named(), Named()], 4)
    assert labels == ["bot", "bot'"] and len(bots) == 2


def test_a_level_of_one_is_refused_before_any_game(monkeypatch):
    import train.tournament as tournament
    played = []
    monkeypatch.setattr(tournament, "make_bots", lambda *a: played.append(a))
    for level in (1.0, 0.0, 1.5):
        with pytest.raises(TournamentError, match="must lie strictly between 0 and 1"):
            run_tournament("culo", ["greedy", "random"], deals=2, seed=0, jobs=1, level=level)
    assert played == []


def test_the_mean_place_interval_is_cut_to_the_places_there_are():
    from train.tournament import _metric_range
    assert [_metric_range(m, 4) for m in ("place", "rank_points", "score")] == [
        (1, 4), (0, 3), (0, 1)]


def test_a_record_never_overwrites_a_file_in_a_bundle_it_plays(tmp_path, capsys):
    import shutil
    bundle = tmp_path / "bot"
    shutil.copytree(ROOT / "bots" / "ppo_culo_4p", bundle)
    sample = bundle / "sample_games.jsonl"
    sample.write_text("")  # an empty file: a record may replace one, but not an input's
    assert cli_main(["tournament", "--bots", str(bundle), "greedy", "--deals", "1",
                     "--out", str(tmp_path / "t"), "--record", str(sample)]) == 2
    assert "would overwrite sample_games.jsonl of --bots" in capsys.readouterr().err
    assert sample.read_text() == "" and not (tmp_path / "t").exists()


def test_table_errors():
    with pytest.raises(TournamentError, match="3 spec.*give 2.*or 4"):
        plan_table(["a", "b", "c"], 4)
    with pytest.raises(TournamentError, match="only one distinct bot"):
        plan_table(["random", "random"], 4)
    _, labels, table = plan_table(["a", "a", "b"], 3)
    assert labels == ["a", "b"] and table == [0, 0, 1]



def test_one_bundle_under_two_spellings_is_one_bot(monkeypatch):
    """A bundle directory is one bot however its path is written: otherwise it plays a
    tournament against itself."""
    monkeypatch.chdir(ROOT)
    with pytest.raises(TournamentError, match="only one distinct bot"):
        plan_table(["bots/ppo_culo_4p", "bots/ppo_culo_4p/"], 4)
    _, labels, table = plan_table(["bots/ppo_culo_4p", "./bots/ppo_culo_4p", "greedy"], 3)
    assert labels == ["bots/ppo_culo_4p", "greedy"] and table == [0, 0, 1]


# -- figures from known inputs ----------------------------------------------------------------

def test_tied_winners_share_the_match_win():
    """Two seats tied for the win (a points target) get half a win each: the win shares of a
    game add up to one, whoever tied."""
    from fractions import Fraction

    from train.tournament import _game_means
    game = {"seating": [0, 1, 1, 1], "rounds": [[1, 2, 3, 4], [2, 1, 3, 4]], "winners": [0, 1]}
    cand, field = _game_means(game, 4, 2)
    assert cand["win"] == Fraction(1, 2) and field["win"] == Fraction(1, 6)  # per seat held
    assert cand["win"] * 1 + field["win"] * 3 == 1


def test_summary_of_known_blocks_by_hand():
    """Three players, the candidate (0) against two copies of the field (1).

    Candidate's place in the three seatings: block 0: 1 1 1, block 1: 3 2 3, block 2: 2 2 2,
    so its block scores are 1, 1/6, 1/2 (mean 5/9, sample variance 19/108) and the field's
    (1.5 - candidate) / 2 per game: 1/4, 2/3, 1/2.
    """
    orders = seatings_of([0, 1, 1])
    assert orders == [(0, 1, 1), (1, 0, 1), (1, 1, 0)]
    cand_places = [[1, 1, 1], [3, 2, 3], [2, 2, 2]]
    blocks = []
    for d, cps in enumerate(cand_places):
        games = []
        for order, cp in zip(orders, cps):
            others = iter(p for p in (1, 2, 3) if p != cp)
            places = [cp if b == 0 else next(others) for b in order]
            games.append({"seating": list(order), "rounds": [places],
                          "winners": [places.index(1)]})
        blocks.append({"deal": d, "seed": 100 + d, "games": games})
    rules = make_rules("culo", 3, rounds=1)
    res = summarise(blocks[::-1], rules=rules, rules_given=rules, mode="duplicate",
                    seatings="all", seed=0, deals=3, bots=["cand", "field"],
                    labels=["cand", "field"], table=[0, 1, 1], seat_orders=orders,
                    complete=True)
    t2 = 4.302652729749464
    s = res.metrics["cand"]["score"]
    assert s.mean == pytest.approx(5 / 9)
    assert s.sd == pytest.approx(math.sqrt(19 / 108))
    assert s.half_width == pytest.approx(t2 * math.sqrt(19) / 18)
    assert (s.low, s.high) == (0, 1)  # 5/9 ± 1.04, cut to the scores there are
    assert res.metrics["field"]["score"].mean == pytest.approx((1 / 4 + 2 / 3 + 1 / 2) / 3)
    assert res.metrics["cand"]["president"].mean == pytest.approx(1 / 3)
    assert res.metrics["cand"]["arschloch"].mean == pytest.approx(2 / 9)  # 0, 2/3, 0
    # the field's two seats: half of them last in a game, none where the candidate was last
    assert res.metrics["field"]["arschloch"].mean == pytest.approx((1 / 2 + 1 / 6 + 1 / 2) / 3)
    assert res.metrics["cand"]["place"].mean == pytest.approx((1 + 8 / 3 + 2) / 3)
    assert res.metrics["cand"]["rank_points"].mean == pytest.approx(2 * 5 / 9)
    diff = res.paired[0]["metrics"]["score"]  # per block 3/4, -1/2, 0
    assert (res.paired[0]["a"], res.paired[0]["b"]) == ("cand", "field")
    assert diff.mean == pytest.approx(1 / 12)
    assert diff.half_width == pytest.approx(t2 * math.sqrt(19) / 12)
    assert res.places["cand"]["counts"] == [3, 4, 2]
    assert res.deal_seeds == [100, 101, 102]  # sorted by deal whatever the input order
    assert res.games == res.rounds == 9
    assert "cand - field: score +0.083" in text_report(res)
    # rank points: (n - 1) times the score, 1/6 ± 3.12, cut to the differences of values
    # in [0, 2]
    assert "rank pts/round +0.167 [-2.000, +2.000]\n" in text_report(res) + "\n"  # no star
    assert "bot,cand,score,0.5555555555555556," in csv_text(res)
    assert "note: 3 deal(s); with fewer than 30 the intervals cover somewhat less than 95%" \
        in text_report(res)
    nothing = summarise([], rules=rules, rules_given=rules, mode="duplicate", seatings="all",
                        seed=0, deals=3, bots=["cand", "field"], labels=["cand", "field"],
                        table=[0, 1, 1], seat_orders=orders, complete=False)
    assert text_report(nothing).splitlines()[1:] == ["no deal finished: nothing to report"]
    assert "\n- none\n" in markdown_report(nothing)  # no paired difference
    assert "| cand | - | - | - |" in markdown_report(nothing)  # no score in any seat
    # OpenSkill rates the rounds in deal order, whatever order the blocks came in
    rounds = [(tuple(g["seating"]), g["rounds"][0]) for b in blocks for g in b["games"]]
    assert res.openskill == dict(zip(["cand", "field"], openskill_ratings(rounds, 2)))


# -- playing tournaments ----------------------------------------------------------------------

def _figures(res):
    d = res.to_dict()
    d.pop("run")
    return d


def test_same_figures_for_one_and_two_jobs_and_every_seat_played(monkeypatch):
    # two worker processes even on a one-core machine
    monkeypatch.setattr("train.tournament.default_jobs", lambda: 2)
    a = run_tournament("culo", [LowestAgent(), "random"], deals=6, seed=11, jobs=1)
    b = run_tournament("culo", [LowestAgent(), "random"], deals=6, seed=11, jobs=2)
    assert a.run["jobs"] == 1 and b.run["jobs"] == 2
    assert _figures(a) == _figures(b)
    assert a.complete and a.deals_done == 6 and a.games == a.rounds == 24
    assert all(v is not None for v in a.by_seat["lowest"])
    assert sorted(o.index("lowest") for o in a.seat_orders) == [0, 1, 2, 3]
    assert a.metrics["lowest"]["score"].mean > a.metrics["random"]["score"].mean
    # the rank points of a round always sum to n(n-1)/2
    m = a.metrics
    assert m["lowest"]["rank_points"].mean + 3 * m["random"]["rank_points"].mean == \
        pytest.approx(6.0)
    c = run_tournament("culo", [LowestAgent(), "random"], deals=6, seed=12, jobs=1)
    assert _figures(c) != _figures(a)


def test_worker_processes_are_capped_at_the_usable_cores(monkeypatch):
    monkeypatch.setattr("train.tournament.default_jobs", lambda: 2)
    res = run_tournament("culo", ["greedy", "random"], deals=6, seed=11, jobs=64)
    assert res.run["jobs"] == 2
    # and at the deals: a worker without a deal would only be started and stopped
    assert run_tournament("culo", ["greedy", "random"], deals=1, seed=11, jobs=2).run["jobs"] == 1
    assert _figures(res) == _figures(run_tournament("culo", ["greedy", "random"], deals=6,
                                                    seed=11, jobs=1))


def test_session_mode_plays_whole_matches_and_mixed_tables():
    res = run_tournament("culo", [LowestAgent(), "random", "random"], deals=2, seed=3,
                         mode="session", jobs=1, rounds=2)
    assert res.num_players == 3 and res.rules["rounds"] == 2
    assert len(res.seat_orders) == 3 and res.games == 6 and res.rounds == 12
    assert "win" in res.metrics["lowest"]
    dup = run_tournament("tavern", [LowestAgent(), "random"], deals=1, seed=3, jobs=1,
                         players=3)
    assert dup.rules["rounds"] == 1 and dup.rules_given["rounds"] == 5
    assert dup.metrics["lowest"]["score"].half_width is None  # one block: no interval


def test_reports_rank_the_bots_and_label_every_column():
    """The table best bot first, match wins as a percentage, places numbered from 1, the
    OpenSkill rows in the CSV, and a star for a difference significantly below 0 too."""
    from train.report import markdown_table
    res = run_tournament("culo", ["random", "greedy"], deals=30, seed=0, jobs=1)
    rows = [r for r in markdown_table(res).splitlines()[2:]]
    assert [r.split("|")[1].strip() for r in rows] == ["greedy", "random"]
    head = [c.strip() for c in markdown_table(res).splitlines()[0].split("|")]
    for row in rows:  # rates as percentages, places to two digits, the rest to three
        cells = dict(zip(head, (c.strip() for c in row.split("|"))))
        assert re.fullmatch(r"\d+\.\d% ± \d+\.\d%", cells["President"]), row
        assert re.fullmatch(r"\d+\.\d% ± \d+\.\d%", cells["Arschloch"]), row
        assert re.fullmatch(r"\d\.\d\d ± \d\.\d\d", cells["mean place"]), row
        assert re.fullmatch(r"\d\.\d{3} ± \d\.\d{3}", cells["score"]), row
    assert "| bot | 1 | 2 | 3 | 4 |" in markdown_report(res)
    assert markdown_report(res).startswith("# Tournament: culo, 4 players, duplicate mode")
    house = run_tournament("tavern", ["random", "greedy"], deals=1, seed=0, jobs=1,
                           no_finish_on_top=True)
    # the rules as given: a duplicate tournament's single rounds are its mode, not house rules
    assert markdown_report(house).startswith(
        "# Tournament: tavern (no_finish_on_top=true), 4 players, duplicate mode")
    assert headline(house).startswith("tavern (no_finish_on_top=true), 4 players, duplicate")
    # a match length the rules ask for shows where it is played, in whole matches only
    three = {"preset": "culo", "num_players": 4, "rounds": 3}
    assert headline(run_tournament(three, ["random", "greedy"], deals=1, seed=0,
                                   jobs=1)).startswith("culo, 4 players, duplicate")
    assert headline(run_tournament(three, ["random", "greedy"], deals=1, seed=0, jobs=1,
                                   mode="session")).startswith("culo (rounds=3), 4 players")
    assert "note:" not in text_report(res)  # 30 deals: enough for the intervals
    csv = csv_text(res)
    assert all(f"bot,{b},openskill_{k}," in csv for b in ("greedy", "random")
               for k in ("mu", "sigma", "ordinal"))
    line = next(x for x in text_report(res).splitlines() if "random - greedy" in x)
    assert " [-" in line and line.endswith(" *"), line
    session = run_tournament("culo", [LowestAgent(), "random"], deals=2, seed=3,
                             mode="session", jobs=1, rounds=2)
    table = markdown_table(session)
    wins = [c.strip() for c in table.splitlines()[0].split("|")].index("match wins")
    assert all(r.split("|")[wins].strip().split()[0].endswith("%")
               for r in table.splitlines()[2:]), table


def test_the_score_plot_draws_a_cut_interval_below_and_above_as_it_lies(monkeypatch):
    from matplotlib.axes import Axes

    from train.report import plots
    res = run_tournament("culo", [LowestAgent(), "random"], deals=3, seed=3, jobs=1)
    drawn, bar = [], Axes.bar
    monkeypatch.setattr(Axes, "bar", lambda ax, *a, **k: (drawn.append(k), bar(ax, *a, **k))[1])
    plots(res)
    scores = [res.metrics[b]["score"] for b in res.labels]
    below, above = drawn[0]["yerr"]
    assert below == pytest.approx([e.mean - e.low for e in scores])
    assert above == pytest.approx([e.high - e.mean for e in scores])
    assert below != pytest.approx(above)  # one of them is cut: not symmetric


def test_no_plots_leaves_alone_a_folder_where_a_plot_would_go(tmp_path):
    out = tmp_path / "t"
    (out / "score.png").mkdir(parents=True)
    assert cli_main(["tournament", "--bots", "greedy", "random", "--deals", "1", "--jobs", "1",
                     "--out", str(out), "--no-plots"]) == 0
    assert (out / "score.png").is_dir() and (out / "results.json").is_file()


class Uncopyable(LowestAgent):
    def __deepcopy__(self, memo):
        raise TypeError("it holds a socket")


def test_bad_arguments_fail_before_any_game(tmp_path):
    calls = []

    class Spy(LowestAgent):
        def act(self, observation, view):
            calls.append(1)
            return super().act(observation, view)

    spy = Spy()
    cases = [
        (dict(deals=0), "deals: 0 is not allowed"),
        (dict(seed=-1), "seed: -1 is not allowed; it must be at least 0"),
        # the field plays three seats: an object that cannot be copied fails before the first
        (dict(bots=[spy, Uncopyable()]), "plays several seats, so every seat needs its own copy"),
        (dict(jobs=0), "jobs: 0 is not allowed"),
        (dict(mode="league"), "mode: 'league'"),
        (dict(bots=[spy, "no-such-bot"]), "unknown agent spec 'no-such-bot'"),
        (dict(bots="expert"), r"bots: 'expert' is not a list of agent specs; give a list"),
        (dict(bots=[spy, "random", "random"], players=4), "3 spec"),
        (dict(bots=[CuloOnlyAgent(), spy], rules="tavern"), "does not support these rules"),
        (dict(record=tmp_path), "is a directory"),
        # a bundle says why: the same reason simulate gives
        (dict(bots=[str(ROOT / "bots" / "ppo_vec_culo_multi"), spy], rules="tavern"),
         r"\(tavern, 4 players\): bundle: trained for preset\(s\) \['culo'\], not 'tavern'"),
    ]
    for kwargs, message in cases:
        args = dict(rules="culo", bots=[spy, "random"], deals=2, seed=0, jobs=1)
        args.update(kwargs)
        with pytest.raises(TournamentError, match=message):
            run_tournament(**args)
    assert calls == []


@pytest.mark.parametrize("exitcode,says", [
    (-9, "(killed by SIGKILL)"), (-200, "(killed by signal 200)"), (0, "(exit status 0)"),
    (3, "(exit status 3)")])
def test_a_dead_worker_is_said_to_have_exited_or_been_killed(exitcode, says):
    from types import SimpleNamespace

    from train.tournament import worker_died

    message = str(worker_died(SimpleNamespace(exitcode=exitcode)))
    assert message.startswith("a worker process playing the tournament's games ended " + says)


def test_cli_smoke_writes_every_file_and_replayable_records(tmp_path):
    out, rec = tmp_path / "out", tmp_path / "games.jsonl"
    proc = subprocess.run(
        [EXE, "tournament", "--rules", "culo", "--players", "4", "--bots", LOWEST, "random",
         "--deals", "4", "--seed", "5", "--jobs", "2", "--out", str(out), "--record", str(rec),
         "--set", "no_finish_on_top=false"],
        capture_output=True, text=True, env=_env(), timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "| test_tournament:LowestAgent |" in proc.stdout
    assert "paired differences" in proc.stdout
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES)
    data = json.loads((out / "results.json").read_text())
    assert data["complete"] and data["deals_done"] == 4 and data["seed"] == 5
    assert data["rules"]["no_finish_on_top"] is False and data["rules"]["rounds"] == 1
    assert [b["spec"] for b in data["bots"]] == [LOWEST, "random"]
    assert len(data["deal_seeds"]) == 4
    assert set(data["metrics"][LOWEST]) == {"score", "rank_points", "president", "arschloch",
                                            "place"}
    assert (out / "score.png").read_bytes()[:4] == b"\x89PNG"
    assert "| bot |" in (out / "results.md").read_text()
    assert (out / "results.csv").read_text().startswith("kind,name,metric,mean,low,high")
    # the record is every game in block order, and it replays through the engine
    matches = [json.loads(line) for line in rec.read_text().splitlines()
               if '"event": "match"' in line]
    assert len(matches) == 16 and [m["index"] for m in matches[::4]] == [0, 1, 2, 3]
    deals = [json.loads(line)["hands"] for line in rec.read_text().splitlines()
             if '"event": "round"' in line]
    assert all(deals[i] == deals[i - i % 4] for i in range(16))  # same cards in every seating
    assert [m["agents"]["player_2"] for m in matches[:4]] == ["random", "random", LOWEST,
                                                                "random"]
    assert cli_main(["replay", "--quiet", str(rec)]) == 0


def test_cli_rejects_nonsense_with_a_clear_message(tmp_path, capsys):
    proc = subprocess.run([EXE, "tournament", "--bots", "random", "greedy-nope", "--deals", "2"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 2
    assert "unknown agent spec 'greedy-nope'" in proc.stderr and "Traceback" not in proc.stderr
    cases = [
        (["--bots", "random", LOWEST, "--deals", "0"], "deals: 0 is not allowed"),
        (["--bots", "random", LOWEST, "--jobs", "0"], "jobs: 0 is not allowed"),
        (["--bots", "random", "random", "random", "--players", "4"], "3 spec(s) for 4"),
        (["--bots", "random", "random"], "only one distinct bot"),
        (["--bots", "random", LOWEST, "--set", "rounds=0"], "rounds: 0 is not allowed"),
        # a duplicate deal is one round: a match length asked for would be dropped unsaid
        (["--bots", "random", LOWEST, "--set", "rounds=3"], "rounds=3: duplicate mode plays"),
        (["--bots", "random", LOWEST, "--set", "target_points=15"], "--mode session"),
        (["--bots", "random", LOWEST, "--out", str(tmp_path / "f.txt")], "is a file"),
        # the record and the results would clash: refused before any game, nothing written
        (["--bots", "random", LOWEST, "--out", str(tmp_path / "o"), "--record",
          str(tmp_path / "o")], "is where --out"),
        (["--bots", "random", LOWEST, "--out", str(tmp_path / "o" / "x"), "--record",
          str(tmp_path / "o")], "is where --out"),
        (["--bots", "random", LOWEST, "--out", str(tmp_path / "o"), "--record",
          str(tmp_path / "o" / "results.json")], "would be overwritten by the results"),
        (["--bots", "random", LOWEST, "--out", str(tmp_path / "o"), "--record",
          str(tmp_path)], "is a directory"),
    ]
    (tmp_path / "f.txt").write_text("x")
    sys.path.insert(0, str(HERE))
    try:
        for extra, message in cases:
            assert cli_main(["tournament", "--deals", "2", "--jobs", "1", *extra]) == 2
            err = capsys.readouterr().err
            assert "arschloch tournament: error:" in err and message in err, err
    finally:
        sys.path.remove(str(HERE))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]


def test_cli_set_num_players_is_the_table_size(tmp_path):
    out = tmp_path / "out"
    assert cli_main(["tournament", "--bots", "random", "greedy", "--deals", "1", "--jobs", "1",
                     "--set", "num_players=3", "--out", str(out), "--no-plots"]) == 0
    assert json.loads((out / "results.json").read_text())["rules"]["num_players"] == 3


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_no_record_file_when_no_game_finished(tmp_path, jobs):
    rec = tmp_path / "games.jsonl"
    proc = subprocess.run(
        [EXE, "tournament", "--bots", "test_tournament:BoomAgent", "random", "--deals", "2",
         "--jobs", jobs, "--out", str(tmp_path / "out"), "--record", str(rec)],
        capture_output=True, text=True, env=_env(), timeout=60, cwd=ROOT)
    assert proc.returncode != 0 and "boom" in proc.stderr
    assert list(tmp_path.iterdir()) == []  # neither the record nor its .part


def test_an_interrupted_session_tournament_counts_sessions(tmp_path, capsys):
    CtrlCAgent.moves = 0
    code = cli_main(["tournament", "--mode", "session", "--rules", "culo", "--players", "3",
                     "--bots", "test_tournament:CtrlCAgent", "random", "--deals", "40",
                     "--jobs", "1", "--out", str(tmp_path / "out"), "--no-plots",
                     "--no-progress"])
    assert code == 130
    assert "of 40 session(s) finished" in capsys.readouterr().err


def test_ctrl_c_before_the_first_game_ends_says_no_record_was_written(tmp_path, capsys):
    CtrlCAgent.moves = 199  # Ctrl-C in its first move
    rec = tmp_path / "games.jsonl"
    code = cli_main(["tournament", "--bots", "test_tournament:CtrlCAgent", "random", "--deals",
                     "3", "--jobs", "1", "--out", str(tmp_path / "out"), "--no-plots",
                     "--no-progress", "--record", str(rec)])
    out, err = capsys.readouterr()
    assert code == 130 and "0 of 3 deal(s) finished; nothing to write" in err
    assert f"record: none written to {rec} (no game finished)" in out and not rec.exists()


def test_a_bot_raising_ctrl_c_in_a_worker_stops_the_tournament(tmp_path):
    """Each worker's copy of the bot raises at its 200th move; the parent must not wait for
    the deals those workers never answer, and stops as on Ctrl-C."""
    proc = subprocess.run(
        [EXE, "tournament", "--rules", "culo", "--bots", "test_tournament:CtrlCAgent", "random",
         "--deals", "40", "--jobs", "2", "--out", str(tmp_path / "out"), "--no-plots",
         "--no-progress"],
        capture_output=True, text=True, env=_env(), timeout=60, cwd=ROOT)
    assert proc.returncode == 130, proc.stderr
    assert "partial results written" in proc.stderr


def test_ctrl_c_stops_cleanly_and_keeps_what_finished(tmp_path):
    from conftest import interrupt_while_recording

    out, rec = tmp_path / "out", tmp_path / "games.jsonl"
    code, stdout, stderr = interrupt_while_recording(
        [EXE, "tournament", "--bots", LOWEST, "random", "--deals", "100000", "--seed", "1",
         "--jobs", "2", "--out", str(out), "--record", str(rec), "--no-plots"],
        rec, env=_env(), cwd=ROOT)
    assert code == 130, stderr
    assert "interrupted" in stderr and "partial results written" in stderr
    assert "Traceback" not in stderr
    assert "INTERRUPTED" in stdout
    data = json.loads((out / "results.json").read_text())
    assert data["complete"] is False and 0 < data["deals_done"] < 100000
    assert data["run"]["interrupted"] is True
    assert data["metrics"][LOWEST]["score"]["n"] == data["deals_done"]
    assert not list(rec.parent.glob("*.part")) and rec.exists()
    assert cli_main(["replay", "--quiet", str(rec)]) == 0
    assert data["run"]["record_matches"] == 4 * data["deals_done"]


def test_an_interrupted_rerun_keeps_the_complete_report_it_would_replace(tmp_path, monkeypatch,
                                                                        capsys):
    """A stopped tournament into the --out of a finished one writes its partial report
    beside it (``<out>-partial``), not over it."""
    import dataclasses

    import train.tournament as tournament

    out = tmp_path / "out"
    argv = ["tournament", "--bots", "greedy", "random", "--deals", "4", "--jobs", "1",
            "--out", str(out), "--no-plots", "--no-progress"]
    assert cli_main(argv) == 0
    finished = (out / "results.json").read_text()
    real = tournament.run_tournament
    monkeypatch.setattr(tournament, "run_tournament", lambda *a, **k: dataclasses.replace(
        (res := real(*a, **k)), complete=False, deal_seeds=res.deal_seeds[:2]))
    capsys.readouterr()
    assert cli_main(argv) == 130
    err = capsys.readouterr().err
    assert (out / "results.json").read_text() == finished
    partial = json.loads((tmp_path / "out-partial" / "results.json").read_text())
    assert partial["complete"] is False and partial["deals_done"] == 2
    assert f"partial results written to {tmp_path / 'out-partial'}" in err
    # a partial report is replaced by the next run, complete or not, as before
    assert cli_main(argv[:-4] + ["--out", str(tmp_path / "out-partial"), "--no-plots",
                                 "--no-progress"]) == 130
    assert not (tmp_path / "out-partial-partial").exists()


def test_ctrl_c_while_the_plots_are_drawn_keeps_the_results(tmp_path, monkeypatch, capsys):
    """The results of a finished tournament are written before its plots: a Ctrl-C while
    matplotlib draws them loses the plots, not the deals; an earlier run's plots go too."""
    import train.report as report

    out = tmp_path / "out"
    argv = ["tournament", "--bots", "greedy", "random", "--deals", "3", "--jobs", "1",
            "--out", str(out), "--no-progress"]
    assert cli_main(argv) == 0
    assert {"score.png", "places.png"} <= {p.name for p in out.iterdir()}

    def ctrl_c(res):
        raise KeyboardInterrupt

    monkeypatch.setattr(report, "plots", ctrl_c)
    capsys.readouterr()
    assert cli_main(argv[:-5] + ["--deals", "4", "--jobs", "1", "--out", str(out),
                                 "--no-progress"]) == 130
    err = capsys.readouterr().err
    assert (f"interrupted while drawing the plots; the results of 4 deal(s) are written to "
            f"{out} (results.json, results.md, results.csv), no plot") in err
    assert json.loads((out / "results.json").read_text())["deals_done"] == 4
    assert sorted(p.name for p in out.iterdir()) == ["results.csv", "results.json",
                                                     "results.md"]


def test_a_label_with_a_bar_keeps_the_markdown_tables_in_their_columns(tmp_path):
    import itertools
    import shutil

    from train.report import markdown_report
    bot = tmp_path / "a|b"
    shutil.copytree(ROOT / "bots" / "ppo_culo_4p", bot)
    res = run_tournament("culo", [str(bot), "greedy"], deals=2, seed=1, players=4, jobs=1)
    assert str(bot) in res.labels
    text = markdown_report(res) + "\n\n" + text_report(res)
    assert text.count("a\\|b |") == 4  # the main table twice, places, score by seat
    for is_table, block in itertools.groupby(text.splitlines(), lambda l: l.startswith("|")):
        if is_table:  # every row of a table as many columns as its header
            assert len({line.replace("\\|", "").count("|") for line in block}) == 1


def test_sighup_stops_a_tournament_in_worker_processes_and_keeps_what_finished(tmp_path):
    """A closed terminal sends SIGHUP to the command and its workers: the workers end, the
    command keeps the finished deals as on Ctrl-C and exits 128 + 1."""
    import signal

    from conftest import interrupt_while_recording

    out, rec = tmp_path / "out", tmp_path / "games.jsonl"
    code, stdout, stderr = interrupt_while_recording(
        [EXE, "tournament", "--bots", LOWEST, "random", "--deals", "100000", "--seed", "1",
         "--jobs", "2", "--out", str(out), "--record", str(rec), "--no-plots"],
        rec, sig=signal.SIGHUP, env=_env(), cwd=ROOT)
    assert code == 129, stderr
    assert "partial results written" in stderr and "Traceback" not in stderr
    data = json.loads((out / "results.json").read_text())
    assert data["complete"] is False and data["run"]["interrupted"] is True
    assert not list(rec.parent.glob("*.part"))
    assert data["run"]["record_matches"] == 4 * data["deals_done"] > 0
    assert cli_main(["replay", "--quiet", str(rec)]) == 0


def test_a_stop_as_a_deal_arrives_keeps_the_record_and_the_results_together(tmp_path,
                                                                           monkeypatch):
    """SIGHUP or SIGTERM raises at once (Ctrl-C only sets a flag): landing between keeping a
    finished deal and writing its games, it left a deal in the results that the record
    lacked (seen as 11 deals against 40 matches)."""
    import signal

    import train.tournament as tournament
    from arschloch_env.cli import stopping_as_on_ctrl_c

    class StopAtTheThirdDeal:
        def __init__(self):
            self.deals = 0

        def update(self, games):
            self.deals += 1
            if self.deals == 3:
                signal.raise_signal(signal.SIGHUP)

        def close(self):
            pass

    monkeypatch.setattr(tournament, "progress_bar", lambda *a, **k: StopAtTheThirdDeal())
    rec = tmp_path / "games.jsonl"
    with stopping_as_on_ctrl_c():
        res = run_tournament("culo", ["greedy", "random"], deals=10, seed=1, players=4,
                             jobs=1, record=rec)
    assert res.run["interrupted"] and res.deals_done == 3
    assert res.run["record_matches"] == 4 * res.deals_done
    assert len(list(read_matches(rec))) == 4 * res.deals_done


class StopSignalProbe(LowestAgent):
    """Fails in a worker process whose SIGTERM or SIGHUP is not the default action."""

    def reset(self, rules, seat, seed=None):
        import signal
        if os.getpid() != PARENT:
            assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL


PARENT = os.getpid()


def test_tournament_workers_end_on_sigterm_wherever_they_wait(monkeypatch):
    """The pool's terminate() sends SIGTERM; the command's handler, inherited, would run
    only between bytecodes, and a worker waiting in a lock outlived it (a hang seen once)."""
    from arschloch_env.cli import stopping_as_on_ctrl_c
    monkeypatch.setattr("train.tournament.default_jobs", lambda: 2)  # also on one core
    with stopping_as_on_ctrl_c():
        res = run_tournament("culo", [StopSignalProbe(), "random"], deals=4, seed=1,
                             players=4, jobs=2)
    assert res.complete and res.run["jobs"] == 2


def test_a_bot_against_itself_differs_by_exactly_zero():
    """The sanity check of any tournament: one deterministic bot under two specs. At 4 and 6
    players a place is a third or a fifth, which floats do not hold exactly; the figures must
    still come out equal, not a rounding error apart with an interval of width 0 that the
    report would mark as significant."""
    for players in (4, 6):
        res = run_tournament("culo", ["greedy", "agents.greedy:GreedyAgent"], deals=8, seed=0,
                             players=players, jobs=1)
        for metric, diff in res.paired[0]["metrics"].items():
            assert (diff.mean, diff.low, diff.high) == (0.0, 0.0, 0.0), (players, metric)
        assert "] *" not in text_report(res)  # the mark of a significant difference
        assert "(the same in all 8 deals: no interval)" in text_report(res)


class FailsInItsThirdMatch(LowestAgent):
    """Plays as LowestAgent until the third match it is reset for, then raises."""

    name = "fails"

    def __init__(self):
        self.matches = 0

    def reset(self, rules, seat, seed):
        self.matches += 1

    def act(self, observation, view):
        if self.matches > 2:
            raise RuntimeError("the bot failed")
        return super().act(observation, view)


def test_a_tournament_that_fails_says_what_its_record_holds(tmp_path):
    """The record keeps the whole deals finished before a bot's error (it replays), and the
    error says so: a record cut short must not pass for the run's whole record."""
    record = tmp_path / "t.jsonl"
    with pytest.raises(RuntimeError, match="the bot failed") as info:
        run_tournament("culo", [FailsInItsThirdMatch(), "greedy"], deals=3, seed=0,
                       players=4, record=record, jobs=1)
    matches = sum(1 for line in record.read_text().splitlines() if '"event": "match"' in line)
    assert matches == 4  # deal 0 in its 4 seatings; deal 1 was cut off
    traceback, record_note = info.value.__notes__  # the bot's own traceback first
    assert 'raise RuntimeError("the bot failed")' in traceback
    assert record_note == f"record: {str(record)!r} holds the 4 match(es) finished before it " \
                          f"stopped"
    assert not list(tmp_path.glob("*.part"))


def test_ctrl_c_after_the_last_deal_leaves_the_tournament_complete(monkeypatch):
    """Every deal asked for was played: a Ctrl-C that arrives after the last one finished
    loses nothing, so the result is complete (it was marked interrupted and thrown away)."""
    from train import tournament

    def then_ctrl_c(player, deals, stop):
        yield from played(player, deals, stop)
        stop.flag = True

    played = tournament._blocks_in_process
    monkeypatch.setattr(tournament, "_blocks_in_process", then_ctrl_c)
    res = run_tournament("culo", ["greedy", "random"], deals=2, seed=0, players=4, jobs=1)
    assert res.complete and res.deals_done == 2 and res.run["interrupted"]


def test_ctrl_c_in_one_process_says_it_waits_for_the_game_in_progress(monkeypatch, capsys):
    """With one job the stop is read between games, and a slow bot's game can take minutes:
    the first Ctrl-C says so (and how to stop at once), and the deal in progress is not
    kept; a second Ctrl-C raises at once."""
    import signal

    from train import tournament

    def ctrl_c_in_deal_1(player, deals, stop):
        for d, block in enumerate(played(player, deals, stop)):
            yield block
            if d == 0:
                signal.getsignal(signal.SIGINT)(signal.SIGINT, None)
                assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

    played = tournament._blocks_in_process
    monkeypatch.setattr(tournament, "_blocks_in_process", ctrl_c_in_deal_1)
    res = run_tournament("culo", ["greedy", "random"], deals=3, seed=0, players=4, jobs=1)
    assert not res.complete and res.deals_done == 1 and res.run["interrupted"]
    assert ("stopping once the game in progress ends (its deal is not kept); Ctrl-C again "
            "stops at once") in capsys.readouterr().err


class AtTheTerminal(LowestAgent):
    """Stands for a person: it can only be asked from the process that holds the terminal."""
    name = "person"
    interactive = True


def test_a_person_at_the_table_plays_in_the_main_process():
    res = run_tournament("culo", [AtTheTerminal(), "random"], deals=3, seed=0, players=4,
                         jobs=2)
    assert res.run["jobs"] == 1 and res.complete


def test_a_built_in_name_is_the_built_in_bot_beside_a_bundle_of_that_name(tmp_path,
                                                                          monkeypatch):
    """make_agent takes 'greedy' for the built-in bot even where ./greedy is a bundle: the
    table must count the two as the bots they are."""
    import shutil
    shutil.copytree(ROOT / "bots" / "ppo_culo_4p", tmp_path / "greedy")
    monkeypatch.chdir(tmp_path)
    _, labels, table = plan_table(["./greedy", "greedy"], 4)
    assert labels == ["./greedy", "greedy"] and table == [0, 1, 1, 1]


def test_a_rules_file_that_cannot_seat_the_bots_says_how_they_were_counted(tmp_path):
    rules = tmp_path / "r.json"
    rules.write_text('{"preset": "culo"}')
    with pytest.raises(TournamentError, match=r"^bots: 7 specs, one per seat, make a table of "
                                              r"7 players; num_players: 7"):
        run_tournament(str(rules), ["random"] * 6 + ["greedy"], deals=1, seed=0)


def test_duplicate_mode_takes_a_single_round_asked_for_and_session_any_length():
    assert run_tournament("culo", ["greedy", "random"], deals=1, seed=0, jobs=1,
                          rounds=1).rounds == 4
    res = run_tournament("culo-points", ["greedy", "random"], deals=1, seed=0, jobs=1,
                         mode="session", players=3, target_points=3)
    assert res.games == 3 and res.rounds >= 3
    with pytest.raises(TournamentError, match=r"target_points=3: duplicate mode plays every "
                                              r"deal as a single round"):
        run_tournament("culo", ["greedy", "random"], deals=1, seed=0, jobs=1, target_points=3)


def test_a_match_length_in_a_rules_file_is_noted_as_not_played(tmp_path):
    """Duplicate mode plays one round per deal; a rules file asking for another match length
    than its preset's is said to be left unplayed (the preset's own, as in a run's rules.json,
    asks for nothing), and session mode plays it."""
    for name, text, mode, note in (
            ("r3.yaml", "preset: tavern\nrounds: 3\n", "duplicate",
             "note: the rules' rounds=3 was not played"),
            ("t20.yaml", "preset: culo-points\ntarget_points: 20\n", "duplicate",
             "note: the rules' target_points=20 was not played"),
            ("run.yaml", "preset: culo\nrounds: 5\n", "duplicate", None),
            ("one.yaml", "preset: tavern\nrounds: 1\n", "duplicate", None),  # the round it plays
            ("s3.yaml", "preset: tavern\nrounds: 3\n", "session", None)):
        (tmp_path / name).write_text(text)
        proc = subprocess.run(
            [EXE, "tournament", "--rules", str(tmp_path / name), "--bots", "greedy", "random",
             "--deals", "1", "--jobs", "1", "--out", str(tmp_path / name[:-5]), "--no-plots",
             "--mode", mode],
            capture_output=True, text=True, env=_env(), timeout=60, cwd=ROOT)
        assert proc.returncode == 0, proc.stderr
        assert (note in proc.stderr) if note else "note:" not in proc.stderr, proc.stderr


class SlowOrFailingPlayer:
    """Deal 0 raises at once; every other deal takes a while (a worker still busy)."""

    def play(self, d, stop=None):
        import time
        if d == 0:
            raise ValueError("deal 0 fails")
        time.sleep(0.3)
        return {"deal": d}


def test_a_worker_error_ends_the_pool_at_once_and_leaves_no_worker_behind():
    """A worker's error is raised in the parent while another worker is mid-deal, and every
    worker is gone afterwards. (multiprocessing.Pool's terminate() could wait forever for a
    worker it had killed while that worker held the shared result queue's lock.)"""
    import multiprocessing
    import time

    from train import tournament

    for _ in range(3):
        started = time.time()
        blocks = tournament._blocks_in_pool(SlowOrFailingPlayer(), 6, 2, lambda: False)
        with pytest.raises(ValueError, match="deal 0 fails"):
            list(blocks)
        assert time.time() - started < 5
        assert multiprocessing.active_children() == []


def test_the_pool_yields_every_deal_once_whatever_the_order():
    from train import tournament

    class Player:
        def play(self, d, stop=None):
            return {"deal": d, "pid": os.getpid()}

    blocks = list(tournament._blocks_in_pool(Player(), 7, 3, lambda: False))
    assert sorted(b["deal"] for b in blocks) == list(range(7))
    assert os.getpid() not in {b["pid"] for b in blocks}


def test_a_mixed_table_marks_its_differences_with_holms_correction():
    """Six pairs of four bots: an interval that excludes 0 alone marks a pair of equal bots
    in about a fifth of tournaments, so the star and results.json's 'significant' are
    Holm's; the report says so, and says that few deals cover less than they claim."""
    from train.report import markdown_report
    from train.stats import holm_significant

    class Lowest(LowestAgent):
        name = "lowest"

    res = run_tournament("culo", ["greedy", "random", Lowest(), "expert"], deals=12, seed=2,
                         jobs=1)
    data = res.to_dict()
    assert len(data["paired"]) == 6
    expected = holm_significant([p["metrics"]["score"] for p in res.paired], res.level)
    assert [p["significant"] for p in data["paired"]] == expected
    assert "Holm's correction over all the pairs" in data["intervals"]
    text = text_report(res)
    assert "* = significant at 5% with Holm's correction for the 6 pairs" in text
    assert "note: 12 deal(s); with fewer than 30 the intervals cover somewhat less" in text
    stars = [line.endswith(" *") for line in text.splitlines() if " - " in line
             and "rank pts/round" in line]
    assert stars == expected
    assert "OpenSkill is an online rating" in markdown_report(res)
