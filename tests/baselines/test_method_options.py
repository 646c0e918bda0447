"""Typed method options: every method's options are a frozen dataclass, parsed and validated once from a spec."""

from __future__ import annotations

import dataclasses
import json

import pytest

from baselines.options import MethodOptionError, MethodOptions
from baselines.registry import MethodContext, build_policy, get_method, known_methods, parse_method

#: every built-in method's option texts and defaults as the method list gave them before the options were typed:
#: parsing these texts must give exactly the typed defaults (no option renamed, dropped or re-defaulted)
TEXT_DEFAULTS: dict[str, dict[str, str]] = {
    "no_supervision": {},
    "random": {"p": "", "match": "steering_rl"},
    "always": {"option": "refocus"},
    "fixed_rule": {"option": "keep_searching", "at": "1"},
    "best_fixed_rule": {"max_at": "3", "dev_tasks": "0", "seeds": "1"},
    "oracle": {"max_interventions": "3", "lookahead": "4"},
    "drift_rule": {"turns": "6"},
    "steering_untrained": {"tau": "0.5", "seed": "0", "config": ""},
    "steering_zero_shot": {
        "tau": "0.5",
        "model": "hf:gemma-3-270m",
        "seed": "0",
        "top_logprobs": "20",
        "fit": "auto",
        "prompt_tokens": "384",
        "prompt_chars": "6000",
        "think_tokens": "48",
        "name_choice": "parse",
    },
    "planning_untrained": {"tau": "0.5", "seed": "0", "config": ""},
    "verification_untrained": {"tau": "0.5", "seed": "0", "config": ""},
    "filtered_bc": {
        "tasks": "200",
        "N": "2",
        "propose": "0.5",
        "margin": "0.0",
        "epochs": "300",
        "seed": "0",
        "tau": "",
    },
    "sb3_ppo": {"timesteps": "6000", "buckets": "128", "seed": "0", "cost": "0"},
    "handoff_none": {},
    "handoff_random": {"p": "0.25"},
    "handoff_best_fixed_rule": {"max_at": "8", "dev_tasks": "20", "seeds": "1"},
    "handoff_zero_shot": {
        "tau": "0.5",
        "coverage": "",
        "every": "0",
        "dev_tasks": "20",
        "seed": "0",
        "slow_pass": "0",
        "pass_prior": "0",
        "pass_reads_fast": "0",
        "pass_bias": "0",
    },
}


def _rl_text_defaults() -> dict[str, dict[str, str]]:
    """The RL methods' former defaults: SteeringConfig's trainer settings, with the per-method budgets."""
    from agents.steering.config import SteeringConfig

    trainer = SteeringConfig()
    base = {
        "tau": "0.5",
        "config": "",
        **{k: str(getattr(trainer, k)) for k in ("m", "k", "G", "N", "bank_tasks", "eps_sel", "lr", "seed")},
        "cost": str(trainer.intervention_cost),
    }
    one_decision = {**base, "bank_tasks": "1000", "m": "16", "k": "64", "N": "8"}
    handoff = {
        **base,
        "bank_tasks": "400",
        "m": "24",
        "k": "96",
        "G": "4",
        "N": "6",
        **{k: v for k, v in TEXT_DEFAULTS["handoff_zero_shot"].items() if k != "seed"},
        "continuation": "pass",
        "continuation_gate": "tau",
    }
    return {"steering_rl": base, "planning_rl": one_decision, "verification_rl": one_decision, "handoff_rl": handoff}


def test_every_registered_method_has_a_frozen_dataclass_of_documented_options():
    methods = known_methods()
    assert len(methods) >= 20
    for method in methods:
        kind = method.options_type()
        assert dataclasses.is_dataclass(kind) and issubclass(kind, MethodOptions), method.name
        assert kind.__dataclass_params__.frozen, method.name
        defaults = kind()
        with pytest.raises(dataclasses.FrozenInstanceError):
            defaults.__setattr__("anything", 1)
        docs = kind.option_docs()
        assert all(doc.strip() for doc in docs.values()), (method.name, docs)
        if method.rate_knob is not None:
            assert method.rate_knob in kind.option_names(), method.name
        json.dumps(defaults.as_dict())  # what a run folder records: JSON types only


