"""Task and corpus loading: counts on the real data, user files, and the errors bad input gets."""

import gzip
import json

import pytest

from steer_envs.data import BENCHMARKS, Passage, load_corpus, load_task_file, load_tasks
from steer_envs.errors import DataFormatError, DataNotFoundError, UnknownNameError
from steer_envs.paths import resolve_data_dir

# Counts from ../shared/data/README.md (train / dev / test).
README_COUNTS = {
    "nq": (1610, 270, 775),
    "triviaqa": (614, 91, 295),
    "popqa": (605, 99, 296),
    "hotpotqa": (472, 76, 237),
    "2wikimultihopqa": (879, 164, 421),
    "musique": (186, 28, 86),
    "bamboogle": (76, 13, 36),
}


@pytest.mark.parametrize("bench", BENCHMARKS)
def test_real_counts_match_readme(shared_data_dir, bench):
    counts = tuple(len(load_tasks(bench, split, data_dir=shared_data_dir)) for split in ("train", "dev", "test"))
    assert counts == README_COUNTS[bench]


def test_total_and_unique_ids(shared_data_dir):
    tasks = load_tasks(data_dir=shared_data_dir)
    assert len(tasks) == 7329
    assert len({t.id for t in tasks}) == 7329


def test_musique_decomposition_is_typed(shared_data_dir):
    task = load_tasks("musique", "train", data_dir=shared_data_dir)[0]
    assert task.hops == len(task.decomposition) >= 2
    assert task.decomposition[-1].answer in task.golden_answers


def test_select_by_ids_keeps_order(mini_data_dir):
    tasks = load_tasks(data_dir=mini_data_dir, benchmarks=["nq", "musique"], ids=["musique/mini1", "nq/mini1"])
    assert [t.id for t in tasks] == ["musique/mini1", "nq/mini1"]
    with pytest.raises(DataNotFoundError, match="nq/nope"):
        load_tasks("nq", data_dir=mini_data_dir, ids=["nq/nope"])


def test_unknown_benchmark_and_split_list_valid_names(mini_data_dir):
    with pytest.raises(UnknownNameError, match="valid benchmarks: 2wikimultihopqa, bamboogle"):
        load_tasks("squad", data_dir=mini_data_dir)
    with pytest.raises(UnknownNameError, match="valid splits: dev, test, train"):
        load_tasks("nq", "validation", data_dir=mini_data_dir)


def test_malformed_line_names_file_and_line(tmp_path):
    root = tmp_path / "data"
    (root / "tasks").mkdir(parents=True)
    with gzip.open(root / "tasks" / "nq.jsonl.gz", "wt") as fh:
        fh.write(json.dumps({"id": "a", "question": "q?", "golden_answers": ["x"]}) + "\n")
        fh.write("{this is not json\n")
    with pytest.raises(DataFormatError, match=r"nq\.jsonl\.gz:2: not valid JSON"):
        load_tasks("nq", data_dir=root)


def test_missing_golden_answers_is_named(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps({"id": "1", "question": "why?"}) + "\n")
    with pytest.raises(DataFormatError, match=r"mine\.jsonl:1: missing required field 'golden_answers'"):
        load_task_file(path)


def test_flashrag_task_file(tmp_path):
    path = tmp_path / "nq_test.jsonl"
    rows = [
        {"id": "test_0", "question": "who wrote hamlet", "golden_answers": ["Shakespeare"]},
        {"id": "test_1", "question": "capital of peru", "golden_answers": ["Lima"], "metadata": {"x": 1}},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    tasks = load_task_file(path, benchmark="nq")
    assert [t.question for t in tasks] == ["who wrote hamlet", "capital of peru"]
    assert tasks[1].golden_answers == ("Lima",) and tasks[1].meta == {"metadata": {"x": 1}}


def test_search_r1_corpus(tmp_path):
    path = tmp_path / "wiki.jsonl"
    path.write_text(json.dumps({"id": "0", "contents": '"Aaron"\nAaron is a prophet.'}) + "\n")
    corpus = load_corpus(path)
    assert corpus["0"] == Passage("0", "Aaron", "Aaron is a prophet.")
    assert corpus["0"].contents == '"Aaron"\nAaron is a prophet.'
    with pytest.raises(DataNotFoundError, match="'nope' is not in the corpus"):
        corpus["nope"]


def test_real_corpus(shared_data_dir):
    corpus = load_corpus(data_dir=shared_data_dir)
    assert len(corpus) == 48907
    assert "Röntgen" in corpus["p022721"].text


def test_data_dir_resolution_order(tmp_path, monkeypatch, mini_data_dir):
    monkeypatch.setenv("STEER_ENVS_DATA", str(mini_data_dir))
    assert resolve_data_dir() == mini_data_dir.resolve()
    other = tmp_path / "other"
    (other / "tasks").mkdir(parents=True)
    assert resolve_data_dir(other) == other.resolve()  # explicit wins
    with pytest.raises(DataNotFoundError, match="neither tasks/ nor corpus/"):
        resolve_data_dir(tmp_path)  # a folder that is not a data folder is refused up front
    with pytest.raises(DataNotFoundError, match="--data-dir"):
        resolve_data_dir(tmp_path / "missing")
    monkeypatch.setenv("STEER_ENVS_DATA", str(tmp_path / "missing"))
    with pytest.raises(DataNotFoundError, match="STEER_ENVS_DATA"):
        resolve_data_dir()


def test_no_data_anywhere_names_both_ways(monkeypatch, tmp_path):
    import steer_envs.paths as paths

    monkeypatch.delenv("STEER_ENVS_DATA", raising=False)
    monkeypatch.setattr(paths, "default_data_candidates", lambda: [tmp_path / "nothing"])
    with pytest.raises(DataNotFoundError) as err:
        paths.resolve_data_dir()
    assert "--data-dir" in str(err.value) and "STEER_ENVS_DATA" in str(err.value)
