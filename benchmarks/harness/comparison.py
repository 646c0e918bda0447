"""The rate-matched comparison: does the paper's trained steerer beat every simpler supervisor, at the same rate?

One executor profile, one pipeline (``steer-envs compare``), resumable at every step:

1. **Train and choose on dev.** Every learned method is trained ``train_seeds`` times (method option ``seed``) on
   the train split. Each row's rate knob is set on the *dev* split so that it intervenes ~``target`` times per
   task (:mod:`.operating`): τ by bisection for the RL steerer, the untrained steerer and filtered BC (per training
   seed: each model has its own scale), ``p`` for random, an intervention-cost grid for SB3 PPO (trained with
   seed 0, the chosen cost then trained with the other seeds); ``best_fixed_rule`` picks its (option, decision)
   on dev by F1.
2. **Equal budgets.** The RL steerer's measured budget (env steps, counterfactual continuations included;
   :mod:`.budget`) is given to filtered BC (its task count derived from a measured pilot, within ±10%) and to SB3
   PPO (its timesteps); every budget in the table is measured, not derived.
3. **Evaluate once** on the report split (``split``; test for docs/results.md): every chosen row on the same tasks
   and seeds, summarised with intervals that resample tasks within benchmarks *and* training seeds, pairwise
   differences between the RL steerer and every other row.
4. **Curves**: each knob swept around its dev choice (no new choice is made), F1 gain against interventions per
   task on one plot; the fast path's Spearman with measured q(s) on held-out states (within and across tasks).

Beside the rate-matched rows, ``own_rate_rows`` (planning and verification, the steerer's one-decision forms) run at
their **own rate**: a plan is one intervention and comes at most once per task, so no knob can bring planning to the
target rate, and setting one on dev would compare another supervisor than the paper's. They are trained with the RL
steerer's trainer options and training seeds (:func:`own_rate_spec`) and evaluated on the same tasks and seeds, so
they pair with every other row; they are never marked best among the rate-matched rows.

Output in ``OUT``: ``dev/`` (choices.json, every probe's episodes), ``<split>/`` (the table's episodes),
``<split>_curves/``, ``checkpoints/`` (shared by all three), ``comparison.json``, ``comparison.md``,
``plots/rate_curves.png``. With ``split=dev`` it is the development loop (the knobs are then chosen and reported on
the same split: fine for development, never for a reported result).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable, Sequence
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
from steer_envs.rollouts import using_pool

from .budget import Budget, build_measured, format_steps
from .config import EvalConfig
from .operating import KnobChoice, _save_choice, cached_choice, choose_rate, interventions_per_task, without_option
from .runfolder import RunFolder
from .runner import REFERENCE, evaluate, method_context
from .setting import setting_card
from .stats import HierarchicalBootstrap, Interval, MethodSummary, RowRuns, summarize_rows
from .sweeps import with_option
from .tables import HEADROOM, closing_line, comparison_table, display_name, pairwise_table
from .verdicts import NOT_SHOWN, OPPOSITE, REPRODUCES, verdict

RL = "steering_rl"
UNTRAINED = "steering_untrained"
RULE = "best_fixed_rule"
#: rows of the main table, in the paper's order (reference, rules, untrained, offline, RL library, RL steering)
ROW_ORDER = (REFERENCE, "random", RULE, UNTRAINED, "filtered_bc", "sb3_ppo", RL)
#: the one-decision supervisors a results page shows at their own rate (planning, then verification; untrained
#: first, as the steering rows are ordered)
OWN_RATE_ROWS = ("planning_untrained", "planning_rl", "verification_untrained", "verification_rl")
#: SB3 PPO's default cost grid: with no cost it intervenes ~1.7 times per task on sim:default's dev split, so the
#: grid starts where the rate begins to fall and reaches costs that stop most interventions
PPO_COSTS = ("0.03", "0.1", "0.3", "1")
BUDGET_FILE = "budget_match.json"


@dataclass
class ComparisonPlan:
    """Everything one comparison run depends on. ``rl``: the RL method spec (e.g. ``steering_rl:config=FILE``)."""

    out: Path
    executor: str = "sim:default"
    benchmarks: tuple[str, ...] = BENCHMARKS
    split: str = "test"
    rl: str = RL
    train_seeds: int = 3
    seeds: int = 3
    limit: int = 0
    dev_seeds: int = 1
    dev_limit: int = 0
    target: float = 1.0
    tolerance: float = 0.05
    max_probes: int = 10
    max_turns: int = 10
    #: SB3 PPO's intervention costs, walked upwards until the dev rate falls to ``target`` (then bisected)
    ppo_costs: tuple[str, ...] = PPO_COSTS
    #: PPO training runs the cost search may make (grid walk + bisection), and how close to ``target`` it stops
    ppo_probes: int = 6
    ppo_tolerance: float = 0.1
    bc_pilot_tasks: int = 40
    match_budgets: bool = True
    budget_tolerance: float = 0.10
    curve_seeds: int = 1
    curve_tau_offsets: tuple[float, ...] = (-4.0, -2.0, 0.0, 2.0, 4.0)
    curve_p_scales: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0)
    curves: bool = True
    spearman_tasks: int = 20
    #: methods shown beside the rate-matched rows, as they are (no knob, no training seeds): context, not contenders
    context_rows: tuple[str, ...] = ()
    #: method names run at their own rate with the RL steerer's trainer options and training seeds (planning,
    #: verification: :data:`OWN_RATE_ROWS`); shown in the table, never marked best among the rate-matched rows
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
        if self.train_seeds < 1:
            raise SteerEnvsError(f"--train-seeds must be >= 1, got {self.train_seeds}")
        if parse_method(self.rl).name != RL:
            raise SteerEnvsError(f"--rl must be a {RL} spec (e.g. {RL}:config=FILE), got {self.rl!r}")
        if not self.target > 0:
            raise SteerEnvsError(f"--target (interventions per task) must be > 0, got {self.target}")
        self.own_rate_rows = tuple(self.own_rate_rows)
        for name in self.own_rate_rows:
            if parse_method(name).label != name or name in ROW_ORDER:
                raise SteerEnvsError(
                    f"--own-rate-rows takes method names without options (their training options are --rl's), "
                    f"other than the rate-matched rows; got {name!r} (e.g. {' '.join(OWN_RATE_ROWS)})"
                )

    def not_contenders(self) -> frozenset[str]:
        """Rows that never take the ★ or the closing verdict: headroom, rows at their own rate (another operating
        point) and context rows (no knob searched on dev, one training seed), unless a context row repeats a
        rate-matched row's name, which then stays that row."""
        context = {parse_method(spec).label for spec in self.context_rows} - set(ROW_ORDER)
        return HEADROOM | frozenset(self.own_rate_rows) | frozenset(context)

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


