"""HandoffSteering-v0: the steerer supervises every hand-off of the five-role pipeline.

The pipeline (:mod:`steer_envs.executors.pipeline`) runs planner -> searcher -> reader -> verifier -> summarizer;
each role's message to the next is a decision point. Observation: the goal, the current hand-off (``sender``,
``receiver``, ``message``), a bounded ``history`` of earlier hand-offs, and ``transcript`` (history and current
hand-off as one text, the view text-reading steerers share with the other envs), with the agent-turn and
intervention counters. Actions: pass; a note attached to the hand-off for its receiver; a rejection that sends the
message back to its sender with feedback. Discrete mode indexes :data:`~.catalogue.HANDOFF`; in text mode
``"pass"`` passes, ``"Reject: <feedback>"`` rejects, any other string is a note. Reward: the final answer's score
(F1 by default) minus ``intervention_cost`` per intervention. ``info`` counts agent turns in total and per role.

``max_turns`` is the pipeline's agent-turn budget (default 30). ``roles`` puts language models into single roles,
e.g. ``gymnasium.make("steer_envs/HandoffSteering-v0", roles={"verifier": "hf:gemma-3-270m"})``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from ..errors import SteerEnvsError
from ..executors.base import ExecutorContext
from ..executors.pipeline import RECEIVERS, ROLES, Handoff, Pipeline, make_pipeline
from .base import MAX_GOAL_CHARS, EnvConfig, SearchEnv, option
from .catalogue import InterventionTemplate
from .spaces import AnyText

MAX_MESSAGE_CHARS = 4000
REJECT_PREFIX = "reject:"


def split_rejection(text: str) -> tuple[bool, str]:
    """(is a rejection, its feedback) of a text action: ``"Reject: <feedback>"`` rejects."""
    head = text.lstrip()
    if head.lower().startswith(REJECT_PREFIX):
        return True, head[len(REJECT_PREFIX) :].strip()
    return False, text


@dataclass(frozen=True)
class HandoffEnvConfig(EnvConfig):
    """The hand-off env's options: :class:`~.base.EnvConfig`'s, some with another default or meaning here, and
    the pipeline's own (``roles``, ``history_handoffs``)."""

    executor: str = option(
        "sim:default",
        "`sim:<pipeline profile>` (`sim:default`) or `sim:/path/profile.json`; put "
        "models into single roles with `roles`",
    )
    max_turns: int = option(30, "the pipeline's agent-turn budget (the last turn is always the summarizer's)")
    action_mode: str = option(
        "discrete",
        "`discrete` (index into `env.unwrapped.catalogue`) or `text` (`pass`, `Reject: <feedback>`, or a note)",
    )
    max_transcript_chars: int = option(6000, "unused here (the history is bounded by `history_handoffs`)")
    decision_every: int = option(1, "unused here (every hand-off is a decision)")
    roles: dict[str, str] | None = option(
        None, "role -> model spec, e.g. `{'verifier': 'hf:gemma-3-270m'}` (any `steer_envs.llm` spec)"
    )
    history_handoffs: int = option(8, "how many earlier hand-offs the observation shows")

    def __post_init__(self) -> None:
        history_handoffs, roles = self.history_handoffs, self.roles
        if not isinstance(history_handoffs, int) or history_handoffs < 0:
            raise SteerEnvsError(f"history_handoffs must be a non-negative integer, got {history_handoffs!r}")
        if roles is not None and not isinstance(roles, dict):
            raise SteerEnvsError(
                f'roles must map role names to model specs, e.g. {{"verifier": "hf:gemma-3-270m"}}; got {roles!r}'
            )
        super().__post_init__()


