"""Where the paper's steering trainer loses the margin on ``sim:drift1``, measured component by component on dev.

The hand-written rung (``studies/drift_tells``) shows that the latest turn tells the drift kind plainly, and that
reading it is worth far more than the best fixed rule; the paper's trainer learns little of it. This study asks which
part of the steerer fails, on states of ``sim:drift1``'s dev split, each labelled with the simulator's hidden kind
(privileged: what drift is under way, if any, at that decision):

* **representation**: can a linear probe read the kind, and whether a drift is under way, from (a) the steerer's
  dense statistics (its input, before any weight), (b) the untrained steerer's encoder state, (c) the trained
  steerer's encoder state? ROC AUC per kind, one against the rest, cross-validated by episode;
* **fast path**: the AUC of the trained steerer's ``z`` (its score for "intervene now") for "a drift is under way"
  (the states where the fitting note helps), and of the untrained one's;
* **slow path**: on the states where a drift is under way, how often the trained slow path's most probable note is
  the one that fits the kind (a uniform choice among the catalogue's notes: 1/8), per kind;
* **the training signal**: what the budget bought, from the trainer's log (states labelled with q(s), rollouts, the
  states that gave GRPO a learning signal, the share of zero advantages, the ranking pairs).

The trained steerer is the comparison's RL row on ``sim:drift1`` (``steering_rl:m=30,k=96,G=4,N=8,bank_tasks=800``,
training seed 0), trained through the harness as the comparison trains it. Everything is on dev; nothing here reads
a test task.

Usage (from the repository root)::

    python -m studies.drift_components.run --out runs/drift_components

It resumes (the trained steerer is kept in ``--out``), writes ``docs/results/drift/components/summary.json`` and
prints the tables. ``--quick`` runs a tiny version for the tests.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agents.steering.features import fast_extra_stats, split_observation, transcript_stats
from baselines.registry import parse_method
from benchmarks.harness.config import EvalConfig
from benchmarks.harness.provenance import code_record, portable_command
from benchmarks.harness.results_summary import machine, now
from benchmarks.harness.runfolder import RunFolder
from benchmarks.harness.runner import evaluate, method_context
from steer_envs.atomic import atomic_write_text
from steer_envs.executors.sim.kinds import FIT
from steer_envs.paths import REPO_ROOT

EXECUTOR = "sim:drift1"
#: the comparison's RL row on the drift family, training seed 0
RL_SPEC = "steering_rl:m=30,k=96,G=4,N=8,bank_tasks=800,seed=0"
#: a small trainer for ``--quick`` (the tests)
QUICK_SPEC = "steering_rl:m=1,k=4,G=2,N=1,bank_tasks=8,seed=0"
KINDS = tuple(FIT)
RESULTS = REPO_ROOT / "docs" / "results" / "drift" / "components"
SUMMARY = "summary.json"
#: what a probe predicts: each kind against the rest, and whether any drift is under way
TARGETS = (*KINDS, "any_drift")


def collect(episodes: int, seed0: int = 0) -> tuple[list[dict[str, Any]], list[str | None], list[int]]:
    """Observations at every decision of ``episodes`` unsupervised ``sim:drift1`` dev episodes, the hidden kind at
    each (None: no drift) and the episode each came from."""
    import gymnasium as gym

    from steer_envs.ids import STEERING_ENV

    env = gym.make(STEERING_ENV, executor=EXECUTOR, split="dev", action_mode="discrete")
    observations, kinds, groups = [], [], []
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed0 + episode)
        done = False
        while not done:
            observations.append({k: (v.copy() if hasattr(v, "copy") else v) for k, v in obs.items()})
            kinds.append(env.unwrapped.executor.kind())
            groups.append(episode)
            obs, _, terminated, truncated, _ = env.step(0)
            done = terminated or truncated
    env.close()
    return observations, kinds, groups


def labels(kinds: Sequence[str | None], target: str) -> np.ndarray:
    if target == "any_drift":
        return np.array([k is not None for k in kinds], dtype=int)
    return np.array([k == target for k in kinds], dtype=int)


def probe_auc(X: np.ndarray, y: np.ndarray, groups: Sequence[int], folds: int = 5) -> float | None:
    """Cross-validated ROC AUC of a logistic-regression probe (folds by episode); None when a class is missing."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import GroupKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if y.min() == y.max():
        return None
    scores = np.zeros(len(y))
    for train, held in GroupKFold(n_splits=folds).split(X, y, groups):
        if y[train].min() == y[train].max():
            scores[held] = y[train].mean()
            continue
        model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000, C=1.0))
        model.fit(X[train], y[train])
        scores[held] = model.predict_proba(X[held])[:, 1]
    return round(float(roc_auc_score(y, scores)), 4)


