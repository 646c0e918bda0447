"""``docs/results_reader.md`` from the committed summaries: ``python -m studies.reader_rl.page``.

Reads only ``results/<run>/`` (written by :mod:`.run`) and the testbed's committed ladders, so the page is rebuilt
without running anything. The joint tables put the rows of two runs that share their test episodes into one
harness bootstrap (tasks resampled within benchmarks, every row's training seeds resampled), so every difference
on the page is paired.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.harness.protocols import RL, RULE, UNTRAINED
from benchmarks.harness.runner import REFERENCE
from benchmarks.harness.stats import HierarchicalBootstrap, Interval, RowRuns, summarize_rows
from benchmarks.harness.summary_rows import StoredProfile
from benchmarks.harness.tables import comparison_table, pairwise_table
from benchmarks.pages.ladders import interval, read_ladder, setting_commits
from benchmarks.pages.results import card_from_dict
from steer_envs.paths import REPO_ROOT

from .run import BUDGETS, READER_CONFIG, RESULTS, RUNS, STUDY_FILE, RunSpec

PAGE = REPO_ROOT / "docs" / "results_reader.md"
TESTBED = REPO_ROOT / "docs" / "results" / "testbed"
#: the rows' names on the page
READER_RL, READER_UNTRAINED = "RL steering + reader", "Untrained steerer + reader"
PLAIN_RL, PLAIN_UNTRAINED = "RL steering", "Untrained steerer"
DOUBLE_RL = "RL steering + reader, twice the rounds"
RATE_RULE = "fixed_rule:at=1,option=refocus"
SHARED = (REFERENCE, "random", RULE)


@dataclass(frozen=True)
class Part:
    """One run's rows in a joint table: stored row name -> the name the table shows."""

    run: str
    rows: dict[str, str]


@dataclass
class Joint:
    """Rows of several runs on the same test episodes, in one bootstrap."""

    summaries: list
    boot: HierarchicalBootstrap
    knobs: dict[str, str]
    budgets: dict[str, str]
    benchmarks: list[str]
    card: str
    names: list[str]

    def gain(self, a: str, b: str) -> Interval:
        return self.boot.gain(a, b)[1]

    def f1(self, name: str) -> float:
        return next(s.avg_f1 for s in self.summaries if s.method == name)

    def rate(self, name: str) -> float:
        return next(s.interventions_per_task for s in self.summaries if s.method == name)

    def table(self) -> str:
        return comparison_table(self.summaries, self.benchmarks, self.budgets, self.knobs)

    def pairs(self, pairs: Sequence[tuple[str, str]]) -> str:
        return pairwise_table([(a, b, self.gain(a, b)) for a, b in pairs if a in self.names and b in self.names])


def spec(run: str) -> RunSpec:
    return next(r for r in RUNS if r.name == run)


@dataclass
class Results:
    """The study's committed results folder; each run's summary and episodes are read once per page build (every
    table and line of the page reads them)."""

    root: Path
    _stored: dict[str, StoredProfile] = field(default_factory=dict)
    _study: dict[str, dict[str, Any]] = field(default_factory=dict)

    def stored(self, run: str) -> StoredProfile:
        if run not in self._stored:
            self._stored[run] = StoredProfile.read(self.root / run, spec(run).executor)
        return self._stored[run]

    def study(self, run: str) -> dict[str, Any]:
        if run not in self._study:
            text = (self.stored(run).folder / STUDY_FILE).read_text(encoding="utf-8")
            self._study[run] = json.loads(text)
        return self._study[run]


def joint(results: Results, parts: Sequence[Part]) -> Joint:
    rows: list[RowRuns] = []
    knobs: dict[str, str] = {}
    budgets: dict[str, str] = {}
    commits: list[str] = []
    first = results.stored(parts[0].run)
    for part in parts:
        st = results.stored(part.run)
        runs = st.runs()
        for name, shown in part.rows.items():
            if name not in runs:
                continue
            rows.append(RowRuns(shown, runs[name].runs))
            record = st.summary["rows"][name]
            knobs[shown], budgets[shown] = record["knob"], record["budget"] or "–"
        commits += [c for c in st.summary["card"]["commits"] if c not in commits]
    benchmarks = first.summary["benchmarks"]
    boot = HierarchicalBootstrap(rows, benchmarks)
    summaries = summarize_rows(rows, benchmarks, reference=REFERENCE, boot=boot)
    card = card_from_dict({**first.summary["card"], "commits": commits}).markdown()
    return Joint(summaries, boot, knobs, budgets, benchmarks, card, [r.name for r in rows])


