"""Subcommand registry.

Core commands are listed in :mod:`steer_envs.cli.commands`. Commands that live in ``agents``/``baselines``/
``benchmarks`` (train, eval, demo, report) are discovered through the ``steer_envs.commands`` entry-point group, so
``steer_envs`` never imports those packages: dependencies keep pointing one way.

A command's ``configure`` and ``run`` may be :func:`lazy` references (``"module:function"``): its module is then
imported only when the command runs, so ``steer-envs --help`` imports none of them (no FastAPI, no torch).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..registry import entry_points, import_object

#: how an interrupted command continues: ``(args, argv) -> argv of the command that resumes it``
ResumeArgs = Callable[[argparse.Namespace, list[str]], list[str]]


def rerun(args: argparse.Namespace, argv: list[str]) -> list[str]:
    """Resume by running the very same command again (run folders skip what is already done)."""
    return list(argv)


@dataclass(frozen=True)
class Command:
    """``configure`` adds arguments to the subparser; ``run`` executes and returns an exit code. ``resume``
    (``None``: the command cannot be resumed) says which command line continues an interrupted run."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int | None]
    resume: ResumeArgs | None = None


def lazy(path: str) -> Callable[..., Any]:
    """A function that imports ``path`` (``"module:function"``) when it is first called, and calls it."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return import_object(path)(*args, **kwargs)

    call.__qualname__ = call.__name__ = path
    return call


def lazy_command(name: str, help: str, module: str, configure: str = "configure", run: str = "run") -> Command:
    """A command whose ``configure`` and ``run`` live in ``module``, imported only when the command is chosen."""
    return Command(name, help, lazy(f"{module}:{configure}"), lazy(f"{module}:{run}"))


COMMANDS: dict[str, Command] = {}
ENTRY_POINT_GROUP = "steer_envs.commands"


def register_command(command: Command) -> Command:
    COMMANDS[command.name] = command
    return command


_LOADED: set[str] = set()


def load_plugins() -> None:
    """Call every entry point of the group once; each registers its commands."""
    for entry in entry_points(ENTRY_POINT_GROUP):
        if entry.name not in _LOADED:
            _LOADED.add(entry.name)
            entry.load()()
