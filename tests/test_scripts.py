"""scripts/env.sh, which scripts/test.sh and scripts/demo.sh source, on its cheap paths: a
virtual environment in a temporary folder and no package index, so nothing is downloaded."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
UNREACHABLE = "http://127.0.0.1:9/"


def load_script(name: str):
    """scripts/<name>.py as a module, to call its functions and its main()."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def env_sh(venv: Path) -> subprocess.CompletedProcess:
    """Runs scripts/env.sh from another folder, offline: pip sees no index and no wheels."""
    env = {**os.environ, "ARSCHLOCH_VENV": str(venv), "PYTHON": sys.executable,
           "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "",
           "PIP_INDEX_URL": UNREACHABLE, "PIP_EXTRA_INDEX_URL": "", "TORCH_INDEX": UNREACHABLE}
    return subprocess.run(["bash", str(ROOT / "scripts" / "env.sh")], cwd=venv.parent, env=env,
                          capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


def test_env_completes_a_venv_whose_creation_was_cut_short(tmp_path):
    # `python -m venv` stopped before ensurepip ran leaves bin/python but no pip
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    res = env_sh(venv)
    assert "No module named pip" not in res.stderr, res.stderr[-3000:]
    assert subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "--version"],
                          capture_output=True).returncode == 0


def test_env_says_what_an_install_without_an_index_needs(tmp_path):
    venv = tmp_path / "venv"
    res = env_sh(venv)
    assert res.returncode != 0
    assert "no package index could be reached" in res.stderr, res.stderr[-3000:]
    # the stamp is written only after a complete install, so the next run tries again
    assert not (venv / ".arschloch-installed").exists()