def test_the_typed_defaults_are_the_former_text_defaults():
    expected = {**TEXT_DEFAULTS, **_rl_text_defaults()}
    names = {m.name for m in known_methods()}
    assert set(expected) <= names
    for name, texts in expected.items():
        kind = get_method(name).options_type()
        assert set(kind.option_names()) == set(texts), name
        assert kind.parse(name, texts) == kind(), name


def test_a_misspelled_option_names_the_method_the_right_name_and_the_valid_ones():
    with pytest.raises(MethodOptionError) as caught:
        parse_method("drift_rule:turn=4")
    message = str(caught.value)
    assert "'drift_rule'" in message and "'turn'" in message and "did you mean 'turns'?" in message
    assert "its options: turns (default 6)" in message
    with pytest.raises(MethodOptionError, match=r"did you mean 'eps_sel'\?.* m \(default \d+\), k \(default \d+\)"):
        parse_method("steering_rl:eps_sell=0.1")
    with pytest.raises(MethodOptionError, match="'no_supervision' has no option 'p'; its options: none"):
        parse_method("no_supervision:p=0.1")


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("steering_rl:lr=abc", "option lr expects float, got 'abc'"),
        ("steering_rl:m=4.5", "option m expects int, got '4.5'"),
        ("handoff_zero_shot:every=maybe", "option every expects bool, got 'maybe'"),
        ("handoff_rl:continuation=sometimes", "option continuation expects one of pass, policy, got 'sometimes'"),
        ("handoff_zero_shot:pass_bias=high,slow_pass=1", "option pass_bias expects float or dev, got 'high'"),
        ("drift_rule:turns=", "option turns expects int, got ''"),
    ],
)
def test_a_value_of_the_wrong_type_names_the_option_the_type_and_the_value(spec, expected):
    with pytest.raises(MethodOptionError) as caught:
        parse_method(spec)
    assert f"method {spec.partition(':')[0]!r}: {expected}" == str(caught.value)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("random:p=1.5", "option p must be in [0, 1], got 1.5"),
        ("steering_rl:tau=1", "option tau must be in (0, 1), got 1.0"),
        ("steering_rl:m=0", "option m must be >= 1, got 0"),
        ("steering_rl:lr=0", "option lr must be > 0, got 0.0"),
        ("handoff_rl:coverage=1.0", "option coverage must be in (0, 1), got 1.0"),
        ("fixed_rule:at=-1", "option at must be >= 0, got -1"),
    ],
)
def test_an_out_of_range_value_says_the_range(spec, expected):
    with pytest.raises(MethodOptionError) as caught:
        parse_method(spec)
    assert str(caught.value).endswith(expected)


def test_rules_between_options_are_checked_when_the_spec_is_parsed():
    with pytest.raises(MethodOptionError, match="'handoff_zero_shot'.*pass_prior.*add slow_pass=1"):
        parse_method("handoff_zero_shot:pass_prior=0.3")
    with pytest.raises(MethodOptionError, match="continuation_gate applies to continuation=policy only"):
        parse_method("handoff_rl:continuation_gate=open")
    with pytest.raises(MethodOptionError, match="'steering_zero_shot'.*think_tokens apply to served models only"):
        parse_method("steering_zero_shot:think_tokens=8")
    parse_method("handoff_rl:continuation=policy,continuation_gate=open,slow_pass=1,pass_prior=0.3")


def test_values_are_converted_to_their_types():
    options = parse_method("handoff_zero_shot:every=yes,slow_pass=1,pass_bias=dev,coverage=0.25").options
    assert (options.every, options.slow_pass, options.pass_bias, options.coverage) == (True, True, "dev", 0.25)
    assert parse_method("handoff_zero_shot:slow_pass=true,pass_bias=1.5").options.pass_bias == 1.5
    assert parse_method("handoff_zero_shot:every=off").options.every is False
    assert parse_method("filtered_bc:tau=").options.tau is None
    assert parse_method("random:p=0.1").options.p == 0.1
    rl = parse_method("steering_rl:lr=3e-4,m=8").options
    assert (rl.lr, rl.m, type(rl.m)) == (3e-4, 8, int)


