"""Does a policy, without a hint, take the skill's actions? The family's reference plans replayed unguided.

For each task of the family's split the reference plan is replayed as the agent's own actions (no hint shown); at
each step the unguided policy's probability of the reference action is read: ``log π_u``, that probability times
the number of admissible actions (1 = uniform) and whether it is the policy's top choice. Steps 2 and 3 are the
skill (carrying a link into the next search); step 1 (the person) and step 4 (the answer) are what real tasks
already teach. A guided success that reached ``π_u`` shows here as a higher probability of steps 2 and 3.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

STEP_NAMES = ("search the person", "search link 1", "search link 2", "answer")


def skill_alignment(run_dir: Path, split: str, tasks: int = 0) -> dict:
    """Per plan step: mean ``log π_u``, mean ``π_u × candidates`` and the top-choice share, over the tasks."""
    import torch

    from agents.actguide.config import ActGuideConfig
    from agents.actguide.rollout import reset_task
    from agents.actguide.tasks import make_env, sample_tasks
    from agents.actguide.trainer import load_learner

    from .run import FAMILY

    learner, meta = load_learner(run_dir)
    config = ActGuideConfig.from_dict(meta["config"], where=str(run_dir))
    config.task_family, config.benchmarks = FAMILY, [FAMILY]
    env = make_env(config, split=split)
    rows: list[list[tuple[float, float, float]]] = [[] for _ in STEP_NAMES]
    for i, task_id in enumerate(sample_tasks(env, tasks, 0)):
        reset_task(env, task_id, int(np.random.default_rng([i, 11]).integers(2**31 - 1)), 0)
        plan = env.state.reference
        for step, action in enumerate(plan.actions if plan is not None else ()):
            if env.state.done:
                break
            cands = env.candidates
            match = [j for j, c in enumerate(cands) if c.kind == action.name and c.text.lower() == action.text.lower()]
            if not match:
                break
            obs = env._observation(guided=False)
            with torch.no_grad():
                logp = learner.network.log_probs(torch.as_tensor(obs["features"]), torch.as_tensor(obs["action_mask"]))
            value = float(logp[match[0]])
            rows[step].append((value, float(np.exp(value)) * len(cands), float(int(logp.argmax()) == match[0])))
            env.step(match[0])
    return {
        name: {
            "steps": len(r),
            "logp": float(np.mean([x[0] for x in r])) if r else None,
            "times_candidates": float(np.mean([x[1] for x in r])) if r else None,
            "top": float(np.mean([x[2] for x in r])) if r else None,
        }
        for name, r in zip(STEP_NAMES, rows, strict=True)
    }
