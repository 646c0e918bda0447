"""The page builder's parts: templates, the page registry, sections in order, atomic writes, code facts read from
the code, the one table format, and `steer-envs report PAGE` errors that say what to run."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch.nn as nn

from benchmarks.pages import PAGE_MODULES, Page, Section, codefacts, get_page, template
from benchmarks.pages.tables import markdown_table, table_lines
from steer_envs.cli.main import main
from steer_envs.errors import SteerEnvsError


def test_templates_fill_placeholders_and_name_a_missing_one():
    assert "the first 37 test tasks" in template("results_subset", limit=37)
    with pytest.raises(SteerEnvsError, match=r"needs a value for \$limit"):
        template("results_subset")
    with pytest.raises(SteerEnvsError, match="no page template 'nope'.*results_links"):
        template("nope")


def test_every_page_is_declared_and_an_unknown_name_lists_them():
    for name in PAGE_MODULES:
        page = get_page(name)
        assert page.name == name and page.doc == f"docs/{name}.md" and page.sections
    with pytest.raises(SteerEnvsError, match="unknown results page 'result'; known: results, results_actguide"):
        get_page("result")


def test_a_page_renders_its_sections_in_order_and_writes_atomically(tmp_path, monkeypatch):
    import benchmarks.pages.builder as builder

    writes = []
    monkeypatch.setattr(builder, "atomic_write_text", lambda path, text: writes.append(path) or path.write_text(text))
    page = Page(
        "toy",
        "a toy page",
        "docs/toy.md",
        str(tmp_path),
        load=lambda out: {"n": len(out.name)},
        sections=(
            Section("a", lambda ctx: "# A\n"),
            Section("empty", lambda ctx: ""),
            Section("b", lambda ctx: f"n={ctx.data['n']}\n"),
        ),
    )
    doc = page.build(doc=tmp_path / "out" / "toy.md")
    assert doc.read_text() == f"# A\nn={len(tmp_path.name)}\n" and writes == [doc]
    with pytest.raises(SteerEnvsError, match="is not a folder of runs for page 'toy'"):
        page.build(out=tmp_path / "missing")


def test_page_sections_are_named_after_their_render_functions_and_template_sections_render_prose():
    from benchmarks.pages.builder import PageContext, page_sections, template_section

    def _dev_notes(ctx):
        return "notes\n"

    prose = template_section("executors", "results_executors")
    sections = page_sections(_dev_notes, prose)
    assert [s.name for s in sections] == ["dev notes", "executors"] and sections[1] is prose
    ctx = PageContext(Path("."), Path("doc.md"))
    assert sections[0].render(ctx) == "notes\n" and prose.render(ctx) == template("results_executors")
    with pytest.raises(SteerEnvsError, match="named render function"):
        page_sections(lambda ctx: "")


def test_code_facts_are_read_from_the_code():
    from agents.actguide.policy import PolicySpec

    assert codefacts.mlp_shape(nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 5), nn.Tanh())) == "2x5 tanh"
    assert codefacts.mlp_shape(nn.Sequential(nn.Linear(3, 7), nn.ReLU())) == "1x7 relu"
    facts = codefacts.admissible_policy()
    assert facts == {"mlp": f"2x{PolicySpec().hidden} tanh", "lambda0": PolicySpec().follow}
    from steer_envs.retrieval.bm25 import BM25Config

    assert codefacts.bm25() == {"k1": BM25Config().k1, "b": BM25Config().b}


def test_one_table_format():
    text = markdown_table(["Point", "", "n"], [("a", "", 1)], ["---", "---", "---:"])
    assert text == "| Point | | n |\n|---|---|---:|\n| a | | 1 |\n"
    assert markdown_table(["x"], [(1,)], spaced=True) == "| x |\n| --- |\n| 1 |\n"
    assert table_lines("intro\n| a |\n|---|\ntext\n| b |\n") == ["| a |", "|---|", "| b |"]


@pytest.mark.parametrize(
    "name, missing",
    [
        ("results_actguide", "page.json"),
        ("results_handoff", "results_handoff.json"),
        ("results_testbed", "headroom_test"),
    ],
)
def test_report_page_says_which_generator_to_run(tmp_path, capsys, name, missing):
    assert main(["report", name, "--out", str(tmp_path), "--doc", str(tmp_path / "page.md")]) == 2
    err = capsys.readouterr().err
    assert missing in err and ("python -m benchmarks" in err or "steer-envs eval" in err or "headroom" in err)
    assert not (tmp_path / "page.md").exists()


def test_report_keeps_reading_a_run_folder_and_refuses_page_options_there(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    assert "not a run folder" in capsys.readouterr().err
    assert main(["report", str(tmp_path), "--doc", str(tmp_path / "x.md")]) == 2
    assert "--out/--doc go with a results page" in capsys.readouterr().err
