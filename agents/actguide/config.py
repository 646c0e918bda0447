"""ActGuideConfig: the environment, the learner, the ACTGUIDE-RL algorithm and its research switches.

ACTGUIDE-RL in one paragraph: GRPO on the learner's own (unguided) rollouts; a group whose rollouts all fail is
*hard*, and for it a binary search over ``k`` finds the fewest reference-plan actions
(:mod:`steer_envs.reference_plans`) with which fresh probes succeed; the group's rollouts are then replaced by
rollouts guided by that many actions, and trained with the mixed-policy ratio ``r_mix`` (the guided tokens'
probability under the *unguided* prompt), shaped as ``r / (r + γ)``.

Variants are configs, not code paths. The fields under "research switches" are those variants: each default is the
method, and :data:`VARIANTS` names the settings the results pages compare (zero RL, SFT-then-RL, fixed ``k``, without
the adaptive guider, without the fallback guider, without mixed-policy optimisation, noisy plans, the guided-group
baseline). Everything else is the environment, the optimiser and the machinery.

The reference-plan keys are named as the env's options (``plan_mode``, ``plan_sources``, ``plan_noise``,
``plan_noise_seed``, ``plan_answers``).

``log_with`` (off by default) sends every iteration's numbers to accelerate's experiment trackers beside
``log.jsonl`` (``log_with = ["tensorboard"]``; files under ``<run>/trackers/``). It records the run without shaping
it, so it never enters the fingerprint: a run folder resumes with tracking switched on or off.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from steer_envs.errors import SteerEnvsError, unknown_name

from ..configio import config_fingerprint, config_from_dict, load_config
from ..trainer_base import acceleration_checks, tracker_checks, tracker_names

LEARNERS = ("admissible", "causal_lm")
#: how a guided group's advantages are baselined (see ``ActGuideConfig.guided_baseline``)
GUIDED_BASELINES = ("group", "unguided")
#: the task regions of ``agents.actguide.regions`` (their home is here, where no torch is imported), any of which a
#: pool filter may keep
POOL_REGIONS = ("in_region", "barrier", "out_of_reach", "unknown")


def region_names(text: str) -> tuple[str, ...]:
    """The region names of a comma-separated list (``pool_keep``, ``barrier --region``, ``--keep``)."""
    return tuple(r.strip() for r in str(text).split(",") if r.strip())


@dataclass
class ActGuideConfig:
    # -- environment (GuidedSearch-v0) -----------------------------------------------------------------------
    benchmarks: list[str] | None = None  # None = all 7
    split: str = "train"
    tasks_per_benchmark: int = 150  # RL pool: this many tasks of each benchmark (0 = all), fixed by task_seed
    task_seed: int = 0
    pool: str = "rl"  # "rl" (the RL pool) | "pretrain" (train tasks outside the RL pool: the base policy's warm-up)
    pretrain_tasks_per_benchmark: int = 150
    # the RL pool kept to the tasks of these regions of a ``regions.json`` (``steer-envs barrier --regions`` of the
    # base policy on the pool's tasks): hard groups drawn where the barrier is, not from tasks out of reach
    pool_regions: str | None = None
    pool_keep: str = "barrier,in_region"  # comma-separated regions of ``pool_regions`` the pool keeps
    init_from: str | None = None  # a run folder whose learner is the initial policy (and π_ref); None = fresh
    max_turns: int = 6
    metric: str = "em"
    topk: int = 3
    max_queries: int = 8
    max_answers: int = 24
    data_dir: str | None = None
    plan_sources: list[str] = field(default_factory=lambda: ["rollout", "gold"])
    plan_mode: str = "prompt"  # "prompt" (hint in the prompt) | "prefix" (reference searches executed)
    plan_noise: float = 0.0  # share of reference actions replaced by plausible wrong ones
    plan_noise_seed: int = 0
    plan_answers: bool = True  # the hint may show the reference's final answer (else its searches only)
    # a synthetic task family GuidedSearch-v0 adds to every split's tasks (steer_envs.task_families: "skill_chain");
    # its train tasks join the RL pool as one more benchmark. None = the real benchmarks only
    task_family: str | None = None
    # -- the algorithm -------------------------------------------------------------------------------------------
    probes_per_step: int = 2  # fresh probe rollouts per binary-search midpoint
    max_probe_steps: int = 5
    luffy_gamma: float = 0.1  # γ of the guided tokens' shaping r / (r + γ) (ratio_shaping="luffy")
    budget: int = 12000  # rollouts (episodes) in all: unguided, probes and guided
    batch_tasks: int = 16  # tasks per iteration
    group_size: int = 8  # G rollouts per task
    # -- research switches: each default is the method; VARIANTS names the settings the results pages compare ----
    guidance: bool = True  # False = zero RL (GRPO without guidance)
    adaptive: bool = True  # binary search for the minimal k (else hard groups get full guidance)
    fallback: bool = True  # full guidance when the search finds no successful k (else the group stays unguided)
    mixed_policy: bool = True  # r_mix on the unguided prompt (else guided rollouts trained as on-policy)
    fixed_k: int = 0  # >= 1: hard groups get exactly this k (no search); 0 = off
    # guided tokens: "luffy" (A · r/(r+γ) with r = r_mix, ratio 1: the public implementation's option, chosen on dev)
    # | "clip" (PPO's clip of r_mix)
    ratio_shaping: str = "luffy"
    # the baseline of a guided group's advantages: "group" (GRPO within the guided rollouts that replace the group:
    # the public implementation) | "unguided" (the mean reward of the unguided group they replace, the value of the
    # state under the policy being trained, scaled by the std over both groups: a guided failure then gets 0 instead
    # of pushing π_u away from its own choices, and a group whose guided rollouts all succeed still teaches)
    guided_baseline: str = "group"
    # multiplies a guided group's advantages (every token of its rollouts): how hard a guided success moves π_u
    # against an unguided one, without more epochs or a larger lr for the unguided groups (1 = the paper's objective)
    guided_weight: float = 1.0
    # the share of the budget during which hard groups may be guided; after it every iteration is unguided (zero
    # RL's update on the same loss): guidance opens a barrier early and the rest of the budget sharpens, on π_u's own
    # rollouts, what it opened (a schedule, not in the paper or the public implementation; 1 = always)
    guidance_until: float = 1.0
    # a task whose guided group was rescued (a guided rollout succeeded) is drawn again in the next iteration, in
    # place of a new task, so π_u's own rollouts meet the state guidance just opened while the update is fresh
    # (a schedule, not in the paper)
    revisit_rescued: bool = False
    # -- optimisation -------------------------------------------------------------------------------------------
    lr: float = 3e-3
    update_epochs: int = 2
    clip_eps: float = 0.2
    kl_coef: float = 0.01  # KL(π_θ ‖ π_ref) on the unguided prompt (π_ref = the initial policy)
    grad_clip: float = 1.0
    weight_decay: float = 0.0
    # -- SFT on the action data before RL (the SFT+RL baseline) -------------------------------------------------
    sft_epochs: int = 0
    sft_lr: float = 3e-3
    # -- learner --------------------------------------------------------------------------------------------------
    learner: str = "admissible"  # "admissible" (CPU network over the admissible set) | "causal_lm"
    learner_args: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    # -- acceleration (agents/trainer_base.py; the defaults are one CPU process) ---------------------------------
    device: str = "cpu"  # "cpu" | "cuda" | "auto" (accelerate's choice: each process's GPU)
    mixed_precision: str = "no"  # "no" | "bf16" (autocast around the loss)
    micro_batch: int = 0  # trajectory steps per backward pass (gradient accumulation, same gradient); 0 = all in one
    # -- experiment tracking (agents/trainer_base.py) -------------------------------------------------------------
    # accelerate's trackers ("tensorboard", "wandb", "trackio", "aim", "mlflow", "comet_ml", ... or "all") that get
    # each iteration's numbers beside log.jsonl, so runs can be watched and compared with the tools accelerate users
    # know; () = off. Never hashed (agents.configio.UNHASHED_FIELDS): it does not change the run's results
    log_with: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.log_with = tracker_names(self.log_with)
        checks = [
            (self.plan_mode in ("prompt", "prefix"), "plan_mode must be 'prompt' or 'prefix'"),
            (self.pool in ("rl", "pretrain"), "pool must be 'rl' or 'pretrain'"),
            (
                bool(self.kept_regions) and set(self.kept_regions) <= set(POOL_REGIONS),
                f"pool_keep must name regions among {', '.join(POOL_REGIONS)} "
                f"(comma-separated; got {self.pool_keep!r})",
            ),
            (0.0 <= self.plan_noise <= 1.0, "plan_noise must be in [0, 1]"),
            (self.fixed_k >= 0, "fixed_k must be >= 0 (0 = off)"),
            (self.ratio_shaping in ("clip", "luffy"), "ratio_shaping must be 'clip' or 'luffy'"),
            (self.luffy_gamma > 0, "luffy_gamma must be > 0"),
            (
                self.guided_baseline in GUIDED_BASELINES,
                f"guided_baseline must be one of {', '.join(GUIDED_BASELINES)} (got {self.guided_baseline!r})",
            ),
            (
                0.0 < self.guidance_until <= 1.0,
                "guidance_until must be in (0, 1] (the share of the budget with guidance; "
                f"got {self.guidance_until!r})",
            ),
            (
                self.guided_weight > 0,
                f"guided_weight must be > 0 (got {self.guided_weight!r}; 1 = the paper's objective)",
            ),
            (self.probes_per_step >= 1, "probes_per_step must be >= 1"),
            (self.max_probe_steps >= 1, "max_probe_steps must be >= 1"),
            (self.budget >= 1, "budget (rollouts) must be >= 1"),
            (self.batch_tasks >= 1, "batch_tasks must be >= 1"),
            (self.group_size >= 2, "group_size must be >= 2 (GRPO normalises within a group)"),
            (self.lr > 0 and self.sft_lr > 0, "lr and sft_lr must be > 0"),
            (self.update_epochs >= 1, "update_epochs must be >= 1"),
            (self.kl_coef >= 0, "kl_coef must be >= 0"),
            (self.sft_epochs >= 0, "sft_epochs must be >= 0"),
            (self.max_turns >= 1, "max_turns must be >= 1"),
            *acceleration_checks(self),
            *tracker_checks(self),
        ]
        for ok, message in checks:
            if not ok:
                raise SteerEnvsError(f"invalid actguide config: {message}")
        if self.learner not in LEARNERS:
            raise unknown_name("learner", self.learner, LEARNERS)

    @property
    def kept_regions(self) -> tuple[str, ...]:
        """The regions of ``pool_regions`` whose tasks the RL pool keeps."""
        return region_names(self.pool_keep)

    @property
    def action_mode(self) -> str:
        return "text" if self.learner == "causal_lm" else "discrete"

    def env_kwargs(self, split: str | None = None, **overrides: Any) -> dict[str, Any]:
        kwargs: dict[str, Any] = dict(
            benchmarks=self.benchmarks,
            split=split or self.split,
            data_dir=self.data_dir,
            topk=self.topk,
            max_turns=self.max_turns,
            action_mode=self.action_mode,
            metric=self.metric,
            plan_mode=self.plan_mode,
            plan_sources=tuple(self.plan_sources),
            plan_noise=self.plan_noise,
            plan_noise_seed=self.plan_noise_seed,
            max_queries=self.max_queries,
            max_answers=self.max_answers,
            plan_answers=self.plan_answers,
        )
        if self.task_family is not None:
            kwargs["task_family"] = self.task_family
        kwargs.update(overrides)
        return kwargs

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def fingerprint(self) -> str:
        """A hash of every field as it is, except ``log_with`` (it records the run, it does not shape it)."""
        return config_fingerprint(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "config") -> ActGuideConfig:
        return config_from_dict(cls, data, where, "actguide config")

    @classmethod
    def load(cls, path: str | Path) -> ActGuideConfig:
        return load_config(cls, path, "actguide config")

    def variant(self, name: str) -> ActGuideConfig:
        """This config with a named variant's switches (see :data:`VARIANTS`)."""
        if name not in VARIANTS:
            raise unknown_name("actguide variant", name, list(VARIANTS))
        return replace(self, **VARIANTS[name])


#: named variants: the method, its baselines and its ablations (switches applied on top of a base config)
VARIANTS: dict[str, dict[str, Any]] = {
    "actguide": {},
    "zero_rl": {"guidance": False},
    "sft_rl": {"guidance": False, "sft_epochs": 2},
    "fixed_k": {"adaptive": False, "fixed_k": 1},
    "no_adaptive": {"adaptive": False},
    "no_fallback": {"fallback": False},
    "no_mixed": {"mixed_policy": False},
    "noise_10": {"plan_noise": 0.1},
    "noise_20": {"plan_noise": 0.2},
    "prefix": {"plan_mode": "prefix"},
    "clip_rmix": {"ratio_shaping": "clip"},
    "unguided_baseline": {"guided_baseline": "unguided"},
}
