"""The oracle steerer: knows the simulator's hidden state and sends the note that fixes the situation, and only
then. It exists to measure a testbed's headroom (how much steering *can* matter), never as a method to compare
with on equal terms: no real steerer sees hidden state.

Two ways of choosing, both from hidden state only (never from the future's random draws):

* ``lookahead=0``: the response table of :mod:`steer_envs.executors.sim.responses` read backwards (which note fixes
  which situation, :data:`FIXES`);
* ``lookahead=N`` (default 4): a rollout policy over the table. At a decision whose hidden situation is not already
  fine, every catalogue option and ``pass`` is tried on ``N`` forks of the episode, each re-seeded (fresh
  randomness: the oracle knows the state, not the dice); each fork then continues under the table oracle, and the
  option with the best mean F1 is sent (the table's own choice wins ties). One step of policy improvement over the
  table, so it does at least as well in expectation.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from steer_envs.envs.catalogue import STEERING
from steer_envs.errors import SteerEnvsError
from steer_envs.failures import episode_failed

from .base import MethodContext
from .options import MethodOptions, method_option
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
#: situations in which the executor, left alone, ends with a right answer (a note can only hurt)
FINE: frozenset[str] = frozenset({"in_hand_right", "premature_knows"})


@dataclass(frozen=True)
class OracleOptions(MethodOptions):
    max_interventions: int = method_option(3, "interventions per episode at most", ge=0)
    lookahead: int = method_option(4, "re-seeded forks per option at a decision (0: the response table alone)", ge=0)


class Oracle:
    name = "oracle"

    def __init__(self, option_index: dict[str, int], max_interventions: int, lookahead: int = 0) -> None:
        self.index = option_index
        self.max_interventions = max_interventions
        self.lookahead = lookahead
        self.run_info = {
            "max_interventions": max_interventions,
            "lookahead": lookahead,
            "reads": "hidden simulator state",
        }
        self.env: Any = None
        self._observation: Any = None
        self._hidden: dict[str, Any] = {}
        self._seed = 0
        self._decision = 0

    def reset(self, seed: int | None = None) -> None:
        self._seed = 0 if seed is None else int(seed)
        self._decision = 0

    def bind(self, env: Any) -> None:
        self.env = env.unwrapped

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        hidden = info.get("privileged") or {}
        if "situation" not in hidden:
            raise SteerEnvsError(
                "oracle: the executor exposes no hidden state (info['privileged'] is empty); "
                "the oracle needs a simulator executor (sim:<profile>)"
            )
        self._decision += 1
        if int(info.get("interventions", 0)) >= self.max_interventions or hidden["situation"] in FINE:
            return PASS
        self._observation, self._hidden = observation, hidden
        if self.lookahead:
            if self.env is None:
                raise SteerEnvsError(
                    "oracle: lookahead needs the environment; run it through steer_envs.episodes.play_episode "
                    "(which binds it) or call bind(env) first"
                )
            return self._best_by_lookahead()
        return self._from_table(observation, hidden)

    def _from_table(self, observation: Any, hidden: dict[str, Any]) -> int:
        situation = hidden["situation"]
        if situation == "premature_unseen" and _new_title(observation) in hidden.get("next_target_titles", ()):
            return self.index["search_new_title"]  # the latest results name what the next hop needs
        if situation == "redundant":  # looping with the evidence in hand: stop it, or re-check a wrong answer
            return self.index["answer_now" if hidden["answer_would_be_correct"] else "verify"]
        return self.index[FIXES[situation]] if situation in FIXES else PASS

    def _best_by_lookahead(self) -> int:
        base = zlib.crc32(f"{self._seed}/{self._decision}".encode())
        seeds = [(base * 31 + k) % (2**31 - 1) for k in range(self.lookahead)]
        actions = [PASS] + sorted(set(self.index.values()))
        table = self._from_table(self._observation, self._hidden)
        values = {a: self._value(a, seeds) for a in actions}
        measured = [a for a in actions if values[a] is not None]  # every fork failed on a service: no value
        if not measured:
            return table
        return max(measured, key=lambda a: (values[a], a == table, a == PASS))

    def _value(self, action: int, seeds: list[int]) -> float | None:
        """Mean F1 of ``action`` now and the table oracle afterwards, over the re-seeded forks that finished (a fork
        cut short by a service failure has no outcome); None when none finished."""
        outcomes = []
        for seed in seeds:
            branch = self.env.fork(seed=seed)
            observation, _, terminated, truncated, info = branch.step(action)
            while not (terminated or truncated):
                hidden = info["privileged"]
                capped = int(info["interventions"]) >= self.max_interventions or hidden["situation"] in FINE
                follow = PASS if capped else self._from_table(observation, hidden)
                observation, _, terminated, truncated, info = branch.step(follow)
            if not episode_failed(info):
                outcomes.append(float(info["f1"]))
        return float(np.mean(outcomes)) if outcomes else None


def _new_title(observation: Any) -> str:
    """The title the catalogue's ``search_new_title`` note would name for this observation."""
    template = next(t for t in STEERING if t.name == "search_new_title")
    filled = template.fill(str(observation.get("goal", "")), str(observation.get("transcript", "")))
    return filled.partition(":")[2].strip()


def build_oracle(context: MethodContext) -> Oracle:
    chosen = context.options_of(OracleOptions)
    return Oracle({o.name: o.index for o in catalogue_options(context)}, chosen.max_interventions, chosen.lookahead)
