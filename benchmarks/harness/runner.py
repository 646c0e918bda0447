"""Run methods on a run folder's task list and seeds, streaming one JSONL line per finished episode.

Every method of a folder runs on exactly ``config.tasks() x range(config.seeds)``, each pair with the same env
seed (:func:`steer_envs.episodes.episode_seed`), so differences between methods are paired. Finished (task, seed) pairs
are skipped on a rerun: an interrupted evaluation resumes where it stopped and ends with the same numbers.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tqdm.auto import tqdm

from baselines.registry import MethodContext, get_method, parse_method
from steer_envs.atomic import atomic_write_text
from steer_envs.episodes import EpisodeLog, EpisodeRecord, episode_seed, run_episode
from steer_envs.errors import SteerEnvsError
from steer_envs.policy_counters import counter_notes, sum_counters
from steer_envs.rollouts import (
    GivenState,
    Job,
    LocalPool,
    concurrent_pool,
    executor_of,
    make_pool,
    replica_factory,
    using_pool,
)
from steer_envs.rollouts.base import job_bytes

from .budget import build_measured
from .config import EvalConfig
from .provenance import record_run
from .runfolder import RunFolder
from .stats import MethodSummary, summarize
from .tables import results_table

REFERENCE = "no_supervision"
#: the reference row of a run folder: the first of these it holds (the hand-off env's is handoff_none)
REFERENCES = (REFERENCE, "handoff_none")


def reference_of(labels) -> str:
    return next((r for r in REFERENCES if r in labels), REFERENCE)


#: fault injection for the resume tests: SIGKILL this process after N new episodes (a real hard kill at a
#: reproducible point, rather than a race against a timer)
KILL_AFTER_ENV = "STEER_ENVS_KILL_AFTER_EPISODES"
_episodes_this_process = 0


def _maybe_kill() -> None:
    global _episodes_this_process
    _episodes_this_process += 1
    limit = os.environ.get(KILL_AFTER_ENV)
    if limit and _episodes_this_process >= int(limit):
        os.kill(os.getpid(), signal.SIGKILL)


def episode_item(worker: tuple[Any, Any], item: tuple[str, int, str, int]) -> EpisodeRecord:
    """Pool work function: one episode ``item = (task_id, env seed, label, seed index)`` on the worker's
    ``(env, policy)``. Env and policy are reset with the episode's seed, so the record is the same on any worker."""
    env, policy = worker
    task_id, seed, label, seed_index = item
    return run_episode(env, policy, seed, task_id, label, seed_index)


#: the largest pickled (env, policy) job copied into every replica of a ``greenlets`` or ``threads`` pool (a local
#: LLM policy is not)
THREAD_JOB_BYTES = 64 * 2**20


def _episode_job(env: Any, policy: Any, pool: Any, log: Callable[[str], None]):
    """The evaluation job on ``pool``; a policy that cannot travel to workers runs here instead (with a note)."""
    if pool.kind == "local":
        return pool, Job(GivenState((env, policy)), episode_item)
    job = Job(dataclasses.replace(replica_factory(env), companion=policy), episode_item)
    try:
        size = len(job_bytes(job)[1])
    except SteerEnvsError as exc:
        log(f"[{getattr(policy, 'name', 'policy')}] runs in this process: {exc}")
        return LocalPool(), Job(GivenState((env, policy)), episode_item)
    if pool.kind in ("greenlets", "threads") and size > THREAD_JOB_BYTES:  # every replica unpickles its own copy
        log(
            f"[{getattr(policy, 'name', 'policy')}] runs one episode at a time: the policy is "
            f"{size / 2**20:.0f} MB, too large to copy into each of {pool.workers} threads"
        )
        return LocalPool(), Job(GivenState((env, policy)), episode_item)
    return pool, job


def method_context(
    folder: RunFolder, label: str, progress: bool = True, training_label: str | None = None, pool: Any = None
) -> MethodContext:
    """The context a method builds in; its checkpoint is keyed by ``training_label`` (deploy options dropped)."""
    cfg = folder.config
    training_label = training_label or label
    return MethodContext(
        executor=cfg.executor,
        benchmarks=tuple(cfg.benchmarks),
        max_turns=cfg.max_turns,
        metric=cfg.metric,
        intervention_cost=cfg.intervention_cost,
        data_dir=cfg.data_dir,
        workdir=folder.checkpoint_dir(training_label),
        training_log=folder.training_log(training_label),
        measured_rate=lambda other: measured_rate(folder, other),
        progress=progress,
        dev_limit=cfg.limit,
        pool=pool,
    )


