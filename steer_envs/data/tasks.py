"""Loading QA tasks: the shared schema (``tasks/<benchmark>.jsonl.gz``) and FlashRAG / Search-R1 files.

The shared schema carries ground truth the simulator and the analysis need (supporting passages, hop
decompositions); a FlashRAG-style file (``{"id", "question", "golden_answers"}``) carries only what an LLM
executor needs, so users can bring the paper's full benchmark files.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..errors import DataFormatError, DataNotFoundError, unknown_name
from ..paths import resolve_data_dir
from .jsonl import iter_jsonl
from .records import SubQuestion, Task

BENCHMARKS: tuple[str, ...] = ("nq", "triviaqa", "popqa", "hotpotqa", "2wikimultihopqa", "musique", "bamboogle")
SPLITS: tuple[str, ...] = ("train", "dev", "test")
MULTI_HOP: frozenset[str] = frozenset({"hotpotqa", "2wikimultihopqa", "musique", "bamboogle"})

_KNOWN_KEYS = {
    "id",
    "benchmark",
    "split",
    "question",
    "golden_answers",
    "passage_ids",
    "supporting_ids",
    "answer_bearing_ids",
    "answerable_in_corpus",
    "decomposition",
    "evidences",
    "hops",
}


def _as_answers(value: object, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and value and all(isinstance(v, (str, int, float)) for v in value):
        return tuple(str(v) for v in value)
    raise DataFormatError(f"{where}: 'golden_answers' must be a non-empty list of strings")


def task_from_dict(obj: dict, where: str, benchmark: str = "custom", split: str = "test") -> Task:
    """Build a :class:`Task` from a shared-schema or FlashRAG-style dict; ``where`` is ``file:line`` for errors."""
    question = obj.get("question")
    if not isinstance(question, str) or not question.strip():
        raise DataFormatError(f"{where}: 'question' must be a non-empty string")
    answers = obj.get("golden_answers", obj.get("answer", obj.get("answers")))
    if answers is None:
        raise DataFormatError(f"{where}: missing required field 'golden_answers'")
    try:
        decomposition = tuple(
            SubQuestion(d["question"], str(d.get("answer", "")), d.get("supporting_id"))
            for d in obj.get("decomposition") or ()
        )
        evidences = tuple(tuple(map(str, e))[:3] for e in obj.get("evidences") or ())
    except (KeyError, TypeError) as exc:
        raise DataFormatError(f"{where}: malformed 'decomposition' or 'evidences' ({exc})") from None
    return Task(
        id=str(obj.get("id", where)),
        question=question.strip(),
        golden_answers=_as_answers(answers, where),
        benchmark=str(obj.get("benchmark", benchmark)),
        split=str(obj.get("split", split)),
        passage_ids=tuple(obj.get("passage_ids") or ()),
        supporting_ids=tuple(obj.get("supporting_ids") or ()),
        answer_bearing_ids=tuple(obj.get("answer_bearing_ids") or ()),
        answerable_in_corpus=bool(obj.get("answerable_in_corpus", True)),
        decomposition=decomposition,
        evidences=evidences,  # type: ignore[arg-type]
        hops=obj.get("hops"),
        meta={k: v for k, v in obj.items() if k not in _KNOWN_KEYS},
    )


def _check_names(benchmarks: Iterable[str] | None, splits: Iterable[str] | None) -> tuple[list[str], list[str]]:
    chosen_b = (
        list(BENCHMARKS)
        if benchmarks in (None, "all")
        else [benchmarks]
        if isinstance(benchmarks, str)
        else list(benchmarks)
    )
    chosen_s = list(SPLITS) if splits in (None, "all") else [splits] if isinstance(splits, str) else list(splits)
    for name in chosen_b:
        if name not in BENCHMARKS:
            raise unknown_name("benchmark", name, BENCHMARKS)
    for name in chosen_s:
        if name not in SPLITS:
            raise unknown_name("split", name, SPLITS)
    return chosen_b, chosen_s


def load_tasks(
    benchmarks: Sequence[str] | str | None = None,
    split: Sequence[str] | str | None = None,
    data_dir: str | os.PathLike | None = None,
    ids: Sequence[str] | None = None,
    answerable_only: bool = False,
) -> list[Task]:
    """Load shared-schema tasks, filtered by benchmark(s), split(s) and ids, in file order (deterministic)."""
    chosen_b, chosen_s = _check_names(benchmarks, split)
    root = resolve_data_dir(data_dir)
    tasks: list[Task] = []
    for bench in chosen_b:
        tasks.extend(
            t
            for t in _load_benchmark_file(root / "tasks" / f"{bench}.jsonl.gz", bench)
            if t.split in chosen_s and (t.answerable_in_corpus or not answerable_only)
        )
    if ids is not None:
        by_id = {t.id: t for t in tasks}
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise DataNotFoundError(
                f"task id(s) not found in benchmarks {chosen_b} / splits {chosen_s}: {', '.join(missing[:5])}"
                + (" ..." if len(missing) > 5 else "")
            )
        tasks = [by_id[i] for i in ids]
    return tasks


_FILE_CACHE: dict[Path, list[Task]] = {}


def _load_benchmark_file(path: Path, bench: str) -> list[Task]:
    """Parse one benchmark file (memoised per process: envs are created many times)."""
    if path not in _FILE_CACHE:
        if not path.is_file():
            raise DataNotFoundError(f"benchmark file {str(path)!r} is missing from the data folder")
        _FILE_CACHE[path] = [
            task_from_dict(obj, f"{path}:{lineno}", benchmark=bench) for lineno, obj in iter_jsonl(path)
        ]
    return _FILE_CACHE[path]


def load_task_file(path: str | os.PathLike, benchmark: str | None = None, split: str = "test") -> list[Task]:
    """Load a FlashRAG / Search-R1 style JSONL task file (``{"id", "question", "golden_answers"}`` per line)."""
    path = Path(path)
    name = benchmark or path.name.split(".")[0]
    return [task_from_dict(obj, f"{path}:{lineno}", benchmark=name, split=split) for lineno, obj in iter_jsonl(path)]
