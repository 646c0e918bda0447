"""Reading pairs as a steerer meets them: (question, a passage the executor just retrieved, its rank, the label).

Why episodes and not a plain BM25 run: the passages a steerer must judge are those the executor's *own* queries
returned (a first-hop entity, a reformulation, a guided search of the question), at the env's ``topk``. So the
pairs come from running the steering env itself (``sim:default`` by default) over every task of a split, with a
seeded policy that passes most of the time and sometimes intervenes (the states interventions lead to are states
a steerer sees too). Each decision's observation is parsed like any policy would parse it (the latest
``<information>`` block); nothing privileged is read. Pairs are deduplicated per (task, passage): an episode
shows the same block at several decisions, and counting it once per decision would weight long episodes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..executors.protocol import INFORMATION_TAGS, tag_spans
from .labels import holds_answer

_DOC_START = re.compile(r"(?:^|\n)Doc (\d+)\(Title: ")


@dataclass(frozen=True)
class Document:
    """One retrieved passage as the observation shows it."""

    rank: int
    title: str
    text: str

    @property
    def contents(self) -> str:
        return f"{self.title}\n{self.text}"


@dataclass(frozen=True)
class ReadingPair:
    task_id: str
    benchmark: str
    question: str
    document: Document
    label: int


def parse_documents(block: str) -> list[Document]:
    """The documents of one ``<information>`` body (``Doc i(Title: t) text`` lines, Search-R1's format)."""
    starts = list(_DOC_START.finditer(block))
    docs = []
    for i, m in enumerate(starts):
        body = block[m.end() : starts[i + 1].start() if i + 1 < len(starts) else len(block)]
        title, sep, text = body.partition(") ")
        if not sep:
            title, text = body.rstrip(")"), ""
        docs.append(Document(int(m.group(1)), title.strip(), text.strip()))
    if not docs and block.strip():  # another executor's format: the whole block is one passage
        docs.append(Document(1, "", block.strip()))
    return docs


def latest_documents(observation: Any) -> list[Document]:
    """The documents of the latest ``<information>`` block of an observation (dict with ``transcript``, or text);
    [] when nothing was retrieved yet."""
    transcript = str(observation.get("transcript", "")) if isinstance(observation, Mapping) else str(observation)
    blocks = tag_spans(transcript, INFORMATION_TAGS)
    return parse_documents(blocks[-1].inner) if blocks else []


def collect_pairs(
    split: str,
    executor: str = "sim:default",
    max_tasks: int | None = None,
    seed: int = 0,
    intervene_prob: float = 0.3,
    topk: int = 3,
    data_dir: str | None = None,
    benchmarks: Sequence[str] | None = None,
) -> list[ReadingPair]:
    """Run the steering env over the split's tasks (a seeded subsample of ``max_tasks`` if given) and return the
    deduplicated reading pairs of every decision, in task order. Same arguments -> same pairs."""
    from gymnasium.spaces import Discrete

    from ..envs.steering import SearchSteeringEnv

    env = SearchSteeringEnv(
        executor=executor,
        split=split,
        topk=topk,
        data_dir=data_dir,
        benchmarks=tuple(benchmarks) if benchmarks else None,
    )
    tasks = list(env.tasks)
    rng = np.random.default_rng(seed)
    if max_tasks is not None and max_tasks < len(tasks):
        keep = np.sort(rng.choice(len(tasks), size=max_tasks, replace=False))
        tasks = [tasks[i] for i in keep]
    assert isinstance(env.action_space, Discrete)  # the env's default action mode: an index into the catalogue
    n_actions = int(env.action_space.n)
    pairs: list[ReadingPair] = []
    for i, task in enumerate(tasks):
        policy = np.random.default_rng([seed, i])
        obs, _ = env.reset(seed=seed * 100_003 + i, options={"task_id": task.id})
        seen: set[tuple[str, str]] = set()
        done = False
        while True:
            for doc in latest_documents(obs):
                key = (doc.title, doc.text)
                if key not in seen:
                    seen.add(key)
                    label = int(holds_answer(doc.title + " " + doc.text, task.golden_answers))
                    pairs.append(ReadingPair(task.id, task.benchmark, task.question, doc, label))
            if done:
                break
            act = 0 if policy.random() >= intervene_prob else int(policy.integers(1, n_actions))
            obs, _, term, trunc, _ = env.step(act)
            done = term or trunc
    env.close()
    return pairs


_FACTS = re.compile(r'"facts":\s*\[(.*?)(?:\](?=\s*[,}])|$)', re.S)
_JSON_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


def _facts(message: str) -> list[str]:
    import json

    start = message.find("{")
    if start >= 0:
        try:
            obj = json.loads(message[start:])
            if isinstance(obj, dict) and isinstance(obj.get("facts"), list):
                return [str(f) for f in obj["facts"]]
        except ValueError:
            pass
    m = _FACTS.search(message)  # a message cut at the observation's length limit is no longer valid JSON
    if not m:
        return []
    out = []
    for s in _JSON_STRING.findall(m.group(1)):
        try:
            out.append(json.loads(f'"{s}"'))
        except ValueError:
            out.append(s)
    return out


def handoff_documents(observation: Mapping[str, Any]) -> list[Document]:
    """The facts of the latest searcher hand-off in a HandoffSteering observation (each fact read as a passage)."""
    lines = str(observation.get("transcript", "")).splitlines()
    for line in reversed(lines):
        head, sep, body = line.partition(": ")
        if sep and head.split("] ")[-1].startswith("searcher ->"):
            return [Document(i, "", f) for i, f in enumerate(_facts(body), 1)]
    return []


def observation_documents(observation: Any) -> list[Document]:
    """The latest retrieved documents a policy can read in any steering env's observation: the latest
    ``<information>`` block (SearchSteering and the transcript envs) or the facts of the latest searcher hand-off
    (HandoffSteering)."""
    if isinstance(observation, Mapping) and "message" in observation and "sender" in observation:
        return handoff_documents(observation)
    return latest_documents(observation)
