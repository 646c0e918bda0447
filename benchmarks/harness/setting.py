"""The setting card every results table carries (testbed rule 5, docs/architecture.md).

A number without its setting cannot be checked or compared: the card names the corpus (file and content hash),
the retriever and its k, the executor and a hash of its profile (the simulator's parameters are data: another
profile is another testbed), the split, the tasks, the seeds (evaluation seeds per task x training seeds per
learned method) and the code version(s) that ran the episodes (from the run folder's ``runs.jsonl``).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from steer_envs.paths import file_fingerprint, resolve_data_dir

from .provenance import code_version, commits_of
from .runfolder import RunFolder

#: the env defaults the harness evaluates with (steer_envs.envs.base.EnvConfig)
RETRIEVER = "bm25s"
TOPK = 3


@lru_cache(maxsize=8)
def corpus_card(data_dir: str | None) -> tuple[str, str]:
    """(corpus file name, sha256 prefix of its bytes)."""
    from steer_envs.data.corpus import DEFAULT_CORPUS

    path = resolve_data_dir(data_dir) / DEFAULT_CORPUS
    return path.name, file_fingerprint(path)


@lru_cache(maxsize=32)
def executor_hash(spec: str) -> str:
    """A hash of what defines the executor: a ``sim:`` profile's parameters (its resolved JSON), else the spec."""
    kind, _, arg = spec.partition(":")
    blob = spec
    if kind == "sim":
        from steer_envs.executors.sim.profile import load_profile

        blob = json.dumps(asdict(load_profile(arg)), sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class SettingCard:
    corpus: str
    corpus_sha: str
    retriever: str
    topk: int
    executor: str
    executor_hash: str
    split: str
    tasks: dict[str, int]
    seeds: int
    train_seeds: int
    max_turns: int
    commits: tuple[str, ...]

    def markdown(self) -> str:
        per_bench = ", ".join(f"{b} {n}" for b, n in self.tasks.items())
        seeds = f"{self.seeds} evaluation seed(s) per task"
        if self.train_seeds > 1:
            seeds += f" x {self.train_seeds} training seeds per learned method"
        commits = ", ".join(f"`{c}`" for c in self.commits) or f"`{code_version()}` (nothing run yet)"
        return (
            f"*Setting: corpus `{self.corpus}` sha256 `{self.corpus_sha}`; retriever {self.retriever}, "
            f"k={self.topk}; executor `{self.executor}` (hash `{self.executor_hash}`), max {self.max_turns} turns; "
            f"split **{self.split}**; {sum(self.tasks.values())} tasks ({per_bench}); {seeds}; "
            f"commit {commits}.*\n"
        )


def setting_card(folder: RunFolder, train_seeds: int = 1, extra_folders: tuple[RunFolder, ...] = ()) -> SettingCard:
    """The card of a run folder's protocol; commits are those recorded in it (and in ``extra_folders``)."""
    cfg = folder.config
    corpus, sha = corpus_card(cfg.data_dir)
    counts = Counter(t.benchmark for t in cfg.tasks())
    commits: list[str] = []
    for f in (folder, *extra_folders):
        for c in commits_of(f.root):
            if c not in commits:
                commits.append(c)
    return SettingCard(
        corpus,
        sha,
        RETRIEVER,
        TOPK,
        cfg.executor,
        executor_hash(cfg.executor),
        cfg.split,
        {b: counts[b] for b in cfg.benchmarks if counts[b]},
        cfg.seeds,
        train_seeds,
        cfg.max_turns,
        tuple(commits),
    )


def folder_line(folder: RunFolder | Path) -> str:
    """One line for a results page's list of run folders: path, split, commits."""
    folder = folder if isinstance(folder, RunFolder) else RunFolder(folder)
    commits = ", ".join(f"`{c}`" for c in commits_of(folder.root)) or "none recorded"
    return f"`{folder.root}`: split **{folder.config.split}**, commit(s) {commits}"
