"""The study's pre-stated choice, on dev, of the arm that stands for the method on test.

ACTGUIDE-RL as the paper states it and the variant the study's diagnosis proposes (guided groups baselined by the
unguided group they replace) are both candidates for "the method"; choosing between them after seeing test numbers
would make the test comparison with zero RL a selected one. So the rule is fixed here, before any candidate is
evaluated on test, and it reads dev evaluations only (the family's 40 dev tasks and the real benchmarks' dev tasks,
unguided, every training seed of each arm):

1. ``F_c``: the candidate's dev success on the family (EM in %, mean over its training seeds, tasks and rollouts).
2. ``R_c``: its paired dev gain over zero RL on the real benchmarks (points of EM, macro mean over the benchmarks,
   the point estimate of :class:`benchmarks.harness.stats.HierarchicalBootstrap`).
3. A candidate is *eligible* when ``R_c >= -IN_REGION_TOLERANCE`` (it does not lose more than that in-region).
4. The choice is the eligible candidate with the highest ``F_c`` (a tie goes to the earlier one in
   :data:`CANDIDATES`, the paper's method first). When no candidate is eligible, the in-region side decides: the
   candidate with the highest ``R_c`` (the smallest in-region loss), and the choice says no candidate met the bound.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

#: the arms that may stand for the method, in order of precedence on a tie (the paper's method first)
CANDIDATES = ("actguide", "unguided_baseline")
#: points of real-benchmark dev success a candidate may lose to zero RL and stay eligible
IN_REGION_TOLERANCE = 2.0
CRITERION = (
    f"the candidate with the highest dev family success, among those whose paired dev gain over zero RL on the "
    f"real benchmarks is at least −{IN_REGION_TOLERANCE:.1f} points; if none is, the candidate with the highest such "
    "gain; ties go to ACTGUIDE-RL as the paper states it"
)


@dataclass(frozen=True)
class Candidate:
    """One candidate's dev numbers as the rule reads them."""

    name: str
    family_success: float  # F_c, %
    real_gain: float  # R_c, points against zero RL
    eligible: bool


@dataclass(frozen=True)
class Choice:
    """The rule's outcome: the chosen arm, every candidate's dev numbers, and whether the in-region bound held."""

    chosen: str
    criterion: str
    tolerance: float
    bound_met: bool
    candidates: list[Candidate]

    def to_dict(self) -> dict:
        return asdict(self)


def choose(dev_groups: dict, candidates: tuple[str, ...] = CANDIDATES) -> Choice:
    """The rule above, applied to :func:`.summarize.compare`'s output on dev (``{"family": ..., "real": ...}``).

    Every candidate and zero RL must have dev evaluations in both groups: a missing one raises ``KeyError`` rather
    than letting the rule choose among fewer arms than it states.
    """
    rows = []
    for name in candidates:
        family = dev_groups["family"]["levels"][name]["success"][0]
        real = dev_groups["real"]["gains"][f"{name} - zero_rl"]["success"][0]
        rows.append(Candidate(name, family, real, real >= -IN_REGION_TOLERANCE))
    eligible = [c for c in rows if c.eligible]
    if eligible:
        chosen = max(eligible, key=lambda c: (c.family_success, -candidates.index(c.name)))
    else:
        chosen = max(rows, key=lambda c: (c.real_gain, -candidates.index(c.name)))
    return Choice(chosen.name, CRITERION, IN_REGION_TOLERANCE, bool(eligible), rows)


def dev_groups(out: Path, split: str, n: int, seeds: int) -> dict:
    """Dev levels and paired gains of base, zero RL and every candidate, from the pipeline's evaluation logs."""
    from .summarize import _runs, compare

    labels = ["base", "zero_rl", *CANDIDATES]
    pairs = [(c, "zero_rl") for c in CANDIDATES] + [(c, "actguide") for c in CANDIDATES if c != "actguide"]
    return {
        group: compare({label: _runs(out, label, group, split, n, seeds) for label in labels}, group, pairs)
        for group in ("family", "real")
    }
