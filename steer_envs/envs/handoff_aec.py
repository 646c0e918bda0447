"""The hand-off pipeline as a PettingZoo AEC game: the five roles and the steerer are agents.

Any subset of ``planner, searcher, reader, verifier, summarizer, steerer`` may be *learning* agents (``learning=``);
the others are frozen: a role not learning is played by the simulator (or the LLM its ``roles`` spec names), and a
steerer not learning passes (or runs ``frozen_steerer``, any :class:`agents.base.Policy`-like object with
``act(observation, info)``). The game is the same pipeline as ``steer_envs/HandoffSteering-v0``, turn for turn:

* a learning role acts when its turn comes: it observes the goal, the message handed to it and any supervisor
  note or rejection feedback, and writes its message — in ``role_action_mode="text"`` as free text (parsed as an
  LLM role's output would be; a searcher's text is its query), in ``"discrete"`` by choosing from a small menu of
  observable moves (:data:`ROLE_MENUS`);
* the steerer acts at every hand-off with the env's own observation and action space.

Rewards: every agent receives the final answer's score when the pipeline answers; the steerer's reward is the
single-agent env's (score minus intervention costs). Agents are removed from ``agents`` after their final step.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from ..errors import SteerEnvsError
from ..executors.pipeline import NO_ANSWER, ROLES, Handoff, Pipeline, claimed_answer
from ..executors.pipeline.roles import SIM_ROLES, entities
from .base import MAX_GOAL_CHARS
from .handoff import MAX_MESSAGE_CHARS, HandoffSteeringEnv
from .spaces import AnyText
from .task_env import ACTION_MODES

STEERER = "steerer"
AGENTS: tuple[str, ...] = ROLES + (STEERER,)
READER_CANDIDATES = 8
_NUMBER = re.compile(r"\b\d[\d,.]*\b")


# -- discrete role menus: observable moves, each turned into the role's message ---------------------------------
def _planner_move(p: Pipeline, inbox: Handoff | None, action: int) -> dict[str, Any]:
    p.state.effect("planner", "decompose" if action == 0 else "confused")
    return SIM_ROLES["planner"](p, inbox)


def _searcher_queries(p: Pipeline, inbox: Handoff | None) -> list[str]:
    """0: the first plan objective not searched yet; 1: the question; 2: the verifier's hint (else a title of the
    latest facts that was not searched)."""
    plan = p.latest("planner")
    objectives = [
        str(t.get("objective", "")) for t in (plan.fields.get("subtasks", []) if plan else []) if isinstance(t, dict)
    ]
    asked = {q.lower() for q in p.state.queries}
    fresh = [o for o in objectives if o and o.lower() not in asked]
    hint = inbox.fields.get("next_search_hint") if inbox is not None and inbox.sender == "verifier" else None
    lead = next((t for t in p.last_titles if t.lower() not in asked), None)
    question = p.current_task.question
    return [
        fresh[0] if fresh else (objectives[-1] if objectives else question),
        question,
        str(hint) if hint else (lead or question),
    ]


def _searcher_move(p: Pipeline, inbox: Handoff | None, action: int) -> dict[str, Any]:
    return p.fields_from_text("searcher", _searcher_queries(p, inbox)[action])[1]


def reader_candidates(p: Pipeline, inbox: Handoff | None) -> list[str]:
    """Spans the facts name (capitalised phrases, numbers) and their source titles, in order of appearance."""
    f = inbox.fields if inbox is not None else {}
    spans: list[str] = []
    for fact in f.get("facts", []):
        spans.extend(entities(str(fact)))
        spans.extend(_NUMBER.findall(str(fact)))
    spans.extend(str(t) for t in f.get("sources", []))
    out = list(dict.fromkeys(s.strip(" ,.") for s in spans if s.strip(" ,.")))
    return out[:READER_CANDIDATES]


def _reader_move(p: Pipeline, inbox: Handoff | None, action: int) -> dict[str, Any]:
    candidates = reader_candidates(p, inbox)
    answer = candidates[action] if action < len(candidates) else None
    return {"variables": [{"name": "answer", "value": answer}], "final_values": {"answer": answer}}


def _verifier_move(p: Pipeline, inbox: Handoff | None, action: int) -> dict[str, Any]:
    p.state.effect("verifier", "accept" if action == 0 else "force_fail")
    return SIM_ROLES["verifier"](p, inbox)


def _summarizer_move(p: Pipeline, inbox: Handoff | None, action: int) -> dict[str, Any]:
    claim = claimed_answer(inbox) if inbox is not None and inbox.sender == "verifier" else p.state.answer
    return {"final_answer": (claim or NO_ANSWER) if action == 0 else NO_ANSWER}


#: role -> (number of moves, what they are, the move's message)
ROLE_MENUS: dict[str, tuple[int, str, Callable[[Pipeline, Handoff | None, int], dict[str, Any]]]] = {
    "planner": (2, "0: one subtask per step of the question; 1: the whole question as one subtask", _planner_move),
    "searcher": (
        3,
        "0: the next plan objective; 1: the question; 2: the verifier's hint or a new lead",
        _searcher_move,
    ),
    "reader": (
        READER_CANDIDATES + 1,
        f"0..{READER_CANDIDATES - 1}: a span the facts name (see the observation's "
        f"candidates); {READER_CANDIDATES}: no answer",
        _reader_move,
    ),
    "verifier": (2, "0: PASS; 1: FAIL", _verifier_move),
    "summarizer": (2, "0: the verified claim; 1: no answer", _summarizer_move),
}


class HandoffPipelineAEC(AECEnv):
    metadata: dict[str, Any] = {"name": "handoff_pipeline_v0", "render_modes": ["ansi"], "is_parallelizable": False}

    def __init__(
        self,
        learning: Sequence[str] = (STEERER,),
        frozen_steerer: Any = None,
        role_action_mode: str = "discrete",
        render_mode: str | None = None,
        **env_kwargs: Any,
    ) -> None:
        super().__init__()
        learning = tuple(learning)
        unknown = [a for a in learning if a not in AGENTS]
        if unknown or not learning:
            raise SteerEnvsError(f"learning must name one or more of {', '.join(AGENTS)}; got {list(learning)!r}")
        if role_action_mode not in ACTION_MODES:
            raise SteerEnvsError(f"role_action_mode must be one of {ACTION_MODES}, got {role_action_mode!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise SteerEnvsError(
                f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}"
            )
        self.render_mode = render_mode
        self.role_action_mode = role_action_mode
        self.frozen_steerer = frozen_steerer
        self.env = HandoffSteeringEnv(**env_kwargs)
        self.env.pipeline.external = {a for a in learning if a != STEERER}
        self.possible_agents = [a for a in AGENTS if a in learning]
        self._observation_spaces = {a: self._make_observation_space(a) for a in self.possible_agents}
        self._action_spaces = {a: self._make_action_space(a) for a in self.possible_agents}
        self._last_obs: dict[str, Any] = {}
        self._last_info: dict[str, Any] = {}

    # -- spaces ------------------------------------------------------------------------------------------------
    def _make_observation_space(self, agent: str) -> spaces.Space:
        if agent == STEERER:
            return self.env.observation_space
        return spaces.Dict(
            {
                "goal": AnyText(MAX_GOAL_CHARS),
                "message": AnyText(MAX_MESSAGE_CHARS),
                "note": AnyText(MAX_MESSAGE_CHARS),
                "candidates": AnyText(MAX_MESSAGE_CHARS),
            }
        )

    def _make_action_space(self, agent: str) -> spaces.Space:
        if agent == STEERER:
            return self.env.action_space
        if self.role_action_mode == "text":
            return AnyText(MAX_MESSAGE_CHARS)
        return spaces.Discrete(ROLE_MENUS[agent][0])

    def observation_space(self, agent: str) -> spaces.Space:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self._action_spaces[agent]

    # -- the game loop ----------------------------------------------------------------------------------------------
    @property
    def pipeline(self) -> Pipeline:
        return self.env.pipeline

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        task_options = {k: v for k, v in (options or {}).items() if k == "task_id"}
        self._last_obs, self._last_info = self.env.reset(seed=seed, options=task_options or None)
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self.agent_selection = self.agents[0]
        if self.frozen_steerer is not None and hasattr(self.frozen_steerer, "reset"):
            self.frozen_steerer.reset(seed)
        self._advance()

    def _advance(self) -> None:
        """Run frozen decisions until a learning agent must act or the pipeline has answered."""
        while not self.pipeline.done:
            if self.pipeline.awaiting is not None:
                self.agent_selection = self.pipeline.awaiting[0]
                return
            if STEERER in self.possible_agents:
                self.agent_selection = STEERER
                return
            self._env_step(self._frozen_action())
        self._end()

    def _frozen_action(self):
        if self.frozen_steerer is None:
            return 0 if self.env.config.action_mode == "discrete" else "pass"
        return self.frozen_steerer.act(self._last_obs, self._last_info)

    def _env_step(self, action) -> None:
        self._last_obs, reward, terminated, truncated, self._last_info = self.env.step(action)
        if STEERER in self.rewards:
            self.rewards[STEERER] += float(reward)

    def _end(self) -> None:
        score = float(self._last_info.get("score", 0.0))
        for agent in self.agents:
            if agent != STEERER:
                self.rewards[agent] += score
            self.terminations[agent] = True
            self.infos[agent] = {k: v for k, v in self._last_info.items() if k != "privileged"}
        self._accumulate_rewards()
        if self.agents:
            self.agent_selection = self.agents[0]

    def step(self, action) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            if self.agents:
                self.agent_selection = self.agents[0]
            return
        self._cumulative_rewards[agent] = 0.0
        self.rewards = {a: 0.0 for a in self.agents}
        if agent == STEERER:
            self._env_step(action)
        else:
            self._role_step(agent, action)
        self._advance()
        if not self.pipeline.done:
            self._accumulate_rewards()

    def _role_step(self, agent: str, action) -> None:
        p = self.pipeline
        assert p.awaiting is not None, "a role steps only when the pipeline awaits its turn"
        _, inbox, _ = p.awaiting
        if self.role_action_mode == "text":
            if not isinstance(action, str):
                raise SteerEnvsError(f"{agent}: a text action must be a str (its message), got {type(action).__name__}")
            p.submit(text=action)
        else:
            n, _, move = ROLE_MENUS[agent]
            if isinstance(action, np.ndarray) and action.shape == ():
                action = action.item()
            if isinstance(action, bool) or not isinstance(action, (int, np.integer)) or not 0 <= int(action) < n:
                raise SteerEnvsError(
                    f"{agent}: discrete action must be an integer in 0..{n - 1} ({ROLE_MENUS[agent][1]}), "
                    f"got {action!r}"
                )
            p.submit(fields=move(p, inbox, int(action)))
        self._last_obs = self.env._observation()

    # -- observations ---------------------------------------------------------------------------------------------
    def observe(self, agent: str) -> Any:
        if agent == STEERER:
            return self._last_obs
        p = self.pipeline
        inbox = p.awaiting[1] if p.awaiting is not None and p.awaiting[0] == agent else None
        note = p.state.effects.get(agent, {}).get("note", "") if p._s is not None else ""
        if inbox is not None and inbox.notes:
            note = " ".join(inbox.notes)
        candidates = "\n".join(reader_candidates(p, inbox)) if agent == "reader" and inbox is not None else ""
        return {
            "goal": p.task.question[:MAX_GOAL_CHARS] if p.task else "",
            "message": (inbox.text if inbox is not None else "")[:MAX_MESSAGE_CHARS],
            "note": note[:MAX_MESSAGE_CHARS],
            "candidates": candidates[:MAX_MESSAGE_CHARS],
        }

    def render(self):
        if self.render_mode != "ansi" or self.pipeline.task is None:
            return None
        return self.pipeline.transcript

    def close(self) -> None:
        self.env.close()


@functools.wraps(HandoffPipelineAEC)
def handoff_pipeline_env(**kwargs: Any) -> HandoffPipelineAEC:
    """``HandoffPipelineAEC(**kwargs)`` (PettingZoo's ``env()`` factory convention)."""
    return HandoffPipelineAEC(**kwargs)
