"""The trainer base (agents/trainer_base.py) under both trainers: the run folder, gradient accumulation over
micro-batches (the same gradient as the full batch), bf16 on CPU, exact resume with micro-batches, and a 2-process
run through ``accelerate launch`` that logs the losses of a single process, and processes that end in order."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from agents.actguide.config import ActGuideConfig
from agents.actguide.trainer import ActGuideTrainer
from agents.grpo import baseline_advantages, group_advantages
from agents.steering.config import SteeringConfig
from agents.steering.trainer import SteeringTrainer
from agents.trainer_base import RunFolder, TrainerBase, end_processes
from steer_envs.errors import SteerEnvsError
from tests.agents.support import small_actguide_args

STEERING = dict(m=2, k=12, G=4, N=2, bank_tasks=16, benchmarks=["nq", "hotpotqa"], eps_sel=0.5)
ACTGUIDE = small_actguide_args(budget=60)
ROOT = Path(__file__).resolve().parents[2]


def four_way(n: int) -> int:
    """A micro-batch size that splits ``n`` units into exactly 4 micro-batches."""
    sizes = [m for m in range(1, n + 1) if -(-n // m) == 4]
    assert sizes, f"{n} units cannot be cut into 4 equal-size micro-batches; change the test's config"
    return sizes[0]


def max_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert a.keys() == b.keys() and a, "the same parameters must receive gradients"
    return max(float((a[k] - b[k]).abs().max()) for k in a)


# -- the run folder ------------------------------------------------------------------------------------------------
def test_run_folder_writes_once_refuses_a_different_config_and_truncates_the_log(tmp_path):
    config = SteeringConfig(**STEERING)
    folder = RunFolder(tmp_path / "r", config, marker="checkpoint.pt")
    assert folder.prepare(resume=False) is False
    saved = json.loads((tmp_path / "r" / "config.json").read_text())
    assert saved["fingerprint"] == config.fingerprint() and saved["config"]["m"] == 2
    for i in range(3):
        folder.append_log({"round": i})
    folder.save_checkpoint("checkpoint.pt", {"next_round": 2, "w": torch.ones(2)})
    with pytest.raises(SteerEnvsError, match="--resume"):
        RunFolder(tmp_path / "r", config, marker="checkpoint.pt").prepare(resume=False)
    again = RunFolder(tmp_path / "r", config, marker="checkpoint.pt")
    assert again.prepare(resume=True) is True
    again.resume_log(2)  # the third row's round never checkpointed
    assert [r["round"] for r in again.read_log()] == [0, 1]
    assert torch.equal(again.load_checkpoint("checkpoint.pt")["w"], torch.ones(2))
    other = SteeringConfig(**{**STEERING, "lr": 0.1})
    with pytest.raises(SteerEnvsError, match=r"different config \(differs in: lr\)"):
        RunFolder(tmp_path / "r", other, marker="checkpoint.pt").prepare(resume=True)
    reader = RunFolder(tmp_path / "s", config, marker="checkpoint.pt", writer=False)  # a non-main process
    reader.prepare(resume=False)
    reader.append_log({"round": 0})
    assert not (tmp_path / "s").exists()


def test_acceleration_fields_enter_the_fingerprint_and_bad_values_are_clear():
    assert "micro_batch" in SteeringConfig().to_dict() and "mixed_precision" in ActGuideConfig().to_dict()
    assert SteeringConfig(micro_batch=4).fingerprint() != SteeringConfig().fingerprint()
    assert ActGuideConfig(mixed_precision="bf16").fingerprint() != ActGuideConfig().fingerprint()
    with pytest.raises(SteerEnvsError, match=r"mixed_precision must be one of \('no', 'bf16'\) \(got 'fp16'\)"):
        SteeringConfig(mixed_precision="fp16")
    with pytest.raises(SteerEnvsError, match="micro_batch must be an integer >= 0"):
        ActGuideConfig(micro_batch=-1)
    with pytest.raises(SteerEnvsError, match="device must be one of"):
        ActGuideConfig(device="tpu")


def test_auto_model_device_becomes_the_processs_accelerator_device(monkeypatch):
    """With several GPU processes each must load its model onto its own GPU: ``device="auto"`` in the backbone's
    arguments becomes the trainer's device when that is an accelerator, and stays as given on a CPU run."""
    args = {"model": "hf:x", "device": "auto", "lora": True}
    base = TrainerBase(SteeringConfig(), "unused")
    assert base.model_args(args) == args  # a CPU run: the backbone's own "auto" rule applies
    monkeypatch.setattr(TrainerBase, "device", property(lambda self: torch.device("cuda", 3)))
    assert base.model_args(args) == {"model": "hf:x", "device": "cuda:3", "lora": True}
    assert base.model_args({"device": "cpu"}) == {"device": "cpu"}  # an explicit device is kept
    assert args["device"] == "auto"  # the config's dict is not changed


