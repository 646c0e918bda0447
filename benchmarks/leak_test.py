"""Does the simulator's ``<think>`` text reveal its hidden state beyond what the observable situation reveals?

A classifier (logistic regression on word 1-2-grams, liblinear: the same AUCs as lbfgs to the third decimal in
a sixth of the time on these sparse features) is trained to predict the hidden drift state of each executor
turn (any drift mode, or an answer about to come before the evidence) from (a) the observable situation of the
turn only — the action it ends in, the turn, whether its query repeats an earlier one, whether the last results'
titles overlap the question, whether an answer was proposed, how many searches were made, and the words of the
action itself (query or answer) — and (b) the same plus the n-grams of the turn's ``<think>`` text. If the
thoughts leaked hidden state, (b) would beat (a); the testbed requires ROC AUC within 0.02 on held-out steps.

Steps come from episodes with a few random notes mixed in (so that proposed answers, rejections and directed
turns occur); training steps from the train split, held-out steps from the test split (other questions).

Usage: ``python -m benchmarks.leak_test [--executor sim:default] [--heldout 2000] [--train 6000]``
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

from steer_envs.cli.common import add_protocol_arguments
from steer_envs.data import load_tasks
from steer_envs.executors import Intervention, make_executor
from steer_envs.executors.protocol import parse_action
from steer_envs.executors.sim.situation import situation_of

NOTES = (
    "Keep searching.",
    "Verify the evidence.",
    "Answer now.",
    "Search for: {q}",
    "Refocus on the goal.",
    "Stop repeating searches.",
    "Backtrack: wrong entity.",
    "Nice weather.",
)
MAX_DIFFERENCE = 0.02


@dataclass
class Step:
    situation: str  # observable situation tokens
    action: str  # the action's own words (query / answer)
    think: str
    label: str | None  # hidden: the drift label of the turn (None: on track)


def collect(executor: str, split: str, n_steps: int, seed: int, note_rate: float = 0.15) -> list[Step]:
    ex = make_executor(executor, max_turns=10)
    tasks = load_tasks(None, split)
    rng = np.random.default_rng(seed)
    steps: list[Step] = []
    while len(steps) < n_steps:
        task = tasks[int(rng.integers(len(tasks)))]
        ex.reset(task, seed=int(rng.integers(2**31 - 1)))
        queries: list[str] = []
        titles: list[str] = []
        proposed = False
        while not ex.done and len(steps) < n_steps:
            if rng.random() < note_rate:
                note = NOTES[int(rng.integers(len(NOTES)))].format(q=task.question)
                kind = "reject" if ex.answer is not None else "note"
                ex.intervene(Intervention(kind, note))
                proposed |= kind == "reject"
                if ex.done:
                    break
            turn = ex.stats.turns
            result = ex.step()
            label = ex.privileged()["drift_labels"][-1]
            act = {"search": "search", "answer": "answer"}.get(result.kind, "invalid")
            sit = situation_of(task.question, act, turn, result.query, queries, titles, proposed)
            tokens = [
                f"act={act}",
                f"turn={min(turn, 9)}",
                f"repeat={int(sit.repeat)}",
                f"overlap={int(sit.overlap)}",
                f"proposed={int(sit.proposed)}",
                f"searches={min(len(queries), 5)}",
            ]
            think = parse_action(result.segment).think
            steps.append(Step(" ".join(tokens), result.query or result.answer or "", think, label))
            if result.kind == "search":
                queries.append(result.query or "")
                titles = _titles(result.observation)
    return steps


def _titles(observation: str) -> list[str]:
    from steer_envs.executors.protocol import information_titles

    blocks = information_titles(observation)
    return blocks[-1] if blocks else []


def _features(steps: list[Step], with_think: bool):
    from scipy.sparse import hstack
    from sklearn.feature_extraction.text import HashingVectorizer

    situation = HashingVectorizer(n_features=1 << 10, token_pattern=r"\S+", alternate_sign=False, norm=None)
    words = HashingVectorizer(n_features=1 << 18, ngram_range=(1, 2), alternate_sign=False)
    parts = [situation.transform([s.situation for s in steps]), words.transform(["A " + s.action for s in steps])]
    if with_think:
        parts.append(words.transform(["T " + " ".join("t_" + w for w in s.think.lower().split()) for s in steps]))
    return hstack(parts).tocsr()


@dataclass(frozen=True)
class LeakResult:
    target: str
    auc_situation: float
    auc_with_think: float
    positives: int
    heldout: int

    @property
    def difference(self) -> float:
        return self.auc_with_think - self.auc_situation


def measure(train: list[Step], heldout: list[Step]) -> list[LeakResult]:
    """AUC of both classifiers for 'any drift' and for each drift mode seen often enough."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    targets = {"any drift": lambda lab: lab is not None}
    for mode in sorted({s.label for s in train if s.label}):
        targets[mode] = lambda lab, m=mode: lab == m
    out = []
    for name, is_positive in targets.items():
        y_train = np.array([is_positive(s.label) for s in train])
        y_held = np.array([is_positive(s.label) for s in heldout])
        if y_train.sum() < 20 or y_held.sum() < 10 or y_held.all():
            continue
        aucs = []
        for with_think in (False, True):
            model = LogisticRegression(C=1.0, solver="liblinear", max_iter=3000)
            model.fit(_features(train, with_think), y_train)
            aucs.append(float(roc_auc_score(y_held, model.predict_proba(_features(heldout, with_think))[:, 1])))
        out.append(LeakResult(name, round(aucs[0], 4), round(aucs[1], 4), int(y_held.sum()), len(heldout)))
    return out


def run(executor: str = "sim:default", n_train: int = 6000, n_heldout: int = 2000, seed: int = 0) -> list[LeakResult]:
    return measure(collect(executor, "train", n_train, seed), collect(executor, "test", n_heldout, seed + 1))


def format_table(results: list[LeakResult], executor: str) -> str:
    lines = [
        f"Leak test, {executor}: ROC AUC of predicting the hidden state of held-out turns",
        "",
        "| hidden state | positives / held-out steps | AUC, situation only | AUC, + <think> n-grams | difference |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.target} | {r.positives} / {r.heldout} | {r.auc_situation:.3f} | {r.auc_with_think:.3f} "
            f"| {r.difference:+.3f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.leak_test", description=__doc__.split("\n\n")[0])
    add_protocol_arguments(parser, include=("executor",))
    parser.add_argument("--train", type=int, default=6000)
    parser.add_argument("--heldout", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    results = run(args.executor, args.train, args.heldout, args.seed)
    print(format_table(results, args.executor))
    ok = all(r.difference <= MAX_DIFFERENCE for r in results)
    print(
        f"\n<think> adds at most {max(r.difference for r in results):+.3f} AUC: "
        f"{'no leak' if ok else 'LEAK'} (bound {MAX_DIFFERENCE})"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
