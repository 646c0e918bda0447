"""CLI commands contributed by ``agents``: ``steer-envs train <target>`` and ``steer-envs barrier``.

``train`` is one command whose targets (``steering``, ...) live in their own modules; each module listed in
:data:`TRAIN_TARGET_MODULES` exposes ``register(register_train_target)``, so adding a target never touches the
others. A target is a :class:`steer_envs.cli.registry.Command` (name, help, configure, run) one level down.
"""

from __future__ import annotations

import argparse
import importlib

from steer_envs.cli.registry import Command, register_command

#: a train target has the shape of a top-level command
TrainTarget = Command

TRAIN_TARGETS: dict[str, TrainTarget] = {}
TRAIN_TARGET_MODULES: tuple[str, ...] = ("agents.steering.cli", "agents.actguide.cli")


def register_train_target(target: TrainTarget) -> TrainTarget:
    TRAIN_TARGETS[target.name] = target
    return target


def _load_targets() -> None:
    for module in TRAIN_TARGET_MODULES:
        importlib.import_module(module).register(register_train_target)


def _configure_train(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="target", required=True, metavar="TARGET")
    for target in TRAIN_TARGETS.values():
        target.configure(sub.add_parser(target.name, help=target.help, description=target.help))


def _run_train(args: argparse.Namespace) -> int | None:
    return TRAIN_TARGETS[args.target].run(args)


def _resume_train(args: argparse.Namespace, argv: list[str]) -> list[str]:
    target = TRAIN_TARGETS[args.target]
    return target.resume(args, argv) if target.resume is not None else list(argv)


def register_commands() -> None:
    """Called through the ``steer_envs.commands`` entry point."""
    from .actguide.cli import BARRIER_HELP, configure_barrier, run_barrier

    _load_targets()
    register_command(
        Command(
            "train", "train an agent: " + ", ".join(TRAIN_TARGETS), _configure_train, _run_train, resume=_resume_train
        )
    )
    register_command(Command("barrier", BARRIER_HELP, configure_barrier, run_barrier))
