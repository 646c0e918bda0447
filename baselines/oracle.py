"""The oracle steerer: reads the simulator's hidden state (``info["privileged"]``) and sends the note that fixes
the situation, and only then. It exists to measure a testbed's headroom (how much steering *can* matter), never
as a method to compare against on equal terms: no real steerer sees hidden state.

The mapping from hidden situation to catalogue option mirrors the response table of
:mod:`steer_envs.executors.sim.responses` (what helps where); it needs a simulator executor.
"""
from __future__ import annotations

from typing import Any

from steer_envs.envs.catalogue import STEERING
from steer_envs.errors import SteerEnvsError

from .registry import MethodContext
from .simple import PASS, catalogue_options

#: hidden situation -> the option that helps there (situations not listed: pass)
FIXES: dict[str, str] = {
    "never_answer": "search_question",
    "side_goal": "refocus",
    "fixated": "backtrack",
    "in_hand_wrong": "verify",
    "premature_unrecognised": "verify",
    "premature_unseen": "keep_searching",
}


class Oracle:
    name = "oracle"

    def __init__(self, option_index: dict[str, int], max_interventions: int) -> None:
        self.index = option_index
        self.max_interventions = max_interventions
        self.run_info = {"max_interventions": max_interventions, "reads": "privileged simulator state"}

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        hidden = info.get("privileged") or {}
        if "situation" not in hidden:
            raise SteerEnvsError("oracle: the executor exposes no hidden state (info['privileged'] is empty); "
                                 "the oracle needs a simulator executor (sim:<profile>)")
        if int(info.get("interventions", 0)) >= self.max_interventions:
            return PASS
        situation = hidden["situation"]
        if situation == "premature_unseen" and _new_title(observation) in hidden.get("next_target_titles", ()):
            return self.index["search_new_title"]  # the latest results name what the next hop needs
        if situation == "redundant":  # looping with the evidence in hand: stop it, or re-check a wrong answer
            return self.index["answer_now" if hidden["answer_would_be_correct"] else "verify"]
        return self.index[FIXES[situation]] if situation in FIXES else PASS


def _new_title(observation: Any) -> str:
    """The title the catalogue's ``search_new_title`` note would name for this observation."""
    template = next(t for t in STEERING if t.name == "search_new_title")
    return template.fill(str(observation.get("goal", "")), str(observation.get("transcript", ""))).partition(":")[2].strip()


def build_oracle(context: MethodContext) -> Oracle:
    return Oracle({o.name: o.index for o in catalogue_options(context)}, context.option("max_interventions", 3, int))
