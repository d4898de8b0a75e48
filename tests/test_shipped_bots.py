"""The bundles shipped in bots/: complete, legal at every table size
they were trained for, and the evaluation script that produces their figures."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from arschloch_env.observation import Layout
from train.tournament import run_tournament

ROOT = Path(__file__).resolve().parents[1]


def first_observation(rules: str, players: int) -> dict:
    """The AEC observation of the first seat to act in the match of seed 0."""
    import arschloch_env

    env = arschloch_env.env(rules=rules, num_players=players)
    env.reset(seed=0)
    return env.observe(env.agent_selection)


def shipped_bundles() -> list[Path]:
    """The bundles in bots/ that git tracks: a user's own export there (the README suggests
    bots/NAME) is not one of the shipped bots. Outside a git checkout, every bundle."""
    bundles = sorted(p for p in (ROOT / "bots").iterdir() if (p / "manifest.json").is_file())
    try:
        listed = subprocess.run(["git", "ls-files", "bots"], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return bundles
    tracked = {Path(f).parts[1] for f in listed if len(Path(f).parts) > 2}
    return [p for p in bundles if p.name in tracked]


SHIPPED = shipped_bundles()


def test_there_is_a_bot_per_deck_family():
    presets = {json.loads((p / "manifest.json").read_text())["rules"]["preset"]
               for p in SHIPPED}
    assert {"culo", "tavern"} <= presets


@pytest.mark.parametrize("bot", SHIPPED, ids=[p.name for p in SHIPPED])
def test_bundle_is_complete(bot):
    manifest = json.loads((bot / "manifest.json").read_text())
    assert (bot / manifest["policy"]["file"]).is_file()
    for name in ("EVALUATION.md", "learning_curves.png"):
        assert (bot / name).is_file(), f"{bot.name}: {name} is missing"
    text = (bot / "EVALUATION.md").read_text()
    assert "arschloch tournament" in text or "evaluate_bot.py" in text, \
        f"{bot.name}: EVALUATION.md must name the commands behind its figures"


@pytest.mark.train_extra
@pytest.mark.parametrize("bot", SHIPPED, ids=[p.name for p in SHIPPED])
def test_bundle_graph_has_the_oldest_ir_version_its_opset_allows(bot):
    """onnxruntime refuses an IR version newer than it knows, though it runs every operator
    of the opset: a graph stamped with the exporting onnx's newest IR would not load in the
    oldest onnxruntime the project supports."""
    import onnx
    from onnx import helper

    model = onnx.load(str(bot / "policy.onnx"))
    assert model.ir_version == helper.find_min_ir_version_for(list(model.opset_import))


@pytest.mark.parametrize("bot", SHIPPED, ids=[p.name for p in SHIPPED])
def test_bundle_graph_run_directly_answers_no_action_for_a_row_it_cannot_answer(bot):
    """A server that feeds policy.onnx by hand gets NO_ACTION (never an action id) for a mask
    with no legal action or an observation that is not finite, and the best legal action
    of every other row of the same batch. An ArgMax alone answered 0 there, a pass."""
    import onnxruntime as ort

    from agents.bundle import NO_ACTION, load_bundle

    agent = load_bundle(bot)
    session = ort.InferenceSession(str(bot / "policy.onnx"), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    x = rng.random((5, agent.input_size), dtype=np.float32)
    mask = (rng.random((5, agent.num_actions)) < 0.5).astype(np.int8)
    mask[:, 1] = 1
    mask[1] = 0
    x[2, 7], x[3, 0] = np.nan, -np.inf
    action, logits = session.run(["action", "logits"], {"observation": x, "action_mask": mask})
    assert action[1:4].tolist() == [NO_ACTION] * 3
    for row in (0, 4):
        assert action[row] == np.where(mask[row] > 0, logits[row], -np.inf).argmax()


@pytest.mark.parametrize("bot", SHIPPED, ids=[p.name for p in SHIPPED])
def test_bundle_policy_is_its_graph_on_the_observations_leading_values(bot):
    """A bundle of an older observation layout reads the leading values of today's
    observation (the layouts only ever append): its answers are the graph's on them, in the
    positions of real games."""
    import onnxruntime as ort

    from agents.bundle import load_bundle
    from arschloch_env.engine import Game
    from arschloch_env.observation import Encoder
    from arschloch_env.rules import make_rules

    agent = load_bundle(bot)
    session = ort.InferenceSession(str(bot / "policy.onnx"), providers=["CPUExecutionProvider"])
    manifest = json.loads((bot / "manifest.json").read_text())
    rules = make_rules(manifest["rules"]["preset"], manifest["players"][0], rounds=1)
    obs, masks = [], []
    for seed in range(3):
        game = Game(rules, seed=seed, auto_pass=True)
        encoder = Encoder(game.R)
        while game.phase != "over":
            o = encoder.observation(game, game.current)
            obs.append(o["observation"])
            masks.append(o["action_mask"])
            game.step(int(np.flatnonzero(o["action_mask"])[0]))
    x, m = np.array(obs), np.array(masks)
    assert x.shape[1] >= agent.input_size
    action, logits = agent.policy(x, m)
    want_action, want_logits = session.run(["action", "logits"], {
        "observation": np.ascontiguousarray(x[:, :agent.input_size]), "action_mask": m})
    assert action.tolist() == want_action.tolist()
    assert np.array_equal(logits, want_logits)


@pytest.mark.parametrize("bot", SHIPPED, ids=[p.name for p in SHIPPED])
def test_bundle_plays_every_table_size_it_was_trained_for(bot):
    manifest = json.loads((bot / "manifest.json").read_text())
    for n in manifest["players"]:
        res = run_tournament(manifest["rules"]["preset"], [str(bot), "greedy"], deals=3,
                             seed=1, jobs=1, players=n)
        assert res.complete and res.games == 3 * n


def test_evaluation_script_writes_tables_and_goals(tmp_path):
    bot = next(b for b in SHIPPED  # one that plays the other table sizes too
               if {3, 4, 5} <= set(json.loads((b / "manifest.json").read_text())["players"]))
    out = tmp_path / "eval"
    cmd = [sys.executable, str(ROOT / "scripts" / "evaluate_bot.py"), str(bot),
           "--out", str(out), "--deals", "4", "--greedy-deals", "2",
           "--mc-deals", "0", "--other-deals", "2",
           "--jobs", "1"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-2000:]
    text = (out / "evaluation.md").read_text()
    assert "| 4 | expert | 4 |" in text and "goal (4 players)" in text
    assert "over par against 3x expert" in text
    assert "Ladder step, the same 4 4-player deals" in text  # by default the deals of expert
    # the goals checked again at the other table sizes, against their own ladder step
    for n in (3, 5):
        assert f"| goal ({n} players) |" in text and f"over par against {n - 1}x expert" in text
        assert f"Ladder step, the same 2 {n}-player deals: expert against {n - 1}x greedy" in text
    assert text.index("goal (4 players)") < text.index("goal (3 players)")
    # a second run reads the finished tournaments instead of playing them again
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert again.returncode == 0 and "deals ..." not in again.stdout
    # ... only for the same policy: the cache is keyed on the bundle's checksum
    sha = json.loads((bot / "manifest.json").read_text())["policy"]["sha256"]
    key = json.loads((out / f"4p_{bot.name}_vs_expert" / "key.json").read_text())
    assert key["candidate"] == sha and key["deals"] == 4
    # ... and for the same code: results of an expert that played otherwise do not stand
    key_path = out / f"4p_{bot.name}_vs_expert" / "key.json"
    key_path.write_text(json.dumps({**key, "code": "the code of an earlier expert"}))
    third = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert third.returncode == 0 and f"{bot} vs 3x expert: 4 deals ..." in third.stdout


def test_bundle_act_refuses_an_observation_of_another_deck():
    from agents.bundle import BundleError, load_bundle
    from arschloch_env.engine import Game
    from arschloch_env.observation import Encoder
    from arschloch_env.rules import make_rules

    culo = load_bundle(ROOT / "bots" / "ppo_vec_culo_expert")
    game = Game(make_rules("tavern", 4), seed=1)
    observation = Encoder(game.R).observation(game, game.current)  # 593 values, 79 actions
    with pytest.raises(BundleError, match="given observations of 593 values and masks of 79 "
                                          "actions; it plays 413 and 49"):
        culo.act(observation, None)  # without reset(), which checks the rules themselves
    game = Game(make_rules("culo", 4), seed=1)
    assert culo.act(Encoder(game.R).observation(game, game.current), None) in \
        game.legal_actions()


def test_bundle_policy_takes_lists():
    from agents.bundle import load_bundle

    o = first_observation("culo", 4)
    bot = load_bundle(ROOT / "bots" / "ppo_vec_culo_expert")
    arrays = bot.policy(o["observation"][None], o["action_mask"][None])
    lists = bot.policy([o["observation"].tolist()], [o["action_mask"].tolist()])
    assert np.array_equal(arrays[0], lists[0]) and np.allclose(arrays[1], lists[1])


def test_bundle_act_takes_a_json_decoded_observation_and_names_a_non_numeric_one():
    """A game server's observation arrives as JSON: lists, not arrays. Values that are no
    numbers are a BundleError, not numpy's or a TypeError from indexing a list."""
    import json as json_module

    from agents.bundle import BundleError, load_bundle

    o = first_observation("culo", 4)
    bot = load_bundle(ROOT / "bots" / "ppo_vec_culo_expert")
    decoded = json_module.loads(json_module.dumps({k: v.tolist() for k, v in o.items()}))
    assert bot.act(decoded, None) == bot.act(o, None)
    with pytest.raises(BundleError, match="observations and masks must be numbers"):
        bot.act({"observation": "abc", "action_mask": decoded["action_mask"]}, None)
    for text in ([str(v) for v in decoded["observation"]], None):  # numpy parses "0.5"
        with pytest.raises(BundleError, match="observations and masks must be numbers"):
            bot.act({"observation": text, "action_mask": decoded["action_mask"]}, None)
    with pytest.raises(BundleError, match="observations and masks must be numbers"):
        bot.policy([decoded["observation"], decoded["observation"][:-1]],
                   [decoded["action_mask"]] * 2)