def measured_rate(folder: RunFolder, label: str) -> float | None:
    """Interventions per decision of ``label`` in this folder (for ``random:match=...``), or None.

    ``label`` may be a full label or a bare method name; a bare name picks that method's first row without an
    explicit ``tau`` (its trained operating point), else its first row, so ``random`` matches
    ``steering_rl:m=8,...`` and ``steering_rl:tau=0.02`` too."""
    labels = list(folder.methods())
    if label not in labels:
        same = [lab for lab in labels if lab.split(":", 1)[0] == label]
        if not same:
            return None
        label = next((lab for lab in same if "tau=" not in lab), same[0])
    path = folder.episodes_path(label)
    if not path.is_file():
        return None
    records = EpisodeLog(path).records
    decisions = sum(r.decisions for r in records)
    return sum(r.interventions for r in records) / decisions if decisions else None


@dataclass
class EvalOutcome:
    label: str
    ran: int
    skipped: int
    records: list[EpisodeRecord]


def evaluate(
    folder: RunFolder,
    spec: str,
    progress: bool = True,
    stop_after: int | None = None,
    policy: Any = None,
    log: Callable[[str], None] = print,
    pool: Any = None,
) -> EvalOutcome:
    """Evaluate one method spec on the folder's tasks and seeds (resuming). ``stop_after`` ends after that many
    new episodes (an injected interruption, for tests); ``policy`` skips building (already trained). ``pool``
    (a PoolConfig or RolloutPool; None = this process) runs the episodes and a learning method's rollouts; the
    records are written in task order, identical for every pool."""
    parsed = parse_method(spec)
    method = get_method(parsed.name)
    label = parsed.label
    cfg = folder.config
    tasks = cfg.tasks()
    episodes = EpisodeLog(folder.episodes_path(label))
    todo = [(t, s) for s in range(cfg.seeds) for t in tasks if not episodes.done(t.id, s, label)]
    skipped = len(tasks) * cfg.seeds - len(todo)
    if skipped:
        log(f"[{label}] resuming: {skipped} finished episode(s) kept, {len(todo)} to run")
    if not todo:
        return EvalOutcome(label, 0, skipped, episodes.records)
    with using_pool(pool) as own_pool:  # one pool for the method's training rollouts and its episodes
        context = method_context(folder, label, progress, parsed.training_label, pool=own_pool)
        if policy is None:
            policy = build_measured(parsed, context)
        folder.register_method(
            label,
            {
                "method": parsed.name,
                "options": parsed.options.as_dict(),
                "env_id": method.env_id,
                **dict(getattr(policy, "run_info", {}) or {}),
            },
        )
        action_mode = getattr(policy, "action_mode", method.action_mode)
        env = context.make_env(method.env_id, split=cfg.split, action_mode=action_mode, task_ids=[t.id for t in tasks])
        # an I/O-bound executor (openai:) runs many episodes in flight unless a pool was asked for
        episode_pool = make_pool(concurrent_pool(own_pool, executor_of(env)))
        run_pool, job = _episode_job(env, policy, episode_pool, log)
        items = [(task.id, episode_seed(task.id, seed_index), label, seed_index) for task, seed_index in todo]
        ran = 0
        try:
            with tqdm(
                total=len(items), desc=f"eval {label}", unit="ep", disable=not progress, dynamic_ncols=True
            ) as bar:
                for record in run_pool.imap(job, items):
                    episodes.append(record)
                    bar.update(1)
                    ran += 1
                    _maybe_kill()
                    if stop_after is not None and ran >= stop_after:
                        break
        finally:
            episodes.close()
            env.close()
            if episode_pool is not own_pool:
                episode_pool.close()
            if ran:
                record_run(folder.root, label, cfg.split, ran)
    return EvalOutcome(label, ran, skipped, episodes.records)


def complete_methods(folder: RunFolder) -> tuple[dict[str, list[EpisodeRecord]], dict[str, int]]:
    """Records of every method whose run is complete (all tasks x seeds), and progress of incomplete ones."""
    cfg = folder.config
    expected = {(t.id, s) for t in cfg.tasks() for s in range(cfg.seeds)}
    complete: dict[str, list[EpisodeRecord]] = {}
    partial: dict[str, int] = {}
    labels = list(folder.methods())
    reference = reference_of(labels)
    if reference in labels:  # the reference row first, as in the paper
        labels.remove(reference)
        labels.insert(0, reference)
    for label in labels:
        records = [r for r in EpisodeLog(folder.episodes_path(label)).records if (r.task_id, r.seed) in expected]
        if {(r.task_id, r.seed) for r in records} == expected:
            complete[label] = records
        else:
            partial[label] = len(records)
    return complete, partial


def write_summary(folder: RunFolder, resamples: int = 2000) -> tuple[list[MethodSummary], str]:
    """Write ``metrics.json`` and ``table.md`` for every complete method; return the summaries and table."""
    complete, partial = complete_methods(folder)
    cfg = folder.config
    benchmarks = [b for b in cfg.benchmarks]
    summaries = (
        summarize(complete, benchmarks, reference=reference_of(complete), resamples=resamples) if complete else []
    )
    table = results_table(summaries, benchmarks)
    header = table_header(cfg)
    counters = {label: sum_counters(r.counters for r in records) for label, records in complete.items()}
    notes = (
        incomplete_notes(folder, partial)
        + context_notes(summaries)
        + counter_notes({s.method: counters.get(s.method, {}) for s in summaries})
        + same_split_notes(folder, summaries)
    )
    atomic_write_text(folder.root / "table.md", header + table + notes)
    metrics = {
        "config": folder.config.to_json(),
        "methods": [{**_summary_json(s), "counters": counters.get(s.method, {})} for s in summaries],
        "incomplete": partial,
    }
    atomic_write_text(folder.root / "metrics.json", json.dumps(metrics, indent=2) + "\n")
    return summaries, header + table + notes


