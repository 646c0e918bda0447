"""Supervised fine-tuning on the action data: the "SFT, then RL" baseline's first stage.

Every training task's reference sequence is replayed as the agent's own actions, without a hint, and the learner
is trained to maximise ``log π(reference action | unguided state)``. A discrete learner imitates the admissible
candidate most similar to each reference action (a reference query no candidate resembles is skipped, and the
episode follows the imitated action); a text learner imitates the protocol segment itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from steer_envs.envs.guided import GuidedSearchEnv
from steer_envs.executors.protocol import render_answer, render_search
from steer_envs.reference_plans.records import SEARCH
from steer_envs.text import similarity

from .config import ActGuideConfig
from .rollout import reset_task

#: a reference action is imitated only through a candidate at least this similar to it
MIN_SIMILARITY = 0.5


def demonstrations(env: GuidedSearchEnv, learner, task_ids: list[str], seed: int) -> tuple[list, list, int]:
    """(views, actions, env steps) of the reference sequences replayed as unguided episodes."""
    views, actions, steps = [], [], 0
    for i, task_id in enumerate(task_ids):
        reset_task(env, task_id, int(np.random.default_rng([seed, i, 5]).integers(2**31 - 1)), 0)
        state = env.state
        assert state is not None  # reset_task sets it
        reference = state.reference
        for ref_action in reference.actions if reference is not None else ():
            if state.done:
                break
            obs = env._observation()
            if learner.action_mode == "discrete":
                scored = [
                    (similarity(c.text, ref_action.text), j)
                    for j, c in enumerate(env.candidates)
                    if c.kind == ref_action.name
                ]
                best = max(scored, default=(0.0, -1))
                if best[0] < MIN_SIMILARITY:
                    continue
                action: Any = best[1]
            else:
                action = render_search(ref_action.text) if ref_action.name == SEARCH else render_answer(ref_action.text)
            views.append(learner.view(obs))
            actions.append(action)
            env.step(action)
            steps += 1
    return views, actions, steps


def supervised_finetune(
    learner, env: GuidedSearchEnv, task_ids: list[str], config: ActGuideConfig, batch_size: int = 64
) -> dict[str, Any]:
    """``config.sft_epochs`` epochs of cross-entropy on the demonstrations; returns what it did."""
    views, actions, steps = demonstrations(env, learner, task_ids, config.seed)
    params = [p for p in learner.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(params, lr=config.sft_lr)
    rng = np.random.default_rng([config.seed, 99])
    losses = []
    for _ in range(config.sft_epochs):
        order = rng.permutation(len(views))
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            logp = learner.token_logprobs([views[i] for i in idx], [actions[i] for i in idx])
            loss = -torch.cat([t.reshape(-1) for t in logp]).mean()
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, config.grad_clip)
            optimizer.step()
            losses.append(float(loss.detach()))
    return {
        "demonstrations": len(views),
        "env_steps": steps,
        "epochs": config.sft_epochs,
        "final_loss": losses[-1] if losses else None,
    }