def test_bundle_act_refuses_a_batch_and_policy_a_row_it_has_no_logits_for():
    import arschloch_env
    from agents.bundle import BundleError, load_bundle

    env = arschloch_env.env(rules="culo", num_players=4)
    env.reset(seed=2)
    obs, *_ = env.last()
    bot = load_bundle(ROOT / "bots" / "ppo_vec_culo_expert")  # relu: no saturation
    batch = {"observation": np.stack([obs["observation"]] * 2),
             "action_mask": np.stack([obs["action_mask"]] * 2)}
    with pytest.raises(BundleError, match=r"act takes one seat's observation, a vector, got "
                                          r"shape \[2, \d+\]; for a batch of them call policy"):
        bot.act(batch, None)
    far = obs["observation"].copy()
    far[0] = 3e38  # finite, and the logits overflow to NaN
    with pytest.raises(BundleError, match=r"no finite logits for observation row\(s\) \[1\]"):
        bot.policy(np.stack([obs["observation"], far]), batch["action_mask"])


@pytest.mark.parametrize("name,rules", [("ppo_vec_culo_expert", "culo"),
                                        ("ppo_vec_tavern_multi", "tavern")])
def test_overflowing_logits_are_refused_whatever_action_the_graph_names(name, rules):
    """On NaN logits a graph exported before the graph's own check names an action anyway
    (culo's a pass, tavern's a legal lead here): the logits themselves are checked, at a lead
    and where a pass is legal."""
    from agents.bundle import BundleError, load_bundle

    obs = first_observation(rules, 4)
    bot = load_bundle(ROOT / "bots" / name)
    far = obs["observation"].copy()
    far[0] = 3e38
    for pass_legal in (False, True):
        masks = np.stack([obs["action_mask"]] * 2)
        masks[:, 0] |= pass_legal
        with pytest.raises(BundleError, match=r"no finite logits for observation row\(s\) \[1\]"):
            bot.policy(np.stack([obs["observation"], far]), masks)


