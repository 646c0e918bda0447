"""The env and the task sets an ACTGUIDE run uses: a fixed per-benchmark sample of tasks with reference data."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from steer_envs.envs.guided import GuidedSearchEnv
from steer_envs.errors import SteerEnvsError
from steer_envs.ids import GUIDED_SEARCH_ENV
from steer_envs.protocol import make_env as make_any_env

from .config import ActGuideConfig

ENV_ID = GUIDED_SEARCH_ENV  # kept: the id's former home


def make_env(config: ActGuideConfig, split: str | None = None, **overrides) -> GuidedSearchEnv:
    """The run's GuidedSearch env, unwrapped: :func:`steer_envs.make_env` with the config's env options."""
    return make_any_env(GUIDED_SEARCH_ENV, **config.env_kwargs(split, **overrides)).unwrapped


def sample_tasks(env: GuidedSearchEnv, per_benchmark: int, seed: int) -> list[str]:
    """Up to ``per_benchmark`` task ids of each benchmark (0 = all), drawn with ``seed``, in a stable order."""
    by_bench: dict[str, list[str]] = defaultdict(list)
    for task in env.tasks:
        by_bench[task.benchmark].append(task.id)
    out: list[str] = []
    for bench in sorted(by_bench):
        ids = sorted(by_bench[bench])
        if per_benchmark and len(ids) > per_benchmark:
            rng = np.random.default_rng([seed, len(bench), sum(map(ord, bench))])
            ids = sorted(rng.choice(ids, size=per_benchmark, replace=False).tolist())
        out.extend(ids)
    return out


def training_pool(env: GuidedSearchEnv, config: ActGuideConfig) -> list[str]:
    """The RL pool, or (``pool="pretrain"``) up to ``pretrain_tasks_per_benchmark`` train tasks of each benchmark
    outside it: the base policy warms up on tasks the RL comparison never trains on."""
    rl = sample_tasks(env, config.tasks_per_benchmark, config.task_seed)
    if config.pool == "rl":
        return keep_regions(rl, config) if config.pool_regions else rl
    taken = set(rl)
    by_bench: dict[str, list[str]] = defaultdict(list)
    for task in env.tasks:
        if task.id not in taken:
            by_bench[task.benchmark].append(task.id)
    out: list[str] = []
    for bench in sorted(by_bench):
        ids = sorted(by_bench[bench])
        n = config.pretrain_tasks_per_benchmark
        if n and len(ids) > n:
            ids = sorted(
                np.random.default_rng([config.task_seed, 7, len(bench)]).choice(ids, size=n, replace=False).tolist()
            )
        out.extend(ids)
    return out


def keep_regions(task_ids: list[str], config: ActGuideConfig) -> list[str]:
    """The tasks of ``task_ids`` whose region in ``config.pool_regions`` is one of ``config.kept_regions``.

    Every task must have a region there: a regions file of other tasks (another split, seed or pool size) would
    silently train on a different pool, so it is refused with the command that writes the right one."""
    assert config.pool_regions is not None  # the caller keeps regions only when a regions file is named
    return tasks_in_regions(
        task_ids,
        config.pool_regions,
        config.kept_regions,
        "RL-pool",
        f"--split {config.split} --tasks-per-benchmark {config.tasks_per_benchmark} --seed {config.task_seed}",
        "keep more regions (pool_keep)",
    )


def tasks_in_regions(
    task_ids: list[str], path: str, keep: tuple[str, ...], whose: str, sampled_by: str, when_empty: str
) -> list[str]:
    """The tasks of ``task_ids`` (in their order) whose region in the regions file ``path`` is one of ``keep``.

    A file that lacks some of the tasks was written for other tasks; it is refused with the ``barrier --regions``
    command that writes the right one (``sampled_by``: the ``--split``, ``--tasks-per-benchmark`` and ``--seed`` the
    tasks were sampled with). ``whose`` names the tasks in the errors, ``when_empty`` says what to do when none is
    kept."""
    from .regions import read_regions

    regions = read_regions(path)
    missing = [t for t in task_ids if t not in regions]
    if missing:
        raise SteerEnvsError(
            f"{path} has no region for {len(missing)} of the {len(task_ids)} {whose} tasks (first: {missing[0]!r}); "
            f"write it for them with `steer-envs barrier --regions --model BASE {sampled_by} --out DIR`"
        )
    kept = [t for t in task_ids if regions[t] in keep]
    if not kept:
        raise SteerEnvsError(f"no {whose} task is in the regions {', '.join(keep)} of {path}; {when_empty}")
    return kept