def pair_parts(reader_run: str, plain_run: str) -> list[Part]:
    shared = {name: name for name in (*SHARED, RATE_RULE)}
    return [
        Part(reader_run, {**shared, UNTRAINED: READER_UNTRAINED, RL: READER_RL}),
        Part(plain_run, {UNTRAINED: PLAIN_UNTRAINED, RL: PLAIN_RL}),
    ]


PAIRS = (
    (READER_RL, RULE),
    (PLAIN_RL, RULE),
    (READER_RL, PLAIN_RL),
    (READER_RL, RATE_RULE),
    (PLAIN_RL, RATE_RULE),
    (READER_RL, REFERENCE),
    (PLAIN_RL, REFERENCE),
    (READER_RL, READER_UNTRAINED),
    (PLAIN_RL, PLAIN_UNTRAINED),
    (READER_UNTRAINED, PLAIN_UNTRAINED),
)


def ci(iv: Interval) -> str:
    return f"{iv.mean:+.1f} [{iv.low:+.1f}, {iv.high:+.1f}]"


def verdict(iv: Interval) -> str:
    return "above" if iv.low > 0 else "below" if iv.high < 0 else "not separated from"


def rule_dev(summary: dict[str, Any]) -> tuple[str, float, float]:
    """The dev-chosen rule's name and dev F1, and no supervision's dev F1, from the rule's dev table."""
    table = summary["dev"]["bar_selection"]
    chosen = table["chosen"]
    row = next(s for s in table["scores"] if s["option"] == chosen["option"] and s["at"] == chosen["at"])
    return f"{chosen['option']}@{chosen['at']}", row["f1"], row["f1"] - row["gain"]


def seconds(summary: dict[str, Any]) -> float:
    return sum(sum(p["seconds"].values()) for p in summary["parts"])


def dev_line(results: Results, run: str, row: str, shown: str) -> str:
    scores = results.study(run)["dev"][row]
    f1s = ", ".join(f"{s['f1']:.1f}" for s in scores)
    rates = ", ".join(f"{s['rate']:.2f}" for s in scores)
    return f"{shown} {f1s} (training seeds 0-{len(scores) - 1}; dev rate {rates})"


def q_line(results: Results, run: str) -> str:
    """The mean measured q(s) of the states each round selected, first round -> last, per training seed."""
    logs = results.study(run)["training"]
    parts = []
    for rounds in logs.values():
        qs = [r["mean_q"] for r in rounds if "mean_q" in r]
        if qs:
            parts.append(f"{qs[0]:.2f} → {qs[-1]:.2f}")
    return ", ".join(parts) or "–"


def build_seconds(st: StoredProfile, name: str) -> str:
    value = st.summary["rows"].get(name, {}).get("build_seconds")
    return "–" if value is None else f"{value:.0f} s"


def profile_choice() -> str:
    """Each calibrated profile's ladder (the learnable ceiling and the lookahead planner against the best fixed
    rule, and how long its unsupervised episodes are), and which profile leads on each count."""
    lines = [
        "| Profile | executor turns / task (none) | learnable ceiling − best fixed rule | "
        "lookahead planner − best fixed rule | test episodes |",
        "|---|---:|---:|---:|---:|",
    ]
    turns, ceiling, commits, episodes = {}, {}, [], set()
    for folder in sorted(p for p in TESTBED.iterdir() if p.is_dir()):
        data = read_ladder(folder)
        if data is None:
            continue
        rows = {r["rung"]: r for r in data["ladder"]["rows"]}
        name = f"`sim:{folder.name}`"
        turns[name] = rows["none"]["turns_per_task"]
        ceiling[name] = rows["learnable_ceiling"]["vs_best_fixed_rule"]["mean"]
        commits += [c for c in setting_commits(data["setting"]) if c not in commits]
        episodes.add(data["run"].get("test_episodes", "–"))
        lines.append(
            f"| {name} | {turns[name]:.2f} | "
            f"{interval(rows['learnable_ceiling'].get('vs_best_fixed_rule'))} | "
            f"{interval(rows['lookahead_planner'].get('vs_best_fixed_rule'))} | "
            f"{data['run'].get('test_episodes', '–')} |"
        )
    lead = (
        f"The longest unsupervised episodes are {max(turns, key=turns.get)}'s; the learnable ceiling stands "
        f"furthest above the best fixed rule on {max(ceiling, key=ceiling.get)}. Each calibrated profile's headroom "
        "ladder ([results_testbed.md](results_testbed.md) section 7, from `docs/results/testbed/`):\n\n"
    )
    card = (
        "*Setting: each profile's ladder card in results_testbed.md section 7 (split **test**, "
        f"{', '.join(map(str, sorted(episodes, key=str)))} paired test episodes per rung; the rule and thresholds "
        f"chosen on dev, the ceiling fitted on train); commits {', '.join(f'`{c}`' for c in commits)}.*\n\n"
    )
    return lead + card + "\n".join(lines) + "\n"