def test_micro_batches_cover_the_batch_in_order():
    base = TrainerBase(SteeringConfig(micro_batch=3), "unused")
    assert [list(r) for r in base.micro_batches(7)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [list(r) for r in TrainerBase(SteeringConfig(), "unused").micro_batches(5)] == [[0, 1, 2, 3, 4]]
    assert base.micro_batches(0) == []


# -- gradient accumulation = the full batch's gradient -----------------------------------------------------------
@pytest.fixture(scope="module")
def steering_update(tmp_path_factory):
    """The inputs of a real steering update (a round with GRPO states and ranking pairs) and the steerer before it."""
    captured = {}
    original = SteeringTrainer._update

    def spy(self, steerer, optimizer, learn, old_logp, rank_states, pairs, n_measured):
        if "args" not in captured and pairs and len(learn) >= 4:
            captured["args"] = (copy.deepcopy(steerer), learn, old_logp, rank_states, pairs, n_measured)
        return original(self, steerer, optimizer, learn, old_logp, rank_states, pairs, n_measured)

    SteeringTrainer._update = spy
    try:
        SteeringTrainer(SteeringConfig(**STEERING), tmp_path_factory.mktemp("steer") / "run").run()
    finally:
        SteeringTrainer._update = original
    assert "args" in captured, "no round had both GRPO states and ranking pairs"
    return captured["args"]


def test_steering_four_micro_batches_give_the_full_batch_gradient(steering_update, tmp_path):
    steerer, learn, old_logp, rank_states, pairs, n_measured = steering_update
    n = len(learn) // 4 * 4  # a multiple of 4 GRPO states (the others' terms simply leave this loss)
    learn, old_logp = learn[:n], old_logp[:n]
    involved = len({i for p in pairs for i in p})
    size = four_way(len(learn))
    full = SteeringTrainer(SteeringConfig(**STEERING), tmp_path / "a")
    micro = SteeringTrainer(SteeringConfig(**STEERING, micro_batch=size), tmp_path / "b")
    assert len(micro.micro_batches(len(learn))) == 4 and len(micro.micro_batches(involved)) >= 2
    for epoch in (0, 1):  # the policy gradient (epoch 0) and the clipped surrogate (later epochs), + ranking
        grads, losses = [], []
        for trainer in (full, micro):
            steerer.zero_grad(set_to_none=True)
            parts, carried = trainer._gradients(steerer, learn, old_logp, rank_states, pairs, n_measured, epoch)
            assert carried
            grads.append({n: p.grad.clone() for n, p in steerer.named_parameters() if p.grad is not None})
            losses.append(parts)
        assert max_diff(*grads) <= 1e-5
        assert losses[0]["loss_rank"] > 0 and losses[0]["loss_grpo"] != 0
        for key in ("loss", "loss_grpo", "loss_rank"):
            assert losses[1][key] == pytest.approx(losses[0][key], abs=1e-6)
    assert {"fast_head.weight", "option_head.weight"} <= set(grads[0])  # both paths received gradient


@pytest.fixture(scope="module")
def actguide_update(tmp_path_factory):
    """The inputs of a real ACTGUIDE-RL update with guided and trained tokens, and the learner before it."""
    captured = {}
    original = ActGuideTrainer._update

    def spy(self, learner, reference, optimizer, groups):
        if (
            "args" not in captured
            and any(t.guided for g in groups for t in g)
            and any(t.reward > 0 for g in groups for t in g)
        ):
            captured["args"] = (copy.deepcopy(learner), copy.deepcopy(reference), copy.deepcopy(groups))
        return original(self, learner, reference, optimizer, groups)

    ActGuideTrainer._update = spy
    try:
        ActGuideTrainer(ActGuideConfig(**ACTGUIDE), tmp_path_factory.mktemp("ag") / "run").run()
    finally:
        ActGuideTrainer._update = original
    assert "args" in captured, "no iteration had guided groups with a success"
    return captured["args"]


def test_a_guided_group_is_baselined_by_the_unguided_group_it_replaced_only_when_asked(actguide_update, tmp_path):
    learner, reference, groups = actguide_update
    guided = [g for g in groups if g[0].guided]
    assert guided and all(t.replaced for g in guided for t in g)  # every guided rollout records what it replaced
    assert all(not t.replaced for g in groups if not g[0].guided for t in g)
    by_group = ActGuideTrainer(ActGuideConfig(**ACTGUIDE), tmp_path / "a")
    by_unguided = ActGuideTrainer(ActGuideConfig(**ACTGUIDE, guided_baseline="unguided"), tmp_path / "b")
    for g in groups:
        rewards = [t.reward for t in g]
        assert by_group._advantages(g).tolist() == pytest.approx(group_advantages(rewards).tolist())
        if g[0].guided:  # hard groups: the replaced rewards are all <= 0, so no guided rollout is pushed away
            assert by_unguided._advantages(g).tolist() == pytest.approx(
                baseline_advantages(rewards, g[0].replaced).tolist()
            )
            assert (by_unguided._advantages(g) >= 0).all()
        else:
            assert by_unguided._advantages(g).tolist() == pytest.approx(group_advantages(rewards).tolist())
    # the update's log splits the guided push: the default can push π_u away from guided actions, the other cannot
    stats = [t._gradients(learner, t._update_batch(learner, reference, groups), 0)[0] for t in (by_group, by_unguided)]
    assert stats[1]["guided_push_down"] == 0.0 and stats[1]["guided_push_up"] > 0.0
    assert stats[0]["guided_push_up"] + stats[0]["guided_push_down"] > 0.0


def test_the_guided_weight_scales_only_guided_groups(actguide_update, tmp_path):
    learner, reference, groups = actguide_update
    plain = ActGuideTrainer(ActGuideConfig(**ACTGUIDE, guided_baseline="unguided"), tmp_path / "a")
    heavy = ActGuideTrainer(ActGuideConfig(**ACTGUIDE, guided_baseline="unguided", guided_weight=4.0), tmp_path / "b")
    for g in groups:
        factor = 4.0 if g[0].guided else 1.0
        assert heavy._advantages(g).tolist() == pytest.approx((factor * plain._advantages(g)).tolist())
    # the push toward guided actions grows with it; the unguided groups' tokens are untouched
    stats = [t._gradients(learner, t._update_batch(learner, reference, groups), 0)[0] for t in (plain, heavy)]
    assert stats[1]["guided_push_up"] == pytest.approx(4.0 * stats[0]["guided_push_up"], rel=1e-5)
    assert stats[0]["guided_push_up"] > 0.0


@pytest.mark.parametrize("ratio_shaping", ["luffy", "clip"])
def test_actguide_four_micro_batches_give_the_full_batch_gradient(actguide_update, tmp_path, ratio_shaping):
    learner, reference, groups = actguide_update
    full = ActGuideTrainer(ActGuideConfig(**ACTGUIDE, ratio_shaping=ratio_shaping, kl_coef=0.5), tmp_path / "a")
    batch = full._update_batch(learner, reference, groups)
    size = four_way(len(batch.views))
    micro = ActGuideTrainer(
        ActGuideConfig(**ACTGUIDE, ratio_shaping=ratio_shaping, kl_coef=0.5, micro_batch=size), tmp_path / "b"
    )
    assert len(micro.micro_batches(len(batch.views))) == 4
    with torch.no_grad():  # move the policy away from π_ref so that the KL term has a gradient too
        for p in learner.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(1)))
    grads, stats = [], []
    for trainer in (full, micro):
        learner.network.zero_grad(set_to_none=True)
        b = trainer._update_batch(learner, reference, groups)
        s, carried = trainer._gradients(learner, b, 0)
        assert carried
        grads.append({n: p.grad.clone() for n, p in learner.network.named_parameters() if p.grad is not None})
        stats.append(s)
    assert max_diff(*grads) <= 1e-5
    assert stats[0]["tokens"] > 0 and stats[0]["loss_kl"] > 0 and stats[0]["r_mix"] > 0
    for key in ("loss", "loss_pg", "loss_kl", "r_mix", "clip_frac", "guided_push_up", "guided_push_down"):
        assert stats[1][key] == pytest.approx(stats[0][key], abs=1e-6)
    assert stats[1]["tokens"] == stats[0]["tokens"]