def score_auc(scores: np.ndarray, y: np.ndarray) -> float | None:
    from sklearn.metrics import roc_auc_score

    return None if y.min() == y.max() else round(float(roc_auc_score(y, scores)), 4)


def dense_stats(observations: Sequence[dict[str, Any]]) -> np.ndarray:
    """The steerer's dense statistics of each observation (:func:`transcript_stats` and :func:`fast_extra_stats`)."""
    rows = []
    for obs in observations:
        goal, transcript, turn, interventions = split_observation(obs)
        rows.append(
            np.concatenate(
                [transcript_stats(goal, transcript, turn, interventions), fast_extra_stats(transcript, turn)]
            )
        )
    return np.stack(rows)


def training_signal(run_dir: Path) -> dict[str, Any]:
    """What the training budget bought, from the trainer's per-round log: the states it labelled with q(s) (each by
    N continuations per branch), the rollouts that took, the states whose G slow-path samples did not all score
    alike (GRPO's learning signal), the share of zero advantages and the ranking pairs the fast path trained on."""
    from agents.steering.trainer import LOG_FILE

    rounds = [r for r in map(json.loads, (run_dir / LOG_FILE).read_text(encoding="utf-8").splitlines()) if "round" in r]
    states = sum(r["states"] for r in rounds)
    return {
        "rounds": len(rounds),
        "states_labelled": states,
        "rollouts": sum(r["rollouts"] for r in rounds),
        "grpo_states": sum(r["grpo_groups"] for r in rounds),
        "grpo_share": round(sum(r["grpo_groups"] for r in rounds) / max(states, 1), 4),
        "zero_advantage_share": round(float(np.mean([r["adv_zero_frac"] for r in rounds])), 4),
        "rank_pairs": sum(r["rank_pairs"] for r in rounds),
        "mean_q": round(float(np.mean([r["mean_q"] for r in rounds])), 4),
        "mean_q_last_5": round(float(np.mean([r["mean_q"] for r in rounds[-5:]])), 4),
    }


def trained_steerer(out: Path, spec: str, progress: bool) -> tuple[Any, Any, Path, dict[str, Any]]:
    """The RL row's steerer trained through the harness (resumed when ``out`` holds it), the same architecture at
    its initial weights (the spec's seed), the run folder, and what its training budget bought."""
    from agents.steering.backbones import build_steerer
    from agents.steering.interventions import InterventionOption
    from agents.steering.trainer import load_model

    folder = RunFolder(out / "train", EvalConfig(executor=EXECUTOR, split="dev", seeds=1, limit=1))
    evaluate(folder, spec, progress=progress, log=lambda line: print(line, file=sys.stderr))
    parsed = parse_method(spec)
    run_dir = method_context(folder, parsed.label, False, parsed.training_label).checkpoint_dir()
    trained, payload = load_model(run_dir)
    untrained = build_steerer(payload["kind"], [InterventionOption(*o) for o in payload["options"]], payload["spec"])
    untrained.eval()
    return trained, untrained, out / "train", training_signal(run_dir)


