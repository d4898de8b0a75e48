"""Export: a trained policy becomes a bot bundle (ONNX + manifest, see agents.bundle).

The ONNX graph is built directly from the policy's weights (Gemm and activation nodes, then
the mask, an ArgMax and a check that the row can be answered), so it needs no tracing
exporter and holds exactly the network the numpy :class:`~agents.mlp.MLP` computes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from agents.bundle import (
    ACTION_ENCODING_VERSION, BUNDLE_FORMAT, BUNDLE_VERSION, NO_ACTION, BundleError,
    file_sha256, version_layout,
)
from agents.mlp import MLP
from arschloch_env.actions import ActionCodec
from arschloch_env.observation import LAST_SLICE, Layout

ONNX_OPSET = 17
# policy.torchscript.pt: the optional torch file of bundles written before policy.pt2
BUNDLE_FILES = frozenset({"manifest.json", "policy.onnx", "policy.pt2", "policy.torchscript.pt"})
"""What an export writes: all it may replace in an existing ``--out``."""
STALE_AFTER_S = 3600.0
"""A hidden ``.<out>.partial-*`` or ``.<out>.replaced-*`` folder untouched this long is left by
an export that was killed (one takes seconds): the next export to ``out`` removes it."""


def mlp_to_onnx(mlp: MLP, num_actions: int):
    """The ONNX model of ``mlp`` with inputs observation/action_mask, outputs action/logits."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    D = mlp.input_size
    nodes, inits = [], []
    x = "observation"
    act_op = {"tanh": "Tanh", "relu": "Relu"}[mlp.activation]
    for i, (w, b) in enumerate(mlp.layers):
        inits += [numpy_helper.from_array(w, f"W{i}"), numpy_helper.from_array(b, f"b{i}")]
        last = i == len(mlp.layers) - 1
        z = "logits" if last else f"z{i}"
        nodes.append(helper.make_node("Gemm", [x, f"W{i}", f"b{i}"], [z], transB=1))
        if not last:
            nodes.append(helper.make_node(act_op, [z], [f"h{i}"]))
            x = f"h{i}"
    inits += [numpy_helper.from_array(np.array(-np.inf, np.float32), "neg_inf"),
              numpy_helper.from_array(np.array(0, np.float32), "zero"),
              numpy_helper.from_array(np.array(NO_ACTION, np.int64), "no_action")]
    nodes += [
        helper.make_node("Cast", ["action_mask"], ["mask_bool"], to=TensorProto.BOOL),
        helper.make_node("Where", ["mask_bool", "logits", "neg_inf"], ["masked_logits"]),
        helper.make_node("ArgMax", ["masked_logits"], ["best"], axis=1, keepdims=0),
        *row_is_answerable(helper, TensorProto),
        helper.make_node("Where", ["answerable", "best", "no_action"], ["action"]),
    ]
    graph = helper.make_graph(
        nodes, "arschloch_policy",
        [helper.make_tensor_value_info("observation", TensorProto.FLOAT, ["N", D]),
         helper.make_tensor_value_info("action_mask", TensorProto.INT8, ["N", num_actions])],
        [helper.make_tensor_value_info("action", TensorProto.INT64, ["N"]),
         helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", num_actions])],
        initializer=inits)
    opsets = [helper.make_opsetid("", ONNX_OPSET)]
    # the oldest IR that holds the opset, not the installed onnx's newest: an onnxruntime
    # older than that onnx refuses a newer IR even though it runs every operator here
    model = helper.make_model(graph, opset_imports=opsets, producer_name="arschloch",
                              ir_version=helper.find_min_ir_version_for(opsets))
    onnx.checker.check_model(model)
    return model


def row_is_answerable(helper, TensorProto) -> list:
    """The nodes computing ``answerable`` [N]: the row's mask has a legal action, and its
    observation and logits are finite (finite values far beyond any observation's overflow
    the logits, and ArgMax over NaN names any action, legal or not). A graph run outside the
    kit answers ``NO_ACTION`` for any other row, where an argmax would name action 0 or one of
    no meaning, which a server could play unnoticed."""
    node = helper.make_node

    def all_finite(tensor: str) -> list:
        return [
            node("IsNaN", [tensor], [f"{tensor}_nan"]),
            node("IsInf", [tensor], [f"{tensor}_inf"]),
            node("Or", [f"{tensor}_nan", f"{tensor}_inf"], [f"{tensor}_not_finite"]),
            node("Cast", [f"{tensor}_not_finite"], [f"{tensor}_not_finite_float"],
                 to=TensorProto.FLOAT),
            node("ReduceMax", [f"{tensor}_not_finite_float"], [f"{tensor}_any_not_finite"],
                 axes=[1], keepdims=0),
            node("Equal", [f"{tensor}_any_not_finite", "zero"], [f"{tensor}_finite"]),
        ]

    return [
        node("Cast", ["mask_bool"], ["mask_float"], to=TensorProto.FLOAT),
        node("ReduceMax", ["mask_float"], ["any_legal_float"], axes=[1], keepdims=0),
        node("Greater", ["any_legal_float", "zero"], ["any_legal"]),
        *all_finite("observation"),
        *all_finite("logits"),
        node("And", ["observation_finite", "logits_finite"], ["finite"]),
        node("And", ["any_legal", "finite"], ["answerable"]),
    ]


def policy_mlp(model) -> MLP:
    """The actor of an SB3 (Maskable)PPO MLP policy as a numpy :class:`MLP`."""
    import torch

    policy = model.policy
    layers, activation = [], None
    for module in policy.mlp_extractor.policy_net:
        if isinstance(module, torch.nn.Linear):
            layers.append(module)
        elif isinstance(module, torch.nn.Tanh):
            activation = "tanh"
        elif isinstance(module, torch.nn.ReLU):
            activation = "relu"
    layers.append(policy.action_net)
    weights = [(l.weight.detach().cpu().numpy(), l.bias.detach().cpu().numpy()) for l in layers]
    return MLP(weights, activation or "tanh")


def write_bundle(out: str | Path, mlp: MLP, rules: dict[str, Any], presets: list[str],
                 players: list[int], name: str, training: dict[str, Any],
                 torch_program=None) -> Path:
    """Writes a bundle directory; an existing one is replaced only once the new one is whole.

    Raises:
        BundleError: ``out`` is a file, or a directory holding anything but a bundle's files
            (a run directory, a bundle with its evaluation beside it): it is left as it is.
    """
    import onnx

    out = Path(out)
    check_replaceable(out)
    num_actions = ActionCodec(rules["rank_order"]).size
    version, layout = layout_read_by(mlp.input_size, len(rules["rank_order"]))
    out.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(out)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    tmp.chmod(0o755)
    try:
        onnx.save(mlp_to_onnx(mlp, num_actions), tmp / "policy.onnx")
        if torch_program is not None:
            import torch
            torch.export.save(torch_program, str(tmp / "policy.pt2"))
        manifest = {
            "format": BUNDLE_FORMAT,
            "bundle_version": BUNDLE_VERSION,
            "name": name,
            "rules": rules,
            "presets": presets,
            "players": players,
            "observation": {"version": version, "size": mlp.input_size, "layout": layout},
            "actions": {"version": ACTION_ENCODING_VERSION, "size": num_actions},
            "policy": {"file": "policy.onnx", "sha256": file_sha256(tmp / "policy.onnx"),
                       "inputs": ["observation", "action_mask"],
                       "outputs": ["action", "logits"], "opset": ONNX_OPSET},
            "training": training,
        }
        if torch_program is not None:
            # verified by agents.bundle.load_torch_program, as policy.onnx by load_bundle
            manifest["policy"]["torch"] = {"file": "policy.pt2",
                                           "sha256": file_sha256(tmp / "policy.pt2"),
                                           "torch_version": torch.__version__}
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n",
                                           encoding="utf-8")
        if not out.exists():
            tmp.rename(out)
        elif not exchange(tmp, out):  # swapped: the old bundle is at tmp, removed below
            # No atomic swap here: a kill between these two renames leaves the old bundle in
            # .<out>.replaced-*/ and none at out. Moved aside into a folder of its own, so
            # that no other path is ever deleted.
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.replaced-", dir=out.parent))
            out.rename(old / out.name)
            tmp.rename(out)
            shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def remove_stale_temporaries(out: Path) -> None:
    """Removes the hidden folders beside ``out`` that an export to it killed midway left: the
    new bundle half-written (``.<out>.partial-*``) or, where paths cannot be swapped in one
    step, the old one moved aside (``.<out>.replaced-*/<out>``). Only one untouched for
    ``STALE_AFTER_S`` and holding nothing but a bundle's files is removed."""
    name = re.compile(rf"\.{re.escape(out.name)}\.(partial|replaced)-[a-z0-9_]{{8}}")
    for tmp in out.parent.iterdir():
        match = name.fullmatch(tmp.name)
        if match is None or tmp.is_symlink() or not tmp.is_dir():
            continue
        try:
            if time.time() - tmp.stat().st_mtime < STALE_AFTER_S:
                continue
            entries = list(tmp.iterdir())
            if match.group(1) == "replaced":  # the old bundle sits one level down
                if any(p.name != out.name or p.is_symlink() or not p.is_dir() for p in entries):
                    continue
                entries = [q for p in entries for q in p.iterdir()]
            if all(p.name in BUNDLE_FILES for p in entries):
                shutil.rmtree(tmp)
        except OSError:  # gone meanwhile, or not ours to remove
            continue


