"""What the role turns, their LLM counterparts and the response table use of the pipeline that runs them.

:class:`~.pipeline.Pipeline` imports the roles (``roles``, ``llm_roles``) and the response table (``responses``)
to run them, and they are handed the pipeline on every call. Annotating that argument with ``Pipeline`` made each
of them import ``pipeline`` back (for typing only, but still an import circle a reader has to untangle). They
annotate it with :class:`PipelineHost` instead: the members they use, declared here, below all of them.
``Pipeline`` is one (structurally; it does not need to name this class).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ...data.records import Task
    from ..base import ExecutorContext
    from .messages import Handoff
    from .state import PipelineState


class PipelineHost(Protocol):
    """The pipeline as its roles and responses see it."""

    context: ExecutorContext
    #: the benchmark's pipeline profile parameters
    params: Any
    #: titles of the latest search's hits
    last_titles: list[str]

    @property
    def state(self) -> PipelineState: ...

    #: the running episode's task (roles take turns only between ``reset`` and the episode's end)
    @property
    def current_task(self) -> Task: ...

    #: the retriever the searcher role queries (``SimResources.retriever``)
    @property
    def retriever(self) -> Any: ...

    def fields_from_text(self, role: str, text: str) -> tuple[str, dict[str, Any]]: ...

    def latest(self, role: str) -> Handoff | None: ...

    def thought(self, act: str, query: str | None = None, answer: str | None = None) -> str: ...

    def is_right(self, answer: str | None) -> bool: ...

    def resolve(self, finding: str, fact: tuple[str, str]) -> None: ...

    def undo_from(self, index: int) -> None: ...

    def recheck_seen(self) -> None: ...
