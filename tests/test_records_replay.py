"""Game records (INTERFACES.md "Game records"): fields, event order, atomic writing, replay."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

import arschloch_env
from agents.random_agent import RandomAgent
from agents.runner import play_match
from arschloch_env.engine import Game
from arschloch_env.records import RecordError, RecordWriter, read_events, read_matches
from arschloch_env.replay import replay_file, replay_match, replay_matches
from arschloch_env.single import SingleSeatEnv

FIELDS = {
    "match": {"event", "index", "rules", "players", "agents", "seed"},
    "round": {"event", "round", "hands", "leftover", "leader"},
    "leftover_swap": {"event", "player", "take", "lay"},
    "exchange": {"event", "from", "to", "cards"},
    "play": {"event", "player", "cards"},
    "pass": {"event", "player"},
    "trick_end": {"event", "winner"},
    "out": {"event", "player", "place", "reason"},
    "round_end": {"event", "round", "places", "titles", "points", "totals"},
    "match_end": {"event", "totals", "winners"},
}
LETTER = {"match": "M", "round": "R", "leftover_swap": "S", "exchange": "X", "play": "P",
          "pass": "A", "trick_end": "T", "out": "O", "round_end": "E", "match_end": "Z"}
# A match: rounds, each dealt, then swaps (3rd, 4th), exchanges, play, the last out and its end.
GRAMMAR = re.compile(r"M(?:RS{0,2}X{0,4}[PATO]*OE)+Z")
TABLES = [(p, n) for p in ("culo", "culo-points", "culo-ten", "culo-52", "tavern")
          for n in (3, 4, 5, 6)]


def random_match(preset, n, seed, index=0):
    over = {"target_points": 5} if preset == "culo-points" else {"rounds": 3}
    rules = arschloch_env.make_rules(preset, n, **over)
    return play_match(rules, [RandomAgent() for _ in range(n)], seed=seed, match_index=index,
                      record=True, labels=["random"] * n)


def check_structure(events: list[dict]) -> None:
    n = len(events[0]["players"])
    for e in events:
        assert set(e) == FIELDS[e["event"]], e
    kinds = "".join(LETTER[e["event"]] for e in events)
    assert GRAMMAR.fullmatch(kinds), kinds[:200]
    header = events[0]
    assert header["players"] == [f"player_{i}" for i in range(n)]
    assert isinstance(header["seed"], (int, type(None))) and isinstance(header["index"], int)
    assert set(header["rules"]) == {
        "preset", "num_players", "rank_order", "deal", "leftover_swap", "first_leader",
        "no_finish_on_top", "top_card_ends_trick", "exchange_cards", "exchange_cards_3p",
        "vice_exchange_cards", "rounds", "target_points", "winner"}
    for i, e in enumerate(events):
        kind = e["event"]
        nxt = events[i + 1:i + 4]
        if kind == "round":
            assert set(e["hands"]) == set(header["players"])
            assert isinstance(e["leftover"], list) and e["leader"] in header["players"]
        if kind == "play":
            # After a play: the mover's out (if any); then the last one's out and round_end,
            # or a trick_end at once, or the next decision.
            j = 0
            if nxt and nxt[0]["event"] == "out" and nxt[0]["player"] == e["player"]:
                assert nxt[0]["reason"] in ("emptied", "only_top")
                j = 1
            rest = nxt[j:]
            if rest and rest[0]["event"] == "out":
                assert rest[0]["reason"] == "last" and rest[1]["event"] == "round_end"
        if kind == "trick_end":
            assert events[i - 1]["event"] in ("play", "pass", "out")
            if events[i - 1]["event"] == "out":
                assert events[i - 2]["event"] == "play"
        if kind == "out" and e["reason"] == "last":
            assert events[i + 1]["event"] == "round_end"
        if kind == "round_end":
            assert set(e["places"]) == set(e["titles"]) == set(e["points"]) == set(
                e["totals"]) == set(header["players"])
    # Exchanges: Arschloch -> President, President -> Arschloch, then the vices.
    rnd_start = [i for i, e in enumerate(events) if e["event"] == "round"]
    ends = [e for e in events if e["event"] == "round_end"]
    for k, start in enumerate(rnd_start[1:]):
        places = ends[k]["places"]
        seat = {p: s for s, p in places.items()}
        ex = []
        for e in events[start + 1:]:
            if e["event"] in ("play", "pass"):
                break
            if e["event"] == "exchange":
                ex.append((e["from"], e["to"]))
        want = [(seat[n], seat[1]), (seat[1], seat[n])]
        if n >= 4:
            want += [(seat[n - 1], seat[2]), (seat[2], seat[n - 1])]
        assert ex == want
        swaps = [e["player"] for e in events[start + 1:start + 3]
                 if e["event"] == "leftover_swap"]
        assert swaps == [seat[p] for p in (3, 4) if p <= n][:len(swaps)]
    end = events[-1]
    assert end["totals"] == ends[-1]["totals"]
    assert end["winners"] == sorted(end["winners"], key=lambda p: int(p[7:]))


@pytest.mark.parametrize("preset,n", TABLES)
def test_record_fields_and_order(preset, n):
    g = random_match(preset, n, seed=n * 31)
    check_structure(g.events)
    assert g.events[0]["agents"] == {f"player_{i}": "random" for i in range(n)}
    assert g.events[0]["seed"] == n * 31


def test_leftover_swap_and_exchange_events_in_a_culo_record():
    g = random_match("culo", 5, seed=3)
    kinds = [e["event"] for e in g.events]
    second = kinds.index("round", 2)
    assert kinds[second:second + 7] == ["round", "leftover_swap", "leftover_swap", "exchange",
                                        "exchange", "exchange", "exchange"]


# -- writing --------------------------------------------------------------------------------------

def test_writer_is_atomic(tmp_path):
    target = tmp_path / "sub" / "games.jsonl"
    w = RecordWriter(target)
    part = w.tmp
    assert part.parent == target.parent and part.name.startswith("games.jsonl.")
    g1, g2 = random_match("culo", 4, 1), random_match("tavern", 3, 2, index=1)
    w.write_match(g1.events)
    w.write_match(g2.events)
    # Until it is closed only the .part file exists: a crash leaves no half record behind.
    assert part.exists() and not target.exists()
    w.close()
    assert target.exists() and not part.exists()
    assert w.matches == 2
    lines = target.read_text().split("\n")
    assert lines[-1] == "" and all(lines[:-1])            # one object per line, no blank lines
    assert [json.loads(x) for x in lines[:-1]] == g1.events + g2.events
    w.close()                                             # closing twice is harmless


def test_a_record_that_another_writer_is_writing_is_refused(tmp_path):
    # every worker of a vector env given one record path: the last to close would replace the
    # others' matches; the second writer is refused instead, and the first loses nothing
    target = tmp_path / "games.jsonl"
    a = RecordWriter(target)
    with pytest.raises(ValueError, match="being written by another writer.*give each its own file"):
        RecordWriter(target)
    ga = random_match("culo", 4, 1)
    a.write_match(ga.events)
    a.close()
    assert [json.loads(x) for x in target.read_text().splitlines()] == ga.events
    assert list(tmp_path.iterdir()) == [target]
    RecordWriter(target).close()  # closed, it is an earlier record the next writer may replace


def test_a_record_is_not_refused_for_another_records_temporary(tmp_path):
    """games.jsonl.old's temporary also begins with games.jsonl.: it is no writer of
    games.jsonl."""
    other = RecordWriter(tmp_path / "games.jsonl.old")
    with RecordWriter(tmp_path / "games.jsonl") as w:
        w.write_match(random_match("culo", 4, 1).events)
    assert other.tmp.exists()
    other.close()


def test_a_record_written_by_another_process_is_refused(tmp_path):
    import subprocess
    import sys
    target = tmp_path / "games.jsonl"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from arschloch_env.records import RecordWriter; "
         f"w = RecordWriter({str(target)!r}); print('open', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        with pytest.raises(ValueError, match="being written by another writer"):
            RecordWriter(target)
    finally:
        holder.communicate("", timeout=60)
    RecordWriter(target).close()  # the holder has gone: free again


class _DiskFillsUp:
    """A record file whose disk fills up in the middle of the next write (``cut_fails``: and
    cutting the file back fails too)."""

    def __init__(self, fh, cut_fails=False):
        self.fh, self.cut_fails = fh, cut_fails

    def write(self, data):
        self.fh.write(bytes(data[:len(data) // 2]))
        raise OSError(28, "No space left on device")

    def truncate(self, size):
        if self.cut_fails:
            raise OSError(5, "Input/output error")
        return self.fh.truncate(size)

    def __getattr__(self, name):
        return getattr(self.fh, name)


@pytest.mark.parametrize("cut_fails", [False, True])
def test_a_match_the_disk_cannot_hold_never_reaches_the_record(tmp_path, cut_fails):
    """A full disk in the middle of a match: the record keeps the whole matches before it (the
    half match went under the final name, over the earlier record), or, where the half cannot
    be cut off, the earlier record stays as it was."""
    target = tmp_path / "games.jsonl"
    earlier = "".join(json.dumps(e) + "\n" for e in random_match("culo", 4, 3).events)
    target.write_text(earlier)
    g1, g2 = random_match("tavern", 3, 1), random_match("culo", 4, 2)
    w = RecordWriter(target)
    w.write_match(g1.events)
    w._fh = _DiskFillsUp(w._fh, cut_fails)
    with pytest.raises(OSError) as exc:
        with w:
            w.write_match(g2.events)
    assert w.matches == 1
    if cut_fails:
        assert target.read_text() == earlier
        assert "left as it was" in exc.value.__notes__[0]
    else:
        assert [json.loads(x) for x in target.read_text().splitlines()] == g1.events
        assert "holds the 1 match(es) finished before it stopped" in exc.value.__notes__[0]
    assert list(tmp_path.iterdir()) == [target]


def test_writer_replaces_a_record_or_an_empty_file_and_nothing_else(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("algo: ppo-vec\n")
    with pytest.raises(ValueError, match="holds no game record"):
        RecordWriter(config)
    assert config.read_text() == "algo: ppo-vec\n" and list(tmp_path.iterdir()) == [config]
    for target in (tmp_path / "empty.jsonl", tmp_path / "earlier.jsonl"):
        target.write_text("" if target.name == "empty.jsonl"
                          else "".join(json.dumps(e) + "\n"
                                       for e in random_match("culo", 4, 3).events))
        g = random_match("tavern", 3, 4)
        with RecordWriter(target) as w:
            w.write_match(g.events)
        assert [json.loads(x) for x in target.read_text().splitlines()] == g.events


def test_writer_refuses_a_named_pipe_and_writes_through_a_link_keeping_permissions(tmp_path):
    """A pipe (or a device such as /dev/null) is refused, not replaced by a regular file; a
    record reached through a symbolic link is replaced where it lies, the link kept, and a
    record made private stays private."""
    pipe = tmp_path / "pipe.jsonl"
    os.mkfifo(pipe)
    with pytest.raises(ValueError, match="is a named pipe .FIFO., not a regular file"):
        RecordWriter(pipe)
    assert pipe.is_fifo()
    target, link = tmp_path / "target.jsonl", tmp_path / "link.jsonl"
    target.write_text("")
    target.chmod(0o640)
    link.symlink_to(target.name)
    g = random_match("culo", 4, 3)
    with RecordWriter(link) as w:
        w.write_match(g.events)
    assert link.is_symlink() and target.stat().st_mode & 0o777 == 0o640
    assert [json.loads(x) for x in target.read_text().splitlines()] == g.events


def test_a_writer_removes_the_temporaries_that_killed_writers_left(tmp_path):
    import time

    from arschloch_env.records import ABANDONED_AFTER_S

    target = tmp_path / "games.jsonl"
    abandoned = tmp_path / "games.jsonl.k1ll3d_0.part"  # mkstemp's names: 8 characters
    young = tmp_path / "games.jsonl.n3wb0rn0.part"
    other = tmp_path / "other.jsonl.k1ll3d_0.part"  # another record's
    for path in (abandoned, young, other):
        path.write_text("{}\n")
    old = time.time() - ABANDONED_AFTER_S - 5
    for path in (abandoned, other):
        os.utime(path, (old, old))
    with RecordWriter(target) as w:
        w.write_match(random_match("culo", 4, 1).events)
    assert sorted(tmp_path.iterdir()) == sorted([target, young, other])


def test_writer_context_manager_and_directory(tmp_path):
    with RecordWriter(tmp_path / "a.jsonl") as w:
        w.write_match(random_match("culo-ten", 3, 0).events)
    assert (tmp_path / "a.jsonl").exists()
    assert not list(tmp_path.glob("*.part"))
    with pytest.raises(ValueError, match="is a directory"):
        RecordWriter(tmp_path)


def test_writer_without_a_finished_match_leaves_no_file(tmp_path):
    target = tmp_path / "none.jsonl"
    with RecordWriter(target) as w:
        assert w.tmp.exists()
    assert not target.exists() and not w.tmp.exists()
    # an earlier record under the name is neither emptied nor replaced
    earlier = "".join(json.dumps(e) + "\n" for e in random_match("culo", 4, 5).events)
    target.write_text(earlier)
    RecordWriter(target).close()
    assert target.read_text() == earlier and list(tmp_path.iterdir()) == [target]
    # nor the folders it made, while one that something else wrote into stays
    RecordWriter(tmp_path / "new" / "sub" / "x.jsonl").close()
    assert list(tmp_path.iterdir()) == [target]
    writer = RecordWriter(tmp_path / "new" / "sub" / "x.jsonl")
    (tmp_path / "new" / "other.txt").write_text("kept")
    writer.close()
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == ["other.txt"]


def test_aec_env_writes_records(tmp_path):
    path = tmp_path / "aec.jsonl"
    env = arschloch_env.env(rules="tavern", num_players=3, rounds=1, record_path=str(path))
    rng = np.random.default_rng(0)
    for match in range(2):
        env.reset(seed=match if match == 0 else None)
        for agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            env.step(None if term or trunc else int(rng.choice(np.flatnonzero(
                obs["action_mask"]))))
    env.close()
    assert list(tmp_path.iterdir()) == [path]
    matches = list(read_matches(path))
    assert [m[0][1]["index"] for m in matches] == [0, 1]
    assert all(r.ok for r in replay_file(path)) and all(
        r.ok for r in replay_file(path, deals_from_seed=True))
    for m in matches:
        check_structure([e for _, e in m])


def test_single_seat_env_writes_records(tmp_path):
    path = tmp_path / "single.jsonl"
    env = SingleSeatEnv(rules="culo", num_players=4, seat=0, rounds=1, record_path=str(path))
    env.reset(seed=0)
    done = False
    while not done:
        _, _, done, _, _ = env.step(int(np.flatnonzero(env.action_masks())[0]))
    env.close()
    results = replay_file(path)
    assert len(results) == 1 and results[0].ok
    assert replay_file(path, deals_from_seed=True)[0].ok


# -- reading and replaying --------------------------------------------------------------------------

def write_lines(path, events):
    path.write_text("".join(json.dumps(e) + "\n" for e in events))


def test_replay_ok_and_describes_the_game(tmp_path):
    path = tmp_path / "ok.jsonl"
    g1, g2 = random_match("culo-52", 6, 5), random_match("culo-points", 3, 6, index=1)
    write_lines(path, g1.events + g2.events)
    results = replay_file(path)
    assert [r.ok for r in results] == [True, True] and [r.index for r in results] == [0, 1]
    assert results[0].game.events == g1.events
    assert results[0].lines[0].startswith("== match 0 (culo-52")
    assert any("plays" in line for line in results[0].lines)


def test_replay_takes_the_suits_of_a_records_automatic_gifts(tmp_path):
    """The suits of an automatic exchange gift are the giver's choice: a record whose gifts
    chose other suits than this engine would (another version or tool; here the suit orders
    of another seed) replays as long as they are the giver's highest cards by rank."""
    matches = [random_match("culo", n, 40 + n) for n in (3, 4, 5, 6)]
    events = []
    for g in matches:
        assert any(e["event"] == "exchange" for e in g.events)
        events += [dict(e, seed=e["seed"] + 1) if e["event"] == "match" else e
                   for e in g.events]
    path = tmp_path / "other_suits.jsonl"
    write_lines(path, events)
    assert all(r.ok for r in replay_file(path)), [r.error for r in replay_file(path)]