def box(plan: dict[str, Any], card: dict[str, Any]) -> str:
    tasks, per = sum(card["tasks"].values()), max(card["tasks"].values())
    dev = plan["dev_limit"] * len(card["tasks"]) * plan["dev_seeds"]
    return (
        "> **What this page shows.** Whether RL steering (the paper's trainer) with the answerability reader's "
        "features beats the best fixed rule on the simulated executors `sim:loopy` and `sim:weak`, every rate knob "
        "chosen on dev for about one intervention per task: the same trainer without the reader, untrained "
        "steerers, random and (on `sim:loopy`) the dev-chosen note at one intervention per task beside it, "
        f"on {tasks} test tasks ({per} per benchmark) x {plan['seeds']} evaluation seeds x {plan['train_seeds']} "
        "training seeds; a reader row with twice the rounds.\n>\n"
        "> **What it does not show.** RL steering at the main page's budget or on the whole test split: each "
        "training run here is a small, fixed budget (the `Budget` column, against about 205k env steps on "
        f"[results.md](results.md)). Every dev choice rests on {dev} dev episodes ({plan['dev_limit']} tasks per "
        f"benchmark, {plan['dev_seeds']} seed), noise the size of the effects compared.\n"
    )


def render(root: Path = RESULTS) -> str:
    results = Results(root)
    loopy = joint(results, pair_parts("loopy_reader", "loopy_noreader"))
    weak = joint(results, pair_parts("weak_reader", "weak_noreader"))
    double = joint(
        results,
        [
            Part("loopy_reader_2x", {**{n: n for n in (*SHARED, RATE_RULE)}, RL: DOUBLE_RL}),
            Part("loopy_reader", {UNTRAINED: READER_UNTRAINED, RL: READER_RL}),
        ],
    )
    la, lb = results.stored("loopy_reader"), results.stored("loopy_noreader")
    wa, wb = results.stored("weak_reader"), results.stored("weak_noreader")
    d2 = results.stored("loopy_reader_2x")
    rl_rule = loopy.gain(READER_RL, RULE)
    met = rl_rule.low > 0
    rule_name, rule_f1, none_f1 = rule_dev(la.summary)
    wrule_name, wrule_f1, wnone_f1 = rule_dev(wa.summary)
    out = [
        "# RL steering with the answerability reader (`sim:loopy`, `sim:weak`)\n",
        box(la.summary["plan"], la.summary["card"]),
    ]
    out.append(
        "> **Criterion:** on `sim:loopy`, RL steering with the answerability reader beats the best fixed rule at "
        "the same rate (paired 95% interval above 0).\n"
        f"> **Verdict: {'met' if met else 'not met'}.** RL steering + reader − best fixed rule "
        f"**{ci(rl_rule)}** F1 ({verdict(rl_rule)} 0); without the reader {ci(loopy.gain(PLAIN_RL, RULE))}; "
        f"the reader's effect on RL {ci(loopy.gain(READER_RL, PLAIN_RL))}. Twice the rounds: "
        f"{ci(double.gain(DOUBLE_RL, RULE))} against the rule. On `sim:weak`: "
        f"{ci(weak.gain(READER_RL, RULE))} with the reader, {ci(weak.gain(PLAIN_RL, RULE))} without.\n"
    )
    out.append(
        "Rebuilt by `python -m studies.reader_rl.page` from the committed summaries in "
        "[studies/reader_rl/results/](../studies/reader_rl/results/) (the study: "
        "[studies/reader_rl](../studies/reader_rl/README.md)); measured by `python -m studies.reader_rl.run --out "
        "RUNS` (resumable). Rows, choices and intervals are the main harness's (`steer-envs compare`).\n"
    )
    out.append("## The profiles\n\n" + profile_choice())
    out.append(
        "## What was run\n\n"
        f"The reader's configuration is [`{READER_CONFIG}`](results_reader.toml): the steerer's defaults plus the "
        "answerability reader's four features (`steer_envs.reader`, lexical encoder) beside the fast and slow "
        f"paths' statistics. Every RL run trains at `{BUDGETS['base']}` (m rounds of k measured states, G "
        "continuations, N slow-path samples, a bank of tasks to draw states from); the reader row with twice the "
        f"rounds at `{BUDGETS['double']}`. Filtered BC, SB3 PPO, rate curves and the fast path's Spearman are "
        "left out (`--without filtered_bc --without sb3_ppo --no-curves --spearman-tasks 0`). "
        "A run without the reader links its "
        "reader run's `dev/`, `test/` and `checkpoints/`, so the rows both have (no supervision, random, the best "
        "fixed rule, the context row) are the same episodes. Each run's command:\n\n```bash\n"
        + "\n".join(results.stored(r.name).summary["command"] for r in RUNS)
        + "\n```\n"
    )
    out.append(
        "## `sim:loopy`\n\n"
        + loopy.card
        + "\n"
        + loopy.table()
        + "\n"
        + loopy.pairs(PAIRS)
        + f"\n**On dev** (the runs' own dev episodes, the ones every rate was matched on): no supervision "
        f"{none_f1:.1f}, the chosen rule ({rule_name}) {rule_f1:.1f}; "
        + dev_line(results, "loopy_reader", RL, READER_RL)
        + "; "
        + dev_line(results, "loopy_noreader", RL, PLAIN_RL)
        + ".\n\n**Training.** The mean measured q(s) of the states each round selected (the fast path's target, "
        f"|R̄ − b|), first round → last, per training seed: with the reader {q_line(results, 'loopy_reader')}; "
        f"without {q_line(results, 'loopy_noreader')}.\n"
    )
    out.append(
        "## Twice the rounds, reader row (`sim:loopy`)\n\n"
        f"`{BUDGETS['double']}`, on the same dev and test episodes, paired with the reader row above.\n\n"
        + double.card
        + "\n"
        + double.table()
        + "\n"
        + double.pairs(
            [
                (DOUBLE_RL, RULE),
                (DOUBLE_RL, RATE_RULE),
                (DOUBLE_RL, REFERENCE),
                (DOUBLE_RL, READER_UNTRAINED),
                (DOUBLE_RL, READER_RL),
            ]
        )
        + "\n**On dev:** "
        + dev_line(results, "loopy_reader_2x", RL, DOUBLE_RL)
        + f". **Training:** mean measured q(s) first round → last {q_line(results, 'loopy_reader_2x')}.\n"
    )
    out.append(
        "## `sim:weak`\n\n"
        + weak.card
        + "\n"
        + weak.table()
        + "\n"
        + weak.pairs(PAIRS)
        + f"\n**On dev:** no supervision {wnone_f1:.1f}, the chosen rule ({wrule_name}) {wrule_f1:.1f}; "
        + dev_line(results, "weak_reader", RL, READER_RL)
        + "; "
        + dev_line(results, "weak_noreader", RL, PLAIN_RL)
        + ".\n\n**Training:** mean measured q(s) first round → last, with the reader "
        f"{q_line(results, 'weak_reader')}; without {q_line(results, 'weak_noreader')}.\n"
    )
    lines = [
        "## Wall times\n",
        "Each run's recorded parts (choosing on dev and training, then the test evaluation), and one RL training "
        "run's mean wall time; the two runs of a profile share their reference rows, so the second run's time "
        "is its own rows only.\n",
        "| Run | machine | wall time | RL training (mean per seed) |",
        "|---|---|---:|---:|",
    ]
    for run, st in (
        ("loopy_reader", la),
        ("loopy_noreader", lb),
        ("loopy_reader_2x", d2),
        ("weak_reader", wa),
        ("weak_noreader", wb),
    ):
        machine = next((p["machine"] for p in st.summary["parts"] if p["machine"]), "–")
        lines.append(f"| `{run}` | {machine} | {seconds(st.summary) / 60:.1f} min | {build_seconds(st, RL)} |")
    out.append("\n".join(lines) + "\n")
    out.append(
        "## Reading\n\n"
        f"- The criterion is read as written: RL steering + reader − best fixed rule on `sim:loopy` is "
        f"{ci(rl_rule)}, {verdict(rl_rule)} 0. The best fixed rule ({loopy.knobs[RULE]}) is "
        f"{ci(loopy.gain(RULE, REFERENCE))} over no supervision at {loopy.rate(RULE):.2f} interventions per task.\n"
        f"- The reader's four features against none, same budget: RL {ci(loopy.gain(READER_RL, PLAIN_RL))} on "
        f"`sim:loopy`, {ci(weak.gain(READER_RL, PLAIN_RL))} on `sim:weak`; untrained "
        f"{ci(loopy.gain(READER_UNTRAINED, PLAIN_UNTRAINED))} and {ci(weak.gain(READER_UNTRAINED, PLAIN_UNTRAINED))}.\n"
        f"- Twice the rounds against the reader row at the base budget: {ci(double.gain(DOUBLE_RL, READER_RL))}.\n"
        "- The subsets are small (see the box above): intervals of several F1 either way, and dev choices made on "
        "noise of that size. The main page's budget and test split are what would settle it.\n"
    )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m studies.reader_rl.page", description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--out", type=Path, default=PAGE, help=f"the page (default {PAGE})")
    args = ap.parse_args(argv)
    args.out.write_text(render(args.results), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["PAGE", "Results", "main", "render"]
