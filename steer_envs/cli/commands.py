"""The core commands: name, one-line help, and the module that configures and runs each.

Why a list of names instead of importing the command modules: ``steer-envs --help`` (and a mistyped command)
must answer at once, and the modules import FastAPI, torch or the retrieval stack. A command's module is imported
only when that command is chosen (:func:`~steer_envs.cli.registry.lazy_command`).
"""

from __future__ import annotations

from .registry import Command, lazy_command, register_command

_PACKAGE = "steer_envs.cli"

CORE_COMMANDS: tuple[Command, ...] = (
    lazy_command(
        "calibrate",
        "compare a simulator profile with real rollouts (searches, repeats, no-answer, F1)",
        f"{_PACKAGE}.calibrate_command",
    ),
    lazy_command(
        "cards",
        "write one Markdown card per registered env id (spaces, reward, info, options, a sample episode)",
        f"{_PACKAGE}.cards_command",
    ),
    lazy_command(
        "data", "inspect the data folder", f"{_PACKAGE}.data_commands", configure="configure_data", run="run_data"
    ),
    lazy_command(
        "retrieval-recall",
        "share of tasks with a gold supporting passage in the top k",
        f"{_PACKAGE}.data_commands",
        configure="configure_recall",
        run="run_recall",
    ),
    lazy_command(
        "search",
        "search the corpus (BM25)",
        f"{_PACKAGE}.data_commands",
        configure="configure_search",
        run="run_search",
    ),
    lazy_command(
        "reference-plans",
        "ACTGUIDE-RL reference plans: `reference-plans coverage` per benchmark",
        f"{_PACKAGE}.reference_plans_command",
    ),
    lazy_command(
        "serve-retriever", "serve the corpus over HTTP (Search-R1 / ASearcher API)", f"{_PACKAGE}.serve_command"
    ),
    lazy_command(
        "serve-env",
        "serve an env over OpenEnv's reset/step/state API (WebSocket and HTTP)",
        f"{_PACKAGE}.serve_env_command",
    ),
    lazy_command(
        "vllm",
        "install or run vLLM, the reference inference engine for LLM executors and steerers",
        f"{_PACKAGE}.vllm_command",
    ),
    lazy_command(
        "build-tiny-model",
        "write a small tool-calling model (offline; about 20 s of CPU once, 40 s on a new cache, then a copy) for "
        "TRL's GRPOTrainer examples and tests",
        f"{_PACKAGE}.tiny_model_command",
    ),
)


def register_core_commands() -> None:
    for command in CORE_COMMANDS:
        register_command(command)
