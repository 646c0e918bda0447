"""Steering-agent methods, and planning / verification as the same agent in another environment.

* ``steering_untrained``: the steering agent (fast path, gate ``τ``, slow path) with an *untrained*
  steerer of the RL method's architecture (the config's backbone, freshly initialised with the method's ``seed``):
  what the architecture does before RL. It is not a zero-shot model: nothing in it knows the task.
* ``steering_zero_shot``: the paper's zero-shot steerer: a prompted LLM, no training; a local causal LM
  (:class:`CausalLMSteerer`, default the packaged gemma-3-270m) or a served one (``model=openai:<name>@<url>``:
  :class:`~agents.steering.served.ServedSteerer`, e.g. Qwen3-8B behind vLLM).
* ``steering_rl``: trained with :class:`~agents.steering.trainer.SteeringTrainer` (ranking loss + GRPO over
  counterfactual continuations) on the *train* split of the run's executor.
* ``planning_*`` / ``verification_*``: the identical agent and trainer, handed SearchPlanning-v0 (one decision,
  before execution) or SearchVerification-v0 (a decision per proposed answer). Same backbone, same budget, so
  the table compares *forms of supervision*, as the paper does.

A learning method trains in its run-folder checkpoint directory; a rerun finds the finished ``model.pt`` (or a
partial checkpoint, which the trainer resumes) instead of training again.

Their options: :class:`SteererOptions` (``tau``, ``seed``), extended by :class:`UntrainedOptions` (``config``),
:class:`ZeroShotOptions` (the LLM) and :class:`RLOptions` (the trainer's budget, with SteeringConfig's defaults;
:class:`OneDecisionRLOptions` for planning and verification).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from agents.steering.agent import SteeringAgent
from agents.steering.backbones import backbone_for_model
from agents.steering.config import SteeringConfig
from agents.steering.context_fit import MAX_PROMPT_TOKENS
from agents.steering.interventions import options_from_catalogue
from steer_envs.errors import SteerEnvsError

from .base import PLANNING_ENV, STEERING_ENV, VERIFICATION_ENV, MethodContext
from .options import MethodOptionError, MethodOptions, method_option

ACTION_MODE = "discrete"
#: the trainer's defaults, shown as the RL methods'
_TRAINER = SteeringConfig()


@dataclass(frozen=True)
class SteererOptions(MethodOptions):
    """What every steering agent takes: its gate threshold and seed."""

    tau: float = method_option(
        0.5, "gate threshold: the agent intervenes when the fast path's priority clears it", gt=0, lt=1, deploy=True
    )
    seed: int = method_option(0, "seed of the steerer's initial weights and of the gate's draws")


@dataclass(frozen=True)
class UntrainedOptions(SteererOptions):
    config: str = method_option(
        "", "a SteeringConfig file (JSON/TOML) whose backbone the steerer has (empty: SteeringConfig's)"
    )


@dataclass(frozen=True)
class ZeroShotOptions(SteererOptions):
    model: str = method_option(
        "hf:gemma-3-270m", "the LLM: hf:<folder>, hf:gemma-3-270m (local) or openai:<name>@<base_url> (served)"
    )
    top_logprobs: int = method_option(
        20, "served models fitted by characters: top tokens of the first answer token the fast path reads", ge=1
    )
    fit: Literal["auto", "tokens", "chars"] = method_option(
        "auto",
        "served models: fit prompts and read z in the server's tokens as the local steerer does (`tokens`, "
        "vLLM's /tokenize), by characters with z from the top-k table (`chars`), or `auto` (tokens where offered)",
    )
    prompt_tokens: int = method_option(
        MAX_PROMPT_TOKENS, "served models fitted in tokens: the most tokens in the prompt", ge=16
    )
    prompt_chars: int = method_option(
        6000, "served models fitted by characters: the most observation characters in the prompt", ge=1
    )
    think_tokens: int = method_option(48, "served models: reasoning tokens before the intervention line", ge=0)
    name_choice: Literal["parse", "choice"] = method_option(
        "parse", "served models: parse the option name from the text, or `choice` (structured output)"
    )

    #: the options only a served steerer reads
    SERVED_ONLY = ("top_logprobs", "fit", "prompt_tokens", "prompt_chars", "think_tokens", "name_choice")

    def check(self) -> None:
        changed = [k for k in self.SERVED_ONLY if getattr(self, k) != getattr(ZeroShotOptions, k)]
        if changed and backbone_for_model(self.model) != "served":
            raise MethodOptionError(
                f"option(s) {', '.join(changed)} apply to served models only "
                f"(model=openai:<name>@<base_url>), not to the local model {self.model!r}; "
                "drop them"
            )


@dataclass(frozen=True)
class RLOptions(UntrainedOptions):
    """The RL trainer's budget (SteeringConfig's defaults); other trainer settings come from ``config``."""

    seed: int = method_option(
        0,
        "training seed: seeds the trainer, the state bank's rollouts and the steerer's initial weights (two seeds "
        "are two independent runs)",
    )
    config: str = method_option(
        "",
        "a SteeringConfig file (JSON/TOML) for the trainer settings these options do not set (empty: SteeringConfig's)",
    )
    m: int = method_option(_TRAINER.m, "training rounds", ge=1)
    k: int = method_option(_TRAINER.k, "states drawn per round", ge=1)
    G: int = method_option(_TRAINER.G, "slow-path samples per state", ge=1)
    N: int = method_option(_TRAINER.N, "continuation rollouts per branch", ge=1)
    bank_tasks: int = method_option(_TRAINER.bank_tasks, "training tasks of the state bank (0: all of the split)", ge=0)
    eps_sel: float = method_option(
        _TRAINER.eps_sel, "probability of a uniform state draw instead of the top-priority one", ge=0, le=1
    )
    lr: float = method_option(_TRAINER.lr, "learning rate", gt=0)
    cost: float = method_option(
        _TRAINER.intervention_cost, "reward cost per intervention during training (SteeringConfig.intervention_cost)"
    )

    #: option name -> the SteeringConfig field it sets (``seed`` and ``tau`` are set apart); ``cost`` is the rate
    #: knob's name that every learning method shares
    TRAINER_FIELDS = {
        **{name: name for name in ("m", "k", "G", "N", "bank_tasks", "eps_sel", "lr")},
        "cost": "intervention_cost",
    }


@dataclass(frozen=True)
class OneDecisionRLOptions(RLOptions):
    """Planning decides once per task and verification about once per proposed answer, so their state banks hold
    ~1 state per task (x bank_rollouts). Their default training budget is smaller than steering's (16 x 64 states,
    N=8 instead of 40 x 128, N=16): each of their continuations is a whole episode, so steering's budget would take
    them well over the 20 minutes steering trains in; raise m / k / N in the method spec for a matched budget."""

    bank_tasks: int = RLOptions.redefault("bank_tasks", 1000)
    m: int = RLOptions.redefault("m", 16)
    k: int = RLOptions.redefault("k", 64)
    N: int = RLOptions.redefault("N", 8)


def _agent(steerer, context: MethodContext, name: str) -> SteeringAgent:
    chosen = context.options_of(SteererOptions)
    agent = SteeringAgent(steerer, tau=chosen.tau, action_mode=ACTION_MODE, name=name, seed=chosen.seed)
    agent.action_mode = ACTION_MODE
    return agent


def _options(context: MethodContext, env_id: str):
    env = context.make_env(env_id, action_mode=ACTION_MODE)
    try:
        return options_from_catalogue(env.unwrapped.catalogue)
    finally:
        env.close()


def untrained_agent(context: MethodContext, env_id: str, name: str, **steerer_args: Any) -> SteeringAgent:
    """The RL method's architecture (its config's backbone and arguments, ``steerer_args`` on top: a hand-off
    steerer's feature set), freshly initialised with ``seed``: the public builder the ``*_untrained`` methods and
    :mod:`baselines.handoff` share."""
    from agents.steering.backbones import build_steerer

    config = steering_config(context)
    args = {**dict(config.backbone_args), **steerer_args}
    steerer = build_steerer(config.backbone, _options(context, env_id), args).eval()
    agent = _agent(steerer, context, name)
    agent.run_info = {"backbone": config.backbone, "trained": False}
    return agent


def build_untrained_steering(context: MethodContext) -> SteeringAgent:
    return untrained_agent(context, STEERING_ENV, "steering_untrained")


def build_untrained_planning(context: MethodContext) -> SteeringAgent:
    return untrained_agent(context, PLANNING_ENV, "planning_untrained")


def build_untrained_verification(context: MethodContext) -> SteeringAgent:
    return untrained_agent(context, VERIFICATION_ENV, "verification_untrained")


#: the zero-shot method's file of per-decision lines (served steerers), in its run-folder checkpoint directory
DECISION_LOG = "decisions.jsonl"
ZERO_SHOT = "steering_zero_shot"


def build_zero_shot_llm(context: MethodContext) -> SteeringAgent:
    """A prompted LLM steerer, no training: ``model=openai:<name>@<url>`` is a served model
    (:class:`~agents.steering.served.ServedSteerer`), anything else a local one (:class:`CausalLMSteerer`)."""
    from agents.steering.backbones import build_steerer

    chosen = context.options_of(ZeroShotOptions)
    model = chosen.model
    backbone = backbone_for_model(model)
    args: dict[str, Any] = {"model": model}
    if backbone == "served":
        args.update(
            top_logprobs=chosen.top_logprobs,
            fit=chosen.fit,
            max_prompt_tokens=chosen.prompt_tokens,
            max_prompt_chars=chosen.prompt_chars,
            max_think_tokens=chosen.think_tokens,
            name_choice=chosen.name_choice,
            seed=chosen.seed,
        )
        if context.workdir is not None:  # inside a run folder: keep every decision for inspection
            args["decision_log"] = context.checkpoint_dir() / DECISION_LOG
    try:
        steerer = build_steerer(backbone, _options(context, STEERING_ENV), args)
    except ModuleNotFoundError as exc:
        raise SteerEnvsError(
            f"{ZERO_SHOT} with a local model needs the causal-LM steerer and the llm extra "
            f"(pip install 'steer-envs[llm]'): {exc}"
        ) from None
    agent = _agent(steerer.eval(), context, ZERO_SHOT)
    agent.run_info = {"backbone": backbone, "model": model, "trained": False}
    return agent


def steering_config(context: MethodContext, options: SteererOptions | None = None) -> SteeringConfig:
    """The trainer config of a steering method: the ``config`` file's (or SteeringConfig's) settings, the method's
    trainer options on top (an :class:`RLOptions`: every one of them, given or default), and the run's executor,
    turn budget and metric on the train split. ``options``: the method's (default: the context's). The ``seed`` also
    seeds the state bank and the steerer's initial weights."""
    from dataclasses import replace

    chosen = options if options is not None else context.options_of(SteererOptions)
    path = chosen.config if isinstance(chosen, UntrainedOptions) else ""
    base = SteeringConfig.load(path) if path else SteeringConfig()
    overrides = (
        {field: getattr(chosen, name) for name, field in RLOptions.TRAINER_FIELDS.items()}
        if isinstance(chosen, RLOptions)
        else {}
    )
    seed = chosen.seed
    return replace(
        base,
        **overrides,
        executor=context.executor,
        benchmarks=tuple(context.benchmarks) if context.benchmarks else None,
        split="train",
        max_turns=context.max_turns,
        metric=context.metric,
        action_mode=ACTION_MODE,
        data_dir=context.data_dir,
        tau=chosen.tau,
        seed=seed,
        bank_seed=seed,
        backbone_args={**base.backbone_args, "seed": seed},
    )