def states(steerer: Any, observations: Sequence[dict[str, Any]], batch: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """Encoder states and fast-path scores ``z`` of every observation."""
    hs, zs = [], []
    with torch.no_grad():
        for start in range(0, len(observations), batch):
            chunk = list(observations[start : start + batch])
            hs.append(steerer.hidden_states(chunk).cpu().numpy())
            zs.append(torch.sigmoid(steerer.fast_scores(chunk)).cpu().numpy())
    return np.concatenate(hs), np.concatenate(zs)


def slow_fit(steerer: Any, observations: Sequence[dict[str, Any]], kinds: Sequence[str | None]) -> dict[str, Any]:
    """Per kind: how often the slow path's most probable note is the one that fits it."""
    generator = torch.Generator().manual_seed(0)
    out: dict[str, Any] = {}
    for kind in KINDS:
        at = [i for i, k in enumerate(kinds) if k == kind]
        if not at:
            out[kind] = {"states": 0, "fits": None, "most_chosen": None}
            continue
        chosen = []
        for i in at:
            (sample,) = steerer.sample_slow(observations[i], 1, generator, greedy=True)
            chosen.append("pass" if sample.is_pass else sample.option.name)
        names, counts = np.unique(chosen, return_counts=True)
        out[kind] = {
            "states": len(at),
            "fits": round(chosen.count(FIT[kind]) / len(at), 4),
            "most_chosen": str(names[int(np.argmax(counts))]),
        }
    return out


def measure(out: Path, episodes: int, spec: str, progress: bool) -> dict[str, Any]:
    observations, kinds, groups = collect(episodes)
    trained, untrained, train_dir, signal = trained_steerer(out, spec, progress)
    h_trained, z_trained = states(trained, observations)
    h_untrained, z_untrained = states(untrained, observations)
    inputs = {"statistics": dense_stats(observations), "untrained_state": h_untrained, "trained_state": h_trained}
    probes = {
        name: {target: probe_auc(X, labels(kinds, target), groups) for target in TARGETS} for name, X in inputs.items()
    }
    drifting = labels(kinds, "any_drift")
    return {
        "states": len(observations),
        "episodes": episodes,
        "kinds": {kind: int(labels(kinds, kind).sum()) for kind in KINDS},
        "no_drift": int(len(kinds) - drifting.sum()),
        "probe_auc": probes,
        "fast_path_auc": {"trained": score_auc(z_trained, drifting), "untrained": score_auc(z_untrained, drifting)},
        "fast_path_mean_z": {
            "trained_drifting": round(float(z_trained[drifting == 1].mean()), 4) if drifting.any() else None,
            "trained_not": round(float(z_trained[drifting == 0].mean()), 4) if (drifting == 0).any() else None,
        },
        "slow_path": slow_fit(trained, observations, kinds),
        "training": signal,
        "notes_in_catalogue": len(trained.options),
        "train_dir": train_dir,
    }


def tables(result: dict[str, Any]) -> str:
    def cell(v: float | None) -> str:
        return "—" if v is None else f"{v:.3f}"

    lines = [
        "| probe input | " + " | ".join(TARGETS) + " |",
        "| --- | " + " | ".join("---:" for _ in TARGETS) + " |",
    ]
    for name, aucs in result["probe_auc"].items():
        lines.append(f"| {name} | " + " | ".join(cell(aucs[t]) for t in TARGETS) + " |")
    fast = result["fast_path_auc"]
    lines += [
        "",
        f"fast path AUC for 'a drift is under way': trained {cell(fast['trained'])}, "
        f"untrained {cell(fast['untrained'])}",
        "",
    ]
    lines += ["| kind | states | slow path picks the fitting note | most chosen |", "| --- | ---: | ---: | --- |"]
    for kind, rec in result["slow_path"].items():
        lines.append(f"| {kind} | {rec['states']} | {cell(rec['fits'])} | {rec['most_chosen'] or '—'} |")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m studies.drift_components.run", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--out", type=Path, required=True, help="the trained steerer's run folder (resumable)")
    parser.add_argument("--episodes", type=int, default=300, help="unsupervised dev episodes whose states are probed")
    parser.add_argument("--summary", type=Path, default=RESULTS, help="where summary.json goes")
    parser.add_argument("--quick", action="store_true", help="a tiny run (a small trainer, few episodes): tests")
    parser.add_argument("--no-progress", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    spec = QUICK_SPEC if args.quick else RL_SPEC
    start = time.time()
    result = measure(args.out, 12 if args.quick else args.episodes, spec, not args.no_progress)
    train_dir = result.pop("train_dir")
    command = portable_command(
        "python -m studies.drift_components.run", list(argv if argv is not None else sys.argv[1:])
    )
    summary = {
        "command": command,
        "written": now(),
        "machine": machine(),
        "seconds": round(time.time() - start, 1),
        "executor": EXECUTOR,
        "rl_spec": spec,
        **result,
        "code": code_record([train_dir]),
    }
    args.summary.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.summary / SUMMARY, json.dumps(summary, indent=1) + "\n")
    print(tables(result))
    print(f"wrote {args.summary / SUMMARY}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
