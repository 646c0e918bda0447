"""A registry of factories that may be named lazily as ``"module:function"``.

Retrievers, executors and model backends are all chosen by a spec string ``<kind>:<argument>``; their factories
often need optional extras (pyserini, llama-cpp, transformers). Registering them by import path keeps
``import steer_envs`` light and lets a missing extra fail only when that kind is asked for.

Installed packages add kinds through an entry-point group (``steer_envs.executors``, ``steer_envs.retrievers``):
the entry point's name is the kind, its object the factory. The group is read on the first lookup in every
process, so a plugin's kinds are known everywhere (vectorised env workers, Ray workers, subprocesses) without
importing the plugin first; the plugin itself is imported only when its kind is built.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator
from importlib import metadata
from typing import Generic, TypeVar

F = TypeVar("F", bound=Callable)


class LazyRegistry(Generic[F]):
    """``kind -> factory`` where a factory is a callable or an import path resolved on first use.

    ``what`` names the registry in errors ("executor", "model backend"); ``spec_help`` lists the spec forms.
    """

    def __init__(
        self,
        what: str = "spec",
        spec_help: str = "",
        entry_point_group: str | None = None,
        expand_entry_point: Callable[[metadata.EntryPoint], Iterable[tuple[str, F | str]]] | None = None,
    ) -> None:
        self._factories: dict[str, F | str] = {}
        self.what = what
        self.spec_help = spec_help
        self.entry_point_group = entry_point_group
        #: how one entry point becomes kinds; default: its name is the kind, its object reference the factory
        #: (imported when the kind is built). The method registry loads the entry instead: one entry may name
        #: several methods.
        self.expand_entry_point = expand_entry_point or (lambda entry: [(entry.name, entry.value)])
        self._plugins_read = entry_point_group is None

    def _read_plugins(self) -> None:
        """Add the kinds of installed packages (once per process); built-in kinds are never replaced."""
        group = self.entry_point_group
        if self._plugins_read or group is None:
            return
        self._plugins_read = True
        for entry in entry_points(group):
            for kind, factory in self.expand_entry_point(entry):
                self._factories.setdefault(kind, factory)

    def parse(self, spec: object) -> tuple[str, str]:
        """Split ``KIND:ARGUMENT`` and check the kind; errors say which forms are valid."""
        from .errors import SteerEnvsError, unknown_name

        if not isinstance(spec, str) or ":" not in spec:
            raise SteerEnvsError(f"{self.what} spec {spec!r} must look like KIND:ARGUMENT, one of: {self.spec_help}")
        kind, _, arg = spec.partition(":")
        self._read_plugins()
        if kind not in self._factories:
            raise unknown_name(f"{self.what} kind", kind, list(self._factories), hint=f"spec forms: {self.spec_help}")
        return kind, arg

    def register(self, kind: str, factory: F | str) -> None:
        self._factories[kind] = factory

    def resolve(self, kind: str) -> F:
        self._read_plugins()
        factory = self._factories[kind]
        if isinstance(factory, str):
            factory = import_object(factory)
            self._factories[kind] = factory
        return factory

    def __contains__(self, kind: object) -> bool:
        self._read_plugins()
        return kind in self._factories

    def __iter__(self) -> Iterator[str]:
        self._read_plugins()
        return iter(list(self._factories))

    def __len__(self) -> int:
        self._read_plugins()
        return len(self._factories)


def entry_points(group: str) -> list[metadata.EntryPoint]:
    """The installed entry points of ``group``: the one reader of every plugin group (executors, retrievers,
    commands, methods), so how plugins are found is decided in one place."""
    return list(metadata.entry_points(group=group))


def import_object(path: str):
    """``"package.module:name.attribute"`` -> the object (the entry-point object-reference syntax)."""
    module, _, attrs = path.partition(":")
    target = importlib.import_module(module)
    for attr in filter(None, attrs.split(".")):
        target = getattr(target, attr)
    return target