def test_replay_deals_from_the_seed_of_every_kind_of_record_the_kit_writes(tmp_path):
    """Matches of play_match (simulate, tournaments) and of the batched engine (the envs'
    are checked where they are written): each deals what its seed deals, so a replay dealing
    from the seeds gives every event of the record again."""
    from arschloch_env.vector import VectorGame
    path = tmp_path / "m.jsonl"
    write_lines(path, random_match("culo-52", 5, 5).events +
                random_match("culo-points", 3, 6, index=1).events)
    vg = VectorGame("tavern", 4, num_games=4, seed=5, record_path=str(tmp_path / "v.jsonl"),
                    record_games=[1], rounds=2)
    _, mask = vg.reset()
    rng = np.random.default_rng(0)
    for _ in range(400):
        _, mask, _, _ = vg.step(np.array([rng.choice(np.flatnonzero(m)) for m in mask]))
    vg.close()
    for name in ("m", "v"):
        results = replay_file(tmp_path / f"{name}.jsonl", deals_from_seed=True)
        assert results and all(r.ok for r in results), (name, [r.error for r in results])


def test_replay_from_the_seed_catches_a_deal_changed_so_that_the_play_stays_legal(tmp_path):
    """Clubs and hearts swapped in every card of a tavern match (the leader rotates, so no
    suit matters): every move is still legal, and only the deal tells the record from the
    one its seed gave."""
    g = random_match("tavern", 4, 8)
    swapped = [json.loads(json.dumps(e).replace('C"', '#"').replace('H"', 'C"')
                          .replace('#"', 'H"')) if e["event"] != "match" else e
               for e in g.events]
    write_lines(tmp_path / "r.jsonl", swapped)
    assert replay_file(tmp_path / "r.jsonl")[0].ok
    res = replay_file(tmp_path / "r.jsonl", deals_from_seed=True)[0]
    assert not res.ok and res.error_line == 2
    assert res.error.startswith("event 'round' is not what the rules give here: hands: ")
    assert res.error.endswith(f"(dealt from the match's seed {g.events[0]['seed']})")
    zero = play_match(arschloch_env.make_rules("tavern", 4, rounds=2),
                      [RandomAgent() for _ in range(4)], seed=0, record=True)
    write_lines(tmp_path / "z.jsonl", zero.events)  # seed 0 deals like any other
    assert replay_file(tmp_path / "z.jsonl", deals_from_seed=True)[0].ok
    seedless = [{**g.events[0], "seed": None}, *g.events[1:]]
    write_lines(tmp_path / "n.jsonl", seedless)
    res = replay_file(tmp_path / "n.jsonl", deals_from_seed=True)[0]
    assert not res.ok and res.error_line == 1 and "no seed to deal from" in res.error