def test_bundle_policy_needs_one_mask_per_observation():
    from agents.bundle import BundleError, load_bundle

    o = first_observation("culo", 4)
    bot = load_bundle(ROOT / "bots" / "ppo_vec_culo_expert")
    with pytest.raises(BundleError, match=r"observations of shape \[3, 413\] and masks of "
                                          r"shape \[2, 49\]; give one mask per observation"):
        bot.policy(np.stack([o["observation"]] * 3), np.stack([o["action_mask"]] * 2))


@pytest.mark.parametrize("mask, message", [
    ("zeros", r"mask row\(s\) \[0\] have no legal action \(all 0\)"),
    ("halves", r"mask values must be 0 or 1 \(1 for a legal action\), found 0.5"),
    ("256", r"mask values must be 0 or 1 \(1 for a legal action\), found 256"),
])
def test_bundle_refuses_a_mask_that_would_make_it_answer_an_illegal_action(mask, message):
    """The int8 cast turns 0.5 or 256 into 0: each mask reaches the graph with no legal
    action, which it cannot answer (``NO_ACTION``); act names what is wrong instead."""
    from agents.bundle import BundleError, load_bundle

    o = first_observation("culo", 4)
    assert o["action_mask"][0] == 0  # the leader of the first trick may not pass
    given = {"zeros": np.zeros(49, np.int8), "halves": o["action_mask"] * 0.5,
             "256": o["action_mask"].astype(np.int64) * 256}[mask]
    bot = load_bundle(ROOT / "bots" / "ppo_vec_culo_expert")
    with pytest.raises(BundleError, match=message):
        bot.act({"observation": o["observation"], "action_mask": given}, None)
    assert o["action_mask"][bot.act(o, None)] == 1
    assert bot.act({"observation": o["observation"],
                    "action_mask": o["action_mask"].astype(bool)}, None) == bot.act(o, None)


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_bundle_refuses_an_observation_that_is_not_finite(value):
    """The graph answers such a row with ``NO_ACTION``; policy names the row and why."""
    from agents.bundle import BundleError, load_bundle

    o = first_observation("culo", 4)
    bot = load_bundle(ROOT / "bots" / "ppo_vec_culo_expert")
    rows = np.stack([o["observation"]] * 2)
    rows[1, 5] = value
    with pytest.raises(BundleError, match=r"observation row\(s\) \[1\] hold NaN or infinite"):
        bot.policy(rows, np.stack([o["action_mask"]] * 2))


