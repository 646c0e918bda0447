"""The README's headline is rendered from committed summaries (benchmarks/pages/headline.py): the README equals its
render, every verdict in it comes from the one rule, each quoted summary names its commit, and the rows whose data
the repository commits per episode (the LLM steerer's) are recomputed here from those files alone."""

from __future__ import annotations

import json
import subprocess

import pytest

from benchmarks.harness.verdicts import VERDICTS
from benchmarks.pages import code_records, headline, summary_freshness
from steer_envs.errors import SteerEnvsError
from steer_envs.paths import REPO_ROOT


def test_the_readme_headline_equals_its_render():
    text = headline.README.read_text(encoding="utf-8")
    assert headline.replaced(text, headline.render()) == text, "run: python -m benchmarks.pages.headline"


def test_no_verdict_is_written_by_hand_outside_the_rendered_region():
    text = headline.README.read_text(encoding="utf-8")
    head, _, rest = text.partition(headline.START)
    _, _, tail = rest.partition(headline.END)
    outside = (head + tail).lower()
    for word in (*VERDICTS, "partly", "| yes", "| no |"):
        assert word not in outside, word


def current(source: str) -> summary_freshness.Freshness:
    return summary_freshness.Freshness(source, ("abc1234",), True, (), "")


def stale(source: str) -> summary_freshness.Freshness:
    return summary_freshness.Freshness(
        source, ("abc1234",), True, ("x.py",), "1 of the files its runs loaded changed since"
    )


def test_an_edited_figure_or_verdict_fails_the_check(tmp_path, capsys, monkeypatch):
    # every row rendered as if current, so that the README has a verdict and a figure to edit whatever is stale
    rendered = headline.render(check=current)
    monkeypatch.setattr(headline, "render", lambda: rendered)
    text = headline.replaced(headline.README.read_text(encoding="utf-8"), rendered)
    region = text[text.index(headline.START) : text.index(headline.END)]
    row = next(
        line
        for line in region.splitlines()
        if "| reproduces" in line or "; reproduces" in line or ": reproduces" in line
    )
    readme = tmp_path / "README.md"
    readme.write_text(text, encoding="utf-8")
    assert headline.main(["--check", "--readme", str(readme)]) == 0
    for edited in (row.replace("reproduces", "not shown", 1), row.replace("[+", "[+1", 1)):
        assert edited != row
        readme.write_text(text.replace(row, edited), encoding="utf-8")
        assert headline.main(["--check", "--readme", str(readme)]) == 1
    readme.write_text(text.replace(headline.END, "edited\n" + headline.END), encoding="utf-8")
    assert headline.main(["--check", "--readme", str(readme)]) == 1
    capsys.readouterr()


def test_a_row_whose_summary_is_stale_is_listed_without_figures_or_verdicts():
    """Every declared row is quoted when its summaries are current, and only listed (claim, page, why) when one is
    stale: a stale summary's interval, verdict or commit row never reaches the table."""
    h = headline.headline()
    claims = [row.claim for row in h.claims]
    quoted = headline.render(check=current)
    assert all(f"| {claim} |" in quoted for claim in claims) and headline.WAITING not in quoted
    llm = "docs/data/llm_headline/llm_headline.json"
    text = headline.render(check=lambda source: stale(source) if source == llm else current(source))
    waiting = [line for line in text[text.index(headline.WAITING) :].splitlines() if line.startswith("- ")]
    llm_rows = [row.claim for row in h.claims if any(v.source == llm for v in row.values.values())]
    assert len(llm_rows) == 2 and [line.split(":")[0] for line in waiting] == [f"- {c}" for c in llm_rows]
    for claim in llm_rows:
        assert f"| {claim} |" not in text
        line = next(w for w in waiting if w.startswith(f"- {claim}:"))
        assert "files its runs loaded changed since" in line and "1 of" not in line  # no count: stable text
        assert "[-" not in line and "[+" not in line
        assert not any(word in line for word in VERDICTS)
    assert sum(f"| {c} |" in text for c in claims) == len(claims) - 2
    everything = headline.render(check=stale)
    assert "| claim |" not in everything and "| check |" not in everything
    listed = [line for line in everything[everything.index(headline.WAITING) :].splitlines() if line.startswith("- ")]
    assert len(listed) == len(claims) + len(h.measures)