# -- bf16 on CPU -------------------------------------------------------------------------------------------------
def test_a_bf16_iteration_runs_on_cpu_for_both_trainers(tmp_path, monkeypatch):
    import agents.actguide.trainer as ag
    import agents.steering.trainer as st

    seen = []

    def recording(name, fn):
        def wrapped(*args, **kwargs):
            seen.append((name, torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")))
            return fn(*args, **kwargs)

        return wrapped

    monkeypatch.setattr(st, "grpo_loss", recording("grpo_loss", st.grpo_loss))
    monkeypatch.setattr(ag, "kl_k3", recording("kl_k3", ag.kl_k3))
    s = SteeringTrainer(SteeringConfig(**{**STEERING, "m": 1}, mixed_precision="bf16", micro_batch=3), tmp_path / "s")
    a = ActGuideTrainer(
        ActGuideConfig(**{**ACTGUIDE, "budget": 20}, mixed_precision="bf16", micro_batch=8), tmp_path / "a"
    )
    s_log, a_log = s.run().log, a.run().log
    assert s.accelerator.mixed_precision == "bf16" and a.accelerator.mixed_precision == "bf16"
    assert {name for name, _, _ in seen} == {"grpo_loss", "kl_k3"}
    assert all(on and dtype == torch.bfloat16 for _, on, dtype in seen)
    assert all(torch.isfinite(torch.tensor(r["loss"])) for r in s_log + a_log)
    assert s_log[0]["grad_norm"] > 0 and a_log[0]["tokens"] > 0
    fp32 = SteeringTrainer(SteeringConfig(**{**STEERING, "m": 1}, micro_batch=3), tmp_path / "f").run().log
    assert s_log[0]["loss"] != fp32[0]["loss"]  # bf16 arithmetic really ran (a different rounding)
    assert s_log[0]["loss"] == pytest.approx(fp32[0]["loss"], rel=0.05, abs=1e-3)


# -- resume with micro-batches -----------------------------------------------------------------------------------
def test_micro_batched_runs_resume_exactly_for_both_trainers(tmp_path):
    class Stop(Exception):
        pass

    def stop_after_first(i, record):
        if i == 0:
            raise Stop

    strip = lambda log: [{k: v for k, v in r.items() if not k.endswith("_s")} for r in log]  # noqa: E731
    s_cfg = SteeringConfig(**{**STEERING, "m": 3, "k": 6}, micro_batch=2)
    full = SteeringTrainer(s_cfg, tmp_path / "s_full").run()
    with pytest.raises(Stop):
        SteeringTrainer(s_cfg, tmp_path / "s_cut", on_round_end=stop_after_first).run()
    resumed = SteeringTrainer(s_cfg, tmp_path / "s_cut", resume=True).run()
    assert strip(resumed.log) == strip(full.log) and len(full.log) == 3

    a_cfg = ActGuideConfig(**{**ACTGUIDE, "budget": 80}, micro_batch=5)
    full = ActGuideTrainer(a_cfg, tmp_path / "a_full").run()
    with pytest.raises(Stop):
        ActGuideTrainer(a_cfg, tmp_path / "a_cut", on_iteration_end=stop_after_first).run()
    resumed = ActGuideTrainer(a_cfg, tmp_path / "a_cut", resume=True).run()
    assert strip(resumed.log) == strip(full.log) and len(full.log) >= 2
    with pytest.raises(SteerEnvsError, match="different actguide config"):
        ActGuideTrainer(
            ActGuideConfig(**{**ACTGUIDE, "budget": 80}, micro_batch=6), tmp_path / "a_cut", resume=True
        ).run()


# -- two processes through accelerate launch --------------------------------------------------------------------------
#: ``accelerate launch`` of two local processes (gloo on CPU), no mixed precision, no dynamo; a script or ``-m
#: module`` and its arguments follow
def accelerate_two_processes() -> list[str]:
    """``accelerate launch`` of two CPU processes (gloo) whose rendezvous port is a free one, not torch's default
    29500: a launch never meets a port an earlier launch (or another job on the machine) still holds."""
    from steer_envs.llm.vllm_engine import free_port

    return [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--main_process_port",
        str(free_port()),
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
    ]


def launch_env() -> dict[str, str]:
    """The launched processes' environment: this one, with the repository importable."""
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


@pytest.mark.slow
def test_two_processes_through_accelerate_launch_log_the_losses_of_one(tmp_path):
    """Tolerance: 1e-5 absolute on every logged loss (the two processes sum their micro-batches' gradients through
    an all-reduce, in another order than one process does: float rounding, measured ~1e-7)."""
    worker = str(ROOT / "tests" / "agents" / "_trainer_worker.py")
    env = launch_env()
    launch = [*accelerate_two_processes(), worker]
    procs = [
        subprocess.Popen(
            [sys.executable, worker, str(tmp_path / "one"), str(tmp_path / "one.json")],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        ),
        subprocess.Popen(
            launch + [str(tmp_path / "two"), str(tmp_path / "two.json")],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        ),
    ]
    for p in procs:
        try:
            out, _ = p.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
            pytest.fail(f"no exit within 240 s: {p.args[-2:]}\n{out[-3000:]}")
        assert p.returncode == 0, out[-3000:]
    one = json.loads((tmp_path / "one.json").read_text())
    two = json.loads((tmp_path / "two.json").read_text())
    assert one["processes"] == 1 and two["processes"] == 2
    assert two["shares"] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]  # each process backs half of a batch
    second = json.loads((tmp_path / "two.json.1").read_text())  # the other process returns the whole log too
    assert {k: second[k] for k in ("steering", "actguide")} == {k: two[k] for k in ("steering", "actguide")}
    for trainer in ("steering", "actguide"):
        assert len(one[trainer]) == len(two[trainer]) >= 2
        for a, b in zip(one[trainer], two[trainer]):
            assert a.keys() == b.keys()
            for key in a:
                assert b[key] == pytest.approx(a[key], abs=1e-5), (trainer, key)
    assert any(r["loss_rank"] > 0 for r in one["steering"]) and any(r["tokens"] > 0 for r in one["actguide"])


def test_data_parallelism_is_refused_for_a_nondeterministic_executor():
    from agents.trainer_base import check_data_parallel

    for executor in ("openai:m@http://127.0.0.1:9/v1", "hf:Qwen/Qwen2.5-0.5B-Instruct"):
        with pytest.raises(SteerEnvsError, match="(?s)needs a deterministic executor.*run one process"):
            check_data_parallel(2, executor)
        check_data_parallel(1, executor)  # one process: nothing to diverge
    check_data_parallel(8, "sim:default")  # seeded: every process rolls out the same batch
    check_data_parallel(8, None)  # a trainer without an executor


END_SCRIPT = """
import sys
import torch
from agents.trainer_base import build_accelerator, end_processes

accelerator = build_accelerator("cpu")
total = accelerator.reduce(torch.ones(1000), reduction="sum")
assert float(total[0]) == accelerator.num_processes, total[0]
end_processes()
sys.stdout.write(f"<ended-{accelerator.process_index}>")
sys.stdout.flush()
"""


@pytest.mark.slow
def test_two_processes_that_call_end_processes_exit_cleanly_every_time(tmp_path):
    """Without :func:`end_processes` about half of such launches abort at exit (SIGABRT, "terminate called without
    an active exception": measured 10 of 20 here), so six clean exits in a row would happen by chance 1 time in 64."""
    script = tmp_path / "end.py"
    script.write_text(END_SCRIPT)
    env = launch_env()
    for attempt in range(6):
        launch = [*accelerate_two_processes(), str(script)]
        done = subprocess.run(launch, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
        assert done.returncode == 0, (attempt, done.stdout[-3000:])
        assert "<ended-0>" in done.stdout and "<ended-1>" in done.stdout, done.stdout[-3000:]


def test_end_processes_leaves_a_single_process_usable():
    """In one process there is no process group to end: the accelerator keeps working after the call."""
    from agents.trainer_base import build_accelerator

    accelerator = build_accelerator("cpu")
    end_processes()
    assert accelerator.num_processes == 1
    assert float(accelerator.reduce(torch.ones(3), reduction="sum")[0]) == 1.0


@pytest.mark.slow
def test_the_cli_trains_under_accelerate_launch_and_exits_cleanly(tmp_path):
    """The documented multi-process command (``accelerate launch --multi_gpu --num_processes 2 -m steer_envs.cli.main
    train steering``, gloo on CPU) trains, writes one run folder and ends both processes with exit code 0."""
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({**STEERING, "m": 2, "k": 6, "bank_tasks": 8}))
    out = tmp_path / "run"
    env = launch_env()
    launch = [
        *accelerate_two_processes(),
        "-m",
        "steer_envs.cli.main",
        "train",
        "steering",
        "--executor",
        "sim:default",
        "--config",
        str(cfg),
        "--out",
        str(out),
        "--no-progress",
    ]
    done = subprocess.run(launch, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    assert done.stdout.count("trained 2 rounds") == 2, done.stdout[-3000:]  # each process reports the same run
    assert (out / "model.pt").is_file()
    assert [json.loads(x)["round"] for x in (out / "log.jsonl").read_text().splitlines()] == [0, 1]