def test_bundle_act_checks_the_views_rules_where_reset_was_never_called():
    """The agent protocol's reset is optional: a server that passes the view but never calls
    it gets the refusal reset would give, not a culo bot playing culo-ten's deck (the same
    size, another rank order) in silence."""
    import arschloch_env
    from agents import make_agent
    from agents.bundle import BundleError

    bot = make_agent(str(ROOT / "bots" / "ppo_vec_culo_expert"))
    env = arschloch_env.env(rules="culo-ten", num_players=4)
    env.reset(seed=0)
    observation = env.last()[0]
    with pytest.raises(BundleError, match="not 'culo-ten'"):
        bot.act(observation, env.view())
    # no view, nothing to check against (reset's business): a move of culo-ten's mask
    assert observation["action_mask"][bot.act(observation, None)] == 1
    env = arschloch_env.env(rules="culo", num_players=4)
    env.reset(seed=0)
    assert bot.act(env.last()[0], env.view()) in {m["id"] for m in env.view()["legal"]}
    # the next match at the same table under rules it was not trained with
    env = arschloch_env.env(rules="culo", num_players=4, no_finish_on_top=False)
    env.reset(seed=0)
    with pytest.raises(BundleError, match="no_finish_on_top=False"):
        bot.act(env.last()[0], env.view())


def test_a_bundle_refusing_the_rules_at_reset_says_so_as_the_bundles_error():
    """play_match resets every agent first: a bundle given rules it was not trained for
    raises its own BundleError (the commands print it as a usage error), not a failure of
    the agent with a traceback."""
    from agents.bundle import BundleError
    from agents.runner import play_match

    bundle = str(ROOT / "bots" / "ppo_vec_culo_expert")
    with pytest.raises(BundleError, match=r"trained for preset\(s\) \['culo'.*not 'tavern'"):
        play_match("tavern", [bundle, "random", "random", "random"], seed=0)


