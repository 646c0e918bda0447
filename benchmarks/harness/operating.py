"""Operating points chosen on dev: set each method's rate knob so that it intervenes ~``target`` times per task.

Comparisons between supervisors are only fair at the same intervention rate (more interventions buy more F1 in
this testbed), and the rate must be chosen where nothing is reported: on the *dev* split. Each method declares
its knob (``Method.rate_knob``) and how it is searched (``Method.knob_scale``, :data:`KNOB_SCALES`):

* a *deployment* knob (a threshold or a probability; the option is marked ``deploy``, so every value shares one
  checkpoint): bisection on the scale's line (``logit``: a threshold in (0, 1); ``unit``: a probability in
  [0, 1]) until the dev rate is within the tolerance (:func:`choose_rate`);
* a *training-time* knob (a cost per intervention in the reward: every value is a training run): a grid walked
  upwards, then geometric bisection between the last two probes, frugally (:func:`choose_training_knob`).

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


#: the searches a method's ``knob_scale`` names (a training-time knob is walked on its ``log`` line by
#: :func:`choose_training_knob`, which needs no bounds)
KNOB_SCALES: dict[str, KnobScale] = {
    "logit": KnobScale(-12.0, 12.0, _logit, _sigmoid, rising=False),
    "unit": KnobScale(0.0, 1.0, lambda v: v, lambda x: x, rising=True),
    "log": KnobScale(0.0, math.inf, lambda v: v, lambda x: x, rising=False, digits=3),
}


@dataclass(frozen=True)
class Knob:
    """A method's rate knob as the harness searches it: the option, its scale, and whether a value is a training
    run (the method learns and the option is not a deployment option, so it changes the checkpoint)."""

    option: str
    scale: str
    trains: bool


def knob_of(name: str) -> Knob | None:
    """The rate knob of method ``name`` (None: it has none); a scale that is not in :data:`KNOB_SCALES` is an error
    naming the valid ones."""
    method = get_method(name)
    if method.rate_knob is None:
        return None
    trains = method.learns and method.rate_knob not in method.options_type().deploy_names()
    scale = method.knob_scale or ("log" if trains else "logit")
    if scale not in KNOB_SCALES or (trains and scale != "log"):
        valid = "log" if trains else ", ".join(k for k in KNOB_SCALES if k != "log")
        raise SteerEnvsError(
            f"method {name!r}: knob_scale {scale!r} cannot search its rate knob {method.rate_knob!r} "
            f"({'a training-time option' if trains else 'a deployment option'}); use {valid}"
        )
    return Knob(method.rate_knob, scale, trains)


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
    found = knob_of(parsed.name)
    if found is None or found.trains:
        raise SteerEnvsError(
            f"{parsed.name!r} has no deployment rate knob to bisect ({found}); a training-time knob uses "
            "choose_training_knob"
        )
    knob = found.option
    base = without_option(spec, knob)
    cached = cached_choice(folder, base)
    if cached is not None and cached.target == target:
        return cached
    scale = KNOB_SCALES[found.scale]
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


def choose_training_knob(
    folder: RunFolder,
    spec: str,
    grid: Sequence[str],
    target: float,
    tolerance: float,
    max_probes: int,
    progress: bool = False,
    log: Callable[[str], None] = print,
    pool: Any = None,
) -> KnobChoice:
    """A training-time knob (an intervention cost), chosen on dev so that ``spec`` intervenes ~``target`` times per
    task.

    Every value is a training run, so the search is frugal: ``grid`` is walked from its lowest value upwards (the
    rate falls as the cost rises) until a probe's dev rate is at or below ``target``; then the value is bisected
    between the last two probes (geometric midpoint; arithmetic from 0) until a probe is within ``tolerance`` of
    ``target`` or ``max_probes`` runs are spent. The probe closest to ``target`` is kept (ties: fewer
    interventions); every probe is recorded in the dev folder's choices.json, and a rerun reads the choice back."""
    _require_dev(folder)
    found = knob_of(parse_method(spec).name)
    if found is None or not found.trains:
        raise SteerEnvsError(f"{spec!r} has no training-time rate knob; a deployment knob uses choose_rate")
    base = without_option(spec, found.option)
    first = f"{min(float(c) for c in grid):.3g}"
    cached = cached_choice(folder, base)
    if cached is not None and cached.target == target and cached.probes and cached.probes[0]["value"] == first:
        return cached
    probes: list[dict[str, Any]] = []

    def probe(value: float) -> dict[str, Any]:
        text = f"{value:.3g}"
        label = with_option(base, found.option, text)
        evaluate(folder, label, progress=progress, log=log, pool=pool)
        pr = {"value": text, "rate": interventions_per_task(folder, label), "label": label}
        probes.append(pr)
        log(f"[dev] {label}: {pr['rate']:.3f} interventions/task (target {target})")
        return pr

    def close(pr: dict[str, Any]) -> bool:
        return abs(pr["rate"] - target) <= tolerance

    below = above = None
    for value in sorted(float(c) for c in grid):
        if len(probes) >= max_probes:
            break
        pr = probe(value)
        if close(pr):
            break
        if pr["rate"] > target:
            above = pr
        else:
            below = pr
            break
    while above is not None and below is not None and len(probes) < max_probes and not close(probes[-1]):
        lo, hi = float(above["value"]), float(below["value"])
        mid = math.sqrt(lo * hi) if lo > 0 else hi / 2
        if f"{mid:.3g}" in (above["value"], below["value"]):
            break
        pr = probe(mid)
        if pr["rate"] > target:
            above = pr
        else:
            below = pr
    best = min(probes, key=lambda pr: (abs(pr["rate"] - target), pr["rate"]))
    return _save_choice(
        folder, KnobChoice(base, found.option, best["value"], best["rate"], target, best["label"], probes)
    )
