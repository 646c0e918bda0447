"""The rate-matched comparison: any registered method is a contender, at the same rate and the same budget.

One executor profile, one pipeline (``steer-envs compare``), resumable at every step. The protocol (profile,
splits, task counts, seeds, budget, rate target, tolerances, contenders) is one :class:`ComparisonPlan`; named
presets live in :mod:`.protocols`. No method is special here: what a method declares on its registry entry
(:class:`baselines.base.Method`) decides what the harness does with it.

1. **Train and choose on dev.** A contender whose options have a ``seed`` is built once per training seed
   (``train_seeds``). A contender that learns on the train split is given the protocol's budget: the env steps the
   ``budget_from`` row's training measured (or ``budget_steps``), matched through its ``budget_knob`` within
   ``budget_tolerance`` (:meth:`Comparison.match_budget`); a learner without a budget knob is measured as it comes.
   A contender's ``rate_knob`` is set on the *dev* split so that it intervenes ~``target`` times per task
   (:mod:`.operating`): a deployment knob by bisection per training seed (each model has its own scale), a
   training-time knob by a grid walk plus bisection on training seed 0 (the chosen value then trained with the
   other seeds). A contender without a knob runs as built (one that fits on dev, as the best fixed rule, chooses
   there) and its dev rate is measured.
2. **Evaluate once** on the report split (``split``; test for reported results): every row on the same tasks and
   seeds, summarised with intervals that resample tasks within benchmarks *and* training seeds; the ``focus`` row
   paired with every other row, and read against the ``bar`` row in the closing verdict.
3. **Curves**: each knob swept around its dev choice (no new choice is made), F1 gain against interventions per
   task on one plot; the fast path's Spearman with measured q(s) on held-out states for the ``spearman_rows``.

Who may win. ★ and the verdict go only to *contenders matched in rate and budget*: a row with a knob whose dev rate
ended within the tolerance of the target (a row without a knob: at most the target plus the tolerance, since it
cannot be raised to it), and, when it learns on the train split, whose measured budget is within
``budget_tolerance`` of the protocol's. Headroom rows (``Method.headroom``: the oracle), rows at their own rate
(``own_rate_rows``: a plan or a verdict is one decision, so no knob brings them to the target) and context rows
(``context_rows``: shown as built) are never contenders.

Output in ``OUT``: ``dev/`` (choices.json, every probe's episodes), ``<split>/`` (the table's episodes),
``<split>_curves/``, ``checkpoints/`` (shared by all three), ``comparison.json``, ``comparison.md``,
``plots/rate_curves.png``. With ``split=dev`` it is the development loop (the knobs are then chosen and reported on
the same split: fine for development, never for a reported result).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from baselines.options import format_value
from baselines.registry import MethodContext, get_method, parse_method
from steer_envs.atomic import atomic_write_text
from steer_envs.cpu_threads import cpu_thread_default
from steer_envs.data import BENCHMARKS
from steer_envs.episodes import EpisodeLog
from steer_envs.errors import SteerEnvsError
from steer_envs.registry import import_object
from steer_envs.rollouts import using_pool

from .budget import Budget, build_measured, format_steps
from .config import EvalConfig
from .operating import (
    KNOB_SCALES,
    Knob,
    KnobChoice,
    choose_rate,
    choose_training_knob,
    interventions_per_task,
    knob_of,
    without_option,
)
from .runfolder import RunFolder
from .runner import REFERENCE, evaluate, method_context
from .setting import setting_card
from .stats import HierarchicalBootstrap, Interval, MethodSummary, RowRuns, summarize_rows
from .sweeps import with_option
from .tables import closing_line, comparison_table, display_name, headroom_names, pairwise_table
from .verdicts import NOT_SHOWN, OPPOSITE, REPRODUCES, verdict

BUDGET_FILE = "budget_match.json"
#: attempts :meth:`Comparison.match_budget` makes (each a training run) before it keeps the closest
BUDGET_ATTEMPTS = 4


@dataclass
class ComparisonPlan:
    """Everything one comparison run depends on: the protocol (a named preset of :mod:`.protocols`, or ``custom``)
    and where it runs. ``contenders``: method specs in table order after the reference (a training seed is added
    per seed to a method with a ``seed`` option)."""

    out: Path
    #: the preset this plan came from (printed on the table's card)
    protocol: str = "custom"
    executor: str = "sim:default"
    benchmarks: tuple[str, ...] = BENCHMARKS
    split: str = "test"
    contenders: tuple[str, ...] = ()
    #: the row every gain is measured from
    reference: str = REFERENCE
    #: the row paired with every other row and read against ``bar`` in the verdict ('': the last contender)
    focus: str = ""
    #: the row the verdict reads ``focus`` against (''; none)
    bar: str = ""
    #: the row whose measured training budget is the protocol's budget ('': ``budget_steps``)
    budget_from: str = ""
    #: the protocol's budget in env steps when ``budget_from`` is '' (0: learners are measured, not matched)
    budget_steps: int = 0
    budget_tolerance: float = 0.10
    train_seeds: int = 3
    seeds: int = 3
    limit: int = 0
    dev_seeds: int = 1
    dev_limit: int = 0
    target: float = 1.0
    tolerance: float = 0.05
    max_probes: int = 10
    max_turns: int = 10
    #: training runs a training-time knob's search may make (grid walk + bisection), and how close to ``target`` it
    #: stops (looser than a deployment knob's: every probe is a training run)
    train_knob_probes: int = 6
    train_knob_tolerance: float = 0.1
    #: method name -> the grid its training-time knob walks (default: the method's ``knob_grid``)
    knob_grids: dict[str, tuple[str, ...]] = field(default_factory=dict)
    curve_seeds: int = 1
    #: offsets on logit(knob) a ``logit`` knob's rate curve sweeps, and factors a ``unit`` knob's sweeps
    curve_logit_offsets: tuple[float, ...] = (-4.0, -2.0, 0.0, 2.0, 4.0)
    curve_unit_scales: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0)
    curves: bool = True
    #: rows whose fast path's Spearman with measured q(s) is measured (steerers with a fast path)
    spearman_rows: tuple[str, ...] = ()
    spearman_tasks: int = 20
    #: methods shown beside the contenders, as they are (no knob, no training seeds): context, not contenders
    context_rows: tuple[str, ...] = ()
    #: method names run at their own rate with the budget row's (else the focus row's) trainer options and training
    #: seeds (planning, verification); shown in the table, never contenders
    own_rate_rows: tuple[str, ...] = ()
    data_dir: str | None = None
    #: where trained models live (default OUT/checkpoints); another comparison's, to reuse its trained rows
    checkpoints: Path | None = None
    progress: bool = True
    pool: Any = None
    #: seconds spent, summed over resumed runs (filled in while running)
    seconds: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        self.contenders = tuple(self.contenders)
        if self.train_seeds < 1:
            raise SteerEnvsError(f"--train-seeds must be >= 1, got {self.train_seeds}")
        if not self.target > 0:
            raise SteerEnvsError(f"--target (interventions per task) must be > 0, got {self.target}")
        names = [row_name(spec, self.contenders) for spec in self.contenders]
        if len(set(names)) != len(names):
            raise SteerEnvsError(f"two contenders have the same label: {sorted(names)}")
        for role in ("focus", "bar", "budget_from"):
            value = getattr(self, role)
            if value and self.contenders and value not in names:
                raise SteerEnvsError(f"{role} {value!r} is not one of the contenders ({', '.join(names)})")
        self.own_rate_rows = tuple(self.own_rate_rows)
        for name in self.own_rate_rows:
            if parse_method(name).label != name or name in names:
                raise SteerEnvsError(
                    f"--own-rate-rows takes method names without options (their training options are the focus "
                    f"row's), other than the contenders; got {name!r} (e.g. planning_rl verification_rl)"
                )

    @property
    def row_names(self) -> list[str]:
        """The contenders' row names, in order."""
        return [row_name(spec, self.contenders) for spec in self.contenders]

    @property
    def focus_row(self) -> str:
        return self.focus or (self.row_names[-1] if self.contenders else "")

    def spec_of(self, name: str) -> str:
        """The contender spec whose row is ``name``."""
        for spec in self.contenders:
            if row_name(spec, self.contenders) == name:
                return spec
        raise SteerEnvsError(f"no contender makes row {name!r} ({', '.join(self.row_names)})")

    def not_contenders(self) -> frozenset[str]:
        """Rows that never take the ★ or the closing verdict whatever they score: headroom, rows at their own rate
        (another operating point) and context rows (no knob searched on dev, one training seed), unless a context
        row repeats a contender's name, which then stays that row."""
        context = {parse_method(spec).label for spec in self.context_rows} - set(self.row_names)
        return headroom_names() | frozenset(self.own_rate_rows) | frozenset(context)

    def config(self, split: str, seeds: int, limit: int) -> EvalConfig:
        return EvalConfig(
            executor=self.executor,
            benchmarks=tuple(self.benchmarks),
            split=split,
            seeds=seeds,
            limit=limit,
            max_turns=self.max_turns,
            data_dir=self.data_dir,
        )