def trained_agent(
    context: MethodContext, env_id: str, name: str, config_overrides: dict[str, Any] | None = None
) -> SteeringAgent:
    """Train (or load) the steerer on ``env_id``; ``config_overrides`` set SteeringConfig fields the method fixes
    (a hand-off steerer's ``env_id`` and feature set). The public builder the ``*_rl`` methods and
    :mod:`baselines.handoff` share."""
    from dataclasses import replace

    from agents.steering.trainer import LOG_FILE, MODEL_FILE, SteeringTrainer, load_model

    config = replace(steering_config(context, context.options_of(RLOptions)), **(config_overrides or {}))
    run_dir = context.checkpoint_dir()
    done = (run_dir / MODEL_FILE).is_file() and _finished_rounds(run_dir / LOG_FILE) >= config.m
    if not done:
        env = None if env_id == STEERING_ENV else context.make_env(env_id, split="train", action_mode=ACTION_MODE)
        SteeringTrainer(config, run_dir, resume=True, progress=context.progress, env=env, pool=context.pool).run()
        _copy_training_log(run_dir / LOG_FILE, context, name)
    try:
        steerer, _ = load_model(run_dir / MODEL_FILE)
    except RuntimeError as exc:  # a state dict of another architecture (the steerer's code changed since)
        raise SteerEnvsError(
            f"the checkpoint in {run_dir} does not fit the current steerer ({str(exc).splitlines()[-1].strip()}); "
            f"it was trained by another version of the code: delete {run_dir} and the method's episodes to retrain"
        ) from None
    agent = _agent(steerer, context, name)
    agent.run_info = {"backbone": "encoder", "trained": True, "train_fingerprint": config.fingerprint()}
    return agent


def _finished_rounds(log_path) -> int:
    if not log_path.is_file():
        return 0
    return sum(1 for line in log_path.read_text().splitlines() if line.strip())


def _copy_training_log(src, context: MethodContext, name: str) -> None:
    """Mirror the trainer's per-round log into the run folder's training/ (for the report's curves)."""
    if context.training_log is None or not src.is_file():
        return
    rows = [json.loads(line) for line in src.read_text().splitlines() if line.strip()]
    with open(context.training_log, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps({"method": name, "step": row.get("round"), **row}) + "\n")


def build_rl_steering(context: MethodContext) -> SteeringAgent:
    return trained_agent(context, STEERING_ENV, "steering_rl")


def build_rl_planning(context: MethodContext) -> SteeringAgent:
    return trained_agent(context, PLANNING_ENV, "planning_rl")


def build_rl_verification(context: MethodContext) -> SteeringAgent:
    return trained_agent(context, VERIFICATION_ENV, "verification_rl")


def policy_info(agent: Any) -> dict:
    return dict(getattr(agent, "run_info", {}) or {})