def nothing_scored(folder: RunFolder, summaries: Sequence[MethodSummary]) -> str | None:
    """Why an eval scored no task at all, or None when it scored one: every (task, seed) pair of the table had a
    failed episode (a service failure is not an outcome, so there is no F1 to print). Names how many episodes
    failed and the first failure's message, which says what to fix."""
    if not summaries or any(s.scored for s in summaries):
        return None
    failed = [r for records in complete_methods(folder)[0].values() for r in records if r.failed]
    if not failed:
        return None
    first = failed[0]
    return (
        f"no task was scored: {len(failed)} episode(s) failed and a failure is not an outcome, so there is no F1. "
        f"The first failure ({first.method}, task {first.task_id}, seed {first.seed}): {first.failure}"
    )


def table_header(cfg: EvalConfig) -> str:
    return (
        f"Executor `{cfg.executor}`, split `{cfg.split}`, {len(cfg.tasks())} tasks x {cfg.seeds} seed(s), "
        f"max {cfg.max_turns} turns. F1 x100; in parentheses the paired gain over `no_supervision` with its "
        "95% stratified bootstrap interval (tasks resampled within benchmarks, seeds averaged per task).\n\n"
    )


def incomplete_notes(folder: RunFolder, partial: dict[str, int] | None = None) -> str:
    if partial is None:
        partial = complete_methods(folder)[1]
    total = len(folder.config.tasks()) * folder.config.seeds
    return "".join(
        f"\n*{label}: incomplete ({n}/{total} episodes), not in the table.*\n" for label, n in partial.items()
    )


def context_notes(summaries: Sequence[MethodSummary]) -> str:
    """A line per row some of whose episodes ended because the agent outgrew its model's context: they are scored
    as episodes without an answer and counted in the means (``steer_envs.failures``), so the reader sees how many."""
    return "".join(
        f"\n*{s.method}: {s.context_truncations} episode(s) ended by a context overflow, scored as no "
        "answer (F1 0) and kept in the means.*\n"
        for s in summaries
        if s.context_truncations
    )


def same_split_notes(folder: RunFolder, summaries: Sequence[MethodSummary]) -> str:
    """A line per row that chose something (a rule, a threshold) on the split this table reports on: its score
    is measured on the tasks it was chosen on, so it is optimistic next to the other rows. A method says where it
    chose in its run info: ``chosen_on`` or ``<what>_chosen_on``."""
    split = folder.config.split
    shown = {s.method for s in summaries}
    notes = []
    for label, info in folder.methods().items():
        chose = sorted(k for k, v in info.items() if (k == "chosen_on" or k.endswith("_chosen_on")) and v == split)
        if label in shown and chose:
            what = " and ".join("its setting" if k == "chosen_on" else k.removesuffix("_chosen_on") for k in chose)
            notes.append(
                f"\n*{label}: chose {what} on the `{split}` split this table reports on, so its row is "
                "optimistic; report it on `test` (`--split test`).*\n"
            )
    return "".join(notes)


def _summary_json(s: MethodSummary) -> dict:
    def interval(i):
        return None if i is None else {"mean": i.mean, "low": i.low, "high": i.high}

    def scored(value: float) -> float | None:  # nothing scored: null, never NaN or 0
        return value if s.scored else None

    return {
        "method": s.method,
        "n_tasks": s.n_tasks,
        "n_seeds": s.n_seeds,
        "f1": s.f1,
        "avg_f1": scored(s.avg_f1),
        "em": s.em,
        "avg_em": scored(s.avg_em),
        "interventions_per_task": scored(s.interventions_per_task),
        "turns_per_task": scored(s.turns_per_task),
        "gain": {b: interval(i) for b, i in s.gain.items()},
        "avg_gain": interval(s.avg_gain),
        "gain_per_intervention": s.gain_per_intervention,
        "failed": s.failed,
        "dropped_pairs": s.dropped_pairs,
        "context_truncations": s.context_truncations,
    }


def evaluate_all(
    folder: RunFolder, specs: Sequence[str], progress: bool = True, log: Callable[[str], None] = print, pool: Any = None
):
    """Evaluate several methods in order (each resumes), then write the summary. One pool serves them all."""
    with using_pool(pool) as shared:
        outcomes = [evaluate(folder, spec, progress=progress, log=log, pool=shared) for spec in specs]
    summaries, table = write_summary(folder)
    return outcomes, summaries, table
