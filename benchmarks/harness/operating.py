"""Operating points chosen on dev: set each method's rate knob so that it intervenes ~``target`` times per task.

Comparisons between supervisors are only fair at the same intervention rate (more interventions buy more F1 in
this testbed), and the rate must be chosen where nothing is reported: on the *dev* split. Each method declares
its knob (``Method.rate_knob`` in :mod:`baselines.methods`):

* ``tau``: a deployment threshold (steerers' gate; filtered BC's probability of not passing): bisection on
  ``logit(τ)``; more τ, fewer interventions; no retraining (the checkpoint is shared by every τ).
* ``p``: the random baseline's probability per decision: bisection on ``p`` in [0, 1].
* ``cost``: a training-time cost per intervention (SB3 PPO): every value is a training run, so a small grid is
  trained and the value whose dev rate is closest to the target is kept (:func:`choose_from_grid`).

Every probe is a method label evaluated in a dev run folder through the harness (so it is resumable and its
episodes stay on disk as evidence), and every choice is written to ``choices.json`` there with all its probes;
a rerun reads the choice back instead of searching again.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from baselines.registry import MethodSpec, get_method, parse_method
from steer_envs.atomic import atomic_write_json
from steer_envs.episodes import EpisodeLog
from steer_envs.errors import SteerEnvsError

from .runfolder import RunFolder
from .runner import evaluate
from .sweeps import with_option

CHOICES_FILE = "choices.json"


@dataclass(frozen=True)
class KnobScale:
    """How a knob is searched: ``to_x``/``from_x`` map its value to a line where the rate is monotone; ``rising``
    says whether the rate rises with ``x``; ``digits`` rounds probe values (labels stay readable)."""

    lo: float
    hi: float
    to_x: Callable[[float], float]
    from_x: Callable[[float], float]
    rising: bool
    digits: int = 4


def _logit(p: float) -> float:
    return math.log(p) - math.log1p(-p)


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


KNOB_SCALES: dict[str, KnobScale] = {
    "tau": KnobScale(-12.0, 12.0, _logit, _sigmoid, rising=False),
    "p": KnobScale(0.0, 1.0, lambda v: v, lambda x: x, rising=True),
}


@dataclass
class KnobChoice:
    """The value chosen on dev for one method (``base``: its label without the knob) and every probe behind it."""

    base: str
    knob: str
    value: str
    dev_rate: float
    target: float
    label: str
    probes: list[dict[str, Any]] = field(default_factory=list)
    split: str = "dev"


def without_option(spec: str, key: str) -> str:
    parsed = parse_method(spec)
    return MethodSpec(parsed.name, {k: v for k, v in parsed.given.items() if k != key}).label


def interventions_per_task(folder: RunFolder, label: str) -> float:
    records = EpisodeLog(folder.episodes_path(label)).records
    if not records:
        raise SteerEnvsError(f"{label!r} has no episodes in {folder.root}")
    return sum(r.interventions for r in records) / len(records)


def _format(value: float, digits: int) -> str:
    return f"{value:.{digits}g}"


def _load_choices(folder: RunFolder) -> dict[str, dict]:
    path = folder.root / CHOICES_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _save_choice(folder: RunFolder, choice: KnobChoice) -> KnobChoice:
    choices = _load_choices(folder)
    choices[choice.base] = asdict(choice)
    atomic_write_json(folder.root / CHOICES_FILE, choices)
    return choice


def cached_choice(folder: RunFolder, base: str) -> KnobChoice | None:
    data = _load_choices(folder).get(base)
    return KnobChoice(**data) if data else None


def _require_dev(folder: RunFolder) -> None:
    if folder.config.split != "dev":
        raise SteerEnvsError(
            f"operating points are chosen on the dev split; {folder.root} evaluates "
            f"{folder.config.split!r} (a number tuned on test is not a result)"
        )


def choose_rate(
    folder: RunFolder,
    spec: str,
    target: float = 1.0,
    tolerance: float = 0.05,
    max_probes: int = 10,
    progress: bool = False,
    log: Callable[[str], None] = print,
    pool: Any = None,
) -> KnobChoice:
    """Bisection of ``spec``'s rate knob on the dev folder until interventions/task is within ``tolerance`` of
    ``target`` (or ``max_probes`` probes); the probe closest to the target wins (ties: fewer interventions)."""
    _require_dev(folder)
    parsed = parse_method(spec)
    knob = get_method(parsed.name).rate_knob
    if knob not in KNOB_SCALES:
        raise SteerEnvsError(
            f"{parsed.name!r} has rate knob {knob!r}, which bisection cannot set "
            f"(bisection knobs: {', '.join(KNOB_SCALES)}); a cost knob uses choose_from_grid"
        )
    base = without_option(spec, knob)
    cached = cached_choice(folder, base)
    if cached is not None and cached.target == target:
        return cached
    scale = KNOB_SCALES[knob]
    lo, hi = scale.lo, scale.hi
    probes: list[dict[str, Any]] = []
    for _ in range(max_probes):
        mid = (lo + hi) / 2
        value = _format(scale.from_x(mid), scale.digits)
        if any(p["value"] == value for p in probes):
            break  # the rounding cannot split the interval further
        label = with_option(base, knob, value)
        evaluate(folder, label, progress=progress, log=log, pool=pool)
        rate = interventions_per_task(folder, label)
        probes.append({"value": value, "rate": rate, "label": label})
        log(f"[dev] {label}: {rate:.3f} interventions/task (target {target})")
        if abs(rate - target) <= tolerance:
            break
        too_many = rate > target
        if too_many == scale.rising:
            hi = mid
        else:
            lo = mid
    best = min(probes, key=lambda p: (abs(p["rate"] - target), p["rate"]))
    return _save_choice(folder, KnobChoice(base, knob, best["value"], best["rate"], target, best["label"], probes))


def choose_from_grid(
    folder: RunFolder,
    spec: str,
    values: Sequence[str],
    target: float = 1.0,
    progress: bool = False,
    log: Callable[[str], None] = print,
    pool: Any = None,
) -> KnobChoice:
    """Evaluate ``spec`` at every value of its knob on dev (each may be a training run) and keep the value whose
    interventions/task is closest to ``target`` (ties: fewer interventions)."""
    _require_dev(folder)
    parsed = parse_method(spec)
    knob = get_method(parsed.name).rate_knob
    if knob is None:
        raise SteerEnvsError(f"{parsed.name!r} has no rate knob")
    base = without_option(spec, knob)
    cached = cached_choice(folder, base)
    if cached is not None and cached.target == target and [p["value"] for p in cached.probes] == list(values):
        return cached
    probes = []
    for value in values:
        label = with_option(base, knob, value)
        evaluate(folder, label, progress=progress, log=log, pool=pool)
        rate = interventions_per_task(folder, label)
        probes.append({"value": value, "rate": rate, "label": label})
        log(f"[dev] {label}: {rate:.3f} interventions/task (target {target})")
    best = min(probes, key=lambda p: (abs(p["rate"] - target), p["rate"]))
    return _save_choice(folder, KnobChoice(base, knob, best["value"], best["rate"], target, best["label"], probes))
