"""``steer-envs build-tiny-model PATH``: write the small tool-calling model the TRL example trains (offline)."""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="the model folder to write (created; a model already there is replaced)")


def run(args: argparse.Namespace) -> int:
    from ..llm.tool_model import build_tiny_tool_model

    out = build_tiny_tool_model(args.path)
    print(f"wrote a tiny tool-calling model to {out} (GRPOTrainer(model={str(out)!r}); a smoke-test model)")
    return 0
