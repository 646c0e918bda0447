"""``docs/leaderboard.md``: every comparison of one protocol, one table per profile, rebuilt from compact summaries.

``steer-envs leaderboard`` reads the committed summaries (``docs/results/main``, ``docs/results/drift``) and any
summary a user's ``steer-envs compare`` wrote (``--add OUT``); a user's entry of the same protocol and setting as a
committed table joins it as extra rows, any other gets a table of its own. Each row: its status (matched in rate and
budget, at its own rate, headroom, or not matched), training seeds, measured budget, rate, average F1, the paired
intervals against no supervision and the protocol's bar (from the row's own comparison), and the field's aggregates
(:mod:`benchmarks.harness.leaderboard`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from baselines.registry import known_methods, parse_method
from steer_envs.atomic import atomic_write_text
from steer_envs.errors import SteerEnvsError
from steer_envs.paths import REPO_ROOT

from ..harness.leaderboard import (
    IQM_REPS,
    Aggregates,
    Entry,
    aggregates,
    normaliser,
    performance_profile,
    read_entry,
    score_matrices,
)
from ..harness.results_summary import SUMMARY_FILE
from ..harness.tables import display_name

#: where the committed comparisons' summaries live (one folder per profile)
SUMMARY_ROOTS = (REPO_ROOT / "docs" / "results" / "main", REPO_ROOT / "docs" / "results" / "drift")
DOC = REPO_ROOT / "docs" / "leaderboard.md"
COMMAND = "steer-envs leaderboard"


@dataclass
class Table:
    """One profile's table: its first entry gives the setting, reference and bar; later entries add rows."""

    entries: list[Entry]
    #: row name -> the entry it is read from
    rows: dict[str, Entry]


def committed_entries(roots: tuple[Path, ...], protocol: str) -> list[Entry]:
    """The summaries of ``protocol`` under ``roots`` (folders without a comparison, like the LLM section, skipped)."""
    out = []
    for root in roots:
        for path in sorted(Path(root).glob(f"*/{SUMMARY_FILE}")):
            summary = json.loads(path.read_text(encoding="utf-8"))
            comparison = isinstance(summary, dict) and {"plan", "rows", "episodes"} <= set(summary)
            if comparison and summary["plan"].get("protocol", "custom") == protocol:
                out.append(read_entry(path))  # episodes read only for the protocol's comparisons
    return out


def tables(entries: list[Entry], added: list[Entry]) -> list[Table]:
    """Committed entries first, one table each; an added entry joins the table of the same setting (its rows not
    already there) or opens its own."""
    out = [Table([e], {name: e for name in e.summary["rows"]}) for e in entries]
    for entry in added:
        same = next((t for t in out if t.entries[0].setting_key() == entry.setting_key()), None)
        if same is None:
            out.append(Table([entry], {name: entry for name in entry.summary["rows"]}))
            continue
        same.entries.append(entry)
        for name in entry.summary["rows"]:
            same.rows.setdefault(name, entry)
    return out


def _headroom(name: str) -> bool:
    """Whether the row's method reads hidden state (registry ``headroom``); a row name may be a label."""
    method = name.split(":", 1)[0]
    return any(m.name == method and m.headroom for m in known_methods())


def status(entry: Entry, name: str) -> str:
    plan, row = entry.summary["plan"], entry.summary["rows"][name]
    headroom = _headroom(name)
    context = {parse_method(spec).label for spec in plan.get("context_rows", ())}  # rows carry labels
    if headroom or name in context:
        return "headroom" if headroom else "context"
    if name in plan.get("own_rate_rows", ()):
        return "own rate"
    if name == entry.reference:
        return "reference"
    return "matched" if row.get("matched", True) and row.get("budget_matched", True) else "**not matched**"


def _interval(value: dict[str, float] | None, digits: int = 1) -> str:
    if not value:
        return "–"
    return f"{value['mean']:+.{digits}f} [{value['low']:+.{digits}f}, {value['high']:+.{digits}f}]"