def test_options_built_in_code_are_validated_too():
    from baselines.simple import DriftRuleOptions, RandomOptions

    assert RandomOptions(p=1).p == 1.0 and isinstance(RandomOptions(p=1).p, float)
    with pytest.raises(MethodOptionError, match="option p must be in"):
        RandomOptions(p=2.0)
    with pytest.raises(MethodOptionError, match="option turns expects int, got '6'"):
        DriftRuleOptions(turns="6")
    with pytest.raises(MethodOptionError, match="expects int, got True"):
        DriftRuleOptions(turns=True)


def test_labels_keep_the_texts_as_written_and_drop_deploy_options_for_training():
    spec = parse_method("handoff_rl:coverage=0.25,every=1,m=2,pass_bias=dev,slow_pass=1,tau=0.3")
    assert spec.label == "handoff_rl:coverage=0.25,every=1,m=2,pass_bias=dev,slow_pass=1,tau=0.3"
    assert spec.training_label == "handoff_rl:m=2,slow_pass=1"
    assert parse_method("filtered_bc:tasks=3,tau=0.2").training_label == "filtered_bc:tasks=3"
    assert parse_method("random:p=0.1").training_label == "random:p=0.1"  # p is not deploy-only


def test_a_builder_reads_its_typed_options_from_the_context():
    from baselines.simple import DriftRuleOptions, RandomOptions

    context = MethodContext(benchmarks=("nq",))
    rule = build_policy("drift_rule:turns=3", context)
    assert rule.turn_threshold == 3 and context.options == DriftRuleOptions(turns=3)
    assert context.options_of(DriftRuleOptions).turns == 3
    with pytest.raises(Exception, match="reads RandomOptions"):
        context.options_of(RandomOptions)
    assert MethodContext().options_of(DriftRuleOptions) == DriftRuleOptions()  # none given: the defaults


def _eval_help(capsys) -> str:
    from steer_envs.cli.main import main

    with pytest.raises(SystemExit) as done:
        main(["eval", "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


def test_eval_help_lists_every_method_with_each_option_default_and_doc(capsys):
    out = _eval_help(capsys)
    flat = " ".join(out.split())  # the help wraps long docs
    for method in known_methods():
        assert f"{method.name}: " in out, method.name
        for name, kind, default, doc in method.options_type().describe():
            assert f"{name}={default} ({kind}): {' '.join(doc.split())}" in flat, (method.name, name)
    assert "  lr=0.003 (float): learning rate (> 0)" in out
    assert "  p= (float or empty):" in out


def test_list_methods_shows_the_same_options(capsys):
    from steer_envs.cli.main import main

    assert main(["eval", "--list-methods"]) == 0
    listed = capsys.readouterr().out
    assert listed.strip() and listed.strip() in _eval_help(capsys)


def test_the_run_folder_records_the_options_dataclass_as_a_dict(tmp_path):
    from benchmarks.harness.config import EvalConfig
    from benchmarks.harness.runfolder import RunFolder
    from benchmarks.harness.runner import evaluate

    folder = RunFolder(tmp_path / "run", EvalConfig(benchmarks=["nq"], split="dev", limit=1, seeds=1))
    evaluate(folder, "drift_rule:turns=3", progress=False)
    recorded = json.loads((folder.root / "methods.json").read_text(encoding="utf-8"))
    assert recorded["drift_rule:turns=3"]["options"] == {"turns": 3}
    evaluate(folder, "fixed_rule:at=0", progress=False)
    recorded = json.loads((folder.root / "methods.json").read_text(encoding="utf-8"))
    assert recorded["fixed_rule:at=0"]["options"] == {"option": "keep_searching", "at": 0}
