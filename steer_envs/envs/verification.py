"""SearchVerification-v0: the verifier accepts, or rejects with feedback, each answer the executor proposes.

The executor runs unsupervised until it proposes an answer (or spends its budget). A rejection reopens the
episode with the feedback in the executor's context, so over-rejection costs turns and can lose a right answer.
"""

from __future__ import annotations

from typing import Any

from gymnasium import spaces

from .base import MAX_GOAL_CHARS, SearchEnv
from .catalogue import InterventionTemplate
from .spaces import AnyText


class SearchVerificationEnv(SearchEnv):
    """Observation: the goal, the transcript and the proposed answer, each time the executor proposes one.
    Action: accept (``accept`` / index 0), or reject with feedback (which reopens the episode)."""

    kind = "verification"
    pass_words = frozenset({"accept", "pass", ""})
    observation_docs = {**SearchEnv.observation_docs, "proposed_answer": "the answer the executor proposes"}

    def _observation_space(self) -> spaces.Dict:
        base = super()._observation_space()
        return spaces.Dict({**base.spaces, "proposed_answer": AnyText(MAX_GOAL_CHARS)})

    def _observation(self) -> dict[str, Any]:
        obs = super()._observation()
        obs["proposed_answer"] = (self.executor.answer or "")[:MAX_GOAL_CHARS]
        return obs

    def _after_reset(self) -> None:
        self._accepted = False
        self._run_turns(None)

    def _apply(self, template: InterventionTemplate | None, text: str | None) -> float:
        if text is None or self.executor.answer is None or self.executor.turns_left == 0:
            self._accepted = True  # accepting, or nothing left to decide on
            return 0.0
        reward = self._intervene("reject", text)
        self._run_turns(None)
        return reward

    def _finished(self) -> bool:
        return bool(getattr(self, "_accepted", False))

    def get_state(self) -> dict[str, Any]:
        state = super().get_state()
        state["accepted"] = self._accepted
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)
        self._accepted = state["accepted"]
