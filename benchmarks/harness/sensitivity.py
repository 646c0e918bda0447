"""Sensitivity: does the ranking of methods survive other assumptions about how executors respond to notes?

Recordings show how agents act unsupervised, never how they take guidance; so the simulator's response model
(compliance, disruption, second-guessing, ...) is an assumption (testbed rule 4, docs/architecture.md). This sweep makes
it explicit: every learned method trains once, on the base profile; then methods are evaluated, unchanged, on simulator
profiles that differ from the base in one or two response parameters, over a grid; each grid point is its own run folder
(paired within the point). The table gives each method's gain over no supervision at every point and says whether the
methods' order is the same as at the base point.

Axes are ``KEY=V1,V2,...`` with profile keys (``compliance=0.6,0.85,1.0``); ``KEY1+KEY2=x0.5,x1,x2`` scales
several keys together by a factor of their base values (``second_guess+second_guess_search=x0.5,x1,x1.5``).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from baselines.registry import parse_method
from steer_envs.errors import SteerEnvsError
from steer_envs.executors.sim.profile import load_profile, profile_from_dict

from .config import EvalConfig
from .runner import REFERENCE
from .sweeps import executor_dirname, transfer_sweep


@dataclass(frozen=True)
class Axis:
    keys: tuple[str, ...]
    values: tuple[str, ...]  # "0.6" (absolute) or "x1.5" (factor of the base value)

    @property
    def name(self) -> str:
        return "+".join(self.keys)


def parse_axis(text: str) -> Axis:
    keys, sep, values = text.partition("=")
    if not sep or not keys or not values:
        raise SteerEnvsError(f"sensitivity axis {text!r} must look like KEY=V1,V2 or KEY1+KEY2=x0.5,x1,x2")
    axis = Axis(tuple(k.strip() for k in keys.split("+")), tuple(v.strip() for v in values.split(",") if v.strip()))
    for value in axis.values:
        try:
            float(value.removeprefix("x"))
        except ValueError:
            raise SteerEnvsError(f"sensitivity axis {axis.name}: {value!r} is not a number (or xFACTOR)") from None
    return axis


def _profile_name(spec: str) -> str:
    if not spec.startswith("sim:"):
        raise SteerEnvsError(f"sensitivity varies a simulator profile; --executor must be sim:<profile>, got {spec!r}")
    return spec.partition(":")[2] or "default"


def grid_profiles(out: Path, base_spec: str, axes: Sequence[Axis]) -> list[tuple[dict[str, float], str]]:
    """Write one profile file per grid point (validated like any user profile); ``(point, executor spec)``."""
    from dataclasses import asdict

    base = asdict(load_profile(_profile_name(base_spec)))
    profiles_dir = out / "profiles"
    profiles_dir.mkdir(parents=True, exist_ok=True)
    points = []
    for combo in itertools.product(*(a.values for a in axes)):
        obj = dict(base)
        point: dict[str, float] = {}
        obj["benchmarks"] = {b: dict(o) for b, o in base.get("benchmarks", {}).items()}
        for axis, value in zip(axes, combo):
            for key in axis.keys:
                if key not in obj or isinstance(obj[key], bool) or not isinstance(obj[key], (int, float)):
                    raise SteerEnvsError(f"sensitivity axis {axis.name}: {key!r} is not a numeric profile parameter")
                obj[key] = _moved(obj[key], value)
                point[key] = round(obj[key], 6)
                for override in obj["benchmarks"].values():  # a benchmark's own value moves with the axis
                    if key in override:
                        override[key] = _moved(override[key], value)
        tag = "_".join(f"{a.name}={v}" for a, v in zip(axes, combo))
        obj["name"] = f"{base['name']}-{tag}"
        obj["description"] = f"{base['name']} with {tag} (sensitivity grid point)"
        profile_from_dict(obj, obj["name"])  # every point must be a valid profile
        path = profiles_dir / f"{executor_dirname(tag)}.json"
        path.write_text(json.dumps(obj, indent=2) + "\n", encoding="utf-8")
        points.append((point, f"sim:{path.resolve()}"))
    return points


def _moved(current: float, value: str) -> float:
    """``value`` absolute, or ``xF`` times ``current``; probabilities stay at most 1."""
    new = current * float(value[1:]) if value.startswith("x") else float(value)
    return min(new, 1.0) if isinstance(current, float) and current <= 1.0 else new


def sensitivity_sweep(
    out: str | Path, config: EvalConfig, methods: Sequence[str], axes: Sequence[Axis], progress: bool = True
) -> str:
    """Train ``methods`` on ``config.executor`` once; evaluate them at every grid point; write ``sensitivity.md``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    points = grid_profiles(out, config.executor, axes)
    transfer_sweep(
        out, config, methods, config.executor, [config.executor] + [spec for _, spec in points], progress=progress
    )
    rows = json.loads((out / "transfer.json").read_text(encoding="utf-8"))["rows"]
    base_order = _order(rows[config.executor])
    lines = [
        f"Methods trained on `{config.executor}`; each grid point changes only the listed response parameters. "
        f"Cells: F1 gain over no supervision [95% CI] (interventions/task). Order: methods by mean gain.",
        "",
        "| point | " + " | ".join(methods) + " | order | same order as base |",
        "|---|" + "---|" * (len(methods) + 2),
    ]
    for point, spec in [({"base": 0.0}, config.executor)] + points:
        cells = []
        for method in methods:
            row = rows[spec].get(parse_method(method).label)
            gain = row and row["gain"]
            cells.append(
                "–"
                if not gain
                else f"{gain['mean']:+.1f} [{gain['low']:+.1f}, {gain['high']:+.1f}] "
                f"({row['interventions_per_task']:.2f})"
            )
        order = _order(rows[spec])
        name = "base" if spec == config.executor else ", ".join(f"{k}={v:g}" for k, v in point.items())
        lines.append(
            f"| {name} | " + " | ".join(cells) + f" | {' > '.join(order)} | {'yes' if order == base_order else 'NO'} |"
        )
    held = sum(_order(rows[spec]) == base_order for _, spec in points)
    lines += ["", f"The base order holds at {held} of {len(points)} grid points."]
    text = "\n".join(lines) + "\n"
    (out / "sensitivity.md").write_text(text, encoding="utf-8")
    return text


def _order(rows: dict) -> list[str]:
    ranked = [(row["gain"]["mean"], label) for label, row in rows.items() if label != REFERENCE and row["gain"]]
    return [label for _, label in sorted(ranked, reverse=True)]
