"""Simulator profiles: the parameters of a simulated searcher, kept as data (JSON files).

A profile is a flat set of probabilities and rates plus optional per-benchmark overrides (``"benchmarks":
{"popqa": {"parametric_recall": 0.1}}``), because real agents differ by benchmark mostly in how much they know
without searching. Shipped profiles live beside this module in ``profiles/<name>.json``; ``sim:/path/file.json``
loads a user's file. Unknown or missing keys are errors that name the keys, so a typo never silently falls
back to a default.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ...errors import SteerEnvsError, unknown_name

PROFILE_DIR = Path(__file__).resolve().parent / "profiles"
DRIFT_MODES: tuple[str, ...] = ("redundant", "fixation", "side_goal", "never_answer")


@dataclass(frozen=True)
class SimProfile:
    """Behaviour parameters of the simulated searcher. All probabilities are in [0, 1]."""

    name: str
    description: str
    #: per-word probability that a query word is dropped; ``query_extra_word``: probability of one stray word
    query_noise: float
    query_extra_word: float
    #: probability that a retrieved supporting passage is recognised (which resolves the current hop)
    recognize_skill: float
    #: probability that the answer is extracted correctly from recognised evidence (else a plausible wrong span)
    extract_skill: float
    #: probability that an answer given without evidence is right anyway (the model's parametric knowledge)
    parametric_recall: float
    #: probability of answering right after a search that left the question unresolved (premature answer)
    premature_rate: float
    #: probability that an episode starts by never producing a valid action (rambling until the budget ends)
    never_answer_rate: float
    #: drift hazard per turn: propensity * (hazard_base + hazard_growth * turn)
    hazard_base: float
    hazard_growth: float
    #: per-episode drift propensity ~ 2 * Beta(alpha, beta) (mean 1 when alpha == beta)
    propensity_alpha: float
    propensity_beta: float
    #: relative weights of the drift modes that can start mid-episode
    drift_weights: dict[str, float]
    #: per-turn probability of leaving a drift unaided
    drift_recover: float
    #: probability of following an intervention whose intent was understood
    compliance: float
    #: second-look recognition skill when told to verify the evidence
    verify_skill: float
    #: turns of budget each intervention consumes (an executor re-reading its context is not free)
    intervention_turn_cost: int
    #: over-supervision: a note derails the agent with probability ``disruption * (interventions before it)``
    #: (it loses its thread, answers hastily to comply, or wanders off), so constant intervention is not free
    disruption: float
    #: probability that an agent told to verify (or rejected) while holding a *right* answer talks itself out of
    #: it: LLMs challenged with "are you sure?" flip correct answers, so a misplaced verify is not free
    second_guess: float
    #: factor on the drift hazard after a plan was accepted (SearchPlanning)
    plan_effect: float
    #: probability that "stop repeating" said to an agent that is not repeating is taken as "stop searching"
    literal_reading: float = 0.5
    #: probability that a note with no actionable meaning costs the agent its next turn (it ponders the note)
    confusion: float = 0.3
    #: probability that an agent asked to keep searching follows a lead from its latest results
    explore: float = 0.3
    #: probability that an agent holding a right answer abandons it when told to keep searching (or sent on a search):
    #: the note asserts that its evidence falls short, a stronger challenge than "verify" (``second_guess``)
    second_guess_search: float = 0.5
    #: probability that an agent told to verify, whose documents hold nothing relevant, searches on (else it answers)
    verify_searches: float = 0.3
    #: probability that a hop's query names its entity plus a few relation words instead of the whole sub-question
    entity_queries: float = 0.0
    #: recorded rollouts (trajectory sources) whose reasoning sentences the simulator speaks (see thoughts.py)
    thought_sources: tuple[str, ...] = ("search_r1_base",)
    benchmarks: dict[str, dict[str, Any]] = field(default_factory=dict)

    def for_benchmark(self, benchmark: str) -> "SimProfile":
        """This profile with the benchmark's overrides applied."""
        overrides = self.benchmarks.get(benchmark)
        return replace(self, **overrides) if overrides else self


_FIELDS = {f.name: f for f in fields(SimProfile)}
_OPTIONAL = {"benchmarks", "description", "literal_reading", "confusion", "explore", "entity_queries", "verify_searches", "second_guess_search", "thought_sources"}
_PROB_KEYS = {
    "query_noise", "query_extra_word", "recognize_skill", "extract_skill", "parametric_recall", "premature_rate",
    "never_answer_rate", "hazard_base", "hazard_growth", "drift_recover", "compliance", "verify_skill", "disruption", "second_guess",
    "literal_reading", "confusion", "explore", "entity_queries", "verify_searches", "second_guess_search",
}


