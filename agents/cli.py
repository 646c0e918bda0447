"""CLI commands contributed by ``agents``: ``steer-envs train <target>``.

``train`` is one command whose targets (``steering``, ``actguide``, ...) live in their own modules; each module
listed in :data:`TRAIN_TARGET_MODULES` exposes ``register(register_train_target)``. A target module that is not
written yet is skipped, so adding one never touches the others.
"""
from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class TrainTarget:
    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int | None]


TRAIN_TARGETS: dict[str, TrainTarget] = {}
TRAIN_TARGET_MODULES: tuple[str, ...] = ("agents.steering.cli", "agents.actguide.cli")


def register_train_target(target: TrainTarget) -> TrainTarget:
    TRAIN_TARGETS[target.name] = target
    return target


def _load_targets() -> None:
    for module in TRAIN_TARGET_MODULES:
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is not None and module.startswith(exc.name):
                continue  # target not written (yet)
            raise
        register = getattr(mod, "register", None)
        if register is not None:
            register(register_train_target)


def _configure_train(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="target", required=True, metavar="TARGET")
    for target in TRAIN_TARGETS.values():
        target.configure(sub.add_parser(target.name, help=target.help, description=target.help))


def _run_train(args: argparse.Namespace) -> int | None:
    return TRAIN_TARGETS[args.target].run(args)


def register_commands() -> None:
    """Called through the ``steer_envs.commands`` entry point."""
    from steer_envs.cli.registry import Command, register_command

    _load_targets()
    register_command(Command("train", "train an agent: " + ", ".join(TRAIN_TARGETS), _configure_train, _run_train))
