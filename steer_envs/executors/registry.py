"""Executor construction from a spec string ``<kind>:<argument>``.

Kinds register a factory; factories import their dependencies lazily. An unknown kind lists the valid ones.
Installed packages add kinds through the ``steer_envs.executors`` entry-point group (docs/extending.md); a
plugin factory may carry ``deterministic = True`` (default: False, the safe assumption for envs and checks) and
``io_bound = True`` (its episodes mostly wait on a server: run many at once in threads, :mod:`steer_envs.vector`).
"""

from __future__ import annotations

from collections.abc import Callable

from ..registry import LazyRegistry
from .base import Executor, ExecutorContext

ExecutorFactory = Callable[[str, ExecutorContext], Executor]


SPEC_HELP = (
    "sim:<profile|file.json>, hf:<path|gemma-3-270m>, llamacpp:<file.gguf>, openai:<model>@<base_url>, replay:<file>"
)
ENTRY_POINT_GROUP = "steer_envs.executors"
EXECUTORS: LazyRegistry[ExecutorFactory] = LazyRegistry("executor", SPEC_HELP, entry_point_group=ENTRY_POINT_GROUP)
#: whether executors of a kind are deterministic under a seed (for env registration and checks)
DETERMINISTIC_KINDS: dict[str, bool] = {}
#: whether an episode of a kind spends its time waiting on another process (a model server): such episodes run
#: many at once in threads of one process (the concurrent vector env, the thread rollout pool); CPU-bound kinds
#: (the simulator, a model in this process) would only contend for the interpreter lock
IO_BOUND_KINDS: dict[str, bool] = {}
#: whether an I/O-bound kind waits through :mod:`steer_envs.cooperative` (so many of its episodes share one thread
#: as greenlets); a kind whose waits block its thread runs its concurrent episodes on threads
COOPERATIVE_KINDS: dict[str, bool] = {}


def register_executor(
    kind: str, factory: ExecutorFactory | str, deterministic: bool, io_bound: bool = False, cooperative: bool = False
) -> None:
    """Register a kind. ``factory`` may be ``"module:function"``, imported on first use (keeps imports light)."""
    EXECUTORS.register(kind, factory)
    DETERMINISTIC_KINDS[kind] = deterministic
    IO_BOUND_KINDS[kind] = io_bound
    COOPERATIVE_KINDS[kind] = cooperative


register_executor("sim", "steer_envs.executors.sim:make_sim_executor", deterministic=True)
register_executor("hf", "steer_envs.executors.llm_search:make_hf_executor", deterministic=False)
register_executor("llamacpp", "steer_envs.executors.llm_search:make_llamacpp_executor", deterministic=False)
register_executor(
    "openai",
    "steer_envs.executors.llm_search:make_openai_executor",
    deterministic=False,
    io_bound=True,
    cooperative=True,
)
register_executor("replay", "steer_envs.executors.replay:make_replay_executor", deterministic=True)


def parse_spec(spec: str) -> tuple[str, str]:
    return EXECUTORS.parse(spec)


def make_executor(spec: str, context: ExecutorContext | None = None, **kwargs) -> Executor:
    """Build an executor, e.g. ``make_executor("sim:default", max_turns=10)``."""
    kind, arg = parse_spec(spec)
    ctx = context or ExecutorContext(**kwargs)
    return EXECUTORS.resolve(kind)(arg, ctx)


def _declared(kind: str, table: dict[str, bool], attribute: str) -> bool:
    """What ``table`` says of ``kind``; for a plugin's kind, what its factory declares as ``attribute`` (kept)."""
    if kind not in table:
        table[kind] = bool(getattr(EXECUTORS.resolve(kind), attribute, False))
    return table[kind]


def is_deterministic(spec: str) -> bool:
    return _declared(parse_spec(spec)[0], DETERMINISTIC_KINDS, "deterministic")


def is_io_bound(spec: str | None) -> bool:
    """Whether episodes on executor ``spec`` mostly wait on a server (``openai:``; a plugin's factory may say
    ``io_bound = True``); False for no executor (``GuidedSearch-v0``) or an unparsable spec (its env reports it)."""
    if not spec:
        return False
    try:
        kind = parse_spec(spec)[0]
    except Exception:  # noqa: BLE001 - the env that uses the spec gives the clear error
        return False
    try:
        return _declared(kind, IO_BOUND_KINDS, "io_bound")
    except Exception:  # noqa: BLE001 - as above
        return False


def waits_cooperatively(spec: str | None) -> bool:
    """Whether episodes on executor ``spec`` can share one thread as greenlets: a CPU-bound kind (nothing to wait
    for) or an I/O-bound one whose waits yield (``openai:``; a plugin's factory may say ``cooperative = True``).
    False for an I/O-bound kind that blocks its thread while it waits: its episodes need threads."""
    if not spec or not is_io_bound(spec):
        return True
    return _declared(parse_spec(spec)[0], COOPERATIVE_KINDS, "cooperative")  # parsed by is_io_bound already