def test_a_drift_learner_is_placed_as_the_drift_page_places_it_and_waits_on_both_its_summaries():
    """The README's place of a drift learner equals the drift page's (the comparison's gain over none on the ladder's
    scale, from the ladder's own rows), and a level's row is quoted only when its comparison and the hand-written
    rung's summary (which records the scale) are both current; each level waits on its own comparison alone."""
    import json

    from steer_envs.paths import REPO_ROOT

    for n in (1, 2, 3):
        row = headline.drift_measure(n)
        ladder = json.loads((REPO_ROOT / f"docs/results/drift/drift{n}/ladder.json").read_text())
        rows = {r["rung"]: r for r in ladder["rows"]}
        rule, ceiling = rows["best_fixed_rule"]["gain"]["mean"], rows["learnable_ceiling"]["gain"]["mean"]
        for name in headline.DRIFT_LEARNERS:
            value = row.values[name]
            gain = headline.pair(headline.drift(n), name, "no_supervision").interval().mean
            assert value.get() == pytest.approx((gain - rule) / (ceiling - rule), abs=2e-3)
            assert value.sources() == (headline.drift(n), headline.HAND_WRITTEN)
    first, second = headline.drift_measure(1), headline.drift_measure(2)
    text = headline.render(check=lambda source: stale(source) if source == headline.HAND_WRITTEN else current(source))
    assert first.check not in text.split(headline.WAITING)[0] and f"- {first.check}:" in text
    text = headline.render(check=lambda source: stale(source) if source == headline.drift(2) else current(source))
    assert f"| {first.check} |" in text and f"- {second.check}:" in text


def test_a_quoted_summary_must_name_its_commit(monkeypatch):
    source = "docs/results/x/summary.json"
    monkeypatch.setattr(
        headline, "load", lambda s: {"pairwise": [{"a": "a", "b": "b", "mean": 1, "low": 0.5, "high": 2}]}
    )
    value = headline.pair(source, "a", "b")
    with pytest.raises(SteerEnvsError, match="records no commit"):
        headline.measured_at({"gain": value})


def test_every_check_reads_an_interval_and_every_source_is_committed():
    tracked = set(
        subprocess.run(["git", "-C", str(REPO_ROOT), "ls-files"], capture_output=True, text=True).stdout.split()
    )
    assert set(headline.sources()) <= tracked
    for row in headline.headline().claims:
        for check in row.checks:
            iv = row.values[check.value].interval()
            assert iv.low <= iv.mean <= iv.high, (row.claim, check)


def test_the_llm_steerer_rows_recompute_from_the_committed_episodes():
    """The LLM headline's paired intervals, recomputed from its committed episodes with the harness's bootstrap
    (one run per row, as the headline computes them)."""
    from dataclasses import asdict

    from benchmarks.harness.results_summary import EPISODE_FIELDS, read_episodes
    from benchmarks.harness.stats import HierarchicalBootstrap, RowRuns
    from benchmarks.llm_headline import REFERENCE, RESAMPLES
    from steer_envs.episodes import EpisodeRecord

    folder = REPO_ROOT / "docs" / "data" / "llm_headline"
    report = json.loads((folder / "llm_headline.json").read_text(encoding="utf-8"))
    rows: dict[str, list[EpisodeRecord]] = {key: [] for key in report["rows"]}
    for line in read_episodes(folder / "episodes.jsonl.gz"):
        fields = {k: line[k] for k in EPISODE_FIELDS}
        rows[line["row"]].append(EpisodeRecord(method=line["label"], reward=line["f1"], **fields))
    benchmarks = list(report["card"]["tasks"])
    boot = HierarchicalBootstrap(
        [RowRuns(key, {report["rows"][key]["label"]: recs}) for key, recs in rows.items()],
        benchmarks,
        resamples=RESAMPLES,
    )
    for key, row in report["rows"].items():
        if key != REFERENCE:
            assert asdict(boot.gain(key, REFERENCE)[1]) == row["gain"], key
    assert asdict(boot.gain("trained", "zero_shot")[1]) == report["comparisons"]["trained vs zero-shot"]


# -- freshness --------------------------------------------------------------------------------------------------------
def test_code_of_reads_every_shape_a_summary_records():
    record = code_records.code_of({"code": {"commits": ["abc1234"], "clean": True, "files": ["a.py"]}})
    assert record == code_records.CodeRecord(("abc1234",), True, ("a.py",))
    assert code_records.code_of({"card": {"commits": ["abc1234+dirty"]}}).clean is False
    assert code_records.code_of({"code": "abc1234"}).commits == ("abc1234",)
    assert code_records.code_of({"cells": [{"commits": ["a1"]}, {"commits": ["a1", "b2"]}]}).commits == ("a1", "b2")
    assert code_records.code_of({}).commits == ()


