"""The steering agent's RL trainer (the algorithm of :mod:`agents.steering.config`).

1. State bank: no-intervention rollouts of the frozen executor; every state gets its fast-path priority.
2. ``m`` rounds; each draws up to ``k`` states without replacement (top priority w.p. ``1 − ε_sel``, else
   uniform), priorities refreshed with the current fast path at the start of the round.
3. Per state: ``G`` slow-path samples; ``N`` continuations (via ``fork``) after each sample and after pass,
   giving ``R̄_{s,j}`` and ``b_s`` (continuations pass after their first action; ``continuation="policy"`` lets the
   current steerer take their later decisions, so repeated interventions are trained on). A steerer whose slow
   path may pass (``backbone_args={"slow_pass": True}``) has pass samples in the group: their return is ``b_s``.
4. ``q(s) = mean_j |R̄_{s,j} − b_s|``; pairwise ranking loss over pairs of states of the same task.
5. GRPO on the slow path with ``b_s`` inside the normalisation group.
6. ``L = L_GRPO + L_rank``; one optimiser step per round; only the steerer's parameters change (the executor
   is a simulator or a frozen model behind the environment, never touched).

Run folder: ``config.json``, ``log.jsonl`` (one record per round), ``checkpoint.pt`` (model, optimiser, RNGs,
state bank, next round) rewritten atomically after every round, ``model.pt`` (weights + spec + τ, for
evaluation). ``resume=True`` continues from the checkpoint with the same state bank. The folder, the accelerator
(device, ``mixed_precision``, ``micro_batch``, several processes through ``accelerate launch``) and the
micro-batched backward pass come from :mod:`agents.trainer_base`, as do the experiment trackers of ``log_with``
(each round's numbers at step = the round, under ``<run>/trackers/``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from steer_envs import __version__
from steer_envs.cpu_threads import cpu_thread_default
from steer_envs.data import load_tasks
from steer_envs.errors import SteerEnvsError

from ..trainer_base import (
    CONFIG_FILE,
    LOG_FILE,
    VERSION_KEY,
    Progress,
    TrainerBase,
    check_run_version,
    weights_digest,
)
from .backbones import build_steerer
from .checkpoint import load_checkpoint, save_checkpoint
from .config import SteeringConfig
from .gate import gate_probability
from .interventions import options_from_catalogue
from .objectives import (
    grpo_advantages,
    grpo_clipped_loss,
    grpo_loss,
    intervention_effect,
    ranking_loss,
    same_task_pairs,
    sampled_pairs,
)
from .rollouts import (
    BankState,
    ContinuationPolicy,
    collect_state_bank,
    continuation_seeds,
    make_steering_env,
    measure_states,
)
from .selection import epsilon_greedy_select, random_subset
from .steerer import Steerer

__all__ = [
    "CHECKPOINT_FILE",
    "CONFIG_FILE",
    "LOG_FILE",
    "MODEL_FILE",
    "SteeringTrainer",
    "TrainResult",
    "load_model",
    "save_model",
]

CHECKPOINT_FILE = "checkpoint.pt"
MODEL_FILE = "model.pt"


@dataclass
class TrainResult:
    run_dir: Path
    rounds: int
    wall_s: float
    log: list[dict[str, Any]]
    #: whether training moved the weights from where they started (None: a run resumed from an older checkpoint)
    weights_changed: bool | None = None


def labelled_q(state: BankState) -> float:
    """The q(s) of a state the round ranks (measured this round or kept from an earlier one: never None there)."""
    if state.q is None:
        raise ValueError(f"a state of task {state.task_id} has no q(s) label to rank by")
    return state.q


def _noop(*_args, **_kwargs) -> None:
    return None


_Progress = Progress  # the earlier private name


def save_model(steerer: Steerer, path: Path, tau: float, extra: dict[str, Any] | None = None) -> None:
    """Weights plus what is needed to rebuild the steerer (backbone kind, spec, options) and the trained τ."""
    payload = {
        "kind": steerer.kind,
        "spec": steerer.build_spec(),
        "options": [(o.index, o.name, o.template) for o in steerer.options],
        "state_dict": steerer.checkpoint_state_dict(),
        "tau": tau,
        "extra": extra or {},
        VERSION_KEY: __version__,
    }
    save_checkpoint(payload, path)
    artifacts = getattr(steerer, "save_artifacts", None)  # e.g. a LoRA steerer's peft adapter folder beside it
    if artifacts is not None:
        artifacts(path)


def load_model(path: str | Path) -> tuple[Steerer, dict[str, Any]]:
    """Rebuild a steerer saved by :func:`save_model` (or from a run folder's ``model.pt``)."""
    from .interventions import InterventionOption

    path = Path(path)
    if path.is_dir():
        path = path / MODEL_FILE
    if not path.is_file():
        raise SteerEnvsError(
            f"no steering model at {str(path)!r}; train one with `steer-envs train steering --out DIR`"
        )
    payload = load_checkpoint(path)
    check_run_version(payload, path, what="steering model")
    options = [InterventionOption(*o) for o in payload["options"]]
    steerer = build_steerer(payload["kind"], options, payload["spec"])
    steerer.load_checkpoint_state_dict(payload["state_dict"])
    steerer.eval()
    return steerer, payload


class SteeringTrainer(TrainerBase):
    checkpoint_marker = CHECKPOINT_FILE
    config_what = "config"
    tracker_project = "steering"

    def __init__(
        self,
        config: SteeringConfig,
        run_dir: str | Path,
        resume: bool = False,
        progress: bool = False,
        on_round_end: Callable[[int, dict[str, Any]], None] = _noop,
        env=None,
        steerer: Steerer | None = None,
        pool=None,
    ) -> None:
        super().__init__(config, run_dir, resume=resume, progress=progress)
        self.on_round_end = on_round_end
        self._env = env
        self._steerer = steerer
        #: where bank rollouts and q(s) continuations run (a PoolConfig, a RolloutPool, or None = this process);
        #: not part of the config fingerprint: every pool gives the same run
        self.pool = pool
        #: the trainable weights' digest when the run started (:func:`weights_digest`), kept in the checkpoint
        self._initial_weights: str | None = None

    # -- building blocks ------------------------------------------------------------------------------------
    def _build_env(self):
        if self._env is None:
            c = self.config
            self._env = make_steering_env(
                c.executor,
                c.split,
                benchmarks=c.benchmarks,
                max_turns=c.max_turns,
                metric=c.metric,
                cost=c.intervention_cost,
                action_mode=c.action_mode,
                data_dir=c.data_dir,
                env_id=c.env_id,
            )
        return self._env

    def _bank_task_ids(self) -> list[str]:
        c = self.config
        tasks = load_tasks(c.benchmarks, c.split, data_dir=c.data_dir)
        ids = [t.id for t in tasks]
        if c.bank_tasks and c.bank_tasks < len(ids):
            rng = np.random.default_rng([c.bank_seed, 1])
            ids = random_subset(ids, c.bank_tasks, rng)
        return ids

    def _refresh_priorities(self, steerer: Steerer, bank: list[BankState], batch: int = 256) -> np.ndarray:
        # fast_scores scores each slice in padded batches (the LLM steerer's batch_size), not one state at a time
        with torch.no_grad():
            zs = []
            for i in range(0, len(bank), batch):
                zs.append(steerer.fast_scores([s.observation for s in bank[i : i + batch]]).float().cpu().numpy())
        z = np.concatenate(zs)
        for state, value in zip(bank, z):
            state.priority = float(value)
        return z

    # -- the loop -----------------------------------------------------------------------------------------------
    def run(self) -> TrainResult:
        from contextlib import ExitStack

        from steer_envs.rollouts import using_pool

        with ExitStack() as pools:
            pools.callback(self.end_tracking)  # the trackers end last, however the run ends (started by _run)
            pool = pools.enter_context(using_pool(self.pool))  # a pool handed in stays open: it belongs to the caller
            return self._run(pool, pools)

    def _run(self, pool, pools=None) -> TrainResult:
        from steer_envs.rollouts import concurrent_pool, executor_of, using_pool

        c = self.config
        cpu_thread_default(c.device, c.backbone_args.get("device"))
        start = time.time()
        resuming = self._prepare_run_dir()
        env = self._build_env()
        if pools is not None:
            # one pool for the whole run: an ``auto`` pool with an I/O-bound executor becomes a concurrent pool here,
            # once, instead of a fresh one (its env replicas rebuilt) on every collect/measure call
            pool = pools.enter_context(using_pool(concurrent_pool(pool, executor_of(env))))
        options = options_from_catalogue(env.unwrapped.catalogue)
        steerer = self.place(self._steerer or build_steerer(c.backbone, options, self.model_args(c.backbone_args)))
        steerer.set_action_mode(c.action_mode)
        params = steerer.trainable_parameters()
        optimizer = torch.optim.AdamW(params, lr=c.lr, weight_decay=c.weight_decay)
        folder = self.folder

        if resuming:
            ckpt = folder.load_checkpoint(CHECKPOINT_FILE)
            steerer.load_checkpoint_state_dict(ckpt["steerer"])
            optimizer.load_state_dict(ckpt["optimizer"])
            bank: list[BankState] = ckpt["bank"]
            first_round = ckpt["next_round"]
            rng = np.random.default_rng()
            rng.bit_generator.state = ckpt["rng"]
            generator = torch.Generator()
            generator.set_state(ckpt["torch_generator"])
            torch.set_rng_state(ckpt["torch_global"])
            elapsed_before = ckpt.get("wall_s", 0.0)
            self._initial_weights = ckpt.get("initial_weights")  # None in a checkpoint written before it was kept
            folder.resume_log(first_round)  # drop a log row of a round that never checkpointed
        else:
            self._initial_weights = weights_digest(params)
            folder.start_log()
            # each task rolled out bank_rollouts times (seeds differ): its states, from every rollout, are the
            # "states of the same task" the ranking loss compares
            ids = self._bank_task_ids() * c.bank_rollouts
            bar = self.progress_bar(len(ids), "state bank")
            bank = collect_state_bank(env, ids, c.bank_seed * 1_000_003, c.action_mode, bar.update, pool=pool)
            bar.close()
            first_round = 0
            rng = np.random.default_rng([c.seed, 2])
            generator = torch.Generator().manual_seed(c.seed)
            torch.manual_seed(c.seed)
            elapsed_before = 0.0
            self._refresh_priorities(steerer, bank)
            self._checkpoint(steerer, optimizer, bank, 0, rng, generator, time.time() - start)

        rounds_bar = self.progress_bar(c.m, "rounds", initial=first_round)
        for round_index in range(first_round, c.m):
            record = self._round(round_index, env, steerer, optimizer, bank, rng, generator, pool)
            record["wall_s"] = round(elapsed_before + time.time() - start, 2)
            self.append_log(record, step=round_index)
            self._checkpoint(
                steerer, optimizer, bank, round_index + 1, rng, generator, elapsed_before + time.time() - start
            )
            rounds_bar.update(1, loss=f"{record['loss']:.3f}", q=f"{record['mean_q']:.3f}")
            self.on_round_end(round_index, record)
        rounds_bar.close()
        changed = None if self._initial_weights is None else weights_digest(params) != self._initial_weights
        if changed is False:
            self.warn(
                f"the trained steerer's weights equal its starting weights after {c.m} round(s) (a LoRA adapter "
                "that equals its base); usually every round's GRPO advantages were zero and it had no ranking pairs "
                "(see grpo_groups and rank_pairs in the log): raise G, N or k, or train longer"
            )
        if self.is_main_process:
            extra = {"config": c.to_dict(), "rounds": c.m, "weights_changed": changed}
            save_model(steerer, self.run_dir / MODEL_FILE, c.tau, extra)
        log = self.finished_log()
        return TrainResult(self.run_dir, c.m, elapsed_before + time.time() - start, log, changed)

    def _checkpoint(self, steerer, optimizer, bank, next_round, rng, generator, wall_s) -> None:
        if not self.is_main_process:  # every process holds the same state; one writes it
            return
        self.folder.save_checkpoint(
            CHECKPOINT_FILE,
            {
                "steerer": steerer.checkpoint_state_dict(),
                "optimizer": optimizer.state_dict(),
                "bank": bank,
                "next_round": next_round,
                "rng": rng.bit_generator.state,
                "torch_generator": generator.get_state(),
                "torch_global": torch.get_rng_state(),
                "fingerprint": self.config.fingerprint(),
                "wall_s": wall_s,
                "initial_weights": self._initial_weights,
            },
        )
        save_model(
            steerer, self.run_dir / MODEL_FILE, self.config.tau, {"config": self.config.to_dict(), "rounds": next_round}
        )

    # -- the update ---------------------------------------------------------------------------------------------
    def _update(
        self, steerer, optimizer, learn, old_logp, rank_states, pairs, n_measured
    ) -> tuple[dict[str, float], float]:
        """``update_epochs`` optimiser steps on ``L = L_GRPO + L_rank``: GRPO's policy gradient on fresh samples in
        the first epoch, its clipped surrogate after; returns the first epoch's losses and the last gradient norm."""
        c = self.config
        params = steerer.trainable_parameters()
        first: dict[str, float] = {}
        grad_norm = 0.0
        for epoch in range(c.update_epochs):
            optimizer.zero_grad()
            losses, carried = self._gradients(steerer, learn, old_logp, rank_states, pairs, n_measured, epoch)
            if epoch == 0:
                first = losses
            if not carried:
                break
            self.sync_gradients(params)
            grad_norm = float(torch.nn.utils.clip_grad_norm_(params, c.grad_clip))
            optimizer.step()
        return first, grad_norm

    def _gradients(
        self, steerer, learn, old_logp, rank_states, pairs, n_measured, epoch
    ) -> tuple[dict[str, float], bool]:
        """Backward of one epoch's loss into the parameters' ``.grad``; returns its parts and whether any gradient
        flowed. ``L_GRPO`` sums per-state terms over ``n_measured``, so a micro-batch of states backs its own sum (its
        share). ``L_rank`` is a mean over pairs that couples states, so it is micro-batched the gradient-cache way:
        scores of every involved state without a graph, ``dL/dz`` from them, then each micro-batch of states is
        re-scored and backs ``sum(z · dL/dz)``. Both give the full batch's gradient (up to float rounding)."""
        c = self.config
        denom = max(1, n_measured)

        def grpo_term(i: int) -> torch.Tensor:
            state, samples, adv = learn[i]
            logp = steerer.slow_logprobs(state.observation, samples)
            return grpo_loss(logp, adv) if epoch == 0 else grpo_clipped_loss(logp, old_logp[i], adv, c.clip_eps)

        involved = sorted({i for p in pairs for i in p})
        where = {i: j for j, i in enumerate(involved)}
        local_pairs = [(where[a], where[b]) for a, b in pairs]
        observations = [rank_states[i].observation for i in involved]
        if self.num_processes == 1 and not c.micro_batch:  # the whole batch in one pass
            with self.autocast():
                grpo_total = torch.zeros(())
                for i in range(len(learn)):
                    grpo_total = grpo_total + grpo_term(i)
                l_grpo = grpo_total / denom
                l_rank = ranking_loss(steerer.fast_scores(observations), local_pairs) if pairs else torch.zeros(())
                loss = l_grpo + l_rank
            if loss.requires_grad:
                self.backward(loss)
            return (
                {
                    "loss": float(loss.detach()),
                    "loss_grpo": float(l_grpo.detach()),
                    "loss_rank": float(l_rank.detach()),
                },
                bool(loss.requires_grad),
            )

        grpo_value = 0.0
        for chunk in self.micro_batches(len(learn)):
            with self.autocast():
                part = sum((grpo_term(i) for i in chunk), torch.zeros(())) / denom
            self.backward(part)
            grpo_value += float(part.detach())
        (grpo_value,) = self.reduce_sum([grpo_value])
        rank_value = 0.0
        if pairs:
            size = c.micro_batch or len(observations)
            with torch.no_grad(), self.autocast():  # every process scores every involved state (no graph kept)
                z_all = torch.cat(
                    [
                        steerer.fast_scores(observations[i : i + size]).reshape(-1)
                        for i in range(0, len(observations), size)
                    ]
                )
            z_leaf = z_all.detach().float().requires_grad_(True)
            l_rank = ranking_loss(z_leaf, local_pairs)
            (dz,) = torch.autograd.grad(l_rank, z_leaf)
            rank_value = float(l_rank.detach())
            for chunk in self.micro_batches(len(observations)):
                with self.autocast():
                    z = steerer.fast_scores(observations[chunk.start : chunk.stop]).reshape(-1)
                    surrogate = (z.float() * dz[chunk.start : chunk.stop].to(z.device)).sum()
                self.backward(surrogate)
        losses = {"loss": grpo_value + rank_value, "loss_grpo": grpo_value, "loss_rank": rank_value}
        return losses, bool(learn) or bool(pairs)

    def _round(self, round_index, env, steerer, optimizer, bank, rng, generator, pool) -> dict[str, Any]:
        c = self.config
        t0 = time.time()
        steerer.eval()
        z_all = self._refresh_priorities(steerer, bank)
        eligible = [i for i, s in enumerate(bank) if not s.used]  # without replacement over the whole run
        if not eligible:
            raise SteerEnvsError(
                f"round {round_index}: every bank state was used already (each is measured once); raise bank_tasks or "
                f"lower m*k (m={c.m}, k={c.k}, bank={len(bank)} states)"
            )
        picked = [eligible[j] for j in epsilon_greedy_select([bank[i].priority for i in eligible], c.k, c.eps_sel, rng)]

        advantages_all, qs, rollouts, hits, slow_pass = [], [], 0, 0, 0
        failed_continuations = dropped_continuations = skipped_states = 0
        measured: list[tuple[BankState, list, np.ndarray]] = []
        # slow samples first (in state order, one generator), then every state's continuations on the pool
        sampled = [(idx, steerer.sample_slow(bank[idx].observation, c.G, generator)) for idx in picked]
        requests = [
            (
                bank[idx],
                [s.to_action(c.action_mode) for s in samples],
                continuation_seeds([c.seed, round_index, idx], c.N),
            )
            for idx, samples in sampled
        ]
        # continuation="policy": the current steerer takes the later decisions of every continuation, so repeated
        # interventions (and their cost) are in the labels; "pass" (default) leaves the executor alone after one
        policy = (
            ContinuationPolicy(steerer, c.tau, c.continuation_gate, c.action_mode)
            if c.continuation == "policy"
            else None
        )
        for (idx, samples), m in zip(sampled, measure_states(env, requests, c.action_mode, pool=pool, policy=policy)):
            state = bank[idx]
            rollouts += m.rollouts
            hits += m.cache_hits
            slow_pass += sum(s.is_pass for s in samples)
            # failures are not rewards (steer_envs.failures): continuations a service failure cut short were
            # retried or dropped by measure_states; a sample with none left leaves the group, and a state whose
            # baseline or every sample is unmeasured is skipped this round (its q and `used` stay as they were)
            failed_continuations += m.failed_continuations
            dropped_continuations += m.dropped_continuations
            if not m.usable:
                skipped_states += 1
                continue
            baseline, returns = m.measured()
            samples = [samples[j] for j in m.valid]
            q = intervention_effect(returns, baseline)
            adv = grpo_advantages(returns, baseline)
            state.q, state.measured_round, state.used = q, round_index, True
            qs.append(q)
            advantages_all.extend(adv.tolist())
            measured.append((state, samples, adv))

        # -- losses: L = L_GRPO + L_rank, update_epochs optimiser steps on this round's samples ----------------
        rank_states = [s for s, _, _ in measured]
        # states measured in earlier rounds: of the same tasks, or (rank_replay) of every task
        tasks_now = {s.task_id for s in rank_states}
        ids_now = {id(s) for s in rank_states}
        rank_states += [
            s for s in bank if s.q is not None and id(s) not in ids_now and (c.rank_replay or s.task_id in tasks_now)
        ]
        rank_q = [labelled_q(s) for s in rank_states]
        if c.rank_pairs == "same_task":
            pairs = same_task_pairs([s.task_id for s in rank_states], rank_q)
        else:
            pairs = sampled_pairs(rank_q, c.rank_max_pairs, np.random.default_rng([c.seed, round_index, 3]))
        learn = [
            (state, samples, torch.as_tensor(adv, dtype=torch.float32))
            for state, samples, adv in measured
            if np.any(adv != 0)
        ]
        with torch.no_grad():
            old_logp = [steerer.slow_logprobs(state.observation, samples) for state, samples, _ in learn]
        steerer.train()
        first, grad_norm = self._update(steerer, optimizer, learn, old_logp, rank_states, pairs, len(measured))
        steerer.eval()
        if not learn and not pairs:
            self.warn(
                f"round {round_index} changed nothing: every GRPO advantage was zero (all {c.G} slow-path samples of "
                f"each of its {len(measured)} measured state(s) scored alike) and there were no ranking pairs"
            )

        adv_arr = np.asarray(advantages_all) if advantages_all else np.zeros(1)
        p_all = np.array([gate_probability(float(z), c.tau) for z in z_all])
        return {
            "round": round_index,
            **first,
            "rank_pairs": len(pairs),
            "grpo_groups": len(learn),  # states whose samples' advantages were not all zero: GRPO's learning signal
            "states": len(picked),
            "mean_q": float(np.mean(qs)) if qs else 0.0,
            "mean_priority_selected": float(np.mean([bank[i].priority for i in picked])),
            "adv_mean": float(adv_arr.mean()),
            "adv_std": float(adv_arr.std()),
            "adv_pos_frac": float((adv_arr > 0).mean()),
            "adv_zero_frac": float((adv_arr == 0).mean()),
            "slow_pass_frac": slow_pass / max(1, len(picked) * c.G),
            "intervention_rate": float((p_all >= 0.5).mean()),
            "mean_gate_p": float(p_all.mean()),
            "grad_norm": grad_norm,
            "rollouts": rollouts,
            "rollout_cache_hits": hits,
            "failed_continuations": failed_continuations,
            "dropped_continuations": dropped_continuations,
            "skipped_states": skipped_states,
            "round_s": round(time.time() - t0, 2),
        }
