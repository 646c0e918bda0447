"""Subcommand registry.

Core commands register here directly. Commands that live in ``agents``/``baselines``/``benchmarks`` (train,
eval, demo, report) are discovered through the ``steer_envs.commands`` entry-point group, so ``steer_envs``
never imports those packages: dependencies keep pointing one way.
"""
from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from ..registry import entry_points


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