def _head() -> str:
    return subprocess.run(
        ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()


def test_a_summary_is_stale_when_a_file_it_loaded_changed_since(tmp_path):
    # the first commit that added this module: every later change to it is a change since
    first = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "log", "--format=%h", "--diff-filter=A", "--", "benchmarks/harness/stats.py"],
        capture_output=True,
        text=True,
    ).stdout.split()[-1]
    assert summary_freshness.changed_since(first, ["benchmarks/harness/stats.py"]) == ["benchmarks/harness/stats.py"]

    def verdict_of(code: dict) -> summary_freshness.Freshness:
        path = tmp_path / "summary.json"
        path.write_text(json.dumps({"code": code}), encoding="utf-8")
        return summary_freshness.freshness(path)

    stale = verdict_of({"commits": [first], "clean": True, "files": ["benchmarks/harness/stats.py"]})
    assert not stale.current and stale.changed == ("benchmarks/harness/stats.py",)
    assert verdict_of({"commits": [_head()], "clean": True, "files": []}).current
    # a measurement's own outputs recorded beside its modules (a study's results/) are not code it depends on
    outputs = ["studies/actguide_barrier/results/summary.json", "docs/results/main/sim_default/summary.json"]
    assert verdict_of({"commits": [first], "clean": True, "files": outputs}).current
    with_code = [*outputs, "benchmarks/harness/stats.py"]
    assert not verdict_of({"commits": [first], "clean": True, "files": with_code}).current
    assert "uncommitted" in verdict_of({"commits": [_head() + "+dirty"], "clean": False, "files": []}).why
    assert "not in this history" in verdict_of({"commits": ["0000000"], "clean": True, "files": []}).why
    assert "no commit" in verdict_of({"commits": [], "clean": False, "files": []}).why


def test_an_edit_to_docstrings_comments_or_layout_is_not_a_change_of_code():
    before = 'def f(x):\n    """Doubles."""\n    return 2 * x  # twice\n\n\nclass A:\n    """A thing."""\n'
    reworded = (
        '"""The module."""\n\n\ndef f(x):\n    """Twice x, said differently."""\n    return 2*x\n\nclass A:\n    pass\n'
    )
    assert summary_freshness.same_code(before, reworded)
    assert not summary_freshness.same_code(before, before.replace("2 * x", "3 * x"))
    assert not summary_freshness.same_code(before, before.replace("(x)", "(x, y=0)"))
    # a string that is not a docstring (the second statement of a body) is code
    assert not summary_freshness.same_code(before, before.replace("return 2 * x", '"note"\n    return 2 * x'))
    assert not summary_freshness.same_code(before, "def f(x:\n")


def test_changes_since_each_commit_on_a_history_made_here(tmp_path, monkeypatch):
    """On a repository made here: a docstring-only edit is no change, a code edit and a deleted file are, and every
    commit a summary names is checked (the record may list the later one first)."""

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(tmp_path), *args], capture_output=True, text=True, check=True).stdout

    git("init", "-q")
    git("config", "user.email", "t@example.org")
    git("config", "user.name", "t")
    (tmp_path / "a.py").write_text('"""A."""\n\n\ndef f():\n    return 1\n')
    (tmp_path / "b.py").write_text("X = 1\n")
    (tmp_path / "c.py").write_text("Y = 1\n")
    git("add", ".")
    git("commit", "-qm", "one")
    first = git("rev-parse", "--short", "HEAD").strip()
    (tmp_path / "a.py").write_text('"""A, said again."""\n\n\ndef f():  # one\n    return 1\n')
    (tmp_path / "b.py").write_text("X = 2\n")
    git("add", ".")
    git("commit", "-qm", "two")
    second = git("rev-parse", "--short", "HEAD").strip()
    (tmp_path / "c.py").unlink()
    monkeypatch.setattr(summary_freshness, "REPO_ROOT", tmp_path)
    files = ["a.py", "b.py", "c.py"]
    assert summary_freshness.changed_since(first, files) == ["b.py", "c.py"]
    assert summary_freshness.changed_since(second, files) == ["c.py"]  # the deletion is not committed: it counts
    assert summary_freshness.changed_since("0000000", files) is None
    (tmp_path / "c.py").write_text("Y = 1\n")
    assert summary_freshness.changed_since(second, files) == []

    def verdict_of(commits: list[str]) -> summary_freshness.Freshness:
        path = tmp_path / "summary.json"
        path.write_text(json.dumps({"code": {"commits": commits, "clean": True, "files": files}}), encoding="utf-8")
        return summary_freshness.freshness(path)

    assert verdict_of([second]).current
    assert verdict_of([second, first]).changed == ("b.py",)  # the older commit listed last still counts
    assert "0000000 is not in this history" in verdict_of([second, "0000000"]).why