def _against(entry: Entry, name: str, other: str) -> dict[str, float] | None:
    for key in ("vs_none", "vs_rule", "pairwise"):
        for pair in entry.summary.get(key) or ():
            if pair["a"] == name and pair["b"] == other:
                return pair
    return None


def image_names(found: list[Table]) -> list[str]:
    """One PNG name per table: profile and protocol, numbered when two tables share them."""
    names: list[str] = []
    for table in found:
        base = f"{table.entries[0].executor.replace(':', '_')}_{table.entries[0].protocol}"
        names.append(base + (f"_{names.count(base) + 1}" if base in names else ""))
    return names


def render_table(table: Table, doc: Path, image_name: str) -> str:
    first = table.entries[0]
    reference, bar = first.reference, first.bar
    per_entry = {id(e): score_matrices(e) for e in table.entries}  # each entry's episodes read once
    matrices: dict[str, Any] = {name: per_entry[id(entry)][name] for name, entry in table.rows.items()}
    ceiling = next((n for n in table.rows if _headroom(n)), None)
    if ceiling is None:
        raise SteerEnvsError(f"{first.source}: no headroom row (the oracle) to normalise by")
    low, high, usable = normaliser(matrices, reference, ceiling)
    normalised = {name: ((m - low) / np.where(usable, high - low, 1.0))[:, usable] for name, m in matrices.items()}
    left_out = [b for b, ok in zip(first.summary["benchmarks"], usable, strict=True) if not ok]
    aggs = aggregates(normalised, [r for r in (reference, bar) if r])
    # each row's numbers from the entry it is read from (an added entry's copy of a built-in row is not shown)
    summaries = {name: _summary_of(entry, name) for name, entry in table.rows.items()}
    order = sorted(table.rows, key=lambda n: -_number(summaries[n].get("avg_f1")))
    matched = [n for n in order if status(table.rows[n], n) == "matched"]
    star = matched[0] if matched else None  # the comparison's rule: the highest average F1 of the matched rows
    image = doc.parent / "leaderboard" / f"{image_name}.png"
    title = f"{first.executor}, protocol {first.protocol}"
    performance_profile(normalised, order, title, image)
    card = first.summary["card"]
    tasks = ", ".join(f"{b} {n}" for b, n in card["tasks"].items())
    commits = sorted({c for e in table.entries for c in e.summary["card"].get("commits", [])})
    lines = [
        f"## `{first.executor}` — protocol `{first.protocol}`\n",
        f"*Setting:* split **{card['split']}**, {sum(card['tasks'].values())} tasks ({tasks}); "
        f"{card['seeds']} evaluation seed(s) per task x {card.get('train_seeds', 1)} training seeds per learned "
        f"method; executor `{card['executor']}` (hash `{card['executor_hash']}`), max {card['max_turns']} turns; "
        f"corpus sha256 `{card['corpus_sha']}`. *Commits:* {', '.join(f'`{c}`' for c in commits)}. "
        f"*Sources:* {', '.join(_source(e) for e in table.entries)}.\n",
        f"| Method | Status | Train seeds | Budget (env steps) | Int./task | Avg F1 | Gain vs none [95% CI] | "
        f"Δ vs {display_name(bar) if bar else 'the bar'} [95% CI] | IQM [95% CI] | P(> none) | P(> bar) | Source |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name in order:
        entry = table.rows[name]
        s = summaries[name]
        row = entry.summary["rows"][name]
        agg: Aggregates = aggs[name]
        shown = f"**★ {display_name(name)}**" if name == star else display_name(name)
        lines.append(
            f"| {shown} | {status(entry, name)} | {s.get('train_seeds', '–')} | {row.get('budget') or '–'} "
            f"| {_fixed(s.get('interventions_per_task'), 2)} | {_fixed(s.get('avg_f1'), 1)} | "
            f"{_interval(s.get('avg_gain'))} | {_interval(_against(entry, name, bar), 2) if name != bar else '–'} | "
            f"{agg.iqm:.2f} [{agg.iqm_low:.2f}, {agg.iqm_high:.2f}] | {_probability(agg, reference)} | "
            f"{_probability(agg, bar)} | {_source(entry)} |"
        )
    rel = os.path.relpath(image, doc.parent)
    if left_out:
        lines += ["", f"*Left out of IQM, P(> ·) and the profile (the oracle does not score above no supervision "
                  f"there): {', '.join(left_out)}.*"]  # fmt: skip
    lines += ["", f"![Performance profile: {title}]({rel})", ""]
    return "\n".join(lines) + "\n"


def _summary_of(entry: Entry, name: str) -> dict[str, Any]:
    return next((s for s in entry.summary["summaries"] if s["method"] == name), {})


def _number(value: Any) -> float:
    """A summary's number, or -inf where nothing was scored (sorted last, shown as a dash)."""
    return float("-inf") if value is None else float(value)


def _fixed(value: Any, digits: int) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _probability(agg: Aggregates, other: str) -> str:
    value = agg.improvement.get(other)
    return "–" if value is None else f"{value:.2f}"


def _source(entry: Entry) -> str:
    folder = entry.source.parent
    if folder.is_relative_to(REPO_ROOT):
        return f"`{folder.relative_to(REPO_ROOT)}`"
    run = folder.parent.parent if folder.parent.name == "leaderboard" else folder
    return f"`{run.name}` (added)"


HEAD = """# Leaderboard

> **What this page shows.** Every contender of the `{protocol}` protocol on each profile, from the committed
> comparisons and from the entries added with `--add`: its status (matched to the protocol's rate and budget, at
> its own rate, or headroom), its measured training budget and rate, the paired 95% intervals against no
> supervision and against the protocol's bar (the best fixed rule chosen on dev), and the aggregates the deep-RL
> literature reports for few seeds (`rliable`): the interquartile mean (IQM) of the normalised score with a 95%
> stratified bootstrap interval ({reps} resamples), the probability of improvement over no supervision and over
> the bar, and a performance profile per profile.
> **What it does not show.** A row that is not matched is not a contender for any claim; the paired intervals are
> the primary test (the aggregates resample runs, not tasks). The normalised score puts no supervision at 0 and
> the profile's oracle (it reads the simulator's hidden state) at 1, per benchmark: headroom, not a bar. A run is
> one (training seed, evaluation seed) pair scored on a benchmark's tasks, so a row with one training run has one
> run per evaluation seed.

Rebuild this page from the committed summaries: `{command}`. Add your method: run
`steer-envs compare --protocol {protocol} --executor PROFILE --method YOUR_SPEC --out runs/mine`, then
`{command} --add runs/mine --doc docs/leaderboard.md` (its rows join the table of the same setting; see
`docs/extending.md`, section 4).

"""


def build(
    doc: Path = DOC,
    protocol: str = "standard",
    added: tuple[str | Path, ...] = (),
    roots: tuple[Path, ...] = SUMMARY_ROOTS,
) -> Path:
    extra = [read_entry(p) for p in added]
    wrong = [f"{e.source} ({e.protocol})" for e in extra if e.protocol != protocol]
    if wrong:
        raise SteerEnvsError(
            f"entries of another protocol than {protocol!r}: {', '.join(wrong)}; build their page with "
            f"--protocol {extra[0].protocol if len(extra) == 1 else 'NAME'}"
        )
    found = tables(committed_entries(roots, protocol), extra)
    if not found:
        raise SteerEnvsError(f"no comparison summary of protocol {protocol!r} under {', '.join(map(str, roots))}")
    text = HEAD.format(protocol=protocol, reps=IQM_REPS, command=COMMAND)
    text += "".join(render_table(t, doc, name) for t, name in zip(found, image_names(found), strict=True))
    doc.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(doc, text)
    return doc