@dataclass
class Row:
    """A table row: its name and one label per training seed (each label's knob already chosen on dev).
    ``matched``: every seed's dev search ended within the rate tolerance of the target (rows without a rate knob:
    True); a row that is not matched runs at another operating point, so it never takes the ★ or the verdict."""

    name: str
    labels: list[str]
    knob: str = "–"
    matched: bool = True


def rate_matched(choices, target: float, tolerance: float) -> bool:
    """Whether every dev choice's rate is within ``tolerance`` of ``target`` (the search may end without one:
    its probes ran out, or the knob's range cannot reach the target)."""
    return all(abs(c.dev_rate - target) <= tolerance for c in choices)


def not_matched_note(names) -> str:
    """The line under the table naming the rows whose dev search missed the rate (''  when none)."""
    if not names:
        return ""
    listed = ", ".join(f"`{name}`" for name in names)
    return (
        f"\n*Not matched in rate: {listed} (the dev search ended outside the tolerance of the target; see the "
        "operating point): shown, but not a contender for the ★ or the verdict.*\n"
    )


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
        #: the SB3 PPO costs trained on dev while choosing (the rate curve's points: no new training)
        self.ppo_probes: list[str] = []
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
            atomic_write_text(times_path, json.dumps(times, indent=2) + "\n")

    def _evaluate(self, folder: RunFolder, label: str) -> None:
        evaluate(folder, label, progress=self.plan.progress, log=self.log, pool=self.pool)

    def _choose(self, spec: str):
        p = self.plan
        return choose_rate(
            self.dev, spec, p.target, p.tolerance, p.max_probes, progress=p.progress, log=self.log, pool=self.pool
        )

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

    def rule_spec(self) -> str:
        """``best_fixed_rule`` choosing on the same dev tasks and seeds as every other knob."""
        p = self.plan
        options = {"dev_tasks": str(p.dev_limit), "seeds": str(p.dev_seeds)}
        defaults = get_method(RULE).defaults()
        kept = ",".join(f"{k}={v}" for k, v in options.items() if str(getattr(defaults, k)) != v)
        return parse_method(RULE + (f":{kept}" if kept else "")).label

    def _seeded(self, spec: str, seed: int) -> str:
        return with_option(spec, "seed", str(seed))

    # -- step 1 + 2: train, choose on dev, match budgets --------------------------------------------------------
    def choose(self) -> dict[str, Row]:
        p = self.plan
        rows: dict[str, Row] = {REFERENCE: Row(REFERENCE, [REFERENCE])}
        rl = [self._choose(self._seeded(p.rl, s)) for s in range(p.train_seeds)]
        rows[RL] = self._knob_row(RL, rl)
        config = parse_method(p.rl).options.config
        untrained = UNTRAINED + (f":config={config}" if config else "")
        chosen = [self._choose(self._seeded(untrained, s)) for s in range(p.train_seeds)]
        rows[UNTRAINED] = self._knob_row(UNTRAINED, chosen)
        rows["random"] = self._knob_row("random", [self._choose("random")])
        rule = self.rule_spec()
        self.train(rule)
        rows[RULE] = Row(RULE, [rule], _rule_text(self.dev.checkpoint_dir(rule)))
        budget = _mean([b.env_steps for b in (self.budget_of(label) for label in rows[RL].labels) if b])
        if p.match_budgets and budget:
            bc_spec = self._match_bc(int(budget))
            chosen = [self._choose(self._seeded(bc_spec, s)) for s in range(p.train_seeds)]
            rows["filtered_bc"] = self._knob_row("filtered_bc", chosen)
            ppo = f"sb3_ppo:timesteps={int(budget)}"
            grid = choose_cost(
                self.dev,
                self._seeded(ppo, 0),
                p.ppo_costs,
                p.target,
                p.ppo_tolerance,
                p.ppo_probes,
                progress=p.progress,
                log=self.log,
                pool=self.pool,
            )
            self.ppo_probes = [pr["value"] for pr in grid.probes]
            labels = [grid.label] + [
                with_option(self._seeded(ppo, s), "cost", grid.value) for s in range(1, p.train_seeds)
            ]
            for label in labels[1:]:
                self.train(label)
            rows["sb3_ppo"] = Row(
                "sb3_ppo",
                labels,
                f"cost={grid.value} (dev rate {grid.dev_rate:.2f}; costs trained on dev "
                f"{', '.join(self.ppo_probes)}, grid walk then bisection; seed 0)",
                matched=rate_matched([grid], p.target, p.ppo_tolerance),
            )
        rows.update(self.own_rate(p.own_rate_rows))
        for spec in p.context_rows:
            label = parse_method(spec).label
            rows.setdefault(label, Row(label, [label], "– (shown for context)"))
        self.rows = {name: rows[name] for name in row_order(rows, p.own_rate_rows)}
        return self.rows

    def _knob_row(self, name: str, choices) -> Row:
        return Row(
            name,
            [c.label for c in choices],
            _knob_text(choices),
            rate_matched(choices, self.plan.target, self.plan.tolerance),
        )

    def not_matched(self) -> list[str]:
        return [name for name, row in self.rows.items() if not row.matched]

    def own_rate(self, names: tuple[str, ...]) -> dict[str, Row]:
        """The rows of ``names`` at their own rate: each trained (or loaded) once per training seed with the RL
        steerer's trainer options (:func:`own_rate_labels`), its knob left where the method puts it."""
        rows = {}
        for name in names:
            labels = own_rate_labels(self.plan.rl, name, self.plan.train_seeds)
            for label in labels:
                self.train(label)
            rows[name] = Row(name, labels, own_rate_knob(labels[0]))
        return rows

    def _match_bc(self, budget: int) -> str:
        """Filtered BC's options for ``budget`` env steps: its continuations per proposal are the RL config's N,
        its task count comes from a measured pilot and is corrected until the measured budget of training seed 0
        is within ``budget_tolerance`` (each attempt is a training run, recorded in budget_match.json)."""
        from baselines.steering import steering_config

        p = self.plan
        path = p.out / BUDGET_FILE
        record = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        if record.get("rl_budget") == budget and record.get("bc_spec"):
            return record["bc_spec"]
        n = steering_config(MethodContext(), parse_method(p.rl).options).N
        pilot = f"filtered_bc:N={n},seed=0,tasks={p.bc_pilot_tasks}"
        per_task = max(1.0, self.train(pilot).env_steps / p.bc_pilot_tasks)
        tasks = max(1, round(budget / per_task))
        attempts = []
        for _ in range(4):
            spec = f"filtered_bc:N={n},tasks={tasks}"
            measured = self.train(self._seeded(spec, 0)).env_steps
            attempts.append({"spec": spec, "env_steps": measured})
            self.log(f"[budget] {spec}: {measured} env steps for an RL budget of {budget}")
            if abs(measured / budget - 1) <= p.budget_tolerance:
                break
            tasks = max(1, round(tasks * budget / max(measured, 1)))
        record = {
            "rl_budget": budget,
            "pilot": pilot,
            "pilot_steps_per_task": per_task,
            "attempts": attempts,
            "bc_spec": spec,
        }
        atomic_write_text(path, json.dumps(record, indent=2) + "\n")
        return spec

    # -- step 3: the report split -------------------------------------------------------------------------------
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
        return summarize_rows(runs, folder.config.benchmarks, reference=REFERENCE, boot=boot), boot

    # -- step 4: curves and the fast path's Spearman --------------------------------------------------------------
    def curve_rows(self) -> dict[str, list[Row]]:
        """Per method, one row per knob setting around its dev choice (the choice itself included)."""
        p = self.plan
        out: dict[str, list[Row]] = {}
        for name in (RL, UNTRAINED, "filtered_bc"):
            if name not in self.rows:
                continue
            points = []
            for offset in p.curve_tau_offsets:
                labels = []
                for label in self.rows[name].labels:
                    tau = parse_method(label).options.tau
                    shifted = 1.0 / (1.0 + math.exp(-(math.log(tau) - math.log1p(-tau) + offset)))
                    labels.append(with_option(label, "tau", f"{min(max(shifted, 1e-9), 1 - 1e-9):.4g}"))
                points.append(Row(f"{name}@{offset:+g}", labels, f"logit τ {offset:+g}"))
            out[name] = points
        if "random" in self.rows:
            p0 = parse_method(self.rows["random"].labels[0]).options.p
            out["random"] = [
                Row(f"random@x{scale:g}", [with_option("random", "p", f"{min(1.0, p0 * scale):.4g}")], f"p x{scale:g}")
                for scale in p.curve_p_scales
            ]
        if "sb3_ppo" in self.rows:
            chosen = parse_method(self.rows["sb3_ppo"].labels[0]).given["cost"]
            base = without_option(self.rows["sb3_ppo"].labels[0], "cost")
            out["sb3_ppo"] = [
                Row(
                    f"sb3_ppo@{c}",
                    self.rows["sb3_ppo"].labels if c == chosen else [with_option(base, "cost", c)],
                    f"cost {c}",
                )
                for c in sorted(self.ppo_probes, key=float)
            ]
        if RULE in self.rows:
            selection = _rule_choice(self.dev.checkpoint_dir(self.rows[RULE].labels[0]))
            if selection:
                max_at = get_method(RULE).defaults().max_at
                out[RULE] = [
                    Row(f"fixed_rule@{k}", [f"fixed_rule:at={k},option={selection['option']}"], f"at={k}")
                    for k in range(max_at + 1)
                ]
        return out

    def run_curves(self) -> dict[str, list[dict]]:
        curves = {}
        for name, points in self.curve_rows().items():  # a capped knob can repeat a point: keep it once
            seen: set[tuple[str, ...]] = set()
            curves[name] = [r for r in points if tuple(r.labels) not in seen and not seen.add(tuple(r.labels))]
        self._evaluate(self.curves, REFERENCE)
        for points in curves.values():
            for row in points:
                for label in row.labels:
                    self._evaluate(self.curves, label)
        result: dict[str, list[dict]] = {}
        for name, points in curves.items():
            rows = {REFERENCE: Row(REFERENCE, [REFERENCE]), **{r.name: r for r in points}}
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
                if s.method != REFERENCE
            ]
        return result

    def spearman(self) -> dict[str, Any]:
        """The fast path's Spearman with measured q(s) on held-out states of the report split, per training seed."""
        p = self.plan
        cpu_thread_default()
        labels = self.rows[RL].labels
        measured = spearman_per_label(self.report, self.dev, labels, p.spearman_tasks, self.pool, self.log)
        return {"split": p.split, **measured}

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
        dev), ``0`` for a method that does not learn, None for the reference."""
        spent = [b.env_steps for b in (self.budget_of(label) for label in row.labels) if b is not None]
        if spent:
            return format_steps(_mean(spent)) + (" (dev)" if row.name == RULE else "")
        if get_method(parse_method(row.labels[0]).name).learns is False and row.name != REFERENCE:
            return "0"
        return None

    def row_record(self, row: Row, budget: str | None) -> dict[str, Any]:
        """What ``comparison.json`` (and a profile's summary) keeps of a row: its labels, knob and budget, and the
        wall seconds its builds took (mean over training seeds; None for a row nothing was built for)."""
        seconds = [b.seconds for b in (self.budget_of(label) for label in row.labels) if b is not None]
        return {
            "labels": row.labels,
            "knob": row.knob,
            "matched": row.matched,
            "budget": budget,
            "build_seconds": round(_mean(seconds), 1) if seconds else None,
        }

    def write(self, curves: dict[str, list[dict]], spearman: dict[str, Any]) -> dict[str, Any]:
        from . import plots

        p = self.plan
        summaries, boot = self.summaries()
        pairs = {(RL, name): boot.gain(RL, name)[1] for name in self.rows if name != RL}
        budgets = {name: text for name, row in self.rows.items() if (text := self.budget_text(row)) is not None}
        # say so where a matched budget missed (PPO's 256-step rollouts round a small budget up, for one)
        rl_spent = self._spent(RL)
        for name in ("filtered_bc", "sb3_ppo"):
            spent = self._spent(name)
            if rl_spent and spent and abs(spent / rl_spent - 1) > p.budget_tolerance:
                budgets[name] += f" (off RL's by {100 * (spent / rl_spent - 1):+.0f}%)"
        knobs = {name: row.knob for name, row in self.rows.items()}
        card = setting_card(self.report, p.train_seeds, (self.dev,))
        plot = plots.rate_curves(curves, p.target, p.out / "plots" / "rate_curves.png") if curves else None
        data = {
            "plan": {
                k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(p).items() if k not in ("pool", "seconds")
            },
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


def row_order(names: Iterable[str], own_rate: Iterable[str]) -> list[str]:
    """The table's order of the rows ``names``: the rate-matched rows (:data:`ROW_ORDER`), then the rows at their
    own rate (in ``own_rate``'s order), then the rest (context rows) as given."""
    names = list(names)
    first = [name for name in ROW_ORDER if name in names]
    own = [name for name in own_rate if name in names and name not in first]
    return [*first, *own, *(name for name in names if name not in first and name not in own)]


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
        "on dev, so they are not rate-matched and never marked ★; the trained ones use RL steering's trainer options "
        "and training seeds, and their *Budget* is their own measured env steps."
    )


def legend(plan: ComparisonPlan, budgets: dict[str, str]) -> str:
    rl_budget = budgets.get(RL, "–")
    return (
        "*How to read this table.* Rows: supervisors of the same frozen executor on the same tasks and seeds. "
        f"Every row with a rate knob was set on the **dev** split to ~{plan.target:g} intervention per task "
        '("Operating point"); `best_fixed_rule` chose its (note, decision) on dev by F1. Columns: F1 x100 per '
        "benchmark; *Avg F1*: the macro mean over benchmarks (the suite's one average); *Gain vs none*: paired "
        "difference to no supervision with a 95% interval that resamples tasks within benchmarks and, for learned "
        "rows, training seeds (evaluation seeds are averaged per task first); *Int./task*, *Turns/task*: "
        "interventions and executor turns per task; *Train seeds*: independent training runs averaged in the row; "
        f"*Budget*: env steps the method's training consumed, counterfactual continuations included, measured "
        f"(mean over seeds; RL steering {rl_budget}; filtered BC and SB3 PPO are given RL's budget ±10%; "
        "`(dev)`: steps spent choosing on dev). ★ marks the highest average F1 among the rows matched in rate (the "
        "dev search ended within its tolerance of the target)." + own_rate_legend(plan) + "\n"
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
    ``not_matched``: rows whose dev search missed the rate; with the plan's non-contenders, they never take the ★
    or the verdict."""
    ordered = [(a, b, i) for (a, b), i in pairs.items()]
    not_best = p.not_contenders() | frozenset(not_matched)
    lines = [
        f"## Rate-matched comparison on `{p.executor}`, {p.split} split\n\n",
        card.markdown(),
        "\n",
        legend(p, budgets),
        "\n",
        comparison_table(summaries, benchmarks, budgets, knobs, not_best=not_best),
        not_matched_note(not_matched),
        "\n",
        f"Paired differences between RL steering and every other row ({p.split} split, tasks resampled within "
        "benchmarks, training seeds of both rows resampled):\n\n",
        pairwise_table(ordered),
        "\n",
        closing_line(summaries, RL, RULE, pairs, not_best=not_best),
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
        lines.append(shape_line(curves.get(RL, [])))
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


def shape_line(points: list[dict]) -> str:
    """Whether RL steering's gain per intervention is highest at its lowest frequency (the paper's shape), read by
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
        f"\nGain per intervention of RL steering is {'highest' if best is lowest else 'not highest'} at its lowest "
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


def choose_cost(
    folder: RunFolder,
    spec: str,
    costs: tuple[str, ...],
    target: float,
    tolerance: float,
    max_probes: int,
    progress: bool = False,
    log: Callable[[str], None] = print,
    pool: Any = None,
) -> KnobChoice:
    """SB3 PPO's intervention cost, chosen on dev so that it intervenes ~``target`` times per task.

    Every cost is a training run, so the search is frugal: the grid is walked from its lowest cost upwards (the
    rate falls as the cost rises) until a probe's dev rate is at or below ``target``; then the cost is bisected
    between the last two probes (geometric midpoint; arithmetic from 0) until a probe is within ``tolerance`` of
    ``target`` or ``max_probes`` runs are spent. The probe closest to ``target`` is kept (ties: fewer
    interventions); every probe is recorded in the dev folder's choices.json, and a rerun reads the choice back."""
    base = without_option(spec, "cost")
    first = f"{min(float(c) for c in costs):.3g}"
    cached = cached_choice(folder, base)
    if cached is not None and cached.target == target and cached.probes and cached.probes[0]["value"] == first:
        return cached
    probes: list[dict[str, Any]] = []

    def probe(value: float) -> dict[str, Any]:
        text = f"{value:.3g}"
        label = with_option(base, "cost", text)
        evaluate(folder, label, progress=progress, log=log, pool=pool)
        pr = {"value": text, "rate": interventions_per_task(folder, label), "label": label}
        probes.append(pr)
        log(f"[dev] {label}: {pr['rate']:.3f} interventions/task (target {target})")
        return pr

    def close(pr: dict[str, Any]) -> bool:
        return abs(pr["rate"] - target) <= tolerance

    below = above = None
    for value in sorted(float(c) for c in costs):
        if len(probes) >= max_probes:
            break
        pr = probe(value)
        if close(pr):
            break
        if pr["rate"] > target:
            above = pr
        else:
            below = pr
            break
    while above is not None and below is not None and len(probes) < max_probes and not close(probes[-1]):
        lo, hi = float(above["value"]), float(below["value"])
        mid = math.sqrt(lo * hi) if lo > 0 else hi / 2
        if f"{mid:.3g}" in (above["value"], below["value"]):
            break
        pr = probe(mid)
        if pr["rate"] > target:
            above = pr
        else:
            below = pr
    best = min(probes, key=lambda pr: (abs(pr["rate"] - target), pr["rate"]))
    choice = KnobChoice(base, "cost", best["value"], best["rate"], target, best["label"], probes)
    return _save_choice(folder, choice)


def _knob_text(choices) -> str:
    c = choices[0]
    values = ", ".join(ch.value for ch in choices)
    rates = ", ".join(f"{ch.dev_rate:.2f}" for ch in choices)
    return f"{c.knob}={values} (dev rate {rates})"


def _rule_choice(checkpoint: Path) -> dict | None:
    path = checkpoint / "selection.json"
    return json.loads(path.read_text(encoding="utf-8"))["chosen"] if path.is_file() else None


def _rule_text(checkpoint: Path) -> str:
    chosen = _rule_choice(checkpoint)
    return "–" if chosen is None else f"option={chosen['option']}, at={chosen['at']} (best dev F1)"


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
