"""The action masks MaskablePPO asks for, answered from the envs' own step infos."""

from __future__ import annotations

import numpy as np
from stable_baselines3.common.vec_env import VecEnvWrapper


class MasksFromInfos(VecEnvWrapper):
    """Answers MaskablePPO's ``env_method("action_masks")`` with the masks that came with the
    last reset's or step's infos (``info["action_mask"]``, which the single-seat env gives).

    MaskablePPO asks before every step; asked of a ``SubprocVecEnv``, that is a second round
    trip to every env process per step, as long as the step's own."""

    masks: np.ndarray | None = None  # until the first reset: asked of the envs

    def reset(self):
        obs = self.venv.reset()
        self.reset_infos = self.venv.reset_infos
        self.masks = _stack(self.reset_infos)
        return obs

    def step_wait(self):
        obs, rewards, dones, infos = self.venv.step_wait()
        self.reset_infos = self.venv.reset_infos
        # an env whose episode ended was reset at once: its next mask is the reset's
        self.masks = _stack([reset if done else info
                             for info, reset, done in zip(infos, self.reset_infos, dones)])
        return obs, rewards, dones, infos

    def env_method(self, method_name, *args, indices=None, **kwargs):
        if method_name != "action_masks" or args or kwargs or self.masks is None:
            return self.venv.env_method(method_name, *args, indices=indices, **kwargs)
        return list(self.masks[self._get_indices(indices)])


def _stack(infos) -> np.ndarray:
    return np.stack([info["action_mask"] for info in infos]).astype(bool)
