"""Named comparison protocols: the presets of :class:`~.comparison.ComparisonPlan` (``steer-envs compare
--protocol NAME``), and the paper's contenders.

A protocol fixes everything a comparison's numbers depend on: the profile's splits and task counts, evaluation and
training seeds, the rate target and its tolerances, the budget (the paper's RL steerer's measured env steps) and its
tolerance, and the built-in contenders. A user's method joins with ``--method SPEC``: a spec of a method already in
the protocol replaces it (``--method steering_rl:config=FILE``), any other is added and becomes the focus row (paired
with every other row, read against the best fixed rule). This module is the one place built-in method names
choose anything in a comparison; the harness itself reads only what each method declares on its registry entry.

* ``quick``: one profile's built-in rows at a small setting, so a new contender is ranked in minutes once the
  built-in rows are trained (their checkpoints and episodes are reused);
* ``standard``: the leaderboard's setting (the first 100 test tasks per benchmark, 3 x 3 seeds);
* ``full``: every test task;
* ``demo`` / ``demo-quick``: ``steer-envs demo``'s table (one training seed) and its smoke version.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from baselines.registry import MethodContext, get_method, parse_method
from steer_envs.errors import SteerEnvsError, unknown_name

from .comparison import ComparisonPlan, row_name

RL = "steering_rl"
UNTRAINED = "steering_untrained"
RULE = "best_fixed_rule"
#: the one-decision supervisors a results page shows at their own rate (planning, then verification; untrained
#: first, as the steering rows are ordered)
OWN_RATE_ROWS = ("planning_untrained", "planning_rl", "verification_untrained", "verification_rl")
#: the steering trainer's setting of the leaderboard and the results page (chosen on dev)
STANDARD_RL = "steering_rl:m=30,k=96,G=4,N=8,bank_tasks=800"


@dataclass(frozen=True)
class Protocol:
    """A named preset: the paper's RL steerer's spec (the other built-in rows are derived from it:
    :func:`paper_contenders`), the filtered-BC pilot's task count, and the plan's fields it sets."""

    name: str
    description: str
    rl: str
    bc_pilot_tasks: int
    plan: dict[str, Any] = field(default_factory=dict)


PROTOCOLS: dict[str, Protocol] = {
    p.name: p
    for p in (
        Protocol(
            "quick",
            "one profile, 10 test tasks per benchmark x 1 seed, 3 training seeds of a small trainer, knobs on 5 dev "
            "tasks per benchmark; curves off",
            "steering_rl:G=4,N=3,bank_tasks=300,k=24,m=12",
            20,
            {"limit": 10, "seeds": 1, "dev_limit": 5, "train_seeds": 3, "max_probes": 7, "tolerance": 0.1,
             "curves": False, "spearman_tasks": 0, "context_rows": ("oracle",)},
        ),
        Protocol(
            "standard",
            "the leaderboard's setting: the first 100 test tasks per benchmark x 3 seeds, 3 training seeds, knobs on "
            "20 dev tasks per benchmark",
            STANDARD_RL,
            40,
            {"limit": 100, "seeds": 3, "dev_limit": 20, "train_seeds": 3, "spearman_tasks": 10,
             "context_rows": ("oracle",)},
        ),
        Protocol(
            "full",
            "every test task x 3 seeds, 3 training seeds, knobs on every dev task",
            STANDARD_RL,
            40,
            {"limit": 0, "seeds": 3, "dev_limit": 0, "train_seeds": 3, "context_rows": ("oracle",)},
        ),
        Protocol(
            "demo",
            "steer-envs demo: 30 test tasks per benchmark x 2 seeds, one training seed of a small trainer",
            "steering_rl:G=4,N=3,bank_tasks=300,k=24,m=12",
            20,
            {"limit": 30, "seeds": 2, "dev_limit": 8, "train_seeds": 1, "max_probes": 7, "tolerance": 0.1,
             "knob_grids": {"sb3_ppo": ("0", "0.05", "0.2")}, "curve_logit_offsets": (-3.0, 0.0, 3.0),
             "curve_unit_scales": (0.5, 1.0, 2.0), "spearman_tasks": 3},
        ),
        Protocol(
            "demo-quick",
            "the demo's smoke version: 2 tasks per benchmark, tiny trainer",
            "steering_rl:G=2,N=2,bank_tasks=16,k=4,m=2",
            4,
            {"limit": 2, "seeds": 1, "dev_limit": 2, "train_seeds": 1, "max_probes": 3, "tolerance": 0.1,
             "train_knob_probes": 2, "knob_grids": {"sb3_ppo": ("0",)}, "curve_logit_offsets": (0.0, 3.0),
             "curve_unit_scales": (0.5, 1.0, 2.0), "spearman_tasks": 1},
        ),
    )
}  # fmt: skip


def get_protocol(name: str) -> Protocol:
    if name not in PROTOCOLS:
        raise unknown_name("protocol", name, list(PROTOCOLS), hint="`steer-envs compare --help` describes each")
    return PROTOCOLS[name]


def paper_contenders(rl: str, dev_limit: int, dev_seeds: int, bc_pilot_tasks: int) -> tuple[str, ...]:
    """The paper's table as contenders, derived from the RL steerer's spec ``rl``: random intervention, the best
    fixed rule (choosing on the protocol's dev tasks and seeds), the untrained steerer (``rl``'s config), filtered
    BC (``rl``'s continuations per proposal; its pilot at ``bc_pilot_tasks`` tasks), SB3 PPO, RL steering."""
    from baselines.steering import steering_config

    parsed = parse_method(rl)
    if parsed.name != RL:
        raise SteerEnvsError(f"the paper's contenders derive from a {RL} spec, got {rl!r}")
    config = parsed.options.config
    untrained = UNTRAINED + (f":config={config}" if config else "")
    n = steering_config(MethodContext(), parsed.options).N
    defaults = get_method(RULE).defaults()
    rule_options = {"dev_tasks": str(dev_limit), "seeds": str(dev_seeds)}
    kept = ",".join(f"{k}={v}" for k, v in rule_options.items() if str(getattr(defaults, k)) != v)
    rule = parse_method(RULE + (f":{kept}" if kept else "")).label
    return ("random", rule, untrained, f"filtered_bc:N={n},tasks={bc_pilot_tasks}", "sb3_ppo", parsed.label)


def with_methods(contenders: Sequence[str], methods: Sequence[str]) -> tuple[tuple[str, ...], list[str]]:
    """``contenders`` with each of ``methods`` replacing the protocol's contender of the same method, or added
    after them (two specs of one method not in the protocol are two rows, named by their labels); returns the list
    and the row names of the added ones."""
    preset = {parse_method(c).name: i for i, c in enumerate(contenders)}
    out = list(contenders)
    extra: list[str] = []
    for spec in methods:
        parsed = parse_method(spec)
        if parsed.name in preset:
            out[preset[parsed.name]] = parsed.label
        elif parsed.label not in extra:
            extra.append(parsed.label)
    return (*out, *extra), [row_name(spec, extra) for spec in extra]


def plan_for(
    protocol: str,
    out: str | Path,
    methods: Sequence[str] = (),
    without: Sequence[str] = (),
    **overrides: Any,
) -> ComparisonPlan:
    """The plan of a named protocol in ``out``: its fields, then ``overrides`` (a plan field each; None: kept);
    ``methods`` replace or join its contenders (:func:`with_methods`), ``without`` drops contenders by method
    name. An added method becomes the focus row."""
    preset = get_protocol(protocol)
    known = {f.name for f in fields(ComparisonPlan)}
    bad = [k for k in overrides if k not in known]
    if bad:
        raise SteerEnvsError(f"not comparison plan fields: {', '.join(bad)} (fields: {', '.join(sorted(known))})")
    values: dict[str, Any] = {**preset.plan, **{k: v for k, v in overrides.items() if v is not None}}
    rl = next((parse_method(m).label for m in methods if parse_method(m).name == RL), preset.rl)
    contenders = paper_contenders(rl, values.get("dev_limit", 0), values.get("dev_seeds", 1), preset.bc_pilot_tasks)
    contenders, added = with_methods(contenders, [m for m in methods if parse_method(m).name != RL])
    for name in without:
        if name in (RL, RULE):
            raise SteerEnvsError(f"--without {name}: the protocol's {'budget' if name == RL else 'bar'} row stays")
        if not any(parse_method(c).name == name for c in contenders):
            raise SteerEnvsError(f"--without {name}: not a contender ({', '.join(contenders)})")
        contenders = tuple(c for c in contenders if parse_method(c).name != name)
    values.setdefault("spearman_rows", (RL,))
    return ComparisonPlan(
        out=Path(out),
        protocol=protocol,
        contenders=contenders,
        focus=added[-1] if added else RL,
        bar=RULE,
        budget_from=RL,
        **values,
    )