def row_name(spec: str, contenders: Sequence[str] = ()) -> str:
    """A contender's row name: its method's name, or its whole label when another contender is of the same
    method (two settings of one method are two rows)."""
    name = parse_method(spec).name
    same = [c for c in contenders if parse_method(c).name == name]
    return name if len(same) <= 1 else parse_method(spec).label


@dataclass
class Row:
    """A table row: its name and one label per training seed (each label's knob already chosen on dev).
    ``matched``: in rate (see the module's *Who may win*); ``budget_matched``: in budget (rows that do not learn
    on the train split: True). A row that is not matched in both never takes the ★ or the verdict."""

    name: str
    labels: list[str]
    knob: str = "–"
    matched: bool = True
    budget_matched: bool = True
    dev_rate: float | None = None
    #: the training-time knob's values trained on dev while choosing (its rate curve's points: no new training)
    probes: list[str] = field(default_factory=list)


def rate_matched(choices, target: float, tolerance: float) -> bool:
    """Whether every dev choice's rate is within ``tolerance`` of ``target`` (the search may end without one:
    its probes ran out, or the knob's range cannot reach the target)."""
    return all(abs(c.dev_rate - target) <= tolerance for c in choices)


def not_matched_note(names) -> str:
    """The line under the table naming the rows that are not matched in rate or budget (''  when none)."""
    if not names:
        return ""
    listed = ", ".join(f"`{name}`" for name in names)
    return (
        f"\n*Not matched: {listed} (the dev search ended outside the rate tolerance of the target, or the measured "
        "training budget is outside the budget tolerance; see the operating point and budget): shown, but not a "
        "contender for the ★ or the verdict.*\n"
    )


def _moved(label: str, knob: Knob, step: float) -> str:
    """``label`` with its deployment knob moved by ``step``: an offset on the logit, or a factor (capped)."""
    scale = KNOB_SCALES[knob.scale]
    value = float(parse_method(label).given[knob.option])
    if knob.scale == "logit":
        x = scale.from_x(scale.to_x(value) + step)
        text = f"{min(max(x, 1e-9), 1 - 1e-9):.4g}"
    else:
        text = f"{min(scale.hi, value * step):.4g}"
    return with_option(label, knob.option, text)


def _curve_word(knob: Knob, step: float) -> str:
    return f"logit {knob.option} {step:+g}" if knob.scale == "logit" else f"{knob.option} x{step:g}"


