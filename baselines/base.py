"""What every method module shares: :class:`Method` (a registered recipe), :class:`MethodContext` (what it builds
in) and the env ids the methods act in.

Why a module of its own: the method list (:mod:`baselines.methods`), the registry (:mod:`baselines.registry`) and
the builders (:mod:`baselines.steering`, :mod:`baselines.handoff`, ...) all need these types. Held by the registry,
they would make an import circle (the registry imports the list, the list the builders, and the builders the
registry); here every arrow points down to this module, which imports nothing of ``baselines`` but its option
types, and no torch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from steer_envs.errors import SteerEnvsError
from steer_envs.ids import HANDOFF_ENV, PLANNING_ENV, STEERING_ENV, VERIFICATION_ENV  # noqa: F401  (re-exported)
from steer_envs.protocol import EnvProtocol, make_env
from steer_envs.registry import import_object

from .options import MethodOptions, NoOptions

OptionsT = TypeVar("OptionsT", bound=MethodOptions)


@dataclass(kw_only=True)
class MethodContext(EnvProtocol):
    """Everything a method needs to build (and, if it learns, train) its policy: the run's env protocol
    (executor, benchmarks, max_turns, metric, intervention_cost, data_dir; its ``split`` is not read:
    :meth:`make_env` names one) and the method's own settings."""

    #: the method's parsed options (its :class:`~baselines.options.MethodOptions` dataclass; :func:`build_policy`
    #: sets them); None: the defaults of whatever class :meth:`options_of` asks for
    options: MethodOptions | None = None
    #: where a learning method keeps its checkpoint (reused when present); ``None``: a temporary folder
    workdir: Path | None = None
    #: JSONL file for training curves (one object per logged step)
    training_log: Path | None = None
    #: interventions per decision measured for another method of the same run (``random:match=LABEL``)
    measured_rate: Callable[[str], float | None] = lambda label: None
    progress: bool = True
    #: dev tasks per benchmark a method that chooses on dev (``best_fixed_rule``) scores its candidates on when its
    #: own option leaves the number open: the run's ``--limit``, so a small run chooses on a small dev set (0: all)
    dev_limit: int = 0
    seed: int = 0
    #: where a method's expensive rollouts run (a PoolConfig or RolloutPool; None = this process)
    pool: Any = None

    def make_env(
        self, env_id: str = STEERING_ENV, split: str = "train", action_mode: str = "discrete", **overrides: Any
    ):
        """Build an env of this context's protocol (the executor, turn budget and metric of the run) on ``split``:
        :func:`steer_envs.make_env`."""
        return make_env(env_id, replace(self.env_protocol, split=split), action_mode=action_mode, **overrides)

    def options_of(self, kind: type[OptionsT]) -> OptionsT:
        """This context's options as a builder's option class (the defaults when none were given); options of
        another class are an error (the builder was handed another method's options)."""
        if self.options is None:
            return kind()
        if not isinstance(self.options, kind):
            raise SteerEnvsError(
                f"this builder reads {kind.__name__}, but the context holds {type(self.options).__name__}"
            )
        return self.options

    def checkpoint_dir(self) -> Path:
        if self.workdir is None:
            import tempfile

            self.workdir = Path(tempfile.mkdtemp(prefix="steer_envs_method_"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        return self.workdir


PolicyBuilder = Callable[[MethodContext], Any]


@dataclass(frozen=True)
class Method:
    """A registered method. ``options`` is its options dataclass (:class:`~baselines.options.MethodOptions`: names,
    types, defaults, docs), or that class's import path ``"module:Class"``, imported when a spec of the method is
    parsed (so looking a method up imports neither its builder nor torch)."""

    name: str
    help: str
    env_id: str
    #: the builder, or its import path ``"module:function"`` (imported when the method is built, not looked up)
    build: PolicyBuilder | str
    options: type[MethodOptions] | str = NoOptions
    learns: bool = False
    action_mode: str = "discrete"
    #: a family name used to group rows in reports (reference, rule, steering, planning, ...)
    group: str = "steering"
    #: the option that sets how often the method intervenes, for rate-matched comparisons (chosen on dev by the
    #: harness, :mod:`benchmarks.harness.operating`): ``tau`` (a deployment threshold), ``p`` (a probability per
    #: decision), ``cost`` (a training-time cost per intervention: each value is a training run); None: no knob
    rate_knob: str | None = None
    #: how the rate knob is searched on dev (:data:`benchmarks.harness.operating.KNOB_SCALES`): ``logit`` (a
    #: threshold in (0, 1), bisected on its logit), ``unit`` (a probability in [0, 1], bisected), ``log`` (a
    #: non-negative training-time value: a grid walked upwards, then geometric bisection). None: ``logit`` for a
    #: deployment option (or any knob of a method that does not learn), ``log`` for a knob that changes training
    #: (every probe is then a training run)
    knob_scale: str | None = None
    #: the values a training-time knob's search walks first (``log`` scale), lowest first
    knob_grid: tuple[str, ...] = ("0.01", "0.1", "1", "10")
    #: the option that sets how much a learning method trains (a comparison matches it to the protocol's budget in
    #: measured env steps); None: the budget is measured as it comes and flagged when it misses
    budget_knob: str | None = None
    #: env steps one unit of ``budget_knob`` costs, when the method knows (a timestep count: 1.0); None: measured by
    #: a pilot run at the value the contender's spec gives (or the option's default)
    budget_knob_steps: float | None = None
    #: the split a learning method fits on: ``train`` (its budget is matched in a comparison) or ``dev`` (it chooses
    #: among fixed candidates by dev F1, as a knob search does: its dev steps are shown, not matched)
    fits_on: str = "train"
    #: the row reads hidden state no real supervisor sees (the oracle): headroom, never a contender
    headroom: bool = False
    #: ``"module:function"``: ``function(label, checkpoint_dir) -> (choice_text, [(label, setting), ...])``, what a
    #: dev-fitted method chose and the neighbouring settings a rate curve sweeps (a method with a rate knob needs
    #: none: its knob is swept)
    describe_choice: str | None = None

    def builder(self) -> PolicyBuilder:
        return import_object(self.build) if isinstance(self.build, str) else self.build

    def options_type(self) -> type[MethodOptions]:
        """The options dataclass (imported on first use when ``options`` is an import path)."""
        found = import_object(self.options) if isinstance(self.options, str) else self.options
        if not (isinstance(found, type) and issubclass(found, MethodOptions)):
            raise SteerEnvsError(
                f"method {self.name!r}: its options {self.options!r} are not a "
                "baselines.options.MethodOptions dataclass"
            )
        return found

    def defaults(self) -> MethodOptions:
        """The method's options with every default."""
        return self.options_type()()