def test_a_bundle_refuses_a_table_size_it_was_not_trained_for():
    from agents.bundle import BundleError, check_rules, load_bundle
    from arschloch_env.rules import make_rules

    bot = load_bundle(ROOT / "bots" / "ppo_culo_4p")
    assert bot.manifest["players"] == [4] and bot.supports(make_rules("culo", 4).to_dict())
    with pytest.raises(BundleError, match=r"trained for \[4\] players, not 5"):
        check_rules(bot.manifest, make_rules("culo", 5))
    assert not bot.supports(make_rules("culo", 5).to_dict())


def test_bundle_takes_a_rules_object_and_names_a_bare_vector():
    from agents.bundle import BundleError, load_bundle
    from arschloch_env.engine import Game
    from arschloch_env.observation import Encoder
    from arschloch_env.rules import make_rules

    culo = load_bundle(ROOT / "bots" / "ppo_vec_culo_expert")
    rules = make_rules("culo", 4)
    culo.reset(rules, 0)  # a Rules object, as env.unwrapped.rules is
    assert culo.supports(rules) and not culo.supports(make_rules("tavern", 4))
    with pytest.raises(BundleError, match="not 'tavern'"):
        culo.reset(make_rules("tavern", 4), 0)
    with pytest.raises(BundleError, match="rules must be the rules dict"):
        culo.reset("culo", 0)
    game = Game(rules, seed=1)
    observation = Encoder(game.R).observation(game, game.current)
    with pytest.raises(BundleError, match="act takes the AEC env's observation, a dict"):
        culo.act(observation["observation"], None)  # a SingleSeatEnv observation


@pytest.mark.parametrize("section,value", [
    ("observation", "x"), ("rules", [1]), ("policy", "policy.onnx"), ("actions", 3),
    ("players", "4"), ("rules", {"preset": "culo"}),
])
def test_a_manifest_with_a_damaged_section_says_which(tmp_path, section, value):
    from agents.bundle import BundleError, load_bundle

    bundle = tmp_path / "bot"
    bundle.mkdir()
    source = ROOT / "bots" / "ppo_vec_culo_expert"
    (bundle / "policy.onnx").write_bytes((source / "policy.onnx").read_bytes())
    manifest = json.loads((source / "manifest.json").read_text())
    manifest[section] = value
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(BundleError, match=f"manifest.json is damaged: missing or wrong "
                                          f"{section}"):
        load_bundle(bundle)


@pytest.mark.parametrize("entry", [
    {"sha256": "0" * 64}, {"file": "policy.onnx"}, {"file": "/etc/passwd", "sha256": "0"},
    {"file": "../policy.onnx", "sha256": "0"}, {"file": "..", "sha256": "0"},
], ids=["no-file", "no-sha256", "absolute", "outside", "dot-dot"])
def test_a_policy_entry_without_its_file_and_checksum_or_outside_the_bundle_is_refused(
        tmp_path, entry):
    """Each policy file is named by a file of the bundle directory and its sha256; anything
    else is a damaged manifest (not a KeyError at load, nor a file read from elsewhere)."""
    from agents.bundle import BundleError, load_bundle

    bundle = edited_copy(tmp_path, lambda m: m.update(policy=entry))
    with pytest.raises(BundleError, match=r"manifest.json is damaged: missing or wrong policy "
                                          r"\(expected a JSON object with file, a file name "
                                          r"in the bundle, and sha256\)"):
        load_bundle(bundle)


def edited_copy(tmp_path: Path, edit, name: str = "ppo_vec_culo_expert") -> Path:
    """A copy of a shipped bundle (by default the culo one, layout version 2: 413 values, 49
    actions) whose manifest ``edit(manifest)`` has changed by hand."""
    bundle = tmp_path / "bot"
    bundle.mkdir(parents=True)
    source = ROOT / "bots" / name
    (bundle / "policy.onnx").write_bytes((source / "policy.onnx").read_bytes())
    manifest = json.loads((source / "manifest.json").read_text())
    edit(manifest)
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    return bundle


def as_version_1(manifest):
    """Layout version 1 throughout: in itself a consistent manifest, of a 297-value policy."""
    keep = [name for name, _ in manifest["observation"]["layout"]].index("seat_total") + 1
    manifest["observation"].update(version=1, size=297,
                                   layout=manifest["observation"]["layout"][:keep])


