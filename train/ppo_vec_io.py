"""Checkpoints of ``ppo-vec`` runs: plain torch state dicts, written atomically.

A checkpoint ``checkpoints/<name>.pt`` holds only tensors, numbers, strings and lists (the
actor's and critic's ``state_dict``, the optimizer's, the network shape), so it loads with
``torch.load(..., weights_only=True)``: nothing is ever unpickled. Its metadata
``checkpoints/<name>.json`` is the SB3 trainer's (steps, config, rules, seed, code_version,
league, evaluations, best, illegal_actions) plus ``"algo": "ppo-vec"``.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

from agents.base import is_bundle_dir
from agents.mlp import MLP
from train.files import write_json_atomic

CHECKPOINT_FORMAT = "arschloch-ppo-vec"
CHECKPOINT_VERSION = 1


def linear_layers(net) -> list:
    import torch
    return [m for m in net if isinstance(m, torch.nn.Linear)]


def actor_mlp(actor, activation: str) -> MLP:
    """The torch actor as a numpy :class:`~agents.mlp.MLP` (weights [out, in], like torch)."""
    return MLP([(l.weight.detach().cpu().numpy().copy(), l.bias.detach().cpu().numpy().copy())
                for l in linear_layers(actor)], activation)


def save_checkpoint(run, name: str, payload: dict[str, Any], meta: dict[str, Any],
                    latest: bool) -> Path:
    """``<name>.pt`` and ``<name>.json``, each to a temporary name and renamed; then
    ``latest.json`` when ``latest``. Ctrl-C waits until all of them are written, so that they
    always agree."""
    import torch

    from arschloch_env.cli import interrupt_deferred
    from train.sb3_trainer import drop_metadata

    final = run.checkpoints / f"{name}.pt"
    tmp = run.checkpoints / f"{name}.part.pt"
    # into memory first: torch.save on a full disk raises a RuntimeError that does not say so
    data = io.BytesIO()
    torch.save({"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, **on_cpu(payload)},
               data)
    with interrupt_deferred():
        try:
            tmp.write_bytes(data.getbuffer())
        except OSError:
            tmp.unlink(missing_ok=True)
            raise
        drop_metadata(final)
        os.replace(tmp, final)
        write_json_atomic(run.checkpoints / f"{name}.json", {**meta, "algo": "ppo-vec"})
        if latest:
            write_json_atomic(run.latest, {"checkpoint": f"checkpoints/{name}.pt",
                                           "meta": f"checkpoints/{name}.json",
                                           "steps": meta["steps"]})
    return final


def on_cpu(data):
    """``data`` with every tensor in it moved to the CPU: a checkpoint of a run on CUDA loads
    on a machine without one, with or without ``map_location``."""
    import torch
    if isinstance(data, torch.Tensor):
        return data.cpu()
    if isinstance(data, dict):
        return {k: on_cpu(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return type(data)(on_cpu(v) for v in data)
    return data


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """The payload of a ``.pt`` checkpoint (``weights_only``: tensors and plain data only).

    Raises:
        ValueError: the file is not a ppo-vec checkpoint (or is damaged).
    """
    import torch

    try:
        data = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - a damaged file raises many kinds of errors
        # torch's own message is long and advises unsafe loading: name the error only
        raise ValueError(f"{path}: cannot be loaded (damaged, or not a ppo-vec checkpoint: "
                         f"{type(exc).__name__})") from None
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path}: not a ppo-vec checkpoint")
    if data.get("version") != CHECKPOINT_VERSION:
        raise ValueError(f"{path}: checkpoint version {data.get('version')}, this code reads "
                         f"{CHECKPOINT_VERSION}")
    return data


def init_checkpoint(cfg) -> dict[str, Any]:
    """The checkpoint a new run starts from (``cfg.init_from``), checked against its network.

    Raises:
        ConfigError: no such checkpoint or run directory, or a network of another shape,
            activation or critic input than ``cfg``'s.
    """
    from train.config import ConfigError
    from train.files import read_latest

    path = Path(cfg.init_from)
    if not path.exists():
        raise ConfigError(f"init_from: {path} does not exist; train the run it names first "
                          f"(e.g. configs/ppo_vec_culo_multi.yaml for ppo_vec_culo_expert.yaml), "
                          f"or give --set init_from=RUN_DIR_OR_CHECKPOINT.pt")
    if path.is_dir():
        latest = path / "latest.json"
        if is_bundle_dir(path):
            raise ConfigError(f"init_from: {path} is a bot bundle, which holds the policy "
                              f"alone (no critic, no optimizer state); give the run directory "
                              f"or checkpoint (.pt) it was exported from")
        if not latest.is_file():
            raise ConfigError(f"init_from: {path} holds no checkpoint (no latest.json)")
        path = path / read_latest(path)["checkpoint"]
        if path.suffix != ".pt":
            raise ConfigError(f"init_from: {cfg.init_from} is a run of another trainer (its last "
                              f"checkpoint is {path.name}); a new ppo-vec run starts from a "
                              f"ppo-vec run or .pt checkpoint")
    if path.suffix != ".pt" or not path.is_file():
        raise ConfigError(f"init_from: {path} is neither a ppo-vec checkpoint (.pt) nor a run "
                          f"directory")
    try:
        state = load_checkpoint(path)
    except ValueError as exc:
        raise ConfigError(f"init_from: {exc}") from None
    theirs = {"ppo.net_arch": state["net_arch"],
              "ppo.critic_arch": state.get("critic_arch", state["net_arch"]),
              "ppo.activation": state["activation"], "vec.critic_state": state["critic_state"]}
    ours = {"ppo.net_arch": list(cfg.ppo.net_arch), "ppo.critic_arch": cfg.ppo.critic_hidden,
            "ppo.activation": cfg.ppo.activation, "vec.critic_state": cfg.vec.critic_state}
    differ = [f"{k} {ours[k]} (checkpoint: {theirs[k]})" for k in ours if ours[k] != theirs[k]]
    if differ:
        raise ConfigError(f"init_from: {path} has another network: {'; '.join(differ)}")
    from train.sb3_trainer import rules_for
    return widen_inputs(state, len(rules_for(cfg).rank_order))


def widen_inputs(state: dict[str, Any], R: int) -> dict[str, Any]:
    """A checkpoint of an earlier observation layout, its networks given zero weights for the
    slices added since: the same functions of the new inputs.

    Layout versions only append slices to the observation, and the full state is the
    observation followed by the hands, so the new columns go at the old observation's end
    (actor, and a critic on either input); Adam's moments get zeros there too."""
    import torch

    from arschloch_env.observation import Layout

    old = Layout(R).version_size(1)
    added = Layout(R).size - old

    def widen(t):
        return torch.cat([t[:, :old], t.new_zeros((t.shape[0], added)), t[:, old:]], dim=1)

    n_actor = len(state["net_arch"]) * 2 + 2  # the actor's weights and biases come first
    opt = dict(state["optimizer"]["state"])
    state = {**state, "optimizer": {**state["optimizer"], "state": opt}}
    for net, param, full in (("actor", 0, Layout(R).size),
                             ("critic", n_actor, Layout(R, state["critic_state"]).size)):
        if state[net]["0.weight"].shape[1] != full - added:
            continue
        state[net] = {**state[net], "0.weight": widen(state[net]["0.weight"])}
        state["obs_size" if net == "actor" else "critic_input"] = full
        if param in opt:
            opt[param] = {k: widen(v) if k.startswith("exp_avg") else v
                          for k, v in opt[param].items()}
    return state


