"""``docs/results_handoff.md``: hand-off steering on the five-role pipeline (the multi-agent variant of steering,
docs/methods.md).

The runs are made by ``python -m benchmarks.handoff_results --out OUT`` (resumable), which writes the measured
numbers to ``OUT/results_handoff.json`` (setting card, calibration, rows, paired comparisons, all computed with the
harness: :mod:`benchmarks.harness.stats`, :mod:`benchmarks.harness.setting`); this page renders that file.
``steer-envs report results_handoff --out OUT`` rebuilds it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .builder import Page, Section, read_run_json, template_section
from .tables import markdown_table

REPORT_FILE = "results_handoff.json"


def load(out: Path) -> dict[str, Any]:
    return {"report": read_run_json(out / REPORT_FILE, f"python -m benchmarks.handoff_results --out {out}")}


def command_section(report: dict[str, Any]) -> str:
    """The command that made the numbers, as the report records it (nothing when the run was made without one)."""
    command = report.get("command")
    return f"Made by one resumable command:\n\n```bash\n{command}\n```\n\n" if command else ""


def card_section(report: dict[str, Any]) -> str:
    return "Setting card: " + "; ".join(f"{k} `{v}`" for k, v in report["card"].items()) + "\n\n"


def calibration_section(report: dict[str, Any]) -> str:
    cal = report["calibration"]
    rows = [
        (
            b,
            f"{v['f1']:.1f}",
            f"{v['agent_turns']:.2f}",
            f"{100 * v['over_rejection']:.1f}%",
            f"{100 * v['no_answer']:.1f}%",
        )
        for b, v in cal["per_benchmark"].items()
    ]
    return (
        f"**Calibration** (no supervision, {cal['episodes']} episodes): F1 {cal['f1_macro']:.2f} (macro over "
        f"benchmarks), {cal['agent_turns']:.2f} agent turns per task, over-rejection (a right answer rejected by "
        f"the verifier at least once) in {100 * cal['over_rejection']:.1f}% of episodes, no answer in "
        f"{100 * cal['no_answer']:.1f}%.\n\n"
        + markdown_table(["benchmark", "F1", "agent turns", "over-rejection", "no answer"], rows, spaced=True)
        + "\nTurns per task by role: "
        + ", ".join(f"{r} {n:.2f}" for r, n in cal["turns_by_role"].items())
        + "\n\n"
    )


def _ci(d: dict[str, float] | None) -> str:
    return "—" if d is None else f"{d['mean']:+.2f} [{d['low']:+.2f}, {d['high']:+.2f}]"


def methods_section(report: dict[str, Any]) -> str:
    rows = []
    for name, row in report["rows"].items():
        seeds = f" ({row['training_seeds']} training seeds)" if row["training_seeds"] > 1 else ""
        rows.append(
            (
                f"{name}{seeds}",
                f"{row['f1']:.2f}",
                _ci(row.get("gain")),
                f"{row['agent_turns']:.2f}",
                f"{100 * row['coverage']:.1f}%",
                f"{row['interventions']:.2f}",
            )
        )
    return (
        f"## The table ({report['card']['split']} split)\n\n"
        + markdown_table(
            ["method", "F1", "ΔF1 vs none [95%]", "agent turns / task", "coverage", "interventions / task"],
            rows,
            spaced=True,
        )
        + "\n"
    )


def comparisons_section(report: dict[str, Any]) -> str:
    rows = [(name, _ci(d)) for name, d in report["comparisons"].items()]
    return "## RL steering against the other supervisors at the same coverage\n\n" + markdown_table(
        ["RL steering at the coverage vs", "ΔF1 [95%]"], rows, spaced=True
    )


SECTIONS = (card_section, calibration_section, methods_section, comparisons_section)


def render_report(report: dict[str, Any]) -> str:
    """The page body from a report dict (what ``results_handoff.json`` holds)."""
    return "".join(section(report) for section in SECTIONS)


PAGE = Page(
    name="results_handoff",
    help="hand-off steering on the five-role pipeline (HandoffSteering-v0)",
    doc="docs/results_handoff.md",
    out="runs/handoff_results",
    load=load,
    sections=(
        template_section("intro", "results_handoff_intro"),
        Section("command", lambda ctx: command_section(ctx.data["report"])),
        *(Section(f.__name__.removesuffix("_section"), lambda ctx, f=f: f(ctx.data["report"])) for f in SECTIONS),
    ),
)