def exchange(a: Path, b: Path) -> bool:
    """Swaps two paths in one step (Linux ``renameat2(RENAME_EXCHANGE)``), so that a kill
    leaves either the old or the new one at each; False where the system has no such call."""
    import ctypes

    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def layout_read_by(inputs: int, R: int) -> tuple[int, list[list]]:
    """The observation layout version, and its slices, of a policy with ``inputs`` inputs: a
    policy trained before a version appended slices reads the leading part.

    Raises:
        BundleError: no version's observation of this deck has that many values.
    """
    sizes = {Layout(R).version_size(v): v for v in LAST_SLICE}
    if inputs not in sizes:
        raise BundleError(f"the policy takes {inputs} inputs; an observation of this deck has "
                          f"{' or '.join(map(str, sorted(sizes)))} (layout versions "
                          f"{', '.join(map(str, LAST_SLICE))})")
    version = sizes[inputs]
    return version, version_layout(R, version)


def check_replaceable(out: Path) -> None:
    """Replacing ``out`` deletes it, so only an empty directory or a bare bundle may be replaced."""
    if not out.exists():
        return
    if not out.is_dir():
        raise BundleError(f"--out {out} is a file; a bundle is a directory: name a new one")
    here = Path.cwd().resolve()
    if out.resolve() in (here, *here.parents):
        raise BundleError(f"--out {out} is the current directory (or holds it), which cannot "
                          f"be replaced: name a new directory, e.g. --out my_bot")
    others = sorted(p.name for p in out.iterdir() if p.name not in BUNDLE_FILES)
    if others:
        shown = ", ".join(others[:5]) + (", ..." if len(others) > 5 else "")
        raise BundleError(f"--out {out} holds files that are not part of a bundle ({shown}); "
                          f"exporting would delete them: name a new directory, or move them "
                          f"away first")