def shipped_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.json"))


def _check_keys(obj: dict, where: str, allowed: set[str], required: set[str]) -> None:
    unknown = sorted(set(obj) - allowed)
    missing = sorted(required - set(obj))
    problems = []
    if unknown:
        problems.append(f"unknown key(s) {', '.join(unknown)}")
    if missing:
        problems.append(f"missing key(s) {', '.join(missing)}")
    if problems:
        raise SteerEnvsError(
            f"simulator profile {where}: {'; '.join(problems)}. Valid keys: {', '.join(sorted(allowed))} "
            f"(see {PROFILE_DIR / 'default.json'} for a complete example)"
        )


def _validate_values(obj: dict, where: str) -> None:
    for key in _PROB_KEYS & set(obj):
        value = obj[key]
        if not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
            raise SteerEnvsError(f"simulator profile {where}: {key!r} must be a probability in [0, 1], got {value!r}")
    if "drift_weights" in obj:
        weights = obj["drift_weights"]
        if not isinstance(weights, dict) or any(k not in DRIFT_MODES for k in weights):
            raise SteerEnvsError(
                f"simulator profile {where}: 'drift_weights' must map drift modes ({', '.join(DRIFT_MODES)}) to weights"
            )
    for key in ("propensity_alpha", "propensity_beta", "plan_effect"):
        if key in obj and (not isinstance(obj[key], (int, float)) or obj[key] <= 0):
            raise SteerEnvsError(f"simulator profile {where}: {key!r} must be a positive number, got {obj[key]!r}")
    if "thought_sources" in obj and (
        not isinstance(obj["thought_sources"], (list, tuple)) or not all(isinstance(x, str) for x in obj["thought_sources"])
    ):
        raise SteerEnvsError(f"simulator profile {where}: 'thought_sources' must be a list of trajectory source names "
                             f"(files in <data>/trajectories without .jsonl.gz), got {obj['thought_sources']!r}")
    if "intervention_turn_cost" in obj and (not isinstance(obj["intervention_turn_cost"], int) or obj["intervention_turn_cost"] < 0):
        raise SteerEnvsError(f"simulator profile {where}: 'intervention_turn_cost' must be a non-negative integer")


def profile_from_dict(obj: dict, where: str = "<dict>") -> SimProfile:
    """Validate and build a profile: every key known, every required key present, values in range."""
    if not isinstance(obj, dict):
        raise SteerEnvsError(f"simulator profile {where}: expected a JSON object, got {type(obj).__name__}")
    obj = dict(obj)
    obj.setdefault("name", Path(where).stem)
    obj.setdefault("description", "")
    _check_keys(obj, where, set(_FIELDS), set(_FIELDS) - _OPTIONAL)
    _validate_values(obj, where)
    overrides = obj.get("benchmarks") or {}
    if not isinstance(overrides, dict):
        raise SteerEnvsError(f"simulator profile {where}: 'benchmarks' must map benchmark names to overrides")
    if "thought_sources" in obj:
        obj["thought_sources"] = tuple(obj["thought_sources"])
    overridable = set(_FIELDS) - {"name", "description", "benchmarks", "thought_sources"}
    for bench, over in overrides.items():
        if not isinstance(over, dict):
            raise SteerEnvsError(f"simulator profile {where}: benchmarks.{bench} must be an object of overrides")
        _check_keys(over, f"{where} (benchmarks.{bench})", overridable, set())
        _validate_values(over, f"{where} (benchmarks.{bench})")
    return SimProfile(**obj)


def load_profile(arg: str) -> SimProfile:
    """``arg`` is a shipped profile name (``default``) or a path to a JSON file."""
    arg = arg.strip() or "default"
    path = Path(arg).expanduser()
    if arg.endswith(".json") or path.is_file():
        if not path.is_file():
            raise SteerEnvsError(f"simulator profile file {str(path)!r} does not exist")
        where = str(path)
    else:
        path = PROFILE_DIR / f"{arg}.json"
        if not path.is_file():
            raise unknown_name("simulator profile", arg, shipped_profiles(), hint="or give a path: sim:/path/to/profile.json")
        where = path.name
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SteerEnvsError(f"simulator profile {where} is not valid JSON: {exc}") from None
    return profile_from_dict(obj, where)