class Comparison:
    def __init__(self, plan: ComparisonPlan, log: Callable[[str], None] = print) -> None:
        self.plan, self.log = plan, log
        self.checkpoints = Path(plan.checkpoints) if plan.checkpoints else plan.out / "checkpoints"
        self.dev = RunFolder(plan.out / "dev", plan.config("dev", plan.dev_seeds, plan.dev_limit), self.checkpoints)
        same = plan.split == "dev" and plan.seeds == plan.dev_seeds and plan.limit == plan.dev_limit
        self.report = (
            self.dev
            if same
            else RunFolder(plan.out / plan.split, plan.config(plan.split, plan.seeds, plan.limit), self.checkpoints)
        )
        self.rows: dict[str, Row] = {}
        self.pool = None
        self._curves: RunFolder | None = None

    @property
    def curves(self) -> RunFolder:
        """The rate curves' run folder (created on first use)."""
        if self._curves is None:
            p = self.plan
            self._curves = RunFolder(
                p.out / f"{p.split}_curves", p.config(p.split, p.curve_seeds, p.limit), self.checkpoints
            )
        return self._curves

    # -- helpers ------------------------------------------------------------------------------------------------
    def _timed(self, key: str, fn: Callable[[], Any]) -> Any:
        times_path = self.plan.out / "wall_times.json"
        times = json.loads(times_path.read_text(encoding="utf-8")) if times_path.is_file() else {}
        start = time.perf_counter()
        try:
            return fn()
        finally:
            times[key] = times.get(key, 0.0) + time.perf_counter() - start
            self.plan.seconds = times
            self.plan.out.mkdir(parents=True, exist_ok=True)
            atomic_write_text(times_path, json.dumps(times, indent=2) + "\n")

    def _evaluate(self, folder: RunFolder, label: str) -> None:
        evaluate(folder, label, progress=self.plan.progress, log=self.log, pool=self.pool)

    def train(self, spec: str) -> Budget:
        """Build (train, or load) ``spec`` in the shared checkpoints and return its measured budget."""
        parsed = parse_method(spec)
        context = method_context(self.dev, parsed.label, self.plan.progress, parsed.training_label, pool=self.pool)
        build_measured(parsed, context)
        return Budget.read(context.workdir) or Budget()

    def budget_of(self, label: str) -> Budget | None:
        parsed = parse_method(label)
        return Budget.read(self.dev.checkpoint_dir(parsed.training_label))

    def _spent(self, name: str) -> float:
        """Mean measured training budget (env steps) over the training seeds of row ``name`` (0: none)."""
        row = self.rows.get(name)
        return _mean(b.env_steps for b in (self.budget_of(label) for label in row.labels) if b) if row else 0.0

    def budget(self) -> float:
        """The protocol's budget in env steps: the ``budget_from`` row's measured mean, or ``budget_steps``."""
        p = self.plan
        return self._spent(p.budget_from) if p.budget_from else float(p.budget_steps)

    def seeded(self, spec: str) -> list[str]:
        """``spec`` once per training seed when its method has a ``seed`` option, else once."""
        if "seed" not in get_method(parse_method(spec).name).options_type().option_names():
            return [parse_method(spec).label]
        return [with_option(spec, "seed", str(s)) for s in range(self.plan.train_seeds)]

    # -- step 1: train, match budgets, choose on dev -------------------------------------------------------------
    def choose(self) -> dict[str, Row]:
        p = self.plan
        if not p.contenders:
            raise SteerEnvsError("a comparison needs contenders: --method SPEC (repeatable) or a --protocol preset")
        rows: dict[str, Row] = {p.reference: Row(p.reference, [p.reference])}
        order = sorted(p.contenders, key=lambda spec: row_name(spec, p.contenders) != p.budget_from)
        self.rows = rows
        for spec in order:  # the budget's source first: every other learner is matched to what it measured
            name = row_name(spec, p.contenders)
            rows[name] = self.contend(name, spec)
        rows.update(self.own_rate(p.own_rate_rows))
        for spec in p.context_rows:
            label = parse_method(spec).label
            rows.setdefault(label, Row(label, [label], "– (shown for context)"))
        names = [p.reference, *p.row_names, *p.own_rate_rows]
        self.rows = {name: rows[name] for name in [*names, *(n for n in rows if n not in names)]}
        return self.rows

    def contend(self, name: str, spec: str) -> Row:
        """One contender's row: trained per training seed (its budget matched), its knob chosen on dev."""
        p = self.plan
        parsed = parse_method(spec)
        method = get_method(parsed.name)
        knob = knob_of(parsed.name)
        learner = method.learns and method.fits_on == "train"
        budget = self.budget() if learner and name != p.budget_from else 0.0
        if budget and method.budget_knob:
            spec = self.match_budget(spec, int(budget))
        labels = self.seeded(spec)
        if knob is None:
            for label in labels:
                self.train(label)
                self._evaluate(self.dev, label)
            rates = [interventions_per_task(self.dev, label) for label in labels]
            dev_rate = _mean(rates)
            text = self._chosen_text(labels[0]) or f"as built (dev rate {dev_rate:.2f})"
            row = Row(name, labels, text, dev_rate <= p.target + p.tolerance, dev_rate=dev_rate)
        elif not knob.trains:
            choices = [self._choose(label) for label in labels]
            row = Row(
                name, [c.label for c in choices], _knob_text(choices), rate_matched(choices, p.target, p.tolerance)
            )
            row.dev_rate = _mean(c.dev_rate for c in choices)
        else:
            grid = tuple(p.knob_grids.get(parsed.name) or method.knob_grid)
            choice = choose_training_knob(
                self.dev, labels[0], grid, p.target, p.train_knob_tolerance, p.train_knob_probes,
                progress=p.progress, log=self.log, pool=self.pool,
            )  # fmt: skip
            probes = [pr["value"] for pr in choice.probes]
            others = [with_option(label, knob.option, choice.value) for label in labels[1:]]
            for label in others:
                self.train(label)
            row = Row(
                name,
                [choice.label, *others],
                f"{knob.option}={choice.value} (dev rate {choice.dev_rate:.2f}; trained on dev at "
                f"{', '.join(probes)}, grid walk then bisection; training seed 0)",
                rate_matched([choice], p.target, p.train_knob_tolerance),
                dev_rate=choice.dev_rate,
                probes=probes,
            )
        if budget:
            spent = _mean(b.env_steps for b in (self.budget_of(label) for label in row.labels) if b)
            row.budget_matched = abs(spent / budget - 1) <= p.budget_tolerance
        return row

    def _choose(self, spec: str) -> KnobChoice:
        p = self.plan
        return choose_rate(
            self.dev, spec, p.target, p.tolerance, p.max_probes, progress=p.progress, log=self.log, pool=self.pool
        )

    def _chosen_text(self, label: str) -> str | None:
        """What a dev-fitted method chose (its ``describe_choice``), or None."""
        describe = get_method(parse_method(label).name).describe_choice
        if describe is None:
            return None
        text, _ = import_object(describe)(label, self.dev.checkpoint_dir(parse_method(label).training_label))
        return text

    def match_budget(self, spec: str, budget: int) -> str:
        """``spec`` with its method's ``budget_knob`` set so that training seed 0 measures ``budget`` env steps
        within ``budget_tolerance``: the first value from the knob's known steps per unit, or from a measured pilot
        at the value ``spec`` gives (or the default); then corrected in proportion to what each attempt measured
        (each attempt a training run, recorded in budget_match.json). A training-time rate knob is set to the first
        value its search will probe, so the last attempt is also the search's first probe."""
        p = self.plan
        parsed = parse_method(spec)
        method = get_method(parsed.name)
        option = str(method.budget_knob)
        path = p.out / BUDGET_FILE
        records = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        key = without_option(spec, option)
        done = records.get(key)
        if done and done.get("budget") == budget:
            return done["spec"]
        knob = knob_of(parsed.name)
        probe = key
        if knob is not None and knob.trains:
            grid = p.knob_grids.get(parsed.name) or method.knob_grid
            probe = with_option(key, knob.option, f"{min(float(v) for v in grid):.3g}")
        kind = type(getattr(method.defaults(), option))

        def value_text(x: float) -> str:
            return format_value(kind(max(1, round(x))) if kind is int else kind(x))

        def measure(value: str) -> int:
            label = with_option(probe, option, value)
            return self.train(self.seeded(label)[0]).env_steps

        record: dict[str, Any] = {"budget": budget, "attempts": []}
        if method.budget_knob_steps:
            value = value_text(budget / method.budget_knob_steps)
        else:
            pilot = parsed.given.get(option) or format_value(getattr(method.defaults(), option))
            steps = measure(pilot)
            record["pilot"] = {"value": pilot, "env_steps": steps}
            value = value_text(budget * float(pilot) / max(steps, 1))
        for _ in range(BUDGET_ATTEMPTS):
            measured = measure(value)
            record["attempts"].append({"value": value, "env_steps": measured})
            self.log(f"[budget] {parsed.name} {option}={value}: {measured} env steps for a budget of {budget}")
            if abs(measured / budget - 1) <= p.budget_tolerance:
                break
            value = value_text(float(value) * budget / max(measured, 1))
        closest = min(record["attempts"], key=lambda a: abs(a["env_steps"] / budget - 1))
        record["spec"] = with_option(key, option, closest["value"])
        records[key] = record
        p.out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(records, indent=2) + "\n")
        return record["spec"]

    def not_matched(self) -> list[str]:
        return [name for name, row in self.rows.items() if not (row.matched and row.budget_matched)]

    def own_rate(self, names: tuple[str, ...]) -> dict[str, Row]:
        """The rows of ``names`` at their own rate: each trained (or loaded) once per training seed with the trainer
        options of the protocol's budget row (else the focus row: :func:`own_rate_labels`), its knob left where the
        method puts it."""
        rows = {}
        trainer = self.plan.spec_of(self.plan.budget_from or self.plan.focus_row) if names else ""
        for name in names:
            labels = own_rate_labels(trainer, name, self.plan.train_seeds)
            for label in labels:
                self.train(label)
            rows[name] = Row(name, labels, own_rate_knob(labels[0]))
        return rows

    # -- step 2: the report split -------------------------------------------------------------------------------
    def evaluate_rows(self) -> None:
        for row in self.rows.values():
            for label in row.labels:
                self._evaluate(self.report, label)

    def summaries(
        self, folder: RunFolder | None = None, rows: dict[str, Row] | None = None
    ) -> tuple[list[MethodSummary], HierarchicalBootstrap]:
        folder = folder or self.report
        runs = row_runs(folder, rows or self.rows)
        boot = HierarchicalBootstrap(runs, folder.config.benchmarks)
        return summarize_rows(runs, folder.config.benchmarks, reference=self.plan.reference, boot=boot), boot

    # -- step 3: curves and the fast path's Spearman --------------------------------------------------------------
    def curve_rows(self) -> dict[str, list[Row]]:
        """Per contender, one row per knob setting around its dev choice (the choice itself included): a ``logit``
        knob shifted on its logit, a ``unit`` knob scaled (capped at 1), a training-time knob at the values its
        search trained, a dev-fitted method at the settings its ``describe_choice`` names."""
        p = self.plan
        out: dict[str, list[Row]] = {}
        for name in p.row_names:
            row = self.rows.get(name)
            if row is None:
                continue
            method_name = parse_method(row.labels[0]).name
            knob = knob_of(method_name)
            if knob is None:
                describe = get_method(method_name).describe_choice
                if describe is not None:
                    checkpoint = self.dev.checkpoint_dir(parse_method(row.labels[0]).training_label)
                    _, sweep = import_object(describe)(row.labels[0], checkpoint)
                    out[name] = [Row(f"{name}@{setting}", [label], setting) for label, setting in sweep]
                continue
            if knob.trains:
                chosen = parse_method(row.labels[0]).given[knob.option]
                base = without_option(row.labels[0], knob.option)
                out[name] = [
                    Row(
                        f"{name}@{v}",
                        row.labels if v == chosen else [with_option(base, knob.option, v)],
                        f"{knob.option} {v}",
                    )
                    for v in sorted(row.probes, key=float)
                ]
                continue
            steps = p.curve_logit_offsets if knob.scale == "logit" else p.curve_unit_scales
            out[name] = [
                Row(
                    f"{name}@{_curve_word(knob, s)}",
                    [_moved(label, knob, s) for label in row.labels],
                    _curve_word(knob, s),
                )
                for s in steps
            ]
        return out

    def run_curves(self) -> dict[str, list[dict]]:
        curves = {}
        for name, points in self.curve_rows().items():  # a capped knob can repeat a point: keep it once
            seen: set[tuple[str, ...]] = set()
            curves[name] = [r for r in points if tuple(r.labels) not in seen and not seen.add(tuple(r.labels))]
        reference = self.plan.reference
        self._evaluate(self.curves, reference)
        for points in curves.values():
            for row in points:
                for label in row.labels:
                    self._evaluate(self.curves, label)
        result: dict[str, list[dict]] = {}
        for name, points in curves.items():
            rows = {reference: Row(reference, [reference]), **{r.name: r for r in points}}
            summaries, _ = self.summaries(self.curves, rows)
            result[name] = [
                {
                    "point": s.method,
                    "setting": rows[s.method].knob,
                    "rate": s.interventions_per_task,
                    "gain": None if s.avg_gain is None else asdict(s.avg_gain),  # None: no task scored
                    "gain_per_intervention": s.gain_per_intervention,
                    "train_seeds": s.n_train_seeds,
                }
                for s in summaries
                if s.method != reference
            ]
        return result

    def spearman(self) -> dict[str, Any]:
        """The fast path's Spearman with measured q(s) on held-out states of the report split, per training seed of
        the first of ``spearman_rows`` in the table ({} when none is)."""
        p = self.plan
        names = [name for name in p.spearman_rows if name in self.rows]
        if not names:
            return {}
        cpu_thread_default()
        labels = self.rows[names[0]].labels
        measured = spearman_per_label(self.report, self.dev, labels, p.spearman_tasks, self.pool, self.log)
        return {"split": p.split, "row": names[0], **measured}

    # -- the whole pipeline ---------------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        p = self.plan
        with using_pool(p.pool) as pool:
            self.pool = pool
            self._timed("choose on dev + train", self.choose)
            self._timed(f"evaluate on {p.split}", self.evaluate_rows)
            curves = self._timed("curves", self.run_curves) if p.curves else {}
            spearman = self._timed("spearman", self.spearman) if p.spearman_tasks else {}
        return self.write(curves, spearman)

    def budget_text(self, row: Row) -> str | None:
        """A row's *Budget* cell: its measured env steps (mean over training seeds; ``(dev)``: spent choosing on
        dev), with how far it is off the protocol's budget when it missed; ``0`` for a method that does not learn,
        None for the reference."""
        spent = [b.env_steps for b in (self.budget_of(label) for label in row.labels) if b is not None]
        method = get_method(parse_method(row.labels[0]).name)
        if spent:
            text = format_steps(_mean(spent)) + (" (dev)" if method.fits_on == "dev" else "")
            budget = self.budget() if row.name != self.plan.budget_from else 0.0
            if not row.budget_matched and budget:
                text += f" (off the budget by {100 * (_mean(spent) / budget - 1):+.0f}%)"
            return text
        if method.learns is False and row.name != self.plan.reference:
            return "0"
        return None

    def row_record(self, row: Row, budget: str | None) -> dict[str, Any]:
        """What ``comparison.json`` (and a profile's summary) keeps of a row: its labels, knob, matching and budget,
        and the wall seconds its builds took (mean over training seeds; None for a row nothing was built for)."""
        seconds = [b.seconds for b in (self.budget_of(label) for label in row.labels) if b is not None]
        return {
            "labels": row.labels,
            "knob": row.knob,
            "matched": row.matched,
            "budget_matched": row.budget_matched,
            "dev_rate": row.dev_rate,
            "budget": budget,
            "build_seconds": round(_mean(seconds), 1) if seconds else None,
        }

    def write(self, curves: dict[str, list[dict]], spearman: dict[str, Any]) -> dict[str, Any]:
        from . import plots

        p = self.plan
        summaries, boot = self.summaries()
        focus = p.focus_row
        pairs = {(focus, name): boot.gain(focus, name)[1] for name in self.rows if name != focus}
        budgets = {name: text for name, row in self.rows.items() if (text := self.budget_text(row)) is not None}
        knobs = {name: row.knob for name, row in self.rows.items()}
        card = setting_card(self.report, p.train_seeds, (self.dev,))
        plot = plots.rate_curves(curves, p.target, p.out / "plots" / "rate_curves.png") if curves else None
        data = {
            "plan": {
                k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(p).items() if k not in ("pool", "seconds")
            },
            "budget": self.budget(),
            "card": asdict(card),
            "rows": {name: self.row_record(row, budgets.get(name)) for name, row in self.rows.items()},
            "summaries": [_summary_dict(s) for s in summaries],
            "pairwise": [{"a": a, "b": b, **asdict(i)} for (a, b), i in pairs.items()],
            "curves": curves,
            "spearman": spearman,
            "seconds": p.seconds,
            "folders": {
                "dev": str(self.dev.root),
                "report": str(self.report.root),
                "curves": str(self.curves.root) if curves else None,
            },
        }
        atomic_write_text(p.out / "comparison.json", json.dumps(data, indent=2, default=str) + "\n")
        text = render(self, summaries, pairs, budgets, knobs, card, curves, spearman, plot)
        atomic_write_text(p.out / "comparison.md", text)
        return data