def torch_policy(mlp: MLP):
    """The policy as a ``torch.export`` program (observation, action_mask) -> (action, logits),
    for any batch size; ``torch.export.load(path).module()`` runs it."""
    import torch

    class Policy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            mods: list[torch.nn.Module] = []
            for i, (w, b) in enumerate(mlp.layers):
                lin = torch.nn.Linear(w.shape[1], w.shape[0])
                lin.weight.data = torch.from_numpy(w.copy())
                lin.bias.data = torch.from_numpy(b.copy())
                mods.append(lin)
                if i < len(mlp.layers) - 1:
                    mods.append(torch.nn.Tanh() if mlp.activation == "tanh" else torch.nn.ReLU())
            # a program for play: its outputs carry no autograd history
            self.net = torch.nn.Sequential(*mods).requires_grad_(False)

        def forward(self, observation: torch.Tensor, action_mask: torch.Tensor):
            logits = self.net(observation)
            legal = action_mask != 0  # as the ONNX graph's cast to bool
            masked = torch.where(legal, logits, torch.full_like(logits, -1e30))
            answerable = (legal.any(dim=-1) & torch.isfinite(observation).all(dim=-1)
                          & torch.isfinite(logits).all(dim=-1))
            action = torch.where(answerable, torch.argmax(masked, dim=-1),
                                 torch.full_like(answerable, NO_ACTION, dtype=torch.int64))
            return action, logits

    batch = torch.export.Dim("batch")
    example = (torch.zeros(2, mlp.input_size), torch.ones(2, mlp.output_size, dtype=torch.int8))
    return torch.export.export(Policy(), example, dynamic_shapes={
        "observation": {0: batch}, "action_mask": {0: batch}})
