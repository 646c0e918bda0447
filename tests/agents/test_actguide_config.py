"""ActGuideConfig and the run folders of both trainers: fingerprints hash the config as it is, a run folder records
the steer-envs version that wrote it, and a folder of another release line is refused with both versions named."""

from __future__ import annotations

import argparse
import hashlib
import json

import pytest

from agents.actguide.config import VARIANTS, ActGuideConfig
from agents.steering.config import SteeringConfig
from agents.trainer_base import VERSION_KEY, RunFolder, release_line
from steer_envs import __version__
from steer_envs.errors import SteerEnvsError

#: a config.json as steer-envs 0.1.x wrote it: no version recorded, the reference-plan keys under their 0.1 names
OLD_RUN_CONFIG = {
    "adaptive": True,
    "batch_tasks": 16,
    "benchmarks": None,
    "budget": 12000,
    "clip_eps": 0.2,
    "data_dir": None,
    "fallback": True,
    "fixed_k": 0,
    "fork_probes": True,
    "grad_clip": 1.0,
    "group_size": 8,
    "guidance": True,
    "guidance_answers": True,
    "guidance_mode": "prompt",
    "guidance_noise": 0.0,
    "guidance_noise_seed": 0,
    "guidance_sources": ["rollout", "gold"],
    "hard_threshold": 0.0,
    "init_from": None,
    "kl_coef": 0.01,
    "learner": "admissible",
    "learner_args": {},
    "lr": 0.003,
    "luffy_gamma": 0.1,
    "max_answers": 24,
    "max_probe_steps": 5,
    "max_queries": 8,
    "max_turns": 6,
    "metric": "em",
    "mixed_policy": True,
    "pool": "rl",
    "pretrain_tasks_per_benchmark": 150,
    "probes_per_step": 2,
    "ratio_shaping": "luffy",
    "seed": 0,
    "sft_epochs": 0,
    "sft_lr": 0.003,
    "split": "train",
    "task_seed": 0,
    "tasks_per_benchmark": 150,
    "topk": 3,
    "update_epochs": 2,
    "weight_decay": 0.0,
}


def _folder(path, config, version=None, fingerprint=None):
    """A run folder with a checkpoint, as a trainer of ``version`` (None: one that recorded none) left it."""
    path.mkdir()
    saved = {"fingerprint": fingerprint or config.fingerprint(), "config": config.to_dict()}
    if version is not None:
        saved[VERSION_KEY] = version
    (path / "config.json").write_text(json.dumps(saved))
    (path / "checkpoint.pt").write_bytes(b"")
    return path


def test_the_fingerprint_hashes_every_field_as_it_is():
    config = ActGuideConfig(guided_baseline="unguided", log_with="tensorboard")
    data = {k: v for k, v in config.to_dict().items() if k != "log_with"}  # the one field that only records the run
    assert config.fingerprint() == hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]
    base = ActGuideConfig().fingerprint()
    for changed in ({"device": "auto"}, {"guided_weight": 2.0}, {"guidance_until": 0.5}, {"pool_keep": "barrier"}):
        assert ActGuideConfig(**changed).fingerprint() != base, changed
    assert ActGuideConfig(log_with="tensorboard").fingerprint() == base


def test_a_new_run_folder_records_the_version_and_resumes_with_the_same_config(tmp_path):
    config = ActGuideConfig(budget=40)
    assert RunFolder(tmp_path / "run", config, marker="checkpoint.pt").prepare(resume=False) is False
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved[VERSION_KEY] == __version__ and saved["fingerprint"] == config.fingerprint()
    (tmp_path / "run" / "checkpoint.pt").write_bytes(b"")
    assert RunFolder(tmp_path / "run", ActGuideConfig(budget=40), marker="checkpoint.pt").prepare(resume=True) is True


