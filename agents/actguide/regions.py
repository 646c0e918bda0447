"""Task regions: is a policy's failure on a task a *barrier* that guidance lifts, or a task out of its reach?

ACTGUIDE-RL's premise is a barrier: tasks on which the base policy never finds a reward by itself,
whatever the budget, but a few reference actions carry it across. Before a comparison is made "out-region", that
premise has to be measured per task, because an out-region task can also be one that guidance does not rescue
either (nothing to learn from a hint there) or one that a larger unguided budget would have solved (no barrier):

* ``in_region``: unguided Pass@K > 0 at the large ``K`` (``k_unguided``): the policy finds a reward by itself.
* ``barrier``: unguided Pass@K = 0 at that ``K``, and a hint of at most ``max_k`` reference actions gives
  Pass@K > 0 with ``k_guided`` rollouts: guidance lifts what the policy's own search cannot reach.
* ``out_of_reach``: neither: no reward unguided, none with the largest hint either.
* ``unknown``: every rollout of a deciding measurement failed on a service (``steer_envs.failures``). A failure
  is no outcome, so it never makes a task look unsolvable.

Guidance is shown the way the trainer shows it (the env's ``plan_mode``, ``prompt`` by default), and the
hints grow one reference action at a time, stopping at the first that gives a success, so a barrier task also
records the smallest ``k`` that lifts it. Rollout seeds are derived from ``(seed, task index)``, so the same
policy, tasks and seed give the same regions.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from steer_envs.atomic import atomic_write_text
from steer_envs.cpu_threads import cpu_thread_default
from steer_envs.envs.guided import GuidedSearchEnv
from steer_envs.errors import SteerEnvsError

from .config import POOL_REGIONS as REGIONS
from .rollout import reset_task, run_group
from .search import probe_outcome


@dataclass(frozen=True)
class RegionConfig:
    """How hard to look before calling a task unreachable. ``k_unguided`` should be large next to the group size
    the trainer uses (Pass@8 at G = 8 is the trainer's own view; 32 asks four times as hard)."""

    k_unguided: int = 32
    k_guided: int = 8
    max_k: int = 4

    def __post_init__(self) -> None:
        for name in ("k_unguided", "k_guided", "max_k"):
            if int(getattr(self, name)) < 1:
                raise SteerEnvsError(f"RegionConfig.{name} must be at least 1 (got {getattr(self, name)!r})")


@dataclass
class TaskRegion:
    task_id: str
    benchmark: str
    region: str
    #: successes among the finished unguided rollouts, and how many finished (failures left out)
    unguided_successes: int
    unguided_finished: int
    #: the smallest hint that gave a success (barrier tasks), else None
    lifting_k: int | None = None
    #: hints tried, k -> successes among finished guided rollouts (None: every rollout failed on a service)
    guided: dict[int, int | None] = field(default_factory=dict)


def classify(
    learner, env: GuidedSearchEnv, task_ids: Sequence[str], config: RegionConfig = RegionConfig(), seed: int = 0
) -> list[TaskRegion]:
    """The region of each task for ``learner`` (see the module docstring)."""
    cpu_thread_default(getattr(learner, "device", "cpu"))
    generator = torch.Generator().manual_seed(seed)
    benchmark_of = {task.id: task.benchmark for task in env.tasks}
    out: list[TaskRegion] = []
    for i, task_id in enumerate(task_ids):
        if task_id not in benchmark_of:
            raise SteerEnvsError(
                f"task {task_id!r} is not in this env's task set (check the split and benchmarks it was made with)"
            )
        task_seed = int(np.random.default_rng([seed, i]).integers(2**31 - 1))
        reset_task(env, task_id, task_seed, 0, "prompt")
        group = run_group(env, learner, config.k_unguided, generator)
        finished = [t for t in group if not t.failed]
        record = TaskRegion(task_id, benchmark_of[task_id], "unknown", sum(t.success for t in finished), len(finished))
        if record.unguided_successes:
            record.region = "in_region"
        elif finished:
            length = len(env.reference_for(task_id) or ())
            record.region = "out_of_reach"
            for k in range(1, min(config.max_k, max(length, 1)) + 1):
                reset_task(env, task_id, task_seed, k)
                guided = run_group(env, learner, config.k_guided, generator)
                passed = probe_outcome(guided)
                record.guided[k] = None if passed is None else sum(t.success for t in guided if not t.failed)
                if passed:
                    record.region, record.lifting_k = "barrier", k
                    break
            if record.region == "out_of_reach" and all(v is None for v in record.guided.values()):
                record.region = "unknown"
        out.append(record)
    return out


def region_counts(regions: Sequence[TaskRegion]) -> dict[str, Counter]:
    """benchmark -> Counter(region -> tasks), with an ``all`` row."""
    counts: dict[str, Counter] = {}
    for r in regions:
        counts.setdefault(r.benchmark, Counter())[r.region] += 1
        counts.setdefault("all", Counter())[r.region] += 1
    return counts


def region_table(regions: Sequence[TaskRegion], config: RegionConfig) -> str:
    """One row per benchmark: tasks in each region, and the mean smallest lifting hint of the barrier tasks."""
    counts = region_counts(regions)
    benches = sorted(b for b in counts if b != "all") + ["all"]
    lifting: dict[str, list[int]] = {}
    for r in regions:
        if r.lifting_k is not None:
            lifting.setdefault(r.benchmark, []).append(r.lifting_k)
            lifting.setdefault("all", []).append(r.lifting_k)
    lines = [
        f"Unguided Pass@{config.k_unguided}; a hint of k ≤ {config.max_k} reference actions with "
        f"Pass@{config.k_guided}.",
        "",
        "| Benchmark | tasks | in-region | barrier | out of reach | unknown | mean lifting k |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for b in benches:
        c, ks = counts[b], lifting.get(b)
        cells = [str(sum(c.values())), *(str(c.get(name, 0)) for name in REGIONS), f"{np.mean(ks):.2f}" if ks else "–"]
        lines.append(f"| {b} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_regions(
    regions: Sequence[TaskRegion], config: RegionConfig, out: str | Path, label: str
) -> tuple[Path, Path]:
    """``regions.json`` (every task, so a trainer can draw its hard groups from the barrier group) and
    ``regions.md`` (the table), written atomically."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    payload = {"label": label, "config": asdict(config), "tasks": [asdict(r) for r in regions]}
    json_path, md_path = out / "regions.json", out / "regions.md"
    atomic_write_text(json_path, json.dumps(payload, indent=1) + "\n")
    atomic_write_text(md_path, f"Regions of {label}\n\n" + region_table(regions, config) + "\n")
    return json_path, md_path


def read_regions(path: str | Path) -> dict[str, str]:
    """task id -> region, from a ``regions.json`` written by :func:`write_regions`."""
    path = Path(path)
    try:
        payload = json.loads(path.read_text())
        return {t["task_id"]: t["region"] for t in payload["tasks"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SteerEnvsError(f"{path} is not a regions.json written by `steer-envs barrier --regions` ({exc})") from exc
