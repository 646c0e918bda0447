"""Fixed rules: one catalogue note at one decision, and the best such rule chosen on dev (testbed rule 3,
docs/architecture.md).

A fixed rule knows nothing of the episode: it sends option ``O`` at decision ``K`` and passes otherwise. If a
testbed lets such a rule do well, what a learned steerer "learns" may be a time and a keyword, not supervision; so
the best fixed rule is the bar every learned method must clear at the same intervention rate.

``best_fixed_rule`` evaluates every (O, K) with K in ``0..max_at`` on the *dev* split (the same executor and
turn budget as the run), keeps the rule with the highest mean F1 (benchmarks averaged, seeds averaged per task,
as the harness averages), writes the whole dev table to its workdir (``selection.json``), and is then evaluated
like any method. The choice is cached, so a resumed run does not choose again.

How many dev tasks it chooses on: its ``dev_tasks`` option, else the run's ``--limit`` (the context's
``dev_limit``), else all of them. Every rule plays every chosen (task, seed), so the cost is
``(rules + 1) x tasks x seeds`` episodes: it says so on stderr before it starts, and shows a progress bar.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from agents.steering.interventions import InterventionOption
from steer_envs.episodes import dev_episode_seed, play_episode
from steer_envs.errors import SteerEnvsError
from steer_envs.failures import episode_failed

from .base import STEERING_ENV, MethodContext
from .options import MethodOptions, method_option
from .simple import PASS, NoSupervision, catalogue_options

SELECTION_FILE = "selection.json"


@dataclass(frozen=True)
class FixedRuleOptions(MethodOptions):
    option: str = method_option("keep_searching", "the catalogue option the rule sends")
    at: int = method_option(1, "the decision it sends it at (0: before the executor's first turn)", ge=0)


@dataclass(frozen=True)
class BestFixedRuleOptions(MethodOptions):
    max_at: int = method_option(3, "rules tried: every catalogue option at every decision 0..max_at", ge=0)
    dev_tasks: int = method_option(
        0, "dev tasks per benchmark the rules are scored on (0: the run's --limit, or all without one)", ge=0
    )
    seeds: int = method_option(1, "seeds per dev task", ge=1)


class FixedRule:
    """Send one option at decision ``at`` (0 = before the executor's first turn), pass otherwise."""

    def __init__(self, option: InterventionOption, at: int) -> None:
        if at < 0:
            raise SteerEnvsError(f"fixed_rule: 'at' must be a decision index >= 0, got {at}")
        self.option = option
        self.at = at
        self.name = f"fixed_rule:{option.name}@{at}"
        self.run_info = {"option": option.name, "at": at}
        self._decision = 0

    def reset(self, seed: int | None = None) -> None:
        self._decision = 0

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        decision, self._decision = self._decision, self._decision + 1
        return self.option.index if decision == self.at else PASS


def _option(options: Sequence[InterventionOption], name: str) -> InterventionOption:
    for option in options:
        if option.name == name:
            return option
    raise SteerEnvsError(f"fixed_rule: no catalogue option {name!r}; options: {', '.join(o.name for o in options)}")


def build_fixed_rule(context: MethodContext) -> FixedRule:
    chosen = context.options_of(FixedRuleOptions)
    return FixedRule(_option(catalogue_options(context), chosen.option), chosen.at)


@dataclass(frozen=True)
class RuleScore:
    option: str
    at: int
    f1: float  # mean F1 x100 (benchmarks averaged)
    gain: float  # over always passing, same tasks and seeds
    interventions: float  # per task


def _dev_seeds(task_ids: Sequence[str], seeds: int) -> list[tuple[str, int]]:
    """Paired (task, env seed) pairs: every rule runs on the same ones (a fixed function of the task id)."""
    return [(tid, dev_episode_seed(tid, s)) for tid in task_ids for s in range(seeds)]


def _chooser_name(env_id: str) -> str:
    """The method that chooses a rule in ``env_id`` (how its messages and progress bar are labelled)."""
    return "best_fixed_rule" if env_id == STEERING_ENV else "handoff_best_fixed_rule"


def score_rules(
    context: MethodContext,
    rules: Sequence[tuple[str, int]],
    tasks_per_benchmark: int,
    seeds: int,
    env_id: str = STEERING_ENV,
) -> list[RuleScore]:
    """Mean F1 of always-pass and of every rule on the dev split (first ``tasks_per_benchmark`` of each benchmark,
    0: all). Says what it will spend on stderr first, and shows a bar while it plays (unless ``context.progress``
    is off): on the whole dev split this is tens of thousands of env steps."""
    name = _chooser_name(env_id)
    env = context.make_env(env_id, split="dev")
    try:
        by_bench: dict[str, list[str]] = defaultdict(list)
        for task in env.unwrapped.tasks:
            if not tasks_per_benchmark or len(by_bench[task.benchmark]) < tasks_per_benchmark:
                by_bench[task.benchmark].append(task.id)
        pairs = _dev_seeds([t for ids in by_bench.values() for t in ids], seeds)
        bench_of = {t: b for b, ids in by_bench.items() for t in ids}
        options = {o.name: o for o in catalogue_options(context, env_id)}
        total = (len(rules) + 1) * len(pairs)
        scope = f"{tasks_per_benchmark} per benchmark" if tasks_per_benchmark else "all of them"
        print(
            f"{name}: choosing among {len(rules)} fixed rules on the dev split: {len(bench_of)} dev tasks "
            f"({scope}) x {seeds} seed(s), {total} episodes with always-pass "
            f"(set {name}:dev_tasks=N or --limit N to choose on fewer)",
            file=sys.stderr,
            flush=True,
        )
        bar = tqdm(total=total, desc=f"{name} on dev", unit="ep", disable=not context.progress, dynamic_ncols=True)

        def evaluate(policy) -> tuple[float, float]:
            f1 = defaultdict(list)
            interventions = []
            for task_id, seed in pairs:
                _, _, info = play_episode(env, policy, seed, task_id)
                bar.update(1)
                if episode_failed(info):  # a service failure is no outcome: left out of the means
                    continue
                f1[bench_of[task_id]].append(float(info["f1"]))
                interventions.append(int(info["interventions"]))
            if not interventions:
                raise SteerEnvsError(
                    "fixed_rule: every dev episode failed on a service (see the episodes' "
                    "info['failure']); check the model and retrieval servers and rerun"
                )
            return 100 * float(np.mean([np.mean(v) for v in f1.values()])), float(np.mean(interventions))

        with bar:
            base, _ = evaluate(NoSupervision())
            out = []
            for rule_name, at in rules:
                f1, rate = evaluate(FixedRule(options[rule_name], at))
                out.append(RuleScore(rule_name, at, round(f1, 3), round(f1 - base, 3), round(rate, 4)))
        return out
    finally:
        env.close()


def build_best_fixed_rule(
    context: MethodContext, env_id: str = STEERING_ENV, settings: BestFixedRuleOptions | None = None
) -> FixedRule:
    """Choose (O, K) on dev (cached in the workdir), then act as that fixed rule (in ``env_id``'s catalogue);
    ``settings``: the search's options (default: the context's :class:`BestFixedRuleOptions`)."""
    settings = settings or context.options_of(BestFixedRuleOptions)
    options = catalogue_options(context, env_id)
    per_benchmark = settings.dev_tasks or context.dev_limit
    search = {"dev_tasks_per_benchmark": per_benchmark, "seeds": settings.seeds, "max_at": settings.max_at}
    path = context.checkpoint_dir() / SELECTION_FILE
    if path.is_file():  # chosen before (a resumed run, or another run folder sharing the checkpoint): keep it
        stored = json.loads(path.read_text(encoding="utf-8"))
        chosen = stored["chosen"]
    else:
        rules = [(o.name, k) for o in options for k in range(settings.max_at + 1)]
        scores = score_rules(context, rules, per_benchmark, settings.seeds, env_id)
        best = max(scores, key=lambda r: (r.f1, -r.interventions))
        chosen = {"option": best.option, "at": best.at}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(
            json.dumps(
                {"chosen": chosen, "split": "dev", "search": search, "scores": [asdict(s) for s in scores]}, indent=2
            ),
            encoding="utf-8",
        )
        tmp.replace(path)
    rule = FixedRule(_option(options, chosen["option"]), int(chosen["at"]))
    rule.name = _chooser_name(env_id)
    rule.run_info = {**rule.run_info, "chosen_on": "dev"}
    return rule


def describe_choice(label: str, checkpoint_dir: Path) -> tuple[str, list[tuple[str, str]]]:
    """What the best fixed rule of ``label`` chose on dev (read from its ``selection.json``) and the fixed rules a
    rate curve sweeps around it: the chosen note at every decision ``0..max_at`` (one intervention each, earlier or
    later). Registered as the method's ``describe_choice``; ``("–", [])`` before it has chosen."""
    path = Path(checkpoint_dir) / SELECTION_FILE
    if not path.is_file():
        return "–", []
    chosen = json.loads(path.read_text(encoding="utf-8"))["chosen"]
    from .registry import parse_method

    options = parse_method(label).options
    assert isinstance(options, BestFixedRuleOptions)  # the label names a best_fixed_rule run
    max_at = options.max_at
    sweep = [(f"fixed_rule:at={k},option={chosen['option']}", f"at={k}") for k in range(max_at + 1)]
    return f"option={chosen['option']}, at={chosen['at']} (best dev F1)", sweep
