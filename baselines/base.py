"""What every method module shares: :class:`Method` (a registered recipe), :class:`MethodContext` (what it builds
in), the env ids the methods act in, and the option facts the method list shows.

Why a module of its own: the method list (:mod:`baselines.methods`), the registry (:mod:`baselines.registry`) and
the builders (:mod:`baselines.steering`, :mod:`baselines.handoff`, ...) all need these types; when they lived in
the registry, the registry imported the list, the list the builders, and the builders the registry again (an import
circle). Now every arrow points down to this module, which imports nothing of ``baselines`` and no torch.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from steer_envs.errors import SteerEnvsError
from steer_envs.ids import HANDOFF_ENV, PLANNING_ENV, STEERING_ENV, VERIFICATION_ENV  # noqa: F401  (re-exported)
from steer_envs.protocol import EnvProtocol, holds_protocol, make_env
from steer_envs.registry import import_object

#: the zero-shot method's options that only a served steerer reads, with their defaults (the method list shows them)
SERVED_ONLY_OPTIONS = {"top_logprobs": "20", "prompt_chars": "6000", "think_tokens": "48", "name_choice": "parse"}
#: the hand-off steerers' deployment-only options (they share one checkpoint; :mod:`baselines.handoff`)
HANDOFF_DEPLOY_OPTIONS = frozenset({"tau", "coverage", "every", "pass_bias"})


@holds_protocol(keywords=("executor", "benchmarks", "max_turns", "metric", "intervention_cost", "data_dir"))
@dataclass
class MethodContext:
    """Everything a method needs to build (and, if it learns, train) its policy."""

    #: the run's env protocol (executor, benchmarks, max_turns, metric, intervention_cost, data_dir: each also a
    #: keyword and an attribute, ``MethodContext(executor=...)``); its split is not used: :meth:`make_env` names one
    env_protocol: EnvProtocol = field(default_factory=EnvProtocol)
    options: dict[str, str] = field(default_factory=dict)
    #: where a learning method keeps its checkpoint (reused when present); ``None``: a temporary folder
    workdir: Path | None = None
    #: JSONL file for training curves (one object per logged step)
    training_log: Path | None = None
    #: interventions per decision measured for another method of the same run (``random:match=LABEL``)
    measured_rate: Callable[[str], float | None] = lambda label: None
    progress: bool = True
    seed: int = 0
    #: where a method's expensive rollouts run (a PoolConfig or RolloutPool; None = this process)
    pool: Any = None

    def make_env(self, env_id: str = STEERING_ENV, split: str = "train", action_mode: str = "discrete", **overrides: Any):
        """Build an env of this context's protocol (the executor, turn budget and metric of the run) on ``split``:
        :func:`steer_envs.make_env`."""
        return make_env(env_id, replace(self.env_protocol, split=split), action_mode=action_mode, **overrides)

    def option(self, key: str, default: Any, kind: Callable[[str], Any] = str) -> Any:
        if key not in self.options:
            return default
        try:
            return kind(self.options[key])
        except ValueError:
            raise SteerEnvsError(f"option {key}={self.options[key]!r} is not a valid {kind.__name__}") from None

    def checkpoint_dir(self) -> Path:
        if self.workdir is None:
            import tempfile

            self.workdir = Path(tempfile.mkdtemp(prefix="steer_envs_method_"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        return self.workdir


PolicyBuilder = Callable[[MethodContext], Any]


@dataclass(frozen=True)
class Method:
    """A registered method. ``options`` documents the accepted keys and their defaults (as strings)."""

    name: str
    help: str
    env_id: str
    #: the builder, or its import path ``"module:function"`` (imported when the method is built, not looked up)
    build: PolicyBuilder | str
    options: dict[str, str] = field(default_factory=dict)
    learns: bool = False
    action_mode: str = "discrete"
    #: a family name used to group rows in reports (reference, rule, steering, planning, ...)
    group: str = "steering"
    #: options that only change deployment (e.g. the gate threshold tau), not what is trained: methods that
    #: differ only in these share one checkpoint (a tau sweep trains once)
    deploy_options: frozenset[str] = frozenset({"tau"})
    #: the option that sets how often the method intervenes, for rate-matched comparisons (chosen on dev by the
    #: harness, :mod:`benchmarks.harness.operating`): ``tau`` (a deployment threshold), ``p`` (a probability per
    #: decision), ``cost`` (a training-time cost per intervention: each value is a training run); None: no knob
    rate_knob: str | None = None

    def builder(self) -> PolicyBuilder:
        return import_object(self.build) if isinstance(self.build, str) else self.build
