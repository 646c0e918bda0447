"""A registry of factories that may be named lazily as ``"module:function"``.

Retrievers, executors and model backends are all chosen by a spec string ``<kind>:<argument>``; their factories
often need optional extras (pyserini, llama-cpp, transformers). Registering them by import path keeps
``import steer_envs`` light and lets a missing extra fail only when that kind is asked for.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

F = TypeVar("F", bound=Callable)


class LazyRegistry(Generic[F]):
    """``kind -> factory`` where a factory is a callable or an import path resolved on first use."""

    def __init__(self) -> None:
        self._factories: dict[str, F | str] = {}

    def register(self, kind: str, factory: F | str) -> None:
        self._factories[kind] = factory

    def resolve(self, kind: str) -> F:
        factory = self._factories[kind]
        if isinstance(factory, str):
            module, _, name = factory.partition(":")
            factory = getattr(importlib.import_module(module), name)
            self._factories[kind] = factory
        return factory  # type: ignore[return-value]

    def __contains__(self, kind: object) -> bool:
        return kind in self._factories

    def __iter__(self) -> Iterator[str]:
        return iter(self._factories)

    def __len__(self) -> int:
        return len(self._factories)
