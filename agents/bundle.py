"""Bot bundles: an exported policy as ONNX plus a JSON manifest, loadable with numpy and
onnxruntime alone (no torch, no SB3, nothing unpickled).

A bundle is a directory::

    manifest.json   what the bot is for: rules, presets, player counts, observation and
                    action encoding versions, the policy file's sha256, training summary
    policy.onnx     inputs ``observation`` [N, D] float32 and ``action_mask`` [N, A] int8;
                    outputs ``action`` [N] int64 (best legal action; ``NO_ACTION`` for a
                    row whose mask has no legal action or whose observation is not finite)
                    and ``logits`` [N, A]
    policy.pt2      optional (``arschloch export --torch``): the same policy as a
                    ``torch.export`` program, loaded by :func:`load_torch_program`; its
                    sha256 is the manifest's ``policy.torch``

The directory path is an agent spec everywhere (``tournament``, ``play``, league opponents,
the Gymnasium opponents).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from arschloch_env.actions import ActionCodec
from arschloch_env.observation import LAST_SLICE, OBS_VERSION, Layout
from arschloch_env.unique_keys import load_json

BUNDLE_FORMAT = "arschloch-bot"
BUNDLE_VERSION = 1
ACTION_ENCODING_VERSION = 1
NO_ACTION = -1
"""The policy graphs' ``action`` for a row they cannot answer (no legal action in its mask, or
a NaN or infinite observation): never an action id, so a server that feeds the graph by hand
fails on it instead of playing it."""
# Rules fields that change play; a bundle refuses rules that differ in any of them.
PLAY_FIELDS = ("rank_order", "deal", "leftover_swap", "first_leader", "no_finish_on_top",
               "top_card_ends_trick", "exchange_cards", "exchange_cards_3p",
               "vice_exchange_cards")


class BundleError(ValueError):
    """A bundle that is damaged, of another version, or used with rules it was not made for."""


def layout_signature(R: int) -> list[list]:
    """The observation layout as (name, shape) pairs: a bundle must match it exactly."""
    return [[name, list(shape)] for name, shape, _ in Layout(R).entries]


def version_layout(R: int, version: int) -> list[list]:
    """The layout of observation version ``version`` (in ``LAST_SLICE``): the leading slices
    of this kit's, up to that version's last one."""
    return layout_signature(R)[:list(Layout(R).slices).index(LAST_SLICE[version]) + 1]


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_manifest(path: str | Path) -> dict[str, Any]:
    """The checked manifest of a bundle directory.

    The policy graph's own input and output shapes are checked by :class:`BundleAgent`,
    against the inference session it creates anyway.

    Raises:
        BundleError: missing or unreadable manifest, another format or version, a changed
            observation layout or action encoding, a layout, observation size or action count
            that disagree with each other or with the rules' deck, or a policy file that does
            not match its checksum.
    """
    root = Path(path)
    mpath = root / "manifest.json"
    if not root.exists():
        raise BundleError(f"bundle {str(root)!r}: no such directory")
    if root.is_file():
        raise BundleError(f"bundle {str(root)!r}: a file, not a bundle directory: give the "
                          f"folder that holds manifest.json and policy.onnx")
    if not mpath.is_file():
        raise BundleError(f"bundle {str(root)!r}: no manifest.json (is this a bot bundle?)")
    try:
        manifest = load_json(mpath.read_text(encoding="utf-8"))
    except ValueError as exc:  # not JSON, not UTF-8, a key twice, nested too deeply
        raise BundleError(f"bundle {str(root)!r}: manifest.json is damaged ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
        raise BundleError(f"bundle {str(root)!r}: manifest.json is not an {BUNDLE_FORMAT} "
                          f"manifest")
    if manifest.get("bundle_version") != BUNDLE_VERSION:
        raise BundleError(f"bundle {str(root)!r}: bundle version "
                          f"{manifest.get('bundle_version')!r}, this kit reads {BUNDLE_VERSION}")
    sections = {"rules": dict, "observation": dict, "actions": dict, "policy": dict,
                "players": list, "presets": list}
    wrong = [f"{k} (expected a JSON {'object' if t is dict else 'list'})"
             for k, t in sections.items() if not isinstance(manifest.get(k), t)]
    if not wrong and not isinstance(manifest["rules"].get("rank_order"), list):
        wrong = ["rules.rank_order (expected a list of ranks)"]
    if not wrong and not is_file_entry(manifest["policy"]):
        wrong = [f"policy ({FILE_ENTRY})"]
    if wrong:
        raise BundleError(f"bundle {str(root)!r}: manifest.json is damaged: missing or wrong "
                          f"{', '.join(wrong)}; re-export it from its checkpoint")
    obs = manifest["observation"]
    rank_order = manifest["rules"]["rank_order"]
    ours, theirs = layout_signature(len(rank_order)), obs.get("layout")
    check_layout_deck(str(root), theirs, rank_order)
    # Layout versions only append slices: a bundle of an earlier version reads the leading
    # part of the observation (BundleAgent.policy), which is what it was trained on.
    if not (isinstance(theirs, list) and theirs and theirs == ours[:len(theirs)]
            and obs.get("version") in range(1, OBS_VERSION + 1)):
        raise BundleError(f"bundle {str(root)!r}: made for observation layout version "
                          f"{obs.get('version')!r}, which is not a leading part of this kit's "
                          f"version {OBS_VERSION} layout; re-export it from its checkpoint")
    if manifest["actions"].get("version") != ACTION_ENCODING_VERSION:
        raise BundleError(f"bundle {str(root)!r}: action encoding version "
                          f"{manifest['actions'].get('version')!r}, this kit has "
                          f"{ACTION_ENCODING_VERSION}")
    check_sizes(str(root), manifest)
    policy = root / manifest["policy"]["file"]
    if not policy.is_file():
        raise BundleError(f"bundle {str(root)!r}: policy file {policy.name} is missing")
    if file_sha256(policy) != manifest["policy"].get("sha256"):
        raise BundleError(f"bundle {str(root)!r}: {policy.name} is damaged (its sha256 does "
                          f"not match the manifest)")
    return manifest


FILE_ENTRY = "expected a JSON object with file, a file name in the bundle, and sha256"


def is_file_entry(entry: Any) -> bool:
    """A manifest's entry of a file: its name, of a file in the bundle directory itself, and
    its sha256."""
    return (isinstance(entry, dict) and isinstance(entry.get("file"), str)
            and isinstance(entry.get("sha256"), str)
            and entry["file"] not in ("", ".", "..") and Path(entry["file"]).name == entry["file"])


def check_layout_deck(where: str, layout: Any, rank_order: list) -> None:
    """Raises BundleError where ``layout`` is this kit's layout of another deck than
    ``rank_order``'s (rules edited by hand, or copied from another bundle): else its slices'
    shapes differ from the rules' deck and the refusal would blame the layout version."""
    try:
        deck = int(layout[0][1][0])  # "hand" comes first, of shape [ranks, 4]
    except (TypeError, ValueError, IndexError, KeyError):
        return
    if deck in (8, 13) and deck != len(rank_order) \
            and layout == layout_signature(deck)[:len(layout)]:
        raise BundleError(f"bundle {where!r}: manifest.json disagrees with itself: "
                          f"observation.layout is of a deck of {deck} ranks, rules.rank_order "
                          f"of {len(rank_order)}; re-export it from its checkpoint")


