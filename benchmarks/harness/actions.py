"""What a policy did, decision by decision: counts of each action per decision number, read from the episode
records (``EpisodeRecord.actions``). Counts of interventions per task cannot show that a learner collapsed to one
note or only ever acts on its first decision; this table does (``steer-envs report RUN --actions``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from steer_envs.episodes import EpisodeRecord, read_episode_log

from .runfolder import RunFolder, label_filename

#: free-text notes are counted together (their text is in the records)
FREE_TEXT = "note (free text)"
#: the most actions a table shows as columns; the rest are summed in one column
MAX_COLUMNS = 8


def action_kind(label: str) -> str:
    """The column an action counts in: its catalogue name, ``pass``, or :data:`FREE_TEXT`."""
    return FREE_TEXT if label.startswith("note: ") else label


def actions_table(records: Sequence[EpisodeRecord]) -> str:
    """One method's markdown table: a row per decision number (1 = the first decision after reset) and a column per
    action, the share of that decision's episodes that took it; the last row is every decision together."""
    per_turn: list[Counter[str]] = []
    for record in records:
        for turn, label in enumerate(record.actions):
            if turn == len(per_turn):
                per_turn.append(Counter())
            per_turn[turn][action_kind(label)] += 1
    if not per_turn:
        return "*No decisions recorded (episodes written without their actions, or an env that does not say).*\n"
    total = sum(per_turn, Counter())
    ranked = [name for name, _ in total.most_common()]
    shown, rest = ranked[:MAX_COLUMNS], ranked[MAX_COLUMNS:]
    head = ["Decision", "Episodes", *(f"`{name}`" for name in shown), *(["other"] if rest else [])]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---:"] * len(head)) + "|"]
    for name, counts in [*((str(i + 1), c) for i, c in enumerate(per_turn)), ("all", total)]:
        n = sum(counts.values())
        cells = [name, str(n), *(_share(counts[a], n) for a in shown)]
        cells += [_share(sum(counts[a] for a in rest), n)] if rest else []
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _share(count: int, n: int) -> str:
    return "–" if count == 0 else f"{count / n:.0%}"


def folder_actions(folder: RunFolder) -> str:
    """:func:`actions_section` of every method of a run folder, finished episodes of incomplete methods included."""
    logs = folder.root / "episodes"  # read only: a report beside a running eval must not repair its torn last line
    return actions_section(
        {label: read_episode_log(logs / f"{label_filename(label)}.jsonl") for label in folder.methods()}
    )


def actions_section(by_method: Mapping[str, Sequence[EpisodeRecord]]) -> str:
    """Every method's table under its own heading (what ``report --actions`` prints and ``report.md`` holds)."""
    parts = [
        "## What each method did\n\nShare of episodes taking each action at each decision (columns: the most "
        f"frequent actions; free-text notes counted as `{FREE_TEXT}`).\n"
    ]
    for method, records in by_method.items():
        parts.append(f"\n### `{method}` ({len(records)} episodes)\n\n" + actions_table(records))
    return "".join(parts)