def test_a_move_is_no_change_of_code_and_a_move_with_an_edit_is(tmp_path, monkeypatch):
    """On a repository made here: a package moved with ``git mv`` (its relative imports now absolute, a lazy
    ``"module:function"`` string and a path renamed in its importer) changes nothing; a moved file whose code
    changed, and a deleted one, do."""

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(tmp_path), *args], capture_output=True, text=True, check=True).stdout

    def write(name: str, text: str) -> None:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)

    git("init", "-q")
    git("config", "user.email", "t@example.org")
    git("config", "user.name", "t")
    write("old/pages/__init__.py", '"""Pages."""\n')
    write("old/pages/util.py", "def f(x):\n    return x + 1\n\n\nSCALE = 3\n")
    write("old/pages/mod.py", "from .util import SCALE, f\n\n\ndef g(x):\n    return f(x) * SCALE\n")
    write("old/pages/gone.py", "Z = 1\n")
    write(
        "user.py",
        "import old.pages.util\nfrom old.pages.mod import g\n\n"
        'LAZY = "old.pages.util:f"\nTEMPLATES = "old/pages/templates"\n\n\n'
        "def h():\n    return g(1), old.pages.util.f\n",
    )
    git("add", ".")
    git("commit", "-qm", "one")
    first = git("rev-parse", "--short", "HEAD").strip()
    git("mv", "old/pages", "lab")
    (tmp_path / "lab" / "gone.py").unlink()
    write("lab/mod.py", "from lab.util import SCALE, f\n\n\ndef g(x):\n    return f(x) * SCALE\n")
    write(
        "user.py",
        "import lab.util\nfrom lab.mod import g\n\n"
        'LAZY = "lab.util:f"\nTEMPLATES = "lab/templates"\n\n\ndef h():\n    return g(1), lab.util.f\n',
    )
    git("add", "-A")
    monkeypatch.setattr(summary_freshness, "REPO_ROOT", tmp_path)
    files = ["old/pages/__init__.py", "old/pages/util.py", "old/pages/mod.py", "old/pages/gone.py", "user.py"]
    assert summary_freshness.Moves.since(first).files["old/pages/mod.py"] == "lab/mod.py"
    assert summary_freshness.changed_since(first, files) == ["old/pages/gone.py"]  # a staged move is read too
    git("commit", "-qm", "two: the move")
    assert summary_freshness.changed_since(first, files) == ["old/pages/gone.py"]
    write("lab/util.py", "def f(x):\n    return x + 2\n\n\nSCALE = 3\n")  # moved, then its code edited
    write("user.py", (tmp_path / "user.py").read_text().replace('"lab/templates"', '"lab/other"'))
    assert summary_freshness.changed_since(first, files) == ["old/pages/gone.py", "old/pages/util.py", "user.py"]


def test_the_files_a_run_loaded_are_files_of_this_repository():
    import torch  # noqa: F401 - its modules name files relative to nothing (``_classes.py``): never counted

    from benchmarks.harness.provenance import loaded_files

    files = loaded_files()
    assert "benchmarks/harness/provenance.py" in files and "benchmarks/pages/headline.py" in files
    assert all((REPO_ROOT / f).is_file() for f in files)


#: committed summaries written before their writers recorded a commit (the ladders' ``ladder.json``): each goes when
#: its ladder is remeasured, and a listed one that names a commit fails here, so the list only shrinks
WITHOUT_COMMIT = {
    "docs/results/drift/drift1/ladder.json",
    "docs/results/drift/drift2/ladder.json",
    "docs/results/drift/drift3/ladder.json",
    "docs/results/testbed/r1searcher_llama/ladder.json",
    "docs/results/testbed/strong/ladder.json",
    "docs/results/testbed/weak/ladder.json",
}


def test_every_committed_summary_names_the_commits_that_measured_it():
    for source in summary_freshness.committed_summaries():
        record = code_records.code_of(json.loads((REPO_ROOT / source).read_text(encoding="utf-8")))
        if source in WITHOUT_COMMIT:
            assert not record.commits, f"{source} names its commits now: take it off WITHOUT_COMMIT"
        else:
            assert record.commits, f"{source} names no commit: its writer must record code_record()"
