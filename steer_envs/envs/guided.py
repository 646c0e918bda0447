"""GuidedSearch-v0: the search agent itself is the learner, optionally guided by a reference plan.

The agent answers a real question on the real corpus with the real retriever, in the Search-R1 text protocol: each
step it searches (the top ``topk`` passages come back as an ``<information>`` block) or answers (the episode ends
and the reward is the answer's score, exact match by default). What ACTGUIDE-RL shows a learner whose own rollouts
fail is the first ``k`` actions of a reference plan (:mod:`steer_envs.reference_plans`):

* ``plan_mode="prompt"``: the actions are written into the prompt as a numbered plan (the hint);
* ``plan_mode="prefix"``: the reference *searches* among them are executed before the agent's first step, and
  the agent continues from there (a reference answer is never executed: the agent must answer itself).

The plan's options are named ``plan_*`` (``plan_k``, ``plan_mode``, ``plan_sources``, ``plan_noise``,
``plan_noise_seed``, ``plan_answers``). The options every search-task env shares (tasks, retriever, turn budget,
action mode, metric, render mode) are :class:`~.base.SearchTaskConfig`'s, defined once there.

``info["unguided_observation"]`` is the observation of the same state without the hint, so a learner can score an
action under both the guided and the unguided prompt (the ``r_mix`` ratio of ACTGUIDE-RL). In prefix mode the two
are equal: an executed search looks the same whoever chose it.

Action modes: ``text`` (any string in the protocol, for LLM policies) or ``discrete`` (an index into the admissible
set of :mod:`steer_envs.envs.admissible`: candidate queries and answers built from the question and the retrieved
documents, with a feature matrix per candidate for CPU policies; ``action_mask`` marks the filled slots, and an
empty slot counts as an invalid action; it is a ``MultiBinary`` space, the shape action-masking learners expect).
The env is forkable (``get_state`` / ``set_state`` / ``fork``).

**Context limits.** Here the agent is the learner, and its model lives outside the env. A learner whose prompt
(``prompt + transcript``) outgrew its model's context calls :meth:`GuidedSearchEnv.truncate_for_context` instead of
acting (``steer_envs.episodes.play_episode`` does it when the policy raises
:class:`~steer_envs.llm.base.ContextOverflowError`): the episode ends truncated and scored as one without an answer
(``info["truncation"] = "context"``, no ``failure``), the same outcome an executor's overflow gives in the
supervision envs, kept in every mean.

What it shares with the supervision envs (task loading and picking, the reset order of RNG draws, scoring,
failures as truncations, render, forking with the RNG's seed, close) lives in their common base,
:class:`~steer_envs.envs.task_env.SearchTaskEnv`; this module holds what is its own: the reference plan, the
search/answer protocol, the admissible set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from gymnasium import spaces

from ..data.records import Task
from ..data.tasks import load_tasks
from ..errors import InvalidActionError, ServiceError, SteerEnvsError, unknown_name
from ..executors.prompts import get_prompt_template
from ..executors.protocol import INVALID_ACTION_REPLY, parse_action, render_answer, render_information, render_search
from ..failures import CONTEXT_TRUNCATION, failure_source
from ..reference_plans.hint import format_plan_hint
from ..reference_plans.noise import inject_noise
from ..reference_plans.records import ANSWER, SEARCH, PlanAction, ReferencePlan
from ..reference_plans.store import SOURCE_KINDS, ReferencePlans, load_reference_plans
from ..retrieval.base import Retriever
from ..retrieval.cache import cached_search, search_key
from ..retrieval.registry import make_retriever
from ..task_families import TaskFamily, get_task_family
from .admissible import FEATURE_NAMES, HINT_COLUMNS, Candidate, RetrievedDoc, build_candidates, candidate_features
from .base import SearchTaskConfig, UnknownOptionError, option
from .spaces import AnyText, discrete_index
from .task_env import SearchTaskEnv

PLAN_MODES = ("prompt", "prefix")
#: the keys ``reset(options=...)`` takes (anything else is an error, so a misspelt key never passes unnoticed)
RESET_OPTIONS = ("task_id", "plan_k", "plan_mode", "reference")
MAX_PROMPT_CHARS = 8000
MAX_TRANSCRIPT_CHARS = 1 << 16


@dataclass(frozen=True)
class GuidedSearchConfig(SearchTaskConfig):
    """GuidedSearch-v0's options: :class:`~.base.SearchTaskConfig`'s (with this env's own defaults: 6 turns, exact
    match), the reference plan's and the admissible set's. Stored on the env so forks and unpickling rebuild the
    same env."""

    max_turns: int = SearchTaskConfig.redefault("max_turns", 6)
    action_mode: str = option(
        "discrete", "`discrete` (index into the admissible set) or `text` (any string in the protocol)"
    )
    metric: str = SearchTaskConfig.redefault("metric", "em")
    plan_k: int = option(0, "reference-plan actions given as a hint (0: none)")
    plan_mode: str = option(
        "prompt", "`prompt` (the plan as a hint in the prompt) or `prefix` (the plan's searches executed first)"
    )
    plan_sources: tuple[str, ...] = option(
        SOURCE_KINDS, "where reference plans may come from (recorded rollouts, gold structure)"
    )
    plan_noise: float = option(0.0, "share of reference-plan actions replaced by noise")
    plan_noise_seed: int = option(0, "seed of that noise")
    max_queries: int = option(8, "discrete mode: candidate query slots")
    max_answers: int = option(24, "discrete mode: candidate answer slots")
    prompt_template: str = option("search-r1", "the task prompt's template")
    plan_answers: bool = option(True, "whether the plan's answer may be part of the hint")
    task_family: str | None = option(
        None,
        "a synthetic task family added to the split's tasks, with its own documents and reference plans "
        "(`skill_chain`: docs/envs/skill_chain.md); None: the real benchmarks only",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.plan_mode not in PLAN_MODES:
            raise unknown_name("plan_mode", self.plan_mode, PLAN_MODES)
        if not isinstance(self.plan_k, int) or self.plan_k < 0:
            raise SteerEnvsError(f"plan_k must be an integer >= 0 (0 = no plan shown), got {self.plan_k!r}")
        if self.max_queries < 1 or self.max_answers < 1:
            raise SteerEnvsError("max_queries and max_answers must be >= 1 (the admissible set needs both kinds)")
        if not 0.0 <= self.plan_noise <= 1.0:
            raise SteerEnvsError(f"plan_noise is a share of actions in [0, 1], got {self.plan_noise!r}")
        get_prompt_template(self.prompt_template)
        if self.task_family is not None:
            get_task_family(self.task_family)  # an unknown name fails here, listing the registered ones
        sources = (self.plan_sources,) if isinstance(self.plan_sources, str) else self.plan_sources
        object.__setattr__(self, "plan_sources", tuple(sources))
        object.__setattr__(self, "plan_noise", float(self.plan_noise))
        object.__setattr__(self, "plan_noise_seed", int(self.plan_noise_seed))
        object.__setattr__(self, "plan_answers", bool(self.plan_answers))

    @property
    def slots(self) -> int:
        return self.max_queries + self.max_answers


@dataclass
class EpisodeState:
    """Everything that changes during an episode (copied by ``get_state`` and forks)."""

    task: Task
    reference: ReferencePlan | None
    k: int
    mode: str
    shuffle_seed: int
    transcript: str = ""
    searched: list[str] = field(default_factory=list)
    docs: list[RetrievedDoc] = field(default_factory=list)
    taken: list[PlanAction] = field(default_factory=list)  # the agent's own actions (not the prefix)
    turns: int = 0  # every action in the transcript, prefix included
    prefix_executed: int = 0
    answer: str | None = None
    done: bool = False
    env_steps: int = 0  # searches/answers the env carried out since reset (prefix included): the probe cost unit
    #: a retrieval service that failed after its retries ends the episode as truncated (``steer_envs.failures``)
    failure: str | None = None
    failure_source: str | None = None
    failure_reported: bool = False
    #: ``"context"`` when the learner's prompt outgrew its model's context (a scored truncation, not a failure)
    truncation: str | None = None
    truncation_detail: str | None = None

    def copy(self) -> EpisodeState:
        """An independent copy (lists copied; the task, reference and documents are immutable and shared)."""
        return EpisodeState(
            self.task,
            self.reference,
            self.k,
            self.mode,
            self.shuffle_seed,
            self.transcript,
            list(self.searched),
            list(self.docs),
            list(self.taken),
            self.turns,
            self.prefix_executed,
            self.answer,
            self.done,
            self.env_steps,
            self.failure,
            self.failure_source,
            self.failure_reported,
            self.truncation,
            self.truncation_detail,
        )

    @property
    def failure_pending(self) -> bool:
        """A service failed and no step has reported it yet."""
        return self.failure_source is not None and not self.failure_reported


class GuidedSearchEnv(SearchTaskEnv):
    _transient = ("_tasks", "_retriever", "_candidates")

    # -- documentation read by the env cards (``steer-envs cards``, docs/envs/) ---------------------------------
    reward_doc = (
        "Terminal: the score of the agent's answer against the golden answers under `metric` (exact match "
        "by default; 0 when it never answers within `max_turns`). Every other step gives 0. A reference "
        "plan changes what the agent sees, never the reward."
    )
    observation_docs: dict[str, str] = {
        "prompt": "the task prompt; with `plan_mode='prompt'` and `plan_k > 0`, the hint (the first k "
        "reference-plan actions as a numbered plan) is written into it",
        "transcript": "the episode so far in the Search-R1 protocol (searches, `<information>` blocks, invalid-action "
        "replies), including executed reference searches in prefix mode",
        "turn": "agent turns taken so far",
        "candidates": "discrete mode: the admissible actions (candidate queries and answers), one per numbered line",
        "features": "discrete mode: a feature row per candidate slot (for CPU policies)",
        "action_mask": "discrete mode: 1 for the filled candidate slots; an empty slot counts as an invalid action",
    }
    info_docs: dict[str, str] = {
        "task_id": "the task's id",
        "benchmark": "the task's benchmark",
        "plan_k": "how many reference-plan actions guide this episode",
        "plan_mode": "`prompt` (hint in the prompt) or `prefix` (the plan's searches executed first)",
        "reference_length": "length of the episode's reference plan (0 without one)",
        "reference_source": "where the reference came from (a recorded rollout, or the gold structure)",
        "prefix_executed": "reference actions consumed as a prefix so far",
        "turns": "agent turns taken",
        "searches": "searches made",
        "env_steps": "env steps taken (prefix searches included)",
        "unguided_observation": "the observation of the same state without the hint (ACTGUIDE-RL's r_mix)",
        "answer": "the agent's answer (final step)",
        "f1": "token F1 of the answer (final step)",
        "em": "exact match of the answer (final step)",
        "score": "the reward metric's value (final step)",
        "failure": "the message, when the retriever failed after its retries (final step, only when it happened)",
        "failure_source": "what failed (`retrieval`, ...): the episode is then truncated (terminated=False) with "
        "reward 0, a failure and not an outcome (final step, only when it happened)",
        "truncation": "`context` when the agent's prompt outgrew its model's context (`truncate_for_context`): the "
        "episode is truncated (terminated=False) and scored as one without an answer, no `failure`: "
        "an outcome kept in every mean (final step, only when it happened)",
        "truncation_detail": "the model's message about the overflow (final step, with `truncation`)",
    }
    #: the options (``gymnasium.make`` keywords) and their defaults, types and docs
    config_class: type[GuidedSearchConfig] = GuidedSearchConfig
    option_docs: dict[str, str] = GuidedSearchConfig.option_docs()
    config: GuidedSearchConfig

    def __init__(self, **options: Any) -> None:
        """``options``: the fields of :attr:`config_class` (:class:`GuidedSearchConfig`), by keyword; an unknown one
        is an :class:`~.base.UnknownOptionError` naming the valid ones."""
        config = self.config_class.from_options(type(self).__name__, **options)
        self._check_common_options(config.action_mode, config.max_turns, config.render_mode, config.metric)
        self.config = config
        self.render_mode = config.render_mode
        self._tasks: list[Task] | None = None
        if not self.tasks:
            raise SteerEnvsError(
                f"no tasks with a reference plan match benchmarks={config.benchmarks!r} split={config.split!r} "
                f"task_ids={config.task_ids!r} (sources {list(config.plan_sources)}); "
                "`steer-envs reference-plans coverage` lists them"
            )
        self._retriever: Retriever | None = None
        self.template = get_prompt_template(config.prompt_template)
        n, f = config.slots, len(FEATURE_NAMES)
        obs: dict[str, spaces.Space] = {
            "prompt": AnyText(MAX_PROMPT_CHARS),
            "transcript": AnyText(MAX_TRANSCRIPT_CHARS),
            "turn": spaces.Discrete(config.max_turns + 1),
        }
        if config.action_mode == "discrete":
            obs["candidates"] = AnyText(MAX_TRANSCRIPT_CHARS)
            obs["features"] = spaces.Box(-1.0, 1.0, shape=(n, f), dtype=np.float32)
            obs["action_mask"] = spaces.MultiBinary(n)  # int8, as the observation's mask
        self.observation_space = spaces.Dict(obs)
        self.action_space = spaces.Discrete(n) if config.action_mode == "discrete" else AnyText(MAX_TRANSCRIPT_CHARS)
        self.state: EpisodeState | None = None
        self._candidates: list[Candidate] | None = None

    # -- data (reloaded after unpickling instead of being copied) ---------------------------------------------
    @property
    def reference_plans(self) -> ReferencePlans:
        """The reference plans of this env's tasks and sources (loaded once per process)."""
        c = self.config
        family = self.family
        benchmarks = c.benchmarks
        if family is not None and benchmarks is not None:
            benchmarks = tuple(b for b in benchmarks if b != family.benchmark) or None
        return load_reference_plans(benchmarks, c.split, c.data_dir, sources=c.plan_sources)

    @property
    def family(self) -> TaskFamily | None:
        """The synthetic task family of ``task_family`` (its tasks join the split's), or None."""
        return get_task_family(self.config.task_family) if self.config.task_family is not None else None

    def _load_tasks(self) -> list[Task]:
        """The tasks with a reference plan (from the allowed sources), then the family's tasks of the split (those
        of ``task_ids`` among them when ids are given; none when ``benchmarks`` leaves the family's name out)."""
        c, family = self.config, self.family
        ids, benchmarks = c.task_ids, c.benchmarks
        family_tasks: list[Task] = []
        if family is not None:
            if benchmarks is None or family.benchmark in benchmarks:
                family_tasks = [t for t in family.tasks(c.split) if ids is None or t.id in set(ids)]
            if "gold" not in c.plan_sources:
                family_tasks = []  # the family's plans are its gold structure
            ids = None if ids is None else tuple(i for i in ids if not family.owns(i))
            benchmarks = None if benchmarks is None else tuple(b for b in benchmarks if b != family.benchmark)
            if (ids is not None and not ids) or (benchmarks is not None and not benchmarks):
                return family_tasks
        tasks = load_tasks(benchmarks, c.split, c.data_dir, ids=ids)
        data = self.reference_plans
        return [t for t in tasks if data.reference(t.id, c.plan_sources) is not None] + family_tasks

    def _task_hint(self) -> str:
        return "; only tasks with a reference plan are included"

    @property
    def retriever(self) -> Retriever:
        if self._retriever is None:
            self._retriever = make_retriever(self.config.retriever, data_dir=self.config.data_dir)
        return self._retriever

    def reference_for(self, task_id: str) -> ReferencePlan | None:
        """The task's reference plan with this env's source preference and noise; without its answer actions
        when ``plan_answers=False`` (the hint then shows the searches only, like tool-call trajectories)."""
        c, family = self.config, self.family
        if family is not None and family.owns(task_id):
            seq = family.reference(task_id) if "gold" in c.plan_sources else None
            if seq is not None:
                seq = inject_noise(seq, c.plan_noise, c.plan_noise_seed, family.distractors(task_id))
        else:
            seq = self.reference_plans.reference(task_id, c.plan_sources, c.plan_noise, c.plan_noise_seed)
        if seq is None or c.plan_answers:
            return seq
        searches = tuple(a for a in seq.actions if a.name == SEARCH)
        return ReferencePlan(seq.task_id, searches, seq.source) if searches else None

    # -- gymnasium API (SearchTaskEnv: reset picks the task, draws the episode seed, then _begin) -------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Options: ``task_id``; ``plan_k`` and ``plan_mode`` (this episode only); ``reference`` (a
        :class:`ReferencePlan` to guide with instead of the task's own, e.g. a noisy or foreign one)."""
        return super().reset(seed=seed, options=options)

    def _begin(self, task: Task, episode_seed: int, options: dict[str, Any]) -> None:
        unknown = sorted(set(options) - set(RESET_OPTIONS))
        if unknown:
            raise UnknownOptionError(
                f"GuidedSearchEnv.reset has no option {', '.join(map(repr, unknown))}; its "
                f"options: {', '.join(RESET_OPTIONS)}"
            )
        k = options.get("plan_k", self.config.plan_k)
        mode = options.get("plan_mode", self.config.plan_mode)
        if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 0:
            raise SteerEnvsError(f"options['plan_k'] must be an integer >= 0, got {k!r}")
        if mode not in PLAN_MODES:
            raise unknown_name("plan_mode", mode, PLAN_MODES)
        reference = options.get("reference") or self.reference_for(task.id)
        if reference is not None and not isinstance(reference, ReferencePlan):
            raise SteerEnvsError(f"options['reference'] must be a ReferencePlan, got {type(reference).__name__}")
        k = min(int(k), len(reference)) if reference is not None else 0
        self.state = EpisodeState(task, reference, k, mode, episode_seed)  # the episode seed shuffles the slots
        self._candidates = None
        if mode == "prefix" and k > 0:
            self.advance_prefix(k)

    def advance_prefix(self, n: int = 1) -> int:
        """Execute the next ``n`` reference searches of the episode's reference as a prefix (prefix mode, or a
        probe that builds the states after 1..L reference actions once and forks from them). Reference answers are
        skipped. Returns how many searches ran."""
        s = self._require_state()
        if s.reference is None:
            return 0
        ran = 0
        while ran < n and s.prefix_executed < len(s.reference) and not s.done and s.turns < self.config.max_turns:
            action = s.reference.actions[s.prefix_executed]
            s.prefix_executed += 1
            if action.name == SEARCH:
                self._search(action.text)
                s.env_steps += 1
                ran += 1
                if s.failure is not None:
                    break
        self._candidates = None
        return ran

    def _step(self, action):
        s = self._require_state()
        if s.done and not s.failure_pending:
            raise SteerEnvsError("the episode has ended; call reset() to start another")
        if s.failure_pending:  # the retriever failed before this step (a prefix search at reset)
            return self._truncate()
        kind, text = self._decode(action)
        # text mode keeps the policy's own words in the transcript (it reads them next turn); discrete mode writes
        # the protocol's canonical segment
        written = action if self.config.action_mode == "text" else None
        s.env_steps += 1
        if kind == SEARCH and text.strip():
            s.taken.append(PlanAction.search(text))
            self._search(text, written)
        elif kind == ANSWER and text.strip():
            s.taken.append(PlanAction.answer(text))
            s.transcript += written if written is not None else render_answer(text)
            s.turns += 1
            s.answer = text
            s.done = True
        else:
            s.transcript += (written if written is not None else text) + INVALID_ACTION_REPLY
            s.turns += 1
        if s.turns >= self.config.max_turns:
            s.done = True
        self._candidates = None
        if s.failure_pending:
            return self._truncate()
        reward = self.score() if s.done else 0.0
        return self._observation(), float(reward), s.done, False, self._info(final=s.done)

    def _report_failure(self) -> None:
        self._require_state().failure_reported = True

    def truncate_for_context(self, detail: str = ""):
        """End the episode because the agent's prompt outgrew its model's context, instead of a step: returns the
        step tuple of a scored truncation (reward and scores of an episode without an answer, ``truncated=True``,
        ``info["truncation"] = "context"`` and ``detail`` in ``info["truncation_detail"]``). Why not a failure: see
        the module docstring."""
        s = self._require_state()
        if s.done:
            raise SteerEnvsError("the episode has ended; call reset() to start another")
        s.truncation, s.truncation_detail, s.done = CONTEXT_TRUNCATION, str(detail), True
        self._candidates = None
        result = self._truncate_context()
        self._render_human()
        return result

    def _no_answer_score(self) -> float:
        return float(self.metric_fn(None, self._require_state().task.golden_answers))

    def score(self) -> float:
        s = self._require_state()
        return float(self.metric_fn(s.answer, s.task.golden_answers))

    def _has_episode(self) -> bool:
        return self.state is not None

    def _render_text(self) -> str:
        obs = self._observation()
        return obs["prompt"] + obs["transcript"]

    def _release_backends(self) -> None:
        """The retriever reference (the instance is shared per process: ``make_retriever``) and the candidates."""
        self._retriever = None
        self._candidates = None

    # -- internals -----------------------------------------------------------------------------------------------
    def _require_state(self) -> EpisodeState:
        if self.state is None:
            raise SteerEnvsError("call reset() before step()")
        return self.state

    def _search(self, query: str, written: str | None = None) -> None:
        """Run one search and append the segment (``written``, else the canonical one) and its results."""
        s = self._require_state()
        family = self.family
        if family is not None and family.owns(s.task.id):  # a family's tasks search the family's own documents
            retriever, key = family.retriever(), family.retriever_key
        else:
            retriever, key = self.retriever, search_key(self.config.retriever, self.config.data_dir)
        try:
            hits = cached_search(retriever, key, query, self.config.topk)
        except ServiceError as exc:  # failed after its retries: the episode stops here, truncated
            s.failure = f"retrieval failed for query {query!r}: {exc}"
            s.failure_source = failure_source(exc)
            s.transcript += written if written is not None else render_search(query)
            s.turns += 1
            s.done = True
            return
        block = len(s.searched)
        s.searched.append(query)
        s.docs.extend(RetrievedDoc(block, rank, h.title, h.text) for rank, h in enumerate(hits, 1))
        s.transcript += (written if written is not None else render_search(query)) + render_information(list(hits))
        s.turns += 1

    def _decode(self, action) -> tuple[str, str]:
        """(kind, text): kind ``search`` / ``answer`` / ``invalid`` (text = the segment written)."""
        if self.config.action_mode == "discrete":
            index = discrete_index(action, self.config.slots, "the admissible set (use action_mode='text' for strings)")
            candidates = self.candidates
            if index >= len(candidates):
                return "invalid", "<think> </think>"  # an empty slot: the protocol's invalid action
            c = candidates[index]
            return c.kind, c.text
        if not isinstance(action, str):
            raise InvalidActionError(
                f"text action must be a str in the Search-R1 protocol (<search> q </search> or <answer> a </answer>), "
                f"got {type(action).__name__}; use action_mode='discrete' for integer actions"
            )
        parsed = parse_action(action)
        if parsed.kind == "search" and (parsed.query or "").strip():
            return SEARCH, parsed.query or ""
        if parsed.kind == "answer" and (parsed.answer or "").strip():
            return ANSWER, parsed.answer or ""
        return "invalid", action

    @property
    def candidates(self) -> list[Candidate]:
        """The admissible set of the current state, in slot order (discrete mode)."""
        s = self._require_state()
        if self._candidates is None:
            c = self.config
            self._candidates = build_candidates(
                s.task.question, s.searched, s.docs, c.max_queries, c.max_answers, s.shuffle_seed + 7919 * s.turns
            )
        return self._candidates

    @property
    def hint_actions(self) -> tuple[PlanAction, ...]:
        """The actions shown as a hint (prompt mode), or ``()``."""
        s = self._require_state()
        if s.mode != "prompt" or s.reference is None or s.k <= 0:
            return ()
        return s.reference.prefix(s.k)

    def prompt(self, guided: bool = True) -> str:
        s = self._require_state()
        text = self.template.render(s.task.question)
        hint = format_plan_hint(self.hint_actions, len(self.hint_actions)) if guided else ""
        return (text + hint + "\n")[:MAX_PROMPT_CHARS] if hint else text[:MAX_PROMPT_CHARS]

    def _observation(self, guided: bool = True) -> dict[str, Any]:
        s = self._require_state()
        obs: dict[str, Any] = {
            "prompt": self.prompt(guided),
            "transcript": s.transcript[-MAX_TRANSCRIPT_CHARS:],
            "turn": np.int64(min(s.turns, self.config.max_turns)),
        }
        if self.config.action_mode == "discrete":
            cands = self.candidates
            n = self.config.slots
            feats = np.zeros((n, len(FEATURE_NAMES)), dtype=np.float32)
            if cands and not s.done:
                feats[: len(cands)] = candidate_features(
                    cands,
                    s.task.question,
                    s.turns,
                    len(s.searched),
                    self.config.max_turns - s.turns,
                    self.hint_actions if guided else (),
                    s.taken,
                )
            mask = np.zeros(n, dtype=np.int8)
            mask[: len(cands)] = 0 if s.done else 1
            obs["candidates"] = "\n".join(f"{i}. {c.render()}" for i, c in enumerate(cands))[-MAX_TRANSCRIPT_CHARS:]
            obs["features"] = feats
            obs["action_mask"] = mask
        return obs

    def unguided_observation(self) -> dict[str, Any]:
        """The observation of the current state without the hint (equal to the observation without guidance)."""
        return self._observation(guided=False)

    def _info(self, final: bool) -> dict[str, Any]:
        s = self._require_state()
        guided = bool(self.hint_actions)
        info: dict[str, Any] = {
            "task_id": s.task.id,
            "benchmark": s.task.benchmark,
            "plan_k": s.k,
            "plan_mode": s.mode,
            "reference_length": len(s.reference) if s.reference is not None else 0,
            "reference_source": s.reference.source if s.reference is not None else "",
            "prefix_executed": s.prefix_executed,
            "turns": s.turns,
            "searches": len(s.searched),
            "env_steps": s.env_steps,
            "unguided_observation": self.unguided_observation() if guided else self._observation(),
        }
        if final:
            info["answer"] = s.answer
            info.update({name: float(value) for name, value in self._scores(s.answer, s.task.golden_answers).items()})
            if s.failure is not None:
                info["failure"] = s.failure
                info["failure_source"] = s.failure_source
            if s.truncation is not None:
                info["truncation"] = s.truncation
                info["truncation_detail"] = s.truncation_detail or ""
        return info

    # -- forking (GEM-style get_state / set_state / fork: SearchTaskEnv; the episode's part here) ----------------
    def _episode_state(self) -> dict[str, Any]:
        """The episode (the env's RNG and its seed are added by ``get_state``)."""
        return {"episode": self._require_state().copy()}

    def _restore_episode(self, state: dict[str, Any]) -> None:
        self.state = state["episode"].copy()
        self._candidates = None

    def _fork_episode(self, clone: GuidedSearchEnv, seed: int | None) -> None:
        """The clone copies the episode; the retriever and data are shared, read-only. With ``seed`` the env's own
        RNG (task choice at the next reset) is re-seeded (``fork``)."""
        clone.state = self.state.copy() if self.state is not None else None
        clone._candidates = None


__all__ = ["PLAN_MODES", "RESET_OPTIONS", "GuidedSearchConfig", "GuidedSearchEnv", "EpisodeState", "HINT_COLUMNS"]
