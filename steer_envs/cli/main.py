"""Entry point of the ``steer-envs`` console script."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..errors import SteerEnvsError
from . import calibrate_command, data_commands, guidance_command, serve_command  # noqa: F401  (each registers its commands)
from .registry import COMMANDS, load_plugins


def build_parser() -> argparse.ArgumentParser:
    load_plugins()
    parser = argparse.ArgumentParser(
        prog="steer-envs", description="Environments for steering and guiding LLM search agents."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS.values():
        command.configure(sub.add_parser(command.name, help=command.help, description=command.help))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = COMMANDS[args.command].run(args)
    except SteerEnvsError as exc:
        print(f"steer-envs {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"steer-envs {args.command}: interrupted; partial results (if any) are in the run folder", file=sys.stderr)
        return 130
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