def check_sizes(where: str, manifest: dict[str, Any]) -> None:
    """Raises BundleError unless the manifest's layout, observation size and action count are
    those its layout version and its rules' deck imply: a hand-edited manifest would otherwise
    load and fail inside onnxruntime at the first move. Call it once the layout is known to
    be a leading part of this kit's (read_manifest)."""
    rank_order = manifest["rules"]["rank_order"]
    obs, version = manifest["observation"], manifest["observation"]["version"]
    R = len(rank_order)
    theirs, layout = obs["layout"], version_layout(R, version)
    wrong = []
    if theirs != layout:
        wrong.append(f"observation.layout ends with slice {theirs[-1][0]!r}, expected "
                     f"{layout[-1][0]!r}")
    sizes = {"observation.size": (obs.get("size"), Layout(R).version_size(version)),
             "actions.size": (manifest["actions"].get("size"), ActionCodec(rank_order).size)}
    wrong += [f"{field} is {found!r}, expected {want}"
              for field, (found, want) in sizes.items() if found != want]
    if wrong:
        raise BundleError(f"bundle {where!r}: manifest.json disagrees with itself: "
                          f"{'; '.join(wrong)} (observation layout version {version}, a deck "
                          f"of {R} ranks); re-export it from its checkpoint")


def play_difference(trained: dict[str, Any], rules: dict[str, Any]) -> str | None:
    """How ``rules`` differ from the rules a policy was trained with in a field that changes
    play (``PLAY_FIELDS``), or None where they agree."""
    for f in PLAY_FIELDS:
        if rules.get(f) != trained.get(f):
            return f"trained with {f}={trained.get(f)!r}, these rules have {f}={rules.get(f)!r}"
    return None


