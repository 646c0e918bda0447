"""Pipeline profiles: the role-level drift of the simulated five-role pipeline, kept as data (JSON files).

Each role has its own failure, the ones PAPERS.md A names for multi-agent systems: a planner's bad decomposition
(``bad_plan_rate``), a searcher's over-searching / fixation (``over_search_rate``, ``fixation_hazard``), a
reader's wrong extraction or combination (``extract_skill``), a verifier's over-rejection (``strict_rate`` of
strict verifiers that FAIL a supported claim with probability ``strict_fail``), a summarizer that ignores the
evidence (``ignore_evidence_rate``) or pads it (``verbose_rate``). How roles respond to notes is the explicit
assumption (``compliance``, ``second_guess``, ``disruption``, ``confusion``, ...), kept as profile keys so a
sensitivity sweep can vary it: no recording shows a pipeline being supervised. Shipped profiles live in ``profiles/<name>.json``; ``sim:/path/file.json`` loads a user's file.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ...errors import SteerEnvsError, unknown_name

PROFILE_DIR = Path(__file__).resolve().parent / "profiles"


@dataclass(frozen=True)
class PipelineProfile:
    """Parameters of the simulated pipeline. Probabilities are in [0, 1]."""

    name: str
    description: str = ""
    # -- planner ----------------------------------------------------------------------------------------------
    #: probability that a multi-hop question gets one undivided subtask (a bad decomposition), per plan written
    bad_plan_rate: float = 0.3
    # -- searcher ---------------------------------------------------------------------------------------------
    #: queries per search round at most (TacoMAS caps tool calls per agent turn)
    searches_per_round: int = 2
    recognize_skill: float = 0.75
    query_noise: float = 0.15
    #: per episode: a searcher fixated on its first searches, re-running them in later rounds instead of progressing
    over_search_rate: float = 0.2
    #: per search that resolves nothing: the searcher adopts a distractor as the bridge entity
    fixation_hazard: float = 0.08
    #: probability that a searcher sent back with a hint searches the hint first
    follow_hint: float = 0.5
    facts_per_message: int = 5
    # -- reader -----------------------------------------------------------------------------------------------
    extract_skill: float = 0.8
    #: an answer without evidence is right anyway (the model's parametric knowledge)
    parametric_recall: float = 0.25
    #: without evidence and without knowing, the reader says it cannot tell (instead of guessing a span)
    abstain_rate: float = 0.3
    #: told its claim is not accepted (a FAIL, a rejection), the reader drops a right answer for another span
    second_guess: float = 0.3
    # -- verifier ---------------------------------------------------------------------------------------------
    #: per episode: a strict verifier (over-rejection: it FAILs supported claims with ``strict_fail``)
    strict_rate: float = 0.3
    strict_fail: float = 0.7
    lax_fail: float = 0.08
    #: probability of FAILing a claim that no fact states
    catch_skill: float = 0.7
    #: search rounds before the verifier's verdict goes to the summarizer whatever it is (a loop cap)
    max_rounds: int = 4
    # -- summarizer -------------------------------------------------------------------------------------------
    ignore_evidence_rate: float = 0.12
    verbose_rate: float = 0.15
    #: handed a FAIL verdict (loop cap, budget end), the summarizer answers that it cannot tell
    defer_on_fail: float = 0.6
    # -- responses to supervision (swept assumptions) -----------------------------------------------------------
    compliance: float = 0.85
    verify_skill: float = 0.75
    literal_reading: float = 0.5
    confusion: float = 0.3
    #: a role derails with probability ``disruption * (interventions it received before)``
    disruption: float = 0.1
    thought_sources: tuple[str, ...] = ("search_r1_base",)
    benchmarks: dict[str, dict[str, Any]] = field(default_factory=dict)

    def for_benchmark(self, benchmark: str) -> "PipelineProfile":
        overrides = self.benchmarks.get(benchmark)
        return replace(self, **overrides) if overrides else self


_FIELDS = {f.name: f for f in fields(PipelineProfile)}
_INT_KEYS = {"searches_per_round", "facts_per_message", "max_rounds"}
_PROB_KEYS = {k for k, f in _FIELDS.items() if f.type == "float"}


def _check_keys(obj: dict, where: str, allowed: set[str]) -> None:
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise SteerEnvsError(f"pipeline profile {where}: unknown key(s) {', '.join(unknown)}. Valid keys: "
                             f"{', '.join(sorted(allowed))} (see {PROFILE_DIR / 'default.json'})")


def _validate(obj: dict, where: str) -> None:
    for key in _PROB_KEYS & set(obj):
        value = obj[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
            raise SteerEnvsError(f"pipeline profile {where}: {key!r} must be a probability in [0, 1], got {value!r}")
    for key in _INT_KEYS & set(obj):
        if isinstance(obj[key], bool) or not isinstance(obj[key], int) or obj[key] < 1:
            raise SteerEnvsError(f"pipeline profile {where}: {key!r} must be a positive integer, got {obj[key]!r}")


def profile_from_dict(obj: dict, where: str = "<dict>") -> PipelineProfile:
    """Validate and build a profile: every key known, values in range, per-benchmark overrides likewise."""
    if not isinstance(obj, dict):
        raise SteerEnvsError(f"pipeline profile {where}: expected a JSON object, got {type(obj).__name__}")
    obj = dict(obj)
    obj.setdefault("name", Path(where).stem)
    _check_keys(obj, where, set(_FIELDS))
    _validate(obj, where)
    if "thought_sources" in obj:
        obj["thought_sources"] = tuple(obj["thought_sources"])
    overridable = set(_FIELDS) - {"name", "description", "benchmarks", "thought_sources"}
    for bench, over in (obj.get("benchmarks") or {}).items():
        if not isinstance(over, dict):
            raise SteerEnvsError(f"pipeline profile {where}: benchmarks.{bench} must be an object of overrides")
        _check_keys(over, f"{where} (benchmarks.{bench})", overridable)
        _validate(over, f"{where} (benchmarks.{bench})")
    return PipelineProfile(**obj)


def shipped_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.json"))


def load_pipeline_profile(arg: str) -> PipelineProfile:
    """``arg``: a shipped profile name (``default``) or a path to a JSON file."""
    arg = arg.strip() or "default"
    path = Path(arg).expanduser()
    if arg.endswith(".json") or path.is_file():
        if not path.is_file():
            raise SteerEnvsError(f"pipeline profile file {str(path)!r} does not exist")
    else:
        path = PROFILE_DIR / f"{arg}.json"
        if not path.is_file():
            raise unknown_name("pipeline profile", arg, shipped_profiles(),
                               hint="HandoffSteering-v0 reads executor='sim:<pipeline profile>' or sim:/path/to/profile.json")
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SteerEnvsError(f"pipeline profile {path} is not valid JSON: {exc}") from None
    return profile_from_dict(obj, str(path.name if path.parent == PROFILE_DIR else path))
