"""Train the answerability reader (or load it from the cache) and print its ROC AUC on dev and on a held-out split.

The pairs are (question, passage) of the passages the executor retrieves in SearchSteering-v0 episodes of each
split (see :mod:`steer_envs.reader.states`); the label is whether the passage holds a normalised gold answer. The
classifier is chosen on dev; ``--split test`` reports test, which nothing was chosen on.

Usage (from the repository root): ``python -m studies.reader_auc.run [--split test] [--encoder lexical|minilm]
[--train-tasks 2000] [--no-cache]``; ``--quick`` trains and scores a small reader on two benchmarks (a smoke run, not
the page's numbers).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from steer_envs.cli.common import add_protocol_arguments
from steer_envs.cpu_threads import cpu_thread_default
from steer_envs.reader import CLASSIFIERS, ReaderConfig, evaluate_reader, train_reader

#: ``--quick``: a small reader on two benchmarks, one classifier, few tasks per split (about a minute)
QUICK = {
    "benchmarks": ("nq", "hotpotqa"),
    "classifiers": ("logreg-c0.1",),
    "train_tasks": 60,
    "dev_tasks": 12,
    "eval_tasks": 12,
}


def _tasks(value: str) -> int | None:
    return None if value == "all" else int(value)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m studies.reader_auc.run", description=__doc__.splitlines()[0])
    add_protocol_arguments(
        ap,
        include=("split",),
        defaults={"split": "test"},
        overrides={"split": {"choices": ("dev", "test"), "help": "the split to report (default test)"}},
    )
    ap.add_argument(
        "--encoder",
        default=ReaderConfig.encoder,
        help="reader encoder spec: lexical (no embedding), minilm, minilm:<tokens>, hash:<dim>",
    )
    ap.add_argument("--no-interactions", action="store_true", help="leave out the q*p product features")
    ap.add_argument(
        "--classifiers",
        default=",".join(ReaderConfig.classifiers),
        help=f"candidates chosen among on dev, comma-separated from: {', '.join(CLASSIFIERS)}",
    )
    add_protocol_arguments(ap, include=("executor",))
    ap.add_argument("--train-tasks", type=_tasks, default=ReaderConfig.train_tasks, help="train tasks (or 'all')")
    ap.add_argument("--eval-tasks", type=_tasks, default=None, help="held-out tasks (default all of the split)")
    ap.add_argument("--seed", type=int, default=0)
    add_protocol_arguments(ap, include=("data_dir",))
    ap.add_argument("--no-cache", action="store_true", help="retrain even if a cached reader exists")
    ap.add_argument(
        "--quick",
        action="store_true",
        help=f"a small reader ({QUICK['train_tasks']} train tasks of {', '.join(QUICK['benchmarks'])}, "
        f"{QUICK['eval_tasks']} held-out tasks, {QUICK['classifiers'][0]}): a smoke run",
    )
    args = ap.parse_args(argv)
    cpu_thread_default("cpu")
    config = ReaderConfig(
        encoder=args.encoder,
        interactions=not args.no_interactions,
        classifiers=tuple(c.strip() for c in args.classifiers.split(",") if c.strip()),
        executor=args.executor,
        train_tasks=args.train_tasks,
        seed=args.seed,
        data_dir=args.data_dir,
    )
    if args.quick:
        config = replace(
            config,
            benchmarks=QUICK["benchmarks"],
            classifiers=QUICK["classifiers"],
            train_tasks=QUICK["train_tasks"],
            dev_tasks=QUICK["dev_tasks"],
        )
        args.eval_tasks = QUICK["eval_tasks"]
    t0 = time.perf_counter()
    reader = train_reader(config, use_cache=not args.no_cache, progress=False, log=print)
    t_train = time.perf_counter() - t0
    print(
        f"reader: {reader.classifier_name} over {reader.n_features} features, encoder {config.encoder} "
        f"[{t_train:.0f} s]"
    )
    for split in dict.fromkeys(("dev", args.split)):
        t1 = time.perf_counter()
        ev = evaluate_reader(reader, split, args.eval_tasks if split == args.split else config.dev_tasks)
        by = ", ".join(f"{b} {a:.3f}" for b, a in ev.auc_by_benchmark.items())
        print(
            f"{split}: ROC AUC {ev.auc:.4f} over {ev.pairs} pairs ({ev.positives} hold a gold answer) of "
            f"{ev.tasks} tasks [{time.perf_counter() - t1:.0f} s]"
        )
        print(f"  by benchmark: {by}")
    print(f"total {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
