"""Every built-in method, by name: the rows of the steering paper's tables and of the hand-off table.

(This module was ``baselines/catalog.py``; renamed because ``steer_envs/envs/catalogue.py`` is something else, the
intervention templates an env offers. ``baselines.catalog`` still works, as a deprecated re-export.)

Names follow the paper's rows: no supervision; random intervention at a matched rate; always intervene; a
rule-based drift detector; the best fixed rule; zero-shot steering (a prompted causal LM steerer, as in the
paper); the untrained steerer (the RL architecture before training); RL-trained steering; planning and
verification, each untrained and RL-trained; filtered behaviour cloning; SB3 PPO. ``rate_knob`` names the option a
rate-matched comparison sets on dev (:mod:`benchmarks.harness.operating`).

Why some entries are functions: the RL methods document SteeringConfig's defaults as their options, and
SteeringConfig's module imports torch. Looking up ``no_supervision`` must not load torch, so those four
:class:`Method` records are built the first time they are looked up (:mod:`baselines.registry`); every builder is
an import path, imported only when a method is built. This module imports nothing heavy.
"""
from __future__ import annotations

from collections.abc import Callable

from .base import (
    HANDOFF_DEPLOY_OPTIONS,
    HANDOFF_ENV,
    PLANNING_ENV,
    SERVED_ONLY_OPTIONS,
    STEERING_ENV,
    VERIFICATION_ENV,
    Method,
)

#: an untrained steerer: the architecture of the RL config (``config``), initialised with ``seed``
_UNTRAINED = {"tau": "0.5", "seed": "0", "config": ""}
#: the zero-shot LLM steerer; top_logprobs, prompt_chars and think_tokens apply to served (openai:) models only
_ZERO_SHOT = {"tau": "0.5", "model": "hf:gemma-3-270m", "seed": "0", **SERVED_ONLY_OPTIONS}


def _train() -> dict[str, str]:
    """The RL trainer's documented options with SteeringConfig's defaults (imports torch)."""
    from .steering import train_options

    return train_options()


def _train_one_decision() -> dict[str, str]:
    """Planning decides once per task and verification about once per proposed answer, so their state banks hold
    ~1 state per task (x bank_rollouts). Their default training budget is smaller than steering's (16 x 64 states,
    N=8 instead of 40 x 128, N=16): each of their continuations is a whole episode, so steering's budget would take
    them well over the 20 minutes steering trains in; raise m / k / N in the method spec for a matched budget."""
    return {**_train(), "bank_tasks": "1000", "m": "16", "k": "64", "N": "8"}


def _handoff_train() -> dict[str, str]:
    from .handoff import handoff_train_options

    return handoff_train_options()


def _steering_rl() -> Method:
    return Method("steering_rl", "the steering agent trained with the paper's RL (ranking loss + GRPO) on the train split",
        STEERING_ENV, "baselines.steering:build_rl_steering", options={"tau": "0.5", **_train()}, learns=True,
        group="steering", rate_knob="tau")


def _planning_rl() -> Method:
    return Method("planning_rl", "planning with the same RL trainer on SearchPlanning-v0", PLANNING_ENV,
        "baselines.steering:build_rl_planning", options={"tau": "0.5", **_train_one_decision()}, learns=True,
        group="planning", rate_knob="tau")


def _verification_rl() -> Method:
    return Method("verification_rl", "verification with the same RL trainer on SearchVerification-v0", VERIFICATION_ENV,
        "baselines.steering:build_rl_verification", options={"tau": "0.5", **_train_one_decision()}, learns=True,
        group="verification", rate_knob="tau")


def _handoff_rl() -> Method:
    return Method("handoff_rl", "the steering agent trained with the paper's RL (ranking loss + GRPO) on "
        "HandoffSteering-v0's train split; coverage / every / slow_pass / pass_prior / pass_reads_fast / pass_bias as for "
        "handoff_zero_shot; continuation=policy trains on continuations where the current steerer takes every later "
        "decision (repeated interventions; continuation_gate=open: its slow path at every later hand-off)", HANDOFF_ENV,
        "baselines.handoff:build_handoff_rl",
        options={"tau": "0.5", "coverage": "", "every": "0", "dev_tasks": "20", "slow_pass": "0", "pass_prior": "0",
                 "pass_reads_fast": "0", "pass_bias": "0", "continuation": "pass", "continuation_gate": "tau",
                 **_handoff_train()},
        learns=True, group="steering", deploy_options=HANDOFF_DEPLOY_OPTIONS)


#: a built-in method: its record, or (its name, a function building the record on first lookup)
MethodEntry = Method | tuple[str, Callable[[], Method]]