def check_rules(manifest: dict[str, Any], rules: Any, where: str = "bundle") -> dict[str, Any]:
    """Raises BundleError unless the bundle was made for these rules (a dict, or a
    :class:`~arschloch_env.rules.Rules`) and this table size; returns them as the rules dict
    the env gives (``view['rules']``)."""
    from arschloch_env.rules import Rules, RulesError, make_rules

    if not isinstance(rules, (Rules, dict)):
        raise BundleError(f"{where}: rules must be the rules dict (e.g. view['rules']) or a "
                          f"Rules object, got {type(rules).__name__}")
    try:  # a dict is read as the env reads it: checked, and lists where JSON has them
        rules = make_rules(rules).to_dict()
    except RulesError as exc:
        raise BundleError(f"{where}: {exc}") from None
    trained = manifest["rules"]
    # what counts is how the rounds play, not the preset's name: culo-points, culo's play
    # with a points target, is as much the culo bot's as culo with target_points set
    difference = play_difference(trained, rules)
    if difference and rules.get("preset") not in manifest.get("presets", []):
        raise BundleError(f"{where}: trained for preset(s) {manifest.get('presets')}, not "
                          f"{rules.get('preset')!r}")
    if difference:
        raise BundleError(f"{where}: {difference}")
    if rules.get("num_players") not in manifest.get("players", []):
        raise BundleError(f"{where}: trained for {manifest.get('players')} players, not "
                          f"{rules.get('num_players')}")
    return rules


def totals_scale(manifest: dict[str, Any], rules: dict[str, Any]) -> float:
    """What a bundle's :meth:`BundleAgent.act` multiplies the observation's match totals
    (``seat_total``) by under ``rules``: 1 where a seat's total stays within what it could
    reach in the matches the bundle trained on (its rules', or its presets', at this table
    size), else that most over the most these rules allow. A policy trained on five rounds
    never saw the totals of round 40, and plays worse on them; scaled, they read as the
    same share of the match, as ``match_progress`` does."""
    from arschloch_env.rules import make_rules

    n = rules["num_players"]
    trained = max(make_rules(source, num_players=n).max_total
                  for source in [manifest["rules"], *manifest.get("presets", [])])
    return min(1.0, trained / make_rules(rules).max_total)


