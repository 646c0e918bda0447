"""SearchPlanning-v0: one plan before execution, then the executor runs unsupervised (one decision per episode)."""

from __future__ import annotations

from .base import SearchEnv
from .catalogue import InterventionTemplate


class SearchPlanningEnv(SearchEnv):
    """Observation: the goal (empty transcript). Action: a plan (a note placed before the first turn), or none."""

    kind = "planning"
    pass_words = frozenset({"pass", "", "none", "no plan"})

    def _apply(self, template: InterventionTemplate | None, text: str | None) -> float:
        reward = 0.0
        if text is not None:
            reward = self._intervene("note", text)
        self._run_turns(None)
        return reward
