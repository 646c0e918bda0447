"""The policies of a profile's headroom ladder (``steer-envs headroom``) that no other table uses.

* :class:`ReadingBound`: a *privileged* rule that knows whether the documents retrieved so far hold a gold answer
  (it reads the task's golden answers: no observer can). ``verify`` if they do, ``search_question`` if not. It
  bounds what a perfect *reader* of the documents could win with the catalogue's notes, which the oracle (it reads
  the simulator's hidden state: an extraction about to fail, a premature answer about to be given) does not.
* :func:`option_values`: the fork-measured value of every catalogue option at one decision (send it, then pass to
  the end), on common random numbers (the same re-seeded forks for every option, so differences are paired).
* :class:`ForkPlanner`: the lookahead planner; at every decision it sends the option with the best fork-measured
  value when that beats passing. It uses the simulator itself as its model (forks copy hidden state), so like the
  oracle it is a bound, not a method.
* :class:`GainPolicy` with :func:`observation_features`: the *learnable-ceiling estimate*: a supervised model of
  each option's fork-measured gain over passing, from the observation alone, that acts when the best predicted gain
  clears a threshold. Its inputs are a function of the observation dict only (goal, transcript, turn,
  interventions), never of ``info`` or the env, so what it learns is what an observer could learn.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from agents.steering.features import (
    _GUIDANCE,
    _INFO,
    _segments,
    fast_extra_stats,
    own_text,
    split_observation,
    transcript_stats,
    words,
)
from steer_envs.data.scoring import squad_normalize
from steer_envs.errors import SteerEnvsError
from steer_envs.failures import episode_failed

from .simple import PASS

#: hashed unigram buckets of the executor's latest own words (its think / query text, documents removed)
TEXT_BUCKETS = 64


def gold_in_text(text: str, golden_answers: Sequence[str]) -> bool:
    """Whether some golden answer occurs in ``text`` as a whole-word phrase (both SQuAD-normalised)."""
    hay = f" {squad_normalize(text)} "
    return any((needle := squad_normalize(g).strip()) and f" {needle} " in hay for g in golden_answers)


def retrieved_text(transcript: str) -> str:
    """Every ``<information>`` block of the transcript, joined (the documents retrieved so far)."""
    return "\n".join(_INFO.findall(transcript))


class ReadingBound:
    """Knows (from the gold) whether the retrieved documents hold an answer: ``verify`` if they do, ``search_question``
    if not. ``at``: the one decision it acts at (1: after the executor's first turn, as ``verify@1``), or ``None``:
    at every decision, sending the note its reading calls for unless that very note was its last one (so it speaks
    again only when the reading changes), at most ``max_interventions`` times."""

    def __init__(self, option_index: dict[str, int], at: int | None = 1, max_interventions: int = 3) -> None:
        self.verify, self.search = option_index["verify"], option_index["search_question"]
        self.at, self.max_interventions = at, max_interventions
        self.name = f"reading_bound@{'every' if at is None else at}"
        self.run_info = {"at": "every" if at is None else at, "reads": "the task's golden answers"}
        self.env: Any = None
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        self._decision, self._sent = 0, 0
        self._last: int | None = None

    def bind(self, env: Any) -> None:
        self.env = env.unwrapped

    def reading(self, observation: Any) -> bool:
        if self.env is None or self.env.task is None:
            raise SteerEnvsError(
                "reading_bound: it reads the task's gold; run it through steer_envs.episodes.play_episode "
                "(which binds the env) or call bind(env) first"
            )
        _, transcript, _, _ = split_observation(observation)
        return gold_in_text(retrieved_text(transcript), self.env.task.golden_answers)

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        decision, self._decision = self._decision, self._decision + 1
        if self.at is not None and decision != self.at:
            return PASS
        if self._sent >= self.max_interventions:
            return PASS
        action = self.verify if self.reading(observation) else self.search
        if self.at is None and action == self._last:
            return PASS
        self._last, self._sent = action, self._sent + 1
        return action


def fork_seeds(seed: int, decision: int, n: int) -> list[int]:
    base = zlib.crc32(f"fork/{seed}/{decision}".encode())
    return [(base * 31 + k) % (2**31 - 1) for k in range(n)]


def option_values(env: Any, actions: Sequence[int], seeds: Sequence[int]) -> np.ndarray:
    """Mean F1 (0..1) of each action now and pass afterwards, over forks of ``env`` re-seeded with ``seeds`` (the
    same seeds for every action: common random numbers). NaN where every fork failed on a service."""
    out = np.full(len(actions), np.nan)
    for i, action in enumerate(actions):
        outcomes = []
        for seed in seeds:
            branch = env.fork(seed=seed)
            _, _, terminated, truncated, info = branch.step(action)
            while not (terminated or truncated):
                _, _, terminated, truncated, info = branch.step(PASS)
            if not episode_failed(info):
                outcomes.append(float(info["f1"]))
        if outcomes:
            out[i] = float(np.mean(outcomes))
    return out


class ForkPlanner:
    """The lookahead planner: at each decision, every option and pass on ``forks`` re-seeded forks (pass
    afterwards); the best option is sent when it beats passing by more than ``margin``, at most
    ``max_interventions`` times. Needs the env (``bind``)."""

    name = "lookahead_planner"

    def __init__(self, n_actions: int, forks: int = 2, max_interventions: int = 3, margin: float = 0.0) -> None:
        self.actions = list(range(n_actions))
        self.forks, self.max_interventions, self.margin = forks, max_interventions, margin
        self.run_info = {"forks": forks, "max_interventions": max_interventions, "reads": "simulator forks"}
        self.env: Any = None
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        self._seed, self._decision, self._sent = 0 if seed is None else int(seed), 0, 0

    def bind(self, env: Any) -> None:
        self.env = env.unwrapped

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        decision, self._decision = self._decision, self._decision + 1
        if self._sent >= self.max_interventions:
            return PASS
        values = option_values(self.env, self.actions, fork_seeds(self._seed, decision, self.forks))
        if np.isnan(values[PASS]) or np.all(np.isnan(values[1:])):
            return PASS
        best = int(np.nanargmax(values[1:])) + 1
        if values[best] - values[PASS] > self.margin:
            self._sent += 1
            return best
        return PASS


# -- the learnable-ceiling estimate -----------------------------------------------------------------------------------
_SEARCH_NOTE = re.compile(r"^\s*Search for:\s*(.*)$", re.S)


def guidance_counts(goal: str, transcript: str, templates: Sequence[tuple[str, str]]) -> np.ndarray:
    """How often each catalogue note (``templates``: (name, template) after pass) appears in the transcript's
    ``<guidance>`` blocks: the steerer's own past notes, as the observation shows them."""
    counts = np.zeros(len(templates), dtype=np.float32)
    names = [n for n, _ in templates]
    for note in _GUIDANCE.findall(transcript):
        note = note.strip()
        m = _SEARCH_NOTE.match(note)
        if m:
            name = "search_question" if m.group(1).strip() == goal.strip() else "search_new_title"
            if name in names:
                counts[names.index(name)] += 1
            continue
        for i, (_, template) in enumerate(templates):
            if template and note.startswith(template.split("{")[0].strip()[:30]):
                counts[i] += 1
                break
    return counts


def observation_features(observation: Any, templates: Sequence[tuple[str, str]]) -> np.ndarray:
    """The learnable ceiling's input: a function of the observation dict alone. Behaviour statistics
    (:func:`~agents.steering.features.transcript_stats`, the turn one-hot and invalid streak), the steerer's own
    notes so far, and hashed unigrams of the executor's latest own words (documents removed)."""
    goal, transcript, turn, interventions = split_observation(observation)
    segments = _segments(transcript)
    latest = own_text(segments[-1]) if segments else ""
    bag = np.zeros(TEXT_BUCKETS, dtype=np.float32)
    for w in words(latest):
        bag[zlib.crc32(w.encode()) % TEXT_BUCKETS] += 1.0
    return np.concatenate(
        [
            transcript_stats(goal, transcript, turn, interventions),
            fast_extra_stats(transcript, turn, segments),
            guidance_counts(goal, transcript, templates),
            np.log1p(bag),
        ]
    ).astype(np.float32)


class GainPolicy:
    """Send the option whose predicted gain over passing is largest, when it exceeds ``threshold`` (F1 points, 0..1
    scale), at most ``max_interventions`` times. ``model.predict(X) -> (n, options)`` predicted gains; ``act`` reads
    the observation only (``info`` is ignored)."""

    def __init__(
        self,
        model: Any,
        templates: Sequence[tuple[str, str]],
        option_indices: Sequence[int],
        threshold: float,
        max_interventions: int = 3,
        name: str = "learnable_ceiling",
    ) -> None:
        self.model, self.templates = model, list(templates)
        self.option_indices = list(option_indices)
        self.threshold, self.max_interventions, self.name = float(threshold), max_interventions, name
        self.run_info = {"threshold": round(self.threshold, 6), "reads": "the observation only"}
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        self._sent = 0

    def act(self, observation: Any, info: dict[str, Any] | None = None) -> int:
        if self._sent >= self.max_interventions:
            return PASS
        gains = np.asarray(self.model.predict(observation_features(observation, self.templates)[None, :]))[0]
        best = int(np.argmax(gains))
        if gains[best] > self.threshold:
            self._sent += 1
            return self.option_indices[best]
        return PASS


class MultiGainModel:
    """One regressor per option over the same features (``predict`` stacks their outputs)."""

    def __init__(self, models: Sequence[Any]) -> None:
        self.models = list(models)

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.stack([m.predict(X) for m in self.models], axis=1)
