"""The GPU section of ``BENCHMARKS.md``: the figures of one ``python -m perf.gpu_check`` run on a GPU machine.

Why apart from the suite's run: the page is regenerated on a CPU machine, and a GPU is lent rarely and briefly, so
the GPU run is kept as a record (:data:`GPU_RECORD`: the check's JSON with its command, commit, date and machine)
and the page renders it as its own, separately dated section. A section of the check that failed or did not finish
is listed with its reason, never left out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

GPU_RECORD = Path(__file__).resolve().parents[1] / "docs" / "results" / "perf" / "gpu_check.json"
#: the record's keys that describe the run rather than a section of it
RUN_KEYS = ("plan", "torch", "device_name", "command", "commit", "date", "machine", "notes")


def figure_rows(results: Mapping[str, Any]) -> list[tuple[str, str, Any]]:
    """(section, figure, value) for every figure of every section that produced figures."""
    rows: list[tuple[str, str, Any]] = []

    def walk(section: str, prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                if key not in ("traceback", "shape", "error"):
                    walk(section, f"{prefix}.{key}" if prefix else key, inner)
        else:
            rows.append((section, prefix, value))

    for name, value in results.items():
        if name not in RUN_KEYS:
            walk(name, "", value)
    return rows


def failed_sections(results: Mapping[str, Any]) -> dict[str, str]:
    """Each section that failed or did not finish, with the first line of its reason."""
    return {
        name: str(value["error"]).splitlines()[0]
        for name, value in results.items()
        if name not in RUN_KEYS and isinstance(value, dict) and "error" in value
    }


def gpu_section_lines(record: Mapping[str, Any]) -> list[str]:
    lines = [
        "## GPU check (its own run)",
        "",
        f"`{record['command']}` on {record['date']} at commit `{record['commit']}`: {record['machine']}. Not part "
        "of the run above. The models are random-initialised Qwen2-architecture networks at the papers' shapes "
        "(`steerer_0.5b`, `steerer_8b`: the steerer in bf16 + LoRA; `actguide`: the learner), so text quality is "
        "meaningless; shapes, memory and throughput are real. `vector`: 256 episodes in flight against a loopback "
        "server answering every request after 100 ms.",
        "",
        "| section | figure | value |",
        "| --- | --- | ---: |",
        *(f"| {section} | {figure} | {value} |" for section, figure, value in figure_rows(record)),
    ]
    lines += [f"\n{note}" for note in record.get("notes", ())]
    failed = failed_sections(record)
    if failed:
        lines += ["", "Not measured in this run: " + "; ".join(f"`{k}`: {v}" for k, v in failed.items()) + "."]
    return [*lines, ""]


def read_gpu_record(path: Path = GPU_RECORD) -> dict[str, Any] | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
