"""Failures are not rewards: how a service failure is told apart from an episode's outcome.

A model server or a retrieval server that fails after its retries (a :class:`~steer_envs.errors.ServiceError`) says
nothing about the task or the supervisor: the episode did not finish. Every env then ends the episode as
*truncated* (``terminated=False``), with reward 0 for that step and the reason in ``info``:

* ``info["failure"]``: the message (it names the backend or URL and the last error);
* ``info["failure_source"]``: what failed, one of :data:`FAILURE_SOURCES`.

Consumers must not read the 0 as a return: the steering trainer retries or drops a failed continuation, the
ACTGUIDE trainer drops a failed trajectory from its group, and the evaluation harness counts failed episodes and
leaves them (and their pairs) out of the means and intervals. :func:`episode_failed` is the one test they share.

A recording that ends without an answer (``replay:``) is *not* a service failure: it is the recorded agent's
outcome, and stays a terminated episode with ``info["failure"]`` only.

Nor is a **context overflow**: an agent whose transcript outgrew its model's context
(:class:`~steer_envs.llm.base.ContextOverflowError`) has talked past what it can read, and Search-R1 scores that
as an episode without an answer. The episode ends *truncated* (``terminated=False``) with
``info["truncation"] = "context"`` (:data:`CONTEXT_TRUNCATION`), the reason in ``info["truncation_detail"]``, no
answer and its scores (F1 0), and no ``failure`` / ``failure_source``: :func:`episode_failed` is False and every
mean keeps it. Dropping it instead would raise the means of long-winded agents, whose hardest episodes are
exactly the ones that overflow. :func:`truncated_by_context` tells such an episode apart (the harness counts them).
"""

from __future__ import annotations

from typing import Any

#: what can fail: the executor's language-model backend, the retriever, or another service an episode needs
FAILURE_SOURCES = ("backend", "retrieval", "service")
#: ``info["truncation"]`` of an episode whose agent outgrew its model's context (a scored outcome, not a failure)
CONTEXT_TRUNCATION = "context"


def failure_source(exc: BaseException) -> str:
    """The :data:`FAILURE_SOURCES` entry of a :class:`~steer_envs.errors.ServiceError`."""
    from .llm.base import LLMBackendError
    from .retrieval.http_client import RetrievalServiceError

    if isinstance(exc, LLMBackendError):
        return "backend"
    if isinstance(exc, RetrievalServiceError):
        return "retrieval"
    return "service"


def episode_failed(info: dict[str, Any] | None) -> bool:
    """Whether a step's ``info`` says the episode was cut short by a service failure (not a real outcome)."""
    return info is not None and info.get("failure_source") is not None


def failure_of(info: dict[str, Any] | None) -> str | None:
    """``"<source>: <message>"`` for a failed episode's ``info``, else None (for logs and records)."""
    if info is None or not episode_failed(info):
        return None
    return f"{info['failure_source']}: {info.get('failure') or 'failed'}"


def truncated_by_context(info: dict[str, Any] | None) -> bool:
    """Whether a final ``info`` says the agent outgrew its model's context (a scored truncation, kept in means)."""
    return info is not None and info.get("truncation") == CONTEXT_TRUNCATION