def test_env_refuses_a_venv_of_an_older_python(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    fake = venv / "bin" / "python"  # answers as an interpreter of 3.9 with pip would
    fake.write_text('#!/bin/sh\ncase "$1" in\n  -m) exit 0;;\n  -c) exit 1;;\n'
                    '  -V) echo "Python 3.9.18";;\nesac\n')
    fake.chmod(0o755)
    res = env_sh(venv)
    assert res.returncode != 0
    assert "holds Python 3.9.18" in res.stderr and "rm -r" in res.stderr, res.stderr[-3000:]
    assert not (venv / ".arschloch-installed").exists()


def test_demo_help_comes_before_the_first_runs_install(tmp_path):
    """``scripts/demo.sh --help`` prints the demo's options with Python alone: it made the
    virtual environment and began the install of a few minutes first."""
    venv = tmp_path / "venv"
    env = {**os.environ, "ARSCHLOCH_VENV": str(venv), "PYTHON": sys.executable}
    res = subprocess.run(["bash", str(ROOT / "scripts" / "demo.sh"), "--help"], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL)
    assert res.returncode == 0 and "--steps STEPS" in res.stdout, res.stderr[-2000:]
    assert not venv.exists() and "creating virtual environment" not in res.stderr


@pytest.mark.train_extra
def test_train_throughput_refuses_ppo_vec_options_for_an_sb3_config():
    """--profile, --snapshots and --repeat act on the ppo-vec trainer only: an SB3 config took
    them and printed its figure as if they had been applied."""
    for flag in (["--profile"], ["--snapshots", "3"], ["--repeat", "2"]):
        res = subprocess.run([sys.executable, str(ROOT / "bench" / "train_throughput.py"),
                              "--config", str(ROOT / "configs" / "ppo_smoke.yaml"),
                              "--steps", "1", *flag], capture_output=True, text=True,
                             timeout=300, cwd=ROOT, stdin=subprocess.DEVNULL)
        assert res.returncode == 2, res.stdout + res.stderr[-2000:]
        assert f"{flag[0]} is for ppo-vec configs" in res.stderr and "algo ppo" in res.stderr


@pytest.mark.train_extra
def test_train_throughput_repeats_and_gives_the_median():
    """--repeat N: N timings in a row, a line each, then their median and range."""
    res = subprocess.run([sys.executable, str(ROOT / "bench" / "train_throughput.py"),
                          "--config", str(ROOT / "configs" / "ppo_vec_culo.yaml"), "--steps", "1",
                          "--repeat", "3", "--snapshots", "1", "--set", "vec.num_games=16",
                          "--set", "vec.rollout_steps=8", "--set", "ppo.net_arch=[8]"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT,
                         stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stdout + res.stderr[-2000:]
    lines = [line for line in res.stdout.splitlines() if "samples/s (collect + update)" in line]
    rates = sorted(int(line.split(": ")[1].split()[0].replace(",", "")) for line in lines)
    assert len(rates) == 3 and all(r > 0 for r in rates)
    assert f"3 repeats: median {rates[1]:,} samples/s, {rates[0]:,} to {rates[2]:,}" in res.stdout
    # the figures come with the host they were measured on: a shared host's speed swings
    host = res.stdout.splitlines()[0]
    assert host.startswith("# ") and "cores usable" in host and "load average at start" in host


@pytest.mark.parametrize("script,defaults", [
    ("bots.py", ["(default: random greedy expert mc)", "(default: culo tavern)",
                 "(default: 4.0)"]),
    ("env_throughput.py", ["(default: 3.0)", "(default: 3)"]),
    ("train_throughput.py", ["ppo_vec_tavern_multi.yaml)",
                             "(default: 400000 for ppo-vec, 20000 for ppo)",
                             "(default: league.max_snapshots"]),
    ("vector_throughput.py", ["(default: 1.5)", "(default: 3)", "(default: 1 256 4096)",
                              "(default: culo tavern)"]),
])
def test_bench_help_shows_the_defaults(script, defaults):
    res = subprocess.run([sys.executable, str(ROOT / "bench" / script), "--help"],
                         capture_output=True, text=True, timeout=120, cwd=ROOT,
                         stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stderr[-2000:]
    text = " ".join(res.stdout.split())  # the help wraps lines
    assert all(d in text for d in defaults), text
    assert "(default: False)" not in text and "(default: [])" not in text


@pytest.mark.parametrize("bots,says", [
    (["random", "expret"], "--bots: unknown agent spec 'expret'"),
    (["random", "bots/ppo_vec_culo_multi"], "--bots: agent bots/ppo_vec_culo_multi does not "
                                            "support these rules (tavern, 4 players)"),
])
def test_bench_bots_refuses_a_bot_it_cannot_time_as_a_usage_error(bots, says):
    res = subprocess.run([sys.executable, str(ROOT / "bench" / "bots.py"), "--bots", *bots,
                          "--seconds", "0.01"], capture_output=True, text=True,
                         timeout=120, cwd=ROOT, stdin=subprocess.DEVNULL)
    assert res.returncode == 2, res.stdout + res.stderr[-2000:]
    assert says in res.stderr and "Traceback" not in res.stderr
    assert "random" not in res.stdout  # refused before the first bot was timed


def test_bench_bots_times_a_decision_with_a_choice_by_those_decisions_alone(monkeypatch):
    """'ms/decision with choice' divided the time of every decision (those with one legal
    action too) by the number with a choice."""
    import random
    import types

    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    spec = importlib.util.spec_from_file_location("bench_bots", ROOT / "bench" / "bots.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    clock = [0.0]
    pick = random.Random(0)

    def ask(bot, game, encoder):  # a forced decision takes 1 s, one with a choice 2 ms
        legal = game.legal_actions()
        clock[0] += 1.0 if len(legal) == 1 else 0.002
        return pick.choice(legal)

    monkeypatch.setattr(module, "ask", ask)
    monkeypatch.setattr(module, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    r = module.bench("random", "culo", 30.0)
    assert r["choices"] < r["decisions"]  # some decisions were forced
    assert r["ms_per_choice"] == pytest.approx(2.0)


def test_long_matches_prints_both_ways_of_showing_the_totals():
    """The command behind README's figures of bundles in matches longer than they trained on."""
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "long_matches.py"),
                          str(ROOT / "bots" / "ppo_vec_tavern_multi"), "--rules", "tavern",
                          "--rounds", "7", "--matches", "2", "--field", "greedy"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT,
                         stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stderr[-2000:]
    lines = res.stdout.splitlines()
    assert lines[0].startswith(f"{ROOT / 'bots' / 'ppo_vec_tavern_multi'} against 3x greedy")
    for line, label in zip(lines[1:], ("totals unscaled", "totals scaled"), strict=True):
        assert line.startswith(label) and "rounds 1-5: " in line and "rounds 6-7: " in line
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "long_matches.py"),
                          "no/such/bundle"], capture_output=True, text=True, timeout=300,
                         cwd=ROOT, stdin=subprocess.DEVNULL)
    assert res.returncode == 2 and "bundle no/such/bundle: no such directory" in res.stderr


@pytest.mark.parametrize("script, args, says", [
    ("long_matches", ["bots/ppo_vec_tavern_multi"],
     "trained for preset(s) ['tavern'], not 'culo'"),
    ("long_matches", ["bots/ppo_culo_4p", "--players", "5"], "trained for [4] players, not 5"),
    ("long_matches", ["bots/ppo_vec_tavern_multi", "--rules", "nope"], "unknown preset 'nope'"),
    ("long_matches", ["bots/ppo_vec_tavern_multi", "--rules", "tavern", "--players", "2"],
     "num_players: 2"),
    ("long_matches", ["bots/ppo_vec_tavern_multi", "--rules", "tavern", "--field", "foo"],
     "unknown agent spec 'foo'"),
    ("long_matches", ["bots"], "no manifest.json"),
    ("deviations", ["bots/ppo_vec_tavern_multi"], "trained for preset(s) ['tavern'], not 'culo'"),
    ("deviations", ["expert", "--rules", "nope"], "unknown preset 'nope'"),
    ("deviations", ["expert", "--field", "foo"], "unknown agent spec 'foo'"),
    ("deviations", ["expert", "--deals", "1"], "--deals: at least 2"),
])
def test_scripts_refuse_what_cannot_play_before_any_game(script, args, says, capsys):
    module = load_script(script)
    with pytest.raises(SystemExit) as exc:
        module.main([str(ROOT / a) if a.startswith("bots") else a for a in args])
    out, err = capsys.readouterr()
    assert exc.value.code == 2 and out == ""
    assert ": error: " in err.splitlines()[-1] and says in err


def test_deviations_sum_to_the_tournaments_figure_on_the_same_deals(capsys):
    """The kinds' shares add up to the bot's over-par figure of the tournament with the same
    bots, deals and seed: the script plays the tournament's very games."""
    from train.tournament import run_tournament

    module = load_script("deviations")
    assert module.main(["greedy", "--deals", "12", "--seed", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("greedy against 3x expert, culo, 4 players, 12 deals from seed 3")
    kinds = {line[:44].strip(): line for line in out[2:-1]}
    assert kinds and set(kinds) <= set(module.KINDS) | {module.SAME}
    assert out[-1].startswith("all (over par)") and "100.0%" in out[-1]

    res = run_tournament("culo", ["greedy", "expert"], deals=12, seed=3, players=4, jobs=1,
                         progress=None)
    over_par = float(res.metrics["greedy"]["rank_points"].mean) - 1.5
    assert float(out[-1].split()[-3]) == pytest.approx(over_par, abs=5e-4)
    shares = sum(float(line.split()[-3]) for line in kinds.values())
    assert shares == pytest.approx(over_par, abs=5e-3)  # each share rounded to 3 places


def test_deviations_shows_games_up_to_the_bots_own_move(capsys):
    module = load_script("deviations")
    assert module.main(["greedy", "--deals", "6", "--examples", "1"]) == 0
    shown = capsys.readouterr().out.split("\n\n")[1:]
    assert shown
    kinds = []
    for text in shown:
        lines = text.splitlines()
        kind, rest = lines[0][3:].split(": deal ")
        kinds.append(kind)
        seat = rest.split("the bot in ")[1].split(":")[0]
        assert lines[1].startswith("-- round 1, ") and "dealt:" in lines[1]
        assert lines[-1].startswith(f"   {seat} ")
        assert "<- the bot's own; the field bot: " in lines[-1]
    assert len(kinds) == len(set(kinds)) and set(kinds) <= set(module.KINDS)


def test_deviations_tells_a_lead_from_an_answer_after_a_seat_goes_out():
    module = load_script("deviations")
    events = [{"event": "round"}, {"event": "play", "player": "player_0", "cards": ["AC"]},
              {"event": "out", "player": "player_0"}, {"event": "trick_end"},
              {"event": "play", "player": "player_1", "cards": ["7C"]},
              {"event": "out", "player": "player_1"}, {"event": "play"}]
    assert [module.leading(events, i) for i in (1, 4, 6)] == [True, True, False]


@pytest.mark.parametrize("ours, theirs, leading, kind", [
    ({"event": "pass"}, {"event": "play", "cards": ["9C"]}, False,
     "answer: passes where the field bot plays"),
    ({"event": "play", "cards": ["9C"]}, {"event": "pass"}, False,
     "answer: plays where the field bot passes"),
    ({"event": "play", "cards": ["TC"]}, {"event": "play", "cards": ["9C"]}, False,
     "answer: higher rank"),
    ({"event": "play", "cards": ["7C"]}, {"event": "play", "cards": ["AC"]}, True,
     "lead: lower rank"),
    ({"event": "play", "cards": ["7C", "7D"]}, {"event": "play", "cards": ["AC"]}, True,
     "lead: more cards"),
    ({"event": "play", "cards": ["KC"]}, {"event": "play", "cards": ["8C", "8S"]}, True,
     "lead: fewer cards"),
])
def test_deviations_names_the_kind_of_the_bots_own_move(ours, theirs, leading, kind):
    module = load_script("deviations")
    assert module.move_kind(ours, theirs, leading, list("789TJQKA")) == kind
    assert kind in module.KINDS


class _Drifting:
    """Plays its legal actions in turn, counting on across games: no seed replays it."""

    name = "drifting"

    def __init__(self):
        self.calls = 0

    def act(self, observation, view=None):
        legal = np.flatnonzero(observation["action_mask"])
        self.calls += 1
        return int(legal[self.calls % len(legal)])


def test_deviations_refuses_a_field_bot_that_plays_otherwise_from_the_same_seed():
    from arschloch_env.rules import make_rules

    module = load_script("deviations")
    rules = make_rules("culo", 4, rounds=1)
    with pytest.raises(module.NotReproducible, match="not the bot's"):
        module.deviations([_Drifting(), _Drifting()], rules, deals=5, seed=1)
