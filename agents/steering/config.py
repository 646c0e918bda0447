"""SteeringConfig: every symbol of PAPERS.md A's training algorithm, plus the environment and backbone.

Symbols: ``m`` rounds, ``k`` states per round, ``eps_sel`` (ε_sel), ``G`` slow samples per state, ``N``
continuation rollouts per branch, ``tau`` (τ, the deployment threshold stored with the model), ``lr``,
``cost`` (per-intervention cost subtracted from the reward). Loaded from JSON or TOML; unknown keys are errors.

``log_with`` (off by default) sends every round's numbers to accelerate's experiment trackers beside ``log.jsonl``
(``log_with = ["tensorboard"]``; files under ``<run>/trackers/``). It records the run without shaping it, so it
never enters the fingerprint: a run folder resumes with tracking switched on or off.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from steer_envs.errors import SteerEnvsError
from steer_envs.ids import STEERING_ENV
from steer_envs.protocol import EnvProtocol, flat_dict, holds_protocol

from ..configio import config_from_dict, load_config
from ..trainer_base import ACCELERATION_FIELDS, UNHASHED_FIELDS, acceleration_checks, tracker_checks, tracker_names
from .objectives import Q_TARGETS


RANK_PAIRS = ("same_task", "any")
#: fields added after run folders of earlier versions existed: they enter the fingerprint only when set away from
#: their default, so those folders still resume (and their fingerprints are unchanged)
_LATE_FIELDS = ("rank_pairs", "rank_max_pairs", "q_target", "env_id", "continuation_gate", *ACCELERATION_FIELDS)
#: policies of the continuation rollouts (agents.steering.rollouts): "pass" (the paper: one intervention, then the
#: executor alone) | "policy" (the current steerer takes every later decision: repeated interventions and their cost)
CONTINUATIONS = ("pass", "policy")


@holds_protocol(names={"cost": "intervention_cost"})
@dataclass
class SteeringConfig:
    # -- environment ---------------------------------------------------------------------------------------
    env_id: str = STEERING_ENV  # any steer_envs id whose action 0 / "pass" passes
    #: executor, benchmarks (None = all 7), split, max_turns, metric, cost (the per-intervention cost in the reward:
    #: the protocol's intervention_cost), data_dir: the shared env protocol, each also a keyword, a config-file key
    #: and an attribute (``SteeringConfig(executor=...)``, ``config.cost``)
    env_protocol: EnvProtocol = field(default_factory=EnvProtocol)
    action_mode: str = "text"
    # -- state bank ---------------------------------------------------------------------------------------
    bank_tasks: int = 1200  # training tasks rolled out without intervention (0 = all of the split)
    bank_seed: int = 0
    bank_rollouts: int = 3  # no-intervention rollouts per bank task (different seeds): more same-task state pairs
    # -- the algorithm ------------------------------------------------------------------------------------
    m: int = 40  # rounds
    k: int = 128  # states per round (drawn without replacement)
    eps_sel: float = 0.3  # ε_sel: probability of a uniform draw instead of the top-priority state
    G: int = 4  # slow-path samples per state
    N: int = 16  # continuation rollouts per branch (each intervention, and no intervention)
    tau: float = 0.5  # τ: deployment threshold saved with the model (the trainer itself does not gate)
    lr: float = 3e-3
    rank_weight: float = 1.0  # L = grpo_weight * L_GRPO + rank_weight * L_rank (1, 1 in the paper)
    grpo_weight: float = 1.0
    grad_clip: float = 1.0
    update_epochs: int = 4  # optimiser steps per round on the round's samples (GRPO's clipped surrogate after the first)
    clip_eps: float = 0.2  # GRPO/PPO ratio clip for update_epochs > 1
    states_once: bool = True  # without replacement over the whole run, not only within a round
    rank_history: bool = True  # rank pairs may include states of the same task measured in earlier rounds
    rank_replay: bool = True  # ... and of every task measured so far (replay of all same-task pairs seen)
    rank_pairs: str = "same_task"  # "same_task" (the paper) | "any": pairs of states of any task (not the paper)
    rank_max_pairs: int = 16384  # with rank_pairs="any": pairs drawn per round from all measured states
    q_target: str = "abs"  # the fast path's target: "abs" (the paper: |R̄ − b|) | "signed" (R̄ − b: gain, not the paper)
    weight_decay: float = 0.0  # AdamW decoupled weight decay (regularises the hashed n-gram embeddings)
    continuation: str = "pass"  # policy of the continuation rollouts: "pass" to the end | "policy" (CONTINUATIONS)
    #: with continuation="policy": "tau" gates its later decisions at τ | "open" runs the slow path at every one
    continuation_gate: str = "tau"
    seed: int = 0
    # -- backbone -----------------------------------------------------------------------------------------
    backbone: str = "encoder"  # "encoder" | "causal_lm"
    backbone_args: dict[str, Any] = field(default_factory=dict)
    # -- acceleration (agents/trainer_base.py; the defaults are the CPU run of earlier versions) -----------------
    device: str = "cpu"  # "cpu" | "cuda" | "auto" (accelerate's choice: each process's GPU)
    mixed_precision: str = "no"  # "no" | "bf16" (autocast around the losses)
    micro_batch: int = 0  # states per backward pass (gradient accumulation, same gradient); 0 = all in one pass
    # -- experiment tracking (agents/trainer_base.py) -----------------------------------------------------------
    #: accelerate's trackers ("tensorboard", "wandb", "trackio", "aim", "mlflow", "comet_ml", ... or "all") that get
    #: each round's numbers beside log.jsonl, so runs can be watched and compared with the tools accelerate users
    #: know; () = off. Not hashed (agents.trainer_base.UNHASHED_FIELDS): it does not change the run's results
    log_with: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.log_with = tracker_names(self.log_with)
        checks = [
            (self.m >= 1, "m (rounds) must be >= 1"),
            (self.k >= 1, "k (states per round) must be >= 1"),
            (self.bank_rollouts >= 1, "bank_rollouts must be >= 1"),
            (0.0 <= self.eps_sel <= 1.0, "eps_sel must be in [0, 1]"),
            (self.G >= 1, "G (slow samples per state) must be >= 1"),
            (self.N >= 1, "N (continuation rollouts) must be >= 1"),
            (0.0 < self.tau < 1.0, "tau must be strictly between 0 and 1"),
            (self.lr > 0, "lr must be > 0"),
            (self.weight_decay >= 0, "weight_decay must be >= 0"),
            (self.update_epochs >= 1, "update_epochs must be >= 1"),
            (self.action_mode in ("text", "discrete"), "action_mode must be 'text' or 'discrete'"),
            (self.rank_pairs in RANK_PAIRS, f"rank_pairs must be one of {RANK_PAIRS}"),
            (self.rank_max_pairs >= 1, "rank_max_pairs must be >= 1"),
            (self.q_target in Q_TARGETS, f"q_target must be one of {Q_TARGETS}"),
            (self.backbone in ("encoder", "causal_lm"), "backbone must be 'encoder' or 'causal_lm'"),
            (self.continuation in CONTINUATIONS, f"continuation must be one of {CONTINUATIONS}"),
            (self.continuation_gate in ("tau", "open"), "continuation_gate must be 'tau' or 'open'"),
            *acceleration_checks(self),
            *tracker_checks(self),
        ]
        for ok, message in checks:
            if not ok:
                raise SteerEnvsError(f"invalid steering config: {message}")

    # -- (de)serialisation ----------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The flat form (protocol fields beside the others, ``cost`` for the intervention cost): what config
        files hold and what the fingerprint hashes (unchanged since the fields were the config's own)."""
        data = flat_dict(self)
        if isinstance(data["benchmarks"], tuple):
            data["benchmarks"] = list(data["benchmarks"])
        data["log_with"] = list(data["log_with"])
        return data

    def fingerprint(self) -> str:
        """A hash of everything that shapes the run; a run folder refuses a config with another one. The fields
        that only record the run (``UNHASHED_FIELDS``: ``log_with``) are left out."""
        data = self.to_dict()
        for name in UNHASHED_FIELDS:
            del data[name]
        defaults = {f.name: f.default for f in fields(self)}
        for name in _LATE_FIELDS:
            if data[name] == defaults[name]:
                del data[name]
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "config") -> "SteeringConfig":
        return config_from_dict(cls, data, where, "steering config")

    @classmethod
    def load(cls, path: str | Path) -> "SteeringConfig":
        return load_config(cls, path, "steering config")