def first(events, kind, start=0):
    return next(i for i, e in enumerate(events) if i >= start and e["event"] == kind)


def test_replay_corrupted_play_names_the_line(tmp_path):
    g = random_match("culo", 4, 7)
    events = [dict(e) for e in g.events]
    # The first play of round 1 that follows another play: make it a card never dealt to
    # that player (round 1 has no exchange, so the player cannot hold it).
    i = next(i for i in range(1, len(events)) if events[i]["event"] == "play"
             and events[i - 1]["event"] == "play")
    assert i < first(events, "round_end")
    player = events[i]["player"]
    not_held = next(c for c in (r + s for r in "789TJQKA" for s in "CSHD")
                    if c not in events[1]["hands"][player])
    events[i] = {"event": "play", "player": player, "cards": [not_held]}
    path = tmp_path / "bad.jsonl"
    write_lines(path, events)
    res = replay_file(path)[0]
    assert not res.ok and res.error_line == i + 1
    assert f"{player} plays {not_held}" in res.error and f"{player} cannot" in res.error


def test_replay_wrong_player_and_wrong_result(tmp_path):
    g = random_match("tavern", 4, 8)
    events = [dict(e) for e in g.events]
    i = first(events, "pass")
    events[i] = {"event": "pass", "player": "player_9"}
    write_lines(tmp_path / "a.jsonl", events)
    res = replay_file(tmp_path / "a.jsonl")[0]
    assert not res.ok and res.error_line == i + 1 and "player_9" in res.error

    events = [dict(e) for e in g.events]
    j = first(events, "round_end")
    events[j] = {**events[j], "points": {p: 0 for p in events[j]["points"]}}
    write_lines(tmp_path / "b.jsonl", events)
    res = replay_file(tmp_path / "b.jsonl")[0]
    assert not res.ok and res.error_line == j + 1 and "not what the rules give" in res.error