def spearman_per_label(
    folder: RunFolder,
    trained: RunFolder,
    labels: Sequence[str],
    tasks_per_benchmark: int,
    pool: Any = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """The fast path's Spearman with measured q(s) (within and across tasks) of each trained steerer ``labels`` (its
    model in ``trained``'s checkpoints), on the states of the first ``tasks_per_benchmark`` tasks of each benchmark
    of ``folder``'s split: ``{"tasks": n, "seeds": [{"label": ..., "within": ..., "across": ...}, ...], "within": mean,
    "across": mean}`` (each mean over the labels whose value is a number; NaN when none is)."""
    import numpy as np

    from agents.steering.evaluate import fast_path_spearman
    from agents.steering.rollouts import make_steering_env
    from agents.steering.trainer import load_model
    from baselines.steering import steering_config

    cfg = folder.config
    per_bench: dict[str, list[str]] = {}
    for t in cfg.tasks():
        if len(per_bench.setdefault(t.benchmark, [])) < tasks_per_benchmark:
            per_bench[t.benchmark].append(t.id)
    ids = [t for v in per_bench.values() for t in v]
    env = make_steering_env(
        cfg.executor, cfg.split, action_mode="discrete", data_dir=cfg.data_dir, max_turns=cfg.max_turns, task_ids=ids
    )
    out: dict[str, Any] = {"tasks": len(ids), "seeds": []}
    try:
        for label in labels:
            parsed = parse_method(label)
            steer_cfg = steering_config(MethodContext(), parsed.options)
            steerer, _ = load_model(trained.checkpoint_dir(parsed.training_label))
            result = fast_path_spearman(env, steerer, ids, G=steer_cfg.G, N=steer_cfg.N, seed=11, pool=pool)
            out["seeds"].append({"label": label, **result})
            log(f"[spearman] {label}: across {result['across']:.3f}, within {result['within']:.3f}")
    finally:
        env.close()
    for key in ("across", "within"):
        values = [s[key] for s in out["seeds"] if not math.isnan(s[key])]
        out[key] = float(np.mean(values)) if values else float("nan")
    return out


def row_runs(folder: RunFolder, rows: dict[str, Row]) -> list[RowRuns]:
    """Each row's episodes on ``folder``'s tasks and seeds, per training seed; a label that has not finished them all
    is an error (a partial row would pair on fewer tasks than the others)."""
    expected = {(t.id, s) for t in folder.config.tasks() for s in range(folder.config.seeds)}
    runs = []
    for row in rows.values():
        per_label = {}
        for label in row.labels:
            records = [r for r in EpisodeLog(folder.episodes_path(label)).records if (r.task_id, r.seed) in expected]
            if {(r.task_id, r.seed) for r in records} != expected:
                raise SteerEnvsError(
                    f"{label!r} has {len(records)}/{len(expected)} episodes in {folder.root}; "
                    "rerun the command to finish it"
                )
            per_label[label] = records
        runs.append(RowRuns(row.name, per_label))
    return runs


def own_rate_spec(rl: str, name: str) -> str:
    """``name`` with the values RL steering's spec ``rl`` has (given or default) of every option ``name`` takes,
    deploy options (τ) and ``seed`` left out: the same trainer (rounds, states per round, samples, continuations,
    bank, config) for planning and verification as for RL steering, so the table compares forms of supervision, as
    the paper does (their own defaults are a smaller budget).

    A one-decision method has as few as one bank state per rollout, where steering has ~3, so RL steering's bank
    can run out before its ``m x k`` states are drawn (the trainer stops there): ``bank_tasks`` is then raised to
    ``ceil(m x k / bank_rollouts)``, the smallest bank that always lasts (the extra rollouts are in its measured
    budget)."""
    from baselines.steering import RLOptions, steering_config

    options, parsed = get_method(name).options_type(), parse_method(rl)
    defaults = options()
    keep = [k for k in options.option_names() if k not in options.deploy_names() | {"seed"}]
    value = {k: getattr(parsed.options, k) for k in keep if hasattr(parsed.options, k)}
    given = {k: format_value(v) for k, v in value.items() if k in parsed.given or v != getattr(defaults, k)}
    spec = _spec(name, given)
    chosen = parse_method(spec).options
    if isinstance(chosen, RLOptions):
        cfg = steering_config(MethodContext(), chosen)
        needed = math.ceil(cfg.m * cfg.k / cfg.bank_rollouts)
        if cfg.bank_tasks and cfg.bank_tasks < needed:
            spec = with_option(spec, "bank_tasks", str(needed))
    return spec


def own_rate_labels(rl: str, name: str, train_seeds: int) -> list[str]:
    """One label per training seed (a method without a ``seed`` option has one)."""
    spec = own_rate_spec(rl, name)
    if "seed" not in get_method(name).options_type().option_names():
        return [spec]
    return [with_option(spec, "seed", str(s)) for s in range(train_seeds)]


def own_rate_knob(label: str) -> str:
    """The operating-point cell of a row at its own rate: its knob where the method puts it, not chosen on dev."""
    parsed = parse_method(label)
    knob = get_method(parsed.name).rate_knob
    where = f"{knob}={getattr(parsed.options, knob)} as built, " if knob else ""
    return f"own rate ({where}not chosen on dev)"


def _spec(name: str, options: dict[str, str]) -> str:
    return parse_method(name + (":" + ",".join(f"{k}={v}" for k, v in options.items()) if options else "")).label


# -- rendering ------------------------------------------------------------------------------------------------------
def own_rate_legend(plan: ComparisonPlan) -> str:
    """The legend's sentence on rows at their own rate ('' without any)."""
    if not plan.own_rate_rows:
        return ""
    names = ", ".join(f"`{name}`" for name in plan.own_rate_rows)
    return (
        f" Rows at their **own rate** ({names}; a plan or a rejected answer is one intervention): no knob is set "
        "on dev, so they are not rate-matched and never marked ★; the trained ones use "
        f"{display_name(plan.budget_from or plan.focus_row)}'s "
        "trainer options and training seeds, and their *Budget* is their own measured env steps."
    )


def budget_legend(plan: ComparisonPlan, budgets: dict[str, str]) -> str:
    """The legend's sentence on the protocol's budget."""
    if plan.budget_from:
        source = f"{display_name(plan.budget_from)}'s measured {budgets.get(plan.budget_from, '–')}"
    elif plan.budget_steps:
        source = format_steps(plan.budget_steps)
    else:
        return "every learner's budget is measured as it comes (the protocol sets none)"
    return (
        f"the protocol's budget is {source}; every other row that learns on the train split is given it through "
        f"its budget option, within ±{100 * plan.budget_tolerance:.0f}%"
    )


def legend(plan: ComparisonPlan, budgets: dict[str, str]) -> str:
    return (
        "*How to read this table.* Rows: supervisors of the same frozen executor on the same tasks and seeds. "
        f"Every row with a rate knob was set on the **dev** split to ~{plan.target:g} intervention per task "
        '("Operating point"); a row that fits on dev chose its setting there by F1. Columns: F1 x100 per '
        "benchmark; *Avg F1*: the macro mean over benchmarks (the suite's one average); *Gain vs none*: paired "
        "difference to no supervision with a 95% interval that resamples tasks within benchmarks and, for learned "
        "rows, training seeds (evaluation seeds are averaged per task first); *Int./task*, *Turns/task*: "
        "interventions and executor turns per task; *Train seeds*: independent training runs averaged in the row; "
        "*Budget*: env steps the method's training consumed, counterfactual continuations included, measured "
        f"(mean over seeds; `(dev)`: steps spent choosing on dev): {budget_legend(plan, budgets)}. ★ marks the "
        f"highest average F1 among the contenders matched in rate (dev rate within ±{plan.tolerance:g} of the "
        f"target; ±{plan.train_knob_tolerance:g} for a knob that is trained; a row without a knob at most "
        "target + tolerance) and in budget." + own_rate_legend(plan) + "\n"
    )


def render(cmp: Comparison, summaries, pairs, budgets, knobs, card, curves, spearman, plot: Path | None) -> str:
    return render_comparison(
        cmp.plan,
        cmp.report.config.benchmarks,
        summaries,
        pairs,
        budgets,
        knobs,
        card,
        curves,
        spearman,
        None if plot is None else plot.relative_to(cmp.plan.out),
        not_matched=cmp.not_matched(),
    )


def protocol_line(p: ComparisonPlan) -> str:
    """The protocol's card line: its name and what it fixes beside the setting card."""
    budget = f"from {p.budget_from}" if p.budget_from else format_steps(p.budget_steps or None)
    return (
        f"*Protocol `{p.protocol}`*: {p.train_seeds} training seed(s); knobs chosen on dev "
        f"({p.dev_limit or 'all'} tasks per benchmark x {p.dev_seeds} seed(s)) to {p.target:g} interventions/task "
        f"±{p.tolerance:g}; budget {budget} "
        f"±{100 * p.budget_tolerance:.0f}%; paired against {p.focus_row or '–'}, verdict against {p.bar or '–'}.\n"
    )


def render_comparison(
    p: ComparisonPlan,
    benchmarks,
    summaries,
    pairs,
    budgets,
    knobs,
    card,
    curves,
    spearman,
    plot: Path | str | None,
    not_matched: Sequence[str] = (),
) -> str:
    """The comparison's markdown from its numbers (what ``comparison.json`` holds): ``steer-envs compare`` writes
    it as ``comparison.md`` and the results page (:mod:`benchmarks.pages.results`) renders it back from the JSON.
    ``not_matched``: rows not matched in rate or budget; with the plan's non-contenders, they never take the ★ or
    the verdict."""
    ordered = [(a, b, i) for (a, b), i in pairs.items()]
    not_best = p.not_contenders() | frozenset(not_matched)
    focus = p.focus_row
    lines = [
        f"## Rate-matched comparison on `{p.executor}`, {p.split} split\n\n",
        card.markdown(),
        protocol_line(p),
        "\n",
        legend(p, budgets),
        "\n",
        comparison_table(summaries, benchmarks, budgets, knobs, not_best=not_best),
        not_matched_note(not_matched),
        "\n",
        f"Paired differences between {display_name(focus)} and every other row ({p.split} split, tasks resampled "
        "within benchmarks, training seeds of both rows resampled):\n\n",
        pairwise_table(ordered),
        "\n",
        closing_line(summaries, focus, p.bar or None, pairs, not_best=not_best),
    ]
    if curves:
        lines += [
            "\n### Rate curves: F1 gain against interventions per task\n\n",
            card.markdown(),
            "\n",
            f"Each method's knob swept around its dev choice ({p.curve_seeds} evaluation seed(s) per task; the "
            "choice itself is the point at offset 0 / x1); no value here was chosen on this split.\n\n",
            curve_table(curves),
            "\n",
        ]
        if plot is not None:
            lines.append(f"![F1 gain against interventions per task]({plot})\n")
        lines.append(shape_line(curves.get(focus, []), display_name(focus)))
    if spearman:
        lines += [
            "\n### The fast path's ranking of held-out states\n\n",
            card.markdown(),
            "\n",
            spearman_text(spearman),
        ]
    return "".join(lines)


def curve_table(curves: dict[str, list[dict]]) -> str:
    lines = [
        "| Method | Setting | Int./task | Gain vs none [95% CI] | Gain / intervention | Train seeds |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for name, points in curves.items():
        for pt in sorted(points, key=lambda x: x["rate"]):
            g = pt["gain"]
            gpi = "–" if pt["gain_per_intervention"] is None else f"{pt['gain_per_intervention']:+.2f}"
            gain = "– (no task scored)" if g is None else f"{g['mean']:+.2f} [{g['low']:+.2f}, {g['high']:+.2f}]"
            lines.append(
                f"| {display_name(name)} | {pt['setting']} | {pt['rate']:.2f} | {gain} | {gpi} | {pt['train_seeds']} |"
            )
    return "\n".join(lines) + "\n"


def shape_line(points: list[dict], name: str = "the focus row") -> str:
    """Whether row ``name``'s gain per intervention is highest at its lowest frequency (the paper's shape), read by
    the one verdict rule (:mod:`.verdicts`): the shape is *reproduced* only when the lowest-frequency point is the
    best and its gain's interval excludes 0; a best point whose gain could be 0 shows nothing."""
    usable = [
        pt for pt in points if pt["gain"] is not None and pt["rate"] > 0.01 and pt["gain_per_intervention"] is not None
    ]
    if len(usable) < 2:
        return ""
    lowest = min(usable, key=lambda pt: pt["rate"])
    best = max(usable, key=lambda pt: pt["gain_per_intervention"])
    # no interval on a difference of gains per intervention exists here, so the shape is never read as reversed:
    # a best lowest point whose gain is below 0 shows nothing about the shape either
    gain_verdict = verdict(Interval(**lowest["gain"]))
    outcome = REPRODUCES if best is lowest and gain_verdict == REPRODUCES else NOT_SHOWN
    why = {
        NOT_SHOWN: " (the gain's interval at that point contains 0)",
        OPPOSITE: " (the gain at that point is below 0)",
    }
    gain = lowest["gain"]
    return (
        f"\nGain per intervention of {name} is {'highest' if best is lowest else 'not highest'} at its lowest "
        f"frequency ({lowest['rate']:.2f}/task: {lowest['gain_per_intervention']:+.2f} F1 per intervention, gain "
        f"{gain['mean']:+.2f} [{gain['low']:+.2f}, {gain['high']:+.2f}]; best {best['gain_per_intervention']:+.2f} "
        f"at {best['rate']:.2f}/task). The paper's shape: **{outcome}**"
        + (why.get(gain_verdict, "") if best is lowest else "")
        + ".\n"
    )


def spearman_text(sp: dict[str, Any]) -> str:
    lines = [
        f"Spearman between the fast path's priority and measured q(s) on the no-intervention states of "
        f"{sp['tasks']} {sp['split']} tasks (held out from training), q(s) measured as in training (G slow "
        "samples, N continuations per branch). *Within task*: mean over tasks of the Spearman among one task's "
        "states (what the ranking loss trains); *across tasks*: all states pooled (what one τ needs).\n\n",
        "| Training run | States | Within task [95% CI] | Across tasks [95% CI] |",
        "|---|---:|---:|---:|",
    ]
    for s in sp["seeds"]:
        lines.append(
            f"| `{s['label']}` | {s['states']} | {s['within']:.3f} [{s['within_ci'][0]:.3f}, "
            f"{s['within_ci'][1]:.3f}] | {s['across']:.3f} [{s['across_ci'][0]:.3f}, {s['across_ci'][1]:.3f}] |"
        )
    lines.append(f"| mean over training runs | | {sp['within']:.3f} | {sp['across']:.3f} |")
    return "\n".join(lines[:1]) + "\n".join(lines[1:]) + "\n"


def _knob_text(choices) -> str:
    c = choices[0]
    values = ", ".join(ch.value for ch in choices)
    rates = ", ".join(f"{ch.dev_rate:.2f}" for ch in choices)
    return f"{c.knob}={values} (dev rate {rates})"


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def _summary_dict(s: MethodSummary) -> dict:
    def interval(i: Interval | None):
        return None if i is None else asdict(i)

    return {
        "method": s.method,
        "labels": s.labels,
        "train_seeds": s.n_train_seeds,
        "f1": s.f1,
        "avg_f1": s.avg_f1 if s.scored else None,  # nothing scored: null (read back as NaN), never 0
        "gain": {b: interval(i) for b, i in s.gain.items()},
        "avg_gain": interval(s.avg_gain),
        "interventions_per_task": s.interventions_per_task if s.scored else None,
        "turns_per_task": s.turns_per_task if s.scored else None,
        "gain_per_intervention": s.gain_per_intervention,
        "n_tasks": s.n_tasks,
        "n_seeds": s.n_seeds,
        "failed": s.failed,
        "dropped_pairs": s.dropped_pairs,
    }


def _number(value: float | None) -> float:
    return float("nan") if value is None else value


def summary_from_dict(d: dict) -> MethodSummary:
    """The inverse of :func:`_summary_dict` (a results page renders the table back from ``comparison.json``)."""

    def interval(i: dict | None) -> Interval | None:
        return None if i is None else Interval(**i)

    return MethodSummary(
        method=d["method"],
        n_tasks=d["n_tasks"],
        n_seeds=d["n_seeds"],
        f1=d["f1"],
        avg_f1=_number(d["avg_f1"]),
        interventions_per_task=_number(d["interventions_per_task"]),
        turns_per_task=_number(d["turns_per_task"]),
        gain={b: interval(i) for b, i in d["gain"].items()},
        avg_gain=interval(d["avg_gain"]),
        gain_per_intervention=d["gain_per_intervention"],
        n_train_seeds=d["train_seeds"],
        labels=list(d["labels"]),
        failed=d.get("failed", 0),
        dropped_pairs=d.get("dropped_pairs", 0),
    )


def run_comparison(plan: ComparisonPlan, log: Callable[[str], None] = print) -> dict[str, Any]:
    return Comparison(plan, log).run()
