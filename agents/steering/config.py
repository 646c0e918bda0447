"""SteeringConfig: every symbol of the steering training algorithm, plus environment, backbone, research switches.

The algorithm: each round draws ``k`` states of a bank of no-intervention rollouts (the top fast-path priority, or a
uniform draw with probability ε_sel), samples ``G`` interventions per state from the slow path, scores each (and no
intervention) by ``N`` continuation rollouts, trains the slow path with GRPO on those returns and the fast path with a
pairwise ranking loss on ``q(s) = mean |R̄_j − b_s|`` (how much intervening changes the outcome).

Symbols: ``m`` rounds, ``k`` states per round, ``eps_sel`` (ε_sel), ``G`` slow samples per state, ``N``
continuation rollouts per branch, ``tau`` (τ, the deployment threshold stored with the model), ``lr``,
``intervention_cost`` (per-intervention cost subtracted from the reward). Loaded from JSON or TOML; unknown keys are
errors. The fields under "research switches" change the algorithm; each default is the algorithm above.

``log_with`` (off by default) sends every round's numbers to accelerate's experiment trackers beside ``log.jsonl``
(``log_with = ["tensorboard"]``; files under ``<run>/trackers/``). It records the run without shaping it, so it
never enters the fingerprint: a run folder resumes with tracking switched on or off.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from steer_envs.errors import SteerEnvsError
from steer_envs.ids import STEERING_ENV
from steer_envs.protocol import EnvProtocol

from ..configio import config_fingerprint, config_from_dict, load_config
from ..trainer_base import acceleration_checks, tracker_checks, tracker_names

RANK_PAIRS = ("same_task", "any")
#: policies of the continuation rollouts (agents.steering.rollouts): "pass" (the paper: one intervention, then the
#: executor alone) | "policy" (the current steerer takes every later decision: repeated interventions and their cost)
CONTINUATIONS = ("pass", "policy")


@dataclass(kw_only=True)
class SteeringConfig(EnvProtocol):
    # -- environment ---------------------------------------------------------------------------------------
    #: executor, benchmarks (None = all 7), split, max_turns, metric, intervention_cost (the per-intervention cost
    #: in the reward), data_dir: the shared env protocol (:class:`~steer_envs.EnvProtocol`)
    env_id: str = STEERING_ENV  # any steer_envs id whose action 0 / "pass" passes
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
    seed: int = 0
    # -- optimisation (L = L_GRPO + L_rank) -----------------------------------------------------------------------
    lr: float = 3e-3
    grad_clip: float = 1.0
    update_epochs: int = (
        4  # optimiser steps per round on the round's samples (GRPO's clipped surrogate after the first)
    )
    clip_eps: float = 0.2  # GRPO/PPO ratio clip for update_epochs > 1
    weight_decay: float = 0.0  # AdamW decoupled weight decay (regularises the hashed n-gram embeddings)
    # -- research switches: each default is the algorithm of the module docstring ----------------------------------
    #: the ranking loss's pairs also take every state measured in earlier rounds (replay), not only this round's
    #: states and the earlier ones of the same tasks
    rank_replay: bool = True
    rank_pairs: str = "same_task"  # "same_task" (the paper) | "any": pairs of states of any task (not the paper)
    rank_max_pairs: int = 16384  # with rank_pairs="any": pairs drawn per round from all measured states
    continuation: str = "pass"  # policy of the continuation rollouts: "pass" to the end | "policy" (CONTINUATIONS)
    #: with continuation="policy": "tau" gates its later decisions at τ | "open" runs the slow path at every one
    continuation_gate: str = "tau"
    # -- backbone -----------------------------------------------------------------------------------------
    backbone: str = "encoder"  # "encoder" | "causal_lm"
    backbone_args: dict[str, Any] = field(default_factory=dict)
    # -- acceleration (agents/trainer_base.py; the defaults are one CPU process) ---------------------------------
    device: str = "cpu"  # "cpu" | "cuda" | "auto" (accelerate's choice: each process's GPU)
    mixed_precision: str = "no"  # "no" | "bf16" (autocast around the losses)
    micro_batch: int = 0  # states per backward pass (gradient accumulation, same gradient); 0 = all in one pass
    # -- experiment tracking (agents/trainer_base.py) -----------------------------------------------------------
    #: accelerate's trackers ("tensorboard", "wandb", "trackio", "aim", "mlflow", "comet_ml", ... or "all") that get
    #: each round's numbers beside log.jsonl, so runs can be watched and compared with the tools accelerate users
    #: know; () = off. Not hashed (agents.configio.UNHASHED_FIELDS): it does not change the run's results
    log_with: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
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
        """Every field: what config files hold and what the fingerprint hashes."""
        data = asdict(self)
        if isinstance(data["benchmarks"], tuple):
            data["benchmarks"] = list(data["benchmarks"])
        data["log_with"] = list(data["log_with"])
        return data

    def fingerprint(self) -> str:
        """A hash of every field as it is, except ``log_with`` (it records the run, it does not shape it); a run
        folder refuses a config with another one."""
        return config_fingerprint(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "config") -> SteeringConfig:
        return config_from_dict(cls, data, where, "steering config")

    @classmethod
    def load(cls, path: str | Path) -> SteeringConfig:
        return load_config(cls, path, "steering config")