@pytest.mark.parametrize("edit, message", [
    (lambda m: m["observation"].update(size=400), "observation.size is 400, expected 413"),
    (lambda m: m["actions"].update(size=79), "actions.size is 79, expected 49"),
    (lambda m: m["observation"].update(version=1),
     "observation.layout ends with slice 'threat', expected 'seat_total'"),
    (as_version_1, r"policy.onnx input observation has shape \['N', 413\], expected \[N, 297\] "
                   r"\(the manifest's observation.size\)"),
], ids=["observation-size", "action-count", "layout-of-another-version", "graph-input"])
def test_an_inconsistent_manifest_is_refused_at_load_naming_the_field(tmp_path, edit, message):
    """Sizes that disagree with each other, the deck or the ONNX graph: refused by
    load_bundle, not by onnxruntime at the first move."""
    from agents.bundle import BundleError, load_bundle

    with pytest.raises(BundleError, match=message):
        load_bundle(edited_copy(tmp_path, edit))


def test_a_manifest_whose_rules_are_of_another_deck_than_its_layout_says_so(tmp_path):
    """Rules of 13 ranks over the culo bundle's 8-rank layout: the layout is of the current
    version, so the refusal names the deck, not the version."""
    from agents.bundle import BundleError, load_bundle
    from arschloch_env.rules import make_rules

    def tavern_rules(manifest):
        manifest.update(rules=make_rules("tavern", 4).to_dict(), presets=["tavern"])

    with pytest.raises(BundleError, match="manifest.json disagrees with itself: "
                                          "observation.layout is of a deck of 8 ranks, "
                                          "rules.rank_order of 13"):
        load_bundle(edited_copy(tmp_path, tavern_rules))

    def culo_rules(manifest):
        manifest.update(rules=make_rules("culo", 4).to_dict(), presets=["culo"])

    with pytest.raises(BundleError, match="manifest.json disagrees with itself: "
                                          "observation.layout is of a deck of 13 ranks, "
                                          "rules.rank_order of 8"):
        load_bundle(edited_copy(tmp_path / "t", culo_rules, "ppo_vec_tavern_multi"))


@pytest.mark.train_extra
def test_a_graph_of_another_action_count_is_refused_at_load(tmp_path):
    from agents.bundle import BundleError, file_sha256, load_bundle
    from agents.mlp import MLP
    from train.export import mlp_to_onnx

    bundle = edited_copy(tmp_path, lambda m: None)
    rng = np.random.default_rng(0)
    # 49 logits, as the manifest says, but a mask input of 50 actions
    mlp = MLP([(rng.normal(size=(49, 413)).astype(np.float32), np.zeros(49, np.float32))])
    import onnx
    onnx.save(mlp_to_onnx(mlp, 50), bundle / "policy.onnx")
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["policy"]["sha256"] = file_sha256(bundle / "policy.onnx")
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(BundleError, match=r"policy.onnx input action_mask has shape "
                                          r"\['N', 50\], expected \[N, 49\]"):
        load_bundle(bundle)


@pytest.mark.train_extra
def test_a_graph_made_for_any_width_loads(tmp_path):
    """A graph from elsewhere may name its widths (symbolic dimensions) instead of fixing
    them: there is nothing to compare, and it plays."""
    import onnx

    from agents.bundle import file_sha256, load_bundle
    bundle = edited_copy(tmp_path, lambda m: None)
    model = onnx.load(str(bundle / "policy.onnx"))
    for value in [*model.graph.input, *model.graph.output]:
        dims = value.type.tensor_type.shape.dim
        if len(dims) == 2:
            dims[1].dim_param = "width"
    onnx.save(model, bundle / "policy.onnx")
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["policy"]["sha256"] = file_sha256(bundle / "policy.onnx")
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    agent = load_bundle(bundle)
    obs = np.zeros((1, 413), np.float32)
    obs[0, Layout(8).slices["seat_present"]][:4] = 1  # a table of 4
    mask = np.zeros((1, 49), np.int8)
    mask[0, 3] = 1
    assert agent.policy(obs, mask)[0].tolist() == [3]


