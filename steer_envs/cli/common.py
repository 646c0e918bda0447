"""Arguments shared by several subcommands."""
from __future__ import annotations

import argparse


def add_data_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        default=None,
        help="folder with tasks/, corpus/, trajectories/ (default: $STEER_ENVS_DATA, else ../shared/data)",
    )
