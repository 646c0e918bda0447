"""Simulator profiles: the parameters of a simulated searcher, kept as data (JSON files).

A profile is a flat set of probabilities and rates plus optional per-benchmark overrides (``"benchmarks":
{"popqa": {"parametric_recall": 0.1}}``), because real agents differ by benchmark mostly in how much they know
without searching. Shipped profiles live beside this module in ``profiles/<name>.json``; ``sim:/path/file.json``
loads a user's file. Unknown or missing keys are errors that name the keys, so a typo never silently falls
back to a default.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..profiles import ProfileSchema, shipped
from ..profiles import load as _load
from ..profiles import profile_from_dict as _from_dict

PROFILE_DIR = Path(__file__).resolve().parent / "profiles"
DRIFT_MODES: tuple[str, ...] = ("redundant", "fixation", "side_goal", "never_answer")
#: every drift kind a profile may weight: the modes above, plus ``premature`` (answering before the second hop) as a
#: drift of its own, which only the ``kinds`` dynamics starts (:mod:`.kinds`; the classic searcher decides premature
#: answers per search with ``premature_rate``)
DRIFT_KINDS: tuple[str, ...] = (*DRIFT_MODES, "premature")
#: how drift plays out, by name (:data:`steer_envs.executors.sim.DYNAMICS` maps each to its searcher class):
#: ``classic`` (the calibrated profiles) or ``kinds`` (each drift kind shows a tell and has one fitting note)
DYNAMICS: tuple[str, ...] = ("classic", "kinds")


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
    #: how drift plays out (one of :data:`DYNAMICS`); the two fields below are read by ``kinds`` only
    dynamics: str = "classic"
    #: probability that a drifting turn shows its kind's tell (else it looks like a turn of an agent on track)
    tell_clarity: float = 1.0
    #: probability that a note which does not fit the state (a wrong kind, or no drift at all) sets the agent back
    misfit_cost: float = 0.0
    benchmarks: dict[str, dict[str, Any]] = field(default_factory=dict)

    def for_benchmark(self, benchmark: str) -> SimProfile:
        """This profile with the benchmark's overrides applied."""
        overrides = self.benchmarks.get(benchmark)
        return replace(self, **overrides) if overrides else self


def _check_extra(obj: dict, where: str) -> None:
    override = "(benchmarks." in where  # the schema checks a per-benchmark override under this name
    if "dynamics" in obj and (override or obj["dynamics"] not in DYNAMICS):
        raise SCHEMA.error(
            where, f"'dynamics' is set once per profile, to one of {', '.join(DYNAMICS)}; got {obj['dynamics']!r}"
        )
    if "drift_weights" in obj:
        weights = obj["drift_weights"]
        if not isinstance(weights, dict) or any(k not in DRIFT_KINDS for k in weights):
            raise SCHEMA.error(where, f"'drift_weights' must map drift modes ({', '.join(DRIFT_KINDS)}) to weights")
        if not override and weights.get("premature") and obj.get("dynamics", "classic") != "kinds":
            raise SCHEMA.error(
                where, "'drift_weights.premature' needs \"dynamics\": \"kinds\" (classic uses 'premature_rate')"
            )
        for mode, weight in weights.items():
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight < 0:
                raise SCHEMA.error(where, f"'drift_weights.{mode}' must be a non-negative number, got {weight!r}")


#: what a simulator profile is (:mod:`steer_envs.executors.profiles` loads and validates it)
SCHEMA = ProfileSchema(
    kind="simulator profile",
    cls=SimProfile,
    directory=PROFILE_DIR,
    positive=frozenset({"propensity_alpha", "propensity_beta", "plan_effect"}),
    int_minimums={"intervention_turn_cost": 0},
    extra=_check_extra,
    hint="or give a path: sim:/path/to/profile.json",
)


def shipped_profiles() -> list[str]:
    return shipped(SCHEMA)


def profile_from_dict(obj: dict, where: str = "<dict>") -> SimProfile:
    """Validate and build a profile: every key known, every required key present, values in range."""
    return _from_dict(SCHEMA, obj, where)


def load_profile(arg: str) -> SimProfile:
    """``arg`` is a shipped profile name (``default``) or a path to a JSON file."""
    return _load(SCHEMA, arg)