def test_a_run_folder_without_a_version_is_refused_with_what_to_do(tmp_path):
    run = tmp_path / "old"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"fingerprint": "eb8fcc60992c3114", "config": OLD_RUN_CONFIG}))
    (run / "checkpoint.pt").write_bytes(b"")
    with pytest.raises(SteerEnvsError) as raised:
        RunFolder(run, ActGuideConfig(), marker="checkpoint.pt", writer=False).prepare(resume=True)
    message = str(raised.value)
    assert f"run folder {str(run)!r} was written by a steer-envs before 0.2.0 (no version recorded)" in message
    assert f"this is steer-envs {__version__}" in message
    assert "Start a new run folder (another --out)" in message and "pip install 'steer-envs<0.2'" in message
    # the CLI reads the folder's own config on --resume: the same refusal, not an unknown-key error
    from agents.actguide.cli import resolve_config

    args = argparse.Namespace(out=str(run), config=None, resume=True, variant="actguide", log_with=None)
    with pytest.raises(SteerEnvsError, match=r"no version recorded.*this is steer-envs"):
        resolve_config(args)


def test_a_run_folder_of_another_release_line_is_refused_and_one_of_this_line_resumes(tmp_path):
    config = SteeringConfig(m=2)
    old = _folder(tmp_path / "old", config, version="0.1.0")
    with pytest.raises(SteerEnvsError) as raised:
        RunFolder(old, config, marker="checkpoint.pt", writer=False).prepare(resume=True)
    message = str(raised.value)
    assert "was written by steer-envs 0.1.0" in message and f"this is steer-envs {__version__}" in message
    assert "`pip install steer-envs==0.1.0`" in message
    patch = ".".join(map(str, release_line(__version__))) + ".99"  # same major.minor, another patch release
    same = _folder(tmp_path / "same", config, version=patch)
    assert RunFolder(same, config, marker="checkpoint.pt", writer=False).prepare(resume=True) is True
    assert release_line("0.2.3") == (0, 2) and release_line("1.4.0") == release_line("1.0.2") == (1,)


def test_a_different_config_is_refused_naming_the_fields_that_differ(tmp_path):
    config = ActGuideConfig(plan_noise=0.1, budget=40)
    run = _folder(tmp_path / "run", config, version=__version__)
    other = ActGuideConfig(plan_noise=0.2, budget=40, fixed_k=1)
    with pytest.raises(SteerEnvsError, match=r"differs in: fixed_k, plan_noise\)"):
        RunFolder(run, other, marker="checkpoint.pt", writer=False).prepare(resume=True)
    # a key the folder holds that this config has not (a removed field) is named too
    saved = json.loads((run / "config.json").read_text())
    saved["config"]["hard_threshold"] = 0.0
    saved["fingerprint"] = "0" * 16
    (run / "config.json").write_text(json.dumps(saved))
    with pytest.raises(SteerEnvsError, match=r"differs in: hard_threshold\)"):
        RunFolder(run, config, marker="checkpoint.pt", writer=False).prepare(resume=True)


def test_the_0_1_key_names_are_unknown_keys(tmp_path):
    path = tmp_path / "old.toml"
    path.write_text('guidance_mode = "prefix"\n')
    with pytest.raises(SteerEnvsError, match=r"unknown actguide config keys \['guidance_mode'\]"):
        ActGuideConfig.load(path)
    with pytest.raises(TypeError):
        ActGuideConfig(guidance_mode="prefix")  # type: ignore[call-arg]
    assert not any(key.startswith("guidance_") for switches in VARIANTS.values() for key in switches)
    kwargs = ActGuideConfig(plan_noise=0.1).env_kwargs(plan_mode="prefix")
    assert kwargs["plan_noise"] == 0.1 and kwargs["plan_mode"] == "prefix"


def test_the_guided_baseline_and_weight_are_checked():
    with pytest.raises(SteerEnvsError, match=r"guided_baseline must be one of group, unguided \(got 'mean'\)"):
        ActGuideConfig(guided_baseline="mean")
    with pytest.raises(SteerEnvsError, match=r"guided_weight must be > 0 \(got 0\.0; 1 = the paper's objective\)"):
        ActGuideConfig(guided_weight=0.0)
    assert ActGuideConfig().variant("unguided_baseline").guided_baseline == "unguided"
