"""SearchSteering-v0: the steerer decides at every executor turn (or every ``decision_every`` turns)."""

from __future__ import annotations

from .base import SearchEnv
from .catalogue import InterventionTemplate


class SearchSteeringEnv(SearchEnv):
    """Observation before each executor turn; action ``pass`` or a guidance note; the executor then takes
    ``decision_every`` turns. Terminal reward: the answer's score; each intervention costs ``intervention_cost``."""

    kind = "steering"

    def _apply(self, template: InterventionTemplate | None, text: str | None) -> float:
        reward = 0.0
        if text is not None:
            reward = self._intervene("note", text)
        self._run_turns(self.config.decision_every)
        return reward