class BundleAgent:
    """Plays an exported policy: the best legal action by its logits."""

    uses_view = False

    def __init__(self, path: str | Path):
        import onnxruntime as ort

        self.path = Path(path)
        self.manifest = read_manifest(self.path)
        self.name = self.manifest.get("name", self.path.name)
        self.input_size = sum(int(np.prod(shape)) for _, shape in
                              self.manifest["observation"]["layout"])
        # what this kit's observation of the bundle's deck holds: a bundle of an earlier
        # layout version reads its leading part
        self.observation_size = Layout(len(self.manifest["rules"]["rank_order"])).size
        self.num_actions = int(self.manifest["actions"]["size"])
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        try:
            self.session = ort.InferenceSession(
                str(self.path / self.manifest["policy"]["file"]), options,
                providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own error types
            raise BundleError(f"bundle {str(self.path)!r}: the policy cannot be loaded "
                              f"({exc})") from None
        self.check_graph_shapes()
        self._rules_checked: dict[str, Any] | None = None
        self._totals_scale = 1.0
        slices = Layout(len(self.manifest["rules"]["rank_order"])).slices
        self._totals_slice, self._present_slice = slices["seat_total"], slices["seat_present"]
        self._players = np.asarray(self.manifest["players"])

    def check_graph_shapes(self) -> None:
        """Raises BundleError unless the ONNX graph takes the manifest's observation size and
        action count: read from the session loaded anyway, so that a policy file of another
        network fails here with the sizes named, not inside onnxruntime at the first move."""
        found = {f"input {t.name}": t.shape for t in self.session.get_inputs()}
        found.update({f"output {t.name}": t.shape for t in self.session.get_outputs()})
        file = self.manifest["policy"]["file"]
        expected = {"input observation": ("observation.size", self.input_size),
                    "input action_mask": ("actions.size", self.num_actions),
                    "output logits": ("actions.size", self.num_actions)}
        for tensor, (field, width) in expected.items():
            shape = found.get(tensor)
            if shape is None:
                raise BundleError(f"bundle {str(self.path)!r}: {file} has no {tensor}")
            # a named (symbolic) width is a graph made for any size: nothing to compare
            if len(shape) != 2 or (isinstance(shape[1], int) and shape[1] != width):
                raise BundleError(f"bundle {str(self.path)!r}: {file} {tensor} has shape "
                                  f"{list(shape)}, expected [N, {width}] (the manifest's "
                                  f"{field})")

    def __deepcopy__(self, memo) -> "BundleAgent":
        # One agent per seat shares the read-only inference session.
        twin = object.__new__(BundleAgent)
        twin.__dict__.update(self.__dict__)
        return twin

    def __reduce__(self):
        return (BundleAgent, (str(self.path),))

    def supports(self, rules: dict[str, Any]) -> bool:
        try:
            check_rules(self.manifest, rules)
        except BundleError:
            return False
        return True

    def reset(self, rules: Any, seat: int, seed: int | None = None) -> None:
        from arschloch_env.rules import is_integer

        self._rules_checked = check_rules(self.manifest, rules, where=f"bundle {str(self.path)!r}")
        n = self._rules_checked["num_players"]
        if not (is_integer(seat) and 0 <= seat < n):
            raise BundleError(f"bundle {str(self.path)!r}: seat {seat!r}; allowed: an integer "
                              f"0..{n - 1} at a table of {n}")
        self._totals_scale = totals_scale(self.manifest, self._rules_checked)

    def fit_totals(self, observation: Any) -> Any:
        """The observation with its match totals scaled down to the match length the bundle
        trained for (see :func:`totals_scale`), as :meth:`act` gives it to :meth:`policy`;
        as it is where the match is no longer."""
        if self._totals_scale == 1.0:
            return observation
        x = np.array(observation, dtype=np.float32)  # a copy: the caller's stays as it was
        if x.shape == (self.observation_size,):  # anything else: policy() names the mistake
            x[self._totals_slice] *= self._totals_scale
        return x

    def _check_view_rules(self, view: Any) -> None:
        """A caller that never calls reset (the protocol lets it) but passes the view still
        has its rules checked: another deck of the same size would play on silently."""
        rules = view.get("rules") if isinstance(view, dict) else None
        if rules is not None and rules != self._rules_checked:
            self.reset(rules, view.get("seat", 0))

    def policy(self, observations: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(actions [N], logits [N, A]) for a batch of observations and masks.

        Raises:
            BundleError: observations or masks of another deck than the bundle's (their sizes
                differ): a bundle is made for one rank order; of a table size it was not
                trained for; not one mask per observation; a mask that is not 0/1 or has no
                legal action; or a NaN or infinite observation value.
        """
        x, m = numeric_inputs(str(self.path), observations, masks)
        width = x.shape[-1] if x.ndim else 0
        actions = m.shape[-1] if m.ndim else 0
        if (width, actions) != (self.observation_size, self.num_actions):
            raise BundleError(
                f"bundle {str(self.path)!r}: given observations of {width} values and masks of "
                f"{actions} actions; it plays {self.observation_size} and {self.num_actions} "
                f"(the deck of rank order {''.join(self.manifest['rules']['rank_order'])})")
        # onnxruntime would fail inside the graph, with a message about broadcasting
        if x.shape[:-1] != m.shape[:-1]:
            raise BundleError(f"bundle {str(self.path)!r}: given observations of shape "
                              f"{list(x.shape)} and masks of shape {list(m.shape)}; give one "
                              f"mask per observation")
        x = np.ascontiguousarray(x.reshape(-1, x.shape[-1])[:, :self.input_size])
        # the graph would answer NO_ACTION; named here, with the row
        if not np.isfinite(x).all():
            raise BundleError(f"bundle {str(self.path)!r}: observation row(s) "
                              f"{np.flatnonzero(~np.isfinite(x).all(axis=1))[:5].tolist()} "
                              f"hold NaN or infinite values; an observation is finite")
        self.check_table_sizes(x)
        legal = legal_masks(str(self.path), m.reshape(-1, actions))
        action, logits = self.session.run(["action", "logits"], {
            "observation": x, "action_mask": legal})
        # finite values far beyond any observation's overflow the logits to NaN, where the
        # ArgMax of a graph exported before the graph checked them names an action, legal or
        # not (a pass, legal in most answers; a legal lead): the legal logits are checked
        chosen = legal[np.arange(len(action)), np.maximum(action, 0)] != 0
        answered = chosen & (action >= 0) & np.isfinite(np.where(legal != 0, logits, 0.0)).all(1)
        if not answered.all():
            rows = np.flatnonzero(~answered)
            raise BundleError(f"bundle {str(self.path)!r}: the policy has no finite logits for "
                              f"observation row(s) {rows[:5].tolist()} (their values reach "
                              f"{np.abs(x[rows]).max():.3g}, far beyond any observation's)")
        return action, logits

    def check_table_sizes(self, x: np.ndarray) -> None:
        """Raises BundleError for a row observed at a table size the bundle was not trained
        for (its ``seat_present`` slice counts the seats): a caller that never calls
        :meth:`reset` would otherwise get moves for a table the policy never saw."""
        seats = x[:, self._present_slice].sum(axis=1)
        # not np.isin, which took three times as long: a fifth of a one-row policy() call
        wrong = ~(seats[:, None] == self._players).any(axis=1)
        if wrong.any():
            rows = np.flatnonzero(wrong)
            raise BundleError(f"bundle {str(self.path)!r}: observation row(s) "
                              f"{rows[:5].tolist()} are of a table of "
                              f"{seats[rows[0]]:g} seats; it was trained for "
                              f"{self.manifest['players']} players")

    def act(self, observation: dict, view: dict | None) -> int:
        expected = {"observation", "action_mask"}
        if not (isinstance(observation, dict) and expected <= observation.keys()):
            raise BundleError(
                f"bundle {str(self.path)!r}: act takes the AEC env's observation, a dict with "
                f"'observation' and 'action_mask', got {type(observation).__name__}; for a "
                f"vector and its mask call policy(observations, masks)")
        # policy() takes lists too (a JSON-decoded observation); one seat's is one row
        try:
            shape = np.shape(observation["observation"])
        except ValueError:  # ragged lists: policy() names what is wrong with them
            shape = ()
        if len(shape) > 1:
            raise BundleError(f"bundle {str(self.path)!r}: act takes one seat's observation, a "
                              f"vector, got shape {list(shape)}; for a batch of them call "
                              f"policy(observations, masks)")
        self._check_view_rules(view)
        action, _ = self.policy(self.fit_totals(observation["observation"]),
                                observation["action_mask"])
        return int(action[0])


def numeric_inputs(where: str, observations: Any, masks: Any) -> tuple[np.ndarray, np.ndarray]:
    """Observations as float32 and masks as arrays (checked by :func:`legal_masks`).

    Raises:
        BundleError: either holds something other than numbers in rows of equal length
            (None, text, ragged lists), which numpy would refuse with its own error.
    """
    try:
        x, m = np.asarray(observations), np.asarray(masks)
        for name, given in (("observations", x), ("masks", m)):
            if given.dtype.kind not in "biuf":  # float32 would parse "0.5", and None is NaN
                raise ValueError(f"{name} of dtype {given.dtype}")
        return x.astype(np.float32, copy=False), m
    except (TypeError, ValueError) as exc:
        raise BundleError(f"bundle {where!r}: observations and masks must be numbers, a row "
                          f"or rows of equal length (arrays or lists): {exc}") from None


def legal_masks(where: str, masks: np.ndarray) -> np.ndarray:
    """Masks [N, A] as the graph's int8, checked first: the int8 cast would turn 0.5 or 256
    into 0, and the graph answers a row with no legal action with ``NO_ACTION``; here the
    mistake is named.

    Raises:
        BundleError: a value other than 0 and 1, or a row with no legal action.
    """
    if not ((masks == 0) | (masks == 1)).all():
        found = masks[(masks != 0) & (masks != 1)].flat[0].item()
        raise BundleError(f"bundle {where!r}: mask values must be 0 or 1 (1 for a legal "
                          f"action), found {found!r}")
    empty = np.flatnonzero(~masks.any(axis=1))
    if len(empty):
        raise BundleError(f"bundle {where!r}: mask row(s) {empty[:5].tolist()} have no legal "
                          f"action (all 0): only the seat to act has legal actions, the AEC "
                          f"env gives the others an all-zero mask")
    return masks.astype(np.int8)


def load_bundle(path: str | Path) -> BundleAgent:
    """The agent of a bundle directory (see :class:`BundleAgent`)."""
    return BundleAgent(path)


def load_torch_program(path: str | Path):
    """The bundle's ``policy.pt2`` as a ``torch.export`` program, its checksum verified:
    ``load_torch_program(path).module()`` takes ``(observation, action_mask)`` tensors and
    returns ``(action, logits)``.

    Bundles written before export recorded the checksum (no ``policy.torch`` in the
    manifest) still load, unverified, as before; re-exporting them adds it. A manifest that
    names the file verifies it always.

    Raises:
        BundleError: a damaged manifest (:func:`read_manifest`), no ``policy.pt2``, one
            that does not match its checksum, or no torch (the base install's bundles play
            ``policy.onnx``).
    """
    root = Path(path)
    entry = read_manifest(root)["policy"].get("torch")
    if entry is not None and not is_file_entry(entry):
        raise BundleError(f"bundle {str(root)!r}: manifest.json is damaged: policy.torch "
                          f"({FILE_ENTRY}); re-export it")
    program = root / (entry["file"] if entry else "policy.pt2")
    if not program.is_file():
        raise BundleError(f"bundle {str(root)!r}: no {program.name} (export it with --torch)")
    if entry and file_sha256(program) != entry["sha256"]:
        raise BundleError(f"bundle {str(root)!r}: {program.name} is damaged (its sha256 does "
                          f"not match the manifest)")
    try:
        import torch
    except ImportError:
        raise BundleError(f"bundle {str(root)!r}: {program.name} needs torch, which is not "
                          f"installed (the training extra: pip install -e '.[train]'); "
                          f"policy.onnx plays without it") from None
    try:
        return torch.export.load(str(program))
    except Exception as exc:  # noqa: BLE001 - torch raises many kinds for an archive it can't read
        # torch.export archives are not promised to load in another torch release
        version = (entry or {}).get("torch_version")
        wrote = f"torch {version}" if version else "a torch it does not record"
        raise BundleError(f"bundle {str(root)!r}: torch {torch.__version__} cannot load "
                          f"{program.name}, written by {wrote} ({type(exc).__name__}: "
                          f"{exc}); use policy.onnx, or re-export with this torch") from None
