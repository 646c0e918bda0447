"""``steer-envs report RUN_DIR``: the markdown report and PNG plots of a run folder (or a transfer sweep)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from steer_envs.atomic import atomic_write_text
from steer_envs.errors import SteerEnvsError

from . import plots
from .actions import folder_actions
from .runfolder import RunFolder, label_filename
from .runner import incomplete_notes, table_header, write_summary
from .stats import MethodSummary
from .sweeps import tau_of, tau_table
from .tables import results_table


def _tau_groups(summaries: list[MethodSummary]) -> dict[str, list[tuple[float, MethodSummary]]]:
    """Rows that differ only in τ, grouped by the rest of their label; a row without an explicit τ joins its
    group at the method's default τ. Two or more τ values make a sweep."""
    from baselines.registry import get_method

    def base(label: str) -> str:
        name, _, rest = label.partition(":")
        kept = [p for p in rest.split(",") if p and not p.startswith("tau=")]
        return name + (":" + ",".join(kept) if kept else "")

    explicit = {base(s.method) for s in summaries if tau_of(s.method) is not None}
    groups: dict[str, list[tuple[float, MethodSummary]]] = defaultdict(list)
    for s in summaries:
        key = base(s.method)
        if key not in explicit or s.avg_gain is None:
            continue
        tau = tau_of(s.method)
        if tau is None:
            default = getattr(get_method(key.split(":", 1)[0]).defaults(), "tau", None)
            tau = float("nan") if default is None else float(default)
        groups[key].append((tau, s))
    return {k: sorted(v, key=lambda x: x[0]) for k, v in groups.items() if len(v) >= 2}


def write_report(run_dir: str | Path) -> Path:
    root = Path(run_dir)
    if (root / "transfer.json").is_file() and not (root / "config.json").is_file():
        return _transfer_report(root)
    folder = RunFolder(root)
    summaries, _ = write_summary(folder)
    plot_dir = folder.plots_dir
    main_rows = [s for s in summaries if tau_of(s.method) is None]  # τ variants get their own section
    parts = [
        f"# Results: `{root.name}`\n\n",
        table_header(folder.config),
        results_table(main_rows, folder.config.benchmarks),
        incomplete_notes(folder),
    ]
    images: list[tuple[str, Path]] = []
    if main_rows:
        images.append(("F1 by method", plots.method_bars(main_rows, plot_dir / "methods.png")))
    for key, pairs in _tau_groups(summaries).items():
        taus, rows = [t for t, _ in pairs], [s for _, s in pairs]
        parts.append(f"\n## τ sweep: {key}\n\n" + tau_table(rows, taus))
        path = plots.tau_curve(rows, taus, plot_dir / f"tau_{label_filename(key)}.png")
        images.append((f"τ sweep ({key})", path))
    train_dir = root / "training"
    for log in sorted(train_dir.glob("*.jsonl")) if train_dir.is_dir() else []:
        path = plots.training_curves(
            log, plot_dir / f"training_{log.stem}.png", f"training: {log.stem.rsplit('-', 1)[0]}"
        )
        if path is not None:
            images.append((f"training curves ({log.stem.rsplit('-', 1)[0]})", path))
    parts.append("\n" + folder_actions(folder))
    if images:
        parts.append("\n## Plots\n")
        parts.extend(f"\n**{title}**\n\n![{title}](plots/{path.name})\n" for title, path in images)
    parts.append("\n## Configuration\n\n```json\n" + json.dumps(folder.config.to_json(), indent=2) + "\n```\n")
    methods = folder.methods()
    if methods:
        parts.append("\nMethods and their resolved options:\n\n```json\n" + json.dumps(methods, indent=2) + "\n```\n")
    out = root / "report.md"
    atomic_write_text(out, "".join(parts))
    return out


def _transfer_report(root: Path) -> Path:
    data = json.loads((root / "transfer.json").read_text(encoding="utf-8"))
    if not data.get("rows"):
        raise SteerEnvsError(f"{root / 'transfer.json'} has no rows; rerun `steer-envs sweep transfer --out {root}`")
    plot_dir = root / "plots"
    plot_dir.mkdir(exist_ok=True)
    path = plots.transfer_bars(data["rows"], data["methods"], plot_dir / "transfer.png")
    text = (
        f"# Transfer: trained on `{data['train_executor']}`\n\n"
        + (root / "transfer.md").read_text(encoding="utf-8")
        + f"\n![transfer](plots/{path.name})\n"
    )
    out = root / "report.md"
    atomic_write_text(out, text)
    return out
