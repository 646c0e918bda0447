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
    """``kind -> factory`` where a factory is a callable or an import path resolved on first use.

    ``what`` names the registry in errors ("executor", "model backend"); ``spec_help`` lists the spec forms.
    """

    def __init__(self, what: str = "spec", spec_help: str = "") -> None:
        self._factories: dict[str, F | str] = {}
        self.what = what
        self.spec_help = spec_help

    def parse(self, spec: object) -> tuple[str, str]:
        """Split ``KIND:ARGUMENT`` and check the kind; errors say which forms are valid."""
        from .errors import SteerEnvsError, unknown_name

        if not isinstance(spec, str) or ":" not in spec:
            raise SteerEnvsError(f"{self.what} spec {spec!r} must look like KIND:ARGUMENT, one of: {self.spec_help}")
        kind, _, arg = spec.partition(":")
        if kind not in self._factories:
            raise unknown_name(f"{self.what} kind", kind, list(self._factories), hint=f"spec forms: {self.spec_help}")
        return kind, arg

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
