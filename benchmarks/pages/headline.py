"""The README's headline: the papers' claims beside the suite's figures, rendered from committed summaries.

``python -m benchmarks.pages.headline`` rewrites the part of ``README.md`` between :data:`START` and :data:`END`;
``--check`` exits 1 when the README differs from its render (the test suite holds the same). Every figure is read
from a summary committed in the repository (each row of :func:`headline` names its file and field), every verdict
is computed from its interval by :func:`benchmarks.harness.verdicts.verdict`, and every row names the commit that
measured it, so a figure cannot be edited by hand, drift from its data, or outlive the code it describes without
``python -m benchmarks.pages.freshness`` saying so.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from benchmarks.harness.stats import Interval
from benchmarks.harness.verdicts import NOT_SHOWN, REPRODUCES, tasks_to_tell, verdict
from steer_envs.atomic import atomic_write_text
from steer_envs.errors import SteerEnvsError
from steer_envs.paths import REPO_ROOT

from .code_records import code_of
from .summary_freshness import Freshness, freshness

README = REPO_ROOT / "README.md"
START = "<!-- headline: rendered from committed summaries by `python -m benchmarks.pages.headline`; do not edit -->"
END = "<!-- /headline -->"


# -- reading committed summaries -------------------------------------------------------------------------------------
@cache
def load(source: str) -> Any:
    path = REPO_ROOT / source
    if not path.is_file():
        raise SteerEnvsError(f"the headline quotes {source}, which is not in the repository: commit the summary first")
    return json.loads(path.read_text(encoding="utf-8"))


def as_interval(value: Any, where: str) -> Interval:
    """A ``{mean, low, high}`` dict or a ``[mean, low, high]`` list as an :class:`Interval`."""
    if isinstance(value, dict) and {"mean", "low", "high"} <= set(value):
        return Interval(float(value["mean"]), float(value["low"]), float(value["high"]))
    if isinstance(value, list) and len(value) == 3:
        return Interval(*(float(v) for v in value))
    raise SteerEnvsError(f"{where} is not an interval: {value!r}")


def lookup(data: Any, keys: Sequence[str], where: str) -> Any:
    """Follow ``keys`` into ``data``: a dict by key; a list by index, or by ``field=value`` (its first dict whose
    ``field`` is ``value``)."""
    for key in keys:
        if isinstance(data, list) and key.isdigit():
            data = data[int(key)] if int(key) < len(data) else None
        elif isinstance(data, list) and "=" in key:
            name, _, wanted = key.partition("=")
            data = next((item for item in data if isinstance(item, dict) and item.get(name) == wanted), None)
        elif isinstance(data, dict):
            data = data.get(key)
        else:
            data = None
        if data is None:
            raise SteerEnvsError(f"{where}: nothing at {key!r} (keys {list(keys)})")
    return data


@dataclass(frozen=True)
class Value:
    """A number a row quotes: the field at ``keys`` in the summary ``source``, shown with ``fmt`` (an interval is
    shown as ``+m [+low, +high]``)."""

    source: str
    keys: tuple[str, ...]
    fmt: str = "{:+.2f}"

    def sources(self) -> tuple[str, ...]:
        """The summaries this value reads (a row is quoted only when each is current)."""
        return (self.source,)

    def get(self) -> Any:
        return lookup(load(self.source), self.keys, f"{self.source}")

    def interval(self) -> Interval:
        return as_interval(self.get(), f"{self.source}:{'/'.join(self.keys)}")

    def text(self) -> str:
        value = self.get()
        if isinstance(value, (dict, list)):
            iv = self.interval()
            return f"{self.fmt.format(iv.mean)} [{self.fmt.format(iv.low)}, {self.fmt.format(iv.high)}]"
        return self.fmt.format(value)


def pair(source: str, a: str, b: str) -> Value:
    """The paired interval of ``a − b`` in a comparison summary (its ``pairwise``, ``vs_none`` or ``vs_rule``)."""
    data = load(source)
    for key in ("pairwise", "vs_none", "vs_rule"):
        for i, item in enumerate(data.get(key, [])):
            if item.get("a") == a and item.get("b") == b:
                return Value(source, (key, str(i)))
    raise SteerEnvsError(f"{source} has no paired interval of {a} − {b}")


@dataclass(frozen=True)
class Place(Value):
    """A compared row's place on a drift level's ladder scale, from the ladder's best fixed rule (0) to its learnable
    ceiling (1): the row's gain over no supervision in the comparison summary ``source`` (``keys``: its paired
    interval), less the ladder's rule's gain, over the ceiling's gain over that rule, both as the hand-written rung's
    summary ``ladder`` records them for ``level`` (the drift page's placement tables compute the same)."""

    ladder: str = ""
    level: str = ""

    def sources(self) -> tuple[str, ...]:
        return (self.source, self.ladder)

    def get(self) -> float:
        gain = as_interval(super().get(), f"{self.source}:{'/'.join(self.keys)}").mean
        scale = lookup(load(self.ladder), ("levels", self.level, "ladder"), self.ladder)
        rule = scale["best_fixed_rule_f1"] - scale["none_f1"]
        return (gain - rule) / scale["ceiling_over_rule"]


def method(source: str, name: str, key: str, fmt: str = "{:.2f}") -> Value:
    """A field of a method's row in a comparison summary's ``summaries``."""
    return Value(source, ("summaries", f"method={name}", key), fmt)


# -- rows ------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Check:
    """One verdict a row gives: the interval ``value`` read for an effect the paper reports in ``direction`` (+1 a
    gain, -1 a loss), with the paper's value where it gives one and the tasks behind the interval where known."""

    value: str
    direction: int = 1
    label: str = ""
    paper: float | None = None
    tasks: str = ""


@dataclass(frozen=True)
class Claim:
    """One row of the headline: the claim, the paper's figure, the suite's figures (``suite``, a template over
    ``values``), the verdicts (``checks``), the rate and where the page is."""

    claim: str
    paper: str
    suite: str
    values: dict[str, Value]
    checks: tuple[Check, ...]
    rate: str = ""
    where: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Measure:
    """A row of the testbed table (no paper figure, no verdict)."""

    check: str
    suite: str
    values: dict[str, Value]
    rate: str = ""
    where: tuple[tuple[str, str], ...] = ()


def magnitude(iv: Interval, paper: float) -> str:
    """Where the paper's value lies against a reproduced interval."""
    if paper > iv.high:
        return f", below the paper's {paper:+.2f}"
    if paper < iv.low:
        return f", above the paper's {paper:+.2f}"
    return ", the paper's value inside"


def check_text(check: Check, values: dict[str, Value]) -> str:
    """The verdict of one check (:func:`verdict`), with its magnitude against the paper's value when it reproduces
    and the tasks an interval like it would need when it shows nothing."""
    iv = values[check.value].interval()
    said = verdict(iv, check.direction)
    if said == REPRODUCES and check.paper is not None:
        said += magnitude(iv, check.paper)
    if said == NOT_SHOWN and check.tasks:
        needed = tasks_to_tell(iv, int(values[check.tasks].get()))
        said += f" (~{needed} tasks to tell at this mean)" if needed else ""
    return f"{check.label}: {said}" if check.label else said


def fill(template: str, values: dict[str, Value]) -> str:
    try:
        return template.format(**{name: value.text() for name, value in values.items()})
    except KeyError as exc:
        raise SteerEnvsError(f"headline template {template!r} needs a value {exc.args[0]!r}") from None


def measured_at(values: dict[str, Value], quoted: bool = True) -> str:
    """The commits that measured ``values``; a quoted figure must name them (a row only listed as waiting may
    read a summary that names none)."""
    commits: list[str] = []
    sources = list(dict.fromkeys(s for v in values.values() for s in v.sources()))
    for source in sources:
        found = code_of(load(source)).commits
        if not found and quoted:
            raise SteerEnvsError(f"{source} records no commit: remeasure it with the command it records")
        commits += [c for c in found if c not in commits]
    return ", ".join(f"`{c}`" for c in commits) or "no recorded commit"


def where_text(where: tuple[tuple[str, str], ...], values: dict[str, Value], quoted: bool = True) -> str:
    links = ", ".join(f"[{text}]({link})" for text, link in where)
    return f"{links} (at {measured_at(values, quoted)})"


def claim_line(row: Claim) -> str:
    verdicts = "; ".join(check_text(c, row.values) for c in row.checks)
    cells = (row.claim, row.paper, fill(row.suite, row.values), fill(row.rate, row.values), verdicts)
    return "| " + " | ".join(cells) + f" | {where_text(row.where, row.values)} |"


def measure_line(row: Measure) -> str:
    cells = (fill(row.check, row.values), fill(row.suite, row.values), fill(row.rate, row.values))
    return "| " + " | ".join(cells) + f" | {where_text(row.where, row.values)} |"


# -- the rows the README shows ---------------------------------------------------------------------------------------
DEFAULT = "docs/results/main/sim_default/summary.json"
LOOPY = "docs/results/main/sim_loopy/summary.json"
R1 = "docs/results/main/sim_r1searcher/summary.json"
TRANSFER = "docs/results/main/transfer/summary.json"
LLM = "docs/data/llm_headline/llm_headline.json"
BARRIER = "studies/actguide_barrier/results/summary.json"
HANDOFF = "docs/results/handoff/results_handoff.json"
HEADROOM = "docs/results/testbed/default/ladder.json"
CONFIRMATION = "studies/actguide_barrier/results/confirmation.json"
HAND_WRITTEN = "docs/results/drift/hand_written/summary.json"
#: the barrier study's arms as a row names them
ARM_NAMES = {"actguide": "ACTGUIDE-RL as stated", "unguided_baseline": "guided groups baselined by the unguided group"}


def drift(level: int) -> str:
    return f"docs/results/drift/sim_drift{level}/summary.json"


def _llm(row: str, key: str, fmt: str = "{:+.2f}") -> Value:
    return Value(LLM, ("rows", row, key), fmt)


def _barrier(group: str, gain: str) -> Value:
    """A paired gain in success points (x100) of the barrier study: ``group`` is ``family`` or ``real``."""
    return Value(BARRIER, ("groups", group, "gains", gain, "success"), "{:+.1f}")


def steering_claims() -> tuple[Claim, ...]:
    """The steering rows: built on call, since finding a pair's place in its summary reads the file (nothing is read
    when the module is imported)."""
    rl_default = {
        "gain": pair(DEFAULT, "steering_rl", "no_supervision"),
        "tasks": method(DEFAULT, "steering_rl", "n_tasks", "{}"),
        "seeds": method(DEFAULT, "steering_rl", "train_seeds", "{}"),
        "rate": method(DEFAULT, "steering_rl", "interventions_per_task"),
    }
    return (
        Claim(
            "zero-shot steering gains at ~1 intervention per task",
            "+1.84",
            "{gain} (Gemma 3 270M served by vLLM, `sim:default`, 5 test tasks per benchmark × {seeds} seeds)",
            {
                "gain": _llm("zero_shot", "gain"),
                "seeds": Value(LLM, ("card", "seeds"), "{}"),
                "rate": _llm("zero_shot", "interventions", "{:.2f}"),
            },
            (Check("gain", paper=1.84),),
            "{rate}/task",
            (("LLM steerer", "docs/results_llm_headline.md#table"),),
        ),
        Claim(
            "RL-trained steering gains at ~1 intervention per task",
            "+6.66",
            "{gain} (encoder steerer, `sim:default`, {tasks} tasks, {seeds} training seeds)",
            rl_default,
            (Check("gain", paper=6.66, tasks="tasks"),),
            "{rate}/task",
            (("rate-matched, default", "docs/results.md#rate-matched-comparison-on-simdefault-test-split"),),
        ),
        Claim(
            "the same with the LLM steerer, trained vs zero-shot",
            "+6.66 vs +1.84",
            "{diff} (Gemma 3 270M, LoRA, 2 training rounds of 4 states)",
            {
                "diff": Value(LLM, ("comparisons", "trained vs zero-shot")),
                "trained": _llm("trained", "interventions", "{:.2f}"),
                "zero_shot": _llm("zero_shot", "interventions", "{:.2f}"),
            },
            (Check("diff", paper=6.66 - 1.84),),
            "{trained} vs {zero_shot}/task",
            (("LLM steerer", "docs/results_llm_headline.md#table"),),
        ),
        Claim(
            "RL steering is the best supervisor at the same rate",
            "best row",
            "RL − best fixed rule {rule}; − SB3 PPO {ppo}; − untrained steerer {untrained}",
            {
                "rule": pair(DEFAULT, "steering_rl", "best_fixed_rule"),
                "ppo": pair(DEFAULT, "steering_rl", "sb3_ppo"),
                "untrained": pair(DEFAULT, "steering_rl", "steering_untrained"),
                **rl_default,
            },
            (Check("rule", label="vs the rule", tasks="tasks"), Check("ppo", label="vs SB3 PPO", tasks="tasks")),
            "{rate}/task",
            (("rate-matched, default", "docs/results.md#rate-matched-comparison-on-simdefault-test-split"),),
        ),
        Claim(
            "the same on `sim:loopy`; on `sim:r1searcher`",
            "best row",
            "loopy: RL − best fixed rule {l_rule}; − SB3 PPO {l_ppo}; RL {l_none} over none. r1searcher: RL − best "
            "fixed rule {r_rule}; − SB3 PPO {r_ppo}; RL {r_none} over none",
            {
                "l_rule": pair(LOOPY, "steering_rl", "best_fixed_rule"),
                "l_ppo": pair(LOOPY, "steering_rl", "sb3_ppo"),
                "l_none": pair(LOOPY, "steering_rl", "no_supervision"),
                "r_rule": pair(R1, "steering_rl", "best_fixed_rule"),
                "r_ppo": pair(R1, "steering_rl", "sb3_ppo"),
                "r_none": pair(R1, "steering_rl", "no_supervision"),
                "l_rate": method(LOOPY, "steering_rl", "interventions_per_task"),
                "r_rate": method(R1, "steering_rl", "interventions_per_task"),
            },
            (
                Check("l_rule", label="loopy vs the rule"),
                Check("l_ppo", label="vs SB3 PPO"),
                Check("r_rule", label="r1searcher vs the rule"),
                Check("r_ppo", label="vs SB3 PPO"),
            ),
            "{l_rate} and {r_rate}/task",
            (
                ("loopy", "docs/results.md#rate-matched-comparison-on-simloopy-test-split"),
                ("r1searcher", "docs/results.md#rate-matched-comparison-on-simr1searcher-test-split"),
            ),
        ),
        Claim(
            "offline filtered BC is worse than online RL",
            "BC below RL",
            "RL − filtered BC {bc}",
            {
                "bc": pair(DEFAULT, "steering_rl", "filtered_bc"),
                "rate": method(DEFAULT, "filtered_bc", "interventions_per_task"),
            },
            (Check("bc"),),
            "{rate}/task (BC)",
            (("rate-matched, default", "docs/results.md#rate-matched-comparison-on-simdefault-test-split"),),
        ),
        Claim(
            "planning and verification gain less than steering, or hurt",
            "less, or below 0",
            "`sim:default`: planning (RL) {plan} over none, verification (RL) {verify}; RL steering − each {vs_plan} "
            "and {vs_verify}",
            own_rate_values(DEFAULT),
            (Check("vs_plan", label="steering − planning"), Check("vs_verify", label="steering − verification")),
            "planning {p_rate}, verification {v_rate}/task",
            (("own rate, default", "docs/results.md#planning-and-verification-at-their-own-rate-simdefault"),),
        ),
        Claim(
            "the same on `sim:loopy`",
            "less, or below 0",
            "planning (RL) {plan} over none, verification (RL) {verify}; RL steering − each {vs_plan} and {vs_verify}",
            own_rate_values(LOOPY),
            (Check("vs_plan", label="steering − planning"), Check("vs_verify", label="steering − verification")),
            "planning {p_rate}, verification {v_rate}/task",
            (("own rate, loopy", "docs/results.md#planning-and-verification-at-their-own-rate-simloopy"),),
        ),
    )


def own_rate_values(source: str) -> dict[str, Value]:
    """Planning and verification (each trained, at its own rate) over no supervision and under RL steering."""
    return {
        "plan": pair(source, "planning_rl", "no_supervision"),
        "verify": pair(source, "verification_rl", "no_supervision"),
        "vs_plan": pair(source, "steering_rl", "planning_rl"),
        "vs_verify": pair(source, "steering_rl", "verification_rl"),
        "p_rate": method(source, "planning_rl", "interventions_per_task"),
        "v_rate": method(source, "verification_rl", "interventions_per_task"),
    }


def _transfer_values() -> dict[str, Value]:
    values = {}
    for i, cell in enumerate(load(TRANSFER)["cells"]):
        index = next(j for j, p in enumerate(cell["pairwise"]) if (p["a"], p["b"]) == ("transferred", "no_supervision"))
        values[f"c{i}"] = Value(TRANSFER, ("cells", str(i), "pairwise", str(index)))
    return values


def transfer_claim() -> Claim:
    """Every trained-on-one, deployed-on-another pair of the transfer summary, each with its own verdict."""
    cells = load(TRANSFER)["cells"]
    values = _transfer_values()
    short = [f"`{c['source'].removeprefix('sim:')}`→`{c['target'].removeprefix('sim:')}`" for c in cells]
    suite = "; ".join(f"{name} {{c{i}}}" for i, name in enumerate(short)) + " (τ not re-tuned)"
    checks = tuple(Check(f"c{i}", label=name) for i, name in enumerate(short))
    return Claim(
        "transfer to unseen executors stays positive",
        "+15.78 / +12.01 / +5.92",
        suite,
        values,
        checks,
        "",
        (("transfer", "docs/results.md#transfer-across-profiles"),),
    )


HANDOFF_WHERE = (("hand-off table", "docs/results_handoff.md#the-table-test-split"),)
#: the hand-off table's rows the README reads (``benchmarks.handoff_results.method_specs`` names them)
HANDOFF_ROWS = {
    "none": "no supervision",
    "zero_shot": "zero-shot steering, 25% coverage",
    "forced": "zero-shot steering, every hand-off (forced)",
    "rl": "RL steering, 25% coverage",
    "rl_every": "RL steering, every hand-off",
    "rl_pass": "RL steering, every hand-off, slow path may pass",
    "random": "random, 25% coverage",
    "rule": "best fixed rule (chosen on dev)",
}


def _handoff(row: str, key: str, fmt: str = "{:+.2f}") -> Value:
    """A field of a hand-off table row (``gain``: its paired interval over no supervision)."""
    return Value(HANDOFF, ("rows", HANDOFF_ROWS[row], key), fmt)


def handoff_claims() -> tuple[Claim, ...]:
    """The multi-agent variant's rows: the paper's four figures, and RL at 25% coverage against every other supervisor
    at that coverage (the best fixed rule is the bar)."""
    turns = {"turns_none": _handoff("none", "agent_turns", "{:.2f}")}
    return (
        Claim(
            "hand-offs: zero-shot steering at 25% of agent turns",
            "-1.04",
            "{gain} (untrained encoder steerer, simulated roles)",
            {
                "gain": _handoff("zero_shot", "gain"),
                "cov": _handoff("zero_shot", "coverage", "{:.1%}"),
                "rate": _handoff("zero_shot", "interventions", "{:.2f}"),
            },
            (Check("gain", direction=-1, paper=-1.04),),
            "{cov} ({rate}/task)",
            HANDOFF_WHERE,
        ),
        Claim(
            "hand-offs: intervening at every hand-off hurts and inflates agent turns",
            "-7.14, turns 9.2 → 24.1",
            "{gain}, agent turns {turns_none} → {turns} (the budget: every episode ends at its turn limit)",
            {
                "gain": _handoff("forced", "gain"),
                "turns": _handoff("forced", "agent_turns", "{:.2f}"),
                "rate": _handoff("forced", "interventions", "{:.2f}"),
                **turns,
            },
            (Check("gain", direction=-1, paper=-7.14),),
            "{rate}/task",
            HANDOFF_WHERE,
        ),
        Claim(
            "hand-offs: RL-trained steering at 25% of agent turns",
            "+3.90",
            "{gain} ({seeds} training seeds)",
            {
                "gain": _handoff("rl", "gain"),
                "seeds": _handoff("rl", "training_seeds", "{}"),
                "cov": _handoff("rl", "coverage", "{:.1%}"),
                "rate": _handoff("rl", "interventions", "{:.2f}"),
            },
            (Check("gain", paper=3.90),),
            "{cov} ({rate}/task)",
            HANDOFF_WHERE,
        ),
        Claim(
            "hand-offs: RL-trained steering at every hand-off",
            "+5.34",
            "as trained {gain}, agent turns {turns_none} → {turns} (the budget); its slow path may pass (the paper's "
            "action set; added after the row as trained was seen on these test tasks) {pass_gain}, agent turns "
            "{pass_turns}",
            {
                "gain": _handoff("rl_every", "gain"),
                "turns": _handoff("rl_every", "agent_turns", "{:.2f}"),
                "pass_gain": _handoff("rl_pass", "gain"),
                "pass_turns": _handoff("rl_pass", "agent_turns", "{:.2f}"),
                "rate": _handoff("rl_every", "interventions", "{:.2f}"),
                "pass_rate": _handoff("rl_pass", "interventions", "{:.2f}"),
                **turns,
            },
            (Check("gain", paper=5.34, label="as trained"), Check("pass_gain", paper=5.34, label="may pass")),
            "{rate} and {pass_rate}/task",
            HANDOFF_WHERE,
        ),
        Claim(
            "hand-offs: RL steering at 25% of agent turns is the best supervisor",
            "best row",
            "RL − best fixed rule (at its own coverage, {rule_cov}) {rule}; − zero-shot {zero_shot} and − random "
            "{random} (each at 25%)",
            {
                **{
                    name: Value(HANDOFF, ("comparisons", HANDOFF_ROWS[name]))
                    for name in ("rule", "zero_shot", "random")
                },
                "rate": _handoff("rl", "interventions", "{:.2f}"),
                "rule_rate": _handoff("rule", "interventions", "{:.2f}"),
                "rule_cov": _handoff("rule", "coverage", "{:.1%}"),
            },
            (
                Check("rule", label="vs the rule"),
                Check("zero_shot", label="vs zero-shot"),
                Check("random", label="vs random"),
            ),
            "RL {rate}, the rule {rule_rate}/task",
            (
                (
                    "against the others",
                    "docs/results_handoff.md#rl-steering-against-the-other-supervisors-at-the-same-coverage",
                ),
                *HANDOFF_WHERE,
            ),
        ),
    )


BARRIER_WHERE = (("skill barrier", "docs/results_actguide_barrier.md#2-actguide-rl-against-zero-rl-on-the-barrier"),)


def _arm(claim: str, paper: str, arm: str, baseline: str, where: tuple[tuple[str, str], ...]) -> Claim:
    """A row of one ACTGUIDE-RL arm against its zero-RL baseline of the same budget: family and real benchmarks."""
    gain = f"{arm} - {baseline}"
    return Claim(
        claim,
        paper,
        "{family} success points on the synthetic barrier tasks; {real} on the 7 QA benchmarks ({seeds} training "
        "seed(s), equal budget)",
        {
            "family": _barrier("family", gain),
            "real": _barrier("real", gain),
            "seeds": Value(BARRIER, ("training", arm, "seeds"), "{}"),
        },
        (Check("family", label="barrier tasks"), Check("real", label="QA benchmarks")),
        "",
        where,
    )


def actguide_claims() -> tuple[Claim, ...]:
    """The ACTGUIDE-RL rows: built on call, since the variant's row says what the dev rule chose (read from the
    summary) and the confirmation's row quotes the arm it chose."""
    chosen = load(BARRIER)["selection"]["chosen"]
    picked = (
        "chosen on dev by a rule fixed before its test run"
        if chosen == "unguided_baseline"
        else "not chosen on dev: the rule fixed before its test run chose ACTGUIDE-RL as stated"
    )
    confirmed = load(CONFIRMATION)["chosen"]
    fresh_seeds = ", ".join(map(str, load(CONFIRMATION)["confirmation_seeds"]))
    return (
        _arm(
            "ACTGUIDE-RL beats zero RL past a skill barrier",
            "GAIA +10.68, WebWalkerQA +27.79, XBench +19.00, BrowseComp-ZH +5.15",
            "actguide",
            "zero_rl",
            BARRIER_WHERE,
        ),
        _arm(
            "the same with guided groups baselined by the unguided group (a variant proposed after test results of the "
            f"method as stated; {picked})",
            "",
            "unguided_baseline",
            "zero_rl",
            (
                (
                    "the variant",
                    "docs/results_actguide_barrier.md#the-methods-arm-proposed-from-test-results-picked-on-dev",
                ),
            ),
        ),
        _arm(
            "the same at twice the budget",
            "",
            "actguide_longer",
            "zero_rl_longer",
            (("twice the budget", "docs/results_actguide_barrier.md#3-twice-the-budget"),),
        ),
        Claim(
            "removing the adaptive guider, the fallback or the mixed-policy loss hurts",
            "each lower",
            "barrier tasks, each removal − the method: no adaptive k {adaptive}; no fallback {fallback}; "
            "no mixed-policy loss {mixed}",
            {
                "adaptive": _barrier("family", "no_adaptive - actguide"),
                "fallback": _barrier("family", "no_fallback - actguide"),
                "mixed": _barrier("family", "no_mixed - actguide"),
            },
            (
                Check("adaptive", -1, "no adaptive k"),
                Check("fallback", -1, "no fallback"),
                Check("mixed", -1, "no mixed loss"),
            ),
            "",
            (("ablations", "docs/results_actguide_barrier.md#4-ablations-noisy-plans-and-sft-then-rl"),),
        ),
        Claim(
            "10% wrong guidance is tolerated, 20% hurts",
            "tolerated / lower",
            "barrier tasks, each − clean guidance: 10% {noise10}; 20% {noise20}",
            {
                "noise10": _barrier("family", "noise_10 - actguide"),
                "noise20": _barrier("family", "noise_20 - actguide"),
            },
            (Check("noise20", -1, "20% lower"),),
            "",
            (("noisy plans", "docs/results_actguide_barrier.md#4-ablations-noisy-plans-and-sft-then-rl"),),
        ),
        Claim(
            f"the arm chosen on dev ({ARM_NAMES[confirmed]}) against zero RL on fresh training seeds, by a criterion "
            "fixed before that run",
            "",
            "{family} success points on the synthetic barrier tasks; {real} on the 7 QA benchmarks (training seeds "
            f"{fresh_seeds}, equal budget)",
            {"family": _confirmed("family", confirmed), "real": _confirmed("real", confirmed)},
            (Check("family", label="barrier tasks"), Check("real", label="QA benchmarks")),
            "",
            (("fresh seeds", "docs/results_actguide_barrier.md#5-confirmation-on-fresh-training-seeds"),),
        ),
    )


def _confirmed(group: str, arm: str) -> Value:
    """The confirmation's paired gain of ``arm`` over zero RL on its fresh seeds alone."""
    return Value(CONFIRMATION, ("confirmation", group, "gains", f"{arm} - zero_rl", "success"), "{:+.1f}")


def _rung(rung: str, key: str, fmt: str = "{:+.1f}") -> Value:
    return Value(HEADROOM, ("rows", f"rung={rung}", key), fmt)


def headroom_measure() -> Measure:
    """Where the headroom on the embedded default is: the oracle and the lookahead planner bound it, the learnable
    ceiling estimates what an observer of the transcript reaches of it over the best fixed rule."""
    return Measure(
        "headroom over no supervision on `sim:default` (up to {tasks} test tasks per benchmark × {seeds} seeds)",
        "oracle {oracle}; lookahead planner {planner}; best fixed rule {rule}; learnable ceiling − best fixed rule "
        "{ceiling}",
        {
            "tasks": Value(HEADROOM, ("config", "limit"), "{}"),
            "seeds": Value(HEADROOM, ("config", "seeds"), "{}"),
            "oracle": _rung("oracle", "gain"),
            "planner": _rung("lookahead_planner", "gain"),
            "rule": _rung("best_fixed_rule", "gain"),
            "ceiling": _rung("learnable_ceiling", "vs_best_fixed_rule"),
            "o_rate": _rung("oracle", "interventions_per_task", "{:.2f}"),
            "r_rate": _rung("best_fixed_rule", "interventions_per_task", "{:.2f}"),
        },
        "oracle {o_rate}, rule {r_rate}/task",
        (("headroom ladder", "docs/results_testbed.md#simdefault"),),
    )


def hand_written_measure() -> Measure:
    """The drift family's bar: the rule a person writes from the card, against the ladders' fixed rule, with the
    ladders' learnable-ceiling estimate over the same rule beside it."""
    values: dict[str, Value] = {}
    for n in (1, 2, 3):
        level = ("levels", f"sim:drift{n}")
        values[f"hand{n}"] = Value(HAND_WRITTEN, (*level, "gains", "hand_written - best_fixed_rule"))
        values[f"ceiling{n}"] = Value(HAND_WRITTEN, (*level, "ladder", "ceiling_over_rule"))
        values[f"rate{n}"] = Value(HAND_WRITTEN, (*level, "rows", "hand_written", "interventions_per_task"), "{:.2f}")
    values["episodes"] = Value(HAND_WRITTEN, ("levels", "sim:drift1", "rows", "none", "episodes"), "{:,}")
    return Measure(
        "the drift family's hand-written rung (the card's four tells, no learning) on `sim:drift1` / `sim:drift2` / "
        "`sim:drift3` ({episodes} paired test episodes a row)",
        "hand-written rule − the ladder's best fixed rule {hand1} / {hand2} / {hand3}; the ladders' learnable "
        "ceiling − the same rule {ceiling1} / {ceiling2} / {ceiling3} (point estimates)",
        values,
        "{rate1}, {rate2} and {rate3}/task",
        tuple((f"drift{n}", f"docs/results_drift.md#the-hand-written-rung-on-simdrift{n}") for n in (1, 2, 3)),
    )


#: the drift comparisons' learners as the README names them (every row that learns on the train split)
DRIFT_LEARNERS = {"steering_rl": "RL steering", "sb3_ppo": "SB3 PPO", "filtered_bc": "filtered BC"}


def drift_measure(n: int) -> Measure:
    """Every learner of the ``sim:drift<n>`` comparison placed on the level's ladder scale, beside the hand-written
    rung's place, with RL steering's paired gain over the comparison's own (rate-matched) best fixed rule. One row
    per level: a level is quoted as soon as its own summaries are current."""
    level = f"sim:drift{n}"
    values: dict[str, Value] = {}
    for name in DRIFT_LEARNERS:
        gain = pair(drift(n), name, "no_supervision")
        values[name] = Place(gain.source, gain.keys, "{:+.2f}", HAND_WRITTEN, level)
    values["hand"] = Value(HAND_WRITTEN, ("levels", level, "place"))
    values["rl"] = pair(drift(n), "steering_rl", "best_fixed_rule")
    values["rate"] = method(drift(n), "steering_rl", "interventions_per_task")
    places = "; ".join(f"{text} {{{name}}}" for name, text in DRIFT_LEARNERS.items())
    return Measure(
        f"the algorithms on `{level}`, rate-matched on dev (3 training seeds), placed between the ladder's best fixed "
        "rule (0) and its learnable ceiling (1)",
        f"place: {places}; the hand-written rung {{hand}}. RL steering − the comparison's best fixed rule {{rl}}",
        values,
        "RL steering {rate}/task",
        ((f"drift{n}", f"docs/results_drift.md#the-algorithms-on-simdrift{n}"),),
    )


#: a row of either table
Row = Claim | Measure


@dataclass
class Headline:
    """The rows the README shows, in order."""

    claims: list[Claim] = field(default_factory=list)
    measures: list[Measure] = field(default_factory=list)


def headline() -> Headline:
    claims = [*steering_claims(), *handoff_claims(), transfer_claim(), *actguide_claims()]
    return Headline(claims, [headroom_measure(), hand_written_measure(), *(drift_measure(n) for n in (1, 2, 3))])


INTRO = """F1 (steering) or exact-match success (ACTGUIDE-RL) in points, paired 95% intervals; *rate*: interventions per
task. The paper: Qwen3-8B steering a Qwen2.5-7B search agent; here: a simulated executor on the same 7 QA benchmarks,
an encoder steerer (Gemma 3 270M where named), and for ACTGUIDE-RL a small policy over the admissible actions.
*Verdict*, one rule over each interval ([verdicts.py](benchmarks/harness/verdicts.py)): **reproduces** (excludes 0
in the paper's direction), **opposite** (excludes 0 the other way), **not shown** (contains 0)."""


#: what decides whether a summary is current (the tests pass one that calls every summary current or stale)
FreshnessCheck = Callable[[str], Freshness]


def current_rows(rows: Sequence[Row], check: FreshnessCheck) -> list[Row]:
    """The rows every summary of which is current by ``check``."""
    return [row for row in rows if all(check(s).current for v in row.values.values() for s in v.sources())]


def waiting_line(title: str, row: Row, check: FreshnessCheck) -> str:
    """A row whose figures are not quoted: what it claims, where its page is, and why its numbers wait."""
    sources = dict.fromkeys(s for v in row.values.values() for s in v.sources())
    stale = [check(s) for s in sources if not check(s).current]
    why = "; ".join(f"{f.source}: {f.reason}" for f in stale)
    return f"- {title}: {where_text(row.where, row.values, quoted=False)}. {why}."


WAITING = """Not quoted until remeasured (a summary they read is not current: the code its runs loaded changed since, or
it names no clean commit of this history; each summary records the command that remakes it, `python -m
benchmarks.pages.freshness` lists why):"""


def render(check: FreshnessCheck = freshness) -> str:
    """The headline region of the README, rendered from the committed summaries: a row is quoted only while every
    summary it reads is current (``check``, by default :func:`~.summary_freshness.freshness` against this checkout); the
    others are listed, without figures or verdicts, under :data:`WAITING`. So a change to code that a quoted number
    depends on takes that number off the README (the test suite holds the README equal to its render) until it is
    remeasured."""
    check = cache(check)
    h = headline()
    claims = current_rows(h.claims, check)
    measures = current_rows(h.measures, check)
    lines = [START, INTRO, ""]
    if claims:
        lines += [
            "| claim | the paper | the suite [95% CI] | rate | verdict | where |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        lines += [claim_line(row) for row in claims]
    if measures:
        lines += [
            "",
            "The testbed's own checks (no paper figure): whether a learner can reach the headroom.",
            "",
            "| check | the suite [95% CI] | rate | where |",
            "| --- | --- | --- | --- |",
        ]
        lines += [measure_line(row) for row in measures]
    waiting = [waiting_line(r.claim, r, check) for r in h.claims if r not in claims]
    waiting += [waiting_line(fill(r.check, r.values), r, check) for r in h.measures if r not in measures]
    if waiting:
        lines += ["", WAITING, "", *waiting]
    lines += ["", END]
    return "\n".join(lines)


def sources() -> list[str]:
    """Every committed summary the headline quotes."""
    h = headline()
    found = [s for row in [*h.claims, *h.measures] for v in row.values.values() for s in v.sources()]
    return list(dict.fromkeys(found))


def replaced(text: str, region: str) -> str:
    if START not in text or END not in text:
        raise SteerEnvsError(f"README.md has no headline region: put {START!r} and {END!r} where the tables go")
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    return head + region + tail


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.pages.headline", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when README.md differs from its render")
    parser.add_argument("--readme", type=Path, default=README)
    args = parser.parse_args(argv)
    text = args.readme.read_text(encoding="utf-8")
    new = replaced(text, render())
    if args.check:
        if new != text:
            print(f"{args.readme} differs from its render: run python -m benchmarks.pages.headline")
            return 1
        print(f"{args.readme}: the headline equals its render")
        return 0
    atomic_write_text(args.readme, new)
    print(f"wrote the headline of {args.readme}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
