"""Barrier diagnostics: where a policy's success potential collapses and how guidance recovers it.

For a task set and a policy:

* **Prefix-level Pass@K** for ``k = 0..L``: ``K`` rollouts from the state after the first ``k`` reference actions
  (prefix mode; the states are built once and rollouts fork from them), any success counts. ``k`` beyond a task's
  length uses the whole reference.
* **M_t**: the remaining success potential along the policy's own unguided trajectories, ``M_t = E[Ψ(s_t)]`` with
  ``Ψ(s_t)`` estimated by ``K`` continuations from ``s_t`` (1 if any succeeds; a terminal state counts its own
  outcome). ``κ_t = M_{t+1} / M_t`` is one-step reachability; a barrier is a collapse of ``M_t``.
* **B_k** ``= log(M^{π(·|s,g_k)} / M^{π(·|s)})``: the barrier-recovery gain of a ``k``-action hint in the prompt,
  with ``M`` the mean Pass@K from the start (a small ε keeps the log finite).
* **ΔLogit** ``= log π(a|s,g_k) − log π(a|s)`` on the actions of guided rollouts: how far the guided policy is
  from the unguided one (the off-policy risk of training on guided rollouts); reported as the mean absolute value.

Env steps of the prefix-level probes are counted as spent (forking) and as they would be restarting each probe
from the prompt.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from steer_envs.cpu_threads import cpu_thread_default
from steer_envs.envs.guided import GuidedSearchEnv

from .rollout import reset_task, run_group
from .search import ForkProbes, probe_outcome

EPS = 1e-3


@dataclass
class BarrierReport:
    label: str
    tasks: int
    K: int
    prefix_pass: dict[int, float] = field(default_factory=dict)  # k -> mean Pass@K from the prefix state
    M: list[float] = field(default_factory=list)  # t -> M_t
    kappa: list[float] = field(default_factory=list)  # t -> κ_t
    prompt_pass: dict[int, float] = field(default_factory=dict)  # k -> mean Pass@K with a k-action hint
    B: dict[int, float] = field(default_factory=dict)
    delta_logit: dict[int, float] = field(default_factory=dict)
    fork_env_steps: int = 0
    restart_env_steps: int = 0
    #: the per-task values behind ``prefix_pass`` and ``prompt_pass`` (k -> one 0/1 per measured task) and ``M`` (one
    #: Ψ̂ row per task, NaN where unmeasured): what a task-resampled interval needs
    prefix_by_task: dict[int, list[float]] = field(default_factory=dict)
    prompt_by_task: dict[int, list[float]] = field(default_factory=dict)
    potential_by_task: list[list[float]] = field(default_factory=list)
    #: measurements left out because every rollout behind them failed on a service (``steer_envs.failures``): a
    #: failure is no outcome, so it neither lowers a Pass@K nor enters M_t
    unknown: int = 0

    @property
    def fork_ratio(self) -> float:
        return self.fork_env_steps / max(1, self.restart_env_steps)

    def to_dict(self) -> dict:
        return {**asdict(self), "fork_ratio": self.fork_ratio}


def _potential_along(
    env: GuidedSearchEnv, learner, task_id: str, seed: int, K: int, horizon: int, generator: torch.Generator
) -> list[float]:
    """Ψ̂(s_t), t = 0..horizon, along one unguided trajectory of the policy."""
    reset_task(env, task_id, seed, 0, "prompt")
    values: list[float] = []
    for _ in range(horizon + 1):
        state = env.get_state()
        episode = state["episode"]
        if episode.done:
            values.append(float("nan") if episode.failure_source is not None else float(env.score() > 0))
            continue
        passed = probe_outcome(run_group(env, learner, K, generator, start=state))
        values.append(float("nan") if passed is None else float(passed))
        env.set_state(state)
        obs = env._observation()
        (action,), _ = learner.act([learner.view(obs)], generator)
        env.step(action)
    return values


def diagnose(
    learner,
    env: GuidedSearchEnv,
    task_ids: Sequence[str],
    label: str,
    K: int = 8,
    max_k: int = 4,
    horizon: int = 4,
    seed: int = 0,
) -> BarrierReport:
    cpu_thread_default(getattr(learner, "device", "cpu"))
    generator = torch.Generator().manual_seed(seed)
    report = BarrierReport(label, len(task_ids), K)
    prefix: dict[int, list[float]] = defaultdict(list)
    prompt: dict[int, list[float]] = defaultdict(list)
    dlogit: dict[int, list[float]] = defaultdict(list)
    potentials: list[list[float]] = []
    for i, task_id in enumerate(task_ids):
        task_seed = int(np.random.default_rng([seed, i]).integers(2**31 - 1))
        length = len(env.reference_for(task_id) or ())
        probes = ForkProbes(env, learner, task_id, task_seed, K, generator, "prefix")
        for k in range(max_k + 1):
            passed = probes.probe(min(k, length))
            if passed is None:
                report.unknown += 1
            else:
                prefix[k].append(float(passed))
        report.fork_env_steps += probes.cost.env_steps
        report.restart_env_steps += probes.cost.restart_env_steps
        for k in range(max_k + 1):
            reset_task(env, task_id, task_seed, min(k, length), "prompt")
            group = run_group(env, learner, K, generator)
            passed = probe_outcome(group)
            if passed is None:
                report.unknown += 1
            else:
                prompt[k].append(float(passed))
            group = [t for t in group if not t.failed]
            if k > 0:
                steps = [s for t in group for s in t.steps if s.guided]
                if steps:
                    with torch.no_grad():
                        g = torch.cat(
                            [
                                x.reshape(-1)
                                for x in learner.token_logprobs([s.view for s in steps], [s.action for s in steps])
                            ]
                        )
                        u = torch.cat(
                            [
                                x.reshape(-1)
                                for x in learner.token_logprobs(
                                    [s.unguided_view for s in steps], [s.action for s in steps]
                                )
                            ]
                        )
                    finite = torch.isfinite(g) & torch.isfinite(u)
                    dlogit[k].append(float((g - u)[finite].abs().mean()) if finite.any() else 0.0)
        along = _potential_along(env, learner, task_id, task_seed, K, horizon, generator)
        report.unknown += sum(math.isnan(v) for v in along)
        potentials.append(along)
    report.prefix_pass = {k: float(np.mean(v)) for k, v in sorted(prefix.items())}
    report.prefix_by_task = {k: list(v) for k, v in sorted(prefix.items())}
    report.prompt_by_task = {k: list(v) for k, v in sorted(prompt.items())}
    report.potential_by_task = [list(row) for row in potentials]
    report.prompt_pass = {k: float(np.mean(v)) for k, v in sorted(prompt.items())}
    base = report.prompt_pass.get(0, 0.0)
    report.B = {k: math.log((v + EPS) / (base + EPS)) for k, v in report.prompt_pass.items()}
    report.delta_logit = {k: float(np.mean(v)) for k, v in sorted(dlogit.items())}
    report.M = [_nanmean(col) for col in np.asarray(potentials).T] if potentials else []
    report.kappa = [
        report.M[t + 1] / report.M[t] if report.M[t] > 0 else float("nan") for t in range(len(report.M) - 1)
    ]
    return report


def _nanmean(values) -> float:
    """The mean of the measured values (NaN: every rollout behind it failed); NaN when none was measured."""
    finite = [float(v) for v in values if not math.isnan(v)]
    return float(np.mean(finite)) if finite else float("nan")


def barrier_table(reports: Sequence[BarrierReport]) -> str:
    """A markdown table per quantity, one row per policy."""
    lines = []
    ks = sorted({k for r in reports for k in r.prefix_pass})
    lines.append("| Policy | " + " | ".join(f"Pass@K prefix k={k}" for k in ks) + " |")
    lines.append("|---|" + "---:|" * len(ks))
    for r in reports:
        lines.append(f"| {r.label} | " + " | ".join(f"{r.prefix_pass.get(k, float('nan')):.2f}" for k in ks) + " |")
    lines.append("")
    lines.append(
        "| Policy | "
        + " | ".join(f"Pass@K hint k={k}" for k in ks)
        + " | "
        + " | ".join(f"B_{k}" for k in ks if k)
        + " | "
        + " | ".join(f"|ΔLogit| k={k}" for k in ks if k)
        + " |"
    )
    lines.append("|---|" + "---:|" * (3 * len(ks) - 2))
    for r in reports:
        lines.append(
            f"| {r.label} | "
            + " | ".join(f"{r.prompt_pass.get(k, float('nan')):.2f}" for k in ks)
            + " | "
            + " | ".join(f"{r.B.get(k, float('nan')):+.2f}" for k in ks if k)
            + " | "
            + " | ".join(f"{r.delta_logit.get(k, float('nan')):.2f}" for k in ks if k)
            + " |"
        )
    lines.append("")
    horizon = max((len(r.M) for r in reports), default=0)
    lines.append(
        "| Policy | "
        + " | ".join(f"M_{t}" for t in range(horizon))
        + " | "
        + " | ".join(f"κ_{t}" for t in range(horizon - 1))
        + " |"
    )
    lines.append("|---|" + "---:|" * (2 * horizon - 1))
    for r in reports:
        lines.append(
            f"| {r.label} | "
            + " | ".join(f"{m:.2f}" for m in r.M)
            + " | "
            + " | ".join("–" if math.isnan(k) else f"{k:.2f}" for k in r.kappa)
            + " |"
        )
    lines.append("")
    lines.append("| Policy | env steps (fork) | env steps (restart from the prompt) | ratio |")
    lines.append("|---|---:|---:|---:|")
    for r in reports:
        lines.append(f"| {r.label} | {r.fork_env_steps} | {r.restart_env_steps} | {r.fork_ratio:.2f} |")
    return "\n".join(lines)


def barrier_plot(reports: Sequence[BarrierReport], path: str | Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for r in reports:
        ks = sorted(r.prefix_pass)
        axes[0].plot(ks, [r.prefix_pass[k] for k in ks], marker="o", label=f"{r.label}: prefix")
        axes[0].plot(ks, [r.prompt_pass[k] for k in ks], marker="s", linestyle="--", label=f"{r.label}: hint")
        axes[1].plot(range(len(r.M)), r.M, marker="o", label=r.label)
        kk = sorted(r.B)
        axes[2].plot(kk, [r.B[k] for k in kk], marker="o", label=f"{r.label}: B_k")
        kd = sorted(r.delta_logit)
        axes[2].plot(kd, [r.delta_logit[k] for k in kd], marker="x", linestyle=":", label=f"{r.label}: |ΔLogit|")
    axes[0].set(
        xlabel="k (reference actions)",
        ylabel=f"Pass@{reports[0].K}" if reports else "Pass@K",
        title="Prefix-level Pass@K",
    )
    axes[1].set(xlabel="t (step of the policy's own trajectory)", ylabel="M_t", title="Remaining success potential")
    axes[2].set(xlabel="k", title="Barrier-recovery gain B_k and |ΔLogit|")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
