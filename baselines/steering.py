"""Steering-agent methods, and planning / verification as the same agent in another environment.

* ``steering_untrained``: the agent of PAPERS.md A (fast path, gate ``τ``, slow path) with an *untrained*
  steerer of the RL method's architecture (the config's backbone, freshly initialised with the method's ``seed``):
  what the architecture does before RL. It is not a zero-shot model: nothing in it knows the task.
* ``steering_zero_shot``: the paper's zero-shot steerer: a prompted LLM, no training; a local causal LM
  (:class:`CausalLMSteerer`, default the packaged gemma-3-270m) or a served one (``model=openai:<name>@<url>``:
  :class:`~agents.steering.served.ServedSteerer`, e.g. Qwen3-8B behind vLLM). ``steering_llm_zero_shot`` is its
  deprecated old name.
* ``steering_rl``: trained with :class:`~agents.steering.trainer.SteeringTrainer` (ranking loss + GRPO over
  counterfactual continuations) on the *train* split of the run's executor.
* ``planning_*`` / ``verification_*``: the identical agent and trainer, handed SearchPlanning-v0 (one decision,
  before execution) or SearchVerification-v0 (a decision per proposed answer). Same backbone, same budget, so
  the table compares *forms of supervision*, as the paper does.

A learning method trains in its run-folder checkpoint directory; a rerun finds the finished ``model.pt`` (or a
partial checkpoint, which the trainer resumes) instead of training again.
"""
from __future__ import annotations

import json
from typing import Any

from agents.steering.agent import SteeringAgent
from agents.steering.config import SteeringConfig
from agents.steering.interventions import options_from_catalogue
from steer_envs.errors import SteerEnvsError

from .base import PLANNING_ENV, SERVED_ONLY_OPTIONS, STEERING_ENV, VERIFICATION_ENV, MethodContext

#: trainer options a method spec may override (``steering_rl:m=4,k=8``); others come from SteeringConfig
#: or from a config file (``steering_rl:config=path.toml``). ``seed`` is the *training seed*: it seeds the
#: trainer, the state bank's rollouts and the steerer's initial weights, so two seeds are two independent runs.
TRAIN_OPTION_TYPES: dict[str, type] = {
    "m": int, "k": int, "G": int, "N": int, "bank_tasks": int, "eps_sel": float, "lr": float, "seed": int,
    "cost": float,
}
ACTION_MODE = "discrete"


def train_options() -> dict[str, str]:
    """The documented trainer options with SteeringConfig's defaults (shown by ``--list-methods``); ``config``: a
    SteeringConfig file (JSON/TOML) the other options override (empty: SteeringConfig's defaults)."""
    defaults = SteeringConfig()  # an instance: ``cost`` is a field of its env protocol, read as an attribute
    return {"config": "", **{k: str(getattr(defaults, k)) for k in TRAIN_OPTION_TYPES}}


def _agent(steerer, context: MethodContext, name: str, tau: float | None = None) -> SteeringAgent:
    agent = SteeringAgent(steerer, tau=context.option("tau", 0.5, float) if tau is None else tau,
                          action_mode=ACTION_MODE, name=name, seed=context.option("seed", 0, int))
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
DEPRECATED_ZERO_SHOT = "steering_llm_zero_shot"


def build_zero_shot_llm(context: MethodContext, name: str = ZERO_SHOT) -> SteeringAgent:
    """A prompted LLM steerer, no training: ``model=openai:<name>@<url>`` is a served model
    (:class:`~agents.steering.served.ServedSteerer`), anything else a local one (:class:`CausalLMSteerer`)."""
    from agents.steering.backbones import backbone_for_model, build_steerer

    model = context.option("model", "hf:gemma-3-270m", str)
    backbone = backbone_for_model(model)
    args: dict[str, Any] = {"model": model}
    served_only = {k: v for k, v in SERVED_ONLY_OPTIONS.items() if context.options.get(k, v) != v}
    if backbone != "served" and served_only:
        raise SteerEnvsError(f"{name}: option(s) {', '.join(sorted(served_only))} apply to served models only "
                             f"(model=openai:<name>@<base_url>), not to the local model {model!r}; drop them")
    if backbone == "served":
        args.update(top_logprobs=context.option("top_logprobs", 20, int),
                    max_prompt_chars=context.option("prompt_chars", 6000, int),
                    max_think_tokens=context.option("think_tokens", 48, int),
                    name_choice=context.option("name_choice", "parse", str),
                    seed=context.option("seed", 0, int))
        if context.workdir is not None:  # inside a run folder: keep every decision for inspection
            args["decision_log"] = context.checkpoint_dir() / DECISION_LOG
    try:
        steerer = build_steerer(backbone, _options(context, STEERING_ENV), args)
    except ModuleNotFoundError as exc:
        raise SteerEnvsError(f"{name} with a local model needs the causal-LM steerer and the llm extra "
                             f"(pip install 'steer-envs[llm]'): {exc}") from None
    agent = _agent(steerer.eval(), context, name)
    agent.run_info = {"backbone": backbone, "model": model, "trained": False}
    return agent


def build_zero_shot_llm_deprecated(context: MethodContext) -> SteeringAgent:
    """``steering_llm_zero_shot``: the old name of ``steering_zero_shot`` (same steerer), kept for old run
    folders and scripts; it warns once per build."""
    import warnings

    warnings.warn(f"method {DEPRECATED_ZERO_SHOT!r} is deprecated; use {ZERO_SHOT!r} (the same steerer)",
                  FutureWarning, stacklevel=2)  # FutureWarning: shown to command-line users by default
    return build_zero_shot_llm(context, DEPRECATED_ZERO_SHOT)


def steering_config(context: MethodContext) -> SteeringConfig:
    """The trainer config of a learning method: the ``config`` file's (or SteeringConfig's) settings, the spec's
    options on top, and the run's executor, turn budget and metric on the train split. The training ``seed`` also
    seeds the state bank and the steerer's initial weights."""
    from dataclasses import replace

    path = context.option("config", "", str)
    base = SteeringConfig.load(path) if path else SteeringConfig()
    overrides = {k: context.option(k, None, kind) for k, kind in TRAIN_OPTION_TYPES.items()}
    overrides = {k: v for k, v in overrides.items() if v is not None}
    seed = int(overrides.pop("seed", base.seed))
    return replace(
        base, **overrides,
        executor=context.executor, benchmarks=list(context.benchmarks) if context.benchmarks else None,
        split="train", max_turns=context.max_turns, metric=context.metric, action_mode=ACTION_MODE,
        data_dir=context.data_dir, tau=context.option("tau", base.tau, float), seed=seed, bank_seed=seed,
        backbone_args={**base.backbone_args, "seed": seed},
    )


def trained_agent(context: MethodContext, env_id: str, name: str,
                  config_overrides: dict[str, Any] | None = None) -> SteeringAgent:
    """Train (or load) the steerer on ``env_id``; ``config_overrides`` set SteeringConfig fields the method fixes
    (a hand-off steerer's ``env_id`` and feature set). The public builder the ``*_rl`` methods and
    :mod:`baselines.handoff` share."""
    from dataclasses import replace

    from agents.steering.trainer import LOG_FILE, MODEL_FILE, SteeringTrainer, load_model

    config = replace(steering_config(context), **(config_overrides or {}))
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


#: the builders' former private names (baselines.handoff imported them; use the public ones)
_untrained = untrained_agent
_rl = trained_agent


def policy_info(agent: Any) -> dict:
    return dict(getattr(agent, "run_info", {}) or {})
