"""Pipeline profiles: the role-level drift of the simulated five-role pipeline, kept as data (JSON files).

Each role has its own failure, the forms goal drift takes in a multi-agent system (docs/methods.md): a planner's bad
decomposition (``bad_plan_rate``), a searcher's over-searching / fixation (``over_search_rate``, ``fixation_hazard``),
a reader's wrong extraction or combination (``extract_skill``), a verifier's over-rejection (``strict_rate`` of strict
verifiers that FAIL a supported claim with probability ``strict_fail``), a summarizer that ignores the evidence
(``ignore_evidence_rate``) or pads it (``verbose_rate``). How roles respond to notes is the explicit assumption
(``compliance``, ``second_guess``, ``disruption``, ``confusion``, ...), kept as profile keys so a sensitivity sweep
can vary it: no recording shows a pipeline being supervised. Shipped profiles live in ``profiles/<name>.json``;
``sim:/path/file.json`` loads a user's file.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..profiles import ProfileSchema, shipped
from ..profiles import load as _load
from ..profiles import profile_from_dict as _from_dict

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

    def for_benchmark(self, benchmark: str) -> PipelineProfile:
        overrides = self.benchmarks.get(benchmark)
        return replace(self, **overrides) if overrides else self


#: what a pipeline profile is (:mod:`steer_envs.executors.profiles` loads and validates it): every float a
#: probability, every integer positive
SCHEMA = ProfileSchema(
    kind="pipeline profile",
    cls=PipelineProfile,
    directory=PROFILE_DIR,
    hint="HandoffSteering-v0 reads executor='sim:<pipeline profile>' or sim:/path/to/profile.json",
)


def profile_from_dict(obj: dict, where: str = "<dict>") -> PipelineProfile:
    """Validate and build a profile: every key known, values in range, per-benchmark overrides likewise."""
    return _from_dict(SCHEMA, obj, where)


def shipped_profiles() -> list[str]:
    return shipped(SCHEMA)


def load_pipeline_profile(arg: str) -> PipelineProfile:
    """``arg``: a shipped profile name (``default``) or a path to a JSON file."""
    return _load(SCHEMA, arg)