def test_bundle_refuses_a_table_size_it_was_not_trained_for_without_reset():
    """The observation counts the seats at the table: act and policy refuse one of a table
    size the bundle never saw, where reset (optional in the protocol) was never called."""
    from agents.bundle import BundleError, load_bundle

    o = first_observation("culo", 3)
    bot = load_bundle(ROOT / "bots" / "ppo_culo_4p")
    with pytest.raises(BundleError, match=r"row\(s\) \[0\] are of a table of 3 seats; it was "
                                          r"trained for \[4\] players"):
        bot.act(o, None)
    assert o["action_mask"][load_bundle(ROOT / "bots" / "ppo_vec_culo_expert").act(o, None)]


def test_bundle_reset_reads_the_rules_as_the_env_does():
    """A rules dict is checked and normalised before it is compared: a rank order given as a
    tuple is the same rules, a preset name with the table size is all of the preset's, and a
    wrong field or seat is named."""
    from agents.bundle import BundleError, load_bundle
    from arschloch_env.rules import make_rules

    bot = load_bundle(ROOT / "bots" / "ppo_vec_culo_expert")
    rules = make_rules("culo", num_players=4).to_dict()
    bot.reset({**rules, "rank_order": tuple(rules["rank_order"])}, 0)
    bot.reset({"preset": "culo", "num_players": 4}, 3)
    with pytest.raises(BundleError, match="rounds: 'many' is not allowed"):
        bot.reset({**rules, "rounds": "many"}, 0)
    with pytest.raises(BundleError, match="unknown rules field"):
        bot.reset({**rules, "bogus": 1}, 0)
    with pytest.raises(BundleError, match=r"seat 4; allowed: an integer 0..3 at a table of 4"):
        bot.reset(rules, 4)


def test_bundle_scales_the_totals_of_matches_longer_than_it_trained_for():
    """A policy trained on five-round matches never saw the totals of round 40, and played
    clearly worse on them (in 60-round matches against 3x expert the tavern bot dropped from
    2.24 to 1.79 rank points per round): act scales the totals to the share of the match
    they are, and leaves them as they are in matches of the trained length."""
    from agents.bundle import load_bundle, totals_scale
    from arschloch_env.engine import Game
    from arschloch_env.observation import Encoder
    from arschloch_env.rules import make_rules

    bot = load_bundle(ROOT / "bots" / "ppo_vec_tavern_multi")
    for n in (3, 6):
        assert totals_scale(bot.manifest, make_rules("tavern", num_players=n).to_dict()) == 1
        short = make_rules("tavern", num_players=n, rounds=2).to_dict()
        assert totals_scale(bot.manifest, short) == 1  # never scaled up
        long = make_rules("tavern", num_players=n, rounds=60).to_dict()
        assert totals_scale(bot.manifest, long) == pytest.approx(5 / 60)
    # culo_expert's own rules are single rounds (its second stage); its preset's five
    # rounds are what its first stage trained on
    culo = load_bundle(ROOT / "bots" / "ppo_vec_culo_expert")
    assert totals_scale(culo.manifest, make_rules("culo", num_players=4).to_dict()) == 1
    assert totals_scale(culo.manifest, make_rules("culo-points", num_players=4).to_dict()) == \
        pytest.approx(15 / 17)

    rules = make_rules("tavern", num_players=4, rounds=60)
    game, rng = Game(rules, seed=3, auto_pass=True), np.random.default_rng(3)
    while game.round < 40 or len(game.legal_actions()) < 2:
        game.step(int(rng.choice(game.legal_actions())))
    assert max(game.totals) > 15  # beyond any five-round match's
    seat = game.current
    o = Encoder(game.R).observation(game, seat)
    st = Layout(game.R).slices["seat_total"]
    scaled = o["observation"].copy()
    scaled[st] *= np.float32(5 / 60)
    bot.reset(rules.to_dict(), seat)
    assert bot.act(o, None) == bot.policy(scaled, o["action_mask"])[0][0]
    assert o["observation"][st].max() > 1  # the caller's observation is left as it was
    bot.reset(make_rules("tavern", num_players=4).to_dict(), seat)
    assert bot.act(o, None) == bot.policy(o["observation"], o["action_mask"])[0][0]
