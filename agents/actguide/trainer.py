"""The ACTGUIDE-RL trainer (the method, with the public implementation's rules where they differ from the paper).

Per iteration, for ``batch_tasks`` training tasks:

0. The tasks: the next ``batch_tasks`` of the pool's fixed permutation, after (``revisit_rescued``) the tasks whose
   guided group was rescued in the previous iteration, which take the first places (a task rescued again is
   revisited again; a revisit may meet its task again among the new ones).
1. ``G`` unguided rollouts (a GRPO group).
2. A group is **hard** when every unguided reward is 0 (no rollout succeeded). Only then guidance is chosen (and only
   while less than ``guidance_until`` of the budget is spent: after it, iterations are zero RL's): the
   adaptive guider binary-searches the minimal ``k`` (``lo = 0``, ``hi = L``, ``probes_per_step`` fresh probes per
   midpoint, at most ``max_probe_steps`` steps); when no probe succeeds the fallback guider gives full guidance.
3. ``G`` guided rollouts with that ``k`` **replace** the group and act as the behaviour policy.
4. GRPO advantages within each group (``guided_baseline="unguided"``: a guided group's baseline is the mean reward
   of the unguided group it replaced, scaled by the std over both); the loss per token is PPO's clipped surrogate,
   where for guided rollouts the ratio is ``r_mix = π_θ(y | unguided prompt) / π_old(y | guided prompt)``: clipped
   like PPO's (``ratio_shaping="clip"``), or, the default chosen on dev, the public implementation's LUFFY option
   (ratio 1 and the advantage weighted by ``r_mix / (r_mix + γ)``); plus ``kl_coef · KL(π_θ ‖ π_ref)`` (k3
   estimator) taken on the unguided prompt; token-mean over the batch; ``update_epochs`` optimiser steps.
   ``mixed_policy=False`` trains guided rollouts on the guided prompt instead, as if they were on-policy.

The log's ``guided_push_up`` / ``guided_push_down`` split the weighted advantage on guided tokens by sign (per trained
token): how hard an update pushes π_u toward the actions it took under guidance and away from them.

Every rollout counts against ``budget`` (unguided, probes, guided), so variants compare at equal rollout budgets.

Run folder: ``config.json`` (config + fingerprint), ``log.jsonl`` (one row per iteration), ``checkpoint.pt``
(tensors only: weights, optimiser, torch RNG; loads with ``weights_only=True``) with ``checkpoint.json`` (progress,
numpy RNG, counters), both rewritten atomically after every iteration; ``model.pt`` + ``model.json`` (the learner).
The folder, the accelerator (device, ``mixed_precision``, ``micro_batch``, several processes through
``accelerate launch``) and the micro-batched backward pass come from :mod:`agents.trainer_base`, as do the experiment
trackers of ``log_with`` (each iteration's numbers at step = the iteration, under ``<run>/trackers/``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from steer_envs.atomic import atomic_write_json
from steer_envs.cpu_threads import cpu_thread_default
from steer_envs.errors import SteerEnvsError

from ..grpo import baseline_advantages, clipped_surrogate_terms, group_advantages, kl_k3, shaped_weight
from ..steering.checkpoint import atomic_torch_save
from ..trainer_base import CONFIG_FILE, LOG_FILE, TrainerBase
from .config import ActGuideConfig
from .learners import build_learner, frozen_copy
from .rollout import Trajectory, reset_task, run_group
from .search import ForkProbes, ProbeCost, make_probes, minimal_k
from .tasks import make_env, training_pool

__all__ = [
    "CHECKPOINT_FILE",
    "CONFIG_FILE",
    "LOG_FILE",
    "MODEL_FILE",
    "MODEL_META",
    "PROGRESS_FILE",
    "ActGuideTrainer",
    "TrainResult",
    "UpdateBatch",
    "load_learner",
    "save_learner",
    "start_from",
]

CHECKPOINT_FILE = "checkpoint.pt"
PROGRESS_FILE = "checkpoint.json"
MODEL_FILE = "model.pt"
MODEL_META = "model.json"


@dataclass
class TrainResult:
    run_dir: Path
    iterations: int
    budget_used: int
    wall_s: float
    log: list[dict[str, Any]]


def _noop(*_args, **_kwargs) -> None:
    return None


def save_learner(learner, config: ActGuideConfig, run_dir: Path, extra: dict[str, Any] | None = None) -> None:
    """Weights (tensors only) plus a JSON card that rebuilds the learner (:func:`load_learner`)."""
    atomic_torch_save(learner.state_dict(), run_dir / MODEL_FILE)
    atomic_write_json(
        run_dir / MODEL_META,
        {
            "learner": config.learner,
            "learner_args": config.learner_args,
            "seed": config.seed,
            "config": config.to_dict(),
            **(extra or {}),
        },
    )


def load_learner(run_dir: str | Path):
    """Rebuild a trained learner from a run folder (``weights_only=True``: no code runs on load).

    The weights file is memory-mapped and, on the CPU, its tensors become the learner's weights (``assign``), so
    loading the packaged Gemma holds one copy of it rather than the freshly built model and the file's copy at
    once."""
    run_dir = Path(run_dir)
    meta_path, weights = run_dir / MODEL_META, run_dir / MODEL_FILE
    if not meta_path.is_file() or not weights.is_file():
        raise SteerEnvsError(
            f"no actguide model in {str(run_dir)!r}; train one with `steer-envs train actguide --out DIR`"
        )
    meta = json.loads(meta_path.read_text())
    learner = build_learner(meta["learner"], meta["learner_args"], meta["seed"])
    state = torch.load(weights, map_location="cpu", weights_only=True, mmap=True)
    on_cpu = all(p.device.type == "cpu" for p in learner.parameters())  # on an accelerator: copied to the device
    learner.load_state_dict(state, assign=on_cpu)
    return learner, meta


def start_from(learner, base) -> None:
    """Copy ``base``'s weights into ``learner``, except what the learner's own spec fixes: the hint-following
    parameter (a base trained without hints never changed it; the learner's ``follow`` decides it)."""
    own = learner.state_dict()
    keep = {k for k in own if k.endswith("hint_logit")}
    learner.load_state_dict({k: (own[k] if k in keep else v) for k, v in base.state_dict().items()})


def drop_failed(groups: list[list[Trajectory]]) -> tuple[list[list[Trajectory]], int]:
    """Failures are not rewards (``steer_envs.failures``): a trajectory a service failure cut short leaves its
    group, and a group that lost trajectories and keeps fewer than 2 is dropped (its advantages would be
    meaningless). Groups without failures are untouched. Returns the groups kept and how many were dropped."""
    kept, dropped = [], 0
    for group in groups:
        finished = [t for t in group if not t.failed]
        if len(finished) == len(group):
            kept.append(group)
        elif len(finished) >= 2:
            kept.append(finished)
        else:
            dropped += 1
    return kept, dropped


@dataclass
class UpdateBatch:
    """One iteration's trajectory steps, flattened to tokens once for every epoch of the update. ``offsets[i]`` is
    the first token of step ``i`` (``offsets[-1]`` = all tokens), so a micro-batch of steps is a slice of tokens."""

    views: list
    actions: list
    old: torch.Tensor  # behaviour log-probs per token
    adv: torch.Tensor  # the step's group advantage on each of its tokens
    guided: torch.Tensor  # whether the token was acted under guidance
    ref: torch.Tensor  # π_ref's log-probs on the (unguided where mixed) prompt
    offsets: list[int]

    @property
    def trained(self) -> torch.Tensor:
        return self.adv != 0


class ActGuideTrainer(TrainerBase):
    checkpoint_marker = PROGRESS_FILE
    config_what = "actguide config"
    tracker_project = "actguide"

    def __init__(
        self,
        config: ActGuideConfig,
        run_dir: str | Path,
        resume: bool = False,
        progress: bool = False,
        on_iteration_end: Callable[[int, dict[str, Any]], None] = _noop,
        learner=None,
    ) -> None:
        super().__init__(config, run_dir, resume=resume, progress=progress)
        self.on_iteration_end = on_iteration_end
        self._learner = learner

    def _checkpoint(self, learner, optimizer, generator, progress: dict[str, Any]) -> None:
        if not self.is_main_process:  # every process holds the same state; one writes it
            return
        self.folder.save_tensors(
            CHECKPOINT_FILE,
            {"learner": learner.state_dict(), "optimizer": optimizer.state_dict(), "generator": generator.get_state()},
        )
        self.folder.write_json(PROGRESS_FILE, progress)
        save_learner(
            learner,
            self.config,
            self.run_dir,
            {"iterations": progress["iteration"], "budget_used": progress["budget_used"]},
        )

    # -- the loop ---------------------------------------------------------------------------------------------------
    def run(self) -> TrainResult:
        try:
            return self._run()
        finally:
            self.end_tracking()  # the trackers end however the run ends (started by _prepare_run_dir)

    def _run(self) -> TrainResult:
        c = self.config
        cpu_thread_default(c.device, c.learner_args.get("device"))
        start = time.time()
        resuming = self._prepare_run_dir()
        env = make_env(c)
        pool = training_pool(env, c)
        learner = self._learner or build_learner(c.learner, self.model_args(c.learner_args), c.seed)
        if c.init_from and self._learner is None:
            base, _ = load_learner(c.init_from)
            start_from(learner, base)
        learner = self.place(learner)
        reference = frozen_copy(learner)  # π_ref = the initial policy (rebuilt identically on resume)
        # per-tensor updates (foreach=False): the fused path allocates temporaries the size of all the weights,
        # which for a language-model learner is a large share of a laptop's memory
        optimizer = torch.optim.Adam(
            [p for p in learner.parameters() if p.requires_grad], lr=c.lr, weight_decay=c.weight_decay, foreach=False
        )
        folder = self.folder
        generator = torch.Generator().manual_seed(c.seed)
        if resuming:
            ckpt = folder.load_tensors(CHECKPOINT_FILE)
            learner.load_state_dict(ckpt["learner"])
            optimizer.load_state_dict(ckpt["optimizer"])
            generator.set_state(ckpt["generator"])
            progress = folder.read_json(PROGRESS_FILE)
            folder.resume_log(progress["iteration"])
        else:
            folder.start_log()
            progress = {
                "iteration": 0,
                "budget_used": 0,
                "cursor": 0,
                "wall_s": 0.0,
                "sft": None,
                "probe_env_steps": 0,
                "probe_restart_env_steps": 0,
                "probe_rollouts": 0,
            }
            if c.sft_epochs > 0:
                from .sft import supervised_finetune

                progress["sft"] = supervised_finetune(learner, env, pool, c)
            self._checkpoint(learner, optimizer, generator, {**progress, "wall_s": time.time() - start})
        elapsed_before = float(progress["wall_s"])
        bar = self.progress_bar(c.budget, "rollouts", initial=progress["budget_used"])
        while progress["budget_used"] < c.budget:
            it = progress["iteration"]
            order = np.random.default_rng([c.seed, 17]).permutation(len(pool))
            revisit = list(progress.get("revisit", []))[: c.batch_tasks]  # rescued last iteration (revisit_rescued)
            fresh = c.batch_tasks - len(revisit)
            picked = revisit + [pool[order[(progress["cursor"] + j) % len(pool)]] for j in range(fresh)]
            guide = c.guidance and progress["budget_used"] < c.guidance_until * c.budget
            record = self._iteration(it, env, learner, reference, optimizer, generator, picked, guide)
            progress["revisit"] = record["rescued_tasks"] if c.revisit_rescued else []
            record.update(tasks=picked, revisited=len(revisit))
            progress["cursor"] += fresh
            progress["iteration"] = it + 1
            progress["budget_used"] += record["rollouts"]
            progress["probe_env_steps"] += record["probe_env_steps"]
            progress["probe_restart_env_steps"] += record["probe_restart_env_steps"]
            progress["probe_rollouts"] += record["probe_rollouts"]
            progress["wall_s"] = round(elapsed_before + time.time() - start, 2)
            record.update(budget_used=progress["budget_used"], wall_s=progress["wall_s"])
            self.append_log(record, step=it)
            self._checkpoint(learner, optimizer, generator, progress)
            bar.update(record["rollouts"], success=f"{record['unguided_success']:.2f}", hard=record["hard_groups"])
            self.on_iteration_end(it, record)
        bar.close()
        return TrainResult(
            self.run_dir, progress["iteration"], progress["budget_used"], float(progress["wall_s"]), self.finished_log()
        )

    # -- one iteration ------------------------------------------------------------------------------------------------
    def _choose_k(
        self, env, learner, task_id: str, seed: int, length: int, generator, stats: dict
    ) -> tuple[int | None, Any]:
        """The guidance for a hard group, and the probe runner whose prefix states it may reuse."""
        c = self.config
        if c.fixed_k > 0:
            return min(c.fixed_k, length), None
        if not c.adaptive:
            return length, None
        probes = make_probes(env, learner, task_id, seed, c.probes_per_step, generator, c.plan_mode)
        result = minimal_k(probes.probe, length, c.max_probe_steps)
        cost: ProbeCost = probes.cost
        stats["probe_rollouts"] += cost.rollouts
        stats["probe_env_steps"] += cost.env_steps
        stats["probe_restart_env_steps"] += cost.restart_env_steps
        stats["search_steps"].append(result.steps)
        stats["searches_found"] += int(result.found)
        if result.unknown:  # every rollout of a probe failed on a service: k is unknown, the group stays unguided
            stats["searches_unknown"] += 1
            return None, probes
        if result.found:
            return result.k, probes
        return (length, probes) if c.fallback else (None, probes)

    def _iteration(
        self, it, env, learner, reference, optimizer, generator, task_ids: list[str], guide: bool = True
    ) -> dict[str, Any]:
        """One iteration over ``task_ids``; hard groups are guided only when ``guide`` (the config's guidance and,
        past ``guidance_until`` of the budget, never)."""
        c = self.config
        t0 = time.time()
        stats: dict[str, Any] = {
            "probe_rollouts": 0,
            "probe_env_steps": 0,
            "probe_restart_env_steps": 0,
            "search_steps": [],
            "searches_found": 0,
            "searches_unknown": 0,
        }
        groups: list[list[Trajectory]] = []
        rollouts, hard, rescued = 0, 0, 0
        unguided_success: list[float] = []
        ks: list[int] = []
        rescued_tasks: list[str] = []
        failed_trajectories = 0
        for j, task_id in enumerate(task_ids):
            seed = int(np.random.default_rng([c.seed, it, j]).integers(2**31 - 1))
            reset_task(env, task_id, seed, 0, c.plan_mode)
            group = run_group(env, learner, c.group_size, generator)
            rollouts += len(group)
            failed_trajectories += sum(t.failed for t in group)
            finished = [t for t in group if not t.failed]  # a failed trajectory's 0 is not a reward
            unguided_success.extend(t.success for t in finished)
            is_hard = bool(finished) and all(t.reward <= 0.0 for t in finished)
            hard += int(is_hard)
            if guide and is_hard:
                length = len(env.state.reference) if env.state.reference is not None else 0
                k, probes = (
                    self._choose_k(env, learner, task_id, seed, length, generator, stats) if length else (None, None)
                )
                if k is not None and k > 0:
                    if isinstance(probes, ForkProbes):
                        state, _ = probes.start_state(k)  # prefix mode: fork from the prefix state built once
                    else:
                        reset_task(env, task_id, seed, k, c.plan_mode)
                        state = env.get_state()
                    replaced = tuple(t.reward for t in finished)
                    group = run_group(env, learner, c.group_size, generator, start=state)
                    for t in group:
                        t.replaced = replaced
                    rollouts += len(group)
                    failed_trajectories += sum(t.failed for t in group)
                    if any(t.success for t in group if not t.failed):
                        rescued += 1
                        rescued_tasks.append(task_id)
                    ks.append(k)
            groups.append(group)
        rollouts += stats["probe_rollouts"]
        guided_groups = sum(1 for g in groups if g and g[0].guided)
        groups, dropped_groups = drop_failed(groups)
        loss_stats = self._update(learner, reference, optimizer, groups)
        return {
            "iteration": it,
            "rollouts": rollouts,
            "unguided_success": float(np.mean(unguided_success)) if unguided_success else 0.0,
            "hard_groups": hard,
            "guidance_on": guide,
            "guided_groups": guided_groups,
            "rescued_groups": rescued,
            "rescued_tasks": rescued_tasks,
            "mean_k": float(np.mean(ks)) if ks else 0.0,
            "searches_found": stats["searches_found"],
            "searches_unknown": stats["searches_unknown"],
            "mean_search_steps": float(np.mean(stats["search_steps"])) if stats["search_steps"] else 0.0,
            "probe_rollouts": stats["probe_rollouts"],
            "probe_env_steps": stats["probe_env_steps"],
            "probe_restart_env_steps": stats["probe_restart_env_steps"],
            "failed_trajectories": failed_trajectories,
            "dropped_groups": dropped_groups,
            **loss_stats,
            "iteration_s": round(time.time() - t0, 2),
        }

    def _update(self, learner, reference, optimizer, groups: list[list[Trajectory]]) -> dict[str, float]:
        """GRPO advantages per group, then ``update_epochs`` steps on the mixed-policy clipped loss + KL."""
        c = self.config
        batch = self._update_batch(learner, reference, groups)
        if batch is None:
            return {
                "loss": 0.0,
                "loss_pg": 0.0,
                "loss_kl": 0.0,
                "tokens": 0,
                "r_mix": 0.0,
                "clip_frac": 0.0,
                "guided_push_up": 0.0,
                "guided_push_down": 0.0,
            }
        params = [p for p in learner.parameters() if p.requires_grad]
        first: dict[str, float] = {}
        for epoch in range(c.update_epochs):
            optimizer.zero_grad()
            stats, carried = self._gradients(learner, batch, epoch)
            if epoch == 0:
                first = stats
            if not carried:
                break
            self.sync_gradients(params)
            torch.nn.utils.clip_grad_norm_(params, c.grad_clip)
            optimizer.step()
        return first

    def _advantages(self, group: list[Trajectory]) -> np.ndarray:
        """GRPO advantages of one group; a guided group under ``guided_baseline="unguided"`` is baselined by the
        unguided group it replaced, and a guided group's advantages are scaled by ``guided_weight``."""
        rewards = [t.reward for t in group]
        guided = bool(group) and group[0].guided
        if self.config.guided_baseline == "unguided" and guided and group[0].replaced:
            adv = baseline_advantages(rewards, group[0].replaced)
        else:
            adv = group_advantages(rewards)
        return adv * self.config.guided_weight if guided else adv

    def _update_batch(self, learner, reference, groups: list[list[Trajectory]]) -> UpdateBatch | None:
        """The iteration's steps as one token batch (advantages per group; π_ref's log-probs taken once)."""
        c = self.config
        views, actions, olds, advs, acted_guided = [], [], [], [], []
        for group in groups:
            adv = self._advantages(group)
            for traj, a in zip(group, adv):
                for step in traj.steps:
                    use_unguided = c.mixed_policy and step.guided
                    views.append(step.unguided_view if use_unguided else step.view)
                    actions.append(step.action)
                    olds.append(step.old_logp)
                    advs.append(float(a))
                    acted_guided.append(step.guided)
        if not views:
            return None
        lengths = [int(o.numel()) for o in olds]
        old = torch.cat([o.reshape(-1) for o in olds])
        dev = old.device  # the learner's log-prob device: advantages and masks are built where they are mixed
        adv_tok = torch.repeat_interleave(
            torch.as_tensor(advs, dtype=torch.float32, device=dev), torch.as_tensor(lengths, device=dev)
        )
        guided_tok = torch.repeat_interleave(
            torch.as_tensor(acted_guided, device=dev), torch.as_tensor(lengths, device=dev)
        )
        size = c.micro_batch or len(views)  # π_ref in micro-batches too: no more activations than one backward's
        with torch.no_grad(), self.autocast():
            ref = torch.cat(
                [
                    r.reshape(-1).float() if c.mixed_precision != "no" else r.reshape(-1)
                    for i in range(0, len(views), size)
                    for r in reference.token_logprobs(views[i : i + size], actions[i : i + size])
                ]
            )
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(int).tolist()
        return UpdateBatch(views, actions, old, adv_tok, guided_tok, ref.to(dev), offsets)

    def _gradients(self, learner, batch: UpdateBatch, epoch: int) -> tuple[dict[str, float], bool]:
        """Backward of one epoch's loss into ``.grad``; returns the loss parts (for the log) and whether any gradient
        flowed. Both terms are token means over the whole batch, so a micro-batch of steps backs its token sum over
        the batch's token count: the micro-batches' gradients add up to the full batch's."""
        c = self.config
        old, adv_tok, guided_tok, ref = batch.old, batch.adv, batch.guided, batch.ref
        trained = batch.trained

        def pg_terms(new, old, adv_tok, guided_tok, trained):
            old_used, adv_used = old, adv_tok
            if c.ratio_shaping == "luffy" and c.mixed_policy:  # guided tokens: ratio 1, advantage · r/(r+γ)
                old_used = torch.where(guided_tok, new.detach(), old)
                adv_used = torch.where(guided_tok, adv_tok * shaped_weight(new, old, c.luffy_gamma), adv_tok)
            return clipped_surrogate_terms(new[trained], old_used[trained], adv_used[trained], c.clip_eps)

        def guided_push(new, old, adv_tok, guided_tok, trained) -> tuple[float, float]:
            """Sums of the weighted advantage on guided trained tokens, positive and negative parts: how hard the
            update pushes π_u toward guided actions and away from them (a diagnostic for the log)."""
            g = guided_tok & trained
            if not g.any():
                return 0.0, 0.0
            if c.ratio_shaping == "luffy" and c.mixed_policy:
                weighted = adv_tok[g] * shaped_weight(new[g], old[g], c.luffy_gamma)
            else:
                weighted = adv_tok[g] * torch.exp(new[g] - old[g])
            return float(weighted.clamp(min=0).sum()), float((-weighted).clamp(min=0).sum())

        def logprobs(a: int, b: int) -> torch.Tensor:
            new = torch.cat([t.reshape(-1) for t in learner.token_logprobs(batch.views[a:b], batch.actions[a:b])])
            return new.float() if c.mixed_precision != "no" else new

        if self.num_processes == 1 and not c.micro_batch:  # the whole batch in one pass
            with self.autocast():
                new = logprobs(0, len(batch.views))
                if trained.any():
                    loss_pg = -pg_terms(new, old, adv_tok, guided_tok, trained).mean()
                else:
                    loss_pg = new.sum() * 0.0
                loss_kl = kl_k3(new, ref).mean()
                loss = loss_pg + c.kl_coef * loss_kl
            first: dict[str, float] = {}
            if epoch == 0:
                with torch.no_grad():
                    ratio = torch.exp(new - old)
                    g = guided_tok & trained
                    up, down = guided_push(new, old, adv_tok, guided_tok, trained)
                    n = max(int(trained.sum()), 1)
                    first = {
                        "loss": float(loss.detach()),
                        "loss_pg": float(loss_pg.detach()),
                        "loss_kl": float(loss_kl.detach()),
                        "tokens": int(trained.sum()),
                        "r_mix": float(ratio[g].mean()) if g.any() else 0.0,
                        "clip_frac": float(((ratio[trained] - 1).abs() > c.clip_eps).float().mean())
                        if trained.any()
                        else 0.0,
                        "guided_push_up": up / n,
                        "guided_push_down": down / n,
                    }
            if loss.requires_grad:
                self.backward(loss)
            return first, bool(loss.requires_grad)

        n_tokens, n_trained = int(old.numel()), int(trained.sum())
        # sums over this process's micro-batches: pg, kl, r_mix over guided trained tokens (sum, count), clipped,
        # the guided push toward and away from guided actions
        sums = np.zeros(7)
        for chunk in self.micro_batches(len(batch.views)):
            a, b = batch.offsets[chunk.start], batch.offsets[chunk.stop]
            with self.autocast():
                new = logprobs(chunk.start, chunk.stop)
                tr = trained[a:b]
                if n_trained:
                    pg = -pg_terms(new, old[a:b], adv_tok[a:b], guided_tok[a:b], tr).sum() / n_trained
                else:
                    pg = new.sum() * 0.0
                kl = kl_k3(new, ref[a:b]).sum() / n_tokens
                loss = pg + c.kl_coef * kl
            if loss.requires_grad:
                self.backward(loss)
            if epoch == 0:
                with torch.no_grad():
                    ratio = torch.exp(new - old[a:b])
                    g = guided_tok[a:b] & tr
                    sums += [
                        float(pg.detach()),
                        float(kl.detach()),
                        float(ratio[g].sum()),
                        float(g.sum()),
                        float(((ratio[tr] - 1).abs() > c.clip_eps).sum()),
                        *guided_push(new, old[a:b], adv_tok[a:b], guided_tok[a:b], tr),
                    ]
        first = {}
        if epoch == 0:
            pg_v, kl_v, r_sum, r_n, clipped, up, down = self.reduce_sum(sums.tolist())
            n = max(n_trained, 1)
            first = {
                "loss": pg_v + c.kl_coef * kl_v,
                "loss_pg": pg_v,
                "loss_kl": kl_v,
                "tokens": n_trained,
                "r_mix": r_sum / r_n if r_n else 0.0,
                "clip_frac": clipped / n_trained if n_trained else 0.0,
                "guided_push_up": up / n,
                "guided_push_down": down / n,
            }
        return first, any(p.requires_grad for p in learner.parameters())
