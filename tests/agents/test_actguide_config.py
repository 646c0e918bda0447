"""ActGuideConfig's reference-plan keys renamed guidance_* -> plan_* (issue 20, step 6): old config files, keywords
and run folders still load (with a DeprecationWarning naming the new key), and a config keeps the fingerprint it had
before the rename, so run folders made then resume."""
from __future__ import annotations

import json
import warnings

import pytest

from agents.actguide.config import RENAMED_FIELDS, VARIANTS, ActGuideConfig
from agents.trainer_base import RunFolder
from steer_envs.errors import SteerEnvsError

#: the config.json of a real run folder written before the rename (ACTGUIDE-RL, seed 0, the documented setting),
#: with the fingerprint the trainer stored there
OLD_RUN_CONFIG = {
    "adaptive": True, "batch_tasks": 16, "benchmarks": None, "budget": 12000, "clip_eps": 0.2, "data_dir": None,
    "device": "cpu", "fallback": True, "fixed_k": 0, "fork_probes": True, "grad_clip": 1.0, "group_size": 8,
    "guidance": True, "guidance_answers": True, "guidance_mode": "prompt", "guidance_noise": 0.0,
    "guidance_noise_seed": 0, "guidance_sources": ["rollout", "gold"], "hard_threshold": 0.0,
    "init_from": "/work/runs22/base", "kl_coef": 0.01, "learner": "admissible", "learner_args": {}, "lr": 0.003,
    "luffy_gamma": 0.1, "max_answers": 24, "max_probe_steps": 5, "max_queries": 8, "max_turns": 6, "metric": "em",
    "micro_batch": 0, "mixed_policy": True, "mixed_precision": "no", "pool": "rl", "pretrain_tasks_per_benchmark": 150,
    "probes_per_step": 2, "ratio_shaping": "luffy", "seed": 0, "sft_epochs": 0, "sft_lr": 0.003, "split": "train",
    "task_seed": 0, "tasks_per_benchmark": 150, "topk": 3, "update_epochs": 2, "weight_decay": 0.0,
}
OLD_RUN_FINGERPRINT = "eb8fcc60992c3114"


def _renamed(data: dict) -> dict:
    return {RENAMED_FIELDS.get(key, key): value for key, value in data.items()}


def test_an_old_style_config_file_keeps_its_fingerprint(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(OLD_RUN_CONFIG))
    with pytest.warns(DeprecationWarning) as caught:
        old = ActGuideConfig.load(path)
    messages = " ".join(str(w.message) for w in caught)
    for old_key, new_key in RENAMED_FIELDS.items():
        assert f"{old_key!r} is deprecated, use {new_key!r}" in messages
    assert old.fingerprint() == OLD_RUN_FINGERPRINT
    new_path = tmp_path / "new.json"
    new_path.write_text(json.dumps(_renamed(OLD_RUN_CONFIG)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new keys load without a warning
        new = ActGuideConfig.load(new_path)
    assert new == old and new.fingerprint() == OLD_RUN_FINGERPRINT
    assert "plan_mode" in new.to_dict() and "guidance_mode" not in new.to_dict()
    toml_old, toml_new = tmp_path / "old.toml", tmp_path / "new.toml"
    toml_old.write_text('guidance_mode = "prefix"\nguidance_noise = 0.2\nguidance_sources = ["gold"]\n')
    toml_new.write_text('plan_mode = "prefix"\nplan_noise = 0.2\nplan_sources = ["gold"]\n')
    with pytest.warns(DeprecationWarning) as caught:
        from_old = ActGuideConfig.load(toml_old)
    assert sorted(str(w.message).split("'")[1] for w in caught) == ["guidance_mode", "guidance_noise", "guidance_sources"]
    assert from_old == ActGuideConfig.load(toml_new) and from_old.fingerprint() == ActGuideConfig.load(
        toml_new).fingerprint()
    assert from_old.fingerprint() != ActGuideConfig().fingerprint()  # the renamed fields do enter the hash


def test_a_run_folder_made_before_the_rename_resumes(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"fingerprint": OLD_RUN_FINGERPRINT, "config": OLD_RUN_CONFIG}))
    (run / "checkpoint.pt").write_bytes(b"")
    config = ActGuideConfig(**_renamed(OLD_RUN_CONFIG))
    assert RunFolder(run, config, marker="checkpoint.pt", writer=False).prepare(resume=True) is True
    other = ActGuideConfig(**{**_renamed(OLD_RUN_CONFIG), "plan_noise": 0.1})
    with pytest.raises(SteerEnvsError, match=r"differs in: plan_noise\)"):  # only the key that differs is named
        RunFolder(run, other, marker="checkpoint.pt", writer=False).prepare(resume=True)


def test_old_keywords_and_attributes_still_work():
    with pytest.warns(DeprecationWarning, match="'guidance_mode' is deprecated, use 'plan_mode'"):
        config = ActGuideConfig(guidance_mode="prefix")
    assert config == ActGuideConfig(plan_mode="prefix") == ActGuideConfig().variant("prefix")
    with pytest.warns(DeprecationWarning, match="use ActGuideConfig.plan_noise"):
        config.guidance_noise = 0.2
    assert config.plan_noise == 0.2
    with pytest.raises(SteerEnvsError, match="pass only 'plan_mode'"):
        ActGuideConfig(guidance_mode="prefix", plan_mode="prefix")
    assert all(key not in RENAMED_FIELDS for switches in VARIANTS.values() for key in switches)
    kwargs = ActGuideConfig(plan_noise=0.1).env_kwargs()
    assert kwargs["plan_noise"] == 0.1 and not any(key.startswith("guidance_") for key in kwargs)


def test_an_old_name_override_of_the_env_options_is_renamed_not_refused():
    config = ActGuideConfig()
    with pytest.warns(DeprecationWarning, match="guidance_mode"):
        kwargs = config.env_kwargs(guidance_mode="prefix")
    assert kwargs["plan_mode"] == "prefix" and "guidance_mode" not in kwargs
    assert config.env_kwargs(plan_mode="prefix") == kwargs


def test_the_guided_baseline_is_checked_and_hashed_only_away_from_its_default():
    with pytest.raises(SteerEnvsError, match=r"guided_baseline must be one of group, unguided \(got 'mean'\)"):
        ActGuideConfig(guided_baseline="mean")
    config = ActGuideConfig(**_renamed(OLD_RUN_CONFIG))
    assert config.guided_baseline == "group" and config.fingerprint() == OLD_RUN_FINGERPRINT  # old folders resume
    assert config.variant("unguided_baseline").fingerprint() != OLD_RUN_FINGERPRINT


def test_the_guided_weight_is_checked_and_hashed_only_away_from_its_default():
    with pytest.raises(SteerEnvsError, match=r"guided_weight must be > 0 \(got 0\.0; 1 = the paper's objective\)"):
        ActGuideConfig(guided_weight=0.0)
    config = ActGuideConfig(**_renamed(OLD_RUN_CONFIG))
    assert config.guided_weight == 1.0 and config.fingerprint() == OLD_RUN_FINGERPRINT  # old folders resume
    assert ActGuideConfig(**_renamed(OLD_RUN_CONFIG), guided_weight=4.0).fingerprint() != OLD_RUN_FINGERPRINT
