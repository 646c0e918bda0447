"""Does a trained policy, without a hint, take the actions the hints showed it? (issue 22, step 2)

Every task of the chosen regions has its reference sequence replayed as an unguided episode (the SFT stage's own
demonstrations, :func:`agents.actguide.sft.demonstrations`: the admissible candidate most like each reference action).
Each model scores those steps under its unguided policy ``π_u``. A learner that internalised guided successes puts
more mass on the reference actions of the tasks it was guided through than the base does; whether that mass is
enough to *succeed* unguided is what ``benchmarks.actguide_regions`` measures, so the two pages together tell "the
update did not move π_u" apart from "it moved π_u, but not far enough to compound over the steps a task needs".

    python -m benchmarks.actguide_alignment --setting RUNS/pool_setting.json --regions RUNS/regions_train/regions.json \\
        --model base=RUNS/runs/base --model zero_rl=RUNS/pool/runs/zero_rl/seed0 --model actguide=RUNS/pool/runs/actguide/seed0

Columns, per region and model: the mean ``π_u(reference action)``, that probability times the number of admissible
candidates (1 = what a uniform policy gives; the size of the set differs between steps), and the share of steps on
which the reference action is ``π_u``'s most likely one.
"""
from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from steer_envs.atomic import atomic_write_text
from steer_envs.cli.common import add_protocol_arguments
from steer_envs.errors import SteerEnvsError

from benchmarks.actguide_regions import REGION_LABEL


@dataclass(frozen=True)
class Alignment:
    """How one model's unguided policy scores the reference steps of one region (``None``: the region has no
    reference step to score)."""

    model: str
    region: str
    steps: int
    mean_p: float | None
    p_over_uniform: float | None
    top1: float | None


def score_steps(learner, views: Sequence, actions: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per step: ``π_u(action)``, the number of admissible candidates, and whether the action is the argmax."""
    import torch

    with torch.no_grad():
        logp = learner.network.log_probs(np.stack([v[0] for v in views]), np.stack([v[1] for v in views]))
    chosen = logp.gather(-1, torch.as_tensor(list(actions)).unsqueeze(-1)).squeeze(-1)
    sizes = np.asarray([int(np.asarray(v[1]).sum()) for v in views])
    top = (logp.argmax(-1) == torch.as_tensor(list(actions))).numpy()
    return chosen.exp().numpy(), sizes, top


def alignment(models: dict[str, str], setting: dict, regions: dict[str, str], keep: Sequence[str], seed: int = 0,
              split: str = "train") -> list[Alignment]:
    from agents.actguide.config import ActGuideConfig
    from agents.actguide.sft import demonstrations
    from agents.actguide.tasks import make_env
    from agents.actguide.trainer import load_learner

    learners = {name: load_learner(folder)[0] for name, folder in models.items()}
    if any(learner.action_mode != "discrete" for learner in learners.values()):
        raise SteerEnvsError("actguide_alignment scores the admissible-set learner; a causal_lm run has no candidates")
    env = make_env(ActGuideConfig(**setting), split=split)
    out = []
    for region in keep:
        ids = [t for t, r in regions.items() if r == region]
        views, actions, _ = demonstrations(env, next(iter(learners.values())), ids, seed)
        for name, learner in learners.items():
            if not views:
                out.append(Alignment(name, region, 0, None, None, None))
                continue
            p, sizes, top = score_steps(learner, views, actions)
            out.append(Alignment(name, region, len(views), float(p.mean()), float((p * sizes).mean()), float(top.mean())))
    return out


def table(rows: Sequence[Alignment]) -> str:
    lines = ["| Region | model | reference steps | mean π_u(reference) | × candidates (1 = uniform) | reference is π_u's top |",
             "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        cells = (f"{r.mean_p:.3f} | {r.p_over_uniform:.2f} | {100 * r.top1:.1f}%" if r.steps else "– | – | –")
        lines.append(f"| {REGION_LABEL.get(r.region, r.region)} | {r.model} | {r.steps} | {cells} |")
    return "\n".join(lines) + "\n"


def _model(spec: str) -> tuple[str, str]:
    name, sep, folder = spec.partition("=")
    if not sep or not name or not folder:
        raise argparse.ArgumentTypeError(f"--model takes NAME=RUN_FOLDER (got {spec!r})")
    return name, folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.actguide_alignment", description=__doc__.split("\n")[0])
    parser.add_argument("--setting", required=True, help="the training setting (JSON) the runs were trained with")
    parser.add_argument("--regions", required=True,
                        help="regions.json of the base on the same split (`steer-envs barrier --regions`)")
    parser.add_argument("--model", type=_model, action="append", required=True, help="NAME=RUN_FOLDER (repeatable)")
    parser.add_argument("--keep", default="barrier,in_region", help="comma-separated regions to score")
    add_protocol_arguments(parser, include=("split",), defaults={"split": "train"},
                           overrides={"split": {"choices": ("train", "dev", "test"),
                                                "help": "the split of the tasks and of --regions (default train: the "
                                                        "RL pool's own tasks)"}})
    parser.add_argument("--out", default=None, help="also write the rows here (JSON)")
    args = parser.parse_args(argv)
    from agents.actguide.config import region_names
    from agents.actguide.regions import read_regions

    keep = region_names(args.keep)
    unknown = sorted(set(keep) - set(REGION_LABEL))
    if unknown:
        parser.error(f"--keep names unknown regions {unknown}; choose among {sorted(REGION_LABEL)}")
    setting = json.loads(Path(args.setting).read_text())
    rows = alignment(dict(args.model), setting, read_regions(args.regions), keep, split=args.split)
    print(table(rows), end="")
    if args.out:
        atomic_write_text(Path(args.out), json.dumps([asdict(r) for r in rows], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