def load_state(nets, optimizer, state: dict[str, Any]) -> None:
    """Actor, critic and optimizer state from a checkpoint's payload.

    Raises:
        ValueError: the layer sizes differ (another ``ppo.net_arch`` or ``ppo.critic_arch``,
            or a network for another deck's observation), with both networks' sizes.
    """
    for name in ("actor", "critic"):
        theirs = layer_sizes(state[name])
        layers = linear_layers(getattr(nets, name))
        ours = [layers[0].in_features, *(layer.out_features for layer in layers)]
        if theirs != ours:
            raise ValueError(f"the checkpoint's {name} is {' -> '.join(map(str, theirs))}, "
                             f"this run's {' -> '.join(map(str, ours))} (inputs, "
                             f"ppo.{'net_arch' if name == 'actor' else 'critic_arch'}, "
                             f"outputs): a checkpoint of another network or another deck")
    nets.actor.load_state_dict(state["actor"])
    nets.critic.load_state_dict(state["critic"])
    optimizer.load_state_dict(state["optimizer"])


def layer_sizes(state_dict: dict[str, Any]) -> list[int]:
    """``[inputs, hidden..., outputs]`` of a saved ``torch.nn.Sequential`` of linear layers."""
    weights = [state_dict[k] for k in sorted(
        (k for k in state_dict if k.endswith(".weight")), key=lambda k: int(k.split(".")[0]))]
    return [int(weights[0].shape[1]), *(int(w.shape[0]) for w in weights)] if weights else []


def checkpoint_mlp(path: str | Path) -> MLP:
    """The actor of a ppo-vec checkpoint as a numpy MLP (what ``arschloch export`` bundles)."""
    data = load_checkpoint(path)
    sd = data["actor"]
    k = len(data["net_arch"]) + 1
    keys = sorted({key.split(".")[0] for key in sd}, key=int)
    if len(keys) != k:
        raise ValueError(f"{path}: the actor has {len(keys)} layers, net_arch says {k}")
    return MLP([(sd[f"{i}.weight"].numpy(), sd[f"{i}.bias"].numpy()) for i in keys],
               data["activation"])


__all__ = ["actor_mlp", "checkpoint_mlp", "init_checkpoint", "layer_sizes", "linear_layers",
           "load_checkpoint", "load_state", "save_checkpoint", "widen_inputs"]
