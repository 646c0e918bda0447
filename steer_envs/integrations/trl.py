"""The envs as TRL ``GRPOTrainer`` environments: an LLM acts in them through tool calls, TRL trains it on their reward.

TRL 1.16's multi-turn interface is ``GRPOTrainer(environment_factory=...)``: a zero-argument callable returning an
object whose public methods are the *tools* the model may call (their type hints and Google-style docstrings become
the tool schema in the prompt), with ``reset(**row)`` called before every rollout (it receives the dataset row; the
string it returns is appended to the prompt) and ``get_reward()`` called once after it (the env owns the reward).
TRL keeps one instance per concurrent rollout and reuses it across batches, so each instance builds its gymnasium env
once (``gymnasium.make``, text action mode) and resets it per row.

* :class:`GuidedSearchTools` (``GuidedSearch-v0``): the LLM *is* the search agent: ``search(query)``,
  ``answer(text)``; reward: the env's (the answer's score). This is ACTGUIDE-RL's zero-RL baseline trained by TRL.
* :class:`SearchSteeringTools` (``SearchSteering-v0``): the LLM steers a frozen executor: ``pass_turn()``,
  ``intervene(note)``; when it stops calling tools the executor finishes the episode unsteered (silence = pass).
* :class:`HandoffSteeringTools` (``HandoffSteering-v0``): the LLM steers the five-role pipeline:
  ``pass_handoff()``, ``note(text)``, ``reject(feedback)``; silence passes too.

Every tool call is one ``env.step`` with the text action the env itself defines (``<search> q </search>``, a note,
``Reject: ...``), so an episode driven through these classes equals the same episode driven through
``gymnasium.make`` with the same seed and actions (tested). :func:`task_dataset` builds the ``datasets.Dataset``
TRL iterates: one row per task of a split, with its ``task_id`` and a deterministic episode ``seed`` per row (the
``num_generations`` rollouts of a row share them, so a GRPO group differs only by the model's actions).

Supervision envs default to the embedded executor ``sim:default``; any executor spec works
(``make_environment_factory("steer_envs/SearchSteering-v0", executor="hf:gemma-3-270m")``). TRL and ``datasets``
are imported only inside :func:`task_dataset` (install with ``pip install "steer-envs[trl]"``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from ..episodes import row_seed
from ..errors import SteerEnvsError, unknown_name
from ..failures import episode_failed
from ..ids import GUIDED_SEARCH_ENV, HANDOFF_ENV, STEERING_ENV

if TYPE_CHECKING:
    import gymnasium

#: longest tool result handed back to the model (characters); the rest is cut with a marker. TRL drops a tool
#: result that would push a rollout past ``max_completion_length``, so long search results must be bounded
DEFAULT_MAX_RESULT_CHARS = 1500
#: longest note / query / answer a tool accepts (characters): longer arguments are a tool error the model sees
DEFAULT_MAX_ARGUMENT_CHARS = 2000
MAX_FINISH_STEPS = 10_000

INSTRUCTIONS: dict[str, str] = {
    GUIDED_SEARCH_ENV: (
        "Answer the question. Call the search tool to look things up in Wikipedia (as often as you need), then call "
        "the answer tool with a short answer. The episode ends when you answer."
    ),
    STEERING_ENV: (
        "You supervise a search agent that answers the question below. After each of its turns, call pass_turn to "
        "let it continue, or intervene with a short guidance note when it drifts from the goal. When you stop "
        "calling tools it finishes on its own."
    ),
    HANDOFF_ENV: (
        "You supervise a pipeline of five agents (planner, searcher, reader, verifier, summarizer) answering the "
        "question below. At each hand-off call pass_handoff, note (a note for the receiver), or reject (send the "
        "message back with feedback). When you stop calling tools the pipeline finishes on its own."
    ),
}


class SteerToolEnv:
    """Base class of the TRL environments (see the module docstring). Public methods of subclasses are tools; keep
    helpers ``_private`` (TRL exposes every public function of the class as a tool)."""

    env_id: ClassVar[str] = ""
    #: whether an unfinished episode is played out with passes at ``get_reward`` (supervision envs: silence = pass)
    finish_by_passing: ClassVar[bool] = True
    pass_action: ClassVar[str] = "pass"

    def __init__(
        self,
        max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
        max_argument_chars: int = DEFAULT_MAX_ARGUMENT_CHARS,
        **env_kwargs: Any,
    ) -> None:
        if max_result_chars < 1 or max_argument_chars < 1:
            raise SteerEnvsError("max_result_chars and max_argument_chars must be positive")
        if env_kwargs.get("action_mode", "text") != "text":
            raise SteerEnvsError("TRL environments act in text: leave action_mode unset (it is 'text' here)")
        self.max_result_chars = max_result_chars
        self.max_argument_chars = max_argument_chars
        self.env_kwargs = {**env_kwargs, "action_mode": "text"}
        self._gym: gymnasium.Env | None = None
        self._seen = ""
        self.actions: list[Any] = []  # the env actions of the current episode, in order
        self.rewards: list[float] = []  # the env reward of each of those steps
        self.done = False
        self.last_info: dict[str, Any] = {}

    # -- the TRL interface ---------------------------------------------------------------------------------------
    def reset(self, seed: int | None = None, task_id: str | None = None, **row: Any) -> str:
        """Start the row's episode (``seed`` and ``task_id`` from :func:`task_dataset`; other columns are ignored)
        and return the first observation, which TRL appends to the prompt."""
        env = self._env()
        obs, info = env.reset(
            seed=None if seed is None else int(seed), options={"task_id": task_id} if task_id else None
        )
        self.actions, self.rewards, self.done, self.last_info = [], [], False, info
        self._seen = str(obs.get("transcript", ""))
        return self._first_observation(obs)

    def get_reward(self) -> float | None:
        """The episode's return under the env's own reward (an unfinished supervision episode is played out with
        passes first: the executor continues unsteered).

        None when a service failed (``steer_envs.failures.episode_failed``: the episode was truncated without an
        outcome): TRL 1.16's GRPOTrainer reads a reward function's None as NaN, leaves the completion out of its
        group's nan-mean / nan-std baseline and sets its advantage to 0, so a failure never enters the update (a 0
        here would be read as a real, bad return)."""
        if not self.done and self.finish_by_passing and self._gym is not None and self.last_info:
            for _ in range(MAX_FINISH_STEPS):
                if self.done:
                    break
                self._act(self.pass_action)
        if episode_failed(self.last_info):
            return None
        return float(sum(self.rewards))

    # -- internals -----------------------------------------------------------------------------------------------
    def _env(self):
        if self._gym is None:
            import gymnasium as gym

            import steer_envs  # noqa: F401 - registers the ids

            self._gym = gym.make(self.env_id, **self.env_kwargs)
        return self._gym

    @property
    def unwrapped(self):
        """The underlying gymnasium env (unwrapped)."""
        return self._env().unwrapped

    def _check_argument(self, name: str, value: Any) -> str:
        if not isinstance(value, str):
            raise SteerEnvsError(f"{name} must be a string, got {type(value).__name__}")
        if len(value) > self.max_argument_chars:
            raise SteerEnvsError(f"{name} is {len(value)} characters; the limit is {self.max_argument_chars}")
        return value

    def _act(self, action: Any) -> str:
        """One ``env.step(action)``; returns what the model sees next (the new part of the transcript)."""
        if self._gym is None or not self.last_info:
            raise SteerEnvsError("call reset() before the first tool call")
        if self.done:
            return "The episode is over; no further actions are taken."
        obs, reward, terminated, truncated, info = self._gym.step(action)
        self.actions.append(action)
        self.rewards.append(float(reward))
        self.done = bool(terminated or truncated)
        self.last_info = info
        return self._after_step(obs, info)

    def _delta(self, obs: dict[str, Any]) -> str:
        transcript = str(obs.get("transcript", ""))
        new = transcript[len(self._seen) :] if transcript.startswith(self._seen) else transcript
        self._seen = transcript
        return self._cut(new.strip())

    def _cut(self, text: str) -> str:
        if len(text) <= self.max_result_chars:
            return text
        return text[: self.max_result_chars] + " [...]"

    def _first_observation(self, obs: dict[str, Any]) -> str:
        from ..envs import observation_text

        return self._cut(observation_text(obs))

    def _after_step(self, obs: dict[str, Any], info: dict[str, Any]) -> str:
        text = self._delta(obs) or "(nothing new)"
        if self.done:
            text += f"\n[The episode is over. Final answer: {info.get('answer')!r}.]"
        return text


class GuidedSearchTools(SteerToolEnv):
    """``GuidedSearch-v0`` with the LLM as the search agent (tools ``search`` and ``answer``)."""

    env_id = GUIDED_SEARCH_ENV
    finish_by_passing = False  # an agent that never answers scores 0 (the env's rule)

    def search(self, query: str) -> str:
        """Search the Wikipedia corpus and return the top passages.

        Args:
            query: What to search for, e.g. a name or a short question.

        Returns:
            The retrieved passages.
        """
        query = self._check_argument("query", query)
        return self._act(f"<search> {query} </search>")

    def answer(self, text: str) -> str:
        """Give the final answer to the question; this ends the episode.

        Args:
            text: The answer, a few words.

        Returns:
            A confirmation that the episode is over.
        """
        text = self._check_argument("text", text)
        return self._act(f"<answer> {text} </answer>")

    def _first_observation(self, obs: dict[str, Any]) -> str:
        from ..reference_plans.hint import format_plan_hint

        env = self.unwrapped
        hint = env.hint_actions
        text = f"Question: {env.state.task.question}"
        if hint:
            text += "\n" + format_plan_hint(hint, len(hint)).strip()
        if self._seen.strip():  # prefix mode: executed reference searches
            text += "\n" + self._seen.strip()
        return self._cut(text)

    def _after_step(self, obs: dict[str, Any], info: dict[str, Any]) -> str:
        text = self._delta(obs)
        if self.done and str(self.actions[-1]).startswith("<answer>"):
            return "Answer received. The episode is over."
        if self.done:
            return text + "\nThe turn budget is spent: the episode is over."
        return text or "(no results)"


class SearchSteeringTools(SteerToolEnv):
    """``SearchSteering-v0`` with the LLM as the steerer over a frozen executor (tools ``pass_turn``, ``intervene``)."""

    env_id = STEERING_ENV

    def __init__(self, executor: str = "sim:default", **kwargs: Any) -> None:
        super().__init__(executor=executor, **kwargs)

    def pass_turn(self) -> str:
        """Let the search agent take its next turn without guidance.

        Returns:
            What the agent did in its next turn.
        """
        return self._act("pass")

    def intervene(self, note: str) -> str:
        """Send the search agent a guidance note before its next turn.

        Args:
            note: A short guidance note, e.g. "Search for the director's birthplace before answering."

        Returns:
            What the agent did in its next turn.
        """
        note = self._check_argument("note", note)
        if note.strip().lower() in self.unwrapped.pass_words:
            raise SteerEnvsError("the note is empty (or 'pass'); call pass_turn to let the agent continue")
        return self._act(note)


class HandoffSteeringTools(SteerToolEnv):
    """``HandoffSteering-v0`` with the LLM steering the five-role pipeline (tools ``pass_handoff``, ``note``,
    ``reject``)."""

    env_id = HANDOFF_ENV

    def __init__(self, executor: str = "sim:default", **kwargs: Any) -> None:
        super().__init__(executor=executor, **kwargs)

    def pass_handoff(self) -> str:
        """Deliver the current hand-off to its receiver unchanged.

        Returns:
            The next hand-off.
        """
        return self._act("pass")

    def note(self, text: str) -> str:
        """Attach a note for the receiver of the current hand-off.

        Args:
            text: The note, e.g. "Check the date against the second passage."

        Returns:
            The next hand-off.
        """
        from ..envs.handoff import split_rejection

        text = self._check_argument("text", text)
        if text.strip().lower() in self.unwrapped.pass_words:
            raise SteerEnvsError("the note is empty (or 'pass'); call pass_handoff to deliver the message unchanged")
        if split_rejection(text)[0]:
            raise SteerEnvsError("a note cannot start with 'Reject:'; call reject(feedback) to reject the message")
        return self._act(text)

    def reject(self, feedback: str) -> str:
        """Send the current hand-off back to its sender with feedback, to be redone.

        Args:
            feedback: Why the message is rejected and what to fix.

        Returns:
            The next hand-off.
        """
        feedback = self._check_argument("feedback", feedback)
        return self._act(f"Reject: {feedback}")

    def _first_observation(self, obs: dict[str, Any]) -> str:
        from ..envs import observation_text

        return self._cut(observation_text(obs))

    def _delta(self, obs: dict[str, Any]) -> str:
        from ..executors.pipeline import RECEIVERS, ROLES

        current = f"{ROLES[int(obs['sender'])]} -> {RECEIVERS[int(obs['receiver'])]}: {obs['message']}"
        return self._cut(current)


#: env id -> its TRL environment class (a registry, so new envs plug in without touching the functions below)
TOOL_ENVS: dict[str, type[SteerToolEnv]] = {
    cls.env_id: cls for cls in (GuidedSearchTools, SearchSteeringTools, HandoffSteeringTools)
}


def _tool_class(env_id: str) -> type[SteerToolEnv]:
    if env_id not in TOOL_ENVS:
        raise unknown_name("env_id", env_id, tuple(TOOL_ENVS))
    return TOOL_ENVS[env_id]


def make_environment_factory(env_id: str = GUIDED_SEARCH_ENV, **env_kwargs: Any) -> Callable[[], SteerToolEnv]:
    """The zero-argument callable ``GRPOTrainer(environment_factory=...)`` takes. ``env_kwargs`` go to
    ``gymnasium.make`` (``executor=``, ``split=``, ``benchmarks=``, ...) except ``max_result_chars`` and
    ``max_argument_chars``, which bound the tool texts."""
    cls = _tool_class(env_id)
    cls(**env_kwargs)  # fail now, in the caller's frame, on a bad option (the env itself is built lazily)
    return functools.partial(cls, **env_kwargs)


def task_dataset(
    env_id: str = GUIDED_SEARCH_ENV, split: str = "train", limit: int | None = None, seed: int = 0, **env_kwargs: Any
):
    """A ``datasets.Dataset`` of the split's tasks for TRL: columns ``prompt`` (a conversational prompt with the
    env's instruction; :meth:`SteerToolEnv.reset` appends the observation), ``task_id``, ``question`` and ``seed``
    (:func:`~steer_envs.episodes.row_seed`). ``env_kwargs`` select the tasks as in ``gymnasium.make`` (``benchmarks=``,
    ``executor=``: a ``replay:`` executor covers only recorded tasks); ``limit`` keeps the first rows."""
    from datasets import Dataset

    cls = _tool_class(env_id)
    kwargs = {k: v for k, v in env_kwargs.items() if k not in ("max_result_chars", "max_argument_chars")}
    tasks = cls(split=split, **kwargs).unwrapped.tasks
    if limit is not None:
        if limit < 1:
            raise SteerEnvsError(f"limit must be a positive number of rows, got {limit}")
        tasks = tasks[:limit]
    instruction = INSTRUCTIONS[env_id]
    return Dataset.from_dict(
        {
            "prompt": [[{"role": "user", "content": instruction + "\n\n"}] for _ in tasks],
            "task_id": [t.id for t in tasks],
            "question": [t.question for t in tasks],
            "seed": [row_seed(seed, i) for i in range(len(tasks))],
        }
    )


__all__ = [
    "DEFAULT_MAX_ARGUMENT_CHARS",
    "DEFAULT_MAX_RESULT_CHARS",
    "GuidedSearchTools",
    "HandoffSteeringTools",
    "INSTRUCTIONS",
    "SearchSteeringTools",
    "SteerToolEnv",
    "TOOL_ENVS",
    "make_environment_factory",
    "task_dataset",
]