class HandoffSteeringEnv(SearchEnv):
    """Steer a five-role pipeline at every hand-off: pass, attach a note for the receiver, or reject the message."""

    kind = "handoff"
    #: its executor is the simulated pipeline: ``sim:<pipeline profile>`` (the env cards list those profiles)
    simulator = "pipeline"
    reward_doc = (
        "Terminal: the score of the summarizer's final answer against the golden answers under `metric` (F1 "
        "by default; 0 when the pipeline answers 'insufficient evidence' or never answers). Each intervention "
        "adds `-intervention_cost` at the step it is made. Every other step gives 0."
    )
    observation_docs: dict[str, str] = {
        "goal": "the question (first 2,000 characters)",
        "sender": (
            "the role that wrote the current hand-off (index into planner, searcher, reader, verifier, summarizer)"
        ),
        "receiver": "the role it goes to (the same order, then 5 = user: the summarizer's final answer)",
        "message": "the current hand-off's message (TacoMAS-shaped JSON for simulated roles; an LLM role's text)",
        "history": (
            "the earlier hand-offs, one line each (`[i] sender -> receiver: message [note: ...]`), "
            "the last `history_handoffs`"
        ),
        "transcript": "history and the current hand-off as one text (the view text steerers share with the other envs)",
        "turn": "agent turns taken so far (all roles)",
        "interventions": "interventions made so far in this episode",
    }
    info_docs: dict[str, str] = {
        **SearchEnv.info_docs,
        "executor_turns": "agent turns taken (all roles; the harness's turns per task)",
        "tokens": "words written by the roles",
        "answer": "the summarizer's final answer (None until the pipeline answers)",
        "privileged": "each role's hidden drift (strict verifier, over-searching, ...), over-rejections, derailments: "
        "for analysis only, never for acting",
        "agent_turns": "agent turns taken (all roles)",
        "turns_by_role": "agent turns taken by each role",
        "handoffs": "hand-offs written so far",
        "rounds": "search rounds so far",
    }
    config_class = HandoffEnvConfig
    option_docs: dict[str, str] = HandoffEnvConfig.option_docs()
    config: HandoffEnvConfig

    @property
    def roles(self) -> dict[str, str]:
        """role -> model spec of the roles played by language models (the others are simulated)."""
        return dict(self.config.roles or {})

    @property
    def history_handoffs(self) -> int:
        return self.config.history_handoffs

    def _make_executor(self, spec: str, context: ExecutorContext) -> Pipeline:
        return make_pipeline(spec, context, self.roles)

    @property
    def pipeline(self) -> Pipeline:
        return self.executor  # type: ignore[return-value]

    def _after_reset(self) -> None:
        """The planner's first turn: the first hand-off is the first decision point."""
        self.pipeline.step()

    # -- observations -------------------------------------------------------------------------------------------
    def _observation_space(self) -> spaces.Dict:
        history_chars = MAX_MESSAGE_CHARS * max(1, self.history_handoffs)
        return spaces.Dict(
            {
                "goal": AnyText(MAX_GOAL_CHARS),
                "sender": spaces.Discrete(len(ROLES)),
                "receiver": spaces.Discrete(len(RECEIVERS)),
                "message": AnyText(MAX_MESSAGE_CHARS),
                "history": AnyText(history_chars),
                "transcript": AnyText(history_chars + MAX_MESSAGE_CHARS + 1),
                "turn": spaces.Discrete(self.config.max_turns + 1),
                "interventions": spaces.Discrete(self.max_interventions + 1),
            }
        )

    def _observation(self) -> dict[str, Any]:
        p = self.pipeline
        if not p.handoffs:  # the planner's first turn is supplied from outside (the PettingZoo view)
            h = Handoff(0, "planner", "searcher", "")
        else:
            h = p.pending if p.pending is not None else p.handoffs[-1]
        earlier = p.handoffs[:-1][-self.history_handoffs :] if self.history_handoffs else []
        history = "\n".join(x.line()[:MAX_MESSAGE_CHARS] for x in earlier)
        current = h.line()[:MAX_MESSAGE_CHARS]
        return {
            "goal": self._episode_task.question[:MAX_GOAL_CHARS],
            "sender": np.int64(ROLES.index(h.sender)),
            "receiver": np.int64(RECEIVERS.index(h.receiver)),
            "message": h.text[:MAX_MESSAGE_CHARS],
            "history": history,
            "transcript": (history + "\n" + current) if history else current,
            "turn": np.int64(min(p.stats.turns, self.config.max_turns)),
            "interventions": np.int64(min(self.interventions, self.max_interventions)),
        }

    def _info(self, final: bool) -> dict[str, Any]:
        info = super()._info(final)
        p = self.pipeline
        info["agent_turns"] = p.stats.turns
        info["turns_by_role"] = dict(p.turns_by_role)
        info["handoffs"] = len(p.handoffs)
        info["rounds"] = p.state.rounds
        return info

    # -- actions ----------------------------------------------------------------------------------------------
    def _apply(self, template: InterventionTemplate | None, text: str | None) -> float:
        if text is None:
            self.pipeline.deliver(None)
            return 0.0
        is_reject, feedback = (
            (template.kind == "reject", split_rejection(text)[1]) if template else split_rejection(text)
        )
        return self._intervene("reject" if is_reject else "note", feedback)
