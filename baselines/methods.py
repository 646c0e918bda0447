"""Every built-in method, by name: the rows of the steering paper's tables and of the hand-off table.

Names follow the paper's rows: no supervision; random intervention at a matched rate; always intervene; a
rule-based drift detector; the best fixed rule; zero-shot steering (a prompted causal LM steerer, as in the
paper); the untrained steerer (the RL architecture before training); RL-trained steering; planning and
verification, each untrained and RL-trained; filtered behaviour cloning; SB3 PPO. ``rate_knob`` names the option a
rate-matched comparison sets on dev (:mod:`benchmarks.harness.operating`).

Each method's options are a frozen dataclass beside its builder (``baselines.simple:RandomOptions``, ...), named
here by import path as the builder is: the RL methods' options carry SteeringConfig's defaults, and SteeringConfig's
module imports torch, so looking up ``no_supervision`` must not import them. This module imports nothing heavy.
"""

from __future__ import annotations

from .base import HANDOFF_ENV, PLANNING_ENV, STEERING_ENV, VERIFICATION_ENV, Method

_ENTRIES: tuple[Method, ...] = (
    Method(
        "no_supervision",
        "the frozen executor alone (always pass); the reference row",
        STEERING_ENV,
        "baselines.simple:build_no_supervision",
        group="reference",
    ),
    Method(
        "random",
        "intervene with probability p per decision, random catalogue option; by default p matches "
        "steering_rl's measured interventions per decision in the same run folder",
        STEERING_ENV,
        "baselines.simple:build_random",
        options="baselines.simple:RandomOptions",
        group="rule",
        rate_knob="p",
        knob_scale="unit",
    ),
    Method(
        "always",
        "intervene at every decision with one fixed option",
        STEERING_ENV,
        "baselines.simple:build_always",
        options="baselines.simple:AlwaysOptions",
        group="rule",
    ),
    Method(
        "fixed_rule",
        "one catalogue note at decision `at` (0 = before the first executor turn), pass otherwise",
        STEERING_ENV,
        "baselines.fixed_rule:build_fixed_rule",
        options="baselines.fixed_rule:FixedRuleOptions",
        group="rule",
    ),
    Method(
        "best_fixed_rule",
        "the best fixed rule (option, decision 0..max_at), chosen on the dev split by mean F1; "
        "the bar every learned method must clear",
        STEERING_ENV,
        "baselines.fixed_rule:build_best_fixed_rule",
        options="baselines.fixed_rule:BestFixedRuleOptions",
        learns=True,
        group="rule",
        fits_on="dev",
        describe_choice="baselines.fixed_rule:describe_choice",
    ),
    Method(
        "oracle",
        "reads the simulator's hidden state and sends the note that fixes it (headroom only: no real "
        "steerer sees hidden state)",
        STEERING_ENV,
        "baselines.oracle:build_oracle",
        options="baselines.oracle:OracleOptions",
        group="reference",
        headroom=True,
    ),
    Method(
        "drift_rule",
        "rule-based drift detector: a repeated query -> stop_repeating; turn >= turns -> answer_now",
        STEERING_ENV,
        "baselines.simple:build_drift_rule",
        options="baselines.simple:DriftRuleOptions",
        group="rule",
    ),
    Method(
        "steering_untrained",
        "the steering agent's architecture before RL: the RL config's steerer, freshly "
        "initialised with `seed` (fast path + gate + slow path); not a zero-shot model",
        STEERING_ENV,
        "baselines.steering:build_untrained_steering",
        options="baselines.steering:UntrainedOptions",
        group="steering",
        rate_knob="tau",
    ),
    Method(
        "steering_zero_shot",
        "zero-shot steering as in the paper: a prompted LLM steerer, no training; `model`: "
        "a local hf:<folder> / hf:gemma-3-270m (CausalLMSteerer; slow on a CPU, use with --limit) or a served "
        "openai:<name>@<base_url> (vLLM, SGLang, llama.cpp server: fast path from the first token's top "
        "`top_logprobs`, slow path generated: up to `think_tokens` of reasoning, then the intervention line)",
        STEERING_ENV,
        "baselines.steering:build_zero_shot_llm",
        options="baselines.steering:ZeroShotOptions",
        group="steering",
        rate_knob="tau",
    ),
    Method(
        "steering_rl",
        "the steering agent trained with the paper's RL (ranking loss + GRPO) on the train split",
        STEERING_ENV,
        "baselines.steering:build_rl_steering",
        options="baselines.steering:RLOptions",
        learns=True,
        group="steering",
        rate_knob="tau",
    ),
    Method(
        "planning_untrained",
        "planning: an untrained steerer picks a plan (or none) once, before execution",
        PLANNING_ENV,
        "baselines.steering:build_untrained_planning",
        options="baselines.steering:UntrainedOptions",
        group="planning",
        rate_knob="tau",
    ),
    Method(
        "planning_rl",
        "planning with the same RL trainer on SearchPlanning-v0",
        PLANNING_ENV,
        "baselines.steering:build_rl_planning",
        options="baselines.steering:OneDecisionRLOptions",
        learns=True,
        group="planning",
        rate_knob="tau",
    ),
    Method(
        "verification_untrained",
        "verification: an untrained steerer accepts or rejects each proposed answer",
        VERIFICATION_ENV,
        "baselines.steering:build_untrained_verification",
        options="baselines.steering:UntrainedOptions",
        group="verification",
        rate_knob="tau",
    ),
    Method(
        "verification_rl",
        "verification with the same RL trainer on SearchVerification-v0",
        VERIFICATION_ENV,
        "baselines.steering:build_rl_verification",
        options="baselines.steering:OneDecisionRLOptions",
        learns=True,
        group="verification",
        rate_knob="tau",
    ),
    Method(
        "filtered_bc",
        "filtered behaviour cloning: offline proposals kept only where the counterfactual "
        "continuation improved F1, then supervised learning; `tau`: intervene when the classifier's probability of "
        "not passing is at least tau (empty: its argmax)",
        STEERING_ENV,
        "baselines.filtered_bc:build_filtered_bc",
        options="baselines.filtered_bc:FilteredBCOptions",
        learns=True,
        group="offline",
        rate_knob="tau",
        budget_knob="tasks",
    ),
    Method(
        "sb3_ppo",
        "Stable-Baselines3 PPO on hashed features + counters (FeatureObservation wrapper); `cost`: "
        "reward cost per intervention during training (its rate knob)",
        STEERING_ENV,
        "baselines.sb3_ppo:build_sb3_ppo",
        options="baselines.sb3_ppo:SB3PPOOptions",
        learns=True,
        group="rl_library",
        rate_knob="cost",
        # with no cost it intervenes ~1.7 times per task on sim:default's dev split: the grid starts where the rate
        # begins to fall and reaches costs that stop most interventions
        knob_grid=("0.03", "0.1", "0.3", "1"),
        budget_knob="timesteps",
        budget_knob_steps=1.0,
    ),
    # -- the five-role hand-off pipeline (HandoffSteering-v0; docs/results_handoff.md) -------------------------
    Method(
        "handoff_none",
        "the simulated pipeline alone (pass at every hand-off); the reference row of the hand-off table",
        HANDOFF_ENV,
        "baselines.simple:build_no_supervision",
        group="reference",
    ),
    Method(
        "handoff_random",
        "a random catalogue intervention at each hand-off with probability p (the paper's 25% coverage)",
        HANDOFF_ENV,
        "baselines.handoff:build_handoff_random",
        options="baselines.handoff:HandoffRandomOptions",
        group="rule",
    ),
    Method(
        "handoff_best_fixed_rule",
        "one catalogue option at one hand-off index, chosen on dev by mean F1",
        HANDOFF_ENV,
        "baselines.handoff:build_handoff_best_fixed_rule",
        options="baselines.handoff:HandoffBestFixedRuleOptions",
        learns=True,
        group="rule",
    ),
    Method(
        "handoff_zero_shot",
        "the steering agent without RL on the hand-off features (an untrained "
        "encoder steerer); its operating point is tau, coverage or every",
        HANDOFF_ENV,
        "baselines.handoff:build_handoff_zero_shot",
        options="baselines.handoff:HandoffZeroShotOptions",
        group="steering",
    ),
    Method(
        "handoff_rl",
        "the steering agent trained with the paper's RL (ranking loss + GRPO) on "
        "HandoffSteering-v0's train split; its operating point as for handoff_zero_shot",
        HANDOFF_ENV,
        "baselines.handoff:build_handoff_rl",
        options="baselines.handoff:HandoffRLOptions",
        learns=True,
        group="steering",
    ),
)

#: ``name -> Method``, in table order (the registry registers these)
BUILTIN_METHODS: dict[str, Method] = {method.name: method for method in _ENTRIES}