_ENTRIES: tuple[MethodEntry, ...] = (
    Method("no_supervision", "the frozen executor alone (always pass); the reference row", STEERING_ENV,
           "baselines.simple:build_no_supervision", group="reference"),
    Method("random", "intervene with probability p per decision, random catalogue option; by default p matches "
           "steering_rl's measured interventions per decision in the same run folder", STEERING_ENV,
           "baselines.simple:build_random", options={"p": "", "match": "steering_rl"}, group="rule", rate_knob="p"),
    Method("always", "intervene at every decision with one fixed option", STEERING_ENV,
           "baselines.simple:build_always", options={"option": "refocus"}, group="rule"),
    Method("fixed_rule", "one catalogue note at decision `at` (0 = before the first executor turn), pass otherwise",
           STEERING_ENV, "baselines.fixed_rule:build_fixed_rule", options={"option": "keep_searching", "at": "1"},
           group="rule"),
    Method("best_fixed_rule", "the best fixed rule (option, decision 0..max_at), chosen on the dev split by mean F1; "
           "the bar every learned method must clear", STEERING_ENV, "baselines.fixed_rule:build_best_fixed_rule",
           options={"max_at": "3", "dev_tasks": "0", "seeds": "1"}, learns=True, group="rule"),
    Method("oracle", "reads the simulator's hidden state and sends the note that fixes it (headroom only: no real "
           "steerer sees hidden state)", STEERING_ENV, "baselines.oracle:build_oracle",
           options={"max_interventions": "3", "lookahead": "4"}, group="reference"),
    Method("drift_rule", "rule-based drift detector: a repeated query -> stop_repeating; turn >= turns -> answer_now",
           STEERING_ENV, "baselines.simple:build_drift_rule", options={"turns": "6"}, group="rule"),
    Method("steering_untrained", "the steering agent's architecture before RL: the RL config's steerer, freshly "
           "initialised with `seed` (fast path + gate + slow path); not a zero-shot model", STEERING_ENV,
           "baselines.steering:build_untrained_steering", options=_UNTRAINED, group="steering", rate_knob="tau"),
    Method("steering_zero_shot", "zero-shot steering as in the paper: a prompted LLM steerer, no training; `model`: "
           "a local hf:<folder> / hf:gemma-3-270m (CausalLMSteerer; slow on a CPU, use with --limit) or a served "
           "openai:<name>@<base_url> (vLLM, SGLang, llama.cpp server: fast path from the first token's top "
           "`top_logprobs`, slow path generated: up to `think_tokens` of reasoning, then the intervention line; `prompt_chars` "
           "caps its observation text)", STEERING_ENV,
           "baselines.steering:build_zero_shot_llm", options=_ZERO_SHOT, group="steering", rate_knob="tau"),
    Method("steering_llm_zero_shot", "deprecated name of steering_zero_shot (the same steerer and options)",
           STEERING_ENV, "baselines.steering:build_zero_shot_llm_deprecated", options=_ZERO_SHOT, group="steering",
           rate_knob="tau"),
    ("steering_rl", _steering_rl),
    Method("planning_untrained", "planning: an untrained steerer picks a plan (or none) once, before execution",
           PLANNING_ENV, "baselines.steering:build_untrained_planning", options=_UNTRAINED, group="planning",
           rate_knob="tau"),
    ("planning_rl", _planning_rl),
    Method("verification_untrained", "verification: an untrained steerer accepts or rejects each proposed answer",
           VERIFICATION_ENV, "baselines.steering:build_untrained_verification", options=_UNTRAINED,
           group="verification", rate_knob="tau"),
    ("verification_rl", _verification_rl),
    Method("filtered_bc", "filtered behaviour cloning: offline proposals kept only where the counterfactual "
           "continuation improved F1, then supervised learning; `tau`: intervene when the classifier's probability of "
           "not passing is at least tau (empty: its argmax)", STEERING_ENV,
           "baselines.filtered_bc:build_filtered_bc",
           options={"tasks": "200", "N": "2", "propose": "0.5", "margin": "0.0", "epochs": "300", "seed": "0",
                    "tau": ""},
           learns=True, group="offline", rate_knob="tau"),
    Method("sb3_ppo", "Stable-Baselines3 PPO on hashed features + counters (FeatureObservation wrapper); `cost`: "
           "reward cost per intervention during training (its rate knob)", STEERING_ENV,
           "baselines.sb3_ppo:build_sb3_ppo", options={"timesteps": "6000", "buckets": "128", "seed": "0", "cost": "0"},
           learns=True, group="rl_library", rate_knob="cost"),
    # -- the five-role hand-off pipeline (HandoffSteering-v0; docs/results_handoff.md) -------------------------
    Method("handoff_none", "the simulated pipeline alone (pass at every hand-off); the reference row of the hand-off table",
           HANDOFF_ENV, "baselines.simple:build_no_supervision", group="reference"),
    Method("handoff_random", "a random catalogue intervention at each hand-off with probability p (the paper's 25% coverage)",
           HANDOFF_ENV, "baselines.handoff:build_handoff_random", options={"p": "0.25"}, group="rule"),
    Method("handoff_best_fixed_rule", "one catalogue option at one hand-off index, chosen on dev by mean F1",
           HANDOFF_ENV, "baselines.handoff:build_handoff_best_fixed_rule",
           options={"max_at": "8", "dev_tasks": "20", "seeds": "1"}, learns=True, group="rule"),
    Method("handoff_zero_shot", "the steering agent without RL on the hand-off features (an untrained encoder steerer); "
           "coverage=C picks tau on dev for that share of agent turns, every=1 opens the gate at every hand-off, "
           "slow_pass=1 makes pass one of the slow path's choices (pass_prior=P: its initial probability; "
           "pass_reads_fast=1: its pass logit reads the fast path's z; pass_bias=B|dev: a deployment shift of "
           "the pass logit, dev: chosen by dev F1)",
           HANDOFF_ENV, "baselines.handoff:build_handoff_zero_shot",
           options={"tau": "0.5", "coverage": "", "every": "0", "dev_tasks": "20", "seed": "0", "slow_pass": "0",
                    "pass_prior": "0", "pass_reads_fast": "0", "pass_bias": "0"},
           group="steering",
           deploy_options=HANDOFF_DEPLOY_OPTIONS),
    ("handoff_rl", _handoff_rl),
)

#: ``name -> Method`` or a function building it, in table order (the registry registers these)
BUILTIN_METHODS: dict[str, Method | Callable[[], Method]] = {
    (entry.name if isinstance(entry, Method) else entry[0]): (entry if isinstance(entry, Method) else entry[1])
    for entry in _ENTRIES
}