@pytest.mark.parametrize("kind,change,says", [
    ("round_end", lambda e: {**e, "points": {p: float(v) for p, v in e["points"].items()}},
     "points: the record has {\"player_0\": "),
    ("out", lambda e: {**e, "place": True if e["place"] == 1 else e["place"]},
     "place: the record has "),
    ("round", lambda e: {**e, "round": 1.0}, "round: the record has 1.0, the rules give 1"),
])
def test_replay_tells_a_number_from_another_type(tmp_path, kind, change, says):
    """A record's numbers are JSON integers: 1.0 and true are other values, though Python's
    == takes them for 1."""
    events = [dict(e) for e in random_match("culo", 4, 8).events]
    i = first(events, kind)
    if kind == "out":
        i = next(k for k, e in enumerate(events) if e["event"] == "out" and e["place"] == 1)
    events[i] = change(events[i])
    write_lines(tmp_path / "typed.jsonl", events)
    res = replay_file(tmp_path / "typed.jsonl")[0]
    assert not res.ok and res.error_line == i + 1 and says in res.error, res.error


def test_replay_refuses_a_key_given_twice_and_reads_a_pipe(tmp_path):
    import subprocess
    import sys
    events = random_match("culo", 4, 8).events
    lines = [json.dumps(e) for e in events]
    i = first(events, "pass")
    lines[i] = lines[i][:-1] + ', "player": "player_0"}'
    (tmp_path / "twice.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(RecordError, match=rf"twice.jsonl:{i + 1}: found the key 'player' twice"):
        replay_file(tmp_path / "twice.jsonl")
    text = "".join(json.dumps(e) + "\n" for e in events)
    res = subprocess.run([sys.executable, "-m", "arschloch_env.cli", "replay", "--quiet",
                          "/dev/stdin"], input=text, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "every event follows the rules" in res.stdout, res.stderr


def test_replay_names_a_malformed_event_out_of_place_without_failing(tmp_path):
    events = [dict(e) for e in random_match("culo", 4, 8).events]
    i = first(events, "play") + 1
    events.insert(i, {"event": "round_end", "places": 5})
    write_lines(tmp_path / "odd.jsonl", events)
    res = replay_file(tmp_path / "odd.jsonl")[0]
    assert not res.ok and res.error_line == i + 1
    assert res.error.startswith('{"event": "round_end", "places": 5}')


def test_replay_names_an_unknown_event_as_unknown(tmp_path):
    """Not that the rules produce no such event 'here', as of an event out of place."""
    events = [dict(e) for e in random_match("culo", 4, 8).events]
    i = first(events, "play") + 1
    events.insert(i, {"event": "chat", "player": "player_0"})
    write_lines(tmp_path / "chat.jsonl", events)
    res = replay_file(tmp_path / "chat.jsonl")[0]
    assert not res.ok and res.error_line == i + 1
    assert res.error == ('{"event": "chat", "player": "player_0"}: unknown event \'chat\'; a '
                         "record's events are match, round, leftover_swap, exchange, play, pass, "
                         "trick_end, out, round_end, match_end")


@pytest.mark.parametrize("field,value", [
    ("seed", 7.5), ("seed", "abc"), ("index", "abc"), ("agents", ["random"]),
])
def test_replay_names_a_bad_match_header_field(tmp_path, field, value):
    events = [dict(e) for e in random_match("culo", 4, 3).events]
    events[0] = {**events[0], field: value}
    write_lines(tmp_path / "h.jsonl", events)
    res = replay_file(tmp_path / "h.jsonl")[0]
    assert not res.ok and res.error_line == 1
    assert f"match.{field}: {value!r} is not allowed" in res.error


def test_replay_takes_any_integer_seed_and_checks_the_table_size(tmp_path):
    """INTERFACES.md's match.seed is any int or null (another tool's record may hold a
    negative one; the deals come from the record); a header whose players and rules disagree
    says so, not that its agents name an unknown seat."""
    events = [dict(e) for e in random_match("culo", 4, 3).events]
    events[0] = {**events[0], "seed": -7}
    write_lines(tmp_path / "s.jsonl", events)
    res = replay_file(tmp_path / "s.jsonl")[0]
    assert res.ok, res.error
    for seed in ("7", 2.5):  # refused naming what a record's seed may be
        write_lines(tmp_path / "t.jsonl", [{**events[0], "seed": seed}, *events[1:]])
        res = replay_file(tmp_path / "t.jsonl")[0]
        assert not res.ok and res.error_line == 1
        assert f"match.seed: {seed!r} is not allowed; allowed: an integer or null" in res.error
    events[0] = {**events[0], "rules": {**events[0]["rules"], "num_players": 3}}
    write_lines(tmp_path / "n.jsonl", events)
    res = replay_file(tmp_path / "n.jsonl")[0]
    assert not res.ok and res.error_line == 1
    assert "match.players: 4 players, but the rules say num_players 3" in res.error


@pytest.mark.parametrize("field,value", [
    ("match_index", -1), ("match_index", 1.7), ("match_index", "2"), ("seed", -3),
    ("seed", 2.5), ("agents", {"player_9": "random"}), ("agents", {"player_0": 3}),
    ("agents", ["random"]),
])
def test_game_refuses_what_a_record_cannot_hold(field, value):
    """A game writes its seed, match index and agents into its record: values that replay
    would refuse (an index below 0, a truncated float, agents of no seat) are refused up
    front, by the same check."""
    record_field = {"match_index": "index"}.get(field, field)
    with pytest.raises(ValueError, match=rf"match\.{record_field}: .* is not allowed"):
        Game("culo", record=True, **{"seed": 1, field: value})


def test_replay_bad_deal_and_early_end(tmp_path):
    g = random_match("culo", 3, 9)
    events = [dict(e) for e in g.events]
    hands = {p: list(h) for p, h in events[1]["hands"].items()}
    hands["player_0"][0] = hands["player_1"][0]
    events[1] = {**events[1], "hands": hands}
    write_lines(tmp_path / "deal.jsonl", events)
    res = replay_file(tmp_path / "deal.jsonl")[0]
    # the round event's line, which holds the deal, not the match header's
    assert not res.ok and res.error_line == 2 and "more than once" in res.error
    assert res.error.startswith("round 1: ")

    events = [dict(e) for e in g.events]
    k = first(events, "round_end")
    cut = events[:k - 3] + [events[-1]]
    write_lines(tmp_path / "early.jsonl", cut)
    res = replay_file(tmp_path / "early.jsonl")[0]
    assert not res.ok and res.error_line is not None


def test_replay_names_a_wrong_return_an_unknown_player_and_a_match_cut_short():
    """Each fault is named as what it is. The engine would refuse most of these records
    anyway, but a step later and in words about another move: a return of the wrong size
    (the engine would wait for one more card, or take the extra one as the next give), a
    return to the wrong seat, or a player not at the table. A match whose events stop
    before the end (a list given to ``replay_match`` without its last events) names what
    the rules go on with."""
    g = random_match("culo", 4, 7)  # three rounds: exchanges from round 2 on
    base = json.loads(json.dumps(g.events))
    i = first(base, "exchange") + 1  # the President's return, after the Arschloch's gift
    giver, taker = base[i]["from"], base[i]["to"]
    assert base[i - 1] == {**base[i - 1], "from": taker, "to": giver}
    count = len(base[i]["cards"])
    other = next(f"player_{s}" for s in range(4) if f"player_{s}" not in (giver, taker))
    j = first(base, "pass")
    for line, edit, words in [
        (i, lambda ev: ev[i].update(cards=ev[i]["cards"][:-1]),
         f"{giver} must return exactly {count} card(s)"),
        (i, lambda ev: ev[i].update(cards=ev[i]["cards"] + ev[i]["cards"][:1]),
         f"{giver} must return exactly {count} card(s)"),
        (i, lambda ev: ev[i].update(to=other), f"the return goes to {taker}, not {other}"),
        (j, lambda ev: ev[j].update(player="player_7"),
         "unknown player 'player_7' (players: player_0..player_3)"),
    ]:
        events = json.loads(json.dumps(base))
        edit(events)
        res = replay_match(list(enumerate(events, 1)))
        assert not res.ok and res.error_line == line + 1 and words in res.error, res.error
    res = replay_match(list(enumerate(base[:-3], 1)))
    assert not res.ok and res.error_line == len(base) - 3
    assert res.error.startswith("the record ends early; the rules continue with {'event': "), \
        res.error


@pytest.mark.parametrize("change,words", [
    (dict(cards=[7]), "card 7: expected two characters"),      # a number, not a card
    (dict(cards=7), "its 'cards' must be a list of 1 to 4 cards, got 7"),
    (dict(cards="7C"), "its 'cards' must be a list of 1 to 4 cards, got '7C'"),
    (dict(cards=None), "its 'cards' must be a list of 1 to 4 cards, got nothing"),
    (dict(cards=[]), "a play needs 1 to 4 cards"),
    (dict(cards=["7C", "7S", "7H", "7D", "8C"]), "a play needs 1 to 4 cards"),
])
def test_replay_play_with_cards_that_are_not_text(tmp_path, change, words):
    g = random_match("culo", 4, 7)
    events = [dict(e) for e in g.events]
    i = first(events, "play")
    events[i].update(change)
    write_lines(tmp_path / "bad.jsonl", events)
    res = replay_file(tmp_path / "bad.jsonl")[0]
    assert not res.ok and res.error_line == i + 1 and words in res.error


@pytest.mark.parametrize("giver", [["player_0"], {"p": 1}, 3, None])
def test_replay_exchange_from_that_is_not_a_name(tmp_path, giver):
    g = random_match("culo", 4, 7)
    events = [dict(e) for e in g.events]
    i = first(events, "exchange")
    events[i]["from"] = giver
    write_lines(tmp_path / "bad.jsonl", events)
    res = replay_file(tmp_path / "bad.jsonl")[0]
    assert not res.ok and res.error_line == i + 1


@pytest.mark.parametrize("change,words", [
    (dict(hands=7), "hands: 7 is not a mapping"),
    (dict(hands={"player_0": 7}), "is not a mapping of each player to a list"),
    (dict(leftover=None), "leftover: None is not a list"),
    ("hands", "hands missing (the deal of the round)"),
    ("leftover", "leftover missing"),
    ("duplicate", "appear more than once"),  # found by the engine as it deals round 2
    ("sizes", "hand sizes"),
])
def test_replay_later_round_with_a_malformed_deal(tmp_path, change, words):
    g = random_match("culo", 4, 7)  # three rounds: the engine deals round 2 mid-replay
    events = [dict(e) for e in g.events]
    i = first(events, "round", first(events, "round_end"))
    hands = {p: list(h) for p, h in events[i]["hands"].items()}
    if change == "duplicate":
        hands["player_0"][0] = hands["player_1"][0]
        events[i]["hands"] = hands
    elif change == "sizes":
        hands["player_0"].append(hands["player_1"].pop())
        events[i]["hands"] = hands
    elif isinstance(change, str):
        del events[i][change]
    else:
        events[i].update(change)
    write_lines(tmp_path / "bad.jsonl", events)
    res = replay_file(tmp_path / "bad.jsonl")[0]
    assert not res.ok and res.error_line == i + 1
    assert res.error.startswith("round 2: ") and words in res.error


@pytest.mark.parametrize("text,words", [
    ('{"event": "match"}\n\n', "blank line"),
    ('{"event": "match", "index": 0\n', "not valid JSON"),
    ("[1, 2]\n", "not a game event"),
    ('{"kind": "play"}\n', "not a game event"),
    ('{"event": "play", "player": "player_0", "cards": ["7C"]}\n', "outside a match"),
])
def test_malformed_record_files(tmp_path, text, words):
    path = tmp_path / "x.jsonl"
    path.write_text(text)
    with pytest.raises(RecordError) as e:
        replay_file(path)
    msg = str(e.value)
    assert words in msg and (f"{path}:1:" in msg or f"{path}:2:" in msg)


def test_an_empty_record_or_a_directory_is_an_error_not_a_clean_replay(tmp_path):
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(RecordError, match="holds no match"):
        replay_file(tmp_path / "empty.jsonl")
    with pytest.raises(RecordError, match="is a directory, not a file"):
        list(read_events(tmp_path))


def test_a_record_names_no_file_but_a_record_or_an_empty_one(tmp_path):
    """One JSON object on a line is not yet a record: its first event must be a match."""
    from arschloch_env.records import check_record_path
    config = tmp_path / "config.json"
    config.write_text('{"preset": "culo", "num_players": 4}\n')
    with pytest.raises(ValueError, match="holds no game record"):
        check_record_path(config)
    with pytest.raises(ValueError, match="is a character device, not a regular file"):
        check_record_path("/dev/null")  # refused before anything is opened


def test_a_new_record_has_the_permissions_the_umask_gives(tmp_path):
    old = os.umask(0o022)
    try:
        with RecordWriter(tmp_path / "new.jsonl") as w:
            w.write_match(random_match("culo", 4, 3).events)
    finally:
        os.umask(old)
    assert (tmp_path / "new.jsonl").stat().st_mode & 0o777 == 0o644


def test_replay_takes_the_leftover_cards_in_any_order():
    """Card lists are compared as sets: a record that lists the left-over cards in another
    order than the engine is the same record."""
    g = random_match("culo", 5, 2)
    events = [dict(e) for e in g.events]
    i = first(events, "round")
    assert len(events[i]["leftover"]) == 2
    events[i]["leftover"] = events[i]["leftover"][::-1]
    assert replay_match(list(enumerate(events, 1))).ok


def test_text_nested_too_deeply_is_a_clean_error_in_records_configs_and_bundles(tmp_path):
    """Python's parsers recurse once per level: a record line, a config, a rules file or a
    manifest of a hundred thousand nested lists is refused as unreadable, not a crash."""
    import yaml

    from agents.bundle import BundleError, read_manifest
    from arschloch_env.rules import RulesError, make_rules
    from arschloch_env.unique_keys import load_yaml
    deep = "[" * 100_000 + "]" * 100_000 + "\n"
    record = tmp_path / "deep.jsonl"
    record.write_text(deep)
    with pytest.raises(RecordError, match="deep.jsonl:1: nested too deeply"):
        list(read_events(record))
    with pytest.raises(yaml.YAMLError, match="nested too deeply"):
        load_yaml(deep)
    for name in ("deep.json", "deep.yaml"):
        (tmp_path / name).write_text(deep)
        with pytest.raises(RulesError, match="cannot be parsed as (JSON|YAML): nested too "
                                             "deeply"):
            make_rules(str(tmp_path / name))
    (tmp_path / "bot").mkdir()
    (tmp_path / "bot" / "manifest.json").write_text(deep)
    with pytest.raises(BundleError, match="manifest.json is damaged .nested too deeply"):
        read_manifest(tmp_path / "bot")


def test_replay_reports_a_broken_match_before_a_damaged_line_further_on(tmp_path, capsys):
    """Matches are re-played as they are read: a rule broken in the first is reported (exit
    1), not hidden behind a cut line at the end of the file (which alone exits 2)."""
    from arschloch_env.cli import main
    first_match = [dict(e) for e in random_match("culo", 4, 8).events]
    j = first(first_match, "round_end")
    first_match[j] = {**first_match[j], "points": {p: 0 for p in first_match[j]["points"]}}
    text = "".join(json.dumps(e) + "\n" for e in first_match + random_match("culo", 4, 9,
                                                                          index=1).events)
    (tmp_path / "cut.jsonl").write_text(text[:-20])
    assert main(["replay", "--quiet", str(tmp_path / "cut.jsonl")]) == 1
    assert f"cut.jsonl:{j + 1}: match 0: event 'round_end'" in capsys.readouterr().err


def test_an_empty_record_file_name_is_named_as_empty(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RecordError, match="record file name is empty"):
        replay_file("")


def test_truncated_record(tmp_path):
    g = random_match("culo", 4, 10)
    text = "".join(json.dumps(e) + "\n" for e in g.events)
    path = tmp_path / "t.jsonl"
    path.write_text(text[: len(text) // 2].rsplit("\n", 1)[0] + "\n")
    with pytest.raises(RecordError, match="has no match_end; the file is truncated"):
        replay_file(path)
    # a whole match, then half of the next (cut at a line's end): the first is replayed, then
    # the reading fails where the second breaks off
    second = "".join(json.dumps(e) + "\n" for e in random_match("culo", 4, 12).events)
    path.write_text(text + second[: len(second) // 2].rsplit("\n", 1)[0] + "\n")
    matches = replay_matches(path)
    assert next(matches).ok
    with pytest.raises(RecordError, match="has no match_end; the file is truncated"):
        next(matches)
    path.write_text(text[: len(text) // 2])                # cut in the middle of a line
    with pytest.raises(RecordError, match="not valid JSON|truncated"):
        replay_file(path)
    with pytest.raises(RecordError, match="does not exist"):
        list(read_events(tmp_path / "missing.jsonl"))


def test_a_field_missing_or_added_with_a_null_value_is_a_difference():
    """A null-valued field and no field are not the same record: a seedless match whose
    header lost its ``seed``, or an event with an extra null field, does not replay."""
    rules = arschloch_env.make_rules("culo", 4, rounds=1)
    g = play_match(rules, [RandomAgent() for _ in range(4)], seed=None, record=True,
                   labels=["random"] * 4)
    assert g.events[0]["seed"] is None
    for edit, says in [(lambda ev: ev[0].pop("seed"), "seed: the record has none"),
                       (lambda ev: next(e for e in ev if e["event"] == "play")
                        .update(bogus=None), "bogus: the record has null, the rules give none")]:
        events = json.loads(json.dumps(g.events))
        edit(events)
        res = replay_match(list(enumerate(events, 1)))
        assert not res.ok and says in res.error, res.error


def test_new_match_before_end(tmp_path):
    g = random_match("culo", 4, 11)
    path = tmp_path / "m.jsonl"
    write_lines(path, g.events[:5] + g.events)
    with pytest.raises(RecordError, match="a new match starts before"):
        replay_file(path)


def test_replay_match_rebuilds_identical_game():
    g = Game("culo-ten", num_players=5, seed=12, rounds=2, record=True)
    rng = np.random.default_rng(1)
    while not g.is_over:
        acts = g.legal_actions()
        g.step(acts[int(rng.integers(len(acts)))])
    res = replay_match(list(enumerate(g.events, 1)))
    assert res.ok and res.game.events == g.events
    assert res.game.round_places == g.round_places


def test_every_env_refuses_an_empty_record_path():
    """The AEC env and the single-seat env recorded nothing, silently, where the batched
    engine and --record refuse it: an empty name is a mistake, not 'do not record'."""
    import arschloch_env
    from arschloch_env.single import SingleSeatEnv
    from arschloch_env.vector import VectorGame

    for make in (lambda: arschloch_env.env(rules="culo", record_path=""),
                 lambda: SingleSeatEnv(rules="culo", record_path=""),
                 lambda: VectorGame("culo", 4, num_games=2, record_path="", record_games=[0])):
        with pytest.raises(ValueError, match="record path is empty; give a file name"):
            make()
