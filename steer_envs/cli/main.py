"""Entry point of the ``steer-envs`` console script."""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
from collections.abc import Collection, Sequence

from .. import __version__
from ..errors import SteerEnvsError
from .commands import register_core_commands
from .registry import COMMANDS, Command, load_plugins


def build_parser(configure: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The whole command line. ``configure``: the commands whose own arguments are added (None: all of them).
    :func:`main` adds only the chosen command's, so a command's module (FastAPI, torch) is imported only when it
    runs and ``steer-envs --help`` answers at once; every command is listed either way."""
    register_core_commands()
    load_plugins()
    parser = argparse.ArgumentParser(
        prog="steer-envs", description="Environments for steering and guiding LLM search agents."
    )
    parser.add_argument("--version", action="version", version=f"steer-envs {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS.values():
        subparser = sub.add_parser(command.name, help=command.help, description=command.help)
        if configure is None or command.name in configure:
            command.configure(subparser)
    return parser


def chosen_command(argv: Sequence[str]) -> str | None:
    """The command named on a command line: its first word that is not an option (None: none, as in ``--help``)."""
    return next((word for word in argv if not word.startswith("-")), None)


def interrupted_message(command: Command, args: argparse.Namespace, argv: list[str]) -> str:
    """What an interrupted command tells the user: what was kept, and the exact command that continues."""
    head = f"\nsteer-envs {command.name}: interrupted."
    if command.resume is None:
        return head + " Partial results (if any) are in the output folder."
    out = getattr(args, "out", None)
    kept = f" Everything finished so far is saved in {out}." if out else " Everything finished so far is saved."
    return head + kept + " Resume with:\n  steer-envs " + shlex.join(command.resume(args, argv))


def _stop_on_sigterm(signum, frame) -> None:
    raise KeyboardInterrupt  # a scheduler's SIGTERM (pre-emption, job end) stops as cleanly as Ctrl-C


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    chosen = chosen_command(argv)
    parser = build_parser(configure=() if chosen is None else (chosen,))
    args = parser.parse_args(argv)
    args.argv = argv[argv.index(chosen) + 1 :] if chosen in argv else []  # as typed after the command's name
    command = COMMANDS[args.command]
    previous = signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGTERM, _stop_on_sigterm)
    except ValueError:  # not the main thread (a test calling main from a worker): keep the default
        previous = None
    try:
        code = command.run(args)
        sys.stdout.flush()  # a reader that went away fails here, inside the handlers below, not at exit
    except SteerEnvsError as exc:
        print(f"steer-envs {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(interrupted_message(command, args, argv), file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (``steer-envs data info | head``): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
