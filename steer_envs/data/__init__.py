"""Tasks, corpus and scoring: the real QA data every environment stands on."""

from .corpus import Corpus, load_corpus
from .records import Passage, SubQuestion, Task
from .scoring import METRICS, cover_em, f1, get_metric, score_all, squad_em, squad_f1
from .tasks import BENCHMARKS, MULTI_HOP, SPLITS, load_task_file, load_tasks
from .trajectories import RecordedRollout, load_rollouts, normalize_question, trajectory_files

__all__ = [
    "BENCHMARKS",
    "MULTI_HOP",
    "METRICS",
    "SPLITS",
    "Corpus",
    "Passage",
    "RecordedRollout",
    "SubQuestion",
    "Task",
    "cover_em",
    "f1",
    "get_metric",
    "load_corpus",
    "load_rollouts",
    "load_task_file",
    "load_tasks",
    "normalize_question",
    "score_all",
    "squad_em",
    "squad_f1",
    "trajectory_files",
]
