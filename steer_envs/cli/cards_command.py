"""``steer-envs cards``: write (or check) one Markdown card per registered environment id."""

from __future__ import annotations

import argparse

from ..errors import SteerEnvsError
from ..paths import REPO_ROOT

DEFAULT_FOLDER = REPO_ROOT / "docs" / "envs"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default=str(DEFAULT_FOLDER), help=f"folder of the cards (default {DEFAULT_FOLDER})")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a card is missing or stale")


def run(args: argparse.Namespace) -> int:
    from ..envs.cards import registered_ids, stale_cards, write_cards

    if args.check:
        stale = stale_cards(args.out)
        if stale:
            raise SteerEnvsError(
                f"stale or missing env cards in {args.out}: {', '.join(stale)}; regenerate them with "
                f"`steer-envs cards --out {args.out}`"
            )
        print(f"{len(registered_ids())} env cards in {args.out} are up to date")
        return 0
    for path in write_cards(args.out):
        print(f"wrote {path}")
    return 0
